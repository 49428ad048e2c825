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
The in-process measurements: the figures of one optimization step, and of several cameras.

``step_figures`` counts a step's host synchronizations, kernel launches and FLOPs and times
a step and an encoder pass; ``camera_figures`` times warm frames of several cameras with the
encoder batched against one frame at a time. Each runs in a part's own process
(``gpu_check.py --part NAME``), on a model at random weights.
"""

from __future__ import annotations

from dataclasses import replace
import math
import statistics
import time
from typing import Callable

from gpu_check_sizes import SCHEDULE, Sizes


def _parameter_mb(module) -> float:
    return sum(p.numel() * p.element_size() for p in module.parameters()) / 2**20


def per_step(completer, frame, intrinsics, count: Callable[[Callable[[], None]], int]
             ) -> list[int]:
    """Complete ``frame``; return ``count(step)`` of each of its optimization steps."""
    counts: list[int] = []
    step = completer._step

    def counted(*args, **kwargs):
        counts.append(count(lambda: step(*args, **kwargs)))

    completer._step = counted
    try:
        completer.complete(*frame, intrinsics=intrinsics)
    finally:
        del completer._step
    return counts


def count_step_synchronizations(completer, frame, intrinsics, device) -> list[int]:
    """Complete ``frame``; return, step by step, how often each made the host wait."""
    from lrda_ros.speed.host_sync import host_synchronizations

    def synchronizations(step: Callable[[], None]) -> int:
        with host_synchronizations(device) as found:
            step()
        return len(found)

    return per_step(completer, frame, intrinsics, synchronizations)


def count_step_launches(completer, frame, intrinsics, device) -> list[int]:
    """
    Complete ``frame``; return, step by step, the kernels each launched (CUDA profiler).

    Every kernel a step runs on the GPU is one launch from the host: what bounds a step of
    small kernels there. Empty off CUDA (the CPU runs no kernels to count).
    """
    import torch
    from torch.profiler import profile, ProfilerActivity

    if torch.device(device).type != 'cuda':
        completer.complete(*frame, intrinsics=intrinsics)
        return []

    def launches(step: Callable[[], None]) -> int:
        with profile(activities=[ProfilerActivity.CUDA]) as profiler:
            step()
            torch.cuda.synchronize(device)
        return sum(1 for event in profiler.events()
                   if event.device_type == torch.autograd.DeviceType.CUDA)

    return per_step(completer, frame, intrinsics, launches)


def frame_figures(completer, frame, intrinsics, device) -> dict:
    """
    Complete ``frame``; return the steps the device ran against those the frame reports.

    Every step the host queued runs on the device, changing the weights or masked (a step
    after a stop): the steps run are the calls of the eager and the compiled step, the
    reported ones the result's ``iterations``. Also the frame's host synchronizations (as
    :func:`count_step_synchronizations` counts them), whole: the steps and what is around.
    """
    from lrda_ros.speed.host_sync import host_synchronizations

    calls: list[int] = []
    owners = [(completer, '_step')]
    if getattr(completer, '_whole_step', None) is not None:
        owners.append((completer._whole_step, 'run'))

    def counted(method):
        def call(*args, **kwargs):
            calls.append(1)
            return method(*args, **kwargs)
        return call

    for owner, name in owners:
        setattr(owner, name, counted(getattr(owner, name)))
    try:
        with host_synchronizations(device) as found:
            result = completer.complete(*frame, intrinsics=intrinsics)
    finally:
        for owner, name in owners:
            delattr(owner, name)
    return {'steps_run_per_frame': len(calls), 'steps_reported_per_frame': result.iterations,
            'host_syncs_per_frame': len(found)}


def step_figures(backbone: str, resolution: str, dtype: str, device: str,
                 sizes: Sizes, graph: bool = False) -> dict:
    """
    Return the figures that show whether the device is used well, for one configuration.

    FLOPs of an encoder pass and of one step (FlopCounterMode, benchmarks/compute_floor.py);
    host synchronizations per step (on CUDA its sync debug mode, elsewhere the operations
    that would synchronize); kernel launches per step (CUDA only); the encoder pass and the
    time per step, from frames of ``iterations`` steps and of none, so the step's time is
    that of the engine's own loop, queued ahead as the node runs it; the TFLOP/s that the
    step achieves. With ``graph``, compiled whole steps beside them (graph_step_figures).
    """
    from compute_floor import frame_flops
    from lrda_ros.engine import DepthCompleter
    from lrda_ros.eval.profiling import Measure
    from lrda_ros.speed import SpeedOptions
    from lrda_ros.speed.inputs import panning_frames, panning_intrinsics, random_model
    from lrda_ros.speed.options import RESOLUTIONS

    options = SpeedOptions(backbones=(backbone,), resolutions=(resolution,),
                           iterations=sizes.iterations, schedule=SCHEDULE, device=device,
                           dtype=dtype)
    config = options.tto_config()
    height, width = RESOLUTIONS[resolution]
    frames = panning_frames(height, width, 2, options.lidar, options.seed)
    intrinsics = panning_intrinsics(height, width)
    flops = frame_flops(backbone, frames, dtype, config.device)
    print(f'FLOPs: encoder pass {flops["encoder"] / 1e9:.1f} G, step {flops["step"] / 1e9:.1f} G',
          flush=True)
    model = random_model(backbone, options.seed, config.device)
    completer = DepthCompleter(model, replace(config, iterations=2))
    completer.complete(*frames[0], intrinsics=intrinsics)  # kernels chosen, memory cached
    syncs = count_step_synchronizations(completer, frames[1], intrinsics, config.device)
    print(f'host synchronizations, step by step: {syncs}', flush=True)
    launches = count_step_launches(completer, frames[1], intrinsics, config.device)
    print(f'kernel launches, step by step: {launches or "none (not CUDA)"}', flush=True)
    results = {}
    for iterations in (0, config.iterations):
        completer.config = replace(config, iterations=iterations)
        with Measure(model.device) as measured:
            results[iterations] = completer.complete(*frames[1], intrinsics=intrinsics)
        print(f'frame of {iterations} steps: {measured.seconds:.3f} s (encoder '
              f'{results[iterations].encode_seconds:.3f} s), {measured.peak_mb:.0f} MB',
              flush=True)
    step_s = (results[config.iterations].optimize_seconds
              - results[0].optimize_seconds) / config.iterations
    frame = frame_figures(completer, frames[1], intrinsics, config.device)
    print(f'a frame: {frame}', flush=True)
    graph = (graph_step_figures(backbone, options.seed, config, frames, intrinsics,
                                results[config.iterations].losses) if graph else {})
    return {**graph, **frame, 'iterations': config.iterations,
            'encoder_ms': 1e3 * statistics.median(r.encode_seconds for r in results.values()),
            'step_ms': 1e3 * step_s, 'host_syncs_per_step': statistics.mean(syncs),
            'launches_per_step': statistics.mean(launches) if launches else math.nan,
            'encoder_gflop': flops['encoder'] / 1e9, 'step_gflop': flops['step'] / 1e9,
            'step_tflops': flops['step'] / step_s / 1e12 if step_s > 0 else math.nan,
            'peak_mb': measured.peak_mb, 'weights_mb': _parameter_mb(model.network)}


def graph_step_figures(backbone: str, seed: int, config, frames, intrinsics,
                       eager_losses: list[float]) -> dict:
    """
    Return compiled whole steps' figures (``compile: true``: a CUDA graph per step on CUDA).

    On the same random network (a model of its own: a completer's adapters are its own):
    the time per step (frames of ``iterations`` steps against frames of one: a frame's first
    step is eager), the CUDA kernels and graph replays (``cudaGraphLaunch``) per step under
    the profiler, and the largest relative difference of a cold frame's losses from the
    eager ones (``eager_losses``, the same frame, cold). Off CUDA the compiled completer is
    only built (its options checked, its compiled step made), nothing compiled or captured:
    Inductor on a CPU would take the dry run's minutes.
    """
    import torch
    from torch.profiler import profile, ProfilerActivity
    from lrda_ros.engine import DepthCompleter
    from lrda_ros.eval.profiling import Measure
    from lrda_ros.speed.inputs import random_model

    compiled = replace(config, compile=True, warm_start=False)
    model = random_model(backbone, seed, config.device)
    completer = DepthCompleter(model, compiled)
    if model.device.type != 'cuda':
        print('graph steps: not CUDA; the compiled completer built, nothing captured',
              flush=True)
        return dict.fromkeys(('graph_step_ms', 'graph_kernels_per_step', 'graph_replays_per_step',
                              'graph_decode_replays', 'graph_loss_difference',
                              'graph_steps_run_per_frame', 'graph_steps_reported_per_frame',
                              'graph_host_syncs_per_frame'), math.nan)
    from torch._dynamo.utils import counters

    skips = counters['inductor']['cudagraph_skips']
    completer.complete(*frames[0], intrinsics=intrinsics)  # compiled and captured, untimed
    if counters['inductor']['cudagraph_skips'] > skips:  # what replays 0 graphs would mean
        print('graph steps: Inductor skipped the CUDA graph (TORCH_LOGS=cudagraphs says why)',
              flush=True)
    seconds, counts = {}, {}
    for iterations in (1, config.iterations):
        completer.reset()
        completer.config = replace(compiled, iterations=iterations)
        with Measure(model.device) as measured:
            result = completer.complete(*frames[1], intrinsics=intrinsics)
        seconds[iterations] = result.optimize_seconds
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as profiler:
            completer.complete(*frames[1], intrinsics=intrinsics)
            torch.cuda.synchronize(model.device)
        events = profiler.events()
        counts[iterations] = (
            sum(1 for e in events if e.device_type == torch.autograd.DeviceType.CUDA),
            sum(1 for e in events if e.name == 'cudaGraphLaunch'))
        print(f'graph steps, frame of {iterations}: {measured.seconds:.3f} s, kernels and '
              f'graph replays {counts[iterations]}', flush=True)
    steps = max(config.iterations - 1, 1)
    difference = max((abs(a - b) / abs(b) for a, b in zip(result.losses, eager_losses)
                      if b), default=math.nan)
    frame = frame_figures(completer, frames[1], intrinsics, config.device)
    print(f'graph steps, a frame: {frame}', flush=True)
    return {'graph_step_ms': 1e3 * (seconds[config.iterations] - seconds[1]) / steps,
            'graph_kernels_per_step': (counts[config.iterations][0] - counts[1][0]) / steps,
            'graph_replays_per_step': (counts[config.iterations][1] - counts[1][1]) / steps,
            # A frame of one step: its decode's replays alone (the step's first is eager).
            'graph_decode_replays': counts[1][1],
            'graph_loss_difference': difference,
            **{f'graph_{key}': value for key, value in frame.items()}}


def camera_figures(backbone: str, resolution: str, dtype: str, device: str, cameras: int,
                   sizes: Sizes) -> dict:
    """
    Time rounds of one warm frame per camera, the encoder batched or frame by frame.

    One completer, a warm start per camera (as the node with ``cameras``); the rounds
    alternate which way goes first, after an untimed cold round.
    """
    from lrda_ros.engine import DepthCompleter
    from lrda_ros.speed import SpeedOptions
    from lrda_ros.speed.inputs import panning_frames, panning_intrinsics, random_model
    from lrda_ros.speed.options import RESOLUTIONS

    options = SpeedOptions(backbones=(backbone,), resolutions=(resolution,),
                           iterations=sizes.iterations, warm_iterations=sizes.warm_iterations,
                           schedule=SCHEDULE, device=device, dtype=dtype)
    config = replace(options.tto_config(), warm_start=True)
    completer = DepthCompleter(random_model(backbone, options.seed, config.device), config)
    height, width = RESOLUTIONS[resolution]
    intrinsics = panning_intrinsics(height, width)
    streams = [panning_frames(height, width, sizes.rounds + 1, options.lidar, options.seed + k)
               for k in range(cameras)]
    seconds = {True: [0.0, 0.0], False: [0.0, 0.0]}  # whole rounds, encoder passes
    for index in range(sizes.rounds + 1):
        for batched in (index % 2 == 0, index % 2 == 1):
            frames = [stream[index] for stream in streams]
            start = time.perf_counter()
            ahead = (completer.encode_frames([rgb for rgb, _ in frames], [intrinsics] * cameras)
                     if batched else [None] * cameras)
            results = [completer.complete(rgb, sparse, intrinsics=intrinsics,
                                          stream=(camera, batched), encoded=encoded)
                       for camera, ((rgb, sparse), encoded) in enumerate(zip(frames, ahead))]
            elapsed = time.perf_counter() - start
            print(f'round {index}, {"batched" if batched else "one by one"}: {elapsed:.3f} s'
                  + (' (cold, untimed)' if not index else ''), flush=True)
            if index:
                seconds[batched][0] += elapsed
                seconds[batched][1] += sum(result.encode_seconds for result in results)
    frames_timed = cameras * sizes.rounds
    return {'warm_iterations': config.warm_iterations, 'rounds': sizes.rounds,
            'encoder_ms_batched': 1e3 * seconds[True][1] / frames_timed,
            'encoder_ms_alone': 1e3 * seconds[False][1] / frames_timed,
            'frames_per_s_batched': frames_timed / seconds[True][0],
            'frames_per_s_alone': frames_timed / seconds[False][0]}
