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
The host stages as they were before their rewrite, kept only as the reference they must equal.

benchmarks/host_path.py times them beside the package's; the tests hold the package's stages to
them (test/test_host_path.py). Nothing in lrda_ros imports this: it is not a second code path.
"""

from __future__ import annotations

import numpy as np

from lrda_ros.geometry.confidence import EDGE_SCALE, RESIDUAL_SCALE

#: Radii (pixels) at which the distance to the nearest LiDAR pixel is resolved.
_RADII = (0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)


def _box_sum(values: np.ndarray, radius: int) -> np.ndarray:
    """Return the sum of ``values`` over the (2 radius + 1)^2 window around each pixel."""
    height, width = values.shape
    integral = np.zeros((height + 1, width + 1))
    integral[1:, 1:] = np.cumsum(np.cumsum(values, axis=0), axis=1)
    rows, cols = np.arange(height), np.arange(width)
    top, bottom = np.clip(rows - radius, 0, height), np.clip(rows + radius + 1, 0, height)
    left, right = np.clip(cols - radius, 0, width), np.clip(cols + radius + 1, 0, width)
    return (integral[bottom][:, right] - integral[top][:, right]
            - integral[bottom][:, left] + integral[top][:, left])


def lidar_distance(sparse_depth: np.ndarray) -> np.ndarray:
    """Return each pixel's chessboard distance (pixels) to a LiDAR pixel, resolved at _RADII."""
    lidar = (np.isfinite(sparse_depth) & (sparse_depth > 0)).astype(np.float64)
    distance = np.full(sparse_depth.shape, float(max(sparse_depth.shape)))
    for radius in reversed(_RADII):
        distance[_box_sum(lidar, radius) > 0] = radius
    return distance


def lidar_spacing(sparse_depth: np.ndarray) -> float:
    """Return the LiDAR's mean spacing in pixels, ``sqrt(H W / points)`` (inf without points)."""
    points = int(np.count_nonzero(np.isfinite(sparse_depth) & (sparse_depth > 0)))
    return float(np.sqrt(sparse_depth.size / points)) if points else float('inf')


def support_confidence(sparse_depth: np.ndarray) -> np.ndarray:
    """Return the support factor alone (distance to the nearest LiDAR pixel), in [0, 1]."""
    spacing = lidar_spacing(sparse_depth)
    return (1.0 / (1.0 + (lidar_distance(sparse_depth) / (2.0 * spacing)) ** 2)).astype(
        np.float32)


def _fit_factor(depth: np.ndarray, sparse_depth: np.ndarray, spacing: float) -> np.ndarray:
    lidar = np.isfinite(sparse_depth) & (sparse_depth > 0) & np.isfinite(depth)
    if not lidar.any():
        return np.ones(depth.shape)
    residual = np.zeros(depth.shape)
    residual[lidar] = np.abs(depth[lidar] - sparse_depth[lidar]) / sparse_depth[lidar]
    radius = int(min(max(2.0 * spacing, 1.0), max(depth.shape)))
    total, count = _box_sum(residual, radius), _box_sum(lidar.astype(np.float64), radius)
    with np.errstate(invalid='ignore', divide='ignore'):
        local = np.where(count > 0, total / count, residual[lidar].mean())
    return 1.0 / (1.0 + local / RESIDUAL_SCALE)


def _edge_factor(depth: np.ndarray) -> np.ndarray:
    with np.errstate(invalid='ignore', divide='ignore'):
        log_depth = np.log(np.where(depth > 0, depth, np.nan))
    step = np.zeros(depth.shape)
    padded = np.pad(log_depth, 1, mode='edge')
    height, width = depth.shape
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            neighbour = padded[1 + dr:1 + dr + height, 1 + dc:1 + dc + width]
            difference = np.abs(neighbour - log_depth)
            step = np.fmax(step, np.where(np.isfinite(difference), difference, 0.0))
    return 1.0 / (1.0 + step / EDGE_SCALE)


def _rank_trust(uncertainty: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Return 1 - the per-image percentile of a larger-is-less-reliable map, over ``valid``."""
    trust = np.ones(uncertainty.shape)
    values = uncertainty[valid]
    if values.size > 1:
        ranks = np.argsort(np.argsort(values, kind='stable'), kind='stable')
        trust[valid] = 1.0 - ranks / (values.size - 1)
    return trust


def depth_confidence(depth: np.ndarray, sparse_depth: np.ndarray,
                     model_uncertainty: np.ndarray | None = None) -> np.ndarray:
    """Return the (H, W) float32 confidence of ``depth`` given the LiDAR input the engine saw."""
    valid = np.isfinite(depth)
    spacing = lidar_spacing(sparse_depth)
    if not np.isfinite(spacing):
        confidence = np.zeros(depth.shape)
    else:
        confidence = (support_confidence(sparse_depth) * _fit_factor(depth, sparse_depth, spacing)
                      * _edge_factor(depth))
    if model_uncertainty is not None:
        confidence = confidence * (0.5 + 0.5 * _rank_trust(model_uncertainty, valid
                                                           & np.isfinite(model_uncertainty)))
    confidence = np.clip(confidence, 0.0, 1.0)
    return np.where(valid, confidence, np.nan).astype(np.float32)
