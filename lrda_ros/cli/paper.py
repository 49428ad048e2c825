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


"""``lrda paper``: the paper's table on its benchmarks."""

from __future__ import annotations

from pathlib import Path
import sys

from .options import add_command, add_engine_options, add_long_run, csv, number


def add_paper(commands, name: str = 'paper') -> None:
    from ..eval.methods import METHODS
    from ..paper.published import PAPER_BACKBONES
    from ..paper.options import PaperOptions, PROTOCOLS

    defaults = PaperOptions(roots={})
    parser = add_command(commands, name, "the paper's accuracy table: its benchmarks on "
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


def run_paper(args) -> int:
    from ..paper.options import PaperOptions, PROTOCOLS
    from ..paper.run import run_paper as table

    roots = {key: getattr(args, key) for key in PROTOCOLS if getattr(args, key) is not None}
    try:
        data = table(PaperOptions(
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
