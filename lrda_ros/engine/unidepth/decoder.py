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
UniDepthV2's decoder: camera head, camera-conditioned depth head, confidence head.

Names follow the official checkpoints (``pixel_decoder.depth_layer.ups.0.convs.1.conv2``...).

- ``input_adapter``: one linear projection per encoder level to the decoder width.
- ``camera_layer``: predicts pinhole intrinsics from the encoder's class tokens, for when the
  camera is not given.
- ``depth_layer``: embeds the per-pixel camera rays (polar and azimuth angles, sine features)
  and lets each level's features attend to them (``prompt_camera``); then upsamples from the
  patch grid in three stages (``ups``, with the other levels added through transposed
  convolutions) to 8x the grid, where a depth branch and a confidence branch each project,
  upsample to the input resolution and refine. Depth is the log of the ray length (radius).
"""

from __future__ import annotations

import torch
from torch import nn
import torch.nn.functional as F

from .config import UniDepthV2Config
from .layers import (
    AttentionBlock, AttentionLayer, FeedForward, ResidualUpsample, sine_fourier_features)
from ..precision import full_precision


def pixel_grid(height: int, width: int, device: torch.device) -> torch.Tensor:
    """Return (3, H, W) homogeneous pixel-centre coordinates (u + 0.5, v + 0.5, 1)."""
    rows = torch.arange(height, device=device, dtype=torch.float32) + 0.5
    cols = torch.arange(width, device=device, dtype=torch.float32) + 0.5
    v, u = torch.meshgrid(rows, cols, indexing='ij')
    return torch.stack([u, v, torch.ones_like(u)])


def camera_rays(intrinsics: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """
    Return (B, 3, H, W) unit viewing rays of a pinhole camera, K^-1 (u + 0.5, v + 0.5, 1).

    ``intrinsics`` is (B, 3, 3) at the network input's resolution; pixel centres sit at
    half-integer coordinates, as UniDepth was trained.
    """
    with full_precision(intrinsics.device):
        grid = pixel_grid(*size, intrinsics.device).reshape(3, -1)
        rays = torch.linalg.inv(intrinsics.float()) @ grid
        rays = rays / rays[:, 2:].clamp(min=1e-4)
        rays = rays / rays.norm(dim=1, keepdim=True).clamp(min=1e-4)
    return rays.reshape(-1, 3, *size)


class ListAdapter(nn.Module):
    """One linear projection per encoder level (``input_adapters``)."""

    def __init__(self, input_dims: list[int], hidden_dim: int) -> None:
        super().__init__()
        self.input_adapters = nn.ModuleList([nn.Linear(d, hidden_dim) for d in input_dims])

    def forward(self, levels: list[torch.Tensor]) -> list[torch.Tensor]:
        """Project each level's tokens (last dimension) to the decoder width."""
        return [adapter(x) for adapter, x in zip(self.input_adapters, levels)]


class CameraHead(nn.Module):
    """Pinhole intrinsics (fx, fy, cx, cy) from the class tokens of the encoder levels."""

    def __init__(self, hidden_dim: int, num_heads: int, expansion: int,
                 layer_scale: float) -> None:
        super().__init__()
        options = {'num_heads': num_heads, 'expansion': expansion, 'layer_scale': layer_scale,
                   'use_bias': False}
        self.aggregate1 = AttentionBlock(hidden_dim, **options)
        self.aggregate2 = AttentionBlock(hidden_dim, **options)
        self.latents_pos = nn.Parameter(torch.randn(1, 4, hidden_dim))
        self.project = FeedForward(hidden_dim, expansion=1, output_dim=hidden_dim)
        self.out_pinhole = FeedForward(hidden_dim, expansion=1, output_dim=1)

    def forward(self, class_tokens: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
        """Return (B, 3, 3) intrinsics of an input of ``size`` (H, W) pixels."""
        tokens = self.project(class_tokens)
        position = self.latents_pos.expand(class_tokens.shape[0], -1, -1)
        tokens = self.aggregate2(self.aggregate1(tokens, pos_embed=position),
                                 pos_embed=position)
        with full_precision(tokens.device):
            fx, fy, cx, cy = self.out_pinhole(tokens.float())[..., 0].unbind(dim=-1)
            height, width = size
            diagonal = (height ** 2 + width ** 2) ** 0.5
            # Focal lengths are log-scaled in units of 0.7 diagonals, the principal point is a
            # sigmoid share of the image size.
            intrinsics = torch.zeros(fx.shape[0], 3, 3, device=fx.device)
            intrinsics[:, 0, 0] = 0.7 * diagonal * torch.exp(fx)
            intrinsics[:, 1, 1] = 0.7 * diagonal * torch.exp(fy)
            intrinsics[:, 0, 2] = width * torch.sigmoid(cx)
            intrinsics[:, 1, 2] = height * torch.sigmoid(cy)
            intrinsics[:, 2, 2] = 1.0
        return intrinsics


class DepthHead(nn.Module):
    """Camera-conditioned upsampling decoder with depth and confidence outputs."""

    def __init__(self, config: UniDepthV2Config) -> None:
        super().__init__()
        hidden, depths = config.hidden_dim, config.decoder_depths
        self.hidden_dim = hidden
        self.to_latents = nn.Linear(hidden, hidden)
        self.prompt_camera = nn.ModuleList([
            AttentionLayer(1, hidden, num_heads=config.decoder_heads,
                           expansion=config.expansion, layer_scale=-1.0, context_dim=hidden,
                           use_bias=False)
            for _ in range(len(config.output_blocks))])
        self.process_features = nn.ModuleList()
        self.ups = nn.ModuleList()
        self.depth_mlp = nn.ModuleList()
        for stage, units in enumerate(depths):
            width = min(hidden, 2 * hidden // 2 ** stage)
            next_width = 2 * hidden // 2 ** (stage + 1)
            output_width = max(next_width, config.out_dim)
            # Level stage+1 enters at this stage's resolution: 1x, 2x, 4x the patch grid.
            scale = max(1, 2 * stage)
            self.process_features.append(nn.ConvTranspose2d(hidden, width, scale, stride=scale))
            self.ups.append(ResidualUpsample(width, output_width, units, config.kernel_size,
                                             config.layer_scale))
            last = stage == len(depths) - 1
            self.depth_mlp.append(nn.Sequential(nn.LayerNorm(next_width),
                                                nn.Linear(next_width, output_width))
                                  if last else nn.Identity())
        self.confidence_mlp = nn.Sequential(nn.LayerNorm(next_width),
                                            nn.Linear(next_width, output_width))
        half = output_width // 2
        self.to_depth_lr = nn.Conv2d(output_width, half, 3, padding=1, padding_mode='reflect')
        self.to_confidence_lr = nn.Conv2d(output_width, half, 3, padding=1,
                                          padding_mode='reflect')
        self.to_depth_hr = nn.Sequential(
            nn.Conv2d(half, 32, 3, padding=1, padding_mode='reflect'), nn.LeakyReLU(),
            nn.Conv2d(32, 1, kernel_size=1))
        self.to_confidence_hr = nn.Sequential(
            nn.Conv2d(half, 32, 3, padding=1, padding_mode='reflect'), nn.LeakyReLU(),
            nn.Conv2d(32, 1, kernel_size=1))

    def embed_rays(self, rays: torch.Tensor, grid: tuple[int, int]) -> torch.Tensor:
        """
        Return (B, h * w, hidden) sine features of the rays' polar and azimuth angles.

        The (B, 3, H, W) unit rays are resized to the patch grid (bilinear, antialiased) and
        renormalized. Computed in float32: acos and atan2 of bfloat16 lose the angles.
        """
        with full_precision(rays.device):
            rays = rays.float()
            if tuple(rays.shape[-2:]) != tuple(grid):
                rays = F.interpolate(rays, size=grid, mode='bilinear', align_corners=False,
                                     antialias=True)
            rays = rays.flatten(2).transpose(1, 2)
            rays = rays / rays.norm(dim=-1, keepdim=True).clamp(min=1e-4)
            x, y, z = rays.unbind(dim=-1)
            polar = torch.acos(z)
            # atan2 near x = 0 flips sign with rounding: keep |x| >= 1e-3 with its sign.
            x_away_from_zero = x.abs().clamp(min=1e-3) * torch.where(x >= 0, 1.0, -1.0)
            azimuth = torch.atan2(y, x_away_from_zero)
            return sine_fourier_features(torch.stack([polar, azimuth], dim=-1),
                                         self.hidden_dim, max(grid) // 2)

    def trunk(self, levels: list[torch.Tensor], ray_embedding: torch.Tensor) -> torch.Tensor:
        """
        Return the (B, C, 8h, 8w) features both output branches read.

        ``levels``: the adapted encoder levels, each (B, h, w, hidden).
        """
        batch, height, width, _ = levels[0].shape
        conditioned = [prompt(level.flatten(1, 2), ray_embedding)
                       for prompt, level in zip(self.prompt_camera, levels)]

        def as_map(tokens: torch.Tensor) -> torch.Tensor:
            return tokens.transpose(1, 2).reshape(batch, -1, height, width)

        latents = as_map(self.to_latents(conditioned[0]))
        for stage, up in enumerate(self.ups):
            latents = up(latents + self.process_features[stage](as_map(conditioned[stage + 1])))
        return latents

    @staticmethod
    def _to_full_resolution(features: torch.Tensor, mlp: nn.Module, low: nn.Module,
                            high: nn.Module, size: tuple[int, int]) -> torch.Tensor:
        """Channel MLP, 3x3 conv, bilinear upsampling to ``size``, refinement: (B, 1, H, W)."""
        projected = low(mlp(features.permute(0, 2, 3, 1)).permute(0, 3, 1, 2))
        upsampled = F.interpolate(projected, size=size, mode='bilinear', align_corners=True)
        # The last layers in float32 (as the DAv2 head): a log-depth's fine structure is a
        # few percent, which bfloat16's 8-bit mantissa would quantize.
        with full_precision(upsampled.device):
            return high(upsampled.float())

    def log_depth(self, trunk: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
        """Return the (B, 1, H, W) log radius (before the output clamp and offset)."""
        return self._to_full_resolution(trunk, self.depth_mlp[-1], self.to_depth_lr,
                                        self.to_depth_hr, size)

    def log_confidence(self, trunk: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
        """Return the (B, 1, H, W) log confidence (before the output clamp)."""
        return self._to_full_resolution(trunk, self.confidence_mlp, self.to_confidence_lr,
                                        self.to_confidence_hr, size)


class UniDepthV2Decoder(nn.Module):
    """
    The ``pixel_decoder``.

    ``level_embeds`` is unused at inference (the camera head reads only class tokens) but part
    of the released weights.
    """

    def __init__(self, config: UniDepthV2Config) -> None:
        super().__init__()
        levels = len(config.output_blocks)
        dims = [config.embed_dim] * levels
        self.input_adapter = ListAdapter(dims, config.hidden_dim)
        self.camera_token_adapter = ListAdapter(dims, config.hidden_dim)
        self.camera_layer = CameraHead(config.hidden_dim, config.decoder_heads,
                                       config.expansion, config.layer_scale)
        self.depth_layer = DepthHead(config)
        self.level_embeds = nn.Parameter(torch.zeros(1, 1, levels, config.hidden_dim),
                                         requires_grad=False)

    def predict_camera(self, class_tokens: list[torch.Tensor],
                       size: tuple[int, int]) -> torch.Tensor:
        """Return (B, 3, 3) intrinsics predicted from the levels' class tokens."""
        tokens = torch.cat(self.camera_token_adapter(class_tokens), dim=1)
        return self.camera_layer(tokens, size)
