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
lrda_ros.speed.machine). Counts the floating-point operations of whole frames with PyTorch's
FlopCounterMode around each completion (lrda_ros.speed.flops: the CPU's attention kernels
too), as each step schedule runs them (``--schedules``, default: the engine's default beside
the paper's) with lrda speed's engine settings (every frame runs its steps): a cold frame,
then the warm frames of the same panning sequence.
Also counts the parts of a frame (an encoder pass, one full-size optimization step forward and
backward, the final dense decode, a warm frame's scene-cut check), on lrda speed's model and
frames (random weights at the official size, the KITTI-like LiDAR pattern). Measures this
machine's throughput in the frame's precision on a large matrix product and on the decoder's
dominant convolution, and times a cold and a warm frame under each schedule. Prints the
operations, the throughputs, and each frame's floor beside its measured time: its operations
at the convolution's rate, what the same arithmetic would take were all of it computed as
efficiently as that one large convolution (an algorithm doing less arithmetic, such as
Winograd convolution, could go below it). Where the timed frames ran other step counts than
the counted ones (the plateau rule ends a frame where rounding puts it), the line says so.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
import itertools
import statistics
import time

from lrda_ros.engine import DepthCompleter, TTOConfig
from lrda_ros.engine.config import SCHEDULES
from lrda_ros.engine.lora_paths import median_seconds
from lrda_ros.speed import SpeedOptions
from lrda_ros.speed.flops import counted_flops
from lrda_ros.speed.inputs import panning_frames, random_model
from lrda_ros.speed.machine import machine_description, machine_line
from lrda_ros.speed.options import LidarPattern, RESOLUTIONS
import torch
from torch.utils._python_dispatch import TorchDispatchMode

GIGA = 1e9


def _completer(backbone: str, config: TTOConfig) -> DepthCompleter:
    return DepthCompleter(random_model(backbone, seed=0), config)


class _CountingCompleter(DepthCompleter):
    """A completer that counts the operations of each part of a frame as it runs them."""

    def __init__(self, *args, **kwargs) -> None:
        # The engine's precision probe (bfloat16) decodes once inside __init__: count from here.
        self.flops: dict[str, list[float]] = {'step': [], 'decode': [], 'scene-cut check': []}
        super().__init__(*args, **kwargs)
        self.flops = {part: [] for part in self.flops}  # not the probe's decode

    def _counted(self, part: str, function):
        flops, result = counted_flops(function)
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
        device=device, dtype=dtype, warm_start=True, iterations=2, warm_iterations=2,
        schedule='paper'))
    completer.complete(*frames[0])  # LoRA forms chosen at this input (engine/lora_paths.py)
    completer.reset()
    completer.flops = {part: [] for part in completer.flops}
    for rgb, sparse in frames[:2]:  # a cold frame, then a warm one
        completer.complete(rgb, sparse)
    rgb = frames[0][0]
    pixels = completer.model.preprocess(rgb, None)

    def encode():
        with completer._autocast():
            return completer.model.encode(pixels, rgb.shape[:2])

    encoder, _ = counted_flops(encode)
    parts = {name: statistics.mean(values) for name, values in completer.flops.items()}
    return {'encoder': encoder, **parts}


def schedule_config(schedule: str, dtype: str, warm: bool) -> TTOConfig:
    """
    Return lrda speed's engine settings under ``schedule``, warm-started or not.

    Every frame runs its schedule's steps: on random weights the loss means nothing, and a
    divergence stop or an undone collapse would cut a warm frame short and send the next one
    through a scene cut's cold restart, timing other work than a warm frame's.
    """
    options = SpeedOptions(dtype=dtype, schedule=schedule, device='cpu')
    return replace(options.tto_config(), warm_start=warm)


def whole_frame_flops(backbone: str, frames, dtype: str, schedule: str) -> dict[str, list]:
    """
    Return the operations of each frame of a sequence as ``schedule`` completes it.

    ``cold``: the first frame (a fresh completer); ``warm``: every later frame, warm-started
    from the one before; ``steps``: their step counts (cold first).
    """
    completer = _completer(backbone, schedule_config(schedule, dtype, warm=True))
    completer.complete(*frames[0])  # uncounted: LoRA forms chosen at this input (lora_paths)
    completer.reset()
    counts, steps = [], []
    for rgb, sparse in frames:
        flops, result = counted_flops(lambda: completer.complete(rgb, sparse))
        counts.append(flops)
        steps.append(result.iterations)
    return {'cold': counts[:1], 'warm': counts[1:], 'steps': steps}


def throughputs(dtype: torch.dtype, conv_shape: tuple[int, int, int, int],
                repeats: int) -> dict[str, float]:
    """Return FLOP/s of a 4096² matrix product and of a 3x3 convolution on ``conv_shape``."""
    size = 4096
    a, b = torch.randn(size, size, dtype=dtype), torch.randn(size, size, dtype=dtype)
    matmul = 2 * size ** 3 / median_seconds(lambda: a @ b, repeats)
    batch, channels, height, width = conv_shape
    image = torch.randn(conv_shape, dtype=dtype).contiguous(memory_format=torch.channels_last)
    weight = torch.randn(channels, channels, 3, 3, dtype=dtype).contiguous(
        memory_format=torch.channels_last)
    conv_flops = 2 * batch * height * width * channels * channels * 9
    with torch.no_grad():
        conv = conv_flops / median_seconds(
            lambda: torch.nn.functional.conv2d(image, weight, padding=1), repeats)
    return {'matmul': matmul, 'conv': conv}


class _CallCounter(TorchDispatchMode):
    """Count the operator calls that reach the kernels (views and autograd's included)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.flops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls += 1
        return func(*args, **(kwargs or {}))


def fixed_step_cost(backbone: str, dtype: str, steps: int = 20) -> dict[str, float]:
    """
    Return what a step costs where its arithmetic is next to nothing: the model at 56x56.

    The same network, layers, adapters and operator calls as at any size; a step's time there
    is the fixed cost of its calls (dispatch, autograd, kernel set-up), which a larger input
    pays as well. From frames of ``steps`` steps and of none (medians of 3).
    """
    frames = panning_frames(56, 56, 2, LidarPattern(), seed=0)
    seconds = {}
    for count in (0, steps):
        completer = _completer(backbone, replace(schedule_config('paper', dtype, warm=False),
                                                 iterations=count))
        completer.complete(*frames[0])
        seconds[count] = median_seconds(lambda: completer.complete(*frames[1]), 3)
    counter = _CallCounter()
    step = completer._step

    def counted_step(*args) -> None:
        with counter:
            counter.flops += counted_flops(lambda: step(*args))[0]

    completer._step = counted_step
    completer.complete(*frames[1])
    return {'step_s': (seconds[steps] - seconds[0]) / steps, 'calls': counter.calls / steps,
            'step_flops': counter.flops / steps}


def convolution_call_seconds(dtype: torch.dtype, size: tuple[int, int],
                             repeats: int) -> dict[str, float]:
    """Return the seconds of a 64-channel 3x3 convolution's forward and backward at ``size``."""
    image = torch.randn(1, 64, *size, dtype=dtype).contiguous(memory_format=torch.channels_last)
    weight = torch.randn(64, 64, 3, 3, dtype=dtype)
    grad = torch.randn_like(image)

    def backward() -> None:  # the input's and the weight's gradients, as a merged layer's
        torch.ops.aten.convolution_backward(grad, image, weight, None, [1, 1], [1, 1], [1, 1],
                                            False, [0, 0], 1, [True, True, False])

    with torch.no_grad():
        forward = median_seconds(
            lambda: torch.nn.functional.conv2d(image, weight, padding=1), repeats)
    return {'forward': forward, 'backward': median_seconds(backward, repeats)}


def frame_seconds(backbone: str, frames, dtype: str, schedule: str, repeats: int,
                  compile_steps: bool = False) -> tuple[dict[str, float], dict[str, list[int]]]:
    """
    Return the median seconds of a cold and a warm frame of the sequence, and their steps.

    ``compile_steps``: under ``compile: true``, compiled in the untimed first frame.
    """
    completers = {}
    for name in ('cold', 'warm'):
        config = replace(schedule_config(schedule, dtype, warm=name == 'warm'),
                         compile=compile_steps)
        completers[name] = _completer(backbone, config)
        start = time.perf_counter()
        completers[name].complete(*frames[0])
        if compile_steps:
            print(f'  {schedule}, {name}: first frame (compiling) '
                  f'{time.perf_counter() - start:.1f} s', flush=True)
    cold, warm = completers['cold'], completers['warm']
    times = {'cold': [], 'warm': []}
    steps = {'cold': [], 'warm': []}
    for index in range(repeats):
        frame = frames[1 + index]
        for name, completer in (('cold', cold), ('warm', warm)):
            start = time.perf_counter()
            result = completer.complete(*frame)
            times[name].append(time.perf_counter() - start)
            steps[name].append(result.iterations)
            print(f'  {schedule}, {name} frame {index + 1}: {times[name][-1]:.2f} s, '
                  f'{result.iterations} steps, warm started: {result.warm_started}', flush=True)
    return {name: statistics.median(values) for name, values in times.items()}, steps


def main() -> None:
    """Parse the options, count, measure, print."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--backbone', default='vits')
    parser.add_argument('--resolution', default='vga', choices=list(RESOLUTIONS))
    parser.add_argument('--dtype', default='auto', choices=['auto', 'float32', 'bfloat16'],
                        help="'auto': bfloat16 where the CPU computes it natively, as the node")
    parser.add_argument('--schedules', type=lambda text: text.split(','),
                        default=[TTOConfig().schedule, 'paper'],
                        help=f'comma-separated, from: {", ".join(SCHEDULES)} (default: the '
                        "engine's default and the paper's)")
    parser.add_argument('--warm-frames', type=int, default=3,
                        help='warm frames counted after the cold one')
    parser.add_argument('--repeats', type=int, default=2, help='timed frames per configuration')
    parser.add_argument('--compile', action='store_true',
                        help='also time the frames with compile: true, beside the eager ones')
    parser.add_argument('--no-timing', action='store_true',
                        help='count operations only (no throughput or frame times)')
    args = parser.parse_args()
    unknown = sorted(set(args.schedules) - set(SCHEDULES))
    if unknown:
        parser.error(f'unknown schedule {unknown[0]!r}: use {", ".join(SCHEDULES)}')
    machine = machine_description('cpu', args.dtype)
    args.dtype = machine['dtype']  # 'auto' resolved as the node resolves it
    print(machine_line(machine), flush=True)
    height, width = RESOLUTIONS[args.resolution]
    frames = panning_frames(height, width, max(args.repeats, args.warm_frames) + 1,
                            LidarPattern(), seed=0)
    print(f'{args.backbone} {args.resolution}', flush=True)

    for name, value in frame_flops(args.backbone, frames, args.dtype).items():
        print(f'{name}: {value / GIGA:.1f} GFLOP', flush=True)
    work = {}
    for schedule in args.schedules:
        counted = whole_frame_flops(args.backbone, frames[:args.warm_frames + 1], args.dtype,
                                    schedule)
        work[schedule] = {'cold': counted['cold'][0], 'warm': statistics.mean(counted['warm']),
                          'steps': {'cold': counted['steps'][:1], 'warm': counted['steps'][1:]}}
        warm_steps = ', '.join(str(steps) for steps in counted['steps'][1:])
        print(f'{schedule}: cold frame ({counted["steps"][0]} steps): '
              f'{work[schedule]["cold"] / GIGA:.0f} GFLOP; warm frame (mean of '
              f'{len(counted["warm"])}; {warm_steps} steps): '
              f'{work[schedule]["warm"] / GIGA:.0f} GFLOP', flush=True)
    if 'paper' in work:
        for schedule in work:
            if schedule != 'paper':
                print(f'{schedule} against paper: cold '
                      f'{work[schedule]["cold"] / work["paper"]["cold"]:.2f}x, warm '
                      f'{work[schedule]["warm"] / work["paper"]["warm"]:.2f}x the operations',
                      flush=True)
    if args.no_timing:
        return

    patch = 14
    grid = (round(height / patch), round(width / patch))
    conv_shape = (1, 64, 4 * grid[0], 4 * grid[1])  # ViT-S's last fusion layer, 4x the grid
    rates = throughputs(getattr(torch, args.dtype), conv_shape, repeats=5)
    for name, rate in rates.items():
        print(f'throughput, {name}: {rate / GIGA:.0f} GFLOP/s', flush=True)
    fixed = fixed_step_cost(args.backbone, args.dtype)
    print(f'fixed cost of a step (the model at 56x56, {fixed["step_flops"] / GIGA:.2f} GFLOP a '
          f'step): {fixed["step_s"] * 1e3:.1f} ms, {fixed["calls"]:.0f} operator calls '
          f'({fixed["step_s"] / fixed["calls"] * 1e6:.1f} us each)', flush=True)
    for size in ((5, 5), conv_shape[2:]):
        call = convolution_call_seconds(getattr(torch, args.dtype), size, repeats=20)
        print(f'a 64-channel 3x3 convolution at {size[0]}x{size[1]}: forward '
              f'{call["forward"] * 1e6:.0f} us, backward (input and weight) '
              f'{call["backward"] * 1e6:.0f} us', flush=True)

    for schedule, compile_steps in itertools.product(args.schedules,
                                                     (False, True) if args.compile else (False,)):
        seconds, timed_steps = frame_seconds(args.backbone, frames, args.dtype, schedule,
                                             args.repeats, compile_steps)
        mode = 'compiled' if compile_steps else 'eager'
        for name in ('cold', 'warm'):
            operations = work[schedule][name]
            floor = operations / rates['conv']
            # The plateau rule ends a frame where rounding puts it: the timed frames may run
            # other step counts than the counted ones, and then the ratio compares other work.
            counted_steps = work[schedule]['steps'][name]
            unlike = (f'; timed frames ran {timed_steps[name]} steps, counted {counted_steps}: '
                      'not the same work' if sorted(set(timed_steps[name])) !=
                      sorted(set(counted_steps)) else '')
            print(f'{schedule}, {name} frame, {mode}: measured {seconds[name]:.2f} s, floor '
                  f'{floor:.2f} s at the convolution throughput ({seconds[name] / floor:.2f}x '
                  f'the floor; '
                  f'achieved {operations / seconds[name] / GIGA:.0f} GFLOP/s{unlike})',
                  flush=True)


if __name__ == '__main__':
    main()
