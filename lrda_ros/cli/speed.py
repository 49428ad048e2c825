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


"""``lrda speed``: time and peak memory, methods side by side."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
import sys
from types import SimpleNamespace

from .options import add_command, add_schedule, csv, EXIT_GRACE_S, parameter


def add_speed(commands, name: str = 'speed') -> None:
    from ..eval.methods import METHODS
    from ..speed.options import RESOLUTIONS, SpeedOptions

    # The declared defaults (an instance would check them, which loads torch).
    defaults = SimpleNamespace(**{option.name: option.default for option in fields(SpeedOptions)})
    parser = add_command(commands, name, 'time and peak memory of test-time optimization, '
                         'methods side by side')
    parser.add_argument('--backbones', type=csv, default=defaults.backbones,
                        help='comma-separated: vits, vitb, vitl, vitg (Depth Anything V2), '
                        'unidepth-vits, unidepth-vitb, unidepth-vitl (UniDepthV2), da3-small, '
                        'da3-base, da3-large, da3metric-large, da3mono-large (Depth Anything '
                        '3); random weights of that architecture')
    parser.add_argument('--resolutions', type=csv, default=defaults.resolutions,
                        help=f'comma-separated, from: {", ".join(RESOLUTIONS)}')
    parser.add_argument('--methods', type=csv, default=defaults.methods,
                        help=f'comma-separated, from: {", ".join(METHODS)}')
    parser.add_argument('--iterations', type=parameter('iterations'),
                        default=defaults.iterations, help='Adam steps on a cold frame')
    parser.add_argument('--warm-iterations', type=parameter('warm_iterations'),
                        default=defaults.warm_iterations,
                        help='Adam steps on a warm-started frame')
    add_schedule(parser, unset_is_node=False)
    parser.add_argument('--frames', type=int, default=defaults.frames,
                        help='timed frames per method (after one warm-up frame)')
    parser.add_argument('--device', default=defaults.device, help='auto, cpu, cuda or cuda:N')
    parser.add_argument('--dtype', default=defaults.dtype,
                        choices=('auto', 'float32', 'bfloat16', 'float16'),
                        help="compute precision; 'auto': bfloat16 where native (as the node)")
    parser.add_argument('--lidar-fraction', type=float, default=defaults.lidar_fraction,
                        help='share of pixels with a LiDAR return (KITTI: 0.04)')
    parser.add_argument('--lidar-top', type=float, default=defaults.lidar_top,
                        help='share of the rows above the LiDAR, which have no returns '
                        '(KITTI: 0.33; 0: returns over the whole image)')
    parser.add_argument('--dense-head', action='store_true',
                        help='evaluate the full-resolution head during TTO steps')
    parser.add_argument('--compile', action='store_true',
                        help="torch.compile the step and decode (the node's compile; the "
                             'compilation happens in the untimed warm-up frame): for CUDA')
    parser.add_argument('--no-structure', action='store_true',
                        help='skip the cost structure (encoder pass, decoder steps)')
    parser.add_argument('--no-ablations', action='store_true',
                        help='skip the runs with each optimization off')
    parser.add_argument('--accuracy', action='store_true',
                        help='also score speed-ups on a synthetic sequence (demo prior)')
    parser.add_argument('--output', type=Path, default=defaults.output,
                        help='folder of the report: speed.md, speed.json')
    parser.add_argument('--against', type=Path, metavar='CHECKOUT', default=None,
                        help='another checkout of lrda_ros (e.g. the previous commit: git '
                        'worktree add ../before HEAD~1): every frame is timed with it too, '
                        'right after, and the report gives both times and their ratio '
                        '(default: none)')


def run_speed(args) -> int:
    from ..interrupts import exit_within
    from ..speed.run import run_speed as measure, SpeedOptions

    options = SpeedOptions(backbones=args.backbones, resolutions=args.resolutions,
                           methods=args.methods, iterations=args.iterations,
                           warm_iterations=args.warm_iterations, schedule=args.schedule,
                           device=args.device, dtype=args.dtype,
                           lidar_fraction=args.lidar_fraction, lidar_top=args.lidar_top,
                           frames=args.frames, sparse_head=not args.dense_head,
                           compile=args.compile, structure=not args.no_structure,
                           ablations=not args.no_ablations, output=args.output,
                           against=args.against)
    stopped = 'lrda speed: interrupted; nothing written (the report needs every configuration)'
    with exit_within(EXIT_GRACE_S, farewell=stopped):
        try:
            measure(options, accuracy=args.accuracy)
        except KeyboardInterrupt:  # SIGINT or SIGTERM: the measuring process ends with it
            print(stopped, file=sys.stderr)
    return 0
