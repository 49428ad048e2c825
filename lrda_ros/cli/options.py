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
How the ``lrda`` command line is parsed: checked values, defaults in the help, one-line errors.

An option that is also a node parameter takes the parameter's check and wording
(:func:`parameter`), so ``--processing-size 7`` and ``-p processing_size:=7`` are refused
alike; other numbers are checked against their range when parsed (:func:`number`). A usage
error is one line and exit status 2; ``--help`` shows every option's default.
"""

from __future__ import annotations

import argparse
import re
from typing import Any, Callable, NoReturn, TYPE_CHECKING

if TYPE_CHECKING:
    from ..messages.rosbag import BagTopics


#: Former command names, hidden from the help: each still runs its successor, saying so.
RENAMED = {'bench': 'speed', 'benchmark': 'paper'}
#: Seconds a command has from SIGINT/SIGTERM to its end (ros2 launch waits longer).
EXIT_GRACE_S = 1.5


class OneLineParser(argparse.ArgumentParser):
    """
    An ArgumentParser whose usage errors are one line: the command, the option, the fix.

    A value that starts with a minus and a digit is a value, not an option: a comma-separated
    list of numbers (``--lidar-to-camera-matrix -0.0002,-0.9999,...``) as a single negative
    number already is (no option of the command looks like a number).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r'^-\.?\d')

    def error(self, message: str) -> NoReturn:
        """Print ``<prog>: error: <message> (see --help)`` and exit 2."""
        self.exit(2, f'{self.prog}: error: {message} (see {self.prog} --help)\n')


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Append '(default: X)' to an option's help unless the help already names its default."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ''
        if 'default' in text or action.default in (None, argparse.SUPPRESS) \
                or isinstance(action, argparse._StoreTrueAction) \
                or not action.option_strings:
            return text
        return f'{text} (default: {shown(action.default)})'


def shown(value: Any) -> str:
    """Return a default as a user types it (lists comma-separated, %% for argparse)."""
    if isinstance(value, (tuple, list)):
        value = ','.join(str(item) for item in value) or 'none'
    return str(value).replace('%', '%%')


def csv(text: str) -> tuple[str, ...]:
    """Parse comma-separated names."""
    return tuple(item.strip() for item in text.split(',') if item.strip())


def floats(text: str) -> tuple[float, ...]:
    """Parse comma-separated numbers (brackets allowed, as YAML lists are written)."""
    try:
        return tuple(float(item) for item in csv(text.strip('[]')))
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected comma-separated numbers, got {text!r}'
                                         ) from None


def number(kind: type, minimum: float | None = None, maximum: float | None = None,
           above: float | None = None) -> Callable[[str], Any]:
    """
    Return an argparse type: ``kind`` (int or float) within [minimum, maximum].

    ``above``: an exclusive lower bound instead (a rate, a duration that must be positive).
    """
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f'expected {"an integer" if kind is int else "a number"}, got {text!r}'
            ) from None
        if above is not None and not value > above:
            raise argparse.ArgumentTypeError(f'must be > {above:g}, got {text}')
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f'must be >= {minimum:g}, got {text}')
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f'must be <= {maximum:g}, got {text}')
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


def parameter(name: str) -> Callable[[str], Any]:
    """Return an argparse type that checks a value as the node's parameter ``name`` does."""
    from ..settings import SPECS

    spec = SPECS[name]
    kind = type(spec.default)

    def parse(text: str) -> Any:
        value = number(kind)(text)
        reason = spec.check(value)
        if reason is not None:
            raise argparse.ArgumentTypeError(f"{reason} (the node's {name})")
        return value

    parse.__name__ = kind.__name__
    return parse


def node_default(option: str) -> str:
    """Return the help's note on an option that defaults to a node parameter."""
    from ..settings import SPECS

    name = option.replace('-', '_')
    return f"default: the node's {name} ({SPECS[name].default!r})"


def common() -> argparse.ArgumentParser:
    """Return the options every command takes."""
    parser = OneLineParser(add_help=False)
    parser.add_argument('--debug', action='store_true',
                        help='on an error, show the full message and traceback')
    return parser


def add_command(commands, name: str, help_text: str, **kwargs) -> argparse.ArgumentParser:
    """Add command ``name`` with the options every command takes (a former name: unlisted)."""
    kwargs.update(parents=[common()], formatter_class=DefaultsHelpFormatter)
    if name in RENAMED:  # no help line: the help lists the current names only
        return commands.add_parser(name, **kwargs)
    return commands.add_parser(name, help=help_text, **kwargs)


def add_node_parameters(parser: argparse.ArgumentParser, precedence: str) -> None:
    """Add --params-file and -p: completion node parameters, read as the node reads them."""
    from pathlib import Path

    parser.add_argument('--params-file', type=Path,
                        help="the completion node's parameters file (config/completion.yaml); "
                        "default: the node's defaults")
    parser.add_argument('-p', dest='parameters', action='append', default=[],
                        metavar='NAME:=VALUE', help='a node parameter (repeat; wins over the '
                        f'file; {precedence}; default: none)')


def add_topics(parser: argparse.ArgumentParser, roles: tuple[str, ...],
               several_points: bool = False) -> None:
    """
    Add --<role>-topic for each role: unset, the bag's only topic of the role's type.

    ``several_points``: --points-topic may be repeated, once per LiDAR (the node's
    ``point_topics``); :func:`bag_topics` reads them.
    """
    for role in roles:
        default = ('none (ground truth held out from the LiDAR)' if role == 'depth'
                   else "the bag's only one")
        if role == 'points' and several_points:
            parser.add_argument('--points-topic', action='append',
                                help='bag topic of a LiDAR; once per LiDAR, their clouds merged '
                                f'into one scan per frame; default: {default}')
            continue
        parser.add_argument(f'--{role}-topic',
                            help=f'bag topic of the {role}; default: {default}')


def bag_topics(args: argparse.Namespace) -> BagTopics:
    """Return the bag topics of the options :func:`add_topics` added (points repeatable)."""
    from ..messages.rosbag import BagTopics

    points = args.points_topic or [None]
    return BagTopics(args.image_topic, args.camera_info_topic, points[0],
                     getattr(args, 'depth_topic', None), tuple(points[1:]))


#: What --model and --device take.
MODEL_HELP = "'demo' (the embedded prior), 'auto', a hub id, a directory or a .pth"
DEVICE_HELP = 'auto, cpu, cuda or cuda:N'


def add_model(parser: argparse.ArgumentParser, default: str) -> None:
    """Add --model (default ``default``) and --device (default auto)."""
    parser.add_argument('--model', default=default, help=MODEL_HELP)
    parser.add_argument('--device', default='auto', help=DEVICE_HELP)


def add_engine_options(parser: argparse.ArgumentParser, processing_size: str,
                       dtype: str, schedule: str = '') -> None:
    """Add the model and engine options; unset, they take the node's parameters."""
    for option, kind, meaning in (
            ('model', str, MODEL_HELP),
            ('device', str, DEVICE_HELP),
            ('iterations', parameter('iterations'), 'Adam steps on a cold frame'),
            ('warm-iterations', parameter('warm_iterations'), 'Adam steps on a warm-started '
             'frame'),
            ('learning-rate', parameter('learning_rate'), 'Adam learning rate')):
        parser.add_argument(f'--{option}', type=kind, help=f'{meaning}; {node_default(option)}')
    add_schedule(parser, unset_is_node=True, note=schedule)
    parser.add_argument('--processing-size', type=parameter('processing_size'),
                        help=processing_size)
    parser.add_argument('--dtype', choices=('auto', 'float32', 'bfloat16', 'float16'),
                        help=f'engine precision; default: {dtype}')
    parser.add_argument('--seed', type=number(int, 0), default=0,
                        help='seed of the adapters, the sampled points and the held-out LiDAR')


def add_schedule(parser: argparse.ArgumentParser, unset_is_node: bool, note: str = '') -> None:
    """Add --schedule (engine/schedule.py); ``unset_is_node``: None stands for the node's."""
    from ..engine.config import SCHEDULES
    from ..settings import SPECS

    parser.add_argument('--schedule', choices=SCHEDULES,
                        default=None if unset_is_node else SPECS['schedule'].default,
                        help="how the steps are spent: 'adaptive', 'fast' or 'paper' (the "
                        f"paper's fixed steps); {note or node_default('schedule')}")


def add_long_run(parser: argparse.ArgumentParser, work: str) -> None:
    """Add --resume, --overwrite, --ray and --workers: how a long run continues, where it runs."""
    parser.add_argument('--resume', action='store_true',
                        help='continue the interrupted run in --output')
    parser.add_argument('--overwrite', action='store_true',
                        help='delete what --output holds of this run and start again')
    parser.add_argument('--ray', metavar='ADDRESS', help=f'distribute {work} over a Ray '
                        "cluster: 'auto', 'local' (start one here), host:port or "
                        "ray://host:port (needs pip install 'lrda_ros[cluster]'); default: "
                        'in this process')
    parser.add_argument('--workers', type=number(int, 0), default=0,
                        help='Ray workers, each with the model loaded once (default: one per '
                        'GPU, or per CPU without GPUs)')


def add_sync_options(parser: argparse.ArgumentParser) -> None:
    """Add --slop and --queue-size: how a bag's topics are synchronized (the node's sync.*)."""
    parser.add_argument('--slop', type=parameter('sync.slop'),
                        help='bags: largest stamp difference (s) of a synchronized set; '
                             + node_default('sync.slop'))
    parser.add_argument('--queue-size', type=parameter('sync.queue_size'),
                        help='bags: messages kept per topic for synchronization; '
                             + node_default('sync.queue_size'))


def add_rectified_option(parser: argparse.ArgumentParser) -> None:
    """Add --image-is-rectified (the node's image_is_rectified; unset: the node's)."""
    parser.add_argument('--image-is-rectified', action='store_true', default=None,
                        help='bags: the image is rectified (project with P, no distortion); '
                             "default: the node's image_is_rectified (false: raw, projected "
                             "with K and the camera_info's distortion)")


def add_extrinsic_options(parser: argparse.ArgumentParser) -> None:
    """Add --lidar-to-camera-*: T_camera_lidar instead of the bag's /tf_static and /tf."""
    for name, meaning in (('translation', 'X,Y,Z (m)'), ('rotation', 'quaternion X,Y,Z,W'),
                          ('matrix', '16 values, row-major 4x4; wins over the other two')):
        parser.add_argument(f'--lidar-to-camera-{name}', type=floats, metavar='V,V,...',
                            help=f'bags: T_camera_lidar {meaning} instead of /tf_static and '
                                 "/tf (as the node's lidar_to_camera.* parameters; default: "
                                 'none)')


def add_bag_inputs(parser: argparse.ArgumentParser, several_points: bool = False,
                   depth: bool = False) -> None:
    """
    Add how a bag is read as the node reads its topics: sync, topics, camera, extrinsic, -p.

    ``several_points``: --points-topic once per LiDAR; ``depth``: also --depth-topic.
    """
    add_sync_options(parser)
    add_topics(parser, ('image', 'camera-info', 'points') + (('depth',) if depth else ()),
               several_points=several_points)
    add_rectified_option(parser)
    add_extrinsic_options(parser)
    add_node_parameters(parser, 'the options above win over both')


def extrinsic_of(args: argparse.Namespace, parameters: dict | None = None):
    """
    Return the T_camera_lidar of the --lidar-to-camera-* options, or None.

    ``parameters`` (node parameter values from --params-file and -p): their
    ``lidar_to_camera.*`` override applies where no option is given.
    """
    from ..settings import extrinsic_override, InvalidParameterError

    values = dict(parameters or {})
    given = [args.lidar_to_camera_translation, args.lidar_to_camera_rotation,
             args.lidar_to_camera_matrix]
    if not any(given):
        given = [values.get(f'lidar_to_camera.{name}', ())
                 for name in ('translation', 'rotation', 'matrix')]
    try:
        return extrinsic_override(*[value or () for value in given])
    except InvalidParameterError as error:
        option = '--' + error.name.replace('.', '-').replace('_', '-')
        raise ValueError(f'{option}: {error.reason}') from None
