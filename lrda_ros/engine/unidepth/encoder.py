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
UniDepthV2's encoder: a DINOv2 vision transformer (ViT-S/B/L, patch 14, layer scale).

Parameter names are those of the official checkpoints (``pixel_encoder.blocks.3.attn.qkv``,
...). The encoder returns the tokens of four blocks, each normalized by the final layer norm,
split into the class token (which the camera head reads) and the patch grid.
"""

from __future__ import annotations

import torch
from torch import nn
import torch.nn.functional as F

from .config import UniDepthV2Config
from .layers import LayerScale


class PatchEmbedding(nn.Module):
    """Non-overlapping patch projection (``patch_embed.proj``)."""

    def __init__(self, patch_size: int, embed_dim: int) -> None:
        super().__init__()
        self.proj = nn.Conv2d(3, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        """Return (B, h * w, D) patch tokens, row-major."""
        return self.proj(pixel_values).flatten(2).transpose(1, 2)


class SelfAttention(nn.Module):
    """Multi-head self-attention with a fused query/key/value projection."""

    def __init__(self, dim: int, num_heads: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Attend every token to every token."""
        batch, tokens, width = x.shape
        qkv = self.qkv(x).view(batch, tokens, 3, self.num_heads, width // self.num_heads)
        query, key, value = qkv.permute(2, 0, 3, 1, 4)
        attended = F.scaled_dot_product_attention(query, key, value)
        return self.proj(attended.transpose(1, 2).reshape(batch, tokens, width))


class Mlp(nn.Module):
    """The transformer block's feed-forward layer (``fc1``, GELU, ``fc2``)."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Return fc2(gelu(fc1(x)))."""
        return self.fc2(self.act(self.fc1(x)))


class EncoderBlock(nn.Module):
    """Pre-norm transformer block with layer-scaled residual branches."""

    def __init__(self, dim: int, num_heads: int, mlp_ratio: int) -> None:
        super().__init__()
        # DINOv2's blocks normalize with eps 1e-6 (its final norm keeps PyTorch's 1e-5).
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = SelfAttention(dim, num_heads)
        self.ls1 = LayerScale(dim, 1.0)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(dim, dim * mlp_ratio)
        self.ls2 = LayerScale(dim, 1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply attention and feed-forward as residual branches."""
        x = x + self.ls1(self.attn(self.norm1(x)))
        return x + self.ls2(self.mlp(self.norm2(x)))


class DinoV2Encoder(nn.Module):
    """
    The DINOv2 backbone as UniDepthV2 uses it.

    ``register_tokens`` and ``mask_token`` are unused (no registers, no masking at inference)
    but are part of the released weights, so they are kept for loading by name.
    """

    def __init__(self, config: UniDepthV2Config) -> None:
        super().__init__()
        dim = config.embed_dim
        self.patch_size = config.patch_size
        self.output_blocks = tuple(config.output_blocks)
        grid = config.image_size // config.patch_size
        self.patch_embed = PatchEmbedding(config.patch_size, dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, grid * grid + 1, dim))
        self.register_tokens = nn.Parameter(torch.zeros(1, 1, dim))
        self.mask_token = nn.Parameter(torch.zeros(1, dim))
        self.blocks = nn.ModuleList([EncoderBlock(dim, config.encoder_heads, config.mlp_ratio)
                                     for _ in range(config.encoder_depth)])
        self.norm = nn.LayerNorm(dim)
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.normal_(self.cls_token, std=1e-6)

    def position_embedding(self, grid: tuple[int, int]) -> torch.Tensor:
        """
        Return the (1, 1 + h * w, D) position embeddings of a patch grid.

        The trained square grid is resized bicubically (in float32) to the input's grid, as
        DINOv2 does for inputs of another size.
        """
        trained = self.pos_embed
        side = int(round((trained.shape[1] - 1) ** 0.5))
        if tuple(grid) == (side, side):
            return trained
        patches = trained[:, 1:].float().reshape(1, side, side, -1).permute(0, 3, 1, 2)
        patches = F.interpolate(patches, size=tuple(grid), mode='bicubic', antialias=False)
        patches = patches.permute(0, 2, 3, 1).reshape(1, grid[0] * grid[1], -1)
        return torch.cat([trained[:, :1].float(), patches], dim=1).to(trained.dtype)

    def forward(self, pixel_values: torch.Tensor
                ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """
        Encode (B, 3, H, W) normalized pixels (H, W multiples of the patch size).

        Returns the patch features of the output blocks, each (B, h, w, D), and their class
        tokens, each (B, 1, D); both normalized by the final layer norm.
        """
        batch = pixel_values.shape[0]
        grid = (pixel_values.shape[-2] // self.patch_size,
                pixel_values.shape[-1] // self.patch_size)
        tokens = self.patch_embed(pixel_values)
        tokens = torch.cat([self.cls_token.expand(batch, -1, -1), tokens], dim=1)
        tokens = tokens + self.position_embedding(grid)
        features, class_tokens = [], []
        wanted = set(self.output_blocks)
        for index, block in enumerate(self.blocks[:max(self.output_blocks)], start=1):
            tokens = block(tokens)
            if index in wanted:
                normalized = self.norm(tokens)
                class_tokens.append(normalized[:, :1])
                features.append(normalized[:, 1:].reshape(batch, *grid, -1))
        return features, class_tokens
