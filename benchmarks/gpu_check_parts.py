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
What the GPU check measures: its parts, the rows each fills and their time limits.

A part is a step of the check with a time limit (``Part``); what it runs is one of the kinds
below: the environment check and the per-step and camera figures run in a process of this
script (``InProcess``; their measurements are in gpu_check_figures), the ``cuda`` tests run
under pytest, and the speed rows run ``lrda speed``. ``PLAN`` is the GPU plan, most important
first; ``build_plan`` gives it, or the dry run's (``QUICK``), or some of its parts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
import importlib
import json
from pathlib import Path
import platform
import re
import sys
from typing import ClassVar, Sequence

from gpu_check_sizes import FAILED, NOT_MEASURED, OUT_OF_MEMORY, SCHEDULE, Sizes

ROOT = Path(__file__).resolve().parents[1]
#: The script the in-process parts run in (``gpu_check.py --part NAME``).
SCRIPT = Path(__file__).resolve().with_name('gpu_check.py')
#: Wall time the whole command may take, and what of it is kept for start-up and reports.
TOTAL_S = 480
RESERVE_S = 15
#: Modules the speed path imports (beside the standard library and this package).
REQUIRED_MODULES = ('torch', 'numpy', 'transformers', 'peft', 'safetensors', 'huggingface_hub',
                    'PIL', 'yaml', 'tqdm', 'matplotlib', 'pytest')


class UsageError(ValueError):
    """A bad option: printed as one line."""


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
        return [sys.executable, str(SCRIPT), '--device', context.device,
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
    #: Also compiled whole steps (a CUDA graph each) beside the eager ones.
    graph: bool = False

    table: ClassVar[str] = 'steps'

    def planned(self, context: Context) -> list[dict]:
        """Return the row the part fills."""
        return [{'backbone': context.sizes.backbone(self.backbone),
                 'resolution': context.sizes.resolution(self.resolution), 'dtype': self.dtype,
                 'status': NOT_MEASURED}]

    def measure(self, context: Context) -> dict:
        """Count, time and divide: see step_figures."""
        from gpu_check_figures import step_figures

        row, = self.planned(context)
        return {**row, 'status': 'measured', **step_figures(
            row['backbone'], row['resolution'], self.dtype, context.device, context.sizes,
            self.graph)}


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
        from gpu_check_figures import camera_figures

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


@dataclass
class Outcome:
    """How a part ended."""

    status: str
    seconds: float
    output: str = ''


#: The GPU plan, most important first. The limits were set before any GPU ran the script
#: (DA3-Small's rows took 10 s each from the ViT-L FHD prompt and step parts):
#: per process about 5 s of start-up (imports, CUDA, the model at random), then the frames.
PLAN = (
    Part('environment', 15, Environment(), quick=True),
    Part('vits-vga', 40, BenchRun(('vits',), ('vga',), ('lrda', 'lrda-warm', 'prompt')),
         quick=True),
    Part('vitl-fhd', 45, BenchRun(('vitl',), ('fhd',), ('lrda', 'lrda-warm'))),
    Part('vitl-fhd-prompt', 30, BenchRun(('vitl',), ('fhd',), ('prompt',))),
    Part('tests', 25, Tests(), quick=True),
    Part('steps-vits-vga', 60, StepRun('vits', 'vga', graph=True), quick=True),
    Part('steps-vitl-fhd', 20, StepRun('vitl', 'fhd')),
    Part('vitl-fhd-strips', 30, BenchRun(('vitl',), ('fhd',), ('lrda-strips',))),
    Part('vits-vga-float32', 30, BenchRun(('vits',), ('vga',), ('lrda', 'lrda-warm'),
                                          dtype='float32')),
    Part('vitl-fhd-float32', 25, BenchRun(('vitl',), ('fhd',), ('lrda',), dtype='float32')),
    Part('vits-vga-compile', 45, BenchRun(('vits', 'da3-small'), ('vga',), ('lrda',),
                                          compile=True)),
    Part('unidepth-vga', 30, BenchRun(('unidepth-vits', 'unidepth-vitl'), ('vga',), ('lrda',))),
    Part('cameras', 20, CameraRun('vitl', 'vga'), quick=True),
    Part('vga-rest', 30, BenchRun(('vitb', 'vitl', 'da3-small'), ('vga',), ('lrda',))),
    Part('fhd-rest', 20, BenchRun(('vits', 'vitb'), ('fhd',), ('lrda',))),
)
#: The dry run's limits: a loaded 2-core CPU, tiny sizes. Measured at 56² on an idle 2-core
#: AMD EPYC without bfloat16 instructions (AVX2): 8, 41, 7, 19 and 15 s, most of it the
#: processes' imports (``lrda speed`` starts one per configuration).
QUICK_LIMITS_S = {'environment': 30, 'vits-vga': 120, 'tests': 60, 'steps-vits-vga': 195,
                  'cameras': 60}
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
