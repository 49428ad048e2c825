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
Depth Anything 3 behind the engine's model interface (the one Depth Anything V2's has).

Per frame :meth:`DA3Model.encode` runs the backbone once and keeps the tokens its head reads,
already through DualDPT's frozen token LayerNorm; every optimization step runs only the depth
branch of the head, which is Depth Anything V2's DPT decoder (so LoRA, the sparse head, tail
strips and compiled steps apply as they do there), plus the UV embedding DualDPT adds to its
features. The output is depth (the network's exponential activation): relative for the
any-view and mono models, metres for DA3METRIC-LARGE once multiplied by the focal length of
the network input over 300, the official conversion, which needs the camera's K.

The input follows the official ``InputProcessor`` (``upper_bound_resize``): the longer side
scaled to ``processing_size`` (rounded), then each side to its nearest multiple of 14 (ties
up). The official code resizes with OpenCV (area down, bicubic up) in one or two steps; here
one antialiased bicubic resize does (on a KITTI frame, 1.1 grey levels from OpenCV's on
average, closer than PyTorch's area or bilinear filters), which the tests measure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from .config import DA3Config, METRIC_FOCAL_DIVISOR
from .network import DA3Network, uv_embedding
from ..alignment import PredictionSpace
from ..model import DepthModel, EncodedImage
from ..precision import full_precision
from ...errors import InputError

#: Sky probability at or above which a pixel is sky (the official ``compute_sky_mask``
#: threshold that ``DepthAnything3Net`` uses for its own sky handling).
SKY_THRESHOLD = 0.3


class MissingIntrinsicsError(InputError):
    """A metric DA3 model was given an image without its camera matrix (a frame's input)."""


def nearest_multiple(value: int, patch: int) -> int:
    """Round to the nearer patch multiple, up on a tie (at least 1), as the official code."""
    down = (value // patch) * patch
    up = down + patch
    return max(1, up if abs(up - value) <= abs(value - down) else down)


def da3_processing_shape(height: int, width: int, processing_size: int | None,
                         patch: int = 14) -> tuple[int, int]:
    """
    Return the network input (height, width) of the official ``upper_bound_resize``.

    ``processing_size`` is the official ``process_res`` (its default 504); None keeps the
    image's own size before the rounding to multiples of the patch.
    """
    if processing_size is not None and max(height, width) != processing_size:
        scale = processing_size / float(max(height, width))
        height, width = max(1, int(round(height * scale))), max(1, int(round(width * scale)))
    return nearest_multiple(height, patch), nearest_multiple(width, patch)


@dataclass(frozen=True)
class DA3Features(EncodedImage):
    """Tokens of one image plus the frame constants of its decode."""

    #: DualDPT's UV embedding per reassemble level, (1, C, h, w) each (None: DPT).
    level_positions: tuple[torch.Tensor, ...] | None = None
    #: DualDPT's UV embedding at the processing resolution, (1, C, H, W) (None: DPT).
    head_positions: torch.Tensor | None = None
    #: DA3METRIC's factor to metres: focal length of the network input / 300 (None: relative).
    metric_scale: torch.Tensor | None = None


class DA3Model(DepthModel):
    """A Depth Anything 3 network with the encoder/decoder split the method needs."""

    encoder_prefixes = ('backbone.',)
    #: The depth branch: DPT neck and head; the token norm is frozen and runs with the encoder.
    decoder_prefixes = ('neck.', 'head.')
    prediction_space = PredictionSpace.DEPTH
    #: Its backbone is DA3's own ViT, which encoder_backends does not export.
    encoder_exports = False
    sky_threshold = SKY_THRESHOLD

    def __init__(self, network: DA3Network, device: torch.device | str = 'cpu',
                 source: str = '', is_demo_prior: bool = False, warning: str = '') -> None:
        super().__init__(network, device, source, is_demo_prior, warning)
        self.config: DA3Config = network.da3_config
        self.prediction_space = PredictionSpace.DEPTH
        self.has_confidence = self.config.has_confidence
        self.has_sky = self.config.has_sky
        self.needs_intrinsics = self.config.metric

    def preprocess(self, rgb: np.ndarray, processing_size: int | None) -> torch.Tensor:
        """Turn an (H, W, 3) uint8 RGB image into normalized (1, 3, h, w) network input."""
        image = self._image(rgb)
        size = da3_processing_shape(*rgb.shape[:2], processing_size, self.patch_size)
        if size != tuple(rgb.shape[:2]):
            down = size[0] < rgb.shape[0] or size[1] < rgb.shape[1]
            image = F.interpolate(image, size=size, mode='bicubic', align_corners=False,
                                  antialias=down).clamp_(0.0, 1.0)
        return self._normalize(image)

    def backbone_features(self, pixel_values: torch.Tensor) -> Sequence[torch.Tensor]:
        """Return the tokens the head reads, through DualDPT's token LayerNorm."""
        tokens = self.network.backbone(pixel_values)
        norm = self.network.head_norm
        return tokens if norm is None else [norm(level) for level in tokens]

    def _metric_scale(self, pixel_values: torch.Tensor, input_size: tuple[int, int],
                      intrinsics: np.ndarray | None) -> torch.Tensor | None:
        if not self.config.metric:
            return None
        if intrinsics is None:
            raise MissingIntrinsicsError(
                f'{self.config.name} gives metres from the focal length: pass the camera '
                'matrix K (the node reads it from camera_info; complete(..., intrinsics=K))',
                field='intrinsics')
        matrix = np.asarray(intrinsics, dtype=np.float64)
        height, width = pixel_values.shape[-2:]
        focal = (matrix[0, 0] * width / input_size[1] + matrix[1, 1] * height / input_size[0]) / 2
        return torch.tensor(focal / METRIC_FOCAL_DIVISOR, dtype=torch.float32,
                            device=self.device)

    def encoded_image(self, features: Sequence[torch.Tensor], pixel_values: torch.Tensor,
                      input_size: tuple[int, int],
                      intrinsics: np.ndarray | None) -> DA3Features:
        """Wrap the tokens with the frame's constants: UV embeddings, metric factor."""
        grid = self._patch_grid(pixel_values)
        levels = heads = None
        if self.config.position_embedding:
            aspect = pixel_values.shape[-1] / pixel_values.shape[-2]
            channels = self.config.out_channels
            levels = tuple(uv_embedding(c, *grid, aspect, self.device)[None] for c in channels)
            size = (grid[0] * self.patch_size, grid[1] * self.patch_size)
            heads = uv_embedding(self.config.features // 2, *size, aspect, self.device)[None]
        return DA3Features(tuple(features), grid, input_size, intrinsics,
                           level_positions=levels, head_positions=heads,
                           metric_scale=self._metric_scale(pixel_values, input_size,
                                                           intrinsics))

    def level_constant(self, encoded: DA3Features, level: int) -> torch.Tensor | None:
        """Return DualDPT's UV embedding of a reassemble level (None: DPT)."""
        return None if encoded.level_positions is None else encoded.level_positions[level]

    def head_input(self, encoded: DA3Features, upsampled: torch.Tensor,
                   rows: tuple[int, int] | None = None) -> torch.Tensor:
        """Add DualDPT's UV embedding (rows [first, stop) of it) to the upsampled features."""
        if encoded.head_positions is None:
            return upsampled
        positions = encoded.head_positions
        if rows is not None:
            positions = positions[:, :, rows[0]:rows[1]]
        return upsampled + positions.to(upsampled.dtype)

    def head_position_rows(self, encoded: DA3Features) -> torch.Tensor | None:
        if encoded.head_positions is None:
            return None
        return encoded.head_positions[0].flatten(1).t()

    def output_scale(self, encoded: DA3Features) -> torch.Tensor | None:
        return encoded.metric_scale

    def decode_with_confidence(self, encoded: DA3Features) -> tuple[torch.Tensor, torch.Tensor]:
        """
        Return the (1, h, w) depth and DualDPT's uncertainty, the engine's confidence output.

        The network's confidence is ``exp(c) + 1`` in [1, inf); the engine's models give a
        confidence output that grows where the depth is less reliable (UniDepthV2's), so DA3's
        is its inverse, ``1 / (exp(c) + 1)`` in (0, 1]. The published confidence ranks it per
        image (geometry/confidence.py).
        """
        head = self.network.head
        upsampled = self.head_features(encoded)
        with full_precision(upsampled.device):
            logits = head.conv3(head.activation1(head.conv2(upsampled.float())))
        depth = self.scaled_output(encoded, torch.exp(logits[:, 0]))
        return depth, 1.0 / (torch.exp(logits[:, 1]) + 1.0)

    def sky(self, encoded: DA3Features) -> torch.Tensor:
        """Return DA3's (1, h, w) sky output (ReLU'd logits; sky at or above SKY_THRESHOLD)."""
        if self.network.sky is None:
            raise ValueError(f'{self.config.name} has no sky head')
        upsampled = self.head_features(encoded)
        with full_precision(upsampled.device):
            return torch.relu(self.network.sky(upsampled.float()))[:, 0]
