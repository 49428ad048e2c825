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

"""Low-rank adapters (peft LoRA) on chosen layers of the depth network, everything else frozen."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
import re
from typing import Iterator, Sequence

import torch
from torch import nn

from .flat_parameters import FlatParameters
from .lora_paths import install
from ..errors import ConfigError

ADAPTER_NAME = 'tto'
#: Module name prefixes of each part of DepthAnythingForDepthEstimation.
ENCODER_PREFIXES = ('backbone.',)
DECODER_PREFIXES = ('neck.', 'head.')
# peft adapts these layer types; the decoder's ConvTranspose2d upsamplers stay frozen.
_ADAPTABLE_TYPES = (nn.Conv2d, nn.Linear)


class ParameterSnapshot:
    """
    Copies of a parameter list that can be restored in place (best iterate, reset).

    The parameters live in flat buffers (engine/flat_parameters.py): a reset or a capture is
    a copy per buffer, not per parameter.
    """

    def __init__(self, parameters: Sequence[torch.Tensor]) -> None:
        self.flat = FlatParameters(parameters)
        self.parameters = self.flat.parameters
        self._initial = self.flat.clone_buffers()
        self.initial = self.flat.views(self._initial)

    def capture(self) -> list[torch.Tensor]:
        """Return detached copies of the current values (views of one copy per buffer)."""
        return self.flat.views(self.flat.clone_buffers())

    @torch.no_grad()
    def restore(self, values: Sequence[torch.Tensor]) -> None:
        """Write previously captured values back into the parameters."""
        for parameter, value in zip(self.parameters, values):
            parameter.copy_(value)

    def reset(self) -> None:
        """Restore the values captured at construction."""
        self.flat.copy_from(self._initial)


def adaptable_layers(network: nn.Module, prefixes: Sequence[str],
                     patterns: Sequence[str] = ()) -> list[str]:
    """Name the Conv2d/Linear layers under the prefixes (and matching a pattern, if any)."""
    names = []
    for name, module in network.named_modules():
        if not name.startswith(tuple(prefixes)) or type(module) not in _ADAPTABLE_TYPES:
            continue
        if patterns and not any(re.search(pattern, name) for pattern in patterns):
            continue
        names.append(name)
    return names


def _match_conv_layers(network: nn.Module, layer_names: Sequence[str]) -> None:
    """
    Give each conv adapter's down-projection the padding mode and layout of its layer.

    peft builds it with zero padding; for a layer that pads by reflection (UniDepthV2's
    output convolutions) the adapter would then differ from a weight update at the borders.
    With the same mode (and the 1x1 up-projection) it is exactly W + BA. In the frozen
    weight's memory layout (channels-last where the network is), the gradients the
    convolutions return in that layout reach it without a copy.
    """
    for name in layer_names:
        layer = network.get_submodule(name)
        base = getattr(layer, 'base_layer', None)
        if isinstance(base, nn.Conv2d):
            down = layer.lora_A[ADAPTER_NAME]
            down.padding_mode = base.padding_mode
            if base.weight.is_contiguous(memory_format=torch.channels_last):
                down.weight.data = down.weight.data.contiguous(
                    memory_format=torch.channels_last)


class LoraAdapters:
    """
    Rank-r LoRA adapters injected by peft; only their weights require gradients.

    peft initializes B = 0, so a freshly attached (or reset) adapter leaves the network's output
    unchanged. Initialization is seeded so runs are reproducible. LoRA dropout (``dropout`` >
    0) acts only inside :meth:`dropout_active` (the optimization steps); every other forward
    pass, the decode that produces the output included, runs without it.
    """

    def __init__(self, network: nn.Module, layer_names: Sequence[str], rank: int = 8,
                 alpha: float = 8.0, dropout: float = 0.0, seed: int = 0) -> None:
        from peft import inject_adapter_in_model, LoraConfig
        from peft.tuners.lora import LoraLayer

        if not layer_names:
            raise ConfigError('no layers to adapt: check the scope and target_modules patterns',
                              field='target_modules')
        config = LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=dropout,
                            target_modules=list(layer_names), bias='none')
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            inject_adapter_in_model(config, network, adapter_name=ADAPTER_NAME)
        # peft builds the adapter layers in training mode, whatever the network's mode: an
        # eval-mode network would otherwise apply dropout in every decode.
        network.train(network.training)
        self.dropouts = [layer.lora_dropout[ADAPTER_NAME] for layer in network.modules()
                         if isinstance(layer, LoraLayer)]
        #: Each adapted layer's forward (engine/lora_paths.py): separate or merged.
        self.forwards = {name: install(network.get_submodule(name)) for name in layer_names}
        self._dropout = dropout
        network.requires_grad_(False)
        _match_conv_layers(network, layer_names)
        self.network = network
        self.layer_names = list(layer_names)
        self.parameters = [p for n, p in network.named_parameters() if '.lora_' in n]
        for parameter in self.parameters:
            parameter.requires_grad_(True)
        self.snapshot = ParameterSnapshot(self.parameters)
        #: The adapters' buffers (address, version) the held merged weights were computed at.
        self._held_at: list[tuple[int, int]] | None = None

    @contextmanager
    def merged_held(self) -> Iterator[None]:
        """
        In the block, passes without autograd reuse each merged weight (W + s B A).

        A merged weight is computed once per change of the adapters, not per decode: the
        output's decode and the start checks run merged, each over every adapted layer. A
        change is found by version counters, which every in-place write bumps: the flat
        buffers' (shared by their views: a restore, the step rules) and each parameter's own
        (a parameter bound to a buffer by ``.data`` keeps its counter: Adam, a compiled step's
        copy), with the buffers' addresses. No comparison of values, so no read of the device.
        """
        held_at = ([(buffer.data_ptr(), buffer._version)
                    for buffer in self.snapshot.flat.buffers]
                   + [(0, parameter._version) for parameter in self.parameters])
        if held_at != self._held_at:
            for forward in self.forwards.values():
                forward.held = None
            self._held_at = held_at
        for forward in self.forwards.values():
            forward.holds = True
        try:
            yield
        finally:
            for forward in self.forwards.values():
                forward.holds = False

    @contextmanager
    def dropout_active(self) -> Iterator[None]:
        """Apply LoRA dropout inside the block (the optimization steps), then stop again."""
        for dropout in self.dropouts:
            dropout.train()
        for forward in self.forwards.values():  # dropout acts on the separate path only
            forward.dropout_active = self._dropout > 0
        try:
            yield
        finally:
            for dropout in self.dropouts:
                dropout.eval()
            for forward in self.forwards.values():
                forward.dropout_active = False

    def paths(self) -> dict[str, str]:
        """Return each adapted layer's form: 'separate' or 'merged' (engine/lora_paths.py)."""
        return {name: forward.path for name, forward in self.forwards.items()}

    def set_paths(self, paths: dict[str, str] | str) -> None:
        """Set the layers' forms: one for all, or by layer name."""
        for name, forward in self.forwards.items():
            forward.path = paths if isinstance(paths, str) else paths.get(name, forward.path)

    @property
    def num_parameters(self) -> int:
        """Return the number of trainable adapter weights."""
        return sum(p.numel() for p in self.parameters)

    def reset(self) -> None:
        """Return to the initial (identity) adapters."""
        self.snapshot.reset()

    def state_dict(self) -> dict[str, torch.Tensor]:
        """Return the adapter weights in peft's layout (keys without the adapter name)."""
        from peft import get_peft_model_state_dict

        return {k: v.detach().clone() for k, v in
                get_peft_model_state_dict(self.network, adapter_name=ADAPTER_NAME).items()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Load adapter weights written by state_dict (or save)."""
        from peft import set_peft_model_state_dict

        result = set_peft_model_state_dict(self.network, state, adapter_name=ADAPTER_NAME)
        unexpected = getattr(result, 'unexpected_keys', [])
        if unexpected:
            raise ValueError(f'adapter state has unexpected keys {unexpected[:5]}')

    def save(self, path: str | Path) -> None:
        """Write the adapter weights to a safetensors file."""
        from safetensors.torch import save_file

        save_file({k: v.contiguous().cpu() for k, v in self.state_dict().items()}, str(path))

    def load(self, path: str | Path) -> None:
        """Read adapter weights written by save."""
        from safetensors.torch import load_file

        self.load_state_dict(load_file(str(path)))
