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


"""``deterministic: true``: a fixed LoRA form, deterministic kernels, no TF32."""

from __future__ import annotations

import copy

from conftest import smooth_image, tiny_network
from lrda_ros.engine import DepthCompleter, DepthModel, TTOConfig
from lrda_ros.engine.determinism import lora_form
import numpy as np
import pytest
import torch

BASE_NETWORK = tiny_network(seed=0)


@pytest.fixture
def restored_backend_flags(monkeypatch):
    """Let a test set PyTorch's process-wide cuDNN and TF32 flags, put back afterwards."""
    for module, name in ((torch.backends.cudnn, 'deterministic'),
                         (torch.backends.cudnn, 'benchmark'),
                         (torch.backends.cuda.matmul, 'fp32_precision'),
                         (torch.backends.cudnn.conv, 'fp32_precision')):
        monkeypatch.setattr(module, name, getattr(module, name))


def completer(**options) -> DepthCompleter:
    options = {'device': 'cpu', 'iterations': 3, 'min_depth': 0.5, **options}
    return DepthCompleter(DepthModel(copy.deepcopy(BASE_NETWORK)), TTOConfig(**options))


def test_deterministic_fixes_auto_and_keeps_an_explicit_form():
    assert lora_form(TTOConfig(deterministic=True)) == 'separate'
    assert lora_form(TTOConfig(deterministic=True, lora_path='merged')) == 'merged'
    assert lora_form(TTOConfig()) == 'auto'


def test_a_deterministic_bfloat16_completer_times_nothing_and_repeats_itself(
        restored_backend_flags):
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = False, True
    image = smooth_image(3, 42, 56)
    rng = np.random.default_rng(0)
    sparse = np.where(rng.random(image.shape[:2]) < 0.1,
                      rng.uniform(1.0, 20.0, image.shape[:2]), 0.0).astype(np.float32)
    results = []
    for _ in range(2):
        engine = completer(dtype='bfloat16', deterministic=True)
        results.append(engine.complete(image, sparse))
        # auto in bfloat16 would time both forms at the frame's shapes (lora_paths.py).
        assert not engine.path_choice.measuring and not engine.path_choice.timings
        assert set(engine.path_choice.paths().values()) == {'separate'}
    assert results[0].losses == results[1].losses
    np.testing.assert_array_equal(results[0].depth, results[1].depth)
    assert torch.backends.cudnn.deterministic and not torch.backends.cudnn.benchmark
    assert torch.backends.cuda.matmul.fp32_precision == 'ieee'
    assert torch.backends.cudnn.conv.fp32_precision == 'ieee'


def test_without_deterministic_the_flags_are_left_alone(restored_backend_flags):
    completer()
    assert torch.backends.cudnn.conv.fp32_precision == 'tf32'  # PyTorch's default
