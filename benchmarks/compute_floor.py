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
The compute floor of a frame: its floating-point work against what this machine can compute.

    python benchmarks/compute_floor.py --backbone vits --resolution vga

Prints the machine first (precision, torch's CPU capability, threads, CPU model:
lrda_ros.speed.machine). Counts the floating-point operations of an encoder pass, one
optimization step (forward and backward), the final dense decode and a warm frame's scene-cut
check with PyTorch's FlopCounterMode, on lrda speed's model and frames (random weights at the
official size, the KITTI-like LiDAR pattern). Measures this machine's throughput in the frame's
precision on a large matrix product and on the decoder's dominant convolution, and times a cold
and a warm frame. Prints the operations, the throughputs, and each frame's floor beside its
measured time: its operations at the convolution's rate, what the same arithmetic would take
were all of it computed as efficiently as that one large convolution (an algorithm doing less
arithmetic, such as Winograd convolution, could go below it).
"""

from __future__ import annotations

import argparse
import statistics
import time

from lrda_ros.engine import DepthCompleter, TTOConfig
from lrda_ros.speed.inputs import LidarPattern, panning_frames, random_model, RESOLUTIONS
from lrda_ros.speed.machine import machine_description, machine_line
import torch
from torch.utils.flop_counter import FlopCounterMode

GIGA = 1e9


def _median_seconds(function, repeats: int) -> float:
    function()  # untimed: first-call allocation and kernel selection
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _completer(backbone: str, config: TTOConfig) -> DepthCompleter:
    return DepthCompleter(random_model(backbone, seed=0), config)


def _counted_flops(function) -> tuple[float, object]:
    with FlopCounterMode(display=False) as counter:
        result = function()
    return counter.get_total_flops(), result


class _CountingCompleter(DepthCompleter):
    """A completer that counts the operations of each part of a frame as it runs them."""

    def __init__(self, *args, **kwargs) -> None:
        # The engine's precision probe (bfloat16) decodes once inside __init__: count from here.
        self.flops: dict[str, list[float]] = {'step': [], 'decode': [], 'scene-cut check': []}
        super().__init__(*args, **kwargs)
        self.flops = {part: [] for part in self.flops}  # not the probe's decode

    def _counted(self, part: str, function):
        flops, result = _counted_flops(function)
        self.flops[part].append(flops)
        return result

    def _step(self, *args) -> None:
        self._counted('step', lambda: super(_CountingCompleter, self)._step(*args))

    def _dense_prediction(self, *args):
        return self._counted('decode',
                             lambda: super(_CountingCompleter, self)._dense_prediction(*args))

    def _follows_scene_cut(self, *args) -> bool:
        return self._counted(
            'scene-cut check', lambda: super(_CountingCompleter, self)._follows_scene_cut(*args))


def frame_flops(backbone: str, frames, dtype: str, device: str = 'cpu') -> dict[str, float]:
    """Return the operations of an encoder pass, a step, a dense decode and the warm check."""
    completer = _CountingCompleter(random_model(backbone, 0, device), TTOConfig(
        device=device, dtype=dtype, warm_start=True, iterations=2, warm_iterations=2))
    for rgb, sparse in frames[:2]:  # a cold frame, then a warm one
        completer.complete(rgb, sparse)
    rgb = frames[0][0]
    pixels = completer.model.preprocess(rgb, None)

    def encode():
        with completer._autocast():
            return completer.model.encode(pixels, rgb.shape[:2])

    encoder, _ = _counted_flops(encode)
    parts = {name: statistics.mean(values) for name, values in completer.flops.items()}
    return {'encoder': encoder, **parts}


def throughputs(dtype: torch.dtype, conv_shape: tuple[int, int, int, int],
                repeats: int) -> dict[str, float]:
    """Return FLOP/s of a 4096² matrix product and of a 3x3 convolution on ``conv_shape``."""
    size = 4096
    a, b = torch.randn(size, size, dtype=dtype), torch.randn(size, size, dtype=dtype)
    matmul = 2 * size ** 3 / _median_seconds(lambda: a @ b, repeats)
    batch, channels, height, width = conv_shape
    image = torch.randn(conv_shape, dtype=dtype).contiguous(memory_format=torch.channels_last)
    weight = torch.randn(channels, channels, 3, 3, dtype=dtype).contiguous(
        memory_format=torch.channels_last)
    conv_flops = 2 * batch * height * width * channels * channels * 9
    with torch.no_grad():
        conv = conv_flops / _median_seconds(
            lambda: torch.nn.functional.conv2d(image, weight, padding=1), repeats)
    return {'matmul': matmul, 'conv': conv}


def frame_seconds(backbone: str, frames, dtype: str, warm_iterations: int,
                  repeats: int) -> dict[str, float]:
    """Return the median seconds of a cold (40 steps) and a warm frame of the sequence."""
    cold = _completer(backbone, TTOConfig(device='cpu', dtype=dtype))
    warm = _completer(backbone, TTOConfig(device='cpu', dtype=dtype, warm_start=True,
                                          warm_iterations=warm_iterations))
    cold.complete(*frames[0])
    warm.complete(*frames[0])
    times = {'cold': [], 'warm': []}
    for index in range(repeats):
        frame = frames[1 + index]
        for name, completer in (('cold', cold), ('warm', warm)):
            start = time.perf_counter()
            result = completer.complete(*frame)
            times[name].append(time.perf_counter() - start)
            print(f'  {name} frame {index + 1}: {times[name][-1]:.2f} s, {result.iterations} '
                  f'steps, warm started: {result.warm_started}', flush=True)
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    """Parse the options, count, measure, print."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--backbone', default='vits')
    parser.add_argument('--resolution', default='vga', choices=list(RESOLUTIONS))
    parser.add_argument('--dtype', default='auto', choices=['auto', 'float32', 'bfloat16'],
                        help="'auto': bfloat16 where the CPU computes it natively, as the node")
    parser.add_argument('--warm-iterations', type=int, default=10)
    parser.add_argument('--repeats', type=int, default=2, help='timed frames per configuration')
    args = parser.parse_args()
    machine = machine_description('cpu', args.dtype)
    args.dtype = machine['dtype']  # 'auto' resolved as the node resolves it
    print(machine_line(machine), flush=True)
    height, width = RESOLUTIONS[args.resolution]
    frames = panning_frames(height, width, args.repeats + 1, LidarPattern(), seed=0)
    print(f'{args.backbone} {args.resolution}', flush=True)

    flops = frame_flops(args.backbone, frames, args.dtype)
    for name, value in flops.items():
        print(f'{name}: {value / GIGA:.1f} GFLOP', flush=True)
    cold_flops = flops['encoder'] + 40 * flops['step'] + flops['decode']
    warm_flops = (flops['encoder'] + flops['scene-cut check']
                  + args.warm_iterations * flops['step'] + flops['decode'])
    print(f'cold frame (40 steps): {cold_flops / GIGA:.0f} GFLOP; warm frame '
          f'({args.warm_iterations} steps): {warm_flops / GIGA:.0f} GFLOP (one dense decode each; '
          f'a frame that falls back to its best iterate decodes twice)', flush=True)

    patch = 14
    grid = (round(height / patch), round(width / patch))
    conv_shape = (1, 64, 4 * grid[0], 4 * grid[1])  # ViT-S's last fusion layer, 4x the grid
    rates = throughputs(getattr(torch, args.dtype), conv_shape, repeats=5)
    for name, rate in rates.items():
        print(f'throughput, {name}: {rate / GIGA:.0f} GFLOP/s', flush=True)

    seconds = frame_seconds(args.backbone, frames, args.dtype, args.warm_iterations,
                            args.repeats)
    for name, work in (('cold', cold_flops), ('warm', warm_flops)):
        floor = work / rates['conv']
        print(f'{name} frame: measured {seconds[name]:.2f} s, floor {floor:.2f} s at the '
              f'convolution throughput ({seconds[name] / floor:.2f}x the floor; achieved '
              f'{work / seconds[name] / GIGA:.0f} GFLOP/s)', flush=True)


if __name__ == '__main__':
    main()
