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
``lrda speed``: time and peak memory of test-time optimization, measured side by side.

For each backbone (Depth Anything V2 or UniDepthV2, random weights: :mod:`.inputs`) and
resolution, after a warm-up, per-frame time and peak memory of methods of the one registry
(:data:`~lrda_ros.eval.methods.METHODS`), by default ``lrda`` (decoder LoRA, cold, paper's 40
steps), ``lrda-warm`` (warm-started frames of a sequence), ``lrda-strips`` (the decoder's
high-resolution tail in strips under activation checkpointing: less memory, more time),
``encoder-lora`` and ``prompt`` (tuning through the whole network), with ratios against
``lrda``; plus the cost structure (one encoder pass vs one decoder step, with the dense and
the sparse head: :mod:`.structure`) and the ablations. Backbones: Depth Anything V2 ``vits``
... ``vitg`` and UniDepthV2 ``unidepth-vits``, ``unidepth-vitb``, ``unidepth-vitl`` (given the
camera's K, as the node runs it; the DPT-specific sparse head and strips do not apply to it).

With ``accuracy`` (needs a trained model, default the demo prior): a synthetic sequence scored
for scale/shift, cold, cold with the dense head, and warm start, so speed-ups are shown next to
what they cost in error. Writes ``speed.md``, ``speed.json`` and ``speed.png``
(:mod:`.report`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
import json
import math
from pathlib import Path

import numpy as np

from .against import measure_in_checkout
from .compilation import compilation_cache, compile_times
from .inputs import panning_frames, panning_intrinsics, random_model
from .machine import machine_description, machine_line
from .options import (
    DEFAULT_SPEED_METHODS, LidarPattern, RESOLUTIONS, SpeedOptions, UNIDEPTH_BACKBONES)
from .report import speed_plot, speed_table
from .structure import allocator_ablation, in_fresh_process, steps_in_this_process, STRUCTURE_KEYS
from ..engine import DepthCompleter, TTOConfig
from ..engine.model import resolve_device
from ..engine.precision import resolve_precision
from ..eval.classical import ip_basic_complete
from ..eval.methods import METHODS
from ..eval.profiling import Measure
from ..eval.report import engine_line, engine_metadata, json_ready

__all__ = ['DEFAULT_SPEED_METHODS', 'measure_configuration', 'measure_speed', 'run_speed',
           'SpeedOptions']


def measure_configuration(variant: str, resolution: str, config: TTOConfig, warm: bool,
                          lidar: LidarPattern, seed: int, frame_index: int) -> dict:
    """
    Time one frame of one configuration in this (fresh) process.

    Builds the network, runs an untimed warm-up frame (a 2-step run for cold methods; for warm
    start, the cold first frame of the sequence), then times frame ``frame_index``.
    """
    height, width = RESOLUTIONS[resolution]
    frames = panning_frames(height, width, frame_index + 1, lidar, seed)
    intrinsics = panning_intrinsics(height, width)
    model = random_model(variant, seed, resolve_device(config.device))
    completer = DepthCompleter(model, replace(config, warm_start=warm,
                                              iterations=config.iterations if warm else 2))
    with Measure(model.device) as warm_up:  # with compile: the compilation is paid here
        completer.complete(*frames[0], intrinsics=intrinsics)
    completer.config = replace(config, warm_start=warm)
    if not warm:
        completer.reset()
    with Measure(model.device) as measured:
        result = completer.complete(*frames[frame_index], intrinsics=intrinsics)
    return {'seconds': measured.seconds, 'peak_mb': measured.peak_mb,
            'iterations': result.iterations, 'final_loss': result.final_loss,
            'decodes': result.decodes, 'warm_up_seconds': warm_up.seconds}


def measure_classical(resolution: str, lidar: LidarPattern, seed: int, frame_index: int,
                      max_depth: float) -> dict:
    """
    Time IP-Basic filling of frame ``frame_index`` in this (fresh) process, after one untimed.

    It runs on the CPU whatever the measured device, so its peak is heap growth (profiling.py).
    """
    height, width = RESOLUTIONS[resolution]
    frames = panning_frames(height, width, frame_index + 1, lidar, seed)
    ip_basic_complete(frames[0][1], max_depth=max_depth)
    with Measure('cpu') as measured:
        ip_basic_complete(frames[frame_index][1], max_depth=max_depth)
    return {'seconds': measured.seconds, 'peak_mb': measured.peak_mb, 'iterations': 0,
            'final_loss': float('nan')}


@dataclass(frozen=True)
class PlannedRun:
    """One timed row: a registry method, or ``lrda`` with one optimization off."""

    label: str
    #: The engine configuration (None for a method without a network).
    config: TTOConfig | None


def _plan(options: SpeedOptions, config: TTOConfig, backbone: str = 'vits') -> list[PlannedRun]:
    dpt = backbone not in UNIDEPTH_BACKBONES  # strips and the sparse head exist for DPT only
    names = [name for name in options.methods
             if dpt or not (METHODS[name].tail_strips or 1) > 1]
    plan = [PlannedRun(name, METHODS[name].configure(config)
                       if METHODS[name].needs_network else None) for name in names]
    if options.ablations and 'lrda' in options.methods:  # each optimization off
        lrda = METHODS['lrda']
        ablations = []
        if resolve_precision(resolve_device(config.device), config.dtype) != 'float32':
            ablations.append(('lrda, float32', {'dtype': 'float32'}))
        if dpt:
            ablations += [('lrda, dense head', {'sparse_head': False}),
                          ('lrda, contiguous', {'channels_last': False}),
                          ('lrda, neither (baseline)',
                           {'sparse_head': False, 'channels_last': False})]
        else:
            ablations.append(('lrda, contiguous', {'channels_last': False}))
        plan += [PlannedRun(label, replace(lrda.configure(config), **changes))
                 for label, changes in ablations]
    return plan


def _measure_run(run: PlannedRun, variant: str, resolution: str, options: SpeedOptions,
                 frame_index: int) -> dict:
    """Time one frame of a planned run in a fresh process."""
    if run.config is None:
        return in_fresh_process(measure_classical, resolution, options.lidar, options.seed,
                                frame_index, TTOConfig().max_depth)
    return in_fresh_process(measure_configuration, variant, resolution, run.config,
                            run.config.warm_start, options.lidar, options.seed, frame_index)


def _sample(measure) -> dict:
    """Return one measured frame, or NaNs and the error where it failed."""
    try:
        return measure()
    except Exception as error:  # e.g. CUDA out of memory in the child
        return {'seconds': float('nan'), 'peak_mb': float('nan'), 'iterations': 0,
                'final_loss': float('nan'), 'error': f'{type(error).__name__}: {error}'}


def _summarize(samples: list[dict]) -> dict:
    """Return the medians of a configuration's samples, and the first error among them."""
    errors = [s['error'] for s in samples if 'error' in s]
    warm_ups = [s.get('warm_up_seconds', math.nan) for s in samples]
    return {'seconds': float(np.median([s['seconds'] for s in samples])),
            # The first process compiles (with compile); the later ones read Inductor's cache.
            'warm_up_first_s': warm_ups[0],
            'warm_up_cached_s': float(np.median(warm_ups[1:])) if warm_ups[1:] else math.nan,
            'peak_mb': float(np.max([s['peak_mb'] for s in samples])),
            'iterations': float(np.mean([s['iterations'] for s in samples])),
            # Decoder passes outside the steps (0 for a method without a network).
            'decodes': float(np.mean([s.get('decodes', 0) for s in samples])),
            'final_loss': float(np.mean([s['final_loss'] for s in samples])),
            **({'error': errors[0]} if errors else {})}


def measure_speed(options: SpeedOptions, progress=print) -> list[dict]:
    """
    Measure every (backbone, resolution, method) and return one row each.

    Each measurement runs in a fresh process (no heap, cache or allocator state shared
    between configurations), and configurations take turns frame by frame so slow drifts of
    a shared machine hit them alike; medians over ``frames`` are reported.
    """
    device = resolve_device(options.device)
    rows = []
    for variant in options.backbones:
        for resolution in options.resolutions:
            height, width = RESOLUTIONS[resolution]
            structure = dict.fromkeys(STRUCTURE_KEYS, math.nan)
            if options.structure:
                structure = in_fresh_process(steps_in_this_process, variant, height, width,
                                             options.lidar, options.seed, True,
                                             options.dtype, str(device))
                progress(f'{variant} {resolution}: encoder {structure["encoder_s"] * 1e3:.0f} '
                         f'ms, decoder step {structure["decoder_step_dense_s"] * 1e3:.0f} ms '
                         f'dense / {structure["decoder_step_sparse_s"] * 1e3:.0f} ms sparse head')
            config = options.tto_config()
            plan = _plan(options, config, variant)
            samples: dict[str, list[dict]] = {run.label: [] for run in plan}
            against: dict[str, list[dict]] = {run.label: [] for run in plan}
            for index in range(1, options.frames + 1):
                for run in plan:
                    sample = _sample(lambda: _measure_run(run, variant, resolution, options,
                                                          index))
                    samples[run.label].append(sample)
                    progress(f'  frame {index} {run.label}: {sample["seconds"]:.2f} s, '
                             f'{sample["peak_mb"]:.0f} MB (warm-up frame '
                             f'{sample.get("warm_up_seconds", math.nan):.1f} s)')
                    if options.against is not None and run.config is not None:
                        other = _sample(lambda: measure_in_checkout(
                            options.against, variant, resolution, run.config,
                            run.config.warm_start, options.lidar, options.seed, index))
                        against[run.label].append(other)
                        progress(f'  frame {index} {run.label}, --against: '
                                 f'{other["seconds"]:.2f} s')
            measured = {name: _summarize(runs) for name, runs in samples.items()}
            for name, others in against.items():
                if others:
                    other = _summarize(others)
                    measured[name].update(
                        seconds_against=other['seconds'], iterations_against=other['iterations'],
                        speedup_vs_against=other['seconds'] / measured[name]['seconds'])
            reference = measured.get('lrda', {})
            for name, values in measured.items():
                rows.append({
                    'backbone': variant, 'resolution': resolution, 'method': name, **values,
                    'time_vs_lrda': values['seconds'] / reference['seconds']
                    if reference else float('nan'),
                    'memory_vs_lrda': values['peak_mb'] / reference['peak_mb']
                    if reference and reference['peak_mb'] > 0 else float('nan'),
                    **structure})
    return rows


def run_accuracy(options: SpeedOptions, model_spec: str = 'demo', frames: int = 8,
                 width: int = 320, height: int = 240, progress: bool = True) -> dict:
    """Score speed-ups against error on a synthetic sequence with a trained model."""
    from .. import world
    from ..datasets.synthetic import synthetic_frames
    from ..engine.loading import load_depth_model
    from ..eval.harness import evaluate
    from ..eval.methods import build_method, TTOMethod

    model = load_depth_model(model_spec, options.device)
    config = TTOConfig(iterations=options.iterations, warm_iterations=options.warm_iterations,
                       schedule=options.schedule,
                       device=options.device, dtype=options.dtype,
                       sparse_head=options.sparse_head, min_points=8)
    methods = [build_method(name, model, config)
               for name in ('scale-shift', 'lrda', 'lrda-warm')]
    lrda = METHODS['lrda']
    methods.append(TTOMethod(replace(lrda, name='lrda, dense head'), model,
                             replace(config, sparse_head=False)))
    if resolve_precision(model.device, config.dtype) != 'float32':
        methods.append(TTOMethod(replace(lrda, name='lrda, float32'), model,
                                 replace(config, dtype='float32')))
    # Indoors: outdoors this small prior's far-field errors (facades it takes for sky,
    # above the LiDAR's view) dominate any metric.
    sequence = world.SequenceConfig('indoor', frames, width=width, height=height, seed=11)
    result = evaluate(list(synthetic_frames(sequence)), methods,
                      device=str(model.device), progress=progress)
    return {'model': model.source, 'frames': frames, 'size': [width, height],
            'methods': result.summary()}


def run_speed(options: SpeedOptions, accuracy: bool = False) -> dict:
    """Measure, print the tables, and write speed.json, speed.md and speed.png."""
    output = Path(options.output)
    output.mkdir(parents=True, exist_ok=True)
    device = resolve_device(options.device)
    machine = machine_description(device, options.dtype)
    engine = engine_metadata(','.join(options.backbones), str(device), options.tto_config(),
                             weights='random weights of that architecture, seeded (the time '
                             'does not depend on them)')
    report = {'options': json_ready(asdict(options)), 'engine': engine, **machine}
    with compilation_cache(options.compile):
        rows = measure_speed(options)
    report['speed'] = rows
    text = machine_line(machine) + '\n\n' + engine_line(engine) + '\n\n' + speed_table(rows)
    if options.compile:
        text += '\n' + compile_times(rows, options.frames)
    if device.type == 'cpu' and options.ablations:
        variant, resolution = options.backbones[0], options.resolutions[-1]
        ablation = allocator_ablation(variant, resolution, options.lidar, options.seed)
        report['allocator'] = {'backbone': variant, 'resolution': resolution, **ablation}
        text += (f'\nCPU allocator ({variant}, {resolution}), fresh processes, median ms: '
                 + '; '.join(f'{name}: encoder {v["encoder_s"] * 1e3:.0f}, decoder step dense '
                             f'{v["decoder_step_dense_s"] * 1e3:.0f} / sparse '
                             f'{v["decoder_step_sparse_s"] * 1e3:.0f}'
                             for name, v in ablation.items()) + '\n')
    if accuracy:
        from ..eval.report import summary_markdown

        report['accuracy'] = run_accuracy(options)
        text += '\n' + summary_markdown(report['accuracy']['methods'],
                                        'accuracy on a synthetic indoor sequence (demo prior)')
    print(text)
    (output / 'speed.json').write_text(json.dumps(report, indent=2) + '\n')
    (output / 'speed.md').write_text(text)
    speed_plot(rows, output / 'speed.png')
    print(f'wrote {output}/speed.json, speed.md, speed.png')
    return report
