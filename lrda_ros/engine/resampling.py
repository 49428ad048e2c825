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
Bilinear resizes as weighted gathers: sparse sampling matrices built once, applied every step.

``F.interpolate(..., align_corners=True)`` at a set of output pixels is a sparse matrix with
four entries per row. Applied as a weighted gather (``embedding_bag``, float32 accumulation),
with its transpose as the backward, it replaces PyTorch's resize where the same pixels are
resampled at every optimization step: the sparse head's windows, and the decoder tail's bands
of rows (:class:`BandResizes`, bfloat16), where PyTorch's CPU kernels (:func:`upsample_rows`:
a row blend and a width resize, and their backward passes, which accumulate through a float32
buffer) cost several times as much.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple
import warnings

import torch
import torch.nn.functional as F

from .model import bilinear_source


def bilinear_corners(rows: torch.Tensor, cols: torch.Tensor, output_size: tuple[int, int],
                     input_size: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor]:
    """
    Return the (P, 4) source indices and weights of ``F.interpolate(align_corners=True)``.

    For output pixels (rows, cols) of a resize from ``input_size`` to ``output_size``: the
    flat indices of the four input pixels each one interpolates, and their bilinear weights.
    Source coordinates are computed in float32 the way PyTorch's kernel does.
    """
    (out_h, out_w), (in_h, in_w) = output_size, input_size
    y0, y1, wy = bilinear_source(rows, in_h, out_h)
    x0, x1, wx = bilinear_source(cols, in_w, out_w)
    indices = torch.stack([y0 * in_w + x0, y0 * in_w + x1, y1 * in_w + x0, y1 * in_w + x1], 1)
    weights = torch.stack([(1 - wy) * (1 - wx), (1 - wy) * wx, wy * (1 - wx), wy * wx], 1)
    return indices, weights


def bilinear_matrix(positions: torch.Tensor, output_size: tuple[int, int],
                    input_size: tuple[int, int], valid: torch.Tensor | None = None,
                    input_rows: tuple[int, int] | None = None) -> torch.Tensor:
    """
    Return the (P, h*w) sparse matrix of ``F.interpolate(..., align_corners=True)``.

    Row p holds the bilinear weights, over the flattened ``input_size`` grid, of the value
    upsampled to ``output_size`` at flat output position ``positions[p]``; rows where ``valid``
    is False are zero (a convolution's zero padding). With ``input_rows`` (first, stop), the
    columns cover only that band of input rows, which must hold every source row.
    """
    out_w, in_w = output_size[1], input_size[1]
    first, stop = input_rows or (0, input_size[0])
    columns, weights = bilinear_corners(positions // out_w, positions % out_w, output_size,
                                        input_size)
    columns = columns - first * in_w
    if valid is not None:
        columns = torch.where(valid[:, None], columns, 0)
        weights = torch.where(valid[:, None], weights, 0)
    row_starts = torch.arange(0, 4 * len(positions) + 1, 4, device=positions.device)
    with warnings.catch_warnings():  # CSR support is flagged beta; these products are tested
        warnings.simplefilter('ignore', UserWarning)
        return torch.sparse_csr_tensor(row_starts, columns.reshape(-1), weights.reshape(-1),
                                       size=(len(positions), (stop - first) * in_w),
                                       check_invariants=False)


def gather_dtype(dense: torch.Tensor) -> torch.dtype:
    """Return the precision :func:`gather_rows` computes in for ``dense``: bfloat16 or float32."""
    return torch.bfloat16 if dense.dtype == torch.bfloat16 else torch.float32


def gather_rows(indices: torch.Tensor, offsets: torch.Tensor, weights: torch.Tensor,
                dense: torch.Tensor) -> torch.Tensor:
    """
    Return the CSR product ``M @ dense``, M given by its parts: bfloat16 for bfloat16 ``dense``.

    ``indices``, ``offsets`` and ``weights`` are M's column indices, row starts (without the
    end) and values. A weighted gather (``embedding_bag``, accumulating in float32):
    ``torch.sparse.mm`` zero-fills its output and copies it once more, which here costs twice
    the product itself. Not differentiable.
    """
    dtype = gather_dtype(dense)
    # Detached: with a table that requires a gradient, embedding_bag also builds its own
    # backward's bookkeeping (the bag of every index), unused here.
    return F.embedding_bag(indices, dense.detach().to(dtype), offsets=offsets,
                           per_sample_weights=weights.to(dtype), mode='sum')


def bilinear_gather(matrix: torch.Tensor, dense: torch.Tensor) -> torch.Tensor:
    """Return ``matrix @ dense`` for a CSR ``matrix`` (:func:`gather_rows`)."""
    return gather_rows(matrix.col_indices(), matrix.crow_indices()[:-1], matrix.values(), dense)


@torch.library.custom_op('lrda::gathered_product', mutates_args=())
def _gathered_product(indices: torch.Tensor, offsets: torch.Tensor, weights: torch.Tensor,
                      transposed_indices: torch.Tensor, transposed_offsets: torch.Tensor,
                      transposed_weights: torch.Tensor, dense: torch.Tensor) -> torch.Tensor:
    return gather_rows(indices, offsets, weights, dense)


@_gathered_product.register_fake
def _gathered_product_shape(indices, offsets, weights, transposed_indices, transposed_offsets,
                            transposed_weights, dense):
    return dense.new_empty((offsets.shape[0], dense.shape[1]), dtype=gather_dtype(dense))


def _gathered_product_context(ctx, inputs, output) -> None:
    ctx.save_for_backward(*inputs[3:6])
    ctx.dtype = inputs[6].dtype


def _gathered_product_backward(ctx, grad: torch.Tensor):
    indices, offsets, weights = ctx.saved_tensors
    dense = _gathered_product(indices, offsets, weights, indices, offsets, weights,
                              grad.contiguous())
    return None, None, None, None, None, None, dense.to(ctx.dtype)


_gathered_product.register_autograd(_gathered_product_backward,
                                    setup_context=_gathered_product_context)


class GatherPair(NamedTuple):
    """A CSR matrix and its transpose, as the parts :func:`gather_rows` takes (plain tensors)."""

    indices: torch.Tensor
    offsets: torch.Tensor
    weights: torch.Tensor
    transposed_indices: torch.Tensor
    transposed_offsets: torch.Tensor
    transposed_weights: torch.Tensor

    @classmethod
    def of(cls, matrix: torch.Tensor, dtype: torch.dtype) -> 'GatherPair':
        """Return the pair of a CSR ``matrix``, its values in ``dtype`` (cast once)."""
        transposed = transpose_csr(matrix)

        def values(csr: torch.Tensor) -> torch.Tensor:  # a copy: cast, or cloned if no cast
            return csr.values().clone() if csr.values().dtype == dtype else csr.values().to(dtype)

        # Copies: a CSR tensor's parts are views that torch.compile cannot take as inputs.
        return cls(matrix.col_indices().clone(), matrix.crow_indices()[:-1].clone(),
                   values(matrix), transposed.col_indices().clone(),
                   transposed.crow_indices()[:-1].clone(), values(transposed))


def gathered_product(pair: GatherPair, dense: torch.Tensor) -> torch.Tensor:
    """
    Return ``matrix @ dense`` for a bilinear matrix (:func:`gather_rows`), differentiable.

    The backward, a scatter, is a gather with the transpose, built once, not every step. A
    custom operator (``lrda::gathered_product``, with its shape and gradient registered):
    torch.compile traces it as one node, where a CSR tensor cannot be traced at all.
    """
    return _gathered_product(*pair, dense)


def transpose_csr(matrix: torch.Tensor) -> torch.Tensor:
    """
    Return the transpose of a CSR matrix, as CSR (``matrix.t().to_sparse_csr()``).

    A stable sort of the entries by column (each column's entries in row order), with 32-bit
    keys where the columns fit: half the memory traffic of PyTorch's conversion, whose 64-bit
    sort of a frame's million entries was most of the per-frame set-up of the sparse head.
    """
    rows, columns = matrix.shape
    crow, col = matrix.crow_indices(), matrix.col_indices()
    keys = col.to(torch.int32) if columns < 2 ** 31 else col
    sorted_keys, order = torch.sort(keys, stable=True)
    # Sizes from the host (no read of the device, which would wait for it mid-step).
    # Each entry's row: a count of the row starts at or before it.
    starts = torch.zeros(col.numel() + 1, dtype=crow.dtype, device=col.device)
    starts.index_add_(0, crow[1:-1], torch.ones_like(crow[1:-1]))
    entry_rows = starts[:-1].cumsum(0)
    # Each column's first entry among the sorted ones.
    transposed_crow = torch.searchsorted(
        sorted_keys, torch.arange(columns + 1, dtype=keys.dtype, device=col.device),
        out_int32=crow.dtype == torch.int32)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', UserWarning)
        return torch.sparse_csr_tensor(transposed_crow, entry_rows[order],
                                       matrix.values()[order], size=(columns, rows),
                                       check_invariants=False)


def pixel_rows(features: torch.Tensor) -> torch.Tensor:
    """
    Return (1, C, h, w) features as (h*w, C) rows.

    A free view of channels-last features, whose gradient flows back channels-last too (no
    layout conversion before conv1's backward).
    """
    return features.permute(0, 2, 3, 1).reshape(-1, features.shape[1])


def upsample_rows(band: torch.Tensor, band_first_row: int, size_in: int,
                  rows: tuple[int, int], size_out: tuple[int, int]) -> torch.Tensor:
    """
    Return rows [rows) of ``F.interpolate(image, size_out, bilinear, align_corners=True)``.

    ``band`` holds rows [band_first_row, ...) of an image ``size_in`` rows high and must cover
    the source rows (see :func:`~lrda_ros.engine.strips.source_rows`). Each output row blends
    its two source rows with the full image's weights (a small dense matrix product over rows:
    a free view of channels-last features), then the width is resized as a whole.
    """
    low, high, fraction = bilinear_source(torch.arange(*rows, device=band.device), size_in,
                                          size_out[0])
    blend = torch.zeros(len(fraction), band.shape[2], dtype=band.dtype, device=band.device)
    output_rows = torch.arange(len(fraction), device=band.device)
    blend.index_put_((output_rows, low - band_first_row), (1 - fraction).to(band.dtype),
                     accumulate=True)
    blend.index_put_((output_rows, high - band_first_row), fraction.to(band.dtype),
                     accumulate=True)
    batch, channels, _, width = band.shape
    if band.is_contiguous(memory_format=torch.channels_last):  # rows of (width * channels)
        flat = band.permute(0, 2, 3, 1).reshape(batch, band.shape[2], width * channels)
        tall = (blend @ flat).reshape(batch, -1, width, channels).permute(0, 3, 1, 2)
    else:
        tall = blend @ band
    return F.interpolate(tall, size=(tall.shape[2], size_out[1]), mode='bilinear',
                         align_corners=True)


@dataclass
class BandResizes:
    """
    Bands of rows of bilinear resizes (:func:`upsample_rows`) of bfloat16 features, as gathers.

    A frame's bands are constants (they follow its LiDAR rows), so each sampling matrix and its
    transpose are built on first use and reused by every step. The same numbers as
    :func:`upsample_rows` to rounding: one rounding to bfloat16 instead of two, the bilinear
    weights rounded to it as the row blend's are. Float32 features keep
    :func:`upsample_rows`, whose rounding a float32 run reproduces to the last digit: the steps
    amplify any change of it (Adam's first steps move each weight by about the learning rate
    whatever the size of its gradient, so a gradient near zero takes the sign of its rounding).
    """

    _matrices: dict = field(default_factory=dict, repr=False)

    def upsample_rows(self, band: torch.Tensor, band_first_row: int, size_in: int,
                      rows: tuple[int, int], size_out: tuple[int, int]) -> torch.Tensor:
        """Return rows [rows) of a (1, C, h, w) band's resize (as :func:`upsample_rows`)."""
        if band.dtype != torch.bfloat16:
            return upsample_rows(band, band_first_row, size_in, rows, size_out)
        in_rows, in_w = band.shape[2:]
        key = (band_first_row, in_rows, size_in, in_w, rows, size_out, band.device)
        if key not in self._matrices:
            out_w = size_out[1]
            positions = torch.arange(rows[0] * out_w, rows[1] * out_w, device=band.device)
            matrix = bilinear_matrix(positions, size_out, (size_in, in_w),
                                     input_rows=(band_first_row, band_first_row + in_rows))
            self._matrices[key] = GatherPair.of(matrix, torch.bfloat16)
        samples = gathered_product(self._matrices[key], pixel_rows(band))
        channels_last = samples.view(1, rows[1] - rows[0], size_out[1], band.shape[1])
        return channels_last.permute(0, 3, 1, 2)
