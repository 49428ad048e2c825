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
(:data:`RENAMED`).

Also runnable from a ROS 2 install as ``ros2 run lrda_ros lrda <command> ...``. A failing
command prints one line saying what to change and exits 1 (argparse's usage errors: 2);
``--debug`` shows the full message and traceback instead.
"""

from __future__ import annotations

import argparse
from pathlib import Path
import sys

from .cli_calibrate import add_calibrate, run_calibrate
from .cli_options import (add_engine_options, add_extrinsic_options, add_long_run, add_model,
                          add_node_parameters, add_rectified_option, add_schedule,
                          add_sync_options, add_topics, bag_topics, common, csv,
                          DefaultsHelpFormatter, extrinsic_of, floats, MODEL_HELP,
                          node_default, number, OneLineParser, parameter)

#: Former command names, hidden from the help: each still runs its successor, saying so.
RENAMED = {'bench': 'speed', 'benchmark': 'paper'}
#: Seconds a command has from SIGINT/SIGTERM to its end (ros2 launch waits longer).
_EXIT_GRACE_S = 1.5


def _add_command(commands, name: str, help_text: str, **kwargs) -> argparse.ArgumentParser:
    """Add command ``name`` with the options every command takes (a former name: unlisted)."""
    kwargs.update(parents=[common()], formatter_class=DefaultsHelpFormatter)
    if name in RENAMED:  # no help line: the help lists the current names only
        return commands.add_parser(name, **kwargs)
    return commands.add_parser(name, help=help_text, **kwargs)


def _add_demo(commands) -> None:
    parser = _add_command(commands, 'demo', 'run the whole system on a synthetic sequence')
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


def _add_eval(commands) -> None:
    from .datasets import DATASET_KINDS
    from .eval.methods import METHODS
    from .eval.options import DEFAULT_METHODS
    from .settings import SPECS

    parser = _add_command(commands, 'eval', 'accuracy of methods side by side on a dataset or '
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
    add_sync_options(parser)
    parser.add_argument('--budgets', type=floats, default=(),
                        help='also the anytime curve: lrda and lrda-warm at these time budgets '
                             '(s/frame, comma-separated; 0 = unlimited) -> budget_curve.png')
    add_topics(parser, ('image', 'camera-info', 'points', 'depth'), several_points=True)
    add_rectified_option(parser)
    add_extrinsic_options(parser)
    add_node_parameters(parser, 'the options above win over both')


def _add_train_prior(commands) -> None:
    from .demo.prior import PriorTrainingConfig

    defaults = PriorTrainingConfig()
    parser = _add_command(commands, 'train-prior',
                          'train the embedded demo prior on synthetic scenes')
    parser.add_argument('--output', type=Path, default=defaults.output,
                        help="folder of the prior's weights (the package's embedded prior)")
    parser.add_argument('--views', type=number(int, 1), default=defaults.num_views,
                        help='synthetic views rendered for training')
    parser.add_argument('--steps', type=number(int, 1), default=defaults.steps,
                        help='optimizer steps')
    parser.add_argument('--seed', type=number(int, 0), default=defaults.seed,
                        help='seed of the views and the initial weights')


def _add_speed(commands, name: str = 'speed') -> None:
    from .eval.methods import METHODS
    from .speed.inputs import RESOLUTIONS
    from .speed.run import SpeedOptions

    defaults = SpeedOptions()
    parser = _add_command(commands, name, 'time and peak memory of test-time optimization, '
                          'methods side by side')
    parser.add_argument('--backbones', type=csv, default=defaults.backbones,
                        help='comma-separated: vits, vitb, vitl, vitg (Depth Anything V2), '
                        'unidepth-vits, unidepth-vitb, unidepth-vitl (UniDepthV2); random '
                        'weights of that architecture')
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


def _run_speed(args) -> int:
    from .interrupts import exit_within
    from .speed.run import run_speed, SpeedOptions

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
    with exit_within(_EXIT_GRACE_S, farewell=stopped):
        try:
            run_speed(options, accuracy=args.accuracy)
        except KeyboardInterrupt:  # SIGINT or SIGTERM: the measuring process ends with it
            print(stopped, file=sys.stderr)
    return 0


def _add_paper(commands, name: str = 'paper') -> None:
    from .eval.methods import METHODS
    from .paper.published import PAPER_BACKBONES
    from .paper.run import PaperOptions, PROTOCOLS

    defaults = PaperOptions(roots={})
    parser = _add_command(commands, name, "the paper's accuracy table: its benchmarks on "
                          'their protocols, our numbers beside its')
    for key, protocol in PROTOCOLS.items():
        parser.add_argument(f'--{key.replace("_", "-")}', type=Path, metavar='PATH',
                            help=f'{protocol.label} folder ({protocol.frames} frames: '
                                 f"{protocol.description.replace('%', '%%')}); default: not "
                                 'run')
    parser.add_argument('--methods', type=csv, default=defaults.methods,
                        help=f'comma-separated, from: {", ".join(METHODS)}')
    add_engine_options(parser, 'longer side of the network input for every dataset '
                       '(default: the image size; DDAD 1274, as the paper)',
                       'float32, as the paper', "default: 'paper', as published")
    parser.add_argument('--max-frames', type=number(int, 1),
                        help='at most this many frames per dataset (default: all)')
    parser.add_argument('--paper-backbone', choices=PAPER_BACKBONES,
                        help="the paper's rows to compare with (default: from the model name)")
    parser.add_argument('--output', type=Path, default=defaults.output,
                        help='folder of paper.md, paper.json, paper.png and frames/')
    add_long_run(parser, 'the frames of the datasets')


def _run_paper(args) -> int:
    from .paper.run import PaperOptions, PROTOCOLS, run_paper

    roots = {key: getattr(args, key) for key in PROTOCOLS if getattr(args, key) is not None}
    try:
        data = run_paper(PaperOptions(
            roots=roots, output=args.output, methods=args.methods, model=args.model,
            device=args.device, iterations=args.iterations,
            warm_iterations=args.warm_iterations, learning_rate=args.learning_rate,
            schedule=args.schedule, processing_size=args.processing_size, dtype=args.dtype,
            seed=args.seed,
            max_frames=args.max_frames, resume=args.resume, overwrite=args.overwrite,
            paper_backbone=args.paper_backbone, ray_address=args.ray, workers=args.workers))
    except KeyboardInterrupt:
        # Every finished result is on disk already: say how to continue.
        print(f'lrda paper: interrupted; the results so far are in {args.output}/frames: '
              'run the same command with --resume to continue', file=sys.stderr)
        return 130
    print((args.output / 'paper.md').read_text())
    skipped = sum(d['frames_skipped'] for d in data['datasets'].values())
    print(f'wrote {args.output}/: paper.md, paper.json, paper.png, frames/*.jsonl'
          + (f' ({skipped} frames skipped: see paper.md)' if skipped else ''))
    return 0


def _add_densify(commands) -> None:
    parser = _add_command(commands, 'densify', "write rosbag2 recordings back with the node's "
                          'depth for every frame')
    parser.add_argument('bags', type=Path, nargs='+', help='rosbag2 folders (.mcap or .db3)')
    parser.add_argument('--output', type=Path, default=Path('out/densify'),
                        help='folder of the output bags, one per input, named as the input')
    add_node_parameters(parser, 'live-only ones, publish.*, colormap.*, image_transport, '
                        'tf_timeout and diagnostics_period, have no effect')
    parser.add_argument('--model', help=f'{MODEL_HELP} (wins over -p); '
                        + node_default('model'))
    parser.add_argument('--processing-size', type=parameter('processing_size'),
                        help='longer side of the network input, 0: the image size (wins over '
                        '-p); ' + node_default('processing_size'))
    add_topics(parser, ('image', 'camera-info', 'points'), several_points=True)
    parser.add_argument('--namespace', help='write NS/depth, NS/depth/camera_info, '
                        "NS/depth/confidence (default: the image topic's namespace)")
    parser.add_argument('--chunk-frames', type=number(int, 0), default=0,
                        help='split recordings into chunks of this many frames, completed '
                        'independently (each starts cold); 0: whole recordings')
    parser.add_argument('--max-frames', type=number(int, 1),
                        help='complete the first this many frames of each recording, for a '
                        'quick look (the output still holds every input message; default: all)')
    parser.add_argument('--storage', choices=('mcap', 'sqlite3'), default='mcap',
                        help='storage of the output bags, whatever the input (a .db3 input is '
                        'written as .mcap unless sqlite3)')
    add_long_run(parser, 'the chunks of the recordings')


def _with_options(parameters: dict, **options) -> dict:
    """Return node parameters with the options given on the command line (None: not given)."""
    return {**parameters, **{k: v for k, v in options.items() if v is not None}}


def _run_densify(args) -> int:
    from .densify import DensifyOptions, run_densify
    from .eval.report import engine_line
    from .settings import load_parameters

    options = DensifyOptions(
        bags=tuple(args.bags), output=args.output,
        parameters=_with_options(load_parameters(args.params_file, args.parameters),
                                 model=args.model, processing_size=args.processing_size),
        topics=bag_topics(args), namespace=args.namespace, chunk_frames=args.chunk_frames,
        storage=args.storage, max_frames=args.max_frames,
        ray_address=args.ray, workers=args.workers, resume=args.resume,
        overwrite=args.overwrite)
    try:
        report = run_densify(options)
    except KeyboardInterrupt:
        print(f'lrda densify: interrupted; the finished frames are kept in {args.output}: '
              'rerun with --resume to continue', file=sys.stderr)
        return 130
    if report.workers:
        print(engine_line(report.workers[0]['engine']))
    dropped = ', '.join(f'{reason} {count}' for reason, count in report.dropped.items())
    motion = ', '.join(f'{how} {count}' for how, count in report.motion.items()
                       if how != 'off')
    print(f'densified {report.completed} frames in {report.seconds:.1f} s '
          f'({report.frames_per_second:.2f} frames/s, {len(report.workers)} worker(s))'
          + (f', {report.reused} finished before' if report.reused else '')
          + (f'; dropped as the node would: {dropped}' if dropped else '')
          + (f'; motion alignment: {motion}' if motion else ''))
    print('wrote ' + ', '.join(str(path) for path in report.outputs))
    return 0


def _add_play(commands) -> None:
    parser = _add_command(commands, 'play', 'replay a rosbag2 over rclpy (without ros2cli)')
    parser.add_argument('bag', type=Path, help='a rosbag2 folder (.mcap or .db3)')
    parser.add_argument('--rate', type=number(float, above=0), default=1.0,
                        help='replay speed factor (2: twice as fast)')
    parser.add_argument('--loop', action='store_true', help='start again at the end')
    parser.add_argument('--wait', type=number(float, 0), default=10.0,
                        help='seconds to wait for a subscriber on every topic before playing')
    parser.add_argument('--linger', type=number(float, 0), default=10.0,
                        help='at most this many seconds after the last message, wait for '
                             'every reliable subscriber to acknowledge everything (what is '
                             'not confirmed then is named)')
    parser.add_argument('--clock', type=number(float, above=0), nargs='?', const=40.0,
                        default=0.0, metavar='HZ',
                        help='publish the bag time on /clock (40 Hz when given without a '
                             'rate), for nodes run with use_sim_time:=true; default: off')
    add_topics(parser, ('image', 'camera-info', 'points'))


def _add_hold_rate(commands) -> None:
    parser = _add_command(commands, 'hold-rate', 'replay a bag in a loop into an in-process '
                          'node with a time budget and report the output rate it holds')
    parser.add_argument('bag', type=Path, help='a rosbag2 folder (.mcap or .db3)')
    parser.add_argument('--budget', type=parameter('time_budget'), default=0.5,
                        help='time_budget of the node (s per frame; 0 = off)')
    parser.add_argument('--seconds', type=number(float, above=0), default=30.0,
                        help='how long to replay')
    parser.add_argument('--rate', type=number(float, above=0), default=1.0,
                        help='replay speed factor')
    add_model(parser, 'demo')
    parser.add_argument('--processing-size', type=parameter('processing_size'), default=518,
                        help='longer side of the network input, 0: the image size')
    parser.add_argument('--output', type=Path,
                        help='write the per-frame record as JSON (default: not written)')


def _run_hold_rate(args) -> int:
    import json

    from .messages.rosbag import BagTopics, RosbagSource
    from .ros.replay import held_rate, hold_rate

    with RosbagSource(args.bag, BagTopics()) as source:
        image, _, cloud = next(iter(source.synchronized()))[:3]
        T_cam_lidar = source.transform_tree().lookup(image.header.frame_id,
                                                     cloud.header.frame_id)
    parameters = {'model': args.model, 'device': args.device, 'time_budget': args.budget,
                  'processing_size': args.processing_size, 'warm_start': True,
                  'lidar_to_camera.matrix': [float(v) for v in T_cam_lidar.as_matrix().ravel()]}
    result = hold_rate(args.bag, BagTopics(), parameters, args.seconds, args.rate)
    rate, summary = held_rate(result)
    print(f'budget {args.budget:g} s: {summary}')
    if args.output:
        args.output.write_text(json.dumps({'budget_s': args.budget, 'rate_hz': rate,
                                           **result}, indent=2) + '\n')
    return 0


def _run_play(args) -> int:
    import threading

    from .interrupts import exit_now, exit_within
    from .messages.rosbag import BagTopics
    from .ros.replay import play_bag

    # SIGINT and SIGTERM end the replay between messages: a summary, exit code 0.
    stop = threading.Event()
    with exit_within(_EXIT_GRACE_S, on_signal=stop.set):
        play_bag(args.bag, BagTopics(args.image_topic, args.camera_info_topic,
                                     args.points_topic),
                 args.rate, args.loop, wait_for_subscribers_s=args.wait, linger_s=args.linger,
                 clock_hz=args.clock, stop=stop)
        if stop.is_set():
            exit_now(0)  # all is closed: no slow interpreter teardown
    return 0


def _run_demo(args) -> int:
    from .demo.job import DemoOptions, run_demo

    run_demo(DemoOptions(output=args.output, kind=args.kind, frames=args.frames,
                         width=args.width, height=args.height, beams=args.beams, seed=args.seed,
                         model=args.model, device=args.device, iterations=args.iterations,
                         warm_iterations=args.warm_iterations, schedule=args.schedule))
    return 0


def _run_eval(args) -> int:
    from .interrupts import exit_now, exit_within

    # SIGINT and SIGTERM stop it: the frames done so far are reported, exit code 0.
    farewell = (f'lrda eval: interrupted in a frame; the last complete report, if any, is in '
                f'{args.output}')
    with exit_within(_EXIT_GRACE_S, farewell=farewell) as stop_requested:
        try:
            code = _evaluate(args)
        except KeyboardInterrupt:
            print('lrda eval: interrupted before any frame was evaluated', file=sys.stderr)
            code = 0
        if stop_requested.is_set():
            exit_now(code)  # the report is written: no slow interpreter teardown
    return code


def _evaluate(args) -> int:
    from .eval.report import SUMMARY_MD
    from .eval.run import run_evaluation

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
    from .eval.options import EvalOptions
    from .settings import load_parameters

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


def _run_train_prior(args) -> int:
    from .demo.prior import PriorTrainingConfig, train_prior

    report = train_prior(PriorTrainingConfig(output=args.output, num_views=args.views,
                                             steps=args.steps, seed=args.seed))
    print(report)
    return 0


def command_line() -> argparse.ArgumentParser:
    """Return the parser of every command, the former names included (hidden)."""
    parser = OneLineParser(
        prog='lrda', description='Zero-shot LiDAR + camera depth completion by low-rank '
                                 'decoder adaptation (test-time optimization).')
    commands = parser.add_subparsers(dest='command', required=True, metavar='<command>')
    _add_demo(commands)
    _add_eval(commands)
    _add_speed(commands)
    _add_paper(commands)
    _add_densify(commands)
    _add_play(commands)
    _add_hold_rate(commands)
    _add_train_prior(commands)
    add_calibrate(_add_command(commands, 'calibrate', "check a bag's LiDAR->camera "
                               'calibration (and time offset) from its own frames'))
    for former, current in RENAMED.items():
        {'speed': _add_speed, 'paper': _add_paper}[current](commands, former)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run one command."""
    from .errors import error_line

    args = command_line().parse_args(argv)
    command = RENAMED.get(args.command, args.command)
    if command != args.command:
        print(f'lrda {args.command} is now lrda {command}: running lrda {command}',
              file=sys.stderr)
    runners = {'demo': _run_demo, 'eval': _run_eval, 'speed': _run_speed, 'paper': _run_paper,
               'densify': _run_densify, 'play': _run_play, 'hold-rate': _run_hold_rate,
               'train-prior': _run_train_prior, 'calibrate': run_calibrate}
    try:
        return runners[command](args)
    except KeyboardInterrupt:
        print(f'lrda {command}: interrupted', file=sys.stderr)
        return 130
    except Exception as error:  # noqa: B902 - every failure ends as one line (or --debug)
        if args.debug:
            raise
        print(f'lrda {command}: error: {error_line(error)}', file=sys.stderr)
        return 1


if __name__ == '__main__':
    sys.exit(main())
