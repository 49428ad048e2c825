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
``lrda bench``: time and peak memory of test-time optimization, measured side by side.

Speed part (random weights are fine for timing): for each backbone (Depth Anything V2
or UniDepthV2) and resolution, after
a warm-up, per-frame time and peak memory of methods of the one registry
(:data:`~lrda_ros.eval.methods.METHODS`), by default ``lrda`` (decoder LoRA, cold, paper's 40
steps), ``lrda-warm`` (warm-started frames of a sequence), ``lrda-strips`` (the decoder's
high-resolution tail in strips under activation checkpointing: less memory, more time),
``encoder-lora`` and ``prompt`` (tuning through the whole network), with ratios against
``lrda``; plus the cost structure (one encoder pass vs one decoder step, with the dense and
the sparse head) and the ablations. Backbones: Depth Anything V2 ``vits`` ... ``vitg`` and
UniDepthV2 ``unidepth-vits``, ``unidepth-vitb``, ``unidepth-vitl`` (given the camera's K, as
the node runs it; the DPT-specific sparse head and strips do not apply to it).

Accuracy part (``--accuracy``, needs a trained model, default the demo prior): a synthetic
sequence scored for scale/shift, cold, cold with the dense head, and warm start, so speed-ups
are shown next to what they cost in error.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
import json
import math
from pathlib import Path
import time

import numpy as np
import torch

from .classical import ip_basic_complete
from .machine import machine_description, machine_line
from .methods import check_method_names, METHODS
from .profiling import Measure
from ..engine import DepthCompleter, DepthModel, TTOConfig
from ..engine.checkpoint import build_config, VARIANTS
from ..engine.model import resolve_device
from ..engine.precision import resolve_precision
from ..engine.sparse_head import SparseHeadPlan
from ..engine.unidepth import UniDepthModel, UniDepthV2Config, UniDepthV2Network

#: (height, width) of the named resolutions.
RESOLUTIONS = {'224': (224, 224), 'vga': (480, 640), 'hd': (720, 1280), 'fhd': (1080, 1920)}
#: Methods timed unless ``--methods`` says otherwise: names of the registry (eval/methods.py).
DEFAULT_BENCH_METHODS = ('lrda', 'lrda-warm', 'lrda-strips', 'encoder-lora', 'prompt')
#: UniDepthV2 backbones by bench name (the official sizes, random weights).
UNIDEPTH_BACKBONES = {f'unidepth-{variant}': variant for variant in ('vits', 'vitb', 'vitl')}
#: Every backbone name ``--backbones`` takes.
BACKBONES = tuple(VARIANTS) + tuple(UNIDEPTH_BACKBONES)
#: The cost structure's timings in a speed row (NaN where it was not measured).
STRUCTURE_KEYS = ('encoder_s', 'decoder_step_dense_s', 'decoder_step_sparse_s')


@dataclass(frozen=True)
class LidarPattern:
    """Where the bench frames have LiDAR depth."""

    #: Share of all pixels with a return (KITTI's projected HDL-64: about 4 %).
    fraction: float = 0.04
    #: Share of the image's rows above the LiDAR's top beam, which have none (KITTI's HDL-64
    #: in its colour camera: rows 122 to 129 of 375 are the first, so about a third; 0: the
    #: returns spread over the whole image).
    top: float = 0.33

    def mask(self, height: int, width: int, rng: np.random.Generator) -> np.ndarray:
        """Return a random (height, width) mask of returns, none in the rows above the LiDAR."""
        first = int(round(self.top * height))
        mask = np.zeros((height, width), bool)
        mask[first:] = rng.random((height - first, width)) < self.fraction * height / max(
            height - first, 1)
        return mask


@dataclass
class BenchOptions:
    """What ``lrda bench`` measures."""

    backbones: tuple[str, ...] = ('vits',)
    resolutions: tuple[str, ...] = ('224', 'vga')
    methods: tuple[str, ...] = DEFAULT_BENCH_METHODS
    iterations: int = 40
    warm_iterations: int = 10
    device: str = 'auto'
    #: 'auto' (as the node): bfloat16 where the hardware computes it natively.
    dtype: str = 'auto'
    #: Share of pixels with a LiDAR return (KITTI's projected HDL-64: about 4 %).
    lidar_fraction: float = LidarPattern.fraction
    #: Share of the rows above the LiDAR's top beam (LidarPattern.top).
    lidar_top: float = LidarPattern.top
    #: Timed frames per configuration (after one untimed warm-up frame); medians reported.
    frames: int = 3
    sparse_head: bool = True
    #: torch.compile the steps and the final decode (the node's compile: dense-head steps).
    compile: bool = False  # noqa: A003 (the option is named compile)
    #: Also time the cost structure (an encoder pass, a decoder step) in its own process.
    structure: bool = True
    #: Also time lrda with each optimization off, and the CPU allocator setting.
    ablations: bool = True
    output: Path = Path('out/bench')
    seed: int = 0

    def __post_init__(self) -> None:
        """Reject unknown names and out-of-range numbers before anything runs."""
        for option, given, known in (('--backbones', self.backbones, BACKBONES),
                                     ('--resolutions', self.resolutions, RESOLUTIONS)):
            unknown = [name for name in given if name not in known]
            if unknown or not given:
                raise ValueError(f'{option}: unknown {", ".join(unknown) or "(empty)"}; choose '
                                 f'from {", ".join(known)}')
        check_method_names(self.methods)  # as lrda eval does
        posed = [name for name in self.methods if METHODS[name].temporal_fusion]
        if posed:
            raise ValueError(f'--methods: {", ".join(posed)} fuses frames by the camera pose, '
                             "which the bench's panning image has not: time lrda-warm")
        for option, value in (('--iterations', self.iterations), ('--frames', self.frames)):
            if value < 1:
                raise ValueError(f'{option} must be at least 1, got {value}')
        if not 0 <= self.lidar_top < 1:
            raise ValueError(f'--lidar-top must be in [0, 1), got {self.lidar_top}')
        if not 0 < self.lidar_fraction <= 1 - self.lidar_top:
            raise ValueError(f'--lidar-fraction must be in (0, 1 - --lidar-top], got '
                             f'{self.lidar_fraction}')

    @property
    def lidar(self) -> LidarPattern:
        """Return the LiDAR pattern of the bench frames."""
        return LidarPattern(self.lidar_fraction, self.lidar_top)

    def tto_config(self) -> TTOConfig:
        """
        Return the engine configuration the methods start from.

        Every frame runs its configured steps: on random weights the loss means nothing, so
        neither a divergence stop nor an undone collapse (a step without backward) may change
        the work timed.
        """
        return TTOConfig(iterations=self.iterations, warm_iterations=self.warm_iterations,
                         device=str(resolve_device(self.device)), dtype=self.dtype,
                         processing_size=None, sparse_head=self.sparse_head, seed=self.seed,
                         divergence_factor=math.inf, backtrack_fraction=1.0,
                         compile=self.compile)


def random_network(variant: str, seed: int):
    """Build an official-size network with PyTorch's default (non-degenerate) random init."""
    from transformers import DepthAnythingForDepthEstimation

    torch.manual_seed(seed)
    network = DepthAnythingForDepthEstimation(build_config(variant))
    for module in network.modules():
        if isinstance(module, (torch.nn.Conv2d, torch.nn.ConvTranspose2d, torch.nn.Linear)):
            module.reset_parameters()
    with torch.no_grad():
        network.head.conv3.bias.fill_(1.0)
    return network


def bench_model(backbone: str, seed: int, device: torch.device | str = 'cpu'):
    """Return the engine model of a bench backbone name with random weights."""
    if backbone in UNIDEPTH_BACKBONES:
        torch.manual_seed(seed)  # PyTorch's default init: non-degenerate, as random_network
        config = UniDepthV2Config.official(UNIDEPTH_BACKBONES[backbone])
        return UniDepthModel(UniDepthV2Network(config), device)
    return DepthModel(random_network(backbone, seed), device)


def bench_intrinsics(height: int, width: int) -> np.ndarray:
    """Return the bench frames' camera: focal length one image width, centred."""
    return np.array([[float(width), 0.0, (width - 1) / 2], [0.0, float(width), (height - 1) / 2],
                     [0.0, 0.0, 1.0]])


def bench_frames(height: int, width: int, count: int, lidar: LidarPattern,
                 seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Return ``count`` related frames: a panning crop of a smooth image, with sparse depth."""
    rng = np.random.default_rng(seed)
    shift = max(2, width // 100)
    wide = width + shift * count
    coarse = torch.from_numpy(rng.uniform(0, 255, (1, 3, 12, 16)).astype(np.float32))
    image = torch.nn.functional.interpolate(coarse, size=(height, wide), mode='bicubic')
    image = image.clamp(0, 255)[0].permute(1, 2, 0).numpy().astype(np.uint8)
    rows = np.linspace(0, 1, height)[:, None]
    depth = (4.0 + 30.0 * rows ** 2 + 2.0 * np.sin(np.linspace(0, 6, wide))[None]).astype(
        np.float32)
    mask = lidar.mask(height, width, rng)
    frames = []
    for k in range(count):
        window = slice(k * shift, k * shift + width)
        frames.append((np.ascontiguousarray(image[:, window]),
                       np.where(mask, depth[:, window], 0).astype(np.float32)))
    return frames


def _sync(device: torch.device) -> None:
    if device.type == 'cuda':
        torch.cuda.synchronize(device)


def cost_structure(model: DepthModel, rgb: np.ndarray, sparse: np.ndarray, repeats: int = 3,
                   **config) -> dict[str, float]:
    """
    Time one encoder pass and one decoder step (forward + backward), dense and sparse.

    ``config``: TTOConfig fields (dtype, fold_lora, tune_cpu_allocator, ...).
    """
    completer = DepthCompleter(model, TTOConfig(device=str(model.device), **config))
    pixel_values = model.preprocess(rgb, None)
    rows, cols = (torch.from_numpy(a).to(model.device) for a in np.nonzero(sparse > 0))
    plan = SparseHeadPlan.build(rows, cols, rgb.shape[:2], tuple(pixel_values.shape[-2:]))
    parameters = completer.adaptation.parameters
    intrinsics = bench_intrinsics(*rgb.shape[:2])

    def encoder():
        with completer._autocast():
            return model.encode(pixel_values, rgb.shape[:2], intrinsics)

    encoded = encoder()

    def dense_step():
        from ..engine.model import sample_prediction
        with completer._autocast():
            values = sample_prediction(model.decode(encoded), rows, cols, rgb.shape[:2])
        torch.autograd.grad(values.sum(), parameters, allow_unused=True)

    def sparse_step():
        with completer._autocast():
            values = plan.evaluate(model, encoded)
        torch.autograd.grad(values.sum(), parameters, allow_unused=True)

    timings = {'decoder_step_sparse_s': math.nan}  # the sparse head: DPT decoders only
    steps = (('encoder_s', encoder), ('decoder_step_dense_s', dense_step)) + (
        (('decoder_step_sparse_s', sparse_step),) if model.dpt_decoder else ())
    for name, call in steps:
        call()  # warm-up
        _sync(model.device)
        start = time.perf_counter()
        for _ in range(repeats):
            call()
        _sync(model.device)
        timings[name] = (time.perf_counter() - start) / repeats
    return timings


def measure_configuration(variant: str, resolution: str, config: TTOConfig, warm: bool,
                          lidar: LidarPattern, seed: int, frame_index: int) -> dict:
    """
    Time one frame of one configuration in this (fresh) process.

    Builds the network, runs an untimed warm-up frame (a 2-step run for cold methods; for warm
    start, the cold first frame of the sequence), then times frame ``frame_index``.
    """
    height, width = RESOLUTIONS[resolution]
    frames = bench_frames(height, width, frame_index + 1, lidar, seed)
    intrinsics = bench_intrinsics(height, width)
    model = bench_model(variant, seed, resolve_device(config.device))
    completer = DepthCompleter(model, replace(config, warm_start=warm,
                                              iterations=config.iterations if warm else 2))
    completer.complete(*frames[0], intrinsics=intrinsics)
    completer.config = replace(config, warm_start=warm)
    if not warm:
        completer.reset()
    with Measure(model.device) as measured:
        result = completer.complete(*frames[frame_index], intrinsics=intrinsics)
    return {'seconds': measured.seconds, 'peak_mb': measured.peak_mb,
            'iterations': result.iterations, 'final_loss': result.final_loss}


def measure_classical(resolution: str, lidar: LidarPattern, seed: int, frame_index: int,
                      max_depth: float) -> dict:
    """
    Time IP-Basic filling of frame ``frame_index`` in this (fresh) process, after one untimed.

    It runs on the CPU whatever the bench's device, so its peak is heap growth (profiling.py).
    """
    height, width = RESOLUTIONS[resolution]
    frames = bench_frames(height, width, frame_index + 1, lidar, seed)
    ip_basic_complete(frames[0][1], max_depth=max_depth)
    with Measure('cpu') as measured:
        ip_basic_complete(frames[frame_index][1], max_depth=max_depth)
    return {'seconds': measured.seconds, 'peak_mb': measured.peak_mb, 'iterations': 0,
            'final_loss': float('nan')}


def _in_fresh_process(function, *args):
    """Run ``function(*args)`` in a newly spawned interpreter and return its result."""
    from concurrent.futures import ProcessPoolExecutor
    import multiprocessing

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context('spawn')) as pool:
        return pool.submit(function, *args).result()


@dataclass(frozen=True)
class PlannedRun:
    """One timed row: a registry method, or ``lrda`` with one optimization off."""

    label: str
    #: The engine configuration (None for a method without a network).
    config: TTOConfig | None


def _plan(options: BenchOptions, config: TTOConfig, backbone: str = 'vits') -> list[PlannedRun]:
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


def _measure_run(run: PlannedRun, variant: str, resolution: str, options: BenchOptions,
                 frame_index: int) -> dict:
    """Time one frame of a planned run in a fresh process."""
    if run.config is None:
        return _in_fresh_process(measure_classical, resolution, options.lidar, options.seed,
                                 frame_index, TTOConfig().max_depth)
    return _in_fresh_process(measure_configuration, variant, resolution, run.config,
                             run.config.warm_start, options.lidar, options.seed, frame_index)


def _summarize(samples: list[dict]) -> dict:
    """Return the medians of a configuration's samples, and the first error among them."""
    errors = [s['error'] for s in samples if 'error' in s]
    return {'seconds': float(np.median([s['seconds'] for s in samples])),
            'peak_mb': float(np.max([s['peak_mb'] for s in samples])),
            'iterations': float(np.mean([s['iterations'] for s in samples])),
            'final_loss': float(np.mean([s['final_loss'] for s in samples])),
            **({'error': errors[0]} if errors else {})}


def run_speed(options: BenchOptions, progress=print) -> list[dict]:
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
                structure = _in_fresh_process(_steps_in_this_process, variant, height, width,
                                              options.lidar, options.seed, True,
                                              options.dtype, str(device))
                progress(f'{variant} {resolution}: encoder {structure["encoder_s"] * 1e3:.0f} '
                         f'ms, decoder step {structure["decoder_step_dense_s"] * 1e3:.0f} ms '
                         f'dense / {structure["decoder_step_sparse_s"] * 1e3:.0f} ms sparse head')
            config = options.tto_config()
            plan = _plan(options, config, variant)
            samples: dict[str, list[dict]] = {run.label: [] for run in plan}
            for index in range(1, options.frames + 1):
                for run in plan:
                    try:
                        sample = _measure_run(run, variant, resolution, options, index)
                    except Exception as error:  # e.g. CUDA out of memory in the child
                        sample = {'seconds': float('nan'), 'peak_mb': float('nan'),
                                  'iterations': 0, 'final_loss': float('nan'),
                                  'error': f'{type(error).__name__}: {error}'}
                    samples[run.label].append(sample)
                    progress(f'  frame {index} {run.label}: {sample["seconds"]:.2f} s, '
                             f'{sample["peak_mb"]:.0f} MB')
            measured = {name: _summarize(runs) for name, runs in samples.items()}
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


def _steps_in_this_process(variant: str, height: int, width: int, lidar: LidarPattern,
                           seed: int, tuned: bool, dtype: str = 'float32',
                           device: str = 'cpu') -> dict[str, float]:
    """Cost structure of a fresh process, allocator tuned or glibc's default (spawned)."""
    frame = bench_frames(height, width, 1, lidar, seed)[0]
    return cost_structure(bench_model(variant, seed, device), *frame, repeats=3,
                          tune_cpu_allocator=tuned, dtype=dtype)


def allocator_ablation(variant: str, resolution: str, lidar: LidarPattern, seed: int,
                       rounds: int = 2) -> dict[str, dict[str, float]]:
    """
    Compare decoder steps with glibc's default allocator behaviour and the tuned one.

    The setting is process-wide, so each measurement runs in a fresh spawned process,
    alternating default and tuned; medians over ``rounds`` each.
    """
    height, width = RESOLUTIONS[resolution]
    results: dict[bool, list[dict[str, float]]] = {False: [], True: []}
    for _ in range(rounds):
        for tuned in (False, True):
            results[tuned].append(_in_fresh_process(_steps_in_this_process, variant, height,
                                                    width, lidar, seed, tuned))
    return {('tuned' if tuned else 'default'): {
        key: float(np.median([r[key] for r in runs])) for key in runs[0]}
        for tuned, runs in results.items()}


def run_accuracy(options: BenchOptions, model_spec: str = 'demo', frames: int = 8,
                 width: int = 320, height: int = 240, progress: bool = True) -> dict:
    """Score speed-ups against error on a synthetic sequence with a trained model."""
    from .datasets.synthetic import synthetic_frames
    from .harness import evaluate
    from .methods import build_method, TTOMethod
    from .. import world
    from ..engine.loading import load_depth_model

    model = load_depth_model(model_spec, options.device)
    config = TTOConfig(iterations=options.iterations, warm_iterations=options.warm_iterations,
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


def speed_table(rows: list[dict]) -> str:
    """Return the speed rows as a Markdown table."""
    lines = ['| backbone | resolution | method | s/frame | peak MB | time vs lrda | '
             'memory vs lrda | iterations |', '|---|---|---|---|---|---|---|---|']
    for row in rows:
        lines.append(f'| {row["backbone"]} | {row["resolution"]} | {row["method"]} | '
                     f'{row["seconds"]:.2f} | {row["peak_mb"]:.0f} | '
                     f'{row["time_vs_lrda"]:.2f}x | {row["memory_vs_lrda"]:.2f}x | '
                     f'{row["iterations"]:.0f} |')
    structure = {(r['backbone'], r['resolution']): r for r in rows
                 if not math.isnan(r['encoder_s'])}  # none with --no-structure
    if structure:
        lines += ['', '| backbone | resolution | encoder pass (ms) | decoder step, dense head '
                  '(ms) | decoder step, sparse head (ms) |', '|---|---|---|---|---|']
    for (backbone, resolution), row in structure.items():
        lines.append(f'| {backbone} | {resolution} | {row["encoder_s"] * 1e3:.0f} | '
                     f'{row["decoder_step_dense_s"] * 1e3:.0f} | '
                     f'{row["decoder_step_sparse_s"] * 1e3:.0f} |')
    return '\n'.join(lines) + '\n'


def speed_plot(rows: list[dict], path: Path) -> None:
    """Bar chart of seconds per frame, grouped by backbone and resolution (log scale)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    groups = list(dict.fromkeys((r['backbone'], r['resolution']) for r in rows))
    methods = list(dict.fromkeys(r['method'] for r in rows))
    figure, axis = plt.subplots(figsize=(max(6, 1.8 * len(groups) * len(methods) / 2), 4.5))
    width = 0.8 / len(methods)
    for offset, method in enumerate(methods):
        values = [next((r['seconds'] for r in rows if (r['backbone'], r['resolution']) == g
                        and r['method'] == method), np.nan) for g in groups]
        axis.bar(np.arange(len(groups)) + offset * width, values, width, label=method)
    axis.set_xticks(np.arange(len(groups)) + 0.4 - width / 2)
    axis.set_xticklabels([f'{b} {r}' for b, r in groups])
    axis.set_yscale('log')
    axis.set_ylabel('seconds per frame (log)')
    axis.legend(fontsize=8)
    axis.grid(True, axis='y', which='both', alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def run_bench(options: BenchOptions, accuracy: bool = False) -> dict:
    """Run the benchmark, print the tables, and write bench.json, bench.md and bench.png."""
    output = Path(options.output)
    output.mkdir(parents=True, exist_ok=True)
    device = resolve_device(options.device)
    machine = machine_description(device, options.dtype)
    report = {'options': {k: str(v) for k, v in asdict(options).items()}, **machine}
    rows = run_speed(options)
    report['speed'] = rows
    text = machine_line(machine) + '\n\n' + speed_table(rows)
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
        from .report import summary_markdown

        report['accuracy'] = run_accuracy(options)
        text += '\n' + summary_markdown(report['accuracy']['methods'],
                                        'accuracy on a synthetic indoor sequence (demo prior)')
    print(text)
    (output / 'bench.json').write_text(json.dumps(report, indent=2) + '\n')
    (output / 'bench.md').write_text(text)
    speed_plot(rows, output / 'bench.png')
    print(f'wrote {output}/bench.json, bench.md, bench.png')
    return report
