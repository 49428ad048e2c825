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
