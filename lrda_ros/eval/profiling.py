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
Wall time and peak memory of one call, on CUDA (allocator peak) or the CPU (sampled heap).

On the CPU, torch allocates from the C heap, so the peak is the largest growth of the bytes in
use (glibc ``mallinfo2``: small blocks plus mmapped ones) over the call's start, sampled every
50 ms by a background thread. Unlike the resident set size, this does not stay high
after memory is freed, so consecutive measurements in one process are comparable; it can miss
spikes shorter than the sampling period. The period is a trade-off: ``mallinfo2`` walks the
heap's free lists under its lock, so sampling every 10 ms slowed a VGA TTO frame by about 4 %,
every 50 ms by about 1 %, while a TTO step's peak lasts through its backward pass (tens to
hundreds of milliseconds) and recurs every step. Without glibc it falls back to resident-set
growth. torch is imported for a CUDA device only: a process that measures on the CPU, or never
measures (a node or command that stops at a bad parameter), does without its seconds of import.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
import os
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

_PAGE_BYTES = os.sysconf('SC_PAGE_SIZE') if hasattr(os, 'sysconf') else 4096


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        'arena', 'ordblks', 'smblks', 'hblks', 'hblkhd', 'usmblks', 'fsmblks', 'uordblks',
        'fordblks', 'keepcost')]


def _heap_reader():
    """Return a function giving the heap bytes in use, or None without glibc's mallinfo2."""
    try:
        libc = ctypes.CDLL('libc.so.6')
        mallinfo2 = libc.mallinfo2
    except (OSError, AttributeError):
        return None
    mallinfo2.restype = _MallInfo2

    def in_use() -> int:
        info = mallinfo2()
        return int(info.uordblks + info.hblkhd)
    return in_use


def resident_bytes() -> int:
    """Return this process's resident set size in bytes (0 where /proc is missing)."""
    try:
        with open('/proc/self/statm') as statm:
            return int(statm.read().split()[1]) * _PAGE_BYTES
    except OSError:
        return 0


def _is_cuda(device: torch.device | str) -> bool:
    """Return whether a device (a torch.device or its name: 'cuda', 'cuda:1') is CUDA."""
    return str(getattr(device, 'type', device)).split(':')[0] == 'cuda'


@dataclass
class Measurement:
    """Result of :class:`Measure`."""

    seconds: float = 0.0
    peak_bytes: int = 0

    @property
    def peak_mb(self) -> float:
        """Return the peak in MiB."""
        return self.peak_bytes / 2**20


class Measure:
    """Context manager timing a block and recording its peak memory on ``device``."""

    def __init__(self, device: torch.device | str = 'cpu', sample_period_s: float = 0.05):
        self._cuda = _is_cuda(device)
        if self._cuda:  # the allocator's peak; the CPU's heap is read without torch
            import torch

            device = torch.device(device)
        #: A torch.device on CUDA; on the CPU the device as given.
        self.device = device
        self._cpu_bytes = _heap_reader() or resident_bytes
        self.sample_period_s = sample_period_s
        self.result = Measurement()
        self._stop = threading.Event()
        self._baseline = 0
        self._peak = 0
        self._sampler: threading.Thread | None = None

    def _sample(self) -> None:
        while not self._stop.wait(self.sample_period_s):
            self._peak = max(self._peak, self._cpu_bytes())

    def __enter__(self) -> Measurement:
        if self._cuda:
            import torch

            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self._baseline = torch.cuda.memory_allocated(self.device)
        else:
            self._baseline = self._peak = self._cpu_bytes()
            self._sampler = threading.Thread(target=self._sample, daemon=True)
            self._sampler.start()
        self._start = time.perf_counter()
        return self.result

    def __exit__(self, *exc: object) -> None:
        if self._cuda:
            import torch

            torch.cuda.synchronize(self.device)
            peak = torch.cuda.max_memory_allocated(self.device)
        else:
            self._stop.set()
            self._sampler.join()
            peak = max(self._peak, self._cpu_bytes())
        self.result.seconds = time.perf_counter() - self._start
        self.result.peak_bytes = max(0, peak - self._baseline)
