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
SIGINT and SIGTERM for the package's programs: a clean stop that ends in time, with code 0.

Python runs signal handlers only between bytecodes of the main thread, so while it is inside
a long native call (a torch operation on a large frame, drawing a large figure) a stop request
waits for that call. :func:`exit_within` also has the C-level handler write the signal to a
socket (``signal.set_wakeup_fd``) that a watchdog thread reads at once: the main thread gets
``grace_s`` to stop cleanly, then the watchdog ends the process with exit code 0. Reports are
written whole (replaced at once), so an ended process leaves the last complete one.
"""

from __future__ import annotations

from contextlib import contextmanager
import ctypes
import logging
import os
import signal
import socket
import sys
import threading
from typing import Callable, Iterator, NoReturn

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def exit_now(code: int, flush_logging: bool = True) -> NoReturn:
    """
    End the process now with ``code``, output flushed, skipping Python's module teardown.

    For a program stopped on request whose work is saved: with torch loaded the teardown takes
    seconds on a busy machine (past the 5 s after which ``ros2 launch`` escalates SIGINT to
    SIGTERM), with Python's default signal handlers back in place. ``flush_logging`` is off
    for the watchdog, which must not wait on a lock the main thread holds.
    """
    if flush_logging:
        logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    ctypes.CDLL(None).fflush(None)  # rcutils writes its console lines through C stdio
    os._exit(code)


def _watch(reader: socket.socket, grace_s: float, requested: threading.Event,
           finished: threading.Event, farewell: str) -> None:
    """Wait for a stop signal, then allow ``grace_s`` before ending the process."""
    while True:
        try:
            data = reader.recv(64)
        except OSError:
            return
        if not data:
            return  # the block ended: nothing to watch any more
        if any(byte in STOP_SIGNALS for byte in data):
            break
    requested.set()
    if not finished.wait(grace_s):
        if farewell:  # straight to the descriptor: the main thread may hold the stream's lock
            os.write(sys.stderr.fileno(), (farewell + '\n').encode())
        exit_now(0, flush_logging=False)


@contextmanager
def exit_within(grace_s: float,
                on_signal: Callable[[], None] | None = None,
                farewell: str = '') -> Iterator[threading.Event]:
    """
    Within the block, end the process ``grace_s`` after SIGINT or SIGTERM, exit code 0.

    The first signal calls ``on_signal()`` (e.g. set a stop flag), or raises
    KeyboardInterrupt in the main thread when it is None; later ones only wait for the
    deadline. Handlers installed inside the block (rclpy's, a node runner's) take over the
    first part; the deadline holds whatever they do. Yields an Event set on the first signal.
    ``farewell``: the line written to stderr when the deadline ends the process (the main
    thread, still inside a long native call, had no time to say why it stopped).
    Call from the main thread; the previous handlers are restored after the block.
    """
    requested, finished = threading.Event(), threading.Event()
    seen = []

    def handle(signum: int, frame: object) -> None:
        if seen:
            return
        seen.append(signum)
        if on_signal is None:
            raise KeyboardInterrupt
        on_signal()

    reader, writer = socket.socketpair()
    writer.setblocking(False)
    previous_handlers = {signum: signal.signal(signum, handle) for signum in STOP_SIGNALS}
    previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    watchdog = threading.Thread(target=_watch,
                                args=(reader, grace_s, requested, finished, farewell),
                                name='exit_watchdog', daemon=True)
    watchdog.start()
    try:
        yield requested
    finally:
        finished.set()
        signal.set_wakeup_fd(previous_fd)
        for signum, handler in previous_handlers.items():
            if handler is not None:  # None: installed outside Python, cannot be restored
                signal.signal(signum, handler)
        writer.close()  # the watchdog reads the end of the stream and returns
        watchdog.join(timeout=1.0)
        reader.close()


def _arguments(pid: int) -> list[str]:
    """Return a process's command line ([] where it cannot be read)."""
    try:
        with open(f'/proc/{pid}/cmdline', 'rb') as file:
            return [part.decode(errors='replace') for part in file.read().split(b'\0') if part]
    except OSError:
        return []


def _wakeups(pid: int) -> int | None:
    """Return how often a process has been switched to (None: it is gone or unreadable)."""
    try:
        with open(f'/proc/{pid}/status') as file:
            return sum(int(line.split()[1]) for line in file if 'ctxt_switches' in line)
    except (OSError, ValueError, IndexError):
        return None


def launched_by_ros2_run(pid: int) -> bool:
    """Return whether process ``pid`` is ``ros2 run`` (``ros2 run <package> <program>``)."""
    arguments = [os.path.basename(part) for part in _arguments(pid)]
    return 'ros2' in arguments[:2] and 'run' in arguments


def _follow(parent: int, poll_s: float) -> None:
    """Pass the parent's stop on to this process: see :func:`follow_ros2_run`."""
    settled = None
    while True:  # armed once the parent sleeps in its wait for this process
        count = _wakeups(parent)
        if count is None or count == settled:
            break
        settled = count
        threading.Event().wait(poll_s)
    while True:
        threading.Event().wait(poll_s)
        count = _wakeups(parent)
        if count is None or os.getppid() != parent:  # ros2 run ended (SIGTERM, SIGKILL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        if count != settled:  # only a signal wakes it from waiting on this process
            settled = count
            os.kill(os.getpid(), signal.SIGINT)


def follow_ros2_run(poll_s: float = 0.1) -> bool:
    """
    Under ``ros2 run``, stop on the signals it gets: SIGINT passed on, SIGTERM on its end.

    ``ros2 run`` waits on its program and passes no signal on (a Ctrl-C in a terminal reaches
    both, a ``kill`` of ``ros2 run`` alone does not): ended by SIGTERM it leaves the program
    running, and after SIGINT it goes on waiting for a program that never heard of it. It
    sleeps in that wait, so a wake-up is a signal: a daemon thread sends this process SIGINT
    when ``ros2 run`` wakes and SIGTERM when it is gone, to be handled as if sent here.
    Linux only (``/proc``); returns whether it follows.
    """
    parent = os.getppid()
    if not sys.platform.startswith('linux') or not launched_by_ros2_run(parent):
        return False
    threading.Thread(target=_follow, args=(parent, poll_s), name='ros2_run_parent',
                     daemon=True).start()
    return True
