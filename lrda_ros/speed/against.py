# Copyright 2026 lrda_ros maintainers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
``lrda speed --against PATH``: the same frames timed with another checkout of the package.

A change's speed-up is only believable measured side by side: on a shared machine the time of
one configuration drifts by tens of percent from one minute to the next. With ``--against``,
every configuration's frame is also timed by the package in ``PATH`` (another checkout, e.g.
the previous commit: ``git worktree add ../before HEAD~1``), in its own fresh interpreter,
right after this checkout's, frame by frame; the report gives both medians and their ratio.
The other checkout runs with this environment's libraries; engine options it does not know
are left out (it runs its own defaults for them).
"""

from __future__ import annotations

from dataclasses import asdict
import json
import os
from pathlib import Path
import subprocess
import sys

from ..engine import TTOConfig

#: Run in the other checkout: its own measure_configuration, on the same frame.
_MEASURE = """
import json, sys
from dataclasses import fields
from lrda_ros.engine import TTOConfig
from lrda_ros.speed.inputs import LidarPattern
from lrda_ros.speed.run import measure_configuration
args = json.loads(sys.argv[1])
known = {field.name for field in fields(TTOConfig)}
config = TTOConfig(**{k: v for k, v in args['config'].items() if k in known})
result = measure_configuration(args['variant'], args['resolution'], config, args['warm'],
                               LidarPattern(**args['lidar']), args['seed'], args['frame'])
print('LRDA-RESULT ' + json.dumps(result))
"""


def check_checkout(path: Path) -> Path:
    """Return ``path`` resolved if it holds the package, else raise ValueError saying so."""
    path = Path(path).expanduser().resolve()
    if not (path / 'lrda_ros' / 'speed' / 'run.py').is_file():
        raise ValueError(f'--against {path}: not a checkout of lrda_ros (no '
                         'lrda_ros/speed/run.py there); make one with git worktree add')
    return path


def measure_in_checkout(path: Path, variant: str, resolution: str, config: TTOConfig,
                        warm: bool, lidar, seed: int, frame_index: int) -> dict:
    """
    Time one frame with the package in checkout ``path``, in a fresh interpreter.

    As ``measure_configuration`` of this checkout, with the other's code: its working
    directory is that checkout, and it comes first on ``PYTHONPATH``.
    """
    arguments = {'variant': variant, 'resolution': resolution, 'config': config.to_dict(),
                 'warm': warm, 'lidar': asdict(lidar), 'seed': seed, 'frame': frame_index}
    # The checkout first; what the environment adds after it (a ROS install's packages).
    inherited = os.environ.get('PYTHONPATH')
    environment = {**os.environ, 'PYTHONPATH': os.pathsep.join(
        [str(path)] + ([inherited] if inherited else []))}
    completed = subprocess.run([sys.executable, '-c', _MEASURE, json.dumps(arguments)],
                               cwd=path, env=environment, capture_output=True, text=True,
                               check=False)
    for line in completed.stdout.splitlines():
        if line.startswith('LRDA-RESULT '):
            return json.loads(line.removeprefix('LRDA-RESULT '))
    last = (completed.stderr.strip().splitlines() or ['no output'])[-1]
    raise RuntimeError(f'the checkout at {path} failed to time the frame: {last}')
