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

"""TAE: zero for a static perfect sequence, the hand-computed value for a known error."""

import math

import cv2
from lrda_ros.eval.temporal import (
    relative_pose, temporal_alignment_error, TemporalTracker, warp_depth)
import numpy as np
import pytest

K = np.array([[200.0, 0.0, 79.5], [0.0, 200.0, 59.5], [0.0, 0.0, 1.0]])
SHAPE = (120, 160)


def plane_depth(normal: np.ndarray, offset: float) -> np.ndarray:
    """Return the z-depth of the plane n . X = offset at every pixel centre (hand formula)."""
    rows, cols = np.mgrid[:SHAPE[0], :SHAPE[1]]
    rays = np.stack([(cols - K[0, 2]) / K[0, 0], (rows - K[1, 2]) / K[1, 1],
                     np.ones(SHAPE)])
    return (offset / np.tensordot(normal, rays, axes=1)).astype(np.float32)


def pose(yaw: float, translation) -> np.ndarray:
    """Return a 4x4 camera pose: rotation about the camera's y axis, then a translation."""
    T = np.eye(4)
    T[:3, :3] = cv2.Rodrigues(np.array([0.0, yaw, 0.0]))[0]
    T[:3, 3] = translation
    return T


def test_static_perfect_sequence_scores_zero():
    depth = plane_depth(np.array([0.1, -0.2, 1.0]), 4.0)
    tracker = TemporalTracker()
    scores = [tracker.update(depth.copy(), K, np.eye(4)) for _ in range(4)]
    assert math.isnan(scores[0])
    assert scores[1:] == [0.0, 0.0, 0.0]


def test_moving_camera_perfect_depth_of_a_wall_scores_zero():
    # A fronto-parallel wall 5 m away, the camera sliding sideways: every warped depth is 5 m.
    depth = np.full(SHAPE, 5.0, np.float32)
    assert temporal_alignment_error(depth, depth, K, relative_pose(
        np.eye(4), pose(0.0, [0.3, 0.0, 0.0]))) == 0.0


@pytest.mark.parametrize('error', [0.02, 0.1, 0.3])
def test_scale_error_of_the_second_frame_gives_the_hand_computed_tae(error):
    # Static camera, frame b (1 + e) times too far: forward AbsRel e / (1 + e), backward e.
    depth = plane_depth(np.array([0.0, -0.3, 1.0]), 3.0)
    tae = temporal_alignment_error(depth, depth * (1 + error), K, np.eye(4))
    assert tae == pytest.approx(0.5 * (error / (1 + error) + error), rel=1e-5)


def test_warp_lands_where_opencv_projects_with_the_depth_in_the_target_frame():
    depth_a = plane_depth(np.array([0.2, 0.0, 1.0]), 6.0)
    T_world_a, T_world_b = np.eye(4), pose(0.05, [0.4, 0.0, 0.5])
    T_b_a = relative_pose(T_world_a, T_world_b)
    warped = warp_depth(depth_a, K, T_b_a)
    rng = np.random.default_rng(0)
    rows, cols = rng.integers(10, 110, 40), rng.integers(10, 150, 40)
    points = np.stack([(cols - K[0, 2]) / K[0, 0], (rows - K[1, 2]) / K[1, 1],
                       np.ones(40)], axis=1) * depth_a[rows, cols, None]
    rvec = cv2.Rodrigues(T_b_a[:3, :3])[0]
    pixels = cv2.projectPoints(points, rvec, T_b_a[:3, 3], K, None)[0].reshape(-1, 2)
    z_b = (points @ T_b_a[:3, :3].T + T_b_a[:3, 3])[:, 2]
    for (u, v), z in zip(pixels, z_b):
        col, row = int(round(u)), int(round(v))
        if 0 <= col < SHAPE[1] and 0 <= row < SHAPE[0]:
            # The plane is smooth: whichever source pixel won the z-buffer is within a pixel.
            assert warped[row, col] == pytest.approx(z, rel=0.01)


def plane_depth_at(normal: np.ndarray, offset: float, pixels: np.ndarray) -> np.ndarray:
    """Return the plane's z-depth at continuous (u, v) pixel positions."""
    rays = np.stack([(pixels[:, 0] - K[0, 2]) / K[0, 0], (pixels[:, 1] - K[1, 2]) / K[1, 1],
                     np.ones(len(pixels))])
    return offset / (normal @ rays)


def test_moving_camera_scale_error_matches_opencv_and_the_analytic_plane():
    # A tilted plane seen from two poses; frame b's depth is the plane's, 5 % too far.
    normal_a, offset_a = np.array([0.0, -0.4, 1.0]), 5.0
    T_b_a = relative_pose(np.eye(4), pose(0.03, [0.2, 0.0, 0.4]))
    R, t = T_b_a[:3, :3], T_b_a[:3, 3]
    normal_b = R @ normal_a
    offset_b = offset_a + normal_b @ t
    depth_a, depth_b = plane_depth(normal_a, offset_a), plane_depth(normal_b, offset_b)
    perfect = temporal_alignment_error(depth_a, depth_b, K, T_b_a)
    assert perfect < 2e-3  # nearest-pixel rounding only
    error = 0.05
    tae = temporal_alignment_error(depth_a, depth_b * (1 + error), K, T_b_a)
    # Forward (a's exact depth into b): every comparison is e / (1 + e). Backward: b's points,
    # 5 % too far, moved into a by OpenCV and compared with the plane's depth where they land.
    rows, cols = np.mgrid[:SHAPE[0], :SHAPE[1]]
    rays = np.stack([(cols.ravel() - K[0, 2]) / K[0, 0], (rows.ravel() - K[1, 2]) / K[1, 1],
                     np.ones(rows.size)], axis=1)
    points_b = rays * (depth_b.ravel()[:, None] * (1 + error))
    T_a_b = np.linalg.inv(T_b_a)
    pixels = cv2.projectPoints(points_b, cv2.Rodrigues(T_a_b[:3, :3])[0], T_a_b[:3, 3], K,
                               None)[0].reshape(-1, 2)
    z_a = (points_b @ T_a_b[:3, :3].T + T_a_b[:3, 3])[:, 2]
    inside = ((pixels[:, 0] > -0.5) & (pixels[:, 0] < SHAPE[1] - 0.5)
              & (pixels[:, 1] > -0.5) & (pixels[:, 1] < SHAPE[0] - 0.5))
    truth_a = plane_depth_at(normal_a, offset_a, pixels[inside])
    backward = float(np.mean(np.abs(z_a[inside] - truth_a) / truth_a))
    expected = 0.5 * (error / (1 + error) + backward)
    assert backward != pytest.approx(error, rel=0.05)  # the motion matters here
    assert tae == pytest.approx(expected, abs=perfect + 5e-4)


def test_z_buffer_keeps_the_nearest_surface():
    # 2 m at column 80 and 4 m at column 81; a 2 cm slide moves them by fx * 0.02 / z pixels,
    # 2 and 1: both land on column 82, where the nearer one (2 m) must win.
    depth = np.full(SHAPE, np.nan, np.float32)
    depth[60, 80], depth[60, 81] = 2.0, 4.0
    T = np.eye(4)
    T[0, 3] = 0.02
    warped = warp_depth(depth, K, T)
    assert np.count_nonzero(np.isfinite(warped)) == 1
    assert warped[60, 82] == pytest.approx(2.0)


def test_unknown_pose_or_changed_camera_gives_nan():
    depth = np.full(SHAPE, 3.0, np.float32)
    tracker = TemporalTracker()
    tracker.update(depth, K, np.eye(4))
    assert math.isnan(tracker.update(depth, K, None))
    tracker.update(depth, K, np.eye(4))
    assert math.isnan(tracker.update(depth, K * 1.1, np.eye(4)))
