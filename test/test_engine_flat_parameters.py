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

"""Adapted weights in flat buffers, and the step bookkeeping's launches that do not grow."""

from __future__ import annotations

from conftest import smooth_image, tiny_network
from lrda_ros.engine import DepthCompleter, DepthModel, TTOConfig
from lrda_ros.engine.flat_parameters import ALIGNMENT_BYTES, FlatParameters
from lrda_ros.engine.steps import StepRules
from lrda_ros.speed.launches import LaunchCounter
import numpy as np
import pytest
import torch


def parameters() -> list[torch.nn.Parameter]:
    """Return parameters of two dtypes, one of them channels-last."""
    torch.manual_seed(0)
    conv = torch.randn(8, 6, 3, 3).contiguous(memory_format=torch.channels_last)
    return [torch.nn.Parameter(conv), torch.nn.Parameter(torch.randn(5, 7)),
            torch.nn.Parameter(torch.randn(4, dtype=torch.float64)),
            torch.nn.Parameter(torch.randn(3, 2))]


def test_parameters_become_views_of_one_buffer_per_dtype_with_their_values_and_layout():
    params = parameters()
    before = [(p.detach().clone(), p.stride()) for p in params]
    flat = FlatParameters(params)
    assert [b.dtype for b in flat.buffers] == [torch.float32, torch.float64]
    # Each parameter starts 64 bytes in (16 float32, 8 float64): Inductor's aligned inputs.
    assert [b.numel() for b in flat.buffers] == [8 * 6 * 9 + 48 + 16, 8]
    for parameter, (value, stride) in zip(params, before):
        assert torch.equal(parameter, value) and parameter.stride() == stride
    # Each float32 parameter lies in the buffer, one after the other, in order.
    buffer = flat.buffers[0]
    offsets = [(p.data_ptr() - buffer.data_ptr()) // 4 for p in (params[0], params[1], params[3])]
    assert offsets == [0, 432, 480]
    assert all(offset * 4 % ALIGNMENT_BYTES == 0 for offset in offsets)
    with torch.no_grad():
        buffer.zero_()
    assert not params[1].detach().any()  # the parameters read the buffer


def test_gradients_and_adam_stay_per_parameter_and_write_through_the_buffer():
    params = parameters()
    reference = [torch.nn.Parameter(p.detach().clone()) for p in params]
    flat = FlatParameters(params)
    for group in (params, reference):
        loss = sum((p.double() ** 2).sum() * (i + 1) for i, p in enumerate(group))
        loss.backward()
        torch.optim.Adam(group, lr=0.1).step()
    for ours, theirs in zip(params, reference):
        assert torch.equal(ours.grad, theirs.grad) and torch.equal(ours, theirs)
    assert flat.bound()  # the optimizer updated in place: the buffers hold the new values
    assert torch.equal(flat.views(flat.buffers)[1], reference[1])


def test_a_parameter_whose_storage_was_replaced_is_bound_again_with_its_new_values():
    params = parameters()
    flat = FlatParameters(params)
    params[1].data = torch.full((5, 7), 3.0)  # what module.to() or a memory-format change do
    assert not flat.bound()
    buffers = flat.buffers
    assert flat.bound() and torch.equal(params[1], torch.full((5, 7), 3.0))
    assert params[1].data_ptr() == buffers[0].data_ptr() + 432 * 4


def test_copies_restore_every_parameter_in_one_operation_per_buffer():
    params = parameters()
    flat = FlatParameters(params)
    saved = flat.clone_buffers()
    with torch.no_grad():
        for p in params:
            p.add_(1.0)
    with LaunchCounter() as counter:
        flat.copy_from(saved)
    assert counter.by_operator == {'copy_': 2}
    assert all(torch.equal(p, v) for p, v in zip(params, flat.views(saved)))


def frame():
    rng = np.random.default_rng(4)
    image = smooth_image(5, 60, 80)
    sparse = np.zeros(image.shape[:2], np.float32)
    sparse.flat[rng.choice(sparse.size, 250, replace=False)] = rng.uniform(2, 6, 250)
    return image, sparse


def bookkeeping_launches_per_step(target_modules: tuple[str, ...], dtype: str
                                  ) -> tuple[int, int]:
    """Return the step rules' and Adam's launches in a frame's last step, and the tensors."""
    completer = DepthCompleter(DepthModel(tiny_network(seed=2)), TTOConfig(
        device='cpu', dtype=dtype, iterations=4, convergence_tol=0.0,  # every step runs
        target_modules=target_modules))  # with the guards ('paper' keeps no best weights)
    counts = []
    decide, apply = StepRules.decide, StepRules.apply

    def counted_decide(self, *args, **kwargs):
        counts.append(LaunchCounter())
        with counts[-1]:
            decide(self, *args, **kwargs)

    def counted_apply(self, *args):
        with counts[-1]:
            apply(self, *args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(StepRules, 'decide', counted_decide)
        patch.setattr(StepRules, 'apply', counted_apply)
        result = completer.complete(*frame())
    assert result.iterations == len(counts) == 4
    # Not the first step: Adam allocates its state there, a few tensors per parameter once.
    return counts[-1].total, len(completer.adaptation.parameters)


@pytest.mark.parametrize('dtype', ['float32', 'bfloat16'])
def test_the_step_rules_and_adam_launch_as_many_operations_whatever_the_layers_adapted(dtype):
    few = bookkeeping_launches_per_step(('head.conv3',), dtype)
    many = bookkeeping_launches_per_step((), dtype)  # every decoder layer
    assert many[1] >= 10 * few[1]  # tensors adapted: 2 against dozens
    assert many[0] == few[0]
    assert many[0] <= 40  # a few dozen scalar operations, the buffers' and fused Adam's
