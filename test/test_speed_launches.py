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

"""The launch counter: which operations launch kernels, and the count per step."""

from __future__ import annotations

from lrda_ros.speed.launches import LaunchCounter, step_launches
import pytest
import torch


def test_views_allocations_and_metadata_launch_nothing_arithmetic_does():
    x = torch.randn(4, 6)
    with LaunchCounter() as counter:
        y = x.reshape(24).view(6, 4).t().unsqueeze(0).expand(2, 4, 6)  # views only
        torch.empty(3)
        x.detach()
        z = (y + 1).relu().sum()  # three kernels
        z.item()
    assert counter.by_operator == {'add': 1, 'relu': 1, 'sum': 1, '_local_scalar_dense': 1}
    assert counter.total == 4


def test_a_backward_pass_is_counted_too():
    weight = torch.randn(3, 3, requires_grad=True)
    x = torch.randn(5, 3)
    with LaunchCounter() as counter:
        (x @ weight).square().sum().backward()
    # forward: mm, pow, sum; backward: ones_like (the seed), expand (a view) of it,
    # pow's backward (pow, mul, mul), mm's weight gradient (mm)
    assert counter.by_operator['mm'] == 2 and counter.by_operator['sum'] == 1
    assert 'expand' not in counter.by_operator and 't' not in counter.by_operator


def test_per_step_is_the_difference_of_two_frames_and_the_rest_is_the_frames():
    x = torch.randn(8)

    def run_frame(steps: int) -> int:
        y = x * 2  # once a frame: 1 launch
        for _ in range(steps):
            y = (y + 1).exp().neg()  # 3 launches a step
        y.sum()  # 1 launch
        return steps

    counted = step_launches(run_frame, short=2, long=5, by_source=True)
    assert counted.per_step == 3 and counted.outside_steps == 2
    assert counted.by_operator == {'add': 1, 'exp': 1, 'neg': 1}
    assert sum(counted.by_source.values()) == 3  # issued outside the package: '(outside)'


def test_a_frame_that_stops_early_is_refused():
    with pytest.raises(RuntimeError, match='ran 2'):
        step_launches(lambda steps: 2)


def test_a_custom_operator_counts_as_the_operations_it_runs():
    from lrda_ros.engine.resampling import bilinear_matrix, gathered_product, GatherPair

    matrix = bilinear_matrix(torch.tensor([0, 5, 7]), (4, 4), (2, 2))
    pair = GatherPair.of(matrix, torch.float32)
    dense = torch.randn(4, 3)
    with LaunchCounter() as counter:
        gathered_product(pair, dense)
    assert 'gathered_product' not in counter.by_operator
    assert sum(n for name, n in counter.by_operator.items() if 'embedding_bag' in name) == 1
