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
Kernel-launching operations per optimization step: what decides a step's speed on a GPU.

On a GPU a frame's arithmetic takes milliseconds and each separately launched operation costs
the host several microseconds in eager PyTorch, so the count of launching operations per step
is the figure to cut (and one graph replay per step is the end point). Counted on any device
with a ``TorchDispatchMode``: every ATen operation that reaches a kernel, except those that
launch none on any backend (views and reshapes, ``empty``, ``detach``, metadata reads).

Per step = (launches of a cold frame of ``long`` steps - of one of ``short`` steps) /
(long - short): what a frame does once (encoder, sparse-head plan, final decode) cancels out.
Each operation is also attributed to the line of the package that issued it (the innermost
frame under ``lrda_ros/``; the backward pass's operations to the line that called
``backward``), which is what a table by source needs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
import os
import sys
from typing import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten

#: Operations that allocate or describe tensors without launching a kernel on any backend.
NON_LAUNCHING = {
    'empty', 'empty_like', 'empty_strided', 'new_empty', 'new_empty_strided', 'detach',
    'alias', 'lift_fresh', 'lift', 'set_', 'resize_', 'sym_size', 'sym_stride', 'sym_numel',
    'sym_storage_offset', 'is_same_size', 'size', 'stride', 'dim', 'numel', 'is_contiguous',
    '_has_compatible_shallow_copy_type', 'is_pinned', 'record_stream', '_reshape_alias',
    'view', '_unsafe_view', 'reshape', 'as_strided', 'unsqueeze', 'squeeze', 'expand',
    'permute', 'transpose', 't', 'select', 'slice', 'split', 'split_with_sizes', 'unbind',
    'narrow', 'chunk', 'unflatten', 'flatten', 'view_as', 'expand_as', 'contiguous',
    'movedim', 'diagonal', 'real', 'imag', 'view_as_real', 'view_as_complex', 'unfold',
    '_nested_tensor_size', 'is_nonzero', '_to_dense',
    # the profiler's markers (torch.optim's step is one)
    '_record_function_enter', '_record_function_enter_new', '_record_function_exit',
}

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def launches_kernel(func) -> bool:
    """Return whether ATen operation ``func`` launches a kernel (not a view or metadata)."""
    if getattr(func, 'is_view', False):
        return False
    return func._schema.name.split('::')[-1] not in NON_LAUNCHING


def issuing_line() -> str:
    """Return 'file.py:line' of the innermost stack frame in the package, or '(outside)'."""
    frame = sys._getframe(2)
    while frame is not None:
        path = frame.f_code.co_filename
        if path.startswith(_PACKAGE) and not path.endswith(os.sep + 'launches.py'):
            relative = os.path.relpath(path, os.path.dirname(_PACKAGE))
            return f'{relative}:{frame.f_lineno}'
        frame = frame.f_back
    return '(outside)'


def _custom_op_definition(func):
    """Return the ``torch.library.custom_op`` definition behind ``func`` (None: an ATen op)."""
    if func.namespace in ('aten', 'prim', 'prims'):
        return None
    from torch._library.custom_ops import _maybe_get_opdef

    return _maybe_get_opdef(func._schema.name)


class LaunchCounter(TorchDispatchMode):
    """Count the kernel-launching ATen operations run inside it, by operator and source."""

    def __init__(self, by_source: bool = False) -> None:
        super().__init__()
        self.by_operator: Counter[str] = Counter()
        self.by_source: Counter[str] = Counter()
        self._attribute = by_source

    @property
    def total(self) -> int:
        """Return the operations counted."""
        return sum(self.by_operator.values())

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        definition = _custom_op_definition(func)
        if definition is not None:
            # A custom operator (the package's own): what it launches is its ATen operations,
            # which its Python implementation, run under this mode, shows.
            with self:
                return definition._init_fn(*args, **(kwargs or {}))
        if launches_kernel(func):
            self.by_operator[func._schema.name.split('::')[-1]] += 1
            if self._attribute:
                self.by_source[issuing_line()] += 1
        return func(*args, **(kwargs or {}))


@dataclass
class StepLaunches:
    """Kernel-launching operations per optimization step, and per frame outside the steps."""

    per_step: float
    outside_steps: float
    by_operator: dict[str, float] = field(default_factory=dict)
    by_source: dict[str, float] = field(default_factory=dict)

    def most_frequent(self, count: int = 6) -> str:
        """Return the most frequent operators per step, 'name n, ...'."""
        top = sorted(self.by_operator.items(), key=lambda item: -item[1])[:count]
        return ', '.join(f'{name} {value:.0f}' for name, value in top)


def _per_step(long: Counter, short: Counter, steps: int) -> dict[str, float]:
    keys = set(long) | set(short)
    per_step = {key: (long[key] - short[key]) / steps for key in keys}
    return {key: value for key, value in per_step.items() if abs(value) >= 0.5 / steps}


def step_launches(run_frame: Callable[[int], int], short: int = 3, long: int = 6,
                  by_source: bool = False) -> StepLaunches:
    """
    Count a step's launches from two cold frames: ``run_frame(steps)`` returns steps run.

    ``run_frame`` completes one cold frame of about ``steps`` optimization steps and returns
    how many ran (checked: a frame that stopped early would count less than a step).
    """
    counted = {}
    for steps in (short, long):
        counter = LaunchCounter(by_source)
        with counter:
            ran = run_frame(steps)
        if ran != steps:
            raise RuntimeError(f'a frame of {steps} steps ran {ran}: the per-step count needs '
                               'frames that run every step (no end rule or divergence stop)')
        counted[steps] = counter
    span = long - short
    per_step = (counted[long].total - counted[short].total) / span
    return StepLaunches(per_step, counted[short].total - short * per_step,
                        _per_step(counted[long].by_operator, counted[short].by_operator, span),
                        _per_step(counted[long].by_source, counted[short].by_source, span))


def _no_second_decode(completer) -> None:
    """Make a frame keep its last iterate: one final decode, never a return to the best."""
    final_prediction = completer._final_prediction

    def last_iterate(pixel_values, encoded, samples, target, trace, deadline):
        trace.best_state = None  # no best iterate to go back to
        return final_prediction(pixel_values, encoded, samples, target, trace, deadline)

    completer._final_prediction = last_iterate


def engine_step_launches(backbone: str, resolution: str, dtype: str, sparse_head: bool = True,
                         compile_steps: bool = False, by_source: bool = False,
                         device: str = 'cpu', lora_path: str = 'auto') -> StepLaunches:
    """
    Count a step's launches of ``lrda speed``'s engine on its panning frames (random weights).

    Cold frames under the paper schedule at lrda speed's settings (every step runs); one
    uncounted frame first, so that per-shape choices (LoRA forms, compilation) are made.
    ``lora_path``: the adapted layers' form (lora_paths.py); 'auto' chooses by timing, so its
    count moves from run to run with the machine's timings.

    A frame whose last iterate is worse than its best goes back to the best and decodes again
    (tto._final_prediction): once-only work that one of the two counted frames may do and the
    other not, which the difference would count as steps (random weights' losses jump: DA3-Small
    in bfloat16 came out at 301.7 a step against 410). The counted frames keep their last
    iterate instead, so each holds one final decode.
    """
    from dataclasses import replace

    from ..engine import DepthCompleter
    from .inputs import panning_frames, random_model
    from .options import LidarPattern, RESOLUTIONS
    from .run import SpeedOptions

    height, width = RESOLUTIONS[resolution]
    frames = panning_frames(height, width, 2, LidarPattern(), seed=0)
    options = SpeedOptions(dtype=dtype, schedule='paper', device=device,
                           sparse_head=sparse_head, compile=compile_steps)
    completer = DepthCompleter(random_model(backbone, 0, device),
                               replace(options.tto_config(), warm_start=False, iterations=3,
                                       lora_path=lora_path))
    completer.complete(*frames[0])
    _no_second_decode(completer)

    def run_frame(steps: int) -> int:
        completer.config = replace(completer.config, iterations=steps)
        return completer.complete(*frames[1]).iterations

    return step_launches(run_frame, by_source=by_source)
