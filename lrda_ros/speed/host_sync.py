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
What in a block of code makes the host wait for the device (:func:`host_synchronizations`).

A GPU runs ahead of the host until the host reads a value it computed; each such read inside
the optimization steps costs the device's lead. On CUDA the waits themselves are counted; on
the CPU, where nothing waits, the operations that would wait on a GPU.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator
import warnings

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

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
