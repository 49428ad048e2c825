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


"""``lrda eval``: accuracy of methods side by side on a dataset or a bag."""

from __future__ import annotations

from pathlib import Path
import sys

from .options import (add_bag_inputs, add_command, add_engine_options, bag_topics, csv,
                      EXIT_GRACE_S, extrinsic_of, floats, node_default, number)


def add_eval(commands) -> None:
    from ..datasets import DATASET_KINDS
    from ..eval.methods import METHODS
    from ..eval.options import DEFAULT_METHODS
    from ..settings import SPECS

    parser = add_command(commands, 'eval', 'accuracy of methods side by side on a dataset or '
                         "a rosbag2 (a bag with the completion node's parameters)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument('--dataset', choices=[k for k in DATASET_KINDS if k != 'rosbag'],
                        help='benchmark layout of --root (this or --bag; default: none)')
    source.add_argument('--bag', type=Path,
                        help='a rosbag2 folder (.db3 or .mcap; this or --dataset; default: none)')
    parser.add_argument('--root', type=Path,
                        help='dataset folder (with --dataset; default: none)')
    parser.add_argument('--output', type=Path, default=Path('out/eval'),
                        help='folder of the report: summary.md, summary.json, frames.csv, '
                        'figures')
    parser.add_argument('--methods', type=csv, default=DEFAULT_METHODS,
                        help=f'comma-separated, from: {", ".join(METHODS)}')
    add_engine_options(parser, 'longer side of the network input, 0: the image size; '
                       + node_default('processing_size'),
                       f"the node's dtype ({SPECS['dtype'].default!r}) for a bag, float32 for a "
                       'dataset')
    parser.add_argument('--max-frames', type=number(int, 1),
                        help='evaluate at most this many frames (default: all)')
    parser.add_argument('--figures', type=number(int, 0), default=10,
                        help='frames with PNG figures')
    parser.add_argument('--save-depth', action='store_true',
                        help="write each method's depth as depth/<method>/<frame>.npy "
                             '(float32 metres, NaN = no depth)')
    parser.add_argument('--compile', action='store_true', default=None,
                        help="torch.compile the step and decode (the node's compile): for "
                             'CUDA')
    parser.add_argument('--encoder-backend', choices=('torch', 'onnxruntime', 'tensorrt'),
                        help='where the encoder runs; ' + node_default('encoder_backend'))
    parser.add_argument('--num-points', type=number(int, 1),
                        help='sample this many sparse points from ground truth (field '
                        "protocols; default: the dataset protocol's)")
    parser.add_argument('--max-depth', type=number(float, above=0),
                        help="ignore ground truth beyond (m); default: the dataset protocol's")
    parser.add_argument('--outlier-filter', choices=('on', 'off'),
                        help='LiDAR input: remove points seen through nearer objects (7x7 '
                             'window, 1.5 m; default: on for kitti_dc and ddad, off for bags '
                             'and kitti_object)')
    parser.add_argument('--holdout', type=float,
                        help='LiDAR pixel fraction withheld from the input as ground truth: bags '
                             'without --depth-topic and kitti_object (default 0.2), folder '
                             'without gt/ (off unless given)')
    parser.add_argument('--independent', action='store_true',
                        help='frames are unrelated: warm-started methods start cold on each')
    parser.add_argument('--budgets', type=floats, default=(),
                        help='also the anytime curve: lrda and lrda-warm at these time budgets '
                             '(s/frame, comma-separated; 0 = unlimited) -> budget_curve.png')
    add_bag_inputs(parser, several_points=True, depth=True)


def run_eval(args) -> int:
    from ..interrupts import exit_now, exit_within

    # SIGINT and SIGTERM stop it: the frames done so far are reported, exit code 0.
    farewell = (f'lrda eval: interrupted in a frame; the last complete report, if any, is in '
                f'{args.output}')
    with exit_within(EXIT_GRACE_S, farewell=farewell) as stop_requested:
        try:
            code = _evaluate(args)
        except KeyboardInterrupt:
            print('lrda eval: interrupted before any frame was evaluated', file=sys.stderr)
            code = 0
        if stop_requested.is_set():
            exit_now(code)  # the report is written: no slow interpreter teardown
    return code


def _evaluate(args) -> int:
    from ..eval.report import SUMMARY_MD
    from ..eval.run import run_evaluation

    options = eval_options(args)
    result, _ = run_evaluation(options)
    print((options.output / SUMMARY_MD).read_text())
    if result.interrupted:
        print(f'lrda eval: interrupted after {result.num_frames} frames: partial report',
              file=sys.stderr)
    print(f'wrote {options.output}/: summary.md, summary.json, frames.csv, '
          'speed_accuracy.png, sparsification.png, frames/*.png'
          + (', budget_curve.png' if options.budgets else ''))
    return 0


def eval_options(args):
    """Return the EvalOptions of parsed ``lrda eval`` arguments."""
    from ..eval.options import EvalOptions
    from ..settings import load_parameters

    if args.dataset and args.root is None:
        raise ValueError(f'--dataset {args.dataset} needs --root (the dataset folder)')
    if args.bag and args.root is not None:
        raise ValueError('--root is for --dataset; a bag is given by --bag alone')
    return EvalOptions(
        kind='rosbag' if args.bag else args.dataset, root=args.bag or args.root,
        output=args.output, methods=args.methods, model=args.model, device=args.device,
        iterations=args.iterations, warm_iterations=args.warm_iterations,
        schedule=args.schedule, learning_rate=args.learning_rate,
        processing_size=args.processing_size,
        max_frames=args.max_frames, figures=args.figures, seed=args.seed,
        num_points=args.num_points, max_depth=args.max_depth, holdout_fraction=args.holdout,
        budgets=args.budgets,
        topics=bag_topics(args),
        slop_s=args.slop, queue_size=args.queue_size, independent=args.independent,
        extrinsic=extrinsic_of(args), image_is_rectified=args.image_is_rectified,
        dtype=args.dtype, save_depth=args.save_depth, compile=args.compile,
        encoder_backend=args.encoder_backend,
        outlier_filter=None if args.outlier_filter is None else args.outlier_filter == 'on',
        parameters=load_parameters(args.params_file, args.parameters))
