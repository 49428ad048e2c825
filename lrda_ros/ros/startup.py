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
Run a node as an executable: one-line start-up errors, clean exit on SIGINT and SIGTERM.

rclpy's own signal handlers raise KeyboardInterrupt wherever the main thread happens to be;
when a terminal's Ctrl-C reaches the process twice (directly and forwarded by ``ros2 launch``),
the second one lands inside the teardown and the process dies with a traceback and exit code
-2. Here signals only set a flag: the main thread notices it between short spins, destroys the
node (which stops and joins its threads), shuts the context down and ends the process with
exit code 0 at once, without Python's slow module teardown. Should the main thread be stuck in
a long native call (a torch operation of a large frame), the process ends with code 0
:data:`EXIT_GRACE_S` after the signal anyway (:func:`~lrda_ros.interrupts.exit_within`).
"""

from __future__ import annotations

import os
from pathlib import Path
import sys
import threading
import traceback
from typing import Callable, Sequence

import rclpy
from rclpy.exceptions import InvalidParameterValueException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.impl.implementation_singleton import rclpy_implementation
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from .transport import prefer_large_sample_transport
from ..engine.errors import ModelLoadError  # torch-free: start-up errors come first
from ..errors import ConfigError
from ..interrupts import exit_now, exit_within
from ..settings.parameters import InvalidParameterError

_SPIN_PERIOD_S = 0.1
#: Seconds from SIGINT/SIGTERM to the end of a node's process (ros2 launch waits 5 s).
EXIT_GRACE_S = 1.5


def quiet_progress_bars() -> None:
    """
    Turn off the progress bars huggingface_hub and transformers draw (downloads, weights).

    On a node's console they are noise before the first log line: carriage-return redraws that
    ``ros2 launch`` shows as an empty line. Both libraries read the switch when imported; one
    already imported is switched off directly.
    """
    os.environ.setdefault('HF_HUB_DISABLE_PROGRESS_BARS', '1')
    if 'huggingface_hub' in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    if 'transformers' in sys.modules:
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()


def startup_error_message(error: BaseException) -> str:
    """Return the one line that explains a start-up failure and what to change."""
    if isinstance(error, ModelLoadError):
        return f"cannot load the depth model (parameter 'model'): {error}"
    if isinstance(error, (InvalidParameterError, InvalidParameterValueException)):
        return f'invalid parameter: {error}'
    if isinstance(error, rclpy_implementation.RCLError):
        # rcl appends source locations (", at /path/file.c:123"): not for users.
        return f'cannot start: {str(error).split(", at /")[0]}'
    return f'cannot start: {type(error).__name__}: {error}'


class ParamsFileError(ConfigError):
    """A --params-file that does not exist or is not YAML."""


def check_params_files(args: Sequence[str]) -> None:
    """
    Raise ParamsFileError for a ``--params-file`` that is missing or not YAML.

    rcl would refuse it too, but with its own log line and the C source location; checked
    first, the user gets one line naming the file and the YAML error's position.
    """
    import yaml

    for flag, value in zip(args, list(args)[1:]):
        if flag != '--params-file':
            continue
        path = Path(value)
        if not path.is_file():
            raise ParamsFileError(f'parameters file {value!r} does not exist')
        try:
            yaml.safe_load(path.read_text())
        except (yaml.YAMLError, UnicodeDecodeError) as error:
            where = getattr(error, 'problem_mark', None)
            position = f' (line {where.line + 1}, column {where.column + 1})' if where else ''
            problem = getattr(error, 'problem', None) or error
            raise ParamsFileError(
                f'parameters file {value!r} is not valid YAML{position}: {problem}') from error


def run_node(name: str, factory: Callable[[], Node], args: list[str] | None = None) -> int:
    """
    Create the node with ``factory`` and spin it until a signal or shutdown.

    Return 1 when the node cannot start; after a stop the process exits here: code 0, or 1 when
    the node failed while running. SIGINT and SIGTERM only set a flag; whatever the node is
    doing then (loading a model, a long CPU frame, writing a report), the process has ended
    with code 0 :data:`EXIT_GRACE_S` later.
    """
    prefer_large_sample_transport()
    quiet_progress_bars()
    stop = threading.Event()
    with exit_within(EXIT_GRACE_S, on_signal=stop.set):
        code, ran = _start_and_spin(name, factory, args, stop)
        if ran:  # stopped, or failed while running: everything is closed
            exit_now(code)
    return code


def _start_and_spin(name: str, factory: Callable[[], Node], args: list[str] | None,
                    stop: threading.Event) -> tuple[int, bool]:
    """
    Start the node and spin it until ``stop``; return the exit code and whether it ran.

    The code is 1 when the node cannot start or failed while running, else 0.
    """
    logger = rclpy.logging.get_logger(name)
    try:
        check_params_files(sys.argv if args is None else args)
    except ParamsFileError as error:
        logger.fatal(f'cannot start: {error}')
        return 1, False
    try:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except rclpy_implementation.RCLError as error:  # e.g. an unreadable --params-file
        logger.fatal(startup_error_message(error))
        return 1, False
    try:
        node = factory()
    except Exception as error:  # every start-up failure is one line, never a traceback
        logger.fatal(startup_error_message(error))
        logger.debug(traceback.format_exc())
        rclpy.try_shutdown()
        return 1, False
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        # Short spins so a signal (which only sets ``stop``) is noticed within _SPIN_PERIOD_S.
        while not stop.is_set() and rclpy.ok() and not getattr(node, 'failed', False):
            executor.spin_once(timeout_sec=_SPIN_PERIOD_S)
    except ExternalShutdownException:
        pass
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    return (1 if getattr(node, 'failed', False) else 0), True
