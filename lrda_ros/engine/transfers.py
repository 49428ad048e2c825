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
A frame's copies between host and device: queued uploads, one wait for the results.

On CUDA a copy from pageable host memory makes the host wait until it is done, and each
``.cpu()`` waits for everything queued before it: a frame uploads its arrays from pinned
memory without waiting (the host goes on queueing kernels) and reads its results back with
one synchronization at its end. On the CPU both are plain tensors (no copy where none is
needed).
"""

from __future__ import annotations

import numpy as np
import torch


def to_device(array: np.ndarray, device: torch.device) -> torch.Tensor:
    """Return ``array`` on ``device``: on CUDA from pinned memory, the host not waiting."""
    tensor = torch.from_numpy(np.ascontiguousarray(array))
    if device.type != 'cuda':
        return tensor.to(device)
    # The pinned staging tensor may be let go at once: PyTorch's pinned-memory allocator
    # reuses it only after the copy it was queued for has run.
    return tensor.pin_memory().to(device, non_blocking=True)


def to_host(*tensors: torch.Tensor | None) -> list[np.ndarray | None]:
    """
    Return the tensors as NumPy arrays (None stays None), with one wait for the device.

    CUDA tensors are copied into pinned memory without blocking, then the host waits once
    for the device's stream before reading any of them.
    """
    copies: list[torch.Tensor | None] = []
    wait_for: list[torch.device] = []
    for tensor in tensors:
        if tensor is None or tensor.device.type != 'cuda':
            copies.append(None if tensor is None else tensor.detach().cpu())
            continue
        host = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True)
        copies.append(host.copy_(tensor.detach(), non_blocking=True))
        if tensor.device not in wait_for:
            wait_for.append(tensor.device)
    for device in wait_for:
        torch.cuda.current_stream(device).synchronize()
    return [None if copy is None else copy.numpy() for copy in copies]
