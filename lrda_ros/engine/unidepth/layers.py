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
Building blocks of UniDepthV2's decoder, named as in the official checkpoints.

Attribute names (``kv``, ``q``, ``norm_attnx``, ``proj1``, ``gamma``, ...) are the parameter
names of the released weights, so a state dict loads by name without conversion.
"""

from __future__ import annotations

import math

import torch
from torch import nn
import torch.nn.functional as F


class LayerScale(nn.Module):
    """Per-channel scale of a residual branch (``gamma``)."""

    def __init__(self, dim: int, init_value: float) -> None:
        super().__init__()
        self.gamma = nn.Parameter(init_value * torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Scale the channels (last dimension)."""
        return x * self.gamma


class FeedForward(nn.Module):
    """Pre-normalized two-layer perceptron with GELU (the decoder's ``MLP``)."""

    def __init__(self, dim: int, expansion: int = 4, output_dim: int | None = None) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.proj1 = nn.Linear(dim, int(dim * expansion))
        self.proj2 = nn.Linear(int(dim * expansion), output_dim or dim)
        self.act = nn.GELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Return proj2(gelu(proj1(norm(x))))."""
        return self.proj2(self.act(self.proj1(self.norm(x))))


def split_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    """Reshape (B, N, heads * d) tokens to (B, heads, N, d)."""
    batch, tokens, width = x.shape
    return x.view(batch, tokens, heads, width // heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """Reshape (B, heads, N, d) back to (B, N, heads * d)."""
    batch, heads, tokens, width = x.shape
    return x.transpose(1, 2).reshape(batch, tokens, heads * width)


class AttentionBlock(nn.Module):
    """
    Transformer block: (cross-)attention of ``x`` to a context, then a feed-forward layer.

    Keys and values come from the context (``x`` itself when none is given); a position
    embedding, when given, is added to the queries per head. ``layer_scale`` <= 0 means no
    scale on the residual branches (the camera prompts).
    """

    def __init__(self, dim: int, num_heads: int = 4, expansion: int = 4,
                 layer_scale: float = 1.0, context_dim: int | None = None,
                 use_bias: bool = True) -> None:
        super().__init__()
        context_dim = context_dim or dim
        self.num_heads = num_heads
        self.mlp = FeedForward(dim, expansion)
        self.kv = nn.Linear(context_dim, dim * 2, bias=use_bias)
        self.q = nn.Linear(dim, dim, bias=use_bias)
        self.norm_attnx = nn.LayerNorm(dim)
        self.norm_attnctx = nn.LayerNorm(context_dim)
        self.out = nn.Linear(dim, dim, bias=use_bias)
        self.ls1 = LayerScale(dim, layer_scale) if layer_scale > 0 else nn.Identity()
        self.ls2 = LayerScale(dim, layer_scale) if layer_scale > 0 else nn.Identity()

    def attend(self, x: torch.Tensor, context: torch.Tensor,
               pos_embed: torch.Tensor | None) -> torch.Tensor:
        """Return the attention branch (before its layer scale)."""
        heads = self.num_heads
        key_value = self.kv(self.norm_attnctx(context))
        # The projection's output is laid out (kv, heads, d): keys first, then values.
        batch, tokens, _ = key_value.shape
        key_value = key_value.view(batch, tokens, 2, heads, -1).permute(2, 0, 3, 1, 4)
        query = split_heads(self.q(self.norm_attnx(x)), heads)
        if pos_embed is not None:
            query = query + split_heads(pos_embed, heads)
        attended = F.scaled_dot_product_attention(query, key_value[0], key_value[1])
        return self.out(merge_heads(attended))

    def forward(self, x: torch.Tensor, context: torch.Tensor | None = None,
                pos_embed: torch.Tensor | None = None) -> torch.Tensor:
        """Apply attention and feed-forward, each as a residual branch."""
        context = x if context is None else context
        x = x + self.ls1(self.attend(x, context, pos_embed))
        return x + self.ls2(self.mlp(x))


class AttentionLayer(nn.Module):
    """A stack of attention blocks sharing one context (``layers``)."""

    def __init__(self, num_blocks: int, dim: int, **block_options) -> None:
        super().__init__()
        self.layers = nn.ModuleList([AttentionBlock(dim, **block_options)
                                     for _ in range(num_blocks)])

    def forward(self, x: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        """Run the blocks in turn, each attending to ``context``."""
        for layer in self.layers:
            x = layer(x, context)
        return x


class ResidualConvUnit(nn.Module):
    """Two 3x3 convolutions with leaky ReLUs, added back to the input with a scale."""

    def __init__(self, dim: int, kernel_size: int = 3, layer_scale: float = 1.0) -> None:
        super().__init__()
        padding = (kernel_size - 1) // 2
        self.conv1 = nn.Conv2d(dim, dim, kernel_size, padding=padding)
        self.conv2 = nn.Conv2d(dim, dim, kernel_size, padding=padding)
        self.activation = nn.LeakyReLU()
        self.gamma = (nn.Parameter(layer_scale * torch.ones(1, dim, 1, 1)) if layer_scale > 0
                      else 1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Return x + gamma * conv2(act(conv1(act(x))))."""
        residual = self.conv2(self.activation(self.conv1(self.activation(x))))
        return self.gamma * residual + x


class ResidualUpsample(nn.Module):
    """Residual convolution units, a 1x1 projection, then 2x bilinear upsampling."""

    def __init__(self, dim: int, output_dim: int, num_layers: int = 2, kernel_size: int = 3,
                 layer_scale: float = 1.0) -> None:
        super().__init__()
        self.convs = nn.ModuleList([ResidualConvUnit(dim, kernel_size, layer_scale)
                                    for _ in range(num_layers)])
        self.up = nn.Sequential(nn.Conv2d(dim, output_dim, kernel_size=1),
                                nn.Upsample(scale_factor=2, mode='bilinear',
                                            align_corners=False))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Refine at this resolution, project, double the resolution."""
        for conv in self.convs:
            x = conv(x)
        return self.up(x)


def sine_fourier_features(x: torch.Tensor, dim: int, max_freq: int) -> torch.Tensor:
    """
    Embed each of the C values in the last dimension with dim // C log-spaced sines.

    Frequencies run from 1 to ``max_freq`` (octave spaced), times pi; the output has
    C * (dim // C) channels, the bands of each input value together.
    """
    bands = dim // x.shape[-1]
    scales = 2.0 ** torch.linspace(0.0, math.log2(max_freq), steps=bands, device=x.device,
                                   dtype=x.dtype)
    return torch.sin(x[..., None] * scales * math.pi).flatten(-2)
