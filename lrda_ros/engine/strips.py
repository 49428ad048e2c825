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
The decoder's high-resolution tail, computed in horizontal strips of rows (exact).

Most of the decoder's memory at high resolution sits in its tail: the finest pyramid level and
the last fusion layer at 4x the patch grid, its upsampling to 8x, the head's conv1 there, and
the head's upsampling to the processing resolution. Everything in the tail is row-local
(3x3 convolutions, bilinear resizes, a non-overlapping transposed convolution), so any band
of output rows can be computed from a band of the tail's small inputs widened by a halo; rows
next to a band's cut edge are wrong (zero padding where the image goes on) and are cropped,
rows at the image border are exact. Bilinear resizes of a band use the whole image's source
coordinates, so strips reproduce the full computation to rounding.

Used for the final dense decode, and, through activation checkpointing in
:class:`~lrda_ros.engine.sparse_head.SparseHeadPlan`, for the optimization steps: only one
strip's activations exist at a time, at the price of computing the tail twice per step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .model import DepthModel, EncodedImage, fuse_features, fuse_level, head_output
from .resampling import BandResizes, upsample_rows

#: Rows a band of the last fusion layer's output loses at a cut edge: its two residual units
#: apply four 3x3 convolutions.
FUSION_HALO_ROWS = 4


def row_bands(size: int, count: int) -> list[tuple[int, int]]:
    """Split rows [0, size) into ``count`` contiguous, nearly equal, non-empty bands."""
    edges = torch.linspace(0, size, min(count, size) + 1).round().long().tolist()
    return list(zip(edges[:-1], edges[1:]))


def source_rows(first: int, stop: int, size_in: int, size_out: int) -> tuple[int, int]:
    """
    Return the input rows [lo, hi) that bilinear output rows [first, stop) interpolate.

    Host arithmetic in float32, as :func:`~lrda_ros.engine.model.bilinear_source` (and
    PyTorch's kernel) computes the source rows; they grow with the output row, so the first
    and last output rows bound them. No tensor is read back: the steps call this.
    """
    scale = np.float32((size_in - 1) / (size_out - 1) if size_out > 1 else 0.0)
    low = int(np.float32(first) * scale)
    high = min(int(np.float32(stop - 1) * scale) + 1, size_in - 1)
    return min(low, size_in - 1), high + 1


def feature_rows(features: torch.Tensor, first: int, stop: int) -> torch.Tensor:
    """
    Return rows [first, stop) of (N, C, H, W) features, a view whose gradient keeps their layout.

    Slicing a channels-last tensor along H gives a view; its backward pads the gradient with
    zeros in the default (channels-first) layout, and every convolution before it then gets a
    channels-first gradient against channels-last activations: a layout conversion and a
    slower kernel. Slicing the channels-last view instead pads in channels-last.
    """
    if features.dim() == 4 and features.is_contiguous(memory_format=torch.channels_last):
        return features.permute(0, 2, 3, 1)[:, first:stop].permute(0, 3, 1, 2)
    return features[:, :, first:stop]


@dataclass
class TailInputs:
    """What the tail reads: small tensors, at twice the patch grid or coarser."""

    #: The third fusion layer's output before its upsampling (2x the patch grid).
    coarse: torch.Tensor
    #: The finest reassembled level after its 1x1 projection, before its resampling (patch
    #: grid).
    projected: torch.Tensor
    #: The finest level's resolution (4x the patch grid), where the last fusion layer works.
    fine_size: tuple[int, int]

    @property
    def conv1_size(self) -> tuple[int, int]:
        """Return the head's conv1 resolution: the last fusion layer upsamples 2x."""
        return 2 * self.fine_size[0], 2 * self.fine_size[1]


def conv1_size(model: DepthModel, encoded: EncodedImage) -> tuple[int, int]:
    """Return the head's conv1 resolution: the finest level's, doubled by the last fusion."""
    factor = int(model.network.config.reassemble_factors[0])
    return 2 * factor * encoded.patch_grid[0], 2 * factor * encoded.patch_grid[1]


def _band_obstacle(model: DepthModel) -> str | None:
    """Return why the model's tail cannot run on a band of rows (None: it can)."""
    network = model.network
    resize = network.neck.reassemble_stage.layers[0].resize
    if not (isinstance(resize, torch.nn.ConvTranspose2d) and resize.kernel_size == resize.stride
            and resize.padding == (0, 0)):
        return ('strips need the finest reassemble level to upsample with a non-overlapping '
                'transposed convolution (as Depth Anything V2)')
    if network.head.head_in_index not in (-1, len(network.neck.fusion_stage.layers) - 1):
        return 'strips need a head that reads the finest fusion level'
    return None


def tail_runs_in_bands(model: DepthModel) -> bool:
    """Return whether the model's tail is row-local as this module needs (Depth Anything V2)."""
    return _band_obstacle(model) is None


def tail_inputs(model: DepthModel, encoded: EncodedImage) -> TailInputs:
    """Run the decoder up to its high-resolution tail."""
    obstacle = _band_obstacle(model)
    if obstacle is not None:
        raise ValueError(obstacle)
    network = model.network
    pyramid = model.neck_inputs(encoded, first_level=1)
    stage = network.neck.fusion_stage
    fused = fuse_features(stage, pyramid, levels=len(pyramid) - 1)
    # A two-level decoder has no fusion below the tail's: its first layer starts from none.
    coarse = fuse_level(stage.layers[len(pyramid) - 1], fused[-1] if fused else None,
                        pyramid[0])
    projected = model.reassembled(encoded, 0, resize=False)
    factor = network.neck.reassemble_stage.layers[0].resize.stride
    return TailInputs(coarse, projected, (projected.shape[2] * factor[0],
                                          projected.shape[3] * factor[1]))


def _skip_rows(model: DepthModel, inputs: TailInputs, rows: tuple[int, int]) -> torch.Tensor:
    """Rows [rows) of the finest pyramid level (its resampling, then its 3x3 neck conv)."""
    resize = model.network.neck.reassemble_stage.layers[0].resize
    factor = resize.stride[0]  # output row r comes from input row r // factor alone
    first, stop = max(rows[0] - 1, 0), min(rows[1] + 1, inputs.fine_size[0])  # 3x3 halo
    source_first, source_stop = first // factor, (stop - 1) // factor + 1
    resampled = resize(feature_rows(inputs.projected, source_first, source_stop))
    skip = model.network.neck.convs[0](resampled)
    offset = source_first * factor
    return feature_rows(skip, rows[0] - offset, rows[1] - offset)


def conv1_rows(model: DepthModel, inputs: TailInputs, rows: tuple[int, int]) -> torch.Tensor:
    """
    Return rows [rows) of the head's conv1 output, from the tail's inputs.

    conv1 works at twice the finest level's resolution (the last fusion layer's 2x
    upsampling); only the band of rows those output rows depend on is computed, at every level.
    """
    features, (first, _) = conv1_band(model, inputs, rows)
    return feature_rows(features, rows[0] - first, rows[1] - first)


def conv1_band(model: DepthModel, inputs: TailInputs, rows: tuple[int, int],
               resizes: BandResizes | None = None) -> tuple[torch.Tensor, tuple[int, int]]:
    """
    Return conv1's output on rows [rows) and a row of halo each side, and the rows it holds.

    For a reader that can skip the halo rows itself (the sparse head's window gather): no
    slice, so no zero-padded gradient in the backward. With ``resizes`` (a frame's, kept
    across its steps) the two bilinear resizes of bfloat16 features are weighted gathers
    (engine/resampling.py).
    """
    stage = model.network.neck.fusion_stage
    fine_h = inputs.fine_size[0]
    grid = inputs.conv1_size
    first, stop = max(rows[0] - 1, 0), min(rows[1] + 1, grid[0])  # conv1's 3x3 halo
    needed_first, needed_stop = source_rows(first, stop, fine_h, grid[0])
    low = max(needed_first - FUSION_HALO_ROWS, 0)
    high = min(needed_stop + FUSION_HALO_ROWS, fine_h)
    coarse_h = inputs.coarse.shape[2]
    coarse_first, coarse_stop = source_rows(low, high, coarse_h, fine_h)
    coarse = feature_rows(inputs.coarse, coarse_first, coarse_stop)
    resize = resizes.upsample_rows if resizes is not None else upsample_rows
    fused = resize(coarse, coarse_first, coarse_h, (low, high), inputs.fine_size)
    hidden = fuse_level(stage.layers[-1], fused, _skip_rows(model, inputs, (low, high)))
    upsampled = resize(hidden, low, fine_h, (first, stop), grid)
    return model.network.head.conv1(upsampled), (first, stop)


def decode_in_strips(model: DepthModel, encoded: EncodedImage, strips: int) -> torch.Tensor:
    """Return ``model.decode(encoded)`` computed in ``strips`` bands of output rows."""
    inputs = tail_inputs(model, encoded)
    patch_h, patch_w = encoded.patch_grid
    size = (patch_h * model.patch_size, patch_w * model.patch_size)
    grid_height = inputs.conv1_size[0]
    bands = []
    for first, stop in row_bands(size[0], strips):
        low, high = max(first - 1, 0), min(stop + 1, size[0])  # conv2's 3x3 halo
        grid_rows = source_rows(low, high, grid_height, size[0])
        features = conv1_rows(model, inputs, grid_rows)
        upsampled = upsample_rows(features, grid_rows[0], grid_height, (low, high), size)
        upsampled = model.head_input(encoded, upsampled, (low, high))
        bands.append(head_output(model.network.head, upsampled)[:, first - low:stop - low])
    return model.scaled_output(encoded, torch.cat(bands, dim=1))
