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
The floating-point operations of a computation, as PyTorch's FlopCounterMode counts them.

FlopCounterMode knows the attention kernels of CUDA (flash, memory-efficient, cuDNN) but not
the CPU's (``_scaled_dot_product_flash_attention_for_cpu`` and its backward), which it counts
as nothing: a ViT-S encoder pass at VGA would lose 45 of its 112 GFLOP. The CPU kernels get
PyTorch's own formulas for the CUDA ones (the same products), so the count is the same on
every device.
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

import torch
from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

_Result = TypeVar('_Result')


def _cpu_attention(query_shape, key_shape, value_shape, *args: Any,
                   out_shape=None, **kwargs: Any) -> int:
    return sdpa_flop_count(query_shape, key_shape, value_shape)


def _cpu_attention_backward(grad_out_shape, query_shape, key_shape, value_shape, *args: Any,
                            out_shape=None, **kwargs: Any) -> int:
    return sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)


def _cpu_formulas() -> dict:
    aten = torch.ops.aten
    return {aten._scaled_dot_product_flash_attention_for_cpu: _cpu_attention,
            aten._scaled_dot_product_flash_attention_for_cpu_backward: _cpu_attention_backward}


def flop_counter() -> FlopCounterMode:
    """Return a silent FlopCounterMode that also counts the CPU's attention kernels."""
    return FlopCounterMode(display=False, custom_mapping=_cpu_formulas())


def counted_flops(function: Callable[[], _Result]) -> tuple[int, _Result]:
    """Run ``function``; return the operations it computed and its result."""
    with flop_counter() as counter:
        result = function()
    return counter.get_total_flops(), result
