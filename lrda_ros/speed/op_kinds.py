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
Where a frame's time goes, by kind of work: a ``torch.profiler`` trace sorted into a table.

Every operator's *self* time (its own, without the operators it calls) is given to one kind:
convolutions, matrix products and attention, dtype casts (a copy inside ``aten::_to_copy``:
a tensor changing precision or device), other copies, elementwise work, resampling, the
sparse head's gathers and index set-up, the optimizer (anything inside ``Optimizer.step``),
or other. The sum is the frame's CPU time as the profiler saw it, which runs a little above
the frame's wall time (the profiler's own cost per call).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable

import torch
from torch.profiler import profile, ProfilerActivity

#: The kinds in the order a table lists them.
KINDS = ('convolution', 'matmul/attention', 'dtype cast', 'other copy', 'elementwise',
         'resampling', 'sparse gather/setup', 'optimizer', 'other')

_CONVOLUTION = ('convolution', 'conv2d', 'conv_transpose', 'mkldnn_convolution', 'slow_conv')
_MATMUL = ('aten::mm', 'aten::addmm', 'aten::bmm', 'aten::baddbmm', 'aten::matmul',
           'aten::linear', 'dot_product', 'attention', 'aten::_addmm_activation')
_RESAMPLING = ('upsample', 'grid_sampler', 'interpolate', 'adaptive_avg_pool')
_GATHER = ('embedding_bag', 'aten::sort', 'aten::unique', 'aten::_unique', 'aten::index',
           'index_select', 'aten::gather', 'scatter', 'nonzero', 'searchsorted', 'sparse',
           'aten::_to_sparse', 'index_put', 'aten::take')
_ELEMENTWISE = ('aten::add', 'aten::sub', 'aten::mul', 'aten::div', 'aten::where',
                'aten::relu', 'aten::clamp', 'threshold', 'aten::gelu', 'aten::fill_',
                'aten::zero_', 'aten::neg', 'aten::pow', 'aten::sqrt', 'aten::exp',
                'aten::sum', 'aten::mean', 'aten::eq', 'aten::ne', 'aten::lt', 'aten::gt',
                'aten::le', 'aten::ge', 'aten::bitwise', 'aten::logical', 'aten::isfinite',
                'aten::abs', 'aten::lerp', 'aten::addcmul', 'aten::addcdiv', 'aten::maximum',
                'aten::minimum', 'aten::sigmoid', 'aten::native_layer_norm', 'aten::layer_norm',
                'aten::native_layer_norm_backward', 'gelu_backward', 'aten::softmax',
                'aten::_softmax', 'aten::reciprocal', 'aten::rsub', 'aten::square',
                'aten::floor_divide', 'aten::remainder', 'aten::arange', 'aten::linspace',
                'aten::max', 'aten::min', 'aten::any', 'aten::all')


def kind_of(name: str, ancestors: tuple[str, ...]) -> str:
    """Return the kind of an operator named ``name`` called inside ``ancestors``."""
    if any(a.startswith('Optimizer.') or '_fused_adam' in a for a in ancestors + (name,)):
        return 'optimizer'
    if name == 'aten::copy_':
        return 'dtype cast' if 'aten::_to_copy' in ancestors else 'other copy'
    if any(part in name for part in _CONVOLUTION):
        return 'convolution'
    if any(name.startswith(part) or part in name for part in _MATMUL):
        return 'matmul/attention'
    if any(part in name for part in _RESAMPLING):
        return 'resampling'
    if any(part in name for part in _GATHER):
        return 'sparse gather/setup'
    if any(name.startswith(part) for part in _ELEMENTWISE):
        return 'elementwise'
    if 'copy' in name or name in ('aten::clone', 'aten::contiguous', 'aten::cat',
                                  'aten::stack'):
        return 'other copy'
    return 'other'


@dataclass
class KindProfile:
    """Self time (seconds) and operator calls by kind, of one profiled piece of work."""

    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    calls: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    #: Calls of ``aten::_to_copy`` (casts), counted on their own.
    casts: int = 0

    @property
    def total(self) -> float:
        """Return the profiled self time of all operators."""
        return sum(self.seconds.values())

    def share(self, *kinds: str) -> float:
        """Return the share of the total the named kinds take."""
        return sum(self.seconds[kind] for kind in kinds) / max(self.total, 1e-12)


def _ancestors(event) -> tuple[str, ...]:
    names = []
    parent = event.cpu_parent
    while parent is not None:
        names.append(parent.name)
        parent = parent.cpu_parent
    return tuple(names)


def profile_by_kind(work: Callable[[], object]) -> tuple[KindProfile, object]:
    """Run ``work`` once under the profiler; return its time by kind and its result."""
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        result = work()
    kinds = KindProfile()
    for event in profiler.events():
        if event.device_type != torch.autograd.DeviceType.CPU:
            continue
        ancestors = _ancestors(event)
        name = event.name
        if not name.startswith('aten::'):
            continue  # Python functions and autograd nodes: their operators are counted
        kind = kind_of(name, ancestors)
        kinds.seconds[kind] += event.self_cpu_time_total / 1e6
        kinds.calls[kind] += 1
        kinds.casts += name == 'aten::_to_copy'
    return kinds, result


def kind_table(columns: dict[str, KindProfile], steps: dict[str, int]) -> str:
    """Return a markdown table: each kind's time (ms), share and calls per step, per column."""
    header = '| kind | ' + ' | '.join(f'{name}: ms | share | calls/step' for name in columns)
    rule = '|---|' + '---:|---:|---:|' * len(columns)
    lines = [header, rule]
    for kind in KINDS + ('total',):
        cells = []
        for name, profiled in columns.items():
            seconds = profiled.total if kind == 'total' else profiled.seconds[kind]
            calls = (sum(profiled.calls.values()) if kind == 'total'
                     else profiled.calls[kind])
            cells.append(f'{seconds * 1e3:.0f} | {seconds / max(profiled.total, 1e-12):.0%} | '
                         f'{calls / max(steps[name], 1):.0f}')
        lines.append(f'| {kind} | ' + ' | '.join(cells) + ' |')
    return '\n'.join(lines)
