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
``compile: true``: whole optimization steps and the final decode under ``torch.compile``.

A step after a frame's first is one graph (engine/whole_step.py: the loss, its gradient, the
step rules and Adam; a CUDA graph per step on CUDA), the decode another, both whole
(``fullgraph=True``: a graph break is an error, not a slow path) with static shapes
(``dynamic=False``) except the sizes that follow the LiDAR points, marked dynamic
(:func:`mark_points_dynamic`): a new resolution compiles once (on a synthetic frame before its
first one: engine/warm_up.py), and its frames, whatever their point count, reuse the graphs.
Those sizes are padded to buckets (:func:`padded_samples`,
``SparseHeadPlan.build(fixed_shapes=True)``), since a CUDA
graph replays fixed sizes: frames whose counts share a bucket replay the same CUDA graph
instead of recording one each. The sparse head then reads all of conv1's rows, not only those
the LiDAR reaches (Dynamo specializes a graph to such host numbers: every new first row
compiled again, a minute each at VGA on a CPU). The sparse head is kept: its
gathers are a custom operator with its shape and gradient registered
(engine/resampling.py). A frame's first step runs eagerly: it builds what a frame computes
once (the sparse head's gathers, the frozen layers' outputs) and Adam's state, which the
compiled steps read. Decoder tail strips (checkpointing) and the scopes that re-encode (the
encoder's backward, untested) are rejected at start-up.
"""

from __future__ import annotations

from typing import Callable, TypeVar

import torch

from .completion import SparseSamples
from .config import TTOConfig
from ..errors import ConfigError

Function = TypeVar('Function', bound=Callable)


def check_compile(model, config: TTOConfig, reencodes: bool) -> None:
    """Raise ConfigError (field ``compile``) if ``compile: true`` cannot run, saying why."""
    if not config.compile:
        return
    reasons = [
        (not getattr(model, 'dpt_decoder', False),
         f"compile: true compiles Depth Anything V2's DPT decoder, not {type(model).__name__}'s"),
        (config.tail_strips > 1,
         'compile: true needs tail_strips: 1 (checkpointed strips are not compiled)'),
        (reencodes,
         f'compile: true compiles decoder steps; scope {config.scope.value} re-encodes with '
         'autograd at every step: use scope decoder_lora or decoder_full'),
    ]
    for failed, reason in reasons:
        if failed:
            raise ConfigError(f'{reason}, or set compile: false', field='compile')


def compiled(function: Function, backend: str = 'inductor') -> Function:
    """Return ``function`` under torch.compile: one whole graph, static shapes."""
    return torch.compile(function, dynamic=False, fullgraph=True, backend=backend)


#: Sizes per doubling a padded count can take (:func:`bucket_size`): at most 1/8 padding.
BUCKETS_PER_DOUBLING = 8


def bucket_size(count: int) -> int:
    """
    Return ``count`` rounded up to one of a few sizes (at most 12.5 % more, at least 8).

    A CUDA graph replays fixed sizes: a frame's LiDAR count padded to a bucket lets later
    frames replay the graphs of earlier ones (a new count would record anew every frame).
    """
    count = max(count, BUCKETS_PER_DOUBLING)
    quantum = 1 << max(0, count.bit_length() - BUCKETS_PER_DOUBLING.bit_length())
    return -(-count // quantum) * quantum


def padded_samples(samples: SparseSamples, target: torch.Tensor
                   ) -> tuple[SparseSamples, torch.Tensor]:
    """
    Return the samples and target padded to :func:`bucket_size`, with their weights.

    The padding repeats the first sample (a real pixel, so every gather stays in bounds) with
    weight 0: the loss, its fit and its gradient leave it out (engine/alignment.py).
    """
    count = samples.rows.numel()
    extra = bucket_size(count) - count
    device = samples.rows.device
    positions = torch.arange(count + extra, device=device)
    real = positions < count
    repeat = torch.where(real, positions, 0)
    weights = real.to(torch.float32)
    return (SparseSamples(samples.rows[repeat], samples.cols[repeat], samples.depth[repeat],
                          weights), target[repeat])


def mark_points_dynamic(*tensors: torch.Tensor) -> None:
    """Let the point count (dim 0) vary between frames without compiling again."""
    for tensor in tensors:
        # 'maybe': a size Dynamo proves constant (a frame of one point) is no error.
        torch._dynamo.maybe_mark_dynamic(tensor, 0)
