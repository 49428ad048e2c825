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
The back ends side by side in one process: encoder on torch vs ONNX Runtime, eager vs compiled.

    python benchmarks/backends.py --backbone vits --resolution vga --rounds 3

Prints the machine (precision, torch's CPU capability, threads, CPU model:
lrda_ros.speed.machine), then, for one random-weight model (lrda speed's) at one resolution:
the encoder pass on torch and on ONNX Runtime (with the one-off export), whole frames with
eager and compiled steps (the compile warm-up on the first compiled frame), each round
alternating the configurations so a shared machine's drift hits them alike; medians and ratios.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import tempfile
import time

from lrda_ros.engine import DepthCompleter, TTOConfig
from lrda_ros.engine.precision import native_bfloat16
from lrda_ros.speed.inputs import panning_frames, random_model
from lrda_ros.speed.machine import machine_description, machine_line
from lrda_ros.speed.options import LidarPattern, RESOLUTIONS
import torch


def _timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def encoder_rows(model, frames, rounds: int, cache: str) -> list[str]:
    """Time the encoder pass on torch and ONNX Runtime (float32), and torch bfloat16."""
    base = DepthCompleter(copy.deepcopy(model), TTOConfig(device='cpu', dtype='float32'))
    onnx = DepthCompleter(copy.deepcopy(model), TTOConfig(
        device='cpu', dtype='float32', encoder_backend='onnxruntime', encoder_cache_dir=cache))
    rows = []
    image = frames[0][0]
    pixels = base.model.preprocess(image, None)
    export = _timed(lambda: onnx.model.encode(pixels, image.shape[:2]))
    times = {'torch': [], 'onnxruntime': [], 'torch bfloat16': []}
    bf16 = None
    if native_bfloat16(torch.device('cpu')):
        bf16 = DepthCompleter(copy.deepcopy(model), TTOConfig(device='cpu', dtype='bfloat16'))

    def encode_bf16():
        with bf16._autocast():
            bf16.model.encode(pixels, image.shape[:2])

    for _ in range(rounds):
        times['torch'].append(_timed(lambda: base.model.encode(pixels, image.shape[:2])))
        times['onnxruntime'].append(_timed(lambda: onnx.model.encode(pixels, image.shape[:2])))
        if bf16 is not None:
            times['torch bfloat16'].append(_timed(encode_bf16))
    torch_s, ort_s = (statistics.median(times[k]) for k in ('torch', 'onnxruntime'))
    rows += [f'encoder pass, torch float32: {1000 * torch_s:.0f} ms',
             f'encoder pass, onnxruntime (CPU provider): {1000 * ort_s:.0f} ms '
             f'({torch_s / ort_s:.2f}x torch; export + first run {export:.1f} s, once)']
    if bf16 is not None:
        bf16_s = statistics.median(times['torch bfloat16'])
        rows.append(f'encoder pass, torch bfloat16 autocast: {1000 * bf16_s:.0f} ms '
                    f'({bf16_s / ort_s:.2f}x onnxruntime)')
    return rows


def frame_rows(model, frames, rounds: int, iterations: int, dtype: str) -> list[str]:
    """Time whole frames: sparse head eager, dense head eager, dense head compiled."""
    configs = {
        'eager, sparse head': TTOConfig(device='cpu', dtype=dtype, iterations=iterations),
        'eager, dense head': TTOConfig(device='cpu', dtype=dtype, iterations=iterations,
                                       sparse_head=False),
        'compiled (dense head)': TTOConfig(device='cpu', dtype=dtype, iterations=iterations,
                                           compile=True),
    }
    completers = {name: DepthCompleter(copy.deepcopy(model), config)
                  for name, config in configs.items()}
    first = {name: _timed(lambda c=c: c.complete(*frames[0]))
             for name, c in completers.items()}
    times = {name: [] for name in configs}
    for index in range(rounds):
        rgb, sparse = frames[1 + index % (len(frames) - 1)]
        for name, completer in completers.items():
            times[name].append(_timed(lambda c=completer: c.complete(rgb, sparse)))
    reference = statistics.median(times['eager, sparse head'])
    return [f'{name}: {statistics.median(t):.2f} s/frame ({iterations} it; '
            f'{statistics.median(t) / reference:.2f}x eager sparse; first frame '
            f'{first[name]:.1f} s)' for name, t in times.items()]


def main() -> None:
    """Parse the options, run, print."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--backbone', default='vits')
    parser.add_argument('--resolution', default='vga', choices=list(RESOLUTIONS))
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--iterations', type=int, default=10)
    parser.add_argument('--dtype', default='float32',
                        choices=['auto', 'float32', 'bfloat16', 'float16'],
                        help="the frames' precision; 'auto': bfloat16 where native, as the node")
    parser.add_argument('--skip-compile', action='store_true')
    args = parser.parse_args()
    machine = machine_description('cpu', args.dtype)
    args.dtype = machine['dtype']  # the frame rows' precision ('auto' resolved)
    print(machine_line(machine), flush=True)
    height, width = RESOLUTIONS[args.resolution]
    model = random_model(args.backbone, seed=0)
    frames = panning_frames(height, width, args.rounds + 1, LidarPattern(), seed=0)
    print(f'{args.backbone} {args.resolution}', flush=True)
    with tempfile.TemporaryDirectory() as cache:
        for row in encoder_rows(model, frames, args.rounds, cache):
            print(row, flush=True)
    if not args.skip_compile:
        for row in frame_rows(model, frames, args.rounds, args.iterations, args.dtype):
            print(row, flush=True)


if __name__ == '__main__':
    main()
