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
Classical (non-learned) depth completion: a pure-numpy IP-Basic.

Ku, Harakeh and Waslander, "In Defense of Classical Image Processing: Fast Depth Completion on
the CPU" (CRV 2018), ``fill_in_fast``: invert depth so that near points win the max-filters,
dilate with a 5x5 diamond, close holes with a 5x5 square, fill small holes from a 7x7 dilation,
optionally extend the topmost value of each column to the image top and fill large holes from a
31x31 dilation, then median (5x5) and Gaussian (5x5) blur and invert back. It is the floor any
learned method should beat. OpenCV is not required: grey dilation/erosion loop over a handful
of kernel offsets (square kernels are separable), the median uses strided windows.

Departures from the original, all documented in :func:`ip_basic_complete`: depths beyond
``max_depth`` are clipped to it; the Gaussian blur is normalised over filled pixels only (no
darkening at hole borders); with ``extrapolate`` any pixel still empty after the 31x31 fill
takes the nearest filled value along its row, then along its column, so nothing stays empty.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

#: IP-Basic's 5x5 diamond dilation kernel.
DIAMOND_KERNEL_5 = (
    (0, 0, 1, 0, 0),
    (0, 1, 1, 1, 0),
    (1, 1, 1, 1, 1),
    (0, 1, 1, 1, 0),
    (0, 0, 1, 0, 0),
)

# Inverted depths are (max_depth + margin) - depth, so that every measured depth, including
# max_depth itself, stays > 0 and 0 can keep meaning "empty" through all the max filters.
_INVERSION_MARGIN = 1.0
_MEDIAN_ROWS_PER_CHUNK = 64


def _reduce_shifted(padded: np.ndarray, offsets: list[tuple[int, int]],
                    shape: tuple[int, int], reduce: np.ufunc) -> np.ndarray:
    """Reduce (max/min) the windows of ``padded`` at ``offsets`` into an array of ``shape``."""
    height, width = shape
    dy, dx = offsets[0]
    out = padded[dy:dy + height, dx:dx + width].copy()
    for dy, dx in offsets[1:]:
        reduce(out, padded[dy:dy + height, dx:dx + width], out=out)
    return out


def dilate(image: np.ndarray, footprint: np.ndarray) -> np.ndarray:
    """Grey dilation (max filter) of a non-negative image; outside pixels count as 0."""
    footprint = np.asarray(footprint, dtype=bool)
    ky, kx = footprint.shape
    padded = np.pad(image, ((ky // 2, ky - 1 - ky // 2), (kx // 2, kx - 1 - kx // 2)))
    offsets = [(int(dy), int(dx)) for dy, dx in zip(*np.nonzero(footprint))]
    return _reduce_shifted(padded, offsets, image.shape, np.maximum)


def _rect_filter(image: np.ndarray, size: int, reduce: np.ufunc, pad_value: float) -> np.ndarray:
    """Separable square max/min filter of side ``size`` (odd), constant padding."""
    half = size // 2
    padded = np.pad(image, ((0, 0), (half, half)), constant_values=pad_value)
    rows = _reduce_shifted(padded, [(0, dx) for dx in range(size)], image.shape, reduce)
    padded = np.pad(rows, ((half, half), (0, 0)), constant_values=pad_value)
    return _reduce_shifted(padded, [(dy, 0) for dy in range(size)], image.shape, reduce)


def dilate_square(image: np.ndarray, size: int) -> np.ndarray:
    """Grey dilation with a ``size`` x ``size`` square of a non-negative image."""
    return _rect_filter(image, size, np.maximum, 0.0)


def erode_square(image: np.ndarray, size: int) -> np.ndarray:
    """Grey erosion with a ``size`` x ``size`` square; outside pixels are ignored."""
    return _rect_filter(image, size, np.minimum, np.inf)


def median_filter(image: np.ndarray, size: int = 5) -> np.ndarray:
    """Median filter with a ``size`` x ``size`` window (odd ``size``), edge-replicated border."""
    half = size // 2
    windows = sliding_window_view(np.pad(image, half, mode='edge'), (size, size))
    out = np.empty_like(image)
    middle = size * size // 2
    for r0 in range(0, image.shape[0], _MEDIAN_ROWS_PER_CHUNK):
        block = windows[r0:r0 + _MEDIAN_ROWS_PER_CHUNK].reshape(-1, size * size)
        out[r0:r0 + _MEDIAN_ROWS_PER_CHUNK] = np.partition(block, middle, axis=1)[:, middle] \
            .reshape(-1, image.shape[1])
    return out


def _gaussian_kernel(size: int) -> np.ndarray:
    """Return OpenCV's default 1-D Gaussian for ``size`` (sigma = 0.3 (size/2 - 1) + 0.8)."""
    sigma = 0.3 * ((size - 1) * 0.5 - 1) + 0.8
    x = np.arange(size) - size // 2
    kernel = np.exp(-0.5 * (x / sigma) ** 2)
    return kernel / kernel.sum()


def _convolve_separable(image: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """Convolve rows then columns with a symmetric 1-D kernel, zero padding."""
    half = kernel.size // 2
    height, width = image.shape
    padded = np.pad(image, ((0, 0), (half, half)))
    rows = sum(w * padded[:, i:i + width] for i, w in enumerate(kernel))
    padded = np.pad(rows, ((half, half), (0, 0)))
    return sum(w * padded[i:i + height, :] for i, w in enumerate(kernel))


def masked_gaussian_blur(image: np.ndarray, valid: np.ndarray, size: int = 5) -> np.ndarray:
    """Gaussian-blur ``image`` at ``valid`` pixels, averaging over valid neighbours only."""
    kernel = _gaussian_kernel(size)
    weights = valid.astype(np.float64)
    num = _convolve_separable(np.where(valid, image, 0.0).astype(np.float64), kernel)
    den = _convolve_separable(weights, kernel)
    out = image.copy()
    ok = valid & (den > 0)
    out[ok] = (num[ok] / den[ok]).astype(image.dtype)
    return out


def _fill_nearest_along_rows(image: np.ndarray) -> np.ndarray:
    """Fill zeros with the nearest non-zero value of the same row (rows without any stay 0)."""
    height, width = image.shape
    filled = image > 0
    cols = np.arange(width)
    left = np.maximum.accumulate(np.where(filled, cols, -1), axis=1)
    right = np.minimum.accumulate(np.where(filled, cols, width)[:, ::-1], axis=1)[:, ::-1]
    dist_left = np.where(left >= 0, cols - left, width + 1)
    dist_right = np.where(right < width, right - cols, width + 1)
    source = np.where(dist_left <= dist_right, left, right)
    has_source = np.minimum(dist_left, dist_right) <= width
    rows = np.arange(height)[:, None]
    values = image[rows, np.clip(source, 0, width - 1)]
    return np.where(~filled & has_source, values, image)


def _extend_columns_to_top(image: np.ndarray) -> np.ndarray:
    """Copy each column's topmost non-zero value to the rows above it."""
    filled = image > 0
    top = np.argmax(filled, axis=0)
    has_any = filled.any(axis=0)
    values = image[top, np.arange(image.shape[1])]
    above = (np.arange(image.shape[0])[:, None] < top[None, :]) & has_any[None, :]
    return np.where(above, values[None, :], image)


def ip_basic_complete(sparse_depth: np.ndarray, max_depth: float = 100.0,
                      extrapolate: bool = True) -> np.ndarray:
    """
    Densify sparse depth with IP-Basic's ``fill_in_fast`` morphology (metres in, metres out).

    Input pixels that are non-finite or <= 0 are empty; depths above ``max_depth`` are clipped
    to it. With ``extrapolate=True`` the output has no empty pixel: the topmost value of each
    column is extended upwards, large holes take a 31x31 dilation, and whatever is still
    empty takes the nearest filled value along its row, then along its column. Without it,
    unreachable pixels stay 0. The returned array is HxW float32 in ``(0, max_depth]`` where
    filled.

    :raises ValueError: when ``sparse_depth`` is not 2-D, ``max_depth`` is not positive, or no
        input pixel holds a depth.
    """
    depth = np.asarray(sparse_depth, dtype=np.float32)
    if depth.ndim != 2:
        raise ValueError(f'sparse_depth must be HxW, got shape {depth.shape}')
    if not max_depth > 0:
        raise ValueError(f'max_depth must be positive, got {max_depth}')
    with np.errstate(invalid='ignore'):
        valid = np.isfinite(depth) & (depth > 0)
    if not valid.any():
        raise ValueError('sparse_depth has no valid (finite, > 0) pixel to complete from')
    reference = np.float32(max_depth + _INVERSION_MARGIN)
    inverted = np.where(valid, reference - np.minimum(depth, np.float32(max_depth)),
                        np.float32(0.0)).astype(np.float32)

    inverted = dilate(inverted, np.array(DIAMOND_KERNEL_5))
    inverted = erode_square(dilate_square(inverted, 5), 5)
    empty = inverted <= 0
    inverted[empty] = dilate_square(inverted, 7)[empty]
    if extrapolate:
        inverted = _extend_columns_to_top(inverted)
        empty = inverted <= 0
        inverted[empty] = dilate_square(inverted, 31)[empty]
        inverted = _fill_nearest_along_rows(inverted)
        inverted = _fill_nearest_along_rows(inverted.T).T
    inverted = median_filter(inverted, 5)
    filled = inverted > 0
    inverted = masked_gaussian_blur(inverted, filled, 5)
    return np.where(filled, reference - inverted, np.float32(0.0)).astype(np.float32)
