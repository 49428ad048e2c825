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

"""Tiny random UniDepthV2 networks and checkpoints for tests (no downloads)."""

from __future__ import annotations

import json
from pathlib import Path

from lrda_ros.engine.unidepth import UniDepthV2Config, UniDepthV2Network
import numpy as np
import torch


def tiny_unidepth_config() -> UniDepthV2Config:
    """Return a UniDepthV2 shape small enough for unit tests (about 60 thousand weights)."""
    return UniDepthV2Config(embed_dim=32, encoder_depth=4, encoder_heads=2,
                            output_blocks=(1, 2, 3, 4), image_size=56, hidden_dim=32,
                            decoder_heads=4, decoder_depths=(1, 1, 1), out_dim=8,
                            pixel_bounds=(2_000, 20_000), variant='')


def tiny_unidepth_network(seed: int = 0) -> UniDepthV2Network:
    """Build the tiny network with PyTorch's default (non-degenerate) random init."""
    torch.manual_seed(seed)
    return UniDepthV2Network(tiny_unidepth_config()).eval()


def write_official_checkpoint(folder: Path, network: UniDepthV2Network,
                              weights: str = 'model.safetensors') -> Path:
    """
    Write ``network`` as an official hub repository: config.json and the weights.

    The state dict keeps the official parameter names (``pixel_encoder.blocks.0.attn.qkv``...).
    """
    folder.mkdir(parents=True, exist_ok=True)
    (folder / 'config.json').write_text(json.dumps(network.config.to_official(), indent=1))
    state = {key: value.contiguous() for key, value in network.state_dict().items()}
    if weights.endswith('.safetensors'):
        from safetensors.torch import save_file

        save_file(state, str(folder / weights))
    else:
        torch.save(state, folder / weights)
    return folder


def camera_matrix(height: int, width: int) -> np.ndarray:
    """Return a plausible pinhole K for an image of this size."""
    focal = 0.9 * width
    return np.array([[focal, 0.0, width / 2 - 0.5], [0.0, focal, height / 2 - 0.5],
                     [0.0, 0.0, 1.0]])
