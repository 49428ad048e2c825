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
How an adapted layer computes during the steps: the separate low-rank path or a merged weight.

peft injects the adapters, owns their weights and their state dicts; a step then runs each
adapted layer through :class:`AdaptedForward`, one of two exact forms of ``W x + s B A x``:

- ``separate`` (peft's training form): the base layer, plus the rank-r path ``B (A x)``
  beside it. The rank-r convolutions are small kernels: on a CPU their backward can cost
  more than the base layer's;
- ``merged`` (peft's ``get_delta_weight``, as peft merges for inference): one convolution
  with ``W + s B A``, whose weight gradient autograd sends on to A and B. One large kernel
  instead of three, plus the base layer's weight gradient (as much arithmetic as its forward).

Both run in the activation's precision: the frozen weight as it is held (engine/precision.py
holds it in the compute precision once per model), the adapter's float32 master weights cast
on the way in (a few thousand values), the activation never cast (peft casts it to the
adapter's float32 and autocast casts it back, twice per layer and pass). Which form is
cheaper depends on the layer's shape and the device, so it is measured
(:func:`choose_paths`), and LoRA dropout, which acts on the low-rank path's input only,
keeps the separate form.
"""

from __future__ import annotations

from collections import defaultdict
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
import statistics
import time
from typing import Callable, Iterable, Iterator, Sequence

import torch
from torch import nn
import torch.nn.functional as F


def _base_apply(base: nn.Module, x: torch.Tensor, weight: torch.Tensor,
                bias: torch.Tensor | None) -> torch.Tensor:
    if isinstance(base, nn.Conv2d):
        return base._conv_forward(x, weight, bias)
    return F.linear(x, weight, bias)


def _like(tensor: torch.Tensor | None, x: torch.Tensor) -> torch.Tensor | None:
    """Return ``tensor`` in ``x``'s dtype unless autocast decides it (a no-op when equal)."""
    if tensor is None or torch.is_autocast_enabled(x.device.type):
        return tensor
    return tensor.to(x.dtype)


def scaled(tensor: torch.Tensor, scaling: float) -> torch.Tensor:
    """
    Return ``tensor * scaling``; ``tensor`` itself when the scaling is 1.

    LoRA's scaling is alpha / rank, 1 at the defaults (alpha = rank = 8): multiplying by 1
    changes no value, yet costs a kernel launch each way per layer and step.
    """
    return tensor if scaling == 1 else tensor * scaling


def adapter_weights(layer: nn.Module, adapter: str) -> tuple[torch.Tensor, torch.Tensor]:
    """
    Return one adapter's (A, B) weights as this step computes with them.

    Within :func:`weights_for_one_step` in a reduced precision, the copies cast for the step
    together with every other layer's (one cast, not two per layer); otherwise peft's own.
    """
    cast = getattr(getattr(layer, 'forward', None), 'step_adapters', None)
    if cast is not None and adapter in cast:
        return cast[adapter]
    return layer.lora_A[adapter].weight, layer.lora_B[adapter].weight


def low_rank_term(layer: nn.Module, x: torch.Tensor) -> torch.Tensor | None:
    """
    Return ``sum over active adapters of s B (A dropout(x))`` in ``x``'s dtype (None: none).

    Outside autocast the adapters' float32 weights are cast to the activation's precision
    (small tensors), never the activation to theirs.
    """
    term = None
    for adapter in layer.active_adapters:
        if adapter not in layer.lora_A:
            continue
        down, up = layer.lora_A[adapter], layer.lora_B[adapter]
        down_weight, up_weight = adapter_weights(layer, adapter)
        hidden = layer.lora_dropout[adapter](x)
        hidden = _base_apply(down, hidden, _like(down_weight, x), None)
        hidden = _base_apply(up, hidden, _like(up_weight, x), _like(up.bias, x))
        hidden = scaled(hidden, layer.scaling[adapter])
        term = hidden if term is None else term + hidden
    return term


def delta_weight(layer: nn.Module, adapter: str) -> torch.Tensor:
    """
    Return one adapter's ``s B A`` in the base layer's weight layout (peft's ``get_delta_weight``).

    For a convolution (groups 1) peft composes A's kernels with B's 1x1 ones by a convolution,
    a kernel launch costing more than the arithmetic (a few hundred thousand operations) on a
    CPU, and more again in its backward: here it is one matrix product over the flattened
    kernels, the same sums. Other layers use peft's formula.
    """
    base = layer.base_layer
    if isinstance(base, nn.Conv2d) and base.groups == 1:
        down, up = adapter_weights(layer, adapter)
        # In the frozen weight's memory order (as _merged_together): the product is then in
        # W's layout, and so is its gradient, which the convolution returns in it (no copy).
        order = _product_order(base.weight)
        product = up.flatten(1) @ down.permute(order).flatten(1)
        return scaled(_from_order(product, (up.shape[0], *down.shape[1:]), order),
                      layer.scaling[adapter])
    return layer.get_delta_weight(adapter)


def merged_weight(layer: nn.Module, peft_formula: bool = False) -> torch.Tensor:
    """
    Return ``W + sum of s B A`` over the active adapters (differentiable in the adapters).

    In the adapters' precision (float32) or the weight's if wider: the sum promotes a held
    lower-precision ``W`` inside the addition, without a cast copy of it. ``peft_formula``:
    each ``s B A`` as peft's ``get_delta_weight`` rounds it, where a float32 result must be
    peft's to the last digit (:func:`delta_weight` sums in another order).
    """
    weight = layer.base_layer.weight
    for adapter in layer.active_adapters:
        if adapter in layer.lora_A:
            delta = (layer.get_delta_weight(adapter) if peft_formula
                     else delta_weight(layer, adapter))
            weight = delta + weight
    return weight


class AdaptedForward:
    """
    The forward of one peft LoRA layer (Conv2d or Linear): ``separate`` or ``merged``.

    Installed as the layer's ``forward`` (an instance attribute: peft's class is untouched);
    without active adapters the layer is its base layer.
    """

    def __init__(self, layer: nn.Module, path: str = 'separate') -> None:
        self.layer = layer
        self.path = path
        #: Whether the low-rank path's dropout acts now (training mode): keeps ``separate``.
        self.dropout_active = False
        #: Whether passes without autograd (the output's decode, the start checks) run merged
        #: whatever ``path`` is: one convolution instead of three and two elementwise passes.
        self.merge_without_grad = False
        #: The last call's input: shape, dtype, channels-last, whether it carried a gradient
        #: (what :func:`choose_paths` measures at).
        self.last_input: tuple[tuple[int, ...], torch.dtype, bool, bool] | None = None
        #: This step's merged weight, computed together with those of the layers of its
        #: shape (:func:`weights_for_one_step`); None: computed in the call.
        self.step_weight: torch.Tensor | None = None
        #: This step's adapter weights (A, B) by adapter, cast to the compute precision
        #: together with every layer's (:func:`weights_for_one_step`); None: peft's own.
        self.step_adapters: dict[str, tuple[torch.Tensor, torch.Tensor]] | None = None
        #: Whether passes without autograd keep their merged weight in ``held``
        #: (LoraAdapters.merged_held, which drops it when the adapters change).
        self.holds = False
        #: The merged weight held, and the autocast precision it was computed in.
        self.held: tuple[torch.dtype | None, torch.Tensor] | None = None

    def __call__(self, x: torch.Tensor, *args, **kwargs) -> torch.Tensor:
        layer = self.layer
        base = layer.base_layer
        channels_last = x.dim() == 4 and x.is_contiguous(memory_format=torch.channels_last)
        self.last_input = (tuple(x.shape), x.dtype, channels_last, x.requires_grad)
        if layer.disable_adapters or not any(a in layer.lora_A for a in layer.active_adapters):
            return base(x)
        merged = self.path == 'merged' or (self.merge_without_grad
                                           and not torch.is_grad_enabled())
        if merged and not self.dropout_active:
            weight = self.step_weight if self.step_weight is not None else self._merged()
            return _base_apply(base, x, _like(weight, x), _like(base.bias, x))
        output = _base_apply(base, x, _like(base.weight, x), _like(base.bias, x))
        return output + low_rank_term(layer, x)

    def _merged(self) -> torch.Tensor:
        """Return the layer's merged weight: the one held, where it may be (see ``holds``)."""
        if not self.holds or torch.is_grad_enabled():
            return merged_weight(self.layer)
        device = self.layer.base_layer.weight.device.type
        precision = (torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device)
                     else None)
        if self.held is None or self.held[0] != precision:
            self.held = (precision, merged_weight(self.layer))
        return self.held[1]


def _shape_group(forward: AdaptedForward) -> tuple[tuple, str] | None:
    """
    Return what merged-form layers must share to be merged together, and the layer's adapter.

    None: the layer is merged alone (or not merged).
    """
    layer = forward.layer
    base = layer.base_layer
    adapters = [a for a in layer.active_adapters if a in layer.lora_A]
    if (forward.path != 'merged' or forward.dropout_active or layer.disable_adapters
            or len(adapters) != 1 or not isinstance(base, nn.Conv2d) or base.groups != 1):
        return None
    adapter = adapters[0]
    down, up = adapter_weights(layer, adapter)
    return (down.shape, up.shape, base.weight.shape, base.weight.dtype, down.dtype,
            down.device, layer.scaling[adapter]), adapter


def _merged_together(members: list[tuple[nn.Module, str]],
                     frozen_stacks: dict | None = None) -> list[torch.Tensor]:
    """
    Return ``W + s B A`` of (layer, adapter) pairs of one shape group, as one batch.

    The products are laid out in the frozen weights' memory order (a channels-last ``W``:
    window, then channel), so the merged weights are in ``W``'s layout and their gradients,
    which the convolutions return in it, reach the products without a copy. The frozen
    weights, stacked once into ``frozen_stacks`` (they do not change), are added in one
    operation. Each element's sums are :func:`delta_weight`'s.
    """
    pairs = [adapter_weights(layer, adapter) for layer, adapter in members]
    weights = [layer.base_layer.weight for layer, _ in members]
    order = _product_order(weights[0])
    downs = torch.stack([down.permute(order) for down, _ in pairs]).flatten(2)
    ups = torch.stack([up.flatten(1) for _, up in pairs])
    first, adapter = members[0]
    deltas = scaled(torch.bmm(ups, downs), first.scaling[adapter])  # delta_weight's, batched
    key = tuple((w.data_ptr(), w.dtype, tuple(w.stride())) for w in weights)
    frozen = None if frozen_stacks is None else frozen_stacks.get(key)
    if frozen is None:
        frozen = torch.stack([w.permute(order).reshape(w.shape[0], -1) for w in weights])
        if frozen_stacks is not None:
            frozen_stacks[key] = frozen
    return [_from_order(merged, weights[0].shape, order)
            for merged in (deltas + frozen).unbind()]


def _memory_order(tensor: torch.Tensor) -> list[int]:
    """Return the dimensions from outermost to innermost in memory (a dense tensor's)."""
    return sorted(range(tensor.dim()), key=lambda d: (-tensor.stride(d), d))


def _product_order(weight: torch.Tensor) -> list[int]:
    """Return ``weight``'s memory order if its output channel is outermost, else the default."""
    order = _memory_order(weight)
    # The output channel must be outermost to be a matrix product's row.
    return order if order[0] == 0 else list(range(weight.dim()))


def _from_order(elements: torch.Tensor, shape: Sequence[int], order: list[int]
                ) -> torch.Tensor:
    """Return a view of ``elements`` (laid out in ``order``) as the tensor of ``shape``."""
    inverse = [0] * len(order)
    for position, dim in enumerate(order):
        inverse[dim] = position
    return elements.view([shape[d] for d in order]).permute(inverse)


def _cast_adapters_together(forwards: list[AdaptedForward], dtype: torch.dtype) -> None:
    """
    Give each layer its adapters' weights in ``dtype``, cast for all layers in one operation.

    The layers whose frozen weight is held in ``dtype`` (engine/precision.py): those kept in
    float32 (the head's output layers) compute in float32 under any autocast.

    Autocast would cast each layer's A and B as it meets them, and their gradients back, four
    small kernels per layer and step; one concatenation, one cast and a split (views) do it
    for all, and their backward is one concatenation and one cast. The same values: a cast
    rounds each element alike, whichever tensor holds it. Each weight is flattened in its
    memory order (a channels-last one too), so that no copy is made on the way in and its
    cast copy keeps its layout.
    """
    owners, weights = [], []
    for forward in forwards:
        layer = forward.layer
        if layer.base_layer.weight.dtype != dtype:  # a layer kept in float32 (model.py)
            continue
        for adapter in layer.active_adapters:
            if adapter in layer.lora_A:
                owners.append((forward, adapter))
                weights += [layer.lora_A[adapter].weight, layer.lora_B[adapter].weight]
    if not weights or any(w.dtype == dtype or w.device != weights[0].device for w in weights):
        return
    orders = [_memory_order(w) for w in weights]
    cast = torch.cat([w.permute(order).reshape(-1) for w, order in zip(weights, orders)])
    cast = cast.to(dtype)
    pieces = [_from_order(piece, w.shape, order)
              for piece, w, order in zip(cast.split([w.numel() for w in weights]), weights,
                                         orders)]
    for index, (forward, adapter) in enumerate(owners):
        if forward.step_adapters is None:
            forward.step_adapters = {}
        forward.step_adapters[adapter] = (pieces[2 * index], pieces[2 * index + 1])


@contextmanager
def weights_for_one_step(forwards: Iterable[AdaptedForward],
                         precision: Callable[[], AbstractContextManager] = nullcontext,
                         frozen_stacks: dict | None = None) -> Iterator[None]:
    """
    Within the block, layers compute with weights prepared for all layers together.

    - In a reduced precision (autocast), every adapter's weights cast in one operation
      (:func:`_cast_adapters_together`).
    - Merged-form layers of one shape take weights computed together: a layer's ``W + s B A``
      is a few small operations (casts, the product, the scale, the sum) and as many in the
      backward, each costing a kernel launch more than its arithmetic; the layers of one
      shape (a DPT decoder's many 64-channel 3x3 convolutions) stacked make the products one
      batched product and its backward two. The same sums as :func:`merged_weight` (the
      products' rounding aside).

    For one step's forward and backward passes (a checkpointed band recomputes its forward
    there): the adapters change after it. ``precision``: the forward pass's context
    (autocast), which the weights are computed in; the backward runs outside it, as
    autograd's should. ``frozen_stacks``: where the frozen weights stacked for the sums are
    kept from one step to the next (none: stacked at each step).
    """
    forwards = list(forwards)
    try:
        with precision():
            device = next((f.layer.base_layer.weight.device for f in forwards), None)
            if device is not None and torch.is_autocast_enabled(device.type):
                _cast_adapters_together(forwards, torch.get_autocast_dtype(device.type))
            groups: dict[tuple, list[tuple[AdaptedForward, str]]] = defaultdict(list)
            for forward in forwards:
                group = _shape_group(forward)
                if group is not None:
                    groups[group[0]].append((forward, group[1]))
            for members in groups.values():
                if len(members) > 1:
                    weights = _merged_together([(f.layer, adapter) for f, adapter in members],
                                               frozen_stacks)
                    for (forward, _), weight in zip(members, weights):
                        forward.step_weight = weight
        yield
    finally:
        for forward in forwards:
            forward.step_weight = None
            forward.step_adapters = None


def install(layer: nn.Module, path: str = 'separate') -> AdaptedForward:
    """Run ``layer`` (a peft LoRA layer) through an :class:`AdaptedForward`; return it."""
    forward = AdaptedForward(layer, path)
    layer.forward = forward
    return forward


@dataclass(frozen=True)
class PathTiming:
    """One layer's measured seconds per forward and backward pass, in each form."""

    name: str
    input_shape: tuple[int, ...]
    separate: float
    merged: float

    @property
    def choice(self) -> str:
        """Return the cheaper form (the separate one on a tie: peft's own)."""
        return 'merged' if self.merged < self.separate else 'separate'


def median_seconds(function: Callable[[], None], repeats: int) -> float:
    """Return the median seconds of ``repeats`` calls, after an untimed first one."""
    function()  # kernel selection, allocation
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _synchronize(device: torch.device) -> None:
    if device.type == 'cuda':
        torch.cuda.synchronize(device)


def time_paths(name: str, forward: AdaptedForward, repeats: int = 3) -> PathTiming:
    """
    Time one forward and backward pass of the layer in each form, at its last input's shape.

    The backward computes what a step's does: the adapters' gradients, and the input's where
    it carried one (an earlier layer needs it). Gradients are returned, not accumulated. Under
    the autocast state of the caller, as the steps.
    """
    shape, dtype, channels_last, needs_input_grad = forward.last_input
    layer = forward.layer
    device = layer.base_layer.weight.device
    x = torch.randn(shape, dtype=dtype, device=device)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    if needs_input_grad:  # a non-leaf, as in a step (module hooks, e.g. FlopCounterMode's,
        x = x.requires_grad_() * 1  # refuse a leaf input to autograd.grad)
    parameters = [p for p in layer.parameters() if p.requires_grad]
    inputs = parameters + ([x] if needs_input_grad else [])
    previous = forward.path
    seconds = {}
    try:
        for path in ('separate', 'merged'):
            forward.path = path

            def run() -> None:
                output = forward(x)
                torch.autograd.grad(output, inputs, torch.ones_like(output))
                _synchronize(device)

            seconds[path] = median_seconds(run, repeats)
    finally:
        forward.path = previous
    return PathTiming(name, shape, seconds['separate'], seconds['merged'])


def choose_paths(forwards: dict[str, AdaptedForward], repeats: int = 3) -> list[PathTiming]:
    """Set each layer that has run to its cheaper form, measured at its last input's shape."""
    timings = []
    for name, forward in forwards.items():
        if forward.last_input is None:
            continue
        timing = time_paths(name, forward, repeats)
        forward.path = timing.choice
        timings.append(timing)
    return timings


class PathChoice:
    """
    Each adapted layer's form per network input shape, as ``TTOConfig.lora_path`` says.

    'separate' or 'merged': every layer so. 'auto': in float32 the separate form (float32
    convolutions run at the device's peak already, and the losses stay those of peft's form);
    in a reduced precision, a network input shape's first step runs every layer separately,
    then each layer's two forms are timed at its input's shape (:func:`choose_paths`) and the
    cheaper one kept for that shape; passes without autograd (the output's decode) run merged,
    one convolution per layer.
    """

    def __init__(self, adapters, setting: str, dtype: torch.dtype) -> None:
        self.adapters = adapters
        self.measuring = adapters is not None and setting == 'auto' and dtype != torch.float32
        #: What was measured, per network input shape.
        self.timings: dict[tuple[int, ...], list[PathTiming]] = {}
        if adapters is not None:
            adapters.set_paths('separate' if setting == 'auto' else setting)
            for forward in adapters.forwards.values():  # a forward pass alone: merged is less
                forward.merge_without_grad = self.measuring

    def paths(self) -> dict[str, str]:
        """Return each adapted layer's form now (none adapted: {})."""
        return {} if self.adapters is None else self.adapters.paths()

    def before_steps(self, shape: tuple[int, ...]) -> bool:
        """Set the forms chosen at this network input; return whether to measure them now."""
        if not self.measuring:
            return False
        if shape in self.timings:
            self.adapters.set_paths({t.name: t.choice for t in self.timings[shape]})
            return False
        self.adapters.set_paths('separate')
        for forward in self.adapters.forwards.values():
            forward.last_input = None  # only the layers the steps run are measured
        return True

    def measure(self, shape: tuple[int, ...]) -> None:
        """Time the layers that have run since :meth:`before_steps`; keep the cheaper forms."""
        self.timings[shape] = choose_paths(self.adapters.forwards)
