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
    benchmarks/gpu_check.sh --device cpu --quick    # the dry run: tiny sizes, about a minute
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
from dataclasses import asdict, dataclass, field, replace
import datetime
import importlib
import json
import math
import os
from pathlib import Path
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Callable, ClassVar, Sequence, TextIO

ROOT = Path(__file__).resolve().parents[1]
#: Wall time the whole command may take, and what of it is kept for start-up and reports.
TOTAL_S = 480
RESERVE_S = 15
#: What a table cell holds where no number was measured.
NOT_MEASURED, TIMED_OUT, FAILED, OUT_OF_MEMORY = (
    'not yet measured', 'timed out', 'failed', 'out of memory')
#: Modules the speed path imports (beside the standard library and this package).
REQUIRED_MODULES = ('torch', 'numpy', 'transformers', 'peft', 'safetensors', 'huggingface_hub',
                    'PIL', 'yaml', 'tqdm', 'matplotlib', 'pytest')
#: The paper's fixed steps, so that every frame runs the counts its figures are of.
SCHEDULE = 'paper'
#: The paper's H200 figures, 40 iterations.
PAPER = {'gpu': 'H200', 'iterations': 40, 'vits_vga_lrda_s': 0.18, 'vits_vga_prompt_s': 0.88,
         'vitl_fhd_lrda_s': 2.34, 'vitl_fhd_lrda_gb': 10.5, 'vitl_fhd_prompt': OUT_OF_MEMORY}
NAMES = {'vits': 'ViT-S', 'vitb': 'ViT-B', 'vitl': 'ViT-L', 'vitg': 'ViT-G',
         'unidepth-vits': 'UniDepthV2-S', 'unidepth-vitb': 'UniDepthV2-B',
         'unidepth-vitl': 'UniDepthV2-L', 'vga': 'VGA', 'fhd': 'FHD', 'hd': 'HD', '224': '224²'}


class UsageError(ValueError):
    """A bad option: printed as one line."""


@dataclass(frozen=True)
class Sizes:
    """How large the measurements are: the GPU's, or the dry run's tiny stand-ins."""

    #: The paper's steps per cold frame, as its figures were measured with.
    iterations: int = PAPER['iterations']
    warm_iterations: int = 10
    #: Rounds of warm frames per camera after the cold one (cameras part).
    rounds: int = 3
    #: Every backbone becomes its ViT-S and every resolution 224².
    tiny: bool = False

    def backbone(self, name: str) -> str:
        """Return the backbone measured for ``name``."""
        if not self.tiny:
            return name
        return 'unidepth-vits' if name.startswith('unidepth') else 'vits'

    def resolution(self, name: str) -> str:
        """Return the resolution measured for ``name``."""
        return '224' if self.tiny else name


@dataclass(frozen=True)
class Context:
    """What every part is run with."""

    device: str
    sizes: Sizes
    #: The scratch folder of the parts' own files.
    work: Path

    def part_file(self, name: str) -> Path:
        """Return where part ``name`` writes what it measured."""
        return self.work / name / 'result.json'


class InProcess:
    """A part this script runs itself (``--part NAME``), its result a JSON file."""

    def command(self, name: str, context: Context) -> list[str]:
        """Return the command running part ``name`` of the plan in this script."""
        return [sys.executable, str(Path(__file__).resolve()), '--device', context.device,
                *(['--quick'] if context.sizes.tiny else []), '--part', name,
                '--work', str(context.work)]

    def read(self, name: str, context: Context, output: str) -> list[dict]:
        """Return what the part wrote (nothing where it wrote nothing)."""
        path = context.part_file(name)
        return [json.loads(path.read_text())] if path.exists() else []


class Environment(InProcess):
    """Versions, device and precision, and whether the speed path imports (checked first)."""

    table: ClassVar[str] = 'environment'

    def planned(self, context: Context) -> list[dict]:
        """Return the rows the part fills."""
        return []

    def measure(self, context: Context) -> dict:
        """Check the imports and the device; return what runs here."""
        versions, missing = {}, []
        for module in REQUIRED_MODULES:
            try:
                versions[module] = getattr(importlib.import_module(module), '__version__', '?')
            except ImportError as error:
                missing.append(f'{module} ({error})')
        if missing:
            raise RuntimeError(f'missing: {"; ".join(missing)}: install them, or bring them as '
                               'wheels (pip install --no-index --no-deps --target DIR *.whl, '
                               'then PYTHONPATH=DIR)')
        import torch
        from lrda_ros.engine.model import resolve_device
        from lrda_ros.engine.precision import resolve_precision
        import lrda_ros.speed.run  # noqa: F401 (the speed path imports)
        from transformers import DepthAnythingForDepthEstimation  # noqa: F401

        device = resolve_device(context.device)
        report = {'python': platform.python_version(), 'torch': torch.__version__,
                  'cuda': torch.version.cuda, 'device': str(device),
                  'dtype_auto': resolve_precision(device, 'auto'), 'packages': versions,
                  'threads': torch.get_num_threads(),
                  'machine': platform.processor() or platform.machine()}
        if device.type == 'cuda':
            properties = torch.cuda.get_device_properties(device)
            report.update(gpu=properties.name, memory_gb=round(properties.total_memory / 1e9, 1),
                          capability=f'{properties.major}.{properties.minor}')
        print(f'{report.get("gpu", device)}, torch {torch.__version__}, CUDA '
              f'{torch.version.cuda}, dtype auto = {report["dtype_auto"]}', flush=True)
        return report


class Tests:
    """The tests marked ``cuda`` (skipped without a CUDA device), with their result line."""

    table: ClassVar[str] = 'tests'

    @staticmethod
    def files() -> list[Path]:
        """Return the test files that hold tests marked ``cuda``."""
        return sorted(path for path in (ROOT / 'test').glob('test_*.py')
                      if 'mark.cuda' in path.read_text())

    def command(self, name: str, context: Context) -> list[str]:
        """Return pytest on those files, selecting the marked tests."""
        return [sys.executable, '-m', 'pytest', '-q', '-rfEs', '-m', 'cuda', '-p',
                'no:cacheprovider', *map(str, self.files())]

    def planned(self, context: Context) -> list[dict]:
        """Return the row the part fills."""
        return [{'status': NOT_MEASURED, 'result': NOT_MEASURED}]

    def read(self, name: str, context: Context, output: str) -> list[dict]:
        """Return pytest's result line."""
        result = pytest_result(output)
        return [{'status': 'measured', 'result': result}] if result else []


def pytest_result(output: str) -> str:
    """Return pytest's closing line ('24 passed, 3 skipped in 9.1s'), or ''."""
    lines = [line.strip(' =') for line in output.splitlines()
             if re.search(r'\d+ (passed|failed|skipped|deselected|errors?)\b.* in [\d.]+s', line)]
    return lines[-1] if lines else ''


@dataclass(frozen=True)
class BenchRun:
    """One ``lrda speed`` run: every backbone with every resolution and method."""

    backbones: tuple[str, ...]
    resolutions: tuple[str, ...]
    methods: tuple[str, ...]
    dtype: str = 'bfloat16'
    compile: bool = False  # noqa: A003 (the option is named compile)

    table: ClassVar[str] = 'speed'

    def options(self, context: Context):
        """Return the run's SpeedOptions (validated as ``lrda speed`` does)."""
        from lrda_ros.speed import SpeedOptions

        sizes = context.sizes
        return SpeedOptions(
            backbones=tuple(dict.fromkeys(map(sizes.backbone, self.backbones))),
            resolutions=tuple(dict.fromkeys(map(sizes.resolution, self.resolutions))),
            methods=self.methods, iterations=sizes.iterations,
            warm_iterations=sizes.warm_iterations, schedule=SCHEDULE, device=context.device,
            dtype=self.dtype, frames=1, compile=self.compile, structure=False, ablations=False,
            output=context.work)

    def command(self, name: str, context: Context) -> list[str]:
        """Return the ``lrda speed`` command line of the run."""
        options = self.options(context)
        return [sys.executable, '-m', 'lrda_ros.cli', 'speed', '--backbones',
                ','.join(options.backbones), '--resolutions', ','.join(options.resolutions),
                '--methods', ','.join(options.methods), '--iterations', str(options.iterations),
                '--warm-iterations', str(options.warm_iterations), '--schedule', SCHEDULE,
                '--frames', '1',
                '--device', context.device, '--dtype', self.dtype, '--no-ablations',
                '--no-structure', *(['--compile'] if self.compile else []),
                '--output', str(context.part_file(name).parent)]

    def planned(self, context: Context) -> list[dict]:
        """Return a row per configuration, as ``lrda speed`` plans them."""
        from lrda_ros.engine import TTOConfig
        from lrda_ros.speed.run import _plan

        options = self.options(context)
        rows = []
        for backbone in options.backbones:
            for resolution in options.resolutions:
                rows += [self._row(backbone, resolution, run.label)
                         for run in _plan(options, TTOConfig(device='cpu'), backbone)]
        return rows

    def _row(self, backbone: str, resolution: str, method: str, **values) -> dict:
        return {'backbone': backbone, 'resolution': resolution, 'dtype': self.dtype,
                'compile': self.compile, 'method': method, 'status': NOT_MEASURED, **values}

    def read(self, name: str, context: Context, output: str) -> list[dict]:
        """Return the rows of the run's speed.json (none where it wrote none)."""
        path = context.part_file(name).parent / 'speed.json'
        rows = []
        for row in json.loads(path.read_text())['speed'] if path.exists() else ():
            error = row.get('error', '')
            status = ('measured' if not error else
                      OUT_OF_MEMORY if 'out of memory' in error.lower() else FAILED)
            rows.append(self._row(row['backbone'], row['resolution'], row['method'],
                                  status=status, seconds=row['seconds'], peak_mb=row['peak_mb'],
                                  iterations=row['iterations'],
                                  **({'error': error} if error else {})))
        return rows


@dataclass(frozen=True)
class StepRun(InProcess):
    """The per-step figures of one configuration."""

    backbone: str
    resolution: str
    dtype: str = 'bfloat16'

    table: ClassVar[str] = 'steps'

    def planned(self, context: Context) -> list[dict]:
        """Return the row the part fills."""
        return [{'backbone': context.sizes.backbone(self.backbone),
                 'resolution': context.sizes.resolution(self.resolution), 'dtype': self.dtype,
                 'status': NOT_MEASURED}]

    def measure(self, context: Context) -> dict:
        """Count, time and divide: see step_figures."""
        row, = self.planned(context)
        return {**row, 'status': 'measured', **step_figures(
            row['backbone'], row['resolution'], self.dtype, context.device, context.sizes)}


@dataclass(frozen=True)
class CameraRun(InProcess):
    """Several cameras on one completer: the encoder batched against one frame at a time."""

    backbone: str
    resolution: str
    cameras: int = 3
    dtype: str = 'bfloat16'

    table: ClassVar[str] = 'cameras'

    def planned(self, context: Context) -> list[dict]:
        """Return the row the part fills."""
        return [{'backbone': context.sizes.backbone(self.backbone),
                 'resolution': context.sizes.resolution(self.resolution), 'dtype': self.dtype,
                 'cameras': self.cameras, 'status': NOT_MEASURED}]

    def measure(self, context: Context) -> dict:
        """Time the rounds: see camera_figures."""
        row, = self.planned(context)
        return {**row, 'status': 'measured', **camera_figures(
            row['backbone'], row['resolution'], self.dtype, context.device, self.cameras,
            context.sizes)}


Work = Environment | Tests | BenchRun | StepRun | CameraRun


@dataclass(frozen=True)
class Part:
    """One step of the check, with its time limit in seconds."""

    name: str
    limit_s: int
    work: Work
    #: Also in the dry run (--quick).
    quick: bool = False


#: The GPU plan, most important first. The limits were set before any GPU ran the script:
#: per process about 5 s of start-up (imports, CUDA, the model at random), then the frames.
PLAN = (
    Part('environment', 15, Environment(), quick=True),
    Part('vits-vga', 40, BenchRun(('vits',), ('vga',), ('lrda', 'lrda-warm', 'prompt')),
         quick=True),
    Part('vitl-fhd', 45, BenchRun(('vitl',), ('fhd',), ('lrda', 'lrda-warm'))),
    Part('vitl-fhd-prompt', 40, BenchRun(('vitl',), ('fhd',), ('prompt',))),
    Part('tests', 25, Tests(), quick=True),
    Part('steps-vits-vga', 25, StepRun('vits', 'vga'), quick=True),
    Part('steps-vitl-fhd', 30, StepRun('vitl', 'fhd')),
    Part('vitl-fhd-strips', 30, BenchRun(('vitl',), ('fhd',), ('lrda-strips',))),
    Part('vits-vga-float32', 30, BenchRun(('vits',), ('vga',), ('lrda', 'lrda-warm'),
                                          dtype='float32')),
    Part('vitl-fhd-float32', 25, BenchRun(('vitl',), ('fhd',), ('lrda',), dtype='float32')),
    Part('vits-vga-compile', 50, BenchRun(('vits',), ('vga',), ('lrda',), compile=True)),
    Part('unidepth-vga', 30, BenchRun(('unidepth-vits', 'unidepth-vitl'), ('vga',), ('lrda',))),
    Part('cameras', 20, CameraRun('vitl', 'vga'), quick=True),
    Part('vga-rest', 30, BenchRun(('vitb', 'vitl'), ('vga',), ('lrda',))),
    Part('fhd-rest', 30, BenchRun(('vits', 'vitb'), ('fhd',), ('lrda',))),
)
#: The dry run's limits: a loaded 2-core CPU, tiny sizes.
QUICK_LIMITS_S = {'environment': 45, 'vits-vga': 150, 'tests': 90, 'steps-vits-vga': 90,
                  'cameras': 90}
QUICK = Sizes(iterations=2, warm_iterations=1, rounds=1, tiny=True)


def build_plan(quick: bool, only: Sequence[str] = ()) -> list[Part]:
    """Return the parts to run: the GPU plan or the dry run's, ``only`` some of them."""
    parts = [replace(part, limit_s=QUICK_LIMITS_S[part.name]) for part in PLAN
             if part.quick] if quick else list(PLAN)
    unknown = [name for name in only if name not in {part.name for part in parts}]
    if unknown:
        raise UsageError(f'--only: unknown part {", ".join(unknown)}; the parts are '
                         f'{", ".join(part.name for part in parts)}')
    if only:  # the environment is checked first whatever is chosen
        parts = [part for part in parts if part.name in only or part.name == 'environment']
    return parts


def limits_line(parts: Sequence[Part]) -> str:
    """Return the sum of the parts' limits against the whole command's."""
    total = sum(part.limit_s for part in parts)
    return (f'time limits: {len(parts)} parts, {total} s, + {RESERVE_S} s for start-up and '
            f'reports = {total + RESERVE_S} s of at most {TOTAL_S} s')


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


def step_figures(backbone: str, resolution: str, dtype: str, device: str,
                 sizes: Sizes) -> dict:
    """
    Return the figures that show whether the device is used well, for one configuration.

    FLOPs of an encoder pass and of one step (FlopCounterMode, benchmarks/compute_floor.py);
    host synchronizations per step (on CUDA its sync debug mode, elsewhere the operations
    that would synchronize); kernel launches per step (CUDA only); the encoder pass and the
    time per step, from frames of ``iterations`` steps and of none, so the step's time is
    that of the engine's own loop, queued ahead as the node runs it; the TFLOP/s that the
    step achieves.
    """
    from compute_floor import frame_flops
    from lrda_ros.engine import DepthCompleter
    from lrda_ros.eval.profiling import Measure
    from lrda_ros.speed import SpeedOptions
    from lrda_ros.speed.inputs import panning_frames, panning_intrinsics, random_model, RESOLUTIONS

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
    return {'iterations': config.iterations,
            'encoder_ms': 1e3 * statistics.median(r.encode_seconds for r in results.values()),
            'step_ms': 1e3 * step_s, 'host_syncs_per_step': statistics.mean(syncs),
            'launches_per_step': statistics.mean(launches) if launches else math.nan,
            'encoder_gflop': flops['encoder'] / 1e9, 'step_gflop': flops['step'] / 1e9,
            'step_tflops': flops['step'] / step_s / 1e12 if step_s > 0 else math.nan,
            'peak_mb': measured.peak_mb, 'weights_mb': _parameter_mb(model.network)}


def camera_figures(backbone: str, resolution: str, dtype: str, device: str, cameras: int,
                   sizes: Sizes) -> dict:
    """
    Time rounds of one warm frame per camera, the encoder batched or frame by frame.

    One completer, a warm start per camera (as the node with ``cameras``); the rounds
    alternate which way goes first, after an untimed cold round.
    """
    from lrda_ros.engine import DepthCompleter
    from lrda_ros.speed import SpeedOptions
    from lrda_ros.speed.inputs import panning_frames, panning_intrinsics, random_model, RESOLUTIONS

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


# -- running the parts ---------------------------------------------------------------------


@dataclass
class Outcome:
    """How a part ended."""

    status: str
    seconds: float
    output: str = ''


def run_part(command: Sequence[str], limit_s: float, echo: Callable[[str], None],
             environment: dict[str, str] | None = None) -> Outcome:
    """
    Run ``command`` in a process group of its own, echoing its lines; stop it at ``limit_s``.

    A stopped part's processes (``lrda speed`` spawns one per configuration) go with it, also
    when this script is interrupted or terminated. ``environment``: variables to add.
    """
    start = time.monotonic()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True,
                               env={**os.environ, 'PYTHONUNBUFFERED': '1', **(environment or {})})
    lines: list[str] = []

    def read() -> None:
        for line in process.stdout:
            lines.append(line)
            echo(line.rstrip('\n'))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        process.wait(timeout=limit_s)
        status = 'ok' if process.returncode == 0 else FAILED
    except subprocess.TimeoutExpired:
        _kill(process)
        status = TIMED_OUT
    except KeyboardInterrupt:
        _kill(process)
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
    reader.join(timeout=5)
    return Outcome(status, time.monotonic() - start, ''.join(lines))


def _interrupt(*_) -> None:
    raise KeyboardInterrupt


def _kill(process: subprocess.Popen) -> None:
    """Kill a part's process group."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def git_commit() -> str:
    """Return this checkout's commit ('+ changes' when the tree differs from it)."""
    try:
        commit = subprocess.run(['git', 'rev-parse', '--short=12', 'HEAD'], cwd=ROOT, text=True,
                                capture_output=True, check=True).stdout.strip()
        changed = subprocess.run(['git', 'status', '--porcelain', '--untracked-files=no'],
                                 cwd=ROOT, text=True, capture_output=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return 'unknown (no git checkout; pass --commit)'
    return commit + (' + changes' if changed else '')


# -- the report ------------------------------------------------------------------------------


@dataclass
class Report:
    """Everything measured so far; written after every part."""

    device: str
    quick: bool
    commit: str
    limits: str
    started: str = field(default_factory=lambda: datetime.datetime.now(
        datetime.timezone.utc).isoformat(timespec='seconds'))
    environment: dict = field(default_factory=dict)
    parts: list[dict] = field(default_factory=list)
    tests: list[dict] = field(default_factory=list)
    speed: list[dict] = field(default_factory=list)
    steps: list[dict] = field(default_factory=list)
    cameras: list[dict] = field(default_factory=list)
    paper: dict = field(default_factory=lambda: dict(PAPER))

    def plan(self, parts: Sequence[Part], context: Context) -> None:
        """Enter every part and the rows it will fill, all not yet measured."""
        for part in parts:
            self.parts.append({'name': part.name, 'limit_s': part.limit_s,
                               'status': NOT_MEASURED, 'seconds': None,
                               'command': ' '.join(part.work.command(part.name, context))})
            for row in part.work.planned(context):
                getattr(self, part.work.table).append({'part': part.name, **row})

    def record(self, part: Part, outcome: Outcome, measured: list[dict]) -> None:
        """Enter how ``part`` ended and its rows (measured, else marked with its fate)."""
        entry = next(entry for entry in self.parts if entry['name'] == part.name)
        entry.update(status=outcome.status, seconds=round(outcome.seconds, 1))
        if part.work.table == 'environment':
            self.environment = measured[0] if measured else {}
            return
        rows = getattr(self, part.work.table)
        fate = NOT_MEASURED if outcome.status == 'ok' else outcome.status
        for index, row in enumerate(rows):
            if row['part'] != part.name:
                continue
            found = [m for m in measured if _same_row(m, row)]
            rows[index] = {**row, **found[0], 'part': part.name} if found else {
                **row, 'status': fate}
        if part.work.table == 'speed':
            _add_speedups(self.speed)

    def as_json(self) -> dict:
        """Return the report as JSON-ready data."""
        return asdict(self)


#: What tells a table's rows apart.
IDENTITY = ('backbone', 'resolution', 'dtype', 'compile', 'method', 'cameras')


def _same_row(measured: dict, planned: dict) -> bool:
    return all(measured.get(key) == planned[key] for key in IDENTITY if key in planned)


def _add_speedups(rows: list[dict]) -> None:
    """Set each row's speed-up over eager ``prompt`` of its backbone, resolution and dtype."""
    prompts = {(r['backbone'], r['resolution'], r['dtype']): r['seconds'] for r in rows
               if r['method'] == 'prompt' and not r['compile'] and r['status'] == 'measured'}
    for row in rows:
        prompt = prompts.get((row['backbone'], row['resolution'], row['dtype']))
        if row['method'] != 'prompt' and prompt and row['status'] == 'measured' \
                and row['seconds'] > 0:
            row['speedup_vs_prompt'] = prompt / row['seconds']


def _cell(row: dict, key: str, spec: str, suffix: str = '') -> str:
    """Return a number as text, or what stands for it where none was measured."""
    if row.get('status', 'measured') != 'measured':
        return row['status']
    value = row.get(key)
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return '—'
    return f'{value:{spec}}{suffix}'


def _label(row: dict) -> str:
    return f'{NAMES.get(row["backbone"], row["backbone"])} ' \
           f'{NAMES.get(row["resolution"], row["resolution"])}'


#: The comparison with the paper: (speed part, method, quantity, label, the paper's figure).
KEY_FIGURES = (
    ('vits-vga', 'lrda', 'seconds', '`lrda` cold, s/frame', '0.18'),
    ('vits-vga', 'lrda-warm', 'seconds', '`lrda-warm`, s/frame', '—'),
    ('vits-vga', 'prompt', 'seconds', '`prompt`, s/frame', '0.88'),
    ('vits-vga', 'lrda', 'speedup_vs_prompt', '`lrda` speed-up over `prompt`', '4.9×'),
    ('vits-vga', 'lrda-warm', 'speedup_vs_prompt', '`lrda-warm` speed-up over `prompt`', '—'),
    ('vitl-fhd', 'lrda', 'seconds', '`lrda` cold, s/frame', '2.34'),
    ('vitl-fhd', 'lrda', 'peak_gb', '`lrda` peak memory above the model, GB', '10.5'),
    ('vitl-fhd', 'lrda-warm', 'seconds', '`lrda-warm`, s/frame', '—'),
    ('vitl-fhd-prompt', 'prompt', 'seconds', '`prompt`, s/frame', OUT_OF_MEMORY),
    ('vitl-fhd', 'lrda', 'speedup_vs_prompt', '`lrda` speed-up over `prompt`', '—'),
)


def key_table(report: Report) -> list[str]:
    """Return the comparison with the paper's H200 figures (40 iterations)."""
    lines = ['| figure (bfloat16) | measured | paper (H200) |', '|---|---|---|']
    for part, method, quantity, label, paper in KEY_FIGURES:
        row = next((r for r in report.speed if r['part'] == part and r['method'] == method),
                   None)
        if row is None:  # the part is not in this plan (the dry run)
            continue
        row = {**row, 'peak_gb': row.get('peak_mb', math.nan) / 1024}
        spec, suffix = {'seconds': ('.3f', ''), 'peak_gb': ('.2f', ''),
                        'speedup_vs_prompt': ('.2f', '×')}[quantity]
        lines.append(f'| {_label(row)}, {label} | {_cell(row, quantity, spec, suffix)} | '
                     f'{paper} |')
    return lines


#: Each table's measured columns: (header, key, format).
SPEED_COLUMNS = (('s/frame', 'seconds', '.3f', ''), ('peak MB', 'peak_mb', '.0f', ''),
                 ('iterations', 'iterations', '.0f', ''),
                 ('speed-up over `prompt`', 'speedup_vs_prompt', '.2f', '×'))
STEPS_COLUMNS = (('encoder pass, ms', 'encoder_ms', '.1f', ''),
                 ('step, ms', 'step_ms', '.2f', ''),
                 ('host synchronizations per step', 'host_syncs_per_step', '.1f', ''),
                 ('kernel launches per step', 'launches_per_step', '.0f', ''),
                 ('GFLOP per step', 'step_gflop', '.1f', ''),
                 ('TFLOP/s', 'step_tflops', '.3g', ''),
                 ('encoder GFLOP', 'encoder_gflop', '.1f', ''),
                 ('peak MB', 'peak_mb', '.0f', ''), ('weights MB', 'weights_mb', '.0f', ''))
CAMERAS_COLUMNS = (('encoder ms/frame, batched', 'encoder_ms_batched', '.1f', ''),
                   ('encoder ms/frame, one by one', 'encoder_ms_alone', '.1f', ''),
                   ('frames/s, batched', 'frames_per_s_batched', '.2f', ''),
                   ('frames/s, one by one', 'frames_per_s_alone', '.2f', ''))


def _table(headers: Sequence[str], columns: Sequence[tuple[str, str, str, str]],
           rows: list[dict], described: Callable[[dict], list[str]]) -> list[str]:
    """
    Return a Markdown table: the described columns, then the measured ones.

    A row without figures names why in its first measured column ('not yet measured',
    'timed out', ...), and has '—' in the others.
    """
    names = [*headers, *(header for header, *_ in columns)]
    lines = ['| ' + ' | '.join(names) + ' |', '|' + '---|' * len(names)]
    for row in rows:
        measured = [_cell(row, key, spec, unit) for _, key, spec, unit in columns]
        if row['status'] != 'measured':
            measured = [row['status']] + ['—'] * (len(columns) - 1)
        lines.append('| ' + ' | '.join([*described(row), *measured]) + ' |')
    return lines


def speed_table(report: Report) -> list[str]:
    """Return every ``lrda speed`` row."""
    return _table(('backbone', 'resolution', 'dtype', 'compile', 'method'), SPEED_COLUMNS,
                  report.speed, lambda row: [
                      NAMES.get(row['backbone'], row['backbone']),
                      NAMES.get(row['resolution'], row['resolution']), row['dtype'],
                      'on' if row['compile'] else 'off', f'`{row["method"]}`'])


def steps_table(report: Report) -> list[str]:
    """Return the per-step figures."""
    return _table(('configuration', 'dtype'), STEPS_COLUMNS, report.steps,
                  lambda row: [_label(row), row['dtype']])


def cameras_table(report: Report) -> list[str]:
    """Return the multi-camera rows."""
    return _table(('configuration', 'dtype', 'cameras'), CAMERAS_COLUMNS, report.cameras,
                  lambda row: [_label(row), row['dtype'], str(row['cameras'])])


def parts_table(report: Report) -> list[str]:
    """Return how each part ended."""
    lines = ['| part | limit, s | status | s |', '|---|---|---|---|']
    for part in report.parts:
        seconds = '—' if part['seconds'] is None else f'{part["seconds"]:.0f}'
        lines.append(f'| {part["name"]} | {part["limit_s"]} | {part["status"]} | {seconds} |')
    return lines


def markdown(report: Report) -> str:
    """Return the report as the Markdown doc/performance.md takes."""
    env = report.environment
    if env:
        where = (f'{env.get("gpu", env["device"])}, torch {env["torch"]}, CUDA {env["cuda"]}, '
                 f'dtype auto = {env["dtype_auto"]}, commit {report.commit}, '
                 f'{report.started[:10]}')
    else:
        where = NOT_MEASURED
    tests = next((row['result'] if row['status'] == 'measured' else row['status']
                  for row in report.tests), '—')
    dry_run = ' Dry run: tiny sizes, not figures.' if report.quick else ''
    sections = [
        f'Measured on: {where}.{dry_run}',
        f'CUDA tests (`pytest -m cuda`): {tests}.',
        '### Against the paper', '\n'.join(key_table(report)),
        '### `lrda speed`', '\n'.join(speed_table(report)),
        '### Per step', '\n'.join(steps_table(report)),
        '### Several cameras', '\n'.join(cameras_table(report)),
        '### Parts', f'{report.limits}.\n\n' + '\n'.join(parts_table(report))]
    return '\n\n'.join(sections) + '\n'


def write_report(report: Report, output: Path) -> None:
    """Write gpu_check.json and gpu_check.md (again)."""
    (output / 'gpu_check.json').write_text(json.dumps(report.as_json(), indent=2) + '\n')
    (output / 'gpu_check.md').write_text(markdown(report))


def part_environment(context: Context) -> dict[str, str]:
    """
    Return the variables the parts run with.

    The CPU dry run measures nothing: one thread per process (unless OMP_NUM_THREADS says
    otherwise), so that on a shared machine its processes do not wait on each other's threads
    (with two threads each on a loaded 2-core machine it ran five times longer).
    """
    if context.device == 'cpu':
        return {'OMP_NUM_THREADS': os.environ.get('OMP_NUM_THREADS', '1')}
    return {}


def run_plan(parts: Sequence[Part], context: Context, report: Report, output: Path,
             log: TextIO) -> bool:
    """Run the parts in order within TOTAL_S; return whether every one of them succeeded."""
    deadline = time.monotonic() + TOTAL_S - RESERVE_S

    def echo(line: str) -> None:
        print(line, flush=True)
        log.write(line + '\n')
        log.flush()

    for part in parts:
        limit = min(part.limit_s, deadline - time.monotonic())
        if limit < 1:
            echo(f'== {part.name}: not run, no time left')
            continue
        command = part.work.command(part.name, context)
        echo(f'== {part.name} (limit {limit:.0f} s): {" ".join(command)}')
        outcome = run_part(command, limit, lambda line, name=part.name: echo(f'[{name}] {line}'),
                           part_environment(context))
        report.record(part, outcome, part.work.read(part.name, context, outcome.output))
        write_report(report, output)
        echo(f'== {part.name}: {outcome.status} in {outcome.seconds:.0f} s')
        if part.name == 'environment' and outcome.status != 'ok':
            last = (outcome.output.strip().splitlines() or [outcome.status])[-1]
            echo(f'gpu_check: error: the environment check failed: {last}')
            return False
    return all(entry['status'] == 'ok' for entry in report.parts)


# -- the command line ------------------------------------------------------------------------


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
                        help='the dry run: its parts at tiny sizes (ViT-S, 224², 2 steps)')
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
