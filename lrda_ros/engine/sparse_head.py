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
each of (at most) four processing-resolution pixels. :class:`SparseHeadPlan` samples conv1's
output upsampled at those windows (one sparse matrix product), and applies conv2/conv3
as matrix products with their effective weights (LoRA included), which is exact: the same
numbers as decoding densely and sampling, with the costly full-resolution upsampling and
convolutions done only where LiDAR pixels need them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from .compiled import bucket_size
from .lora_paths import merged_weight, scaled
from .model import DepthModel, EncodedImage
from .precision import full_precision
from .resampling import (
    BandResizes, bilinear_corners, bilinear_matrix, gather_dtype, gathered_product, GatherPair,
    pixel_rows)
from .strips import (
    conv1_band, conv1_size, row_bands, source_rows, tail_inputs, tail_runs_in_bands, TailInputs)


#: Outside bfloat16 a step runs the tail on a band only below this share of conv1's rows, and
#: decodes the neck whole above it: the band's resizes are PyTorch's there (BandResizes), which
#: on nearly every row gain nothing over the whole decode.
FLOAT32_BAND_ROWS = 0.9


def effective_conv(module: torch.nn.Module) -> tuple[torch.Tensor, torch.Tensor | None]:
    """
    Return (weight, bias) a Conv2d applies, folding in active peft LoRA adapters.

    Differentiable in the adapter weights (lora_paths.merged_weight).
    """
    base = getattr(module, 'base_layer', None)
    if base is None:
        return module.weight, module.bias
    if getattr(module, 'disable_adapters', False):
        return base.weight, base.bias
    # peft's rounding: the float32 head's numbers stay those of peft's layers to the last digit
    return merged_weight(module, peft_formula=True), base.bias


def _window_rows(weight: torch.Tensor) -> torch.Tensor:
    """Return a conv weight (out, in, ky, kx) as rows ordered like the patches: window, channel."""
    return weight.permute(0, 2, 3, 1).reshape(weight.shape[0], -1)


class _FrozenAndDownProducts(torch.autograd.Function):
    """
    ``patches @ [W; A]^T`` in bfloat16 (float32 accumulation), as float32 (frozen, down) parts.

    One product applies the frozen rows ``W`` and the adapters' down rows ``A`` side by side.
    The backward computes only what is trained: the windows' gradient, and the down rows' (a
    few rows), never the frozen rows' weight gradient, which autograd through one
    concatenated weight would compute and discard; the two parts come back without the
    zero-filled gradients that slicing one output would cost.
    """

    @staticmethod
    def forward(ctx, patches: torch.Tensor, frozen: torch.Tensor,
                down: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        weight = torch.cat([frozen, down]).to(torch.bfloat16)
        ctx.save_for_backward(patches, weight)
        ctx.frozen_rows, ctx.down_dtype = frozen.shape[0], down.dtype
        products = F.linear(patches, weight).float()
        return products[:, :frozen.shape[0]], products[:, frozen.shape[0]:]

    @staticmethod
    def backward(ctx, grad_frozen: torch.Tensor, grad_down: torch.Tensor):
        patches, weight = ctx.saved_tensors
        grad = torch.cat([grad_frozen, grad_down], dim=1).to(torch.bfloat16)
        grad_patches = grad @ weight if ctx.needs_input_grad[0] else None
        grad_rows = None
        if ctx.needs_input_grad[2]:
            grad_rows = tall_transpose_product(grad[:, ctx.frozen_rows:], patches)
            grad_rows = grad_rows.to(ctx.down_dtype)
        return grad_patches, None, grad_rows


#: Rows per block of :func:`tall_transpose_product`'s reduction.
REDUCTION_BLOCK_ROWS = 4096


def tall_transpose_product(left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """
    Return ``left^T @ right`` in float32 for tall ``(M, k)`` and ``(M, n)``, M >> k, n.

    A product reducing over M rows into a few output rows (the adapters' ``k`` down rows)
    runs far below the machine's rate as one CPU kernel; blocks of rows as one batched
    product, their partial sums added in float32, take about two thirds of its time. Every
    sum is a float32 one, bfloat16 inputs included: a block's bfloat16 output would round
    each partial sum to 8 bits (:func:`_block_products`).
    """
    rows = left.shape[0]
    blocks = max(1, rows // REDUCTION_BLOCK_ROWS)
    size = rows // blocks
    stacked = blocks * size
    partial = _block_products(left[:stacked].reshape(blocks, size, -1).transpose(1, 2),
                              right[:stacked].reshape(blocks, size, -1))
    product = partial.sum(0)
    if stacked < rows:  # the last rows that do not fill a block
        product += left[stacked:].t().float() @ right[stacked:].float()
    return product


def _block_products(left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """Return the batched product in float32, accumulated in float32 whatever the inputs."""
    if left.dtype == torch.float32:
        return torch.bmm(left, right)
    if left.device.type == 'cuda':  # cuBLAS writes its float32 accumulators out as they are
        return torch.bmm(left, right, out_dtype=torch.float32)
    # No CPU kernel has a float32 output for bfloat16 inputs: the inputs are widened.
    return torch.bmm(left.float(), right.float())


def _joined(tensors: list[torch.Tensor], dim: int = 0) -> torch.Tensor:
    """Return the tensors concatenated; one tensor as it is (a concatenation copies it)."""
    return tensors[0] if len(tensors) == 1 else torch.cat(tensors, dim)


def _conv2_bfloat16(conv: torch.nn.Module, patches: torch.Tensor) -> torch.Tensor:
    """
    Return the head's conv2 over (M, 9C) bfloat16 windows, as float32 (M, C_out).

    One bfloat16 product (float32 accumulation) applies the frozen weight and every LoRA
    adapter's down projection side by side; the adapters stay separate from the weight, as in
    peft, so a small adapter is not lost next to the weight in 8 bits of mantissa, and their
    up projections, the sum and the bias are float32. Against float32 this halves the memory
    traffic of the (M, 9C) windows and their gradient, which bound the step's head.
    """
    base = getattr(conv, 'base_layer', conv)
    downs, ups = [], []
    if base is not conv and not getattr(conv, 'disable_adapters', False):
        for adapter in conv.active_adapters:
            if adapter in conv.lora_A:
                downs.append(_window_rows(conv.lora_A[adapter].weight))
                ups.append(scaled(conv.lora_B[adapter].weight.flatten(1), conv.scaling[adapter]))
    frozen = _window_rows(base.weight)
    if downs and not frozen.requires_grad:
        output, down = _FrozenAndDownProducts.apply(patches, frozen, _joined(downs))
    else:  # no adapters, or a trained weight (full decoder fine-tuning): plain autograd
        products = F.linear(patches, torch.cat([frozen, *downs]).to(torch.bfloat16)).float()
        output, down = products[:, :frozen.shape[0]], products[:, frozen.shape[0]:]
    if base.bias is not None:
        output = output + base.bias
    return torch.addmm(output, down, _joined(ups, dim=1).t()) if ups else output


def sparse_product(matrix: torch.Tensor, dense: torch.Tensor) -> torch.Tensor:
    """
    Return ``matrix @ dense`` for a float32 sparse matrix, in float32.

    The product is computed in float32 whatever the dense operand's dtype: CPU sparse kernels
    (MKL) have no bfloat16/float16 version, and the weights are bilinear fractions that lose
    precision in 8 bits of mantissa anyway. It feeds the head's output layers, which compute
    in float32 (model.head_output), so the result stays float32. Autocast, which would cast
    both operands down again, is off for the product; the cast is differentiable.
    """
    with full_precision(dense.device):
        return torch.sparse.mm(matrix, dense.to(torch.float32))


@dataclass
class SparseHeadPlan:
    """Index structures for one frame's LiDAR pixels (built once, reused every step)."""

    #: (M, 9) flat processing-resolution position of each 3x3 window entry around the M needed
    #: processing-resolution pixels, in conv2's weight order.
    window_positions: torch.Tensor
    #: (M, 9) whether each entry lies inside the image (outside is conv2's zero padding).
    window_inside: torch.Tensor
    #: (N, 4) index into the M needed pixels of each LiDAR pixel's bilinear corners.
    corner_index: torch.Tensor
    #: (N, 4) bilinear weights of those corners.
    corner_weight: torch.Tensor
    processing_size: tuple[int, int]
    #: Read all of conv1's rows, not only those the LiDAR pixels need (fixed shapes).
    reads_all_rows: bool = False
    #: The window-sampling matrices, per conv1 output size and device (built on first use).
    _sampling: dict = field(default_factory=dict, repr=False)
    #: The conv1 rows each band of windows reads, per conv1 size (frame constants).
    _rows_read: dict = field(default_factory=dict, repr=False)
    #: The bands of needed pixels, per strip count (frame constants).
    _band_slices: dict = field(default_factory=dict, repr=False)
    #: Each band's window-sampling matrix, per conv1 size and rows held (frame constants).
    _band_matrices: dict = field(default_factory=dict, repr=False)
    #: The decoder tail's resizes of the conv1 rows read (frame constants), as gathers.
    _band_resizes: BandResizes = field(default_factory=BandResizes, repr=False)
    #: The head's added constant at the windows (frame constants; DA3's UV embedding).
    _head_positions: dict = field(default_factory=dict, repr=False)

    def frame_tensors(self) -> list[torch.Tensor]:
        """
        Return the plan's tensors whose first size follows the frame's LiDAR pixels.

        Those a compiled step marks dynamic (engine/compiled.py): one graph serves frames of
        any point count. The gather matrices count once built (a frame's first step).
        """
        tensors = [self.window_positions, self.window_inside, self.corner_index,
                   self.corner_weight]
        for pair in self._sampling.values():
            tensors += list(pair)
        return tensors

    @classmethod
    def build(cls, rows: torch.Tensor, cols: torch.Tensor, input_size: tuple[int, int],
              processing_size: tuple[int, int], fixed_shapes: bool = False
              ) -> 'SparseHeadPlan':
        """
        Plan the evaluation of input pixels (rows, cols) for a network input size.

        ``fixed_shapes``: sizes that repeat from frame to frame, as compiled steps need
        (engine/compiled.py): the needed pixels padded to a bucket (repeats of the first,
        whose predictions nothing reads), and all of conv1's rows read, whatever rows the
        LiDAR reaches (a compiled graph is specialized to the rows it reads).
        """
        proc_h, proc_w = processing_size
        # The prediction is resized from the processing size to the input size.
        corners, weights = bilinear_corners(rows, cols, input_size, processing_size)
        # Corners with zero weight (pixels that map exactly onto the grid) need no evaluation.
        corners = torch.where(weights > 0, corners, corners[:, :1])
        needed, corner_index = torch.unique(corners, return_inverse=True)
        if fixed_shapes:
            count = needed.numel()
            needed = torch.cat([needed, needed[:1].expand(bucket_size(count) - count)])
        offsets = torch.tensor([-1, 0, 1], device=rows.device)
        window_y = (needed // proc_w)[:, None, None] + offsets[None, :, None]
        window_x = (needed % proc_w)[:, None, None] + offsets[None, None, :]
        inside = (window_y >= 0) & (window_y < proc_h) & (window_x >= 0) & (window_x < proc_w)
        positions = torch.where(inside, window_y * proc_w + window_x, 0)
        return cls(positions.reshape(-1, 9), inside.reshape(-1, 9),
                   corner_index.view(-1, 4), weights, (proc_h, proc_w), fixed_shapes)

    def _sample_windows(self, features: torch.Tensor, grid: tuple[int, int] | None = None,
                        grid_rows: tuple[int, int] | None = None) -> torch.Tensor:
        """
        Return conv1's (1, C, h, w) output upsampled to the processing size at the windows.

        ``features`` may hold only rows ``grid_rows`` of conv1's ``grid``-sized output.
        """
        grid = grid or tuple(features.shape[-2:])
        dtype = gather_dtype(features)
        key = (grid, grid_rows, features.device, dtype)
        if key not in self._sampling:  # (9M, h*w) and its transpose, in the gather's dtype
            matrix = bilinear_matrix(self.window_positions.reshape(-1), self.processing_size,
                                     grid, self.window_inside.reshape(-1), grid_rows)
            matrix = matrix.to(features.device, torch.float32)
            self._sampling[key] = GatherPair.of(matrix, dtype)
        samples = gathered_product(self._sampling[key], pixel_rows(features))
        return samples.reshape(-1, 9 * features.shape[1])

    def _with_head_positions(self, model: DepthModel, encoded: EncodedImage,
                             patches: torch.Tensor, band: slice = slice(None)) -> torch.Tensor:
        """
        Add the constant a model's head adds to its upsampled features (DA3's UV embedding).

        The constant at each window entry, zero where the window leaves the image (conv2's
        zero padding pads the sum), is gathered once per frame and band.
        """
        rows = model.head_position_rows(encoded)
        if rows is None:
            return patches
        key = ('head_positions', band.start, band.stop, patches.dtype)
        if key not in self._head_positions:
            positions, inside = self.window_positions[band], self.window_inside[band]
            gathered = rows[positions.reshape(-1)] * inside.reshape(-1, 1).to(rows.dtype)
            self._head_positions[key] = gathered.reshape(patches.shape).to(patches.dtype)
        return patches + self._head_positions[key]

    def _head_values(self, head: torch.nn.Module, patches: torch.Tensor) -> torch.Tensor:
        """
        Apply conv2, conv3 and the activations to (M, 9C) windows: (M,) predictions.

        In float32 under any autocast, as the dense head (model.head_output).
        """
        with full_precision(patches.device):
            if patches.dtype == torch.bfloat16:
                hidden = head.activation1(_conv2_bfloat16(head.conv2, patches))
            else:
                weight2, bias2 = effective_conv(head.conv2)
                hidden = head.activation1(F.linear(patches.float(), _window_rows(weight2),
                                                   bias2))
            weight3, bias3 = effective_conv(head.conv3)
            values = F.linear(hidden, weight3.reshape(weight3.shape[0], -1), bias3)[:, 0]
            return head.activation2(values) * head.max_depth

    def _at_lidar_pixels(self, values: torch.Tensor) -> torch.Tensor:
        """Resize (bilinearly) the needed processing-resolution values to the LiDAR pixels."""
        return (values[self.corner_index] * self.corner_weight.to(values.dtype)).sum(dim=1)

    def prepare(self, model: DepthModel, encoded: EncodedImage, strips: int = 1) -> None:
        """
        Compute the host-side bounds :meth:`evaluate` needs, before the steps.

        The bands and the conv1 rows they read come from the frame's LiDAR pixels, a device
        tensor: reading them inside a step would wait for the device there.
        """
        grid = conv1_size(model, encoded)
        self._grid_rows(grid)
        if strips > 1:
            for band in self._bands(strips):
                self._grid_rows(grid, band)

    def _bands(self, strips: int) -> list[slice]:
        """Split the needed pixels (sorted by position) into bands of processing rows."""
        if strips not in self._band_slices:
            self._band_slices[strips] = self._split_bands(strips)
        return self._band_slices[strips]

    def _split_bands(self, strips: int) -> list[slice]:
        proc_h, proc_w = self.processing_size
        needed_rows = self.window_positions[:, 4] // proc_w  # the windows' centres
        edges = [first for first, _ in row_bands(proc_h, strips)] + [proc_h]
        starts = torch.searchsorted(needed_rows, torch.tensor(edges, device=needed_rows.device))
        bounds = starts.tolist()
        return [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]

    def _grid_rows(self, grid: tuple[int, int], band: slice = slice(None)) -> tuple[int, int]:
        """Return the rows [first, stop) of conv1's ``grid`` that a band of windows reads."""
        key = (grid, band.start, band.stop)
        if key not in self._rows_read:  # every step asks; a mask and a host read (prepare)
            proc_h, proc_w = self.processing_size
            first, stop = 0, proc_h
            if not self.reads_all_rows:
                positions, inside = self.window_positions[band], self.window_inside[band]
                window_rows = positions[inside] // proc_w
                first, stop = int(window_rows.min()), int(window_rows.max()) + 1
            self._rows_read[key] = source_rows(first, stop, grid[0], proc_h)
        return self._rows_read[key]

    def _band_values(self, model: DepthModel, encoded: EncodedImage, inputs: TailInputs,
                     band: slice) -> torch.Tensor:
        """Predictions at one band of needed pixels, computing only the tail rows they need."""
        grid = inputs.conv1_size
        grid_rows = self._grid_rows(grid, band)
        features, held_rows = conv1_band(model, inputs, grid_rows, self._band_resizes)
        key = (grid, band.start, band.stop, held_rows)
        if key not in self._band_matrices:  # every step (and its recomputation) asks
            positions, inside = self.window_positions[band], self.window_inside[band]
            self._band_matrices[key] = bilinear_matrix(
                positions.reshape(-1), self.processing_size, grid, inside.reshape(-1),
                held_rows)
        patches = sparse_product(self._band_matrices[key], pixel_rows(features))
        patches = self._with_head_positions(model, encoded,
                                            patches.reshape(-1, 9 * features.shape[1]), band)
        return self._head_values(model.network.head, patches)

    def evaluate(self, model: DepthModel, encoded: EncodedImage, strips: int = 1,
                 preserve_rng_state: bool = False) -> torch.Tensor:
        """
        Return the (N,) prediction at the planned pixels (differentiable, exact).

        With ``strips`` > 1 the decoder's high-resolution tail runs in that many bands of
        rows under activation checkpointing (see engine/strips.py): peak memory falls with
        the count, and each band's tail is computed again in the backward pass, with the
        random numbers of the forward pass when ``preserve_rng_state`` (dropout is active).
        The head's conv2 and conv3 run with their adapters folded into the weights, so their
        LoRA dropout does not act here.
        """
        head = model.network.head
        if strips > 1:
            inputs = tail_inputs(model, encoded)
            values = [checkpoint(self._band_values, model, encoded, inputs, band,
                                 use_reentrant=False, preserve_rng_state=preserve_rng_state)
                      for band in self._bands(strips)]
            return model.scaled_output(encoded, self._at_lidar_pixels(torch.cat(values)))
        grid = conv1_size(model, encoded)
        grid_rows = self._grid_rows(grid)
        device = model.device.type
        bfloat16 = (torch.is_autocast_enabled(device)
                    and torch.get_autocast_dtype(device) == torch.bfloat16)
        if tail_runs_in_bands(model) and (
                bfloat16 or grid_rows[1] - grid_rows[0] <= FLOAT32_BAND_ROWS * grid[0]):
            # The tail runs on the rows the LiDAR pixels read (e.g. KITTI's lower two thirds);
            # in bfloat16, whose resizes are gathers built once per frame (BandResizes), on
            # every row too, which then beats decoding the neck whole.
            features, held_rows = conv1_band(model, tail_inputs(model, encoded), grid_rows,
                                             self._band_resizes)
            patches = self._with_head_positions(
                model, encoded, self._sample_windows(features, grid, held_rows))
            return model.scaled_output(encoded, self._at_lidar_pixels(
                self._head_values(head, patches)))
        fused = model.decode_features(encoded)[head.head_in_index]
        # conv1 stays dense (at 8x the patch grid). Its bilinear upsampling to the processing
        # resolution, conv2 and conv3, the costly full-resolution part, are evaluated only on
        # the needed windows: upsampling and window gathering as one sparse matrix product
        # (its backward is another sparse product, no scatter), the convolutions as matrix
        # products over the windows.
        patches = self._with_head_positions(model, encoded,
                                            self._sample_windows(head.conv1(fused)))
        return model.scaled_output(encoded,
                                   self._at_lidar_pixels(self._head_values(head, patches)))
