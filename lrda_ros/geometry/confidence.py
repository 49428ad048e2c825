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
A per-pixel confidence for completed depth, for any backbone: ``depth/confidence``.

Values in [0, 1], 1 = trusted, NaN where the depth is NaN. It is the product of what the
optimization knows about each pixel:

- support: how far the pixel is from the nearest LiDAR pixel the engine was given, in units of
  the LiDAR's mean spacing ``s = sqrt(H W / points)``: ``1 / (1 + (d / 2s)^2)``. Depth is
  measured at the points and inferred between them.
- local fit: the mean relative residual ``|depth - lidar| / lidar`` of the LiDAR pixels within
  ``2s`` (where none are, the frame's mean): ``1 / (1 + residual / 0.05)``. Where the fitted
  depth disagrees with its own anchors, it is less trustworthy around them too.
- edges: the largest log-depth step to a neighbouring pixel, ``1 / (1 + step / 0.1)``. Depth
  at a discontinuity is the least certain (mixed pixels, a boundary off by a pixel).
- the model's own confidence where it has one (UniDepthV2's; the inverse of Depth Anything 3
  DualDPT's, 1 / (exp(c) + 1)): its per-image percentile, mapped
  to ``0.5 + 0.5 (1 - rank)``, so it reorders pixels without overruling the geometry.

It ranks pixels (see ``lrda eval``'s sparsification curves and AUSE); it is not a calibrated
probability. Distances are chessboard distances (OpenCV's exact distance transform), resolved at
a few radii; sums over windows are OpenCV box filters. Each is one library pass over the image,
a few milliseconds at KITTI size (doc/performance.md, benchmarks/host_path.py).
"""

from __future__ import annotations

from concurrent.futures import Executor

import cv2
import numpy as np

from .second_thread import second_thread

#: Radii (pixels) at which the distance to the nearest LiDAR pixel is resolved.
_RADII = (0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)
#: Relative residual (|depth - lidar| / lidar) at which the local-fit factor is 0.5.
RESIDUAL_SCALE = 0.05
#: Log-depth step to a neighbour at which the edge factor is 0.5.
EDGE_SCALE = 0.1


def _lidar_pixels(sparse_depth: np.ndarray) -> np.ndarray:
    with np.errstate(invalid='ignore'):
        return (sparse_depth > 0) & (sparse_depth < np.inf)


def _distance_codes(lidar: np.ndarray) -> np.ndarray:
    """
    Return each pixel's exact chessboard distance to a ``lidar`` pixel, uint8 (255: or more).

    ``cv2.DIST_C`` is exact (integers in float32); every radius of _RADII lies below 255.
    """
    elsewhere = (~lidar).view(np.uint8)  # 0 on the LiDAR pixels
    exact = cv2.distanceTransform(elsewhere, cv2.DIST_C, 3)
    # Without a LiDAR pixel OpenCV leaves float32's largest value: capped at 255 (beyond every
    # radius) first, as OpenCV's conversion to uint8 saturates only within int32; both OpenCV
    # passes take a third of numpy's minimum and cast.
    cv2.threshold(exact, 255, 255, cv2.THRESH_TRUNC, dst=exact)
    return cv2.convertScaleAbs(exact)


def _resolved_table(shape: tuple[int, ...]) -> np.ndarray:
    """
    Return, per distance code, the distance resolved at _RADII (float64, 256 entries).

    The next radius up (the smallest window that holds a LiDAR pixel), or the image's longer
    side (of ``shape``) beyond the largest radius.
    """
    resolved = np.array(_RADII + (max(shape),), dtype=np.float64)
    return resolved[np.searchsorted(np.asarray(_RADII), np.arange(256))]


def lidar_distance(sparse_depth: np.ndarray) -> np.ndarray:
    """Return each pixel's chessboard distance (pixels) to a LiDAR pixel, resolved at _RADII."""
    return cv2.LUT(_distance_codes(_lidar_pixels(sparse_depth)),
                   _resolved_table(sparse_depth.shape))


def _spacing(lidar: np.ndarray) -> float:
    points = int(np.count_nonzero(lidar))
    return float(np.sqrt(lidar.size / points)) if points else float('inf')


def lidar_spacing(sparse_depth: np.ndarray) -> float:
    """Return the LiDAR's mean spacing in pixels, ``sqrt(H W / points)`` (inf without points)."""
    return _spacing(_lidar_pixels(sparse_depth))


def _support(lidar: np.ndarray, spacing: float) -> np.ndarray:
    # One value per distance, looked up: the same float32 as computed per pixel.
    table = (1.0 / (1.0 + (_resolved_table(lidar.shape) / (2.0 * spacing)) ** 2)).astype(
        np.float32)
    return cv2.LUT(_distance_codes(lidar), table)


def support_confidence(sparse_depth: np.ndarray) -> np.ndarray:
    """Return the support factor alone (distance to the nearest LiDAR pixel), in [0, 1]."""
    lidar = _lidar_pixels(sparse_depth)
    return _support(lidar, _spacing(lidar))


def _box_sum(values: np.ndarray, radius: int) -> np.ndarray:
    """Return the float32 sum of ``values`` over the (2 radius + 1)^2 window, 0 outside."""
    size = 2 * radius + 1
    return cv2.boxFilter(values, cv2.CV_32F, (size, size), normalize=False,
                         borderType=cv2.BORDER_CONSTANT)


def _box_count(mask: np.ndarray, radius: int) -> np.ndarray:
    """
    Return how many pixels of bool ``mask`` each (2 radius + 1)^2 window holds, uint16.

    Integer sums (exact) in 16 bits: fewer bytes to move than float32, and every window of the
    radii used here (2 x 2 spacings) holds far fewer than 65536 pixels.
    """
    size = 2 * radius + 1
    depth = cv2.CV_16U if size * size < 1 << 16 else cv2.CV_32F
    return cv2.boxFilter(mask.view(np.uint8), depth, (size, size), normalize=False,
                         borderType=cv2.BORDER_CONSTANT)


def _fit_factor(depth: np.ndarray, sparse_depth: np.ndarray, lidar: np.ndarray,
                spacing: float) -> np.ndarray:
    lidar = lidar & np.isfinite(depth)
    at = np.flatnonzero(lidar)  # a few percent of the pixels: computed there only
    if not at.size:
        return np.ones(depth.shape, dtype=np.float32)
    residual = np.zeros(depth.shape, dtype=np.float32)
    measured = sparse_depth.reshape(-1)[at]
    values = np.abs(depth.reshape(-1)[at] - measured, dtype=np.float32)
    values /= measured
    residual.reshape(-1)[at] = values
    radius = int(min(max(2.0 * spacing, 1.0), max(depth.shape)))
    # float32 sums of at most a few hundred residuals: float32 rounding, the output's own.
    total = _box_sum(residual, radius)
    count = _box_count(lidar, radius)
    # The frame's mean residual, summed over the LiDAR pixels alone (the rest are zeros).
    fallback = np.float32(values.sum(dtype=np.float64) / at.size)
    with np.errstate(invalid='ignore', divide='ignore'):
        local = np.divide(total, count, out=total)
    np.copyto(local, fallback, where=count == 0)
    # 1 / (1 + local / scale), as scale / (scale + local): one pass fewer.
    scale = np.float32(RESIDUAL_SCALE)
    return np.divide(scale, np.add(local, scale, out=local), out=local)


def _edge_factor(depth: np.ndarray, rows: slice = slice(None)) -> np.ndarray:
    """
    Return ``1 / (1 + step / EDGE_SCALE)`` of ``depth``'s ``rows`` (a slice; all by default).

    ``step`` is the largest log-depth step to a neighbour: the rows are computed with one row
    more on each side where there is one, so any split of the rows gives the whole's values.
    """
    start, stop, _ = rows.indices(depth.shape[0])
    low, high = max(start - 1, 0), min(stop + 1, depth.shape[0])
    factor = _edge_factor_of(depth[low:high])
    return factor[start - low:factor.shape[0] - (high - stop)]


def _edge_factor_of(depth: np.ndarray) -> np.ndarray:
    """Return :func:`_edge_factor` of the whole of ``depth``."""
    with np.errstate(invalid='ignore', divide='ignore'):
        log_depth = np.log(depth, dtype=np.float32)
    # No depth, or <= 0: its steps do not count.
    unusable = np.isfinite(log_depth)
    np.logical_not(unusable, out=unusable)
    kernel = np.ones((3, 3), np.uint8)
    # The largest step is to the largest or the smallest neighbour: 3x3 max and min filters;
    # the unusable pixels' own steps (inf - inf) are set to 0 after. In place, one buffer per
    # filter: a masked copy and a subtraction each, no temporaries.
    with np.errstate(invalid='ignore'):
        np.copyto(log_depth, np.float32(-np.inf), where=unusable)
        step = cv2.dilate(log_depth, kernel, borderType=cv2.BORDER_REPLICATE)
        np.subtract(step, log_depth, out=step)
        np.copyto(log_depth, np.float32(np.inf), where=unusable)
        down = cv2.erode(log_depth, kernel, borderType=cv2.BORDER_REPLICATE)
        np.subtract(log_depth, down, out=down)
        np.maximum(step, down, out=step)
    np.copyto(step, np.float32(0.0), where=unusable)
    scale = np.float32(EDGE_SCALE)
    return np.divide(scale, np.add(step, scale, out=step), out=step)


def _rank_trust(uncertainty: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Return 1 - the per-image percentile of a larger-is-less-reliable map, over ``valid``."""
    trust = np.ones(uncertainty.shape)
    values = uncertainty[valid]
    if values.size > 1:
        ranks = np.empty(values.size, dtype=np.intp)  # the inverse of the sorting order
        ranks[np.argsort(values, kind='stable')] = np.arange(values.size)
        trust[valid] = 1.0 - ranks / (values.size - 1)
    return trust


def depth_confidence(depth: np.ndarray, sparse_depth: np.ndarray,
                     model_uncertainty: np.ndarray | None = None,
                     beside: Executor | None = None,
                     support: np.ndarray | None = None) -> np.ndarray:
    """
    Return the (H, W) float32 confidence of ``depth`` given the LiDAR input the engine saw.

    ``model_uncertainty``: a model's own per-pixel output where larger means less reliable
    (UniDepthV2's), or None. Values in [0, 1]; NaN exactly where ``depth`` is NaN.
    ``beside``: the caller's second thread (second_thread.py), else one for this call.
    ``support``: :func:`support_confidence` of ``sparse_depth``, computed ahead (it needs no
    depth: the node computes it while the engine runs), read and left unchanged.
    """
    if depth.shape != sparse_depth.shape:
        raise ValueError(f'depth is {depth.shape} but the sparse input is {sparse_depth.shape}')
    if support is not None and (support.shape != depth.shape or support.dtype != np.float32):
        raise ValueError(f'the support factor is {support.dtype} {support.shape}, the depth '
                         f'{depth.shape}: it must be support_confidence of the same sparse map')
    valid = np.isfinite(depth)
    lidar = _lidar_pixels(sparse_depth)
    spacing = _spacing(lidar)
    if not np.isfinite(spacing):  # no LiDAR: nothing supports any pixel
        confidence = np.zeros(depth.shape, dtype=np.float32)
        np.copyto(confidence, np.float32(np.nan), where=~valid)
    else:
        # The distance transform (unless given) and the top half's edges run beside the local
        # fit and the bottom half's edges: OpenCV and numpy release the GIL in each, so the two
        # cores share the work in about equal parts; then each thread multiplies one half.
        half = depth.shape[0] // 2
        with second_thread(beside) as second:
            computed = second.submit(_support, lidar, spacing) if support is None else None
            top = second.submit(_edge_factor, depth, slice(0, half))
            # The products go into the fit (the support may be the caller's, kept unchanged).
            confidence = _fit_factor(depth, sparse_depth, lidar, spacing)
            bottom = _edge_factor(depth, slice(half, None))
            factor = support if computed is None else computed.result()
            upper = second.submit(_multiply_rows, confidence[:half], factor[:half],
                                  top.result(), valid[:half])
            _multiply_rows(confidence[half:], factor[half:], bottom, valid[half:])
            upper.result()
    if model_uncertainty is not None:  # NaN stays NaN
        confidence = (confidence * (0.5 + 0.5 * _rank_trust(
            model_uncertainty, valid & np.isfinite(model_uncertainty)))).astype(np.float32)
    # Each factor lies in [0, 1] by its form (1 / (1 + x^2), s / (s + x) with x >= 0, a
    # percentile's 0.5 + 0.5 (1 - rank)), and so does their product: no clip is needed.
    return confidence


def _multiply_rows(fit: np.ndarray, support: np.ndarray, edges: np.ndarray,
                   valid: np.ndarray) -> None:
    """
    Multiply rows of the fit by the support, then the edges, in place; NaN where invalid.

    ``support * fit`` and ``fit * support`` are the same float32 (a product is commutative),
    then times the edges: the values of the support's rows multiplied in place.
    """
    fit *= support
    fit *= edges
    np.copyto(fit, np.float32(np.nan), where=~valid)
