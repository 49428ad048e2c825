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

"""depth/confidence: range, NaN pattern, what lowers it; sparsification and AUSE by hand."""

from lrda_ros.eval.uncertainty import ause, FRACTIONS, sparsification
from lrda_ros.geometry.confidence import depth_confidence, lidar_distance, support_confidence
import numpy as np
import pytest


def scene(seed: int = 0):
    rng = np.random.default_rng(seed)
    depth = np.full((60, 80), 5.0, np.float32)
    depth[:, 50:] = 2.0  # a depth edge at column 50
    depth[:5, :] = np.nan  # beyond the far limit
    sparse = np.zeros_like(depth)
    rows, cols = rng.integers(5, 60, 200), rng.integers(0, 40, 200)  # LiDAR on the left only
    sparse[rows, cols] = np.nan_to_num(depth[rows, cols])
    return depth, sparse


def test_range_and_nan_pattern():
    depth, sparse = scene()
    uncertainty = np.random.default_rng(1).random(depth.shape).astype(np.float32)
    for model in (None, uncertainty):
        confidence = depth_confidence(depth, sparse, model)
        assert confidence.dtype == np.float32 and confidence.shape == depth.shape
        np.testing.assert_array_equal(np.isnan(confidence), np.isnan(depth))
        finite = confidence[np.isfinite(confidence)]
        assert finite.min() >= 0.0 and finite.max() <= 1.0


def test_lower_far_from_lidar_at_edges_and_where_the_fit_is_off():
    depth, sparse = scene()
    confidence = depth_confidence(depth, sparse)
    assert np.nanmean(confidence[10:, :30]) > 2 * np.nanmean(confidence[10:, 65:])
    assert confidence[30, 50] < 0.7 * confidence[30, 20]  # the edge, against the flat left
    off = depth.copy()
    off[:, :40] *= 1.2  # 20 % off its own LiDAR points
    assert np.nanmean(depth_confidence(off, sparse)[10:, :30]) < 0.5 * np.nanmean(
        confidence[10:, :30])


def test_lidar_distance_is_the_chessboard_distance_where_resolved():
    sparse = np.zeros((40, 40), np.float32)
    sparse[20, 20] = 3.0
    distance = lidar_distance(sparse)
    assert distance[20, 20] == 0 and distance[20, 21] == 1 and distance[23, 17] == 3
    assert distance[20, 26] == 6 and distance[0, 0] == 24  # resolved radii: 6, then 24 for 20
    assert support_confidence(sparse)[20, 20] == 1.0


def test_sparsification_and_ause_by_hand():
    errors = np.array([4.0, 3.0, 2.0, 1.0])
    fractions = np.array([0.0, 0.25, 0.5, 0.75])
    # Confidence ordering the errors exactly: the oracle, AUSE 0.
    curve, oracle = sparsification(errors, -errors, fractions)
    np.testing.assert_allclose(oracle, [1.0, 2.0 / 2.5, 1.5 / 2.5, 1.0 / 2.5])
    assert ause(curve, oracle, fractions) == pytest.approx(0.0)
    # The reverse order removes the smallest errors first: curve 1, 3/2.5, 3.5/2.5, 4/2.5.
    curve, oracle = sparsification(errors, errors, fractions)
    np.testing.assert_allclose(curve, [1.0, 3.0 / 2.5, 3.5 / 2.5, 4.0 / 2.5])
    gaps = np.array([0.0, 1.0 / 2.5, 2.0 / 2.5, 3.0 / 2.5])
    assert ause(curve, oracle, fractions) == pytest.approx(
        0.25 * sum(0.5 * (gaps[1:] + gaps[:-1])))
    assert len(FRACTIONS) == 50 and FRACTIONS[-1] == pytest.approx(0.98)
