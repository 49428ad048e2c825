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
``deterministic: true``: the same frame computes the same way on every run.

Three things otherwise vary between runs or devices: ``lora_path: auto`` picks each adapted
layer's form by timing it (wall-clock, engine/lora_paths.py), cuDNN picks convolution
algorithms (some non-deterministic) by benchmarking, and CUDA runs "float32" convolutions and
matrix products in TF32 (10-bit mantissas) by default. Deterministic runs use the separate
form (peft's), cuDNN's deterministic algorithms, and IEEE float32. The cuDNN and TF32
settings are PyTorch's, process-wide: set here, never unset.
"""

from __future__ import annotations

import torch

from .config import TTOConfig


def lora_form(config: TTOConfig) -> str:
    """Return the ``lora_path`` to run: 'auto' fixed to 'separate' when deterministic."""
    if config.deterministic and config.lora_path == 'auto':
        return 'separate'
    return config.lora_path


def use_deterministic_kernels(config: TTOConfig) -> None:
    """With ``deterministic``: cuDNN's deterministic algorithms, no TF32 for float32."""
    if not config.deterministic:
        return
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.fp32_precision = 'ieee'
    torch.backends.cudnn.conv.fp32_precision = 'ieee'
