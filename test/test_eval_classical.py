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

"""Tests of the pure-numpy IP-Basic baseline in lrda_ros.eval.classical."""

from lrda_ros.eval.classical import dilate, ip_basic_complete, median_filter
import numpy as np
import pytest


def _plane(height=240, width=320, fraction=0.05, seed=0):
    gt = np.repeat(np.linspace(10.0, 20.0, height, dtype=np.float32)[:, None], width, axis=1)
    keep = np.random.default_rng(seed).random(gt.shape) < fraction
    return gt, np.where(keep, gt, 0.0).astype(np.float32)


def test_fills_plane_accurately():
    gt, sparse = _plane()
    dense = ip_basic_complete(sparse)
    assert dense.dtype == np.float32 and dense.shape == gt.shape
    mae = np.abs(dense - gt).mean()
    naive = np.abs(np.median(sparse[sparse > 0]) - gt).mean()  # one constant: ~2.5 m
    assert mae < 0.1
    assert mae < naive / 20


def test_no_holes_with_extrapolate():
    sparse = np.zeros((60, 80), dtype=np.float32)
    sparse[50, 5] = 7.0  # a single point far from most of the image
    dense = ip_basic_complete(sparse, extrapolate=True)
    assert np.all(dense > 0) and np.all(np.isfinite(dense))
    np.testing.assert_allclose(dense, 7.0, rtol=1e-5)
    holes = ip_basic_complete(sparse, extrapolate=False)
    assert (holes == 0).any() and holes[50, 5] == pytest.approx(7.0)


def test_constant_depth_preserved_and_clipped_to_max_depth():
    sparse = np.zeros((40, 50), dtype=np.float32)
    sparse[::4, ::4] = 5.0
    np.testing.assert_allclose(ip_basic_complete(sparse), 5.0, rtol=1e-5)
    sparse[::4, ::4] = 150.0
    dense = ip_basic_complete(sparse, max_depth=100.0)
    assert dense.max() <= 100.0 + 1e-3


def test_near_points_win():
    sparse = np.zeros((30, 30), dtype=np.float32)
    sparse[15, 14] = 2.0
    sparse[15, 16] = 20.0
    assert ip_basic_complete(sparse)[15, 15] == pytest.approx(2.0, rel=1e-5)


@pytest.mark.parametrize('sparse', [np.zeros((8, 8), np.float32),
                                    np.full((8, 8), np.nan, np.float32)])
def test_empty_input_raises(sparse):
    with pytest.raises(ValueError, match='no valid'):
        ip_basic_complete(sparse)


def test_helpers_match_definitions():
    image = np.zeros((5, 5), dtype=np.float32)
    image[2, 2] = 1.0
    cross = np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]])
    np.testing.assert_array_equal(dilate(image, cross)[1:4, 1:4], cross)
    rng = np.random.default_rng(1)
    noisy = rng.random((9, 11)).astype(np.float32)
    padded = np.pad(noisy, 2, mode='edge')
    assert median_filter(noisy, 5)[4, 6] == np.median(padded[4:9, 6:11])
