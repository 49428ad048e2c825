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
What test-time optimization adapts: one small class per scope, one interface.

The method adapts LoRA on the decoder and reuses cached encoder features; the ablations adapt the
encoder (LoRA), everything (LoRA), or the decoder's full weights; prompt tuning (TestPromptDC)
learns an additive input prompt through the whole frozen network. Scopes that touch the encoder
or the input must re-run the encoder, with autograd, at every step: that is their cost.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any, Callable

import torch

from .config import Scope, TTOConfig
from .flat_parameters import FlatParameters
from .lora import adaptable_layers, LoraAdapters, ParameterSnapshot
from .lora_paths import weights_for_one_step
from .model import DepthModel, EncodedImage


class Adaptation:
    """Trainable state of one scope plus how a step turns the input into decoder features."""

    #: Whether each step must re-run the encoder with autograd.
    reencodes: bool = False

    def __init__(self, snapshot: ParameterSnapshot | None) -> None:
        self.snapshot = snapshot
        #: Passes without autograd run so far (:meth:`decoding`).
        self.decodes = 0

    @property
    def parameters(self) -> list[torch.Tensor]:
        """Return the tensors the optimizer updates."""
        return [] if self.snapshot is None else self.snapshot.parameters

    @property
    def flat_parameters(self) -> FlatParameters | None:
        """Return the parameters as they live in flat buffers (None: nothing to adapt)."""
        return None if self.snapshot is None else self.snapshot.flat

    def capture(self) -> list[torch.Tensor]:
        """Return a copy of the trainable state."""
        return [] if self.snapshot is None else self.snapshot.capture()

    def restore(self, values: list[torch.Tensor]) -> None:
        """Write back a state returned by capture."""
        if self.snapshot is not None:
            self.snapshot.restore(values)

    def reset(self, pixel_values: torch.Tensor) -> None:
        """Return to the unadapted network for an input like ``pixel_values``."""
        if self.snapshot is not None:
            self.snapshot.reset()

    def save_state(self) -> Any:
        """Return the adapted state for another stream's turn (see engine/streams.py)."""
        return self.capture()

    def load_state(self, state: Any) -> None:
        """Make a state returned by save_state live again."""
        self.restore(state)

    def optimizing(self) -> AbstractContextManager[None]:
        """Return the context of the optimization steps (where training-only layers act)."""
        return nullcontext()

    def decoding(self) -> AbstractContextManager[None]:
        """
        Return the context of a pass without autograd (a decode outside the steps), counted.

        Its weights are computed once per change of the adapted ones, not per pass.
        """
        self.decodes += 1
        return self._held_weights()

    def _held_weights(self) -> AbstractContextManager[None]:
        return nullcontext()

    def weights_for_one_step(self, precision: Callable[[], AbstractContextManager]
                             ) -> AbstractContextManager[None]:
        """
        Return the context of one step's passes (weights computed for it).

        ``precision``: the context the forward pass runs in (autocast), for those weights.
        """
        return nullcontext()

    def features(self, model: DepthModel, pixel_values: torch.Tensor,
                 cached: EncodedImage) -> EncodedImage:
        """Return the features the decoder consumes at this step."""
        if not self.reencodes:
            return cached
        return model.encode_differentiable(pixel_values, cached.input_size, cached.intrinsics)


class LoraAdaptation(Adaptation):
    """LoRA adapters on the decoder, the encoder, or both."""

    def __init__(self, model: DepthModel, config: TTOConfig, prefixes: tuple[str, ...]) -> None:
        layers = adaptable_layers(model.network, prefixes, config.target_modules)
        self.adapters = LoraAdapters(model.network, layers, config.lora_rank, config.lora_alpha,
                                     config.lora_dropout, config.seed)
        super().__init__(self.adapters.snapshot)
        self.reencodes = any(p in model.encoder_prefixes for p in prefixes)
        #: A compiled forward computes each merged weight itself (the attributes set per step
        #: would be guards).
        self._merge_together = not config.compile
        #: The frozen weights of each shape group, stacked once (lora_paths).
        self._frozen_stacks: dict = {}

    def _held_weights(self) -> AbstractContextManager[None]:
        """Keep each merged weight from decode to decode while the adapters are unchanged."""
        return self.adapters.merged_held() if self._merge_together else nullcontext()

    def optimizing(self) -> AbstractContextManager[None]:
        """Apply LoRA dropout during the steps only."""
        return self.adapters.dropout_active()

    def weights_for_one_step(self, precision: Callable[[], AbstractContextManager]
                             ) -> AbstractContextManager[None]:
        """Cast the adapters together, merge the weights of one shape together (lora_paths)."""
        if not self._merge_together:
            return nullcontext()
        return weights_for_one_step(self.adapters.forwards.values(), precision,
                                    self._frozen_stacks)


class DecoderFullAdaptation(Adaptation):
    """Every decoder weight trainable (the paper's decoder-only fine-tuning ablation)."""

    def __init__(self, model: DepthModel) -> None:
        parameters = [p for n, p in model.network.named_parameters()
                      if n.startswith(model.decoder_prefixes)]
        for parameter in parameters:
            parameter.requires_grad_(True)
        super().__init__(ParameterSnapshot(parameters))


class PromptAdaptation(Adaptation):
    """A learnable additive prompt on the normalized input image (TestPromptDC-style)."""

    reencodes = True

    def __init__(self) -> None:
        super().__init__(None)

    def reset(self, pixel_values: torch.Tensor) -> None:
        """Start from a zero prompt shaped like the input."""
        if self.snapshot is None or self.snapshot.parameters[0].shape != pixel_values.shape:
            prompt = torch.zeros_like(pixel_values, requires_grad=True)
            self.snapshot = ParameterSnapshot([prompt])
        else:
            self.snapshot.reset()

    def save_state(self) -> Any:
        """
        Hand over the prompt itself and start the next stream without one.

        The prompt is shaped like its stream's input, and the stream's optimizer holds this
        very tensor, so it is moved, not copied.
        """
        snapshot, self.snapshot = self.snapshot, None
        return snapshot

    def load_state(self, state: Any) -> None:
        """Make a prompt handed over by save_state live again."""
        self.snapshot = state

    def features(self, model: DepthModel, pixel_values: torch.Tensor,
                 cached: EncodedImage) -> EncodedImage:
        """Encode the prompted image with autograd."""
        prompt = self.snapshot.parameters[0]
        return model.encode_differentiable(pixel_values + prompt, cached.input_size,
                                           cached.intrinsics)


def build_adaptation(model: DepthModel, config: TTOConfig) -> Adaptation:
    """Attach the scope's trainable state to the model."""
    # Each model names its own encoder and decoder (module name prefixes).
    if config.scope is Scope.DECODER_LORA:
        return LoraAdaptation(model, config, model.decoder_prefixes)
    if config.scope is Scope.ENCODER_LORA:
        return LoraAdaptation(model, config, model.encoder_prefixes)
    if config.scope is Scope.FULL_LORA:
        return LoraAdaptation(model, config, model.encoder_prefixes + model.decoder_prefixes)
    if config.scope is Scope.DECODER_FULL:
        return DecoderFullAdaptation(model)
    return PromptAdaptation()
