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

"""The benchmarks' sparse outlier filter against a literal per-pixel transcription of the rule."""

from lrda_ros.errors import ConfigError
from lrda_ros.geometry import (
    CameraModel, filter_outliers, lidar_to_sparse_depth, outlier_mask, OutlierFilter,
    ProjectionConfig, RigidTransform, SPARSE_INPUT_FILTER)
import numpy as np
import pytest


def _reference(depth: np.ndarray, nx: int, ny: int, threshold: float) -> np.ndarray:
    """Transcribe the published loops: window minimum per valid centre, spread, threshold."""
    h, w = depth.shape
    delta = np.zeros((h, w))
    rx, ry = (nx - 1) // 2, (ny - 1) // 2
    for y in range(h):
        for x in range(w):
            if depth[y, x] <= 0:
                continue
            dmin = 1e6
            for yw in range(-ry, ry + 1):
                for xw in range(-rx, rx + 1):
                    if 0 <= y + yw < h and 0 <= x + xw < w:
                        d = depth[y + yw, x + xw]
                        if 1e-3 < d < dmin:
                            dmin = d
            for yw in range(-ry, ry + 1):
                for xw in range(-rx, rx + 1):
                    if 0 <= y + yw < h and 0 <= x + xw < w:
                        delta[y + yw, x + xw] = max(delta[y + yw, x + xw],
                                                    depth[y + yw, x + xw] - dmin)
    return (depth > 0) & (delta > threshold)


@pytest.mark.parametrize('window,threshold,seed', [((7, 7), 1.5, 0), ((7, 3), 1.5, 1),
                                                   ((5, 9), 3.0, 2), ((1, 1), 0.5, 3)])
def test_matches_the_per_pixel_rule(window, threshold, seed):
    rng = np.random.default_rng(seed)
    depth = rng.uniform(1.0, 30.0, (23, 31))
    depth[rng.random(depth.shape) < 0.8] = 0.0  # sparse, as projected LiDAR
    depth[rng.random(depth.shape) < 0.02] = 5e-4  # a centre that is no window minimum
    expected = _reference(depth, window[0], window[1], threshold)
    got = outlier_mask(depth, OutlierFilter(window, threshold))
    np.testing.assert_array_equal(got, expected)
    assert expected.any() or window == (1, 1)


def test_background_behind_a_near_object_is_removed_and_counted():
    depth = np.zeros((20, 20), np.float32)
    depth[5:15:2, 5:15:2] = 4.0   # a near object
    depth[8, 8] = 30.0            # background seen through it
    depth[1, 18] = 30.0           # background far from the object stays
    filtered, removed = filter_outliers(depth, SPARSE_INPUT_FILTER)
    assert removed == 1 and filtered[8, 8] == 0 and filtered[1, 18] == 30.0
    assert filtered.dtype == np.float32 and depth[8, 8] == 30.0  # the input is not modified


def test_invalid_settings_are_rejected():
    for window in ((6, 7), (7,), (0, 3), (True, 3)):
        with pytest.raises(ConfigError):
            OutlierFilter(window, 1.5)
    with pytest.raises(ConfigError):
        OutlierFilter((7, 7), -1.0)


def test_projection_option_counts_the_points_it_removes():
    K = np.array([[50.0, 0, 20], [0, 50.0, 15], [0, 0, 1]])
    camera = CameraModel(K, width=40, height=30)
    # Near returns every other pixel (u, v in 14..26 and 9..21); a far one at (17, 18) between.
    grid = np.linspace(-0.6, 0.6, 7)
    near = [[x, y, 5.0] for x in grid for y in grid]
    points = np.array(near + [[2.4, 2.4, 40.0]])
    plain = lidar_to_sparse_depth(points, RigidTransform.identity(), camera, ProjectionConfig())
    config = ProjectionConfig(outlier_filter=SPARSE_INPUT_FILTER)
    filtered = lidar_to_sparse_depth(points, RigidTransform.identity(), camera, config)
    assert plain.depth.max() > 30 and filtered.depth.max() < 6
    assert filtered.num_dropped_outliers == 1
    assert filtered.num_projected == plain.num_projected - 1
