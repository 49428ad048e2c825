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

"""Temporal fusion: the hand-computed blend where the moved previous frame agrees, else the new."""

import cv2
from lrda_ros.geometry.temporal_fusion import TemporalFusion, TemporalFusionConfig
import numpy as np
import pytest

K = np.array([[200.0, 0.0, 79.5], [0.0, 200.0, 59.5], [0.0, 0.0, 1.0]])
SHAPE = (120, 160)


def pose(translation) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = translation
    return T


def test_off_returns_the_depth_itself():
    fusion = TemporalFusion(TemporalFusionConfig(weight=0.0))
    depth = np.full(SHAPE, 3.0, np.float32)
    for _ in range(2):
        result = fusion.fuse(depth, K, np.eye(4))
        assert result.depth is depth and result.fused_fraction == 0.0


def test_a_static_camera_blends_recursively_as_computed_by_hand():
    fusion = TemporalFusion(TemporalFusionConfig(weight=0.5, agreement=0.2))
    first, second, third = 4.0, 4.4, 4.2   # within 20 % of each other
    outputs = [fusion.fuse(np.full(SHAPE, value, np.float32), K, np.eye(4)).depth
               for value in (first, second, third)]
    np.testing.assert_array_equal(outputs[0], first)
    np.testing.assert_allclose(outputs[1], 0.5 * second + 0.5 * first, rtol=1e-6)
    np.testing.assert_allclose(outputs[2], 0.5 * third + 0.5 * (0.5 * second + 0.5 * first),
                               rtol=1e-6)


def test_a_moving_camera_takes_the_previous_frame_where_opencv_projects_it():
    # A wall 5 m ahead; the camera moves 0.5 m towards it and 0.2 m right. The previous
    # frame's exact depth, moved, reads 4.5 m at the pixels OpenCV projects its points to;
    # the new prediction is 10 % too far. Fused: the average there, the prediction elsewhere.
    wall, T_world_b = 5.0, pose([0.213, 0.071, 0.5])
    fusion = TemporalFusion(TemporalFusionConfig(weight=0.5, agreement=0.2))
    fusion.fuse(np.full(SHAPE, wall, np.float32), K, np.eye(4))
    predicted = np.full(SHAPE, (wall - 0.5) * 1.1, np.float32)
    result = fusion.fuse(predicted, K, T_world_b)

    rows, cols = np.mgrid[:SHAPE[0], :SHAPE[1]]
    points = np.stack([(cols - K[0, 2]) / K[0, 0] * wall, (rows - K[1, 2]) / K[1, 1] * wall,
                       np.full(SHAPE, wall)], axis=-1).reshape(-1, 3)
    T_b_a = np.linalg.inv(T_world_b)
    projected, _ = cv2.projectPoints(points, cv2.Rodrigues(T_b_a[:3, :3])[0], T_b_a[:3, 3], K,
                                     None)
    u, v = np.rint(projected[:, 0, 0]).astype(int), np.rint(projected[:, 0, 1]).astype(int)
    inside = (u >= 0) & (u < SHAPE[1]) & (v >= 0) & (v < SHAPE[0])
    landed = np.zeros(SHAPE, bool)
    landed[v[inside], u[inside]] = True

    expected = np.where(landed, 0.5 * predicted + 0.5 * (wall - 0.5), predicted)
    np.testing.assert_allclose(result.depth, expected, rtol=1e-5)
    assert 0.2 < result.fused_fraction == pytest.approx(landed.mean())
    assert not landed.all()   # moving closer magnifies: holes keep the prediction


def test_disagreement_keeps_the_new_prediction():
    # A moving object (or a disocclusion): where the moved previous frame differs by more
    # than the agreement, the new depth is published alone.
    fusion = TemporalFusion(TemporalFusionConfig(weight=0.5, agreement=0.2))
    fusion.fuse(np.full(SHAPE, 6.0, np.float32), K, np.eye(4))
    new = np.full(SHAPE, 6.0, np.float32)
    new[40:80, 50:100] = 3.0
    fused = fusion.fuse(new, K, np.eye(4)).depth
    np.testing.assert_array_equal(fused[40:80, 50:100], 3.0)
    np.testing.assert_array_equal(fused[:40], 6.0)


def test_nan_stays_nan_and_is_not_carried_into_valid_pixels():
    fusion = TemporalFusion(TemporalFusionConfig(weight=0.5))
    first = np.full(SHAPE, 4.0, np.float32)
    first[:, :20] = np.nan
    fusion.fuse(first, K, np.eye(4))
    second = np.full(SHAPE, 4.2, np.float32)
    second[:10] = np.nan
    fused = fusion.fuse(second, K, np.eye(4)).depth
    assert np.isnan(fused[:10]).all()
    np.testing.assert_allclose(fused[10:, :20], 4.2)      # nothing to fuse with there
    np.testing.assert_allclose(fused[10:, 20:], 4.1, rtol=1e-6)


@pytest.mark.parametrize('change', ['no pose', 'other K', 'other size', 'reset', 'restart'])
def test_the_filter_restarts_without_a_pose_or_for_another_camera(change):
    fusion = TemporalFusion(TemporalFusionConfig(weight=0.5))
    fusion.fuse(np.full(SHAPE, 4.0, np.float32), K, np.eye(4))
    depth, K_new, T = np.full(SHAPE, 4.4, np.float32), K, np.eye(4)
    if change == 'no pose':
        assert fusion.fuse(depth, K, None).depth is depth
        T = np.eye(4)   # the pose is back, but the previous frame is gone
    elif change == 'other K':
        K_new = K * np.array([[1.1], [1.1], [1.0]])
    elif change == 'other size':
        depth = np.full((60, 80), 4.4, np.float32)
    elif change == 'reset':
        fusion.reset()
    result = fusion.fuse(depth, K_new, T, restart=change == 'restart')
    np.testing.assert_array_equal(result.depth, depth)
    assert result.fused_fraction == 0.0


@pytest.mark.parametrize('weight, agreement', [(1.0, 0.2), (-0.1, 0.2), (0.5, 0.0)])
def test_invalid_settings_are_rejected(weight, agreement):
    with pytest.raises(ValueError):
        TemporalFusionConfig(weight=weight, agreement=agreement)
