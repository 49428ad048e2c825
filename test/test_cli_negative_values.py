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

"""Comma-separated numbers that start with a minus are values as written, for every option."""

from __future__ import annotations

import argparse
import json

from lrda_ros import cli
from lrda_ros.calibration.bag import bag_window
from lrda_ros.cli.options import floats
import numpy as np
import pytest

#: The fewest arguments each command parses with (its required ones).
REQUIRED = {'demo': [], 'eval': ['--bag', 'b'], 'speed': [], 'paper': [], 'densify': ['b'],
            'play': ['b'], 'hold-rate': ['b'], 'train-prior': [], 'calibrate': ['--bag', 'b']}


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = cli.command_line()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: sub for name, sub in action.choices.items() if name in REQUIRED}


def _number_list_options() -> list[tuple[str, str]]:
    """Return every (command, option) whose value is a comma-separated list of numbers."""
    return sorted((name, action.option_strings[-1]) for name, sub in _subparsers().items()
                  for action in sub._actions if action.type is floats)


def test_the_number_list_options_are_found():
    found = set(_number_list_options())
    assert {('calibrate', '--lidar-to-camera-matrix'), ('eval', '--budgets'),
            ('eval', '--lidar-to-camera-translation')} <= found


@pytest.mark.parametrize('command, option', _number_list_options())
def test_a_negative_first_value_is_taken_as_written(command, option):
    parsed = cli.command_line().parse_args([command, *REQUIRED[command], option,
                                            '-0.0002,-0.9999,0.5,-1e-3'])
    assert getattr(parsed, option[2:].replace('-', '_')) == (-0.0002, -0.9999, 0.5, -1e-3)


@pytest.mark.parametrize('command, option', _number_list_options())
def test_the_equals_form_still_works(command, option):
    parsed = cli.command_line().parse_args([command, *REQUIRED[command], f'{option}=-2,3'])
    assert getattr(parsed, option[2:].replace('-', '_')) == (-2.0, 3.0)


def test_an_option_is_still_an_option_after_one_that_takes_a_value(capsys):
    # A value that is not a number is not taken for one: --lidar-to-camera-matrix without a
    # value before the next option is the usual one-line error.
    with pytest.raises(SystemExit) as stopped:
        cli.command_line().parse_args(['calibrate', '--bag', 'b', '--lidar-to-camera-matrix',
                                       '--translation'])
    assert stopped.value.code == 2
    assert 'expected one argument' in capsys.readouterr().err


def test_lrda_calibrate_takes_a_negative_quaternion_space_separated(tmp_path, shared_data):
    bag = shared_data / 'bags/kitti_2011_09_26_10frames_mcap'
    true = bag_window(bag, max_frames=1).extrinsic
    translation = ','.join(repr(float(v)) for v in true.translation)
    # -q is q's rotation: a quaternion whose first value starts with a minus.
    quaternion = -true.quaternion_xyzw()
    assert quaternion[0] < 0
    rotation = ','.join(repr(float(v)) for v in quaternion)
    assert cli.main(['calibrate', '--bag', str(bag), '--output', str(tmp_path), '--max-frames',
                     '3', '--lidar-to-camera-translation', translation,
                     '--lidar-to-camera-rotation', rotation]) == 0
    report = json.loads((tmp_path / 'calibration.json').read_text())
    np.testing.assert_allclose(report['given_T_cam_lidar'], true.as_matrix(), atol=1e-6)
