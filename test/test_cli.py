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

"""The lrda command names each command by what it does; the former names still run."""

from __future__ import annotations

import os
import subprocess
import sys

from lrda_ros import cli
from lrda_ros.paper import run as paper_run
from lrda_ros.speed import run as speed_run
import pytest

COMMANDS = ('demo', 'eval', 'speed', 'paper', 'densify', 'play', 'hold-rate', 'train-prior',
            'calibrate')


def test_the_help_lists_the_commands_by_what_they_do_and_not_the_former_names(capsys):
    with pytest.raises(SystemExit):
        cli.main(['--help'])
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()
              if line.startswith('    ') and not line.startswith('     ')]
    assert tuple(listed) == COMMANDS
    assert not set(cli.RENAMED) & set(listed)


@pytest.mark.parametrize('former, module, runner', [
    ('bench', speed_run, 'run_speed'), ('benchmark', paper_run, 'run_paper')])
def test_a_former_name_runs_its_successor_and_says_so_in_one_line(capsys, monkeypatch, tmp_path,
                                                                  former, module, runner):
    ran = []
    monkeypatch.setattr(module, runner, lambda options, **kwargs: ran.append(options) or {
        'datasets': {}})
    (tmp_path / 'paper.md').write_text('')
    arguments = {'bench': ['--no-structure'], 'benchmark': ['--output', str(tmp_path)]}
    assert cli.main([former, *arguments[former]]) == 0
    current = cli.RENAMED[former]
    assert len(ran) == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f'lrda {former} is now lrda {current}: running lrda {current}']


def test_the_commands_parse_and_the_replay_loads_without_torch():
    # torch takes seconds to import and hundreds of MB: the parser of every command, and
    # `lrda play` on a robot, do without it; it loads when a command's work starts.
    program = ('import sys\n'
               'from lrda_ros.cli.commands import command_line\n'
               'command_line().parse_args(["play", "bag"])\n'
               'import lrda_ros.cli.replay\n'
               'try:\n'
               '    import lrda_ros.ros.replay\n'
               'except ImportError:\n'  # rclpy absent: the parser alone is checked
               '    pass\n'
               'print(sorted(name for name in sys.modules if name.split(".")[0] == "torch"))\n')
    completed = subprocess.run([sys.executable, '-c', program], capture_output=True,
                               text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == '[]', completed.stdout[:500]


def test_bad_inputs_are_refused_before_torch_loads(tmp_path):
    # The one-line errors of a missing input, an unknown name or a missing model file come
    # before torch's seconds of import: each command runs in one process, torch is looked for
    # at its end.
    import numpy as np
    from PIL import Image

    folder = tmp_path / 'folder'
    for part, image in (('rgb', np.zeros((8, 8, 3), np.uint8)),
                        ('sparse', np.full((8, 8), 512, np.uint16)),
                        ('gt', np.full((8, 8), 512, np.uint16))):
        (folder / part).mkdir(parents=True)
        Image.fromarray(image).save(folder / part / '0000.png')
    (tmp_path / 'empty').mkdir()
    out = str(tmp_path / 'out')
    cases = [
        (['eval', '--bag', str(tmp_path / 'missing'), '--output', out], 'no rosbag2 at'),
        (['eval', '--dataset', 'kitti_dc', '--root', str(tmp_path / 'empty'), '--output', out],
         'no folder image/'),
        (['eval', '--dataset', 'folder', '--root', str(folder), '--output', out,
          '--methods', 'lrda,magic'], '--methods: unknown magic'),
        (['eval', '--dataset', 'folder', '--root', str(folder), '--output', out,
          '--methods', 'lrda', '--model', str(tmp_path / 'none.pth')], 'does not exist'),
        (['demo', '--model', str(tmp_path / 'none.pth'), '--output', out], 'does not exist'),
        (['paper', '--output', out], 'no dataset given'),
    ]
    program = ('import sys\n'
               'from lrda_ros.cli import main\n'
               f'codes = [main(arguments) for arguments in {[a for a, _ in cases]!r}]\n'
               'print(codes, "torch" in sys.modules)\n')
    completed = subprocess.run([sys.executable, '-c', program], capture_output=True,
                               text=True, timeout=120, env={**os.environ, 'HF_HUB_OFFLINE': '1'})
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == f'{[1] * len(cases)} False', completed.stdout
    errors = completed.stderr.strip().splitlines()
    assert len(errors) == len(cases), completed.stderr
    for line, (arguments, says) in zip(errors, cases):
        assert line.startswith(f'lrda {arguments[0]}: error:') and says in line, line
