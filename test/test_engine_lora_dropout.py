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

"""LoRA dropout (``TTOConfig.lora_dropout``) acts during the optimization steps only."""

from __future__ import annotations

from conftest import smooth_image, tiny_network
from lrda_ros.engine import DepthCompleter, DepthModel, Scope, TTOConfig
from lrda_ros.engine.alignment import aligned_to_depth
from lrda_ros.engine.model import resize_prediction
import numpy as np
import pytest
import torch

HEIGHT, WIDTH = 56, 84


def _dropouts(network: torch.nn.Module) -> list[torch.nn.Dropout]:
    return [module for module in network.modules() if isinstance(module, torch.nn.Dropout)]


def _frame() -> tuple[np.ndarray, np.ndarray]:
    rgb = smooth_image(5, HEIGHT, WIDTH)
    rows = np.linspace(1.0, 0.2, HEIGHT, dtype=np.float32)[:, None]
    depth = np.broadcast_to(2.0 + 10.0 * rows, (HEIGHT, WIDTH)).copy()
    sparse = np.zeros_like(depth)
    sparse[::3, ::4] = depth[::3, ::4]
    return rgb, sparse


def _decode(model: DepthModel, rgb: np.ndarray, seed: int) -> torch.Tensor:
    torch.manual_seed(seed)  # a decode with dropout on would differ between seeds
    with torch.no_grad():
        encoded = model.encode(model.preprocess(rgb, None), rgb.shape[:2])
        return resize_prediction(model.decode(encoded), rgb.shape[:2])[0]


@pytest.mark.parametrize('scope', [Scope.DECODER_LORA, Scope.FULL_LORA])
@pytest.mark.parametrize('sparse_head', [True, False])
def test_dropout_is_on_in_the_steps_and_off_in_the_output(scope, sparse_head):
    model = DepthModel(tiny_network(seed=0))
    config = TTOConfig(device='cpu', dtype='float32', scope=scope, lora_dropout=0.5,
                       iterations=4, sparse_head=sparse_head, min_depth=0.01, min_points=8,
                       divergence_factor=1e9, backtrack_fraction=1.0)
    completer = DepthCompleter(model, config)
    dropouts = _dropouts(model.network)
    adapter_dropouts = [d for d in dropouts if d in completer.adaptation.adapters.dropouts]
    assert len(adapter_dropouts) > 10
    assert not any(d.training for d in dropouts)  # attached in eval mode, as the network
    # Steps run with autograd; the output's decode without: record which mode each saw.
    seen: dict[bool, set[bool]] = {True: set(), False: set()}
    for dropout in adapter_dropouts:
        dropout.register_forward_pre_hook(
            lambda module, _: seen[torch.is_grad_enabled()].add(module.training))

    rgb, sparse = _frame()
    result = completer.complete(rgb, sparse)

    assert result.iterations == 4
    assert seen == {True: {True}, False: {False}}
    assert not any(d.training for d in dropouts)
    assert any(bool(p.abs().max() > 0) for n, p in model.network.named_parameters()
               if '.lora_B.' in n)  # adapted: dropout on would change the decode
    first, second = _decode(model, rgb, seed=1), _decode(model, rgb, seed=2)
    torch.testing.assert_close(first, second, rtol=0, atol=0)
    # The returned depth is that dropout-free decode, aligned.
    expected = aligned_to_depth(result.scale * first + result.shift, model.prediction_space,
                                config.min_depth, config.max_depth)
    np.testing.assert_allclose(result.depth, expected.numpy(), rtol=1e-5)
