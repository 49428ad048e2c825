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

Also what in a call makes the host wait for the device (``host_synchronizations``).

On the CPU, torch allocates from the C heap, so the peak is the largest growth of the bytes in
use (glibc ``mallinfo2``: small blocks plus mmapped ones) over the call's start, sampled every
50 ms by a background thread. Unlike the resident set size, this does not stay high
after memory is freed, so consecutive measurements in one process are comparable; it can miss
spikes shorter than the sampling period. The period is a trade-off: ``mallinfo2`` walks the
heap's free lists under its lock, so sampling every 10 ms slowed a VGA TTO frame by about 4 %,
every 50 ms by about 1 %, while a TTO step's peak lasts through its backward pass (tens to
hundreds of milliseconds) and recurs every step. Without glibc it falls back to resident-set
growth.
"""

from __future__ import annotations

from contextlib import contextmanager
import ctypes
from dataclasses import dataclass
import os
import threading
import time
from typing import Iterator
import warnings

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

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
        self.device = torch.device(device)
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
        if self.device.type == 'cuda':
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
        if self.device.type == 'cuda':
            torch.cuda.synchronize(self.device)
            peak = torch.cuda.max_memory_allocated(self.device)
        else:
            self._stop.set()
            self._sampler.join()
            peak = max(self._peak, self._cpu_bytes())
        self.result.seconds = time.perf_counter() - self._start
        self.result.peak_bytes = max(0, peak - self._baseline)


aten = torch.ops.aten

#: ATen operations whose output value or shape the host must read from the device.
HOST_READ_OPS = {
    aten._local_scalar_dense.default, aten.nonzero.default, aten.nonzero_static.default,
    aten.masked_select.default, aten._unique2.default, aten.unique_dim.default,
    aten.unique_consecutive.default, aten.bincount.default, aten.repeat_interleave.Tensor,
    aten.is_nonzero.default, aten.equal.default, aten.allclose.default,
}
#: Tensor methods that copy device memory to the host without an ATen operation.
HOST_READ_METHODS = {torch.Tensor.tolist, torch.Tensor.numpy, torch.Tensor.cpu,
                     torch.Tensor.item}
INDEX_OPS = {aten.index.Tensor, aten.index_put.default, aten.index_put_.default,
             aten._index_put_impl_.default}


class HostReads(TorchDispatchMode):
    """
    Count the ATen operations that read device values on the host.

    ``aten._local_scalar_dense`` behind ``.item()``/``float()``/``bool()``, ``nonzero``,
    ``masked_select``, ``unique``, indexing with a boolean mask, other data-dependent shapes.
    They run on CPU tensors too, where nothing waits: so they are counted on any device.
    """

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in HOST_READ_OPS:
            self.ops.append(str(func))
        elif func in INDEX_OPS and any(
                isinstance(i, torch.Tensor) and i.dtype == torch.bool
                for i in (args[1] or ())):
            self.ops.append(f'{func} with a boolean mask')
        return func(*args, **(kwargs or {}))


class HostCopies(TorchFunctionMode):
    """Count ``.tolist()``, ``.numpy()``, ``.cpu()`` and ``.item()`` (no ATen call for some)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in HOST_READ_METHODS:
            self.ops.append(func.__name__)
        return func(*args, **(kwargs or {}))


#: How torch.cuda's sync debug mode ('warn') words each synchronization.
_CUDA_SYNC_WARNING = 'synchronizing CUDA operation'


@contextmanager
def host_synchronizations(device: torch.device | str) -> Iterator[list[str]]:
    """
    Yield a list that names, once the block ends, each time the block made the host wait.

    On CUDA, the synchronizations themselves, as torch.cuda's sync debug mode reports them;
    on other devices nothing waits, so the operations that would (HostReads, HostCopies).
    """
    found: list[str] = []
    if torch.device(device).type != 'cuda':
        reads, copies = HostReads(), HostCopies()
        with copies, reads:
            yield found
        found.extend(reads.ops + copies.ops)
        return
    previous = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        torch.cuda.set_sync_debug_mode('warn')
        try:
            yield found
        finally:
            torch.cuda.set_sync_debug_mode(previous)
    found.extend(str(warning.message).splitlines()[0] for warning in caught
                 if _CUDA_SYNC_WARNING in str(warning.message))
