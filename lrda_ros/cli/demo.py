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


"""``lrda demo`` and ``lrda train-prior``: the system on a synthetic sequence; its prior."""

from __future__ import annotations

from pathlib import Path

from .options import add_command, add_model, add_schedule, number, parameter


def add_demo(commands) -> None:
    parser = add_command(commands, 'demo', 'run the whole system on a synthetic sequence')
    parser.add_argument('--output', type=Path, default=Path('out/demo'),
                        help='folder of the report, figures, GIF and bag')
    parser.add_argument('--kind', choices=('indoor', 'outdoor'), default='indoor',
                        help='synthetic world: a room or a street')
    parser.add_argument('--frames', type=number(int, 2), default=10,
                        help='frames of the rendered sequence')
    parser.add_argument('--width', type=number(int, 32, 8192), default=320,
                        help='image width (pixels)')
    parser.add_argument('--height', type=number(int, 32, 8192), default=240,
                        help='image height (pixels)')
    parser.add_argument('--beams', type=number(int, 1, 512), default=32,
                        help='LiDAR beams (rows of the scan)')
    parser.add_argument('--seed', type=number(int, 0), default=7,
                        help='seed of the world, the trajectory and the engine')
    add_model(parser, 'demo')
    parser.add_argument('--iterations', type=parameter('iterations'), default=40,
                        help='Adam steps on a cold frame')
    parser.add_argument('--warm-iterations', type=parameter('warm_iterations'), default=10,
                        help='Adam steps on a warm-started frame')
    add_schedule(parser, unset_is_node=False)


def run_demo(args) -> int:
    from ..demo.job import DemoOptions, run_demo as job

    job(DemoOptions(output=args.output, kind=args.kind, frames=args.frames,
                    width=args.width, height=args.height, beams=args.beams, seed=args.seed,
                    model=args.model, device=args.device, iterations=args.iterations,
                    warm_iterations=args.warm_iterations, schedule=args.schedule))
    return 0


def add_train_prior(commands) -> None:
    from ..demo.prior_config import PriorTrainingConfig

    defaults = PriorTrainingConfig()
    parser = add_command(commands, 'train-prior',
                         'train the embedded demo prior on synthetic scenes')
    parser.add_argument('--output', type=Path, default=defaults.output,
                        help="folder of the prior's weights (default: the package's embedded "
                        'prior, lrda_ros/weights/demo_prior)')
    parser.add_argument('--views', type=number(int, 1), default=defaults.num_views,
                        help='synthetic views rendered for training')
    parser.add_argument('--steps', type=number(int, 1), default=defaults.steps,
                        help='optimizer steps')
    parser.add_argument('--seed', type=number(int, 0), default=defaults.seed,
                        help='seed of the views and the initial weights')


def run_train_prior(args) -> int:
    from ..demo.prior import PriorTrainingConfig, train_prior

    report = train_prior(PriorTrainingConfig(output=args.output, num_views=args.views,
                                             steps=args.steps, seed=args.seed))
    print(report)
    return 0
