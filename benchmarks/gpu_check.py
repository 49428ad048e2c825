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
One command that measures the package on a GPU in at most 8 minutes, with no network.

    benchmarks/gpu_check.sh                         # CUDA: every part, 8 minutes at most
    benchmarks/gpu_check.sh --device cpu --quick    # the dry run: tiny sizes, a minute or two
    benchmarks/gpu_check.sh --list                  # the parts, their time limits, their sum
    benchmarks/gpu_check.sh --only vitl-fhd,tests   # some parts again

Parts, most important first, each in a process of its own stopped at its time limit (one
that overruns is recorded 'timed out' and the next one starts; the limits sum to at most
8 minutes): the environment (versions, device, the dtype 'auto' resolves to), ``lrda speed``
rows (ViT-S VGA cold, warm and prompt tuning; ViT-L FHD time and memory, prompt tuning; the
decoder tail in strips; float32; ``compile``; UniDepthV2-S and -L; ViT-B and the other
sizes), the CUDA tests (``pytest -m cuda``), the per-step figures (host synchronizations per
step, time per step, encoder pass, the step's FLOP count from FlopCounterMode and the
TFLOP/s achieved) and three cameras with the encoder batched.

After every part the report is written again to --output (default $OUT, else
out/gpu_check): gpu_check.json, gpu_check.md (tables doc/performance.md takes as they are)
and gpu_check.log (every part's output as it came). Each part's own files go to a scratch
folder. Needs what a CUDA PyTorch image holds (torch, transformers, peft, safetensors, numpy,
pillow, pyyaml, tqdm, matplotlib, pytest): no ROS and no rosbags, whose modules the speed
path does not import; the package comes from this checkout (gpu_check.sh sets PYTHONPATH).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import sys
import tempfile
from typing import Sequence

from gpu_check_parts import (build_plan, Context, InProcess, limits_line, Outcome, PLAN,
                             pytest_result, QUICK, RESERVE_S, Sizes, UsageError)
from gpu_check_report import git_commit, markdown, Report, write_report
from gpu_check_runner import run_part, run_plan

# The command line; the check itself is in the modules beside this one: gpu_check_parts (what
# it measures: the parts, their rows and time limits), gpu_check_figures (the measurements run
# in a part's own process), gpu_check_runner (each part in a process of its own, stopped at
# its limit) and gpu_check_report (the JSON and the Markdown tables).

__all__ = ['build_plan', 'Context', 'limits_line', 'main', 'markdown', 'Outcome', 'pytest_result',
           'Report', 'RESERVE_S', 'run_part', 'Sizes']


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line."""

    def error(self, message: str) -> None:
        raise UsageError(message)


def _csv(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in text.split(',') if item.strip())


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    """Return the options; raise UsageError for a bad one."""
    parser = _Parser(prog='gpu_check.sh', description=__doc__,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--device', choices=('cuda', 'cpu'), default='cuda')
    parser.add_argument('--quick', action='store_true',
                        help='the dry run: its parts at tiny sizes (ViT-S, 56², 2 steps)')
    parser.add_argument('--output', type=Path,
                        default=Path(os.environ.get('OUT') or 'out/gpu_check'),
                        help='where gpu_check.json, .md and .log go (default $OUT, else '
                             'out/gpu_check)')
    parser.add_argument('--only', type=_csv, default=(), metavar='PART,...',
                        help='run these parts (and the environment check) alone')
    parser.add_argument('--list', action='store_true',
                        help='print the parts, their time limits and their sum; run nothing')
    parser.add_argument('--placeholder', action='store_true',
                        help="write the report with every row 'not yet measured' and run "
                             "nothing (doc/performance.md's GPU section before a GPU run)")
    parser.add_argument('--commit', help='the commit to record (default: git rev-parse)')
    parser.add_argument('--part', help=argparse.SUPPRESS)  # run one part, in this process
    parser.add_argument('--work', type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.device == 'cpu' and not args.quick:
        raise UsageError('--device cpu is for the dry run: add --quick (the GPU sizes would '
                         'take hours on a CPU)')
    return args


def run_one_part(name: str, context: Context) -> int:
    """Run an in-process part and write its result (the child side of ``--part``)."""
    part = next((part for part in PLAN if part.name == name), None)
    if part is None or not isinstance(part.work, InProcess):
        raise UsageError(f'--part: {name} is not a part this script runs itself')
    try:
        result = part.work.measure(context)
    except Exception as error:  # noqa: B902 - one line for the report, the rest in the log
        print(f'gpu_check {name}: {type(error).__name__}: {error}', flush=True)
        raise
    path = context.part_file(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + '\n')
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the options and run the plan (or list it, or write its placeholder)."""
    try:
        args = parse_arguments(argv)
        work = args.work or Path(tempfile.gettempdir()) / f'gpu_check-{os.getpid()}'
        context = Context(args.device, QUICK if args.quick else Sizes(), work)
        if args.part:
            return run_one_part(args.part, context)
        parts = build_plan(args.quick, args.only)
    except UsageError as error:
        print(f'gpu_check: error: {error}', file=sys.stderr)
        return 2
    limits = limits_line(parts)
    if args.list:
        for part in parts:
            print(f'{part.name:18} {part.limit_s:4d} s  '
                  f'{" ".join(part.work.command(part.name, context)[1:])}')
        print(limits)
        return 0
    report = Report(args.device, args.quick, args.commit or git_commit(), limits)
    report.plan(parts, context)
    args.output.mkdir(parents=True, exist_ok=True)
    write_report(report, args.output)
    if args.placeholder:
        print(f'wrote {args.output}/gpu_check.json, gpu_check.md (nothing measured)')
        return 0
    print(limits, flush=True)
    try:
        with open(args.output / 'gpu_check.log', 'w') as log:
            log.write(limits + '\n')
            succeeded = run_plan(parts, context, report, args.output, log)
    except KeyboardInterrupt:
        print(f'gpu_check: interrupted; the report so far is in {args.output}', file=sys.stderr)
        return 130
    print(markdown(report))
    print(f'wrote {args.output}/gpu_check.json, gpu_check.md, gpu_check.log')
    return 0 if succeeded else 1


if __name__ == '__main__':
    sys.exit(main())
