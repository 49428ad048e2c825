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
The ``lrda`` command, one subcommand per job.

demo, eval, speed, paper, densify, play, hold-rate, train-prior and calibrate. Each command
is named by what it gives: ``eval`` the accuracy of methods on one dataset or bag, ``speed``
their time and memory, ``paper`` the paper's table on its benchmarks, ``calibrate`` a
verdict on a bag's LiDAR->camera calibration. The former names ``bench`` (speed) and
``benchmark`` (paper) still run, hidden from the help, and say what replaced them
(:data:`~lrda_ros.cli.options.RENAMED`).

Also runnable from a ROS 2 install as ``ros2 run lrda_ros lrda <command> ...``. A failing
command prints one line saying what to change and exits 1 (argparse's usage errors: 2);
``--debug`` shows the full message and traceback instead.
"""

from __future__ import annotations

import argparse
import sys

from .calibrate import add_calibrate, run_calibrate
from .demo import add_demo, add_train_prior, run_demo, run_train_prior
from .densify import add_densify, run_densify
from .evaluate import add_eval, run_eval
from .options import OneLineParser, RENAMED
from .paper import add_paper, run_paper
from .replay import add_hold_rate, add_play, run_hold_rate, run_play
from .speed import add_speed, run_speed

#: Each command's runner, in the order the help lists them.
RUNNERS = {'demo': run_demo, 'eval': run_eval, 'speed': run_speed, 'paper': run_paper,
           'densify': run_densify, 'play': run_play, 'hold-rate': run_hold_rate,
           'train-prior': run_train_prior, 'calibrate': run_calibrate}


def command_line() -> argparse.ArgumentParser:
    """Return the parser of every command, the former names included (hidden)."""
    parser = OneLineParser(
        prog='lrda', description='Zero-shot LiDAR + camera depth completion by low-rank '
                                 'decoder adaptation (test-time optimization).')
    commands = parser.add_subparsers(dest='command', required=True, metavar='<command>')
    for add in (add_demo, add_eval, add_speed, add_paper, add_densify, add_play, add_hold_rate,
                add_train_prior, add_calibrate):
        add(commands)
    for former, current in RENAMED.items():
        {'speed': add_speed, 'paper': add_paper}[current](commands, former)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run one command."""
    from ..errors import error_line
    from ..interrupts import follow_ros2_run

    args = command_line().parse_args(argv)
    if argv is None:  # the program itself: under ros2 run, stop when it is stopped
        follow_ros2_run()
    command = RENAMED.get(args.command, args.command)
    if command != args.command:
        print(f'lrda {args.command} is now lrda {command}: running lrda {command}',
              file=sys.stderr)
    try:
        return RUNNERS[command](args)
    except KeyboardInterrupt:
        print(f'lrda {command}: interrupted', file=sys.stderr)
        return 130
    except Exception as error:  # noqa: B902 - every failure ends as one line (or --debug)
        if args.debug:
            raise
        print(f'lrda {command}: error: {error_line(error)}', file=sys.stderr)
        return 1
