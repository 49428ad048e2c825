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
What ``lrda speed`` times: official-size networks with random weights, and synthetic frames.

Random weights are fine for timing (the work does not depend on the values). Frames are a
panning crop of a smooth image with LiDAR returns below the LiDAR's top beam, as KITTI's.
"""

from __future__ import annotations

import numpy as np
import torch

from .options import LidarPattern, UNIDEPTH_BACKBONES
from ..engine import DepthModel
from ..engine.checkpoint import build_config
from ..engine.da3 import DA3Model, DA3Network, preset, PRESETS as DA3_PRESETS
from ..engine.unidepth import UniDepthModel, UniDepthV2Config, UniDepthV2Network


def random_network(variant: str, seed: int):
    """Build an official-size network with PyTorch's default (non-degenerate) random init."""
    from transformers import DepthAnythingForDepthEstimation

    torch.manual_seed(seed)
    network = DepthAnythingForDepthEstimation(build_config(variant))
    for module in network.modules():
        if isinstance(module, (torch.nn.Conv2d, torch.nn.ConvTranspose2d, torch.nn.Linear)):
            module.reset_parameters()
    with torch.no_grad():
        network.head.conv3.bias.fill_(1.0)
    return network


def random_model(backbone: str, seed: int, device: torch.device | str = 'cpu'):
    """Return the engine model of a ``--backbones`` name with random weights."""
    if backbone in UNIDEPTH_BACKBONES:
        torch.manual_seed(seed)  # PyTorch's default init: non-degenerate, as random_network
        config = UniDepthV2Config.official(UNIDEPTH_BACKBONES[backbone])
        return UniDepthModel(UniDepthV2Network(config), device)
    if backbone in DA3_PRESETS:  # Depth Anything 3 (da3-small ...), default init as above
        torch.manual_seed(seed)
        return DA3Model(DA3Network(preset(backbone)), device)
    return DepthModel(random_network(backbone, seed), device)


def panning_intrinsics(height: int, width: int) -> np.ndarray:
    """Return the frames' camera: focal length one image width, centred."""
    return np.array([[float(width), 0.0, (width - 1) / 2], [0.0, float(width), (height - 1) / 2],
                     [0.0, 0.0, 1.0]])


def panning_frames(height: int, width: int, count: int, lidar: LidarPattern,
                   seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Return ``count`` related frames: a panning crop of a smooth image, with sparse depth."""
    rng = np.random.default_rng(seed)
    shift = max(2, width // 100)
    wide = width + shift * count
    coarse = torch.from_numpy(rng.uniform(0, 255, (1, 3, 12, 16)).astype(np.float32))
    image = torch.nn.functional.interpolate(coarse, size=(height, wide), mode='bicubic')
    image = image.clamp(0, 255)[0].permute(1, 2, 0).numpy().astype(np.uint8)
    rows = np.linspace(0, 1, height)[:, None]
    depth = (4.0 + 30.0 * rows ** 2 + 2.0 * np.sin(np.linspace(0, 6, wide))[None]).astype(
        np.float32)
    mask = lidar.mask(height, width, rng)
    frames = []
    for k in range(count):
        window = slice(k * shift, k * shift + width)
        frames.append((np.ascontiguousarray(image[:, window]),
                       np.where(mask, depth[:, window], 0).astype(np.float32)))
    return frames
