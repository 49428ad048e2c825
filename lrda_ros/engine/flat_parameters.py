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
Adapted weights as views of one contiguous buffer per dtype and device.

The steps' bookkeeping (keep the best iterate, undo a collapsed step, reset, restore) is the
same elementwise work on every adapted tensor: on separate tensors it is a kernel launch per
tensor and operation (a hundred and more per step for a DPT decoder's LoRA weights), on one
buffer a launch per operation, whatever the number of adapted layers. Each parameter stays
its own leaf (its own gradient, its own Adam state; modules and peft see nothing new): only
its storage is a slice of the buffer, with its shape and strides kept.

Each parameter starts at a multiple of :data:`ALIGNMENT_BYTES` in its buffer: Inductor
compiles for aligned inputs and copies a misaligned one aside at every call (a CUDA graph
does not take it as a static input), so the gaps between parameters are a few unused
elements.

Something that replaces a parameter's storage (``module.to(...)``, a memory-format change)
unbinds it; :attr:`FlatParameters.buffers` notices (a pointer comparison per parameter) and
binds again, copying the current values.
"""

from __future__ import annotations

from typing import Sequence

import torch


#: Where in a buffer each parameter starts: Inductor's input alignment (torch/_inductor/
#: utils.py, ALIGNMENT), rounded up to a cache line.
ALIGNMENT_BYTES = 64


def _aligned(offset: int, element_size: int) -> int:
    """Return ``offset`` (elements) rounded up to a multiple of ALIGNMENT_BYTES."""
    quantum = max(1, ALIGNMENT_BYTES // element_size)
    return -(-offset // quantum) * quantum


def _dense_strides(tensor: torch.Tensor) -> tuple[int, ...]:
    """Return the tensor's strides if they are a dense layout's, else the contiguous ones."""
    if tensor.dim() == 4 and tensor.is_contiguous(memory_format=torch.channels_last):
        return tensor.stride()
    return torch.empty(tensor.shape, device='meta').stride()


class FlatParameters:
    """Parameters whose values live in one contiguous buffer per (dtype, device)."""

    def __init__(self, parameters: Sequence[torch.Tensor]) -> None:
        self.parameters = list(parameters)
        #: Per buffer, the indices of its parameters, in buffer order.
        self.groups: list[list[int]] = []
        #: Per parameter, its buffer and its offset there.
        self._place: list[tuple[int, int]] = []
        self._buffers: list[torch.Tensor] = []
        self.bind()

    @torch.no_grad()
    def bind(self) -> None:
        """(Re)allocate the buffers and make each parameter a view there, values kept."""
        keys: dict[tuple[torch.dtype, torch.device], int] = {}
        self.groups = []
        for index, parameter in enumerate(self.parameters):
            key = (parameter.dtype, parameter.device)
            if key not in keys:
                keys[key] = len(self.groups)
                self.groups.append([])
            self.groups[keys[key]].append(index)
        self._buffers, self._place = [], [(0, 0)] * len(self.parameters)
        for group_index, group in enumerate(self.groups):
            first = self.parameters[group[0]]
            size = first.element_size()
            offsets, total = [], 0
            for index in group:
                offsets.append(_aligned(total, size))
                total = offsets[-1] + self.parameters[index].numel()
            # Zeros: the gaps take part in the buffer's elementwise work, as finite numbers.
            buffer = torch.zeros(_aligned(total, size), dtype=first.dtype, device=first.device)
            for index, offset in zip(group, offsets):
                parameter = self.parameters[index]
                view = buffer.as_strided(parameter.shape, _dense_strides(parameter), offset)
                view.copy_(parameter.detach())
                parameter.data = view
                self._place[index] = (group_index, offset)
            self._buffers.append(buffer)

    def bound(self) -> bool:
        """Return whether every parameter still lives where :meth:`bind` put it."""
        for parameter, (group, offset) in zip(self.parameters, self._place):
            buffer = self._buffers[group]
            expected = buffer.data_ptr() + offset * buffer.element_size()
            if parameter.data_ptr() != expected or parameter.dtype != buffer.dtype:
                return False
        return True

    @property
    def buffers(self) -> list[torch.Tensor]:
        """Return one tensor per dtype and device holding the values, binding again if unbound."""
        if not self.bound():
            self.bind()
        return self._buffers

    def clone_buffers(self) -> list[torch.Tensor]:
        """Return copies of the buffers: the current values, one tensor per buffer."""
        return [buffer.detach().clone() for buffer in self.buffers]

    def views(self, buffers: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """Return a view per parameter (shape and strides) of tensors laid out as the buffers."""
        views = []
        for parameter, (group, offset) in zip(self.parameters, self._place):
            views.append(buffers[group].as_strided(parameter.shape, parameter.stride(),
                                                   offset))
        return views

    @torch.no_grad()
    def copy_from(self, buffers: Sequence[torch.Tensor]) -> None:
        """Write buffers laid out as these (from :meth:`clone_buffers`) into the parameters."""
        for buffer, source in zip(self.buffers, buffers):
            buffer.copy_(source)
