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
import sys
from typing import Callable

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


@lru_cache(maxsize=1)
def _turbo_words() -> np.ndarray:
    """Return the Turbo table as 256 native int32 words, each one colour's r, g, b bytes and 0."""
    rgbx = np.zeros((256, 4), dtype=np.uint8)
    rgbx[:, :3] = _turbo_table()
    return rgbx.view(np.int32).reshape(256)


def _turbo_lookup(levels: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Return the (H, W, 3) colours of (H, W) levels by OpenCV's lookup; black off ``mask``."""
    # One 4-byte word per pixel (a one-channel lookup), then its 4th byte dropped: fewer passes
    # than looking up each of three merged channels.
    words = cv2.LUT(levels, _turbo_words())
    if mask is not None:
        np.multiply(words, mask, out=words)  # the all-zero word: black
    return cv2.cvtColor(words.view(np.uint8).reshape(*words.shape, 4), cv2.COLOR_RGBA2RGB)


def turbo(values: np.ndarray) -> np.ndarray:
    """Map values in [0, 1] (clipped, NaN as 0) to (..., 3) uint8 Turbo colours."""
    levels = _turbo_levels(values)
    return _turbo_lookup(levels.reshape(-1, 1)).reshape(*levels.shape, 3)


def depth_display_range(depth: np.ndarray, low_percentile: float = 2.0,
                        high_percentile: float = 98.0) -> tuple[float, float]:
    """Return a robust (near, far) range in metres from the valid pixels (1, 10 if none)."""
    array = np.asarray(depth)
    percentiles = [low_percentile, high_percentile]
    if array.dtype == np.float32:
        found = _float32_percentiles(np.ascontiguousarray(array), percentiles)
        if found is None:
            return 1.0, 10.0
        near, far = found
    else:
        valid = array[np.isfinite(array) & (array > 0)]
        if valid.size == 0:
            return 1.0, 10.0
        near, far = np.percentile(valid, percentiles, overwrite_input=True)
    return float(near), float(max(far, near * 1.001))


#: The top 16 bits (sign, exponent, 7 mantissa bits) of float32 +infinity. Positive finite
#: float32 values order as these keys do and all lie below it; inf, NaN and every negative
#: value (sign bit set) lie at or above it.
_INFINITY_KEY = 0x7F80
#: calcHist counts in float32, exact up to 2^24: longer arrays are counted in chunks.
_HISTOGRAM_CHUNK = 1 << 24


def _high_halves(values: np.ndarray) -> np.ndarray:
    """Return the top 16 bits of each of C-contiguous float32 ``values``, (1, N) uint16."""
    pairs = values.reshape(-1).view(np.uint16).reshape(1, -1, 2)
    # The high half of a native float32: the second uint16 on little-endian machines.
    return cv2.extractChannel(pairs, 1 if sys.byteorder == 'little' else 0)


def _key_counts(keys: np.ndarray) -> np.ndarray:
    """Return how many of the (1, N) uint16 ``keys`` take each value, (65536,) int64."""
    counts = np.zeros(1 << 16, dtype=np.int64)
    for start in range(0, keys.shape[1], _HISTOGRAM_CHUNK):
        # OpenCV's histogram: several times faster than np.bincount of uint16.
        chunk = keys[:, start:start + _HISTOGRAM_CHUNK]
        counts += cv2.calcHist([chunk], [0], None, [1 << 16], [0, 1 << 16]).reshape(-1).astype(
            np.int64)
    return counts


def _float32_percentiles(values: np.ndarray,
                         percentiles: list[float]) -> np.ndarray | None:
    """
    Return ``np.percentile`` of the positive finite float32 ``values`` (None if there are none).

    A radix select on the whole array: one histogram of every value's top 16 bits counts the
    valid values and finds each needed order statistic's key; only the values with that key
    are gathered and partitioned. Key 0 holds +0.0 (not valid) beside the positive subnormals.
    """
    if values.size == 0:
        return None
    keys = _high_halves(values)
    counts = _key_counts(keys)
    counts[_INFINITY_KEY:] = 0
    flat_values, flat_keys = values.reshape(-1), keys.reshape(-1)

    def members(key: int) -> np.ndarray:
        # Compared as uint16: an int64 key would widen every key first.
        found = flat_values[flat_keys == np.uint16(key)]
        return found[found > 0] if key == 0 else found

    if counts[0]:
        counts[0] = members(0).size
    cumulative = np.cumsum(counts)
    if not cumulative[-1]:
        return None

    def at_ranks(ranks: np.ndarray) -> np.ndarray:
        bins = np.searchsorted(cumulative, ranks, side='right')
        found = np.empty(len(ranks), dtype=values.dtype)
        for key in np.unique(bins):
            within = ranks[bins == key] - (cumulative[key - 1] if key else 0)
            found[bins == key] = np.partition(members(int(key)), within)[within]
        return found

    return _linear_percentiles(int(cumulative[-1]), at_ranks, percentiles)


def _linear_percentiles(count: int, at_ranks: Callable[[np.ndarray], np.ndarray],
                        percentiles: list[float]) -> np.ndarray:
    """
    Return ``np.percentile`` of ``count`` values, ``at_ranks`` giving their order statistics.

    numpy's 'linear' method and arithmetic (the same float64 results), on the few order
    statistics it needs instead of partitioning every value.
    """
    last = count - 1
    virtual = last * np.true_divide(percentiles, 100)
    previous = np.minimum(np.floor(virtual), last).astype(np.intp)
    gamma = virtual - previous
    low, high = np.split(at_ranks(np.concatenate([previous, np.minimum(previous + 1, last)])), 2)
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
    if (isinstance(depth, np.ndarray) and depth.ndim == 2 and depth.dtype == np.float32
            and np.result_type(depth, near, far) == np.float32):
        return _turbo_lookup(_float32_levels(depth, near, far), valid)
    with np.errstate(divide='ignore', invalid='ignore'):
        closeness = (1.0 / np.where(valid, depth, far) - 1.0 / far) / (1.0 / near - 1.0 / far)
    levels = _turbo_levels(closeness).reshape(-1, 1)
    return _turbo_lookup(levels, valid.reshape(-1, 1)).reshape(*np.shape(depth), 3)


def _float32_levels(depth: np.ndarray, near: float, far: float) -> np.ndarray:
    """
    Return the (H, W) levels of float32 ``depth`` in ``[near, far]``, in one float32 buffer.

    The float32 operations of :func:`colorize_depth`'s general path and :func:`_turbo_levels`,
    in place: the same levels on the valid pixels (the others' are masked black after).
    OpenCV's conversion to uint8 rounds half to even as ``np.rint`` does and saturates (NaN to
    0), but only for values within int32: the values are first capped at 255.
    """
    with np.errstate(divide='ignore', invalid='ignore', over='ignore'):
        closeness = np.divide(np.float32(1.0), depth)
        np.subtract(closeness, np.float32(1.0 / far), out=closeness)
        np.divide(closeness, np.float32(1.0 / near - 1.0 / far), out=closeness)
        np.multiply(closeness, np.float32(255.0), out=closeness)
        np.minimum(closeness, np.float32(255.0), out=closeness)
    return cv2.add(closeness, 0.0, dtype=cv2.CV_8U)
