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
Where the test suite's time goes: each test's wall time and CPU time, its own and its programs'.

A pytest plugin (loaded by name) and the table of what it recorded:

    export LRDA_SUITE_COSTS=/tmp/costs PYTHONPATH=benchmarks
    make test PYTEST_PARALLEL='-n 2 --dist loadfile -p suite_costs'
    python benchmarks/suite_costs.py /tmp/costs [--top 25]

Each process (the xdist workers, or pytest alone) writes one JSON line per test to its own file
in the folder: the test's wall seconds and the CPU seconds (``getrusage``) of the process
itself and of the children it waited for in the meantime (the programs a test starts, g++ for
Inductor's kernels). Processes nobody waits for (Ray's daemons) are not counted: a test whose
wall time is far above its CPU time waits on them, on DDS or on the other worker's load. The
table: the totals, the files and the tests by CPU time, and each worker's span.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from dataclasses import dataclass
import json
import os
from pathlib import Path
import resource
import sys
import time
from typing import Iterable, Sequence

FOLDER_VARIABLE = 'LRDA_SUITE_COSTS'


@dataclass(frozen=True)
class TestCost:
    """One test's seconds: wall, its process's CPU, and its waited-for children's CPU."""

    test: str
    worker: str
    start: float
    wall: float
    own_cpu: float
    children_cpu: float

    @property
    def cpu(self) -> float:
        return self.own_cpu + self.children_cpu

    @property
    def file(self) -> str:
        return self.test.split('::')[0]


def _cpu_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


class _Recorder:
    """The plugin: one line per test, appended to this process's file."""

    def __init__(self, folder: Path) -> None:
        self.worker = os.environ.get('PYTEST_XDIST_WORKER', 'main')
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f'{self.worker}-{os.getpid()}.jsonl'
        self.started: dict[str, tuple[float, float, float]] = {}

    def pytest_runtest_logstart(self, nodeid: str, location) -> None:  # noqa: D102
        self.started[nodeid] = (time.time(), _cpu_seconds(resource.RUSAGE_SELF),
                                _cpu_seconds(resource.RUSAGE_CHILDREN))

    def pytest_runtest_logfinish(self, nodeid: str, location) -> None:  # noqa: D102
        start, own, children = self.started.pop(nodeid)
        cost = TestCost(nodeid, self.worker, start, time.time() - start,
                        _cpu_seconds(resource.RUSAGE_SELF) - own,
                        _cpu_seconds(resource.RUSAGE_CHILDREN) - children)
        with open(self.path, 'a') as file:
            file.write(json.dumps(cost.__dict__) + '\n')


def pytest_configure(config) -> None:
    """
    Record into ``$LRDA_SUITE_COSTS`` when it is set; otherwise do nothing.

    Under xdist the workers record: the controller sees each test's start and end only as
    they are reported to it, and would count every test twice.
    """
    folder = os.environ.get(FOLDER_VARIABLE)
    xdist_controller = (not hasattr(config, 'workerinput')
                        and bool(getattr(config.option, 'numprocesses', None)))
    if folder and not xdist_controller:
        config.pluginmanager.register(_Recorder(Path(folder)), 'suite_costs_recorder')


def read_costs(folder: Path) -> list[TestCost]:
    """Return every test recorded in ``folder``."""
    return [TestCost(**json.loads(line)) for path in sorted(folder.glob('*.jsonl'))
            for line in path.read_text().splitlines() if line.strip()]


def _grouped(costs: Iterable[TestCost], attribute: str) -> dict[str, list[TestCost]]:
    groups: dict[str, list[TestCost]] = defaultdict(list)
    for cost in costs:
        groups[getattr(cost, attribute)].append(cost)
    return groups


def _rows(costs: Iterable[TestCost], top: int) -> list[str]:
    return [f'| {cost.wall:7.1f} | {cost.own_cpu:7.1f} | {cost.children_cpu:7.1f} | '
            f'`{cost.test}` |' for cost in sorted(costs, key=lambda c: -c.cpu)[:top]]


def report(costs: Sequence[TestCost], top: int) -> str:
    """Return the tables as markdown."""
    lines = [f'{len(costs)} tests: {sum(c.wall for c in costs):.0f} s of wall time in the '
             f'workers, {sum(c.own_cpu for c in costs):.0f} CPU-s in them and '
             f'{sum(c.children_cpu for c in costs):.0f} in the programs they waited for', '']
    lines += ['| worker | first start to last end, s | CPU-s |', '|---|---:|---:|']
    begin = min((cost.start for cost in costs), default=0.0)
    for worker, own in sorted(_grouped(costs, 'worker').items()):
        end = max(cost.start + cost.wall for cost in own)
        lines.append(f'| {worker} | {min(c.start for c in own) - begin:.0f} to '
                     f'{end - begin:.0f} | {sum(c.cpu for c in own):.0f} |')
    lines += ['', '| wall s | own CPU-s | children CPU-s | tests | file |',
              '|---:|---:|---:|---:|---|']
    by_file = _grouped(costs, 'file')
    for file in sorted(by_file, key=lambda name: -sum(c.cpu for c in by_file[name]))[:top]:
        own = by_file[file]
        lines.append(f'| {sum(c.wall for c in own):.1f} | {sum(c.own_cpu for c in own):.1f} | '
                     f'{sum(c.children_cpu for c in own):.1f} | {len(own)} | `{file}` |')
    lines += ['', '| wall s | own CPU-s | children CPU-s | test |', '|---:|---:|---:|---|']
    return '\n'.join(lines + _rows(costs, top))


def main(argv: Sequence[str] | None = None) -> int:
    """Print the tables of a folder the plugin wrote."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('folder', type=Path, help=f'the folder ${FOLDER_VARIABLE} named')
    parser.add_argument('--top', type=int, default=25, help='files and tests listed (25)')
    args = parser.parse_args(argv)
    costs = read_costs(args.folder)
    if not costs:
        parser.error(f'no test recorded in {args.folder}: set {FOLDER_VARIABLE} to it and '
                     f'load the plugin with -p suite_costs (PYTHONPATH=benchmarks)')
    print(report(costs, args.top))
    return 0


if __name__ == '__main__':
    sys.exit(main())
