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

"""REP 118 at the limits: far_depth beyond max_depth and on the sky, -Inf below min_depth."""

from __future__ import annotations

from lrda_ros.engine import TTOConfig
from lrda_ros.errors import ConfigError
from lrda_ros.geometry.projection import backproject_depth
from lrda_ros.pipeline import mark_far, mark_near
import numpy as np
import pytest

MAX_DEPTH = 80.0
#: The engine's clamped output: 80 m is its far limit (a relative model's sky), 79.9 is not.
ENGINE_DEPTH = np.array([[5.0, 79.9, MAX_DEPTH], [MAX_DEPTH, 12.0, 3.0]], np.float32)
SKY = np.array([[False, False, False], [False, True, False]])


def test_beyond_reach_is_too_far_by_default_as_rep_118_says():
    assert TTOConfig().far_depth == 'too_far'
    published = mark_far(ENGINE_DEPTH, MAX_DEPTH, 'too_far', SKY)
    expected = np.array([[5.0, 79.9, np.inf], [np.inf, np.inf, 3.0]], np.float32)
    np.testing.assert_array_equal(published, expected)
    assert published.dtype == np.float32


def test_nan_and_clamp_keep_the_other_conventions():
    np.testing.assert_array_equal(
        mark_far(ENGINE_DEPTH, MAX_DEPTH, 'no_depth', SKY),
        np.array([[5.0, 79.9, np.nan], [np.nan, np.nan, 3.0]], np.float32))
    np.testing.assert_array_equal(
        mark_far(ENGINE_DEPTH, MAX_DEPTH, 'clamp', SKY),
        np.array([[5.0, 79.9, MAX_DEPTH], [MAX_DEPTH, MAX_DEPTH, 3.0]], np.float32))
    np.testing.assert_array_equal(mark_far(ENGINE_DEPTH, MAX_DEPTH, 'clamp'), ENGINE_DEPTH)


def test_too_far_pixels_are_no_points():
    from lrda_ros.geometry.camera import CameraModel

    camera = CameraModel(np.array([[2.0, 0, 1.0], [0, 2.0, 0.5], [0, 0, 1]]), 3, 2)
    points, rows, cols = backproject_depth(mark_far(ENGINE_DEPTH, MAX_DEPTH, 'too_far', SKY),
                                           camera)
    assert sorted(zip(rows.tolist(), cols.tolist())) == [(0, 0), (0, 1), (1, 2)]
    assert np.isfinite(points).all()


def test_an_unknown_far_depth_is_refused():
    with pytest.raises(ConfigError) as error:
        TTOConfig(far_depth='max')
    assert error.value.field == 'far_depth' and 'too_far, no_depth, clamp' in str(error.value)


def test_below_reach_is_too_close_as_rep_118_says():
    # The engine clamps at min_depth 0.5: those pixels were predicted nearer.
    engine = np.array([[0.5, 0.5001, 3.0], [np.nan, np.inf, 0.5]], np.float32)
    published = mark_near(engine, 0.5)
    expected = np.array([[-np.inf, 0.5001, 3.0], [np.nan, np.inf, -np.inf]], np.float32)
    np.testing.assert_array_equal(published, expected)
    assert published.dtype == np.float32
    untouched = np.array([[1.0, 2.0]], np.float32)
    assert mark_near(untouched, 0.5) is untouched  # nothing near: no copy
