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
Evaluate the DPT head's full-resolution tail only where the loss needs it (the LiDAR pixels).

The head is conv1 (at 8x the patch grid) -> bilinear upsample to the input resolution -> 3x3
conv2 -> ReLU -> 1x1 conv3 -> output activation, and the prediction is then resized to the image
size, again bilinearly. Both resizes are linear and the convolutions are local, so the
prediction at one image pixel depends on the upsampled conv1 features in a 3x3 window around
each of (at most) four processing-resolution pixels. :class:`SparseHeadPlan` gathers exactly
those windows and applies conv2/conv3 as matrix products with their effective weights (LoRA
included), which is exact: the same numbers as decoding densely and sampling, with the costly
full-resolution convolutions done only where LiDAR pixels need them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .model import DepthModel, EncodedImage


def effective_conv(module: torch.nn.Module) -> tuple[torch.Tensor, torch.Tensor | None]:
    """
    Return (weight, bias) a Conv2d applies, folding in active peft LoRA adapters.

    Uses peft's own delta-weight formula, which is differentiable in the adapter weights.
    """
    base = getattr(module, 'base_layer', None)
    if base is None:
        return module.weight, module.bias
    weight = base.weight
    if not getattr(module, 'disable_adapters', False):
        for adapter in module.active_adapters:
            if adapter in module.lora_A:
                weight = weight + module.get_delta_weight(adapter)
    return weight, base.bias


@dataclass
class SparseHeadPlan:
    """Index structures for one frame's LiDAR pixels (built once, reused every step)."""

    #: (M, 9) flat indices of the 3x3 windows around the needed processing-resolution pixels,
    #: into the upsampled feature map zero-padded by one pixel (conv2's padding).
    window_index: torch.Tensor
    #: (N, 4) index into the M needed pixels of each LiDAR pixel's bilinear corners.
    corner_index: torch.Tensor
    #: (N, 4) bilinear weights of those corners.
    corner_weight: torch.Tensor
    processing_size: tuple[int, int]

    @classmethod
    def build(cls, rows: torch.Tensor, cols: torch.Tensor, input_size: tuple[int, int],
              processing_size: tuple[int, int]) -> 'SparseHeadPlan':
        """Plan the evaluation of input pixels (rows, cols) for a network input size."""
        (height, width), (proc_h, proc_w) = input_size, processing_size
        y = rows.to(torch.float64) * ((proc_h - 1) / max(height - 1, 1))
        x = cols.to(torch.float64) * ((proc_w - 1) / max(width - 1, 1))
        y0 = y.floor().clamp(0, proc_h - 1)
        x0 = x.floor().clamp(0, proc_w - 1)
        wy, wx = (y - y0).to(torch.float32), (x - x0).to(torch.float32)
        y0, x0 = y0.long(), x0.long()
        y1, x1 = (y0 + 1).clamp(max=proc_h - 1), (x0 + 1).clamp(max=proc_w - 1)
        corners = torch.stack([y0 * proc_w + x0, y0 * proc_w + x1, y1 * proc_w + x0,
                               y1 * proc_w + x1], dim=1)
        weights = torch.stack([(1 - wy) * (1 - wx), (1 - wy) * wx, wy * (1 - wx), wy * wx],
                              dim=1)
        # Corners with zero weight (pixels that map exactly onto the grid) need no evaluation.
        corners = torch.where(weights > 0, corners, corners[:, :1])
        needed, corner_index = torch.unique(corners, return_inverse=True)
        padded_w = proc_w + 2
        centre = (needed // proc_w + 1) * padded_w + (needed % proc_w + 1)
        offsets = torch.tensor([dy * padded_w + dx for dy in (-1, 0, 1) for dx in (-1, 0, 1)],
                               device=rows.device)
        return cls(centre[:, None] + offsets[None], corner_index.view(-1, 4), weights,
                   (proc_h, proc_w))

    def evaluate(self, model: DepthModel, encoded: EncodedImage) -> torch.Tensor:
        """Return the (N,) prediction at the planned pixels (differentiable, exact)."""
        head = model.network.head
        fused = model.decode_features(encoded)[head.head_in_index]
        # conv1 and the upsampling stay dense (cheap: few channels, memory-bound); conv2 and
        # conv3, the costly full-resolution part, run only on the needed windows.
        upsampled = F.interpolate(head.conv1(fused), size=self.processing_size,
                                  mode='bilinear', align_corners=True)
        padded = F.pad(upsampled, (1, 1, 1, 1))
        channels = padded.shape[1]
        # Gather whole channel vectors per pixel (free view in channels-last memory).
        pixels = padded[0].permute(1, 2, 0).reshape(-1, channels)
        patches = pixels[self.window_index].reshape(self.window_index.shape[0], 9 * channels)
        weight2, bias2 = effective_conv(head.conv2)
        # conv2's weight (out, in, ky, kx) as rows ordered like the patches: window, channel.
        weight2 = weight2.permute(0, 2, 3, 1).reshape(weight2.shape[0], -1)
        hidden = head.activation1(F.linear(patches, weight2, bias2))
        weight3, bias3 = effective_conv(head.conv3)
        values = F.linear(hidden, weight3.reshape(weight3.shape[0], -1), bias3)[:, 0]
        values = head.activation2(values) * head.max_depth
        return (values[self.corner_index] * self.corner_weight.to(values.dtype)).sum(dim=1)
