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
The UniDepthV2 network: ``pixel_encoder`` (DINOv2) and ``pixel_decoder``, split in stages.

The stages are what test-time optimization needs: :meth:`UniDepthV2Network.encode` (the
encoder, once per frame), :meth:`camera` (rays and their embedding: from the given
intrinsics, or from the camera head on the class tokens; once per frame), and
:meth:`trunk` / :meth:`depth` / :meth:`confidence` (the decoder, at every step).
:meth:`forward` chains them for a whole prediction.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .config import UniDepthV2Config
from .decoder import camera_rays, UniDepthV2Decoder
from .encoder import DinoV2Encoder

#: The output heads clamp their logs to this range before exponentiating.
LOG_CLAMP = 8.0
#: The depth head predicts log(radius) - 2: radius = exp(clamped log + 2) metres.
LOG_RADIUS_OFFSET = 2.0


@dataclass(frozen=True)
class CameraConditioning:
    """The camera's effect on the decoder: fixed for a frame, computed once."""

    #: (B, 3, 3) intrinsics at the network input's resolution (given or predicted).
    intrinsics: torch.Tensor
    #: (B, 3, H, W) unit rays; the depth is the radius times their z component.
    rays: torch.Tensor
    #: (B, h * w, hidden) the rays' sine embedding at the patch grid.
    embedding: torch.Tensor


class UniDepthV2Network(nn.Module):
    """UniDepthV2 (ViT encoder), with the official checkpoints' module tree."""

    def __init__(self, config: UniDepthV2Config) -> None:
        super().__init__()
        self.config = config
        self.pixel_encoder = DinoV2Encoder(config)
        self.pixel_decoder = UniDepthV2Decoder(config)

    def encode(self, pixel_values: torch.Tensor
               ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """Return the encoder's (B, h, w, D) level features and (B, 1, D) class tokens."""
        return self.pixel_encoder(pixel_values)

    def camera(self, class_tokens: list[torch.Tensor], size: tuple[int, int],
               intrinsics: torch.Tensor | None = None) -> CameraConditioning:
        """
        Return the camera conditioning of an input of ``size`` (H, W) pixels.

        ``intrinsics`` (B, 3, 3) at that resolution, when known; else the camera head
        predicts them from the class tokens.
        """
        if intrinsics is None:
            intrinsics = self.pixel_decoder.predict_camera(class_tokens, size)
        rays = camera_rays(intrinsics, size)
        grid = (size[0] // self.config.patch_size, size[1] // self.config.patch_size)
        return CameraConditioning(intrinsics, rays,
                                  self.pixel_decoder.depth_layer.embed_rays(rays, grid))

    def trunk(self, features: list[torch.Tensor], camera: CameraConditioning) -> torch.Tensor:
        """Return the decoder features both output branches read (8x the patch grid)."""
        levels = self.pixel_decoder.input_adapter(features)
        return self.pixel_decoder.depth_layer.trunk(levels, camera.embedding)

    def depth(self, trunk: torch.Tensor, camera: CameraConditioning) -> torch.Tensor:
        """Return (B, 1, H, W) metric depth: the predicted radius along each ray, times z."""
        log_radius = self.pixel_decoder.depth_layer.log_depth(trunk, camera.rays.shape[-2:])
        radius = torch.exp(log_radius.clamp(-LOG_CLAMP, LOG_CLAMP) + LOG_RADIUS_OFFSET)
        return radius * camera.rays[:, 2:].to(radius.dtype)

    def confidence(self, trunk: torch.Tensor, camera: CameraConditioning) -> torch.Tensor:
        """
        Return (B, 1, H, W) UniDepthV2's confidence output.

        Trained so that its log regresses the prediction's own error (after median scale
        matching): a relative ranking within one image, larger where the depth is less
        reliable; it has no absolute unit.
        """
        log_confidence = self.pixel_decoder.depth_layer.log_confidence(
            trunk, camera.rays.shape[-2:])
        return torch.exp(log_confidence.clamp(-LOG_CLAMP, LOG_CLAMP))

    def forward(self, pixel_values: torch.Tensor,
                intrinsics: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """
        Predict depth, confidence and the camera of normalized (B, 3, H, W) pixels.

        Returns ``depth`` and ``confidence`` (B, 1, H, W), ``intrinsics`` (B, 3, 3) and
        ``rays`` (B, 3, H, W).
        """
        features, class_tokens = self.encode(pixel_values)
        camera = self.camera(class_tokens, tuple(pixel_values.shape[-2:]), intrinsics)
        trunk = self.trunk(features, camera)
        return {'depth': self.depth(trunk, camera), 'confidence': self.confidence(trunk, camera),
                'intrinsics': camera.intrinsics, 'rays': camera.rays}
