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
The Depth Anything 3 network for one view: its DINOv2 backbone and the depth branch of its head.

Written for this package from the official code (``depth_anything_3`` 0.1.1, Apache-2.0), which
the tests compare it with. The backbone keeps the official module tree and parameter names
(``backbone.pretrained.*``), so official weights load by name. Of the head, only what reaches
the depth is built, laid out as transformers' Depth Anything DPT (``neck.*``, ``head.*``),
whose decoder the engine's optimization, sparse head and tail strips already drive: DA3's head
is the same DPT with four additions, each here: a LayerNorm over the tokens (DualDPT,
``head_norm``), a UV sine embedding added after each projection and before the output
convolutions (DualDPT, :func:`uv_embedding`), an exponential output activation (its second
channel, DualDPT's confidence, ``exp + 1``), and a sky head (DPT, ``sky``). The ray, camera
and Gaussian branches are not built: a single view at a given camera needs none of them.
"""

from __future__ import annotations

import math

import torch
from torch import nn
import torch.nn.functional as F

from .config import DA3Config


class RotaryEmbedding2D(nn.Module):
    """DA3's 2D RoPE: half the head's channels rotate with the row, half with the column."""

    def __init__(self, frequency: float) -> None:
        super().__init__()
        self.frequency = frequency

    def _rotate(self, tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        dim = tokens.shape[-1]
        exponents = torch.arange(0, dim, 2, device=tokens.device).float() / dim
        inv_freq = 1.0 / (self.frequency ** exponents)
        angles = positions.to(inv_freq.dtype)[..., None] * inv_freq  # (B, N, dim / 2)
        angles = torch.cat((angles, angles), dim=-1).to(tokens.dtype)[:, None]
        first, second = tokens[..., :dim // 2], tokens[..., dim // 2:]
        return tokens * angles.cos() + torch.cat((-second, first), dim=-1) * angles.sin()

    def forward(self, tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Rotate (B, heads, N, D) tokens by their (B, N, 2) (row, column) positions."""
        rows, cols = tokens.chunk(2, dim=-1)
        return torch.cat((self._rotate(rows, positions[..., 0]),
                          self._rotate(cols, positions[..., 1])), dim=-1)


class Attention(nn.Module):
    """Multi-head self-attention with optional QK-norm and RoPE (official names)."""

    def __init__(self, dim: int, heads: int, qk_norm: bool,
                 rope: RotaryEmbedding2D | None) -> None:
        super().__init__()
        self.num_heads = heads
        self.qkv = nn.Linear(dim, dim * 3)
        head_dim = dim // heads
        self.q_norm = nn.LayerNorm(head_dim) if qk_norm else nn.Identity()
        self.k_norm = nn.LayerNorm(head_dim) if qk_norm else nn.Identity()
        self.proj = nn.Linear(dim, dim)
        self.rope = rope

    def forward(self, x: torch.Tensor, positions: torch.Tensor | None) -> torch.Tensor:
        batch, tokens, dim = x.shape
        qkv = self.qkv(x).reshape(batch, tokens, 3, self.num_heads, dim // self.num_heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        q, k = self.q_norm(q), self.k_norm(k)
        if self.rope is not None and positions is not None:
            q, k = self.rope(q, positions), self.rope(k, positions)
        x = F.scaled_dot_product_attention(q, k, v)
        return self.proj(x.transpose(1, 2).reshape(batch, tokens, dim))


class LayerScale(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gamma


class Mlp(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    """A pre-norm transformer block with layer scale (LayerNorm eps 1e-6, as DINOv2's)."""

    def __init__(self, dim: int, heads: int, qk_norm: bool,
                 rope: RotaryEmbedding2D | None) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = Attention(dim, heads, qk_norm, rope)
        self.ls1 = LayerScale(dim)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(dim, 4 * dim)
        self.ls2 = LayerScale(dim)

    def forward(self, x: torch.Tensor, positions: torch.Tensor | None) -> torch.Tensor:
        x = x + self.ls1(self.attn(self.norm1(x), positions))
        return x + self.ls2(self.mlp(self.norm2(x)))


class PatchEmbed(nn.Module):
    def __init__(self, patch: int, dim: int) -> None:
        super().__init__()
        self.proj = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x).flatten(2).transpose(1, 2)


class VisionTransformer(nn.Module):
    """
    DA3's DINOv2 for one view: the official ``DinoVisionTransformer`` with S = 1.

    From ``alt_start`` on, the first token is the learned camera token (reference view) and odd
    blocks attend globally (across views: with one view, over the same tokens, but with RoPE
    positions that do not differ between patches, as the official code gives its global
    blocks). The final LayerNorm keeps PyTorch's default eps (1e-5), as the official code.
    """

    def __init__(self, config: DA3Config) -> None:
        super().__init__()
        dim, patch = config.embed_dim, config.patch_size
        self.config = config
        self.patch_embed = PatchEmbed(patch, dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        if config.alt_start != -1:
            self.camera_token = nn.Parameter(torch.zeros(1, 2, dim))
        # The official networks are built for 518-pixel inputs: a 37x37 grid of positions.
        self.pos_embed = nn.Parameter(torch.zeros(1, (518 // patch) ** 2 + 1, dim))
        rope = (RotaryEmbedding2D(config.rope_frequency) if config.rope_start != -1 else None)
        self.blocks = nn.ModuleList(
            Block(dim, config.num_heads,
                  config.qknorm_start != -1 and index >= config.qknorm_start,
                  rope if config.rope_start != -1 and index >= config.rope_start else None)
            for index in range(config.num_blocks))
        self.norm = nn.LayerNorm(dim)

    def _position_embedding(self, grid: tuple[int, int], dtype: torch.dtype) -> torch.Tensor:
        """DINOv2's position embedding resized bicubically to the grid (offset 0.1, as DINOv2)."""
        table = self.pos_embed.float()
        side = int(math.sqrt(table.shape[1] - 1))
        if grid == (side, side):
            return self.pos_embed
        patches = table[:, 1:].reshape(1, side, side, -1).permute(0, 3, 1, 2)
        scale = ((grid[0] + 0.1) / side, (grid[1] + 0.1) / side)
        patches = F.interpolate(patches, scale_factor=scale, mode='bicubic', antialias=False)
        patches = patches.permute(0, 2, 3, 1).reshape(1, grid[0] * grid[1], -1)
        return torch.cat((table[:, :1], patches), dim=1).to(dtype)

    def _positions(self, batch: int, grid: tuple[int, int], device: torch.device
                   ) -> tuple[torch.Tensor, torch.Tensor]:
        """Return the RoPE positions of view-local blocks (row+1, col+1) and global ones (1, 1)."""
        rows = torch.arange(grid[0], device=device).repeat_interleave(grid[1])
        cols = torch.arange(grid[1], device=device).repeat(grid[0])
        local = torch.cat((torch.zeros(1, 2, device=device, dtype=torch.long),
                           torch.stack((rows, cols), dim=-1) + 1))
        flat = torch.cat((torch.zeros(1, 2, device=device, dtype=torch.long),
                          torch.ones(grid[0] * grid[1], 2, device=device, dtype=torch.long)))
        return local.expand(batch, -1, -1), flat.expand(batch, -1, -1)

    def forward(self, pixel_values: torch.Tensor) -> list[torch.Tensor]:
        """
        Return the tokens of the blocks the head reads, (B, 1 + patches, head width) each.

        The first token (class or camera token) is kept in front, as transformers' DINOv2 keeps
        its class token; with ``cat_token`` the last view-local block's tokens stand before the
        block's own, and only the latter are normalized, as the official code.
        """
        config = self.config
        batch = pixel_values.shape[0]
        grid = (pixel_values.shape[-2] // config.patch_size,
                pixel_values.shape[-1] // config.patch_size)
        x = self.patch_embed(pixel_values)
        x = torch.cat((self.cls_token.expand(batch, -1, -1), x), dim=1)
        x = x + self._position_embedding(grid, x.dtype)
        local_positions, global_positions = self._positions(batch, grid, x.device)
        outputs, local = [], x
        for index, block in enumerate(self.blocks):
            rope = config.rope_start != -1 and index >= config.rope_start
            if config.alt_start != -1 and index == config.alt_start:
                x = torch.cat((self.camera_token[:, :1].expand(batch, -1, -1).to(x.dtype),
                               x[:, 1:]), dim=1)
            if config.alt_start != -1 and index >= config.alt_start and index % 2 == 1:
                x = block(x, global_positions if rope else None)
            else:
                x = block(x, local_positions if rope else None)
                local = x
            if index in config.out_layers:
                outputs.append(torch.cat((local, self.norm(x)), dim=-1) if config.cat_token
                               else self.norm(x))
        return outputs


class Backbone(nn.Module):
    """The official ``DinoV2`` wrapper: the ViT under ``pretrained``."""

    def __init__(self, config: DA3Config) -> None:
        super().__init__()
        self.pretrained = VisionTransformer(config)

    def forward(self, pixel_values: torch.Tensor) -> list[torch.Tensor]:
        return self.pretrained(pixel_values)


def uv_embedding(channels: int, height: int, width: int, aspect: float,
                 device: torch.device | None = None) -> torch.Tensor:
    """
    Return DualDPT's (channels, height, width) UV sine embedding, already times its 0.1.

    As the official ``create_uv_grid`` + ``position_grid_to_embed`` (omega 100): u spans
    +-aspect/diag and v +-1/diag (diag = sqrt(aspect^2 + 1)), each shrunk by (n - 1) / n; the
    first half of the channels encodes u (sines, then cosines), the second v.
    """
    diag = math.sqrt(aspect ** 2 + 1.0)
    span_u, span_v = aspect / diag, 1.0 / diag
    u = torch.linspace(-span_u * (width - 1) / width, span_u * (width - 1) / width, width,
                       device=device)
    v = torch.linspace(-span_v * (height - 1) / height, span_v * (height - 1) / height, height,
                       device=device)
    grid_u, grid_v = torch.meshgrid(u, v, indexing='xy')  # (height, width) each

    def sines(positions: torch.Tensor, dim: int) -> torch.Tensor:
        omega = torch.arange(dim // 2, dtype=torch.float32, device=device) / (dim / 2.0)
        angles = positions.reshape(-1, 1) * (1.0 / 100.0 ** omega)
        return torch.cat((angles.sin(), angles.cos()), dim=1)

    half = channels // 2
    embedding = torch.cat((sines(grid_u, half), sines(grid_v, half)), dim=-1)
    return (embedding.view(height, width, channels) * 0.1).permute(2, 0, 1)


class Exponential(nn.Module):
    """DA3's depth activation; a second channel (DualDPT's confidence) is ``exp + 1``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.exp(x)


def dpt_config(config: DA3Config):
    """Return the transformers DepthAnythingConfig whose neck and head DA3's depth branch is."""
    from transformers import DepthAnythingConfig, Dinov2Config

    return DepthAnythingConfig(
        backbone_config=Dinov2Config(hidden_size=config.embed_dim, num_hidden_layers=1,
                                     num_attention_heads=config.num_heads, patch_size=14),
        patch_size=config.patch_size, reassemble_hidden_size=config.head_dim_in,
        reassemble_factors=[4, 2, 1, 0.5], neck_hidden_sizes=list(config.out_channels),
        fusion_hidden_size=config.features, head_hidden_size=32, head_in_index=-1,
        depth_estimation_type='metric' if config.metric else 'relative', max_depth=1)


class DA3Network(nn.Module):
    """Backbone, token norm, DPT neck and head (depth, confidence channel), sky head."""

    def __init__(self, config: DA3Config) -> None:
        from transformers.models.depth_anything.modeling_depth_anything import (
            DepthAnythingDepthEstimationHead, DepthAnythingNeck)

        super().__init__()
        config.check()
        self.da3_config = config
        self.config = dpt_config(config)
        self.backbone = Backbone(config)
        self.head_norm = nn.LayerNorm(config.head_dim_in) if config.head == 'dualdpt' else None
        self.neck = DepthAnythingNeck(self.config)
        # DA3's coarsest fusion block has no residual unit for a skip (it has none).
        del self.neck.fusion_stage.layers[0].residual_layer1
        self.head = DepthAnythingDepthEstimationHead(self.config)
        self.head.conv3 = nn.Conv2d(32, 2 if config.has_confidence else 1, kernel_size=1)
        self.head.activation2 = Exponential()
        self.head.max_depth = 1.0
        self.sky = (nn.Sequential(nn.Conv2d(config.features // 2, 32, 3, padding=1), nn.ReLU(),
                                  nn.Conv2d(32, 1, kernel_size=1))
                    if config.has_sky else None)
