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
Programs a test starts as users run them: in a session of their own, output collected.

Shared by the tests of the node executables, the launch file, ``lrda play`` and the signal
handling of the commands.
"""

from __future__ import annotations

import os
from pathlib import Path
import re
import signal
import subprocess
import sys
import threading
import time
from typing import Sequence

ROOT = Path(__file__).resolve().parents[1]
#: Unbuffered output (lines arrive as printed) and no Hugging Face hub.
ENV = {**os.environ, 'PYTHONUNBUFFERED': '1', 'HF_HUB_OFFLINE': '1'}


class Program:
    """A program in a session of its own, run from the repository, its output collected."""

    def __init__(self, command: Sequence[str]) -> None:
        self.process = subprocess.Popen(list(command), cwd=ROOT, env=ENV,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        self._chunks: list[bytes] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        # Chunks, not lines: a progress bar redraws with carriage returns only.
        while chunk := os.read(self.process.stdout.fileno(), 65536):
            self._chunks.append(chunk)

    @property
    def output(self) -> str:
        """Return stdout and stderr so far, interleaved as written."""
        return b''.join(self._chunks).decode(errors='replace')

    @property
    def lines(self) -> list[str]:
        """Return the output so far as lines."""
        return self.output.splitlines()

    def wait_for(self, pattern: str, timeout: float = 120, regex: bool = False) -> None:
        """Wait until the output holds ``pattern`` (text, or a multi-line regex); fail if not."""
        def found() -> bool:
            output = self.output
            return bool(re.search(pattern, output, re.MULTILINE)) if regex else pattern in output

        deadline = time.monotonic() + timeout
        while not found():
            assert time.monotonic() < deadline, f'no {pattern!r} in:\n{self.output}'
            assert self.process.poll() is None, self.output
            time.sleep(0.05)

    def finish(self, timeout: float) -> int:
        """Wait for the program to end by itself; return its exit code."""
        code = self.process.wait(timeout=timeout)
        self._reader.join(timeout=5)
        return code

    def stop(self, signum: int, timeout: float = 60) -> tuple[int, float]:
        """Send ``signum`` to the program; return its exit code and the seconds it took."""
        start = time.monotonic()
        self.process.send_signal(signum)
        try:
            code = self.finish(timeout)
        finally:
            self.end()
        return code, time.monotonic() - start

    def run_out(self, timeout: float) -> int:
        """Wait for the program to end by itself, then end its whole session; return its code."""
        try:
            return self.finish(timeout)
        finally:
            self.end()

    def interrupt(self, timeout: float = 60) -> int:
        """Ctrl-C: SIGINT to the whole session, as a terminal sends it; return the exit code."""
        os.killpg(self.process.pid, signal.SIGINT)
        return self.run_out(timeout)

    def end(self) -> None:
        """End the program (resumed first, should it be stopped) and all of its session."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGCONT)
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        else:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)  # children left behind
            except ProcessLookupError:
                pass
        self._reader.join(timeout=5)


def python(*arguments: str) -> Program:
    """Start this interpreter with ``arguments`` (``-m module ...``, a script, ``-c code``)."""
    return Program([sys.executable, *arguments])
