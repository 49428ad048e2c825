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


BENCHMARKS = PACKAGE.parent / 'benchmarks'


def _benchmark_graph() -> dict[str, set[str]]:
    """Return the imports among the benchmark scripts (each imports its siblings by name)."""
    scripts = {path.stem: path for path in sorted(BENCHMARKS.glob('*.py'))}
    return {f'benchmarks.{name}': {f'benchmarks.{m}' for m in _imports(path) if m in scripts
                                   and m != name} | {m for m in _imports(path) if m in MODULES}
            for name, path in scripts.items()}


def find_cycle(edges: dict[str, set[str]]) -> list[str]:
    """Return an import cycle of ``edges`` (module -> modules it imports), [] if none."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(name: str) -> list[str]:
        state[name] = 1
        stack.append(name)
        for target in sorted(edges.get(name, ())):
            if state.get(target) == 1:
                return stack[stack.index(target):] + [target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        stack.pop()
        state[name] = 2
        return []

    for name in sorted(edges):
        if name not in state:
            found = visit(name)
            if found:
                return found
    return []


def test_no_import_cycle_in_the_package_or_the_benchmarks():
    """Every import, lazy ones included, of lrda_ros/ and benchmarks/: no module imports back."""
    edges = {**GRAPH, **_benchmark_graph()}
    assert len(edges) > len(GRAPH), 'no benchmark scripts found'
    cycle = find_cycle(edges)
    assert not cycle, 'import cycle: ' + ' -> '.join(cycle)


def test_the_cycle_walk_finds_a_cycle():
    assert find_cycle({'a': {'b'}, 'b': {'c'}, 'c': {'a'}, 'd': set()}) == ['a', 'b', 'c', 'a']
    assert find_cycle({'a': {'b'}, 'b': set()}) == []


@pytest.mark.parametrize('name', sorted(MODULES))
def test_only_the_ros_shell_imports_ros(name):
    if name.startswith('lrda_ros.ros.') or name == 'lrda_ros.ros':
        return
    ros = sorted(m for m in _imports(MODULES[name])
                 if m.split('.')[0] in ROS_MODULES or m.split('.')[0].endswith('_msgs'))
    assert not ros, f'{name} imports {ros}: only lrda_ros.ros may'


#: Layers, lowest first: a module may import its own layer's modules and lower layers only.
#: The demo (the ``make demo`` job) is used only by what runs it.
LAYERS = (
    ('lrda_ros', 'lrda_ros.errors'),
    ('lrda_ros.engine', 'lrda_ros.geometry', 'lrda_ros.calibration', 'lrda_ros.colormap'),
    ('lrda_ros.messages', 'lrda_ros.world', 'lrda_ros.settings'),
    ('lrda_ros.pipeline',),
    ('lrda_ros.datasets',),
    ('lrda_ros.eval', 'lrda_ros.calibration.bag'),
    ('lrda_ros.speed', 'lrda_ros.paper'),
    ('lrda_ros.ros',),
    ('lrda_ros.demo', 'lrda_ros.densify'),
    ('lrda_ros.cli',),
)
#: The evaluation rooms: accuracy on one source (eval), its frames (datasets), the paper's
#: table (paper) and speed measurement (speed). Each is read in a sitting: small modules, and a
#: folder a fraction of the package.
ROOMS = ('lrda_ros.datasets', 'lrda_ros.eval', 'lrda_ros.paper', 'lrda_ros.speed')
MAX_ROOM_MODULE_LINES = 400
MAX_ROOM_LINES = 3000


def _layer(module: str) -> tuple[int, str]:
    """Return the (rank, unit) of a module: its subpackage, or the top-level module itself."""
    best = None
    for rank, units in enumerate(LAYERS):
        for unit in units:
            if (module == unit or module.startswith(unit + '.')) and (
                    best is None or len(unit) > len(best[1])):
                best = (rank, unit)
    assert best is not None, f'{module} is in no layer: add it to LAYERS'
    return best


def test_every_module_is_in_a_layer():
    for name in MODULES:
        _layer(name)


def _lines(name: str) -> int:
    return len(MODULES[name].read_text().splitlines())


@pytest.mark.parametrize('room', ROOMS)
def test_each_evaluation_room_reads_in_a_sitting(room):
    modules = [name for name in MODULES if name == room or name.startswith(room + '.')]
    large = {name: _lines(name) for name in modules if _lines(name) > MAX_ROOM_MODULE_LINES}
    assert not large, f'modules over {MAX_ROOM_MODULE_LINES} lines: {large}'
    total = sum(_lines(name) for name in modules)
    assert total <= MAX_ROOM_LINES, f'{room} has {total} lines'


#: Every folder of the package, as a unit of the layers: its subpackages are part of it.
FOLDERS = sorted(f'lrda_ros.{path.name}' for path in PACKAGE.iterdir()
                 if (path / '__init__.py').is_file())


def test_every_folder_has_its_own_place_in_the_layers():
    named = {unit for units in LAYERS for unit in units}
    assert set(FOLDERS) - named == set(), 'add the folder to LAYERS'


def test_folders_import_one_way():
    """Between any two folders (and top-level modules), imports go one way only, downwards."""
    edges = {(_layer(name)[1], _layer(target)[1]) for name, targets in GRAPH.items()
             for target in targets}
    edges = {(a, b) for a, b in edges if a != b}
    both_ways = sorted((a, b) for a, b in edges if (b, a) in edges and a < b)
    assert not both_ways, f'folders importing each other: {both_ways}'
    for importer, imported in edges:
        assert _layer(importer)[0] >= _layer(imported)[0], (importer, imported)


@pytest.mark.parametrize('name', sorted(MODULES))
def test_imports_go_down_the_layers(name):
    rank, unit = _layer(name)
    upward = sorted(m for m in GRAPH[name] if _layer(m)[0] > rank)
    assert not upward, f'{name} (layer {unit}) imports upward: {upward}'


@pytest.mark.parametrize('name', sorted(n for n in MODULES if n.startswith('lrda_ros.engine')))
def test_engine_depends_on_nothing_else_of_the_package(name):
    outside = sorted(m for m in GRAPH[name]
                     if not m.startswith('lrda_ros.engine') and m not in LAYERS[0])
    assert not outside, f'{name} imports {outside}'


def test_engine_and_geometry_are_independent():
    for name, targets in GRAPH.items():
        for low, other in (('lrda_ros.engine', 'lrda_ros.geometry'),
                           ('lrda_ros.geometry', 'lrda_ros.engine')):
            if name.startswith(low):
                assert not [m for m in targets if m.startswith(other)], (name, targets)


def test_the_layer_check_catches_an_upward_edge():
    assert _layer('lrda_ros.messages.rosbag')[0] < _layer('lrda_ros.datasets.rosbag')[0]
    assert _layer('lrda_ros.ros.node')[0] > _layer('lrda_ros.pipeline')[0]
    assert _layer('lrda_ros.datasets.rosbag')[0] < _layer('lrda_ros.eval.run')[0] < _layer(
        'lrda_ros.paper.run')[0] == _layer('lrda_ros.speed.run')[0]


@pytest.mark.parametrize('name', sorted(n for n in MODULES if n.startswith('lrda_ros.geometry')))
def test_geometry_is_numpy_only(name):
    third_party = {m.split('.')[0] for m in _imports(MODULES[name])} - {'lrda_ros', '__future__'}
    # OpenCV (a runtime dependency) for whole-image filters: distance transform, box sums;
    # the standard library's thread pool to run two of them side by side.
    assert third_party <= {'numpy', 'cv2', 'dataclasses', 'collections', 'typing',
                           'concurrent', 'contextlib'}, third_party


#: The calibration check's core: pure numpy, no ROS and no files (its bag runner is bag/).
CALIBRATION_CORE = sorted(n for n in MODULES if n.startswith('lrda_ros.calibration')
                          and not n.startswith('lrda_ros.calibration.bag'))


def test_calibration_is_one_package():
    assert not list((PACKAGE / 'geometry').glob('calibration_*.py'))
    assert {'lrda_ros.calibration.search', 'lrda_ros.calibration.score',
            'lrda_ros.calibration.window'} <= set(CALIBRATION_CORE)


@pytest.mark.parametrize('name', CALIBRATION_CORE)
def test_the_calibration_core_is_numpy_only_and_does_no_io(name):
    imported = _imports(MODULES[name])
    third_party = {m.split('.')[0] for m in imported} - {'lrda_ros', '__future__'}
    assert third_party <= {'numpy', 'dataclasses', 'collections', 'typing'}, third_party
    ours = {m for m in imported if m.startswith('lrda_ros')}
    allowed = ('lrda_ros.calibration', 'lrda_ros.geometry')
    assert all(m.startswith(allowed) and not m.startswith('lrda_ros.calibration.bag')
               for m in ours), ours
    calls = {node.func.id for node in ast.walk(ast.parse(MODULES[name].read_text()))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert not calls & {'open', 'print', 'input'}, calls


def test_at_most_eight_top_level_modules():
    assert len(list(PACKAGE.glob('*.py'))) <= 8
