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
completion.launch.py declares the arguments of one table, and reads no other.

Read from the source (no ROS needed): the launch tests that run it need ros2 launch.
"""

from __future__ import annotations

import ast
from pathlib import Path
import re

from lrda_ros.ros.launch_arguments import LAUNCH_ARGUMENTS
import pytest

ROOT = Path(__file__).resolve().parents[1]
LAUNCH_FILE = ROOT / 'launch' / 'completion.launch.py'
NAMES = [argument.name for argument in LAUNCH_ARGUMENTS]


def _calls(name: str) -> list[ast.Call]:
    tree = ast.parse(LAUNCH_FILE.read_text())
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)
            and getattr(node.func, 'id', getattr(node.func, 'attr', None)) == name]


def test_the_launch_file_declares_the_table_and_nothing_else():
    declarations = _calls('DeclareLaunchArgument')
    assert len(declarations) == 1, 'one comprehension over LAUNCH_ARGUMENTS'
    assert not isinstance(declarations[0].args[0], ast.Constant), 'names come from the table'
    assert 'for argument in LAUNCH_ARGUMENTS' in ast.unparse(ast.parse(LAUNCH_FILE.read_text()))


def test_every_argument_the_launch_file_reads_is_in_the_table():
    text = LAUNCH_FILE.read_text()
    read = {node.args[0].value for node in _calls('LaunchConfiguration')
            if isinstance(node.args[0], ast.Constant)}
    # Names read through a variable: the launch file's own tuples of argument names.
    for constant in ('OVERRIDDEN_PARAMETERS', 'BOOLEAN_ARGUMENTS'):
        read.update(re.findall(r"'(\w+)'", text.split(f'{constant} = ', 1)[1].split(')', 1)[0]))
    read.update(re.findall(r"'(\w+)': \(", text.split('NUMERIC_ARGUMENTS = ', 1)[1]
                           .split('}', 1)[0]))
    assert read - set(NAMES) == set()
    assert {'params_file', 'log_level', 'use_sim_time', 'bag'} <= read


@pytest.mark.parametrize('argument', LAUNCH_ARGUMENTS, ids=NAMES)
def test_every_argument_is_described(argument):
    assert argument.description.endswith('.') and argument.name.isidentifier()
    assert NAMES.count(argument.name) == 1
