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


"""``lrda densify``: recordings written back with the node's depth."""

from __future__ import annotations

from pathlib import Path
import sys

from .options import (add_command, add_long_run, add_node_parameters, add_topics, bag_topics,
                      MODEL_HELP, node_default, number, parameter)


def add_densify(commands) -> None:
    parser = add_command(commands, 'densify', "write rosbag2 recordings back with the node's "
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


def run_densify(args) -> int:
    from ..densify import DensifyOptions, run_densify as densify
    from ..eval.report import engine_line
    from ..settings import load_parameters

    options = DensifyOptions(
        bags=tuple(args.bags), output=args.output,
        parameters=_with_options(load_parameters(args.params_file, args.parameters),
                                 model=args.model, processing_size=args.processing_size),
        topics=bag_topics(args), namespace=args.namespace, chunk_frames=args.chunk_frames,
        storage=args.storage, max_frames=args.max_frames,
        ray_address=args.ray, workers=args.workers, resume=args.resume,
        overwrite=args.overwrite)
    try:
        report = densify(options)
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
    print(f'frames paired as the node pairs them: {report.paired_by}')
    print('wrote ' + ', '.join(str(path) for path in report.outputs))
    return 0
