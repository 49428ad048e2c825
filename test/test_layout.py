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

"""The package layout keeps its promises: small modules, one-way imports, ROS only in the shell."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / 'lrda_ros'
MAX_MODULE_LINES = 600
# Top-level import names that mean "ROS": client library, message packages, ROS tools.
ROS_MODULES = {'rclpy', 'message_filters', 'tf2_ros', 'cv_bridge', 'sensor_msgs_py',
               'launch', 'launch_ros', 'launch_testing', 'ament_index_python'}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix('').parts)
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def _imports(path: Path) -> set[str]:
    """Return every module ``path`` imports (relative imports resolved), lazy ones included."""
    name = _module_name(path)
    package = name if path.name == '__init__.py' else name.rsplit('.', 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split('.')[:len(package.split('.')) - node.level + 1]
                module = '.'.join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            found.add(module)
            # "from package import submodule" imports the submodule too.
            found.update(f'{module}.{alias.name}' for alias in node.names)
    return found


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob('*.py'))}
GRAPH = {name: {m for m in _imports(path) if m in MODULES and m != name}
         for name, path in MODULES.items()}


@pytest.mark.parametrize('name', sorted(MODULES))
def test_module_is_small(name):
    lines = len(MODULES[name].read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, f'{name} has {lines} lines'


def test_no_import_cycle():
    edges = GRAPH
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(name: str) -> None:
        state[name] = 1
        stack.append(name)
        for target in sorted(edges[name]):
            if state.get(target) == 1:
                cycle = stack[stack.index(target):] + [target]
                pytest.fail('import cycle: ' + ' -> '.join(cycle))
            if target not in state:
                visit(target)
        stack.pop()
        state[name] = 2

    for name in sorted(edges):
        if name not in state:
            visit(name)


@pytest.mark.parametrize('name', sorted(MODULES))
def test_only_the_ros_shell_imports_ros(name):
    if name.startswith('lrda_ros.ros.') or name == 'lrda_ros.ros':
        return
    ros = sorted(m for m in _imports(MODULES[name])
                 if m.split('.')[0] in ROS_MODULES or m.split('.')[0].endswith('_msgs'))
    assert not ros, f'{name} imports {ros}: only lrda_ros.ros may'


@pytest.mark.parametrize('name', sorted(n for n in MODULES if n.startswith('lrda_ros.engine')))
def test_engine_depends_on_nothing_else_of_the_package(name):
    outside = sorted(m for m in GRAPH[name]
                     if not m.startswith('lrda_ros.engine') and m != 'lrda_ros')
    assert not outside, f'{name} imports {outside}'


@pytest.mark.parametrize('name', sorted(n for n in MODULES if n.startswith('lrda_ros.geometry')))
def test_geometry_is_numpy_only(name):
    third_party = {m.split('.')[0] for m in _imports(MODULES[name])} - {'lrda_ros', '__future__'}
    assert third_party <= {'numpy', 'dataclasses', 'collections', 'typing'}, third_party
