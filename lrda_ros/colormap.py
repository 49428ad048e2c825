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
Colour-map depth for display (rviz2 images, evaluation figures).

Depth is coloured by inverse depth so near structure gets most of the colour range, with the
Turbo palette (near = red, far = blue) and black where there is no depth. Each pixel's level
(0..255) picks its colour from the table by OpenCV's lookup (``cv2.LUT``).
"""

from __future__ import annotations

from functools import lru_cache

import cv2
import numpy as np


@lru_cache(maxsize=1)
def _turbo_table() -> np.ndarray:
    """Return matplotlib's 256-entry Turbo table as uint8 (loaded once)."""
    from matplotlib import colormaps

    return (colormaps['turbo'](np.linspace(0.0, 1.0, 256))[:, :3] * 255.0 + 0.5).astype(np.uint8)


def _turbo_levels(values: np.ndarray) -> np.ndarray:
    """Return values in [0, 1] as uint8 levels 0..255 of the table (clipped, NaN as 0)."""
    levels = np.asarray(values, dtype=np.float32) * np.float32(255.0)
    np.rint(levels, out=levels)
    levels[np.isnan(levels)] = 0.0
    np.clip(levels, 0, 255, out=levels)
    return levels.astype(np.uint8)


def _turbo_lookup(levels: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Return the (H, W, 3) colours of (H, W) levels by OpenCV's lookup; black off ``mask``."""
    table = _turbo_table().reshape(256, 1, 3)
    rgb = cv2.LUT(cv2.merge((levels, levels, levels)), table)
    return rgb if mask is None else cv2.bitwise_and(rgb, rgb, mask=mask.view(np.uint8))


def turbo(values: np.ndarray) -> np.ndarray:
    """Map values in [0, 1] (clipped, NaN as 0) to (..., 3) uint8 Turbo colours."""
    levels = _turbo_levels(values)
    return _turbo_lookup(levels.reshape(-1, 1)).reshape(*levels.shape, 3)


def depth_display_range(depth: np.ndarray, low_percentile: float = 2.0,
                        high_percentile: float = 98.0) -> tuple[float, float]:
    """Return a robust (near, far) range in metres from the valid pixels (1, 10 if none)."""
    valid = depth[np.isfinite(depth) & (depth > 0)]
    if valid.size == 0:
        return 1.0, 10.0
    percentiles = [low_percentile, high_percentile]
    near, far = (_linear_percentiles(valid, percentiles) if valid.dtype == np.float32
                 else np.percentile(valid, percentiles, overwrite_input=True))
    return float(near), float(max(far, near * 1.001))


def _order_statistics(values: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """
    Return the values of positive finite float32 ``values`` at ``ranks`` once sorted.

    A radix select: positive float32 values order as their bit patterns do, so one histogram
    of the top 16 bits finds each rank's bin, and only that bin's values are sorted.
    """
    keys = values.view(np.int32) >> 15
    cumulative = np.cumsum(np.bincount(keys, minlength=1 << 16))
    bins = np.searchsorted(cumulative, ranks, side='right')
    found = np.empty(len(ranks), dtype=values.dtype)
    for bin_index in np.unique(bins):
        members = np.sort(values[keys == bin_index])
        before = cumulative[bin_index - 1] if bin_index else 0
        found[bins == bin_index] = members[ranks[bins == bin_index] - before]
    return found


def _linear_percentiles(values: np.ndarray, percentiles: list[float]) -> np.ndarray:
    """
    Return ``np.percentile(values, percentiles)`` of positive finite float32 values.

    numpy's 'linear' method and arithmetic (the same float64 results), on the order statistics
    found by :func:`_order_statistics` instead of partitioning every value.
    """
    last = values.size - 1
    virtual = last * np.true_divide(percentiles, 100)
    previous = np.minimum(np.floor(virtual), last).astype(np.intp)
    gamma = virtual - previous
    low, high = np.split(_order_statistics(
        values, np.concatenate([previous, np.minimum(previous + 1, last)])), 2)
    step = high - low
    # numpy's _lerp: from the lower value, or back from the upper one from half way on.
    return np.where(gamma >= 0.5, high - step * (1 - gamma), low + step * gamma)


def colorize_depth(depth: np.ndarray, near: float | None = None,
                   far: float | None = None) -> np.ndarray:
    """
    Return an (H, W, 3) uint8 RGB image of depth; invalid pixels (NaN, <= 0) are black.

    ``near``/``far`` fix the range in metres (pass the same values to compare images); None
    picks a robust range from this image. When only one end is fixed and this image's automatic
    other end falls on the wrong side of it, the automatic end is clamped just past the fixed
    one (the whole image then takes the colour of that end) instead of failing every frame.
    """
    if near is None or far is None:
        auto_near, auto_far = depth_display_range(depth)
        if near is None and far is not None and far > 0:
            auto_near = min(auto_near, far / 1.001)
        if far is None and near is not None and near > 0:
            auto_far = max(auto_far, near * 1.001)
        near = auto_near if near is None else near
        far = auto_far if far is None else far
    if not 0 < near < far:
        raise ValueError(f'need 0 < near < far, got near={near}, far={far}')
    with np.errstate(invalid='ignore'):
        valid = (depth > 0) & (depth < np.inf)
    with np.errstate(divide='ignore', invalid='ignore'):
        closeness = (1.0 / np.where(valid, depth, far) - 1.0 / far) / (1.0 / near - 1.0 / far)
    levels = _turbo_levels(closeness).reshape(-1, 1)
    return _turbo_lookup(levels, valid.reshape(-1, 1)).reshape(*np.shape(depth), 3)
