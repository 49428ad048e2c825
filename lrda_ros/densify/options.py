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
``lrda densify``'s options: recordings in, a folder out, the completion node's parameters.

The node's parameters (a ``--params-file`` in the node's YAML layout and ``-p NAME:=VALUE``
overrides, read by :func:`lrda_ros.settings.load_parameters`) go through the node's own
validation, :meth:`NodeSettings.from_values`, so a frame is
completed with exactly the settings the node would use. Settings that only mean something on
live topics are refused here, naming the parameter, instead of being silently dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
import re
from typing import Any, Mapping

from ..cluster import check_ray_options
from ..errors import ConfigError
from ..messages.rosbag import BagTopics
from ..settings import InvalidParameterError, NodeSettings, OFFLINE_POINT_TOPICS

STORAGES = ('mcap', 'sqlite3')
NAMESPACE = re.compile(r'/|(/[A-Za-z_][A-Za-z0-9_]*)+')
#: Outputs written per frame, relative to the output namespace (the node's topic names).
DEPTH, DEPTH_INFO, CONFIDENCE = 'depth', 'depth/camera_info', 'depth/confidence'


@dataclass(frozen=True)
class DensifyOptions:
    """
    What ``lrda densify`` reads, how it completes and where it writes.

    ``namespace`` (None: the image topic's) prefixes the outputs ``depth``,
    ``depth/camera_info`` and ``depth/confidence``. ``chunk_frames`` (0: whole recordings)
    splits a recording into runs of frames that workers complete independently, each from a
    cold start. ``ray_address`` distributes the chunks over a Ray cluster with ``workers``
    model copies (0: one per GPU, or one per CPU where the cluster has no GPU).
    """

    bags: tuple[Path, ...]
    output: Path
    parameters: Mapping[str, Any] = field(default_factory=dict)
    topics: BagTopics = BagTopics()
    namespace: str | None = None
    chunk_frames: int = 0
    storage: str = 'mcap'
    #: Complete only the first this many frames of each recording (None: all); the output
    #: still holds every input message.
    max_frames: int | None = None
    ray_address: str | None = None
    workers: int = 0
    resume: bool = False
    overwrite: bool = False
    progress: bool = True


def check_options(options: DensifyOptions) -> NodeSettings:
    """Validate the options before any recording is read; return the node's settings."""
    settings = NodeSettings.from_values(options.parameters)
    problems = [
        (not options.bags, 'bags', 'name at least one rosbag2 folder to densify'),
        (settings.time_budget > 0, 'time_budget',
         f'is {settings.time_budget:g}, but densifying runs every iteration of every frame '
         '(the budget is for live streams): set it to 0'),
        (settings.holdout_fraction > 0, 'evaluation.holdout_fraction',
         'withholds LiDAR points for live evaluation; densified depth uses them all (score a '
         'bag with lrda eval --bag): set it to 0'),
        (settings.fusion.enabled, 'temporal_fusion.weight',
         f'is {settings.fusion.weight:g}, but temporal fusion takes the camera pose from live '
         'tf at each frame, which lrda densify does not look up: set it to 0'),
        (len(settings.point_topics) > 1, 'point_topics', OFFLINE_POINT_TOPICS),
        (not settings.use_tf and settings.extrinsic is None, 'lidar_to_camera.use_tf',
         'is false and no lidar_to_camera override is set: no frame could be completed'),
        (options.chunk_frames < 0, '--chunk-frames',
         f'--chunk-frames must be 0 (whole recordings) or more, got {options.chunk_frames}'),
        (options.max_frames is not None and options.max_frames < 1, '--max-frames',
         f'--max-frames must be at least 1, got {options.max_frames}'),
        (options.storage not in STORAGES, '--storage',
         f'--storage must be one of {", ".join(STORAGES)}, got {options.storage!r}'),
        (options.resume and options.overwrite, '--resume',
         '--resume continues the run in --output, --overwrite deletes it: give one'),
        (options.namespace is not None and not NAMESPACE.fullmatch(options.namespace),
         '--namespace', f'--namespace must be an absolute ROS 2 namespace (/name/...: letters, '
         f'digits, _), got {options.namespace!r}'),
    ]
    for rejected, name, message in problems:
        if rejected and name.startswith('-') or rejected and name == 'bags':
            raise ConfigError(message, field=name)
        if rejected:
            raise InvalidParameterError(name, message)
    check_ray_options(options.ray_address, options.workers, settings.tto.device,
                      device_option="parameter 'device':", device_field='device')
    names = [Path(bag).name for bag in options.bags]
    for bag in options.bags:
        if not Path(bag).exists():
            raise ConfigError(f'no rosbag2 at {bag}', field='bags')
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ConfigError(f'recordings are written to --output by folder name and '
                          f'{", ".join(duplicates)} is given twice: rename one',
                          field='bags')
    return settings


def output_topics(namespace: str | None, image_topic: str) -> dict[str, str]:
    """Return the output topic of each output: ``namespace`` or the image topic's, joined."""
    base = namespace if namespace is not None else image_topic.rsplit('/', 1)[0]
    base = base.rstrip('/')
    return {name: f'{base}/{name}' for name in (DEPTH, DEPTH_INFO, CONFIDENCE)}
