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

"""benchmarks/suite_costs.py: a real pytest run records each test's own and children's CPU."""

from __future__ import annotations

from pathlib import Path
import subprocess
import sys

from conftest import inner_pytest_env
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / 'benchmarks'
sys.path.insert(0, str(BENCHMARKS))

import suite_costs  # noqa: E402 (benchmarks/ is not a package)

#: Work measured by the CPU clock itself, so the recorded time has a known floor on any machine.
BUSY = """
import time
start = time.process_time()
while time.process_time() - start < 0.2:
    pass
"""

TESTS = f"""
import subprocess, sys

def test_own_work():
{''.join('    ' + line + chr(10) for line in BUSY.strip().splitlines())}

def test_a_programs_work():
    subprocess.run([sys.executable, '-c', {BUSY!r}], check=True)

def test_nothing():
    pass
"""


@pytest.mark.parametrize('parallel, workers', [([], {'main'}), (['-n', '2'], {'gw0', 'gw1'})])
def test_the_plugin_records_own_and_children_cpu_and_the_table_lists_them(tmp_path, parallel,
                                                                          workers):
    # Under xdist the workers record, each test once (the controller would count it again).
    (tmp_path / 'test_probe.py').write_text(TESTS)
    folder = tmp_path / 'costs'
    environment = inner_pytest_env(LRDA_SUITE_COSTS=str(folder), PYTHONPATH=str(BENCHMARKS))
    run = subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'suite_costs',
                          '-p', 'no:cacheprovider', *parallel, str(tmp_path / 'test_probe.py')],
                         cwd=tmp_path, env=environment, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    recorded = suite_costs.read_costs(folder)
    costs = {cost.test.split('::')[1]: cost for cost in recorded}
    assert len(recorded) == 3 and set(costs) == {'test_own_work', 'test_a_programs_work',
                                                 'test_nothing'}
    assert {cost.worker for cost in recorded} <= workers
    assert costs['test_own_work'].own_cpu >= 0.2 and costs['test_own_work'].children_cpu < 0.2
    assert costs['test_a_programs_work'].children_cpu >= 0.2
    assert costs['test_nothing'].cpu < 0.2
    assert all(cost.wall >= 0 for cost in recorded)
    table = suite_costs.report(recorded, top=2)
    assert table.startswith('3 tests: ') and f'| {recorded[0].worker} |' in table
    assert table.count('`test_probe.py::') == 2   # the top two tests, by CPU time
    assert '`test_probe.py::test_nothing`' not in table


def test_without_the_folder_the_plugin_records_nothing(tmp_path):
    (tmp_path / 'test_probe.py').write_text('def test_nothing():\n    pass\n')
    environment = inner_pytest_env(PYTHONPATH=str(BENCHMARKS))
    environment.pop('LRDA_SUITE_COSTS', None)
    run = subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'suite_costs',
                          '-p', 'no:cacheprovider', str(tmp_path / 'test_probe.py')],
                         cwd=tmp_path, env=environment, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert list(tmp_path.rglob('*.jsonl')) == []


def test_an_empty_folder_is_one_line_saying_what_to_set(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        suite_costs.main([str(tmp_path)])
    assert stop.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert 'LRDA_SUITE_COSTS' in error and '-p suite_costs' in error
