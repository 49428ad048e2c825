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
The losses of a few optimization steps, to compare two checkouts' numerics step by step.

    OMP_NUM_THREADS=1 python benchmarks/step_losses.py --dtype float32 > this.json
    OMP_NUM_THREADS=1 PYTHONPATH=<other checkout> python benchmarks/step_losses.py ... > that.json
    python benchmarks/step_losses.py --compare this.json that.json

Random ViT-S weights, lrda speed's panning frames at 224x308 and its engine settings (every
step runs), cold frames under the paper schedule: each frame's losses before each step, as
JSON. One thread: several threads add in varying order, so only one thread repeats exactly.
``--compare`` prints the largest relative difference per step over the frames.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
import json
import sys

from lrda_ros.engine import DepthCompleter
from lrda_ros.speed import SpeedOptions
from lrda_ros.speed.inputs import panning_frames, random_model
from lrda_ros.speed.options import LidarPattern
import torch


def step_losses(dtype: str, steps: int, frames: int, compile_steps: bool,
                lora_path: str = 'separate') -> list[list[float]]:
    """Return each cold frame's losses before each of its ``steps`` steps."""
    images = panning_frames(224, 308, frames, LidarPattern(), seed=0)
    options = SpeedOptions(dtype=dtype, schedule='paper', device='cpu')
    config = replace(options.tto_config(), warm_start=False, iterations=steps,
                     lora_path=lora_path, compile=compile_steps)
    completer = DepthCompleter(random_model('vits', 0), config)
    return [completer.complete(rgb, sparse).losses for rgb, sparse in images]


def compare(this: list[list[float]], that: list[list[float]]) -> None:
    """Print the largest relative difference at each step over the frames."""
    for step in range(max(len(losses) for losses in this)):
        worst = max(abs(a[step] - b[step]) / max(abs(b[step]), 1e-30)
                    for a, b in zip(this, that) if step < min(len(a), len(b)))
        print(f'step {step}: largest relative difference {worst:.2e}')


def main() -> None:
    """Parse the options; print the losses as JSON, or compare two such files."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--dtype', default='float32', choices=['float32', 'bfloat16'])
    parser.add_argument('--steps', type=int, default=10)
    parser.add_argument('--frames', type=int, default=3)
    parser.add_argument('--compile', action='store_true', help='compiled steps')
    parser.add_argument('--lora-path', default='separate', choices=['separate', 'merged'],
                        help="the adapted layers' form (default: separate, peft's own)")
    parser.add_argument('--compare', nargs=2, metavar='JSON', help='compare two outputs')
    args = parser.parse_args()
    if args.compare:
        compare(*(json.load(open(path)) for path in args.compare))
        return
    torch.manual_seed(0)
    json.dump(step_losses(args.dtype, args.steps, args.frames, args.compile, args.lora_path),
              sys.stdout)
    print()


if __name__ == '__main__':
    main()
