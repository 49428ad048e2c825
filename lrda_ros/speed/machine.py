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
What a measurement ran on: the one machine description every speed report records.

A time or throughput means little without the precision it was computed in, the kernel family
torch dispatched to (``torch.backends.cpu.get_cpu_capability()``: ``AVX512``, ``AVX2``,
``DEFAULT``; ``ATEN_CPU_CAPABILITY`` lowers it), the number of threads and the CPU model:
``lrda speed`` (speed.json, speed.md), ``benchmarks/compute_floor.py`` and
``benchmarks/backends.py`` record them through :func:`machine_description`.
"""

from __future__ import annotations

from pathlib import Path
import platform
from typing import Any

import torch

from ..engine.model import resolve_device
from ..engine.precision import resolve_precision

CPUINFO = Path('/proc/cpuinfo')


def cpu_model() -> str:
    """Return the CPU's model name (``/proc/cpuinfo`` on Linux, else what platform says)."""
    try:
        for line in CPUINFO.read_text().splitlines():
            if line.startswith('model name'):
                return line.partition(':')[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_description(device: torch.device | str, dtype: str) -> dict[str, Any]:
    """
    Return what a measurement on ``device`` in precision ``dtype`` depends on besides the code.

    ``dtype`` as asked for (``auto`` too): the report names the precision it resolves to on
    this device. Keys: device, dtype, cpu_capability, threads, cpu, torch (and gpu on CUDA).
    """
    device = resolve_device(device)
    description = {'device': str(device), 'dtype': resolve_precision(device, dtype),
                   'cpu_capability': torch.backends.cpu.get_cpu_capability(),
                   'threads': torch.get_num_threads(), 'cpu': cpu_model(),
                   'torch': torch.__version__}
    if device.type == 'cuda':
        description['gpu'] = torch.cuda.get_device_name(device)
    return description


def machine_line(description: dict[str, Any]) -> str:
    """Return a machine description as the one line a report opens with."""
    return 'machine: ' + ', '.join(f'{key} {value}' for key, value in description.items())
