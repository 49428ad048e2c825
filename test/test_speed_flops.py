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


"""The operation count of benchmarks/compute_floor.py: the CPU's attention kernels counted."""

from lrda_ros.speed.flops import counted_flops
import pytest
import torch
from torch.nn.attention import sdpa_kernel, SDPBackend
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

BATCH, HEADS, QUERIES, KEYS, DIM = 2, 3, 10, 12, 8
#: One product of the scores and one of the values: 2 * (2 b h s_q s_k d) by hand.
FORWARD = 4 * BATCH * HEADS * QUERIES * KEYS * DIM


def _inputs(requires_grad: bool = False) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(0)
    shapes = [(BATCH, HEADS, QUERIES, DIM), (BATCH, HEADS, KEYS, DIM), (BATCH, HEADS, KEYS, DIM)]
    return tuple(torch.randn(shape, generator=generator).requires_grad_(requires_grad)
                 for shape in shapes)


def _flash(query, key, value) -> torch.Tensor:
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):  # the CPU kernel the encoders run
        return F.scaled_dot_product_attention(query, key, value)


def _by_products(query, key, value) -> torch.Tensor:
    scores = query @ key.transpose(-1, -2) / DIM ** 0.5
    return scores.softmax(-1) @ value


class _Operators(TorchDispatchMode):
    """Record the name of every operator run."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.add(func.__name__)
        return func(*args, **(kwargs or {}))


def test_the_cpu_attention_counts_its_two_products():
    with _Operators() as operators:
        _flash(*_inputs())
    assert '_scaled_dot_product_flash_attention_for_cpu.default' in operators.names
    flops, output = counted_flops(lambda: _flash(*_inputs()))
    assert flops == FORWARD
    # The same attention written as matrix products, counted by PyTorch's own formulas.
    with FlopCounterMode(display=False) as counter:
        reference = _by_products(*_inputs())
    assert counter.get_total_flops() == FORWARD
    torch.testing.assert_close(output, reference, rtol=1e-5, atol=1e-5)


def test_the_cpu_attention_backward_counts_as_on_cuda():
    query, key, value = _inputs(requires_grad=True)

    def forward_and_backward() -> None:
        _flash(query, key, value).sum().backward()

    flops, _ = counted_flops(forward_and_backward)
    # PyTorch's flash backward (CUDA's formula): the scores again, then four products.
    assert flops == FORWARD + 5 * FORWARD // 2


@pytest.mark.parametrize('size', [(8, 8), (16, 24)])
def test_other_operations_count_as_pytorch_counts_them(size):
    layer = torch.nn.Conv2d(3, 4, 3, padding=1)
    image = torch.randn(1, 3, *size)
    with FlopCounterMode(display=False) as counter:
        layer(image)
    flops, _ = counted_flops(lambda: layer(image))
    assert flops == counter.get_total_flops() == 2 * 3 * 4 * 9 * size[0] * size[1]
