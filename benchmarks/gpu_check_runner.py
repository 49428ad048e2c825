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
How the parts are run: each in a process of its own, in order, stopped at its time limit.

``run_plan`` runs the parts within the whole command's time (``TOTAL_S``), echoing and
logging their output and writing the report again after each; ``run_part`` runs one and
stops it, with every process it started, when it overruns.
"""

from __future__ import annotations

import os
from pathlib import Path
import signal
import subprocess
import threading
import time
from typing import Callable, Sequence, TextIO

from gpu_check_parts import Context, Outcome, Part, RESERVE_S, ROOT, TOTAL_S
from gpu_check_report import Report, write_report
from gpu_check_sizes import FAILED, TIMED_OUT


def run_part(command: Sequence[str], limit_s: float, echo: Callable[[str], None],
             environment: dict[str, str] | None = None) -> Outcome:
    """
    Run ``command`` in a process group of its own, echoing its lines; stop it at ``limit_s``.

    A stopped part's processes (``lrda speed`` spawns one per configuration) go with it, also
    when this script is interrupted or terminated. ``environment``: variables to add.
    """
    start = time.monotonic()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True,
                               env={**os.environ, 'PYTHONUNBUFFERED': '1', **(environment or {})})
    lines: list[str] = []

    def read() -> None:
        for line in process.stdout:
            lines.append(line)
            echo(line.rstrip('\n'))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        process.wait(timeout=limit_s)
        status = 'ok' if process.returncode == 0 else FAILED
    except subprocess.TimeoutExpired:
        _kill(process)
        status = TIMED_OUT
    except KeyboardInterrupt:
        _kill(process)
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
    reader.join(timeout=5)
    return Outcome(status, time.monotonic() - start, ''.join(lines))


def _interrupt(*_) -> None:
    raise KeyboardInterrupt


def _kill(process: subprocess.Popen) -> None:
    """Kill a part's process group."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def part_environment(context: Context) -> dict[str, str]:
    """
    Return the variables the parts run with.

    The CPU dry run measures nothing: one thread per process (unless OMP_NUM_THREADS says
    otherwise), so that on a shared machine its processes do not wait on each other's threads
    (with two threads each on a loaded 2-core machine it ran five times longer). The parts
    share one Inductor cache in the scratch folder: what the per-step part compiles, the
    compiled frame's part reads.
    """
    cache = {'TORCHINDUCTOR_CACHE_DIR': os.environ.get('TORCHINDUCTOR_CACHE_DIR',
                                                       str(context.work / 'inductor'))}
    if context.device == 'cpu':
        return {'OMP_NUM_THREADS': os.environ.get('OMP_NUM_THREADS', '1'), **cache}
    return cache


def run_plan(parts: Sequence[Part], context: Context, report: Report, output: Path,
             log: TextIO) -> bool:
    """Run the parts in order within TOTAL_S; return whether every one of them succeeded."""
    deadline = time.monotonic() + TOTAL_S - RESERVE_S

    def echo(line: str) -> None:
        print(line, flush=True)
        log.write(line + '\n')
        log.flush()

    for part in parts:
        limit = min(part.limit_s, deadline - time.monotonic())
        if limit < 1:
            echo(f'== {part.name}: not run, no time left')
            continue
        command = part.work.command(part.name, context)
        echo(f'== {part.name} (limit {limit:.0f} s): {" ".join(command)}')
        outcome = run_part(command, limit, lambda line, name=part.name: echo(f'[{name}] {line}'),
                           part_environment(context))
        report.record(part, outcome, part.work.read(part.name, context, outcome.output))
        write_report(report, output)
        echo(f'== {part.name}: {outcome.status} in {outcome.seconds:.0f} s')
        if part.name == 'environment' and outcome.status != 'ok':
            last = (outcome.output.strip().splitlines() or [outcome.status])[-1]
            echo(f'gpu_check: error: the environment check failed: {last}')
            return False
    return all(entry['status'] == 'ok' for entry in report.parts)
