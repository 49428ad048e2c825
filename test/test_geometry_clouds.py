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
Several LiDARs per camera: the clouds merge before projection, under one occlusion test.

References are independent of the merge: each cloud moved into the camera by hand (R p + t),
projected with OpenCV's ``projectPoints`` and z-buffered pixel by pixel in plain Python.
"""

import dataclasses

from lrda_ros.geometry import (
    CameraModel, clouds_to_sparse_depth, InvalidPointsError, lidar_to_sparse_depth, LidarCloud,
    ProjectionConfig, RigidTransform)
from lrda_ros.pipeline import FrameInputs, prepare_frame
import numpy as np
import pytest

cv2 = pytest.importorskip('cv2', reason='opencv-python-headless is not installed '
                                        '(pip install -r requirements-dev.txt)')

WIDTH, HEIGHT = 96, 72
K = np.array([[80.0, 0.0, 47.0], [0.0, 70.0, 35.0], [0.0, 0.0, 1.0]])
CAMERA = CameraModel(K, WIDTH, HEIGHT)
# LiDAR (x forward, y left, z up) to camera optical (x right, y down, z forward).
R_CAM_LIDAR = np.array([[0.0, -1.0, 0.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0]])
#: Two LiDARs: one above the camera, one to its left and turned 20 degrees.
T_TOP = RigidTransform(R_CAM_LIDAR, np.array([0.0, -0.3, 0.1]))
_YAW = np.deg2rad(20.0)
_R_YAW = np.array([[np.cos(_YAW), -np.sin(_YAW), 0.0], [np.sin(_YAW), np.cos(_YAW), 0.0],
                   [0.0, 0.0, 1.0]])
T_SIDE = RigidTransform(R_CAM_LIDAR @ _R_YAW, np.array([-0.5, 0.1, -0.2]))
#: No range limit binds and no occlusion test: the z-buffer alone decides.
PLAIN = ProjectionConfig(min_range=0.0, max_range=1e4, remove_occluded=False)


def points_at_pixel_centres(rng, count, transform):
    """Return LiDAR points (in ``transform``'s LiDAR frame) that land on pixel centres."""
    cols = rng.integers(0, WIDTH, count)
    rows = rng.integers(0, HEIGHT, count)
    z = rng.uniform(2.0, 40.0, count)
    camera_points = np.stack([(cols - K[0, 2]) / K[0, 0] * z, (rows - K[1, 2]) / K[1, 1] * z, z],
                             axis=1)
    return transform.inverse().apply(camera_points)


def by_hand(points, transform):
    """Return points moved into the camera frame as R p + t, without the package."""
    return np.asarray(points) @ transform.rotation.T + transform.translation


def opencv_zbuffer(camera_points):
    """Project with cv2.projectPoints; keep the nearest z per pixel, one point at a time."""
    pixels, _ = cv2.projectPoints(camera_points.reshape(-1, 1, 3), np.zeros(3), np.zeros(3), K,
                                  np.zeros(5))
    depth = np.zeros((HEIGHT, WIDTH), np.float32)
    for (u, v), z in zip(pixels.reshape(-1, 2), camera_points[:, 2]):
        col, row = int(np.floor(u + 0.5)), int(np.floor(v + 0.5))
        if z > 0 and 0 <= col < WIDTH and 0 <= row < HEIGHT and (depth[row, col] == 0
                                                                 or z < depth[row, col]):
            depth[row, col] = np.float32(z)
    return depth


def test_merged_clouds_equal_the_union_projected_as_one_cloud_and_by_opencv():
    rng = np.random.default_rng(7)
    top, side = points_at_pixel_centres(rng, 800, T_TOP), points_at_pixel_centres(rng, 600,
                                                                                  T_SIDE)
    merged = clouds_to_sparse_depth([LidarCloud(top, T_TOP), LidarCloud(side, T_SIDE)], CAMERA,
                                    PLAIN)
    union = np.concatenate([by_hand(top, T_TOP), by_hand(side, T_SIDE)])
    single = lidar_to_sparse_depth(union, RigidTransform.identity(), CAMERA, PLAIN)
    np.testing.assert_array_equal(merged.depth, single.depth)
    assert merged.num_points_in == 1400 and merged.num_projected == single.num_projected
    assert merged.num_dropped_same_pixel == single.num_dropped_same_pixel > 0
    # The independent reference: the same pixels, the same nearest depths.
    reference = opencv_zbuffer(union)
    np.testing.assert_array_equal(merged.depth > 0, reference > 0)
    np.testing.assert_allclose(merged.depth, reference, rtol=1e-6, atol=0)
    # Both LiDARs contribute: neither cloud alone gives the merged map.
    for cloud, transform in ((top, T_TOP), (side, T_SIDE)):
        alone = lidar_to_sparse_depth(cloud, transform, CAMERA, PLAIN).depth
        assert np.count_nonzero(alone) < np.count_nonzero(merged.depth)


def test_a_near_point_of_one_lidar_hides_a_far_point_of_another_at_the_same_pixel():
    far_a = T_TOP.inverse().apply(np.array([[0.0, 0.0, 20.0]]))   # cloud A, the centre pixel
    near_b = T_SIDE.inverse().apply(np.array([[0.0, 0.0, 5.0]]))  # cloud B, the same pixel
    centre = (35, 47)
    for config in (PLAIN, dataclasses.replace(PLAIN, remove_occluded=True)):
        alone = lidar_to_sparse_depth(far_a, T_TOP, CAMERA, config).depth
        assert alone[centre] == pytest.approx(20.0)
        merged = clouds_to_sparse_depth([LidarCloud(far_a, T_TOP), LidarCloud(near_b, T_SIDE)],
                                        CAMERA, config)
        assert merged.depth[centre] == pytest.approx(5.0)
        assert np.count_nonzero(merged.depth) == 1 and merged.num_dropped_same_pixel == 1


def test_the_occlusion_test_runs_over_the_merged_points():
    # A far point of LiDAR A two pixels beside a near point of LiDAR B: alone, A's point
    # stays; merged, B's point occludes it (within the 7x7 window, 10 % nearer).
    far_a = T_TOP.inverse().apply(np.array([[2.0 / K[0, 0] * 20.0, 0.0, 20.0]]))
    near_b = T_SIDE.inverse().apply(np.array([[0.0, 0.0, 5.0]]))
    config = dataclasses.replace(PLAIN, remove_occluded=True)
    assert lidar_to_sparse_depth(far_a, T_TOP, CAMERA, config).depth[35, 49] == pytest.approx(20)
    merged = clouds_to_sparse_depth([LidarCloud(far_a, T_TOP), LidarCloud(near_b, T_SIDE)],
                                    CAMERA, config)
    assert merged.depth[35, 49] == 0.0 and merged.depth[35, 47] == pytest.approx(5.0)
    assert merged.num_dropped_occluded == 1 and merged.num_projected == 1


def test_ranges_are_measured_from_each_lidars_own_origin():
    # 3 m ahead of the side LiDAR: inside a 1-4 m range from it, though farther from the top one.
    side_point = np.array([[3.0, 0.0, 0.0]])
    config = ProjectionConfig(min_range=1.0, max_range=4.0, remove_occluded=False)
    merged = clouds_to_sparse_depth([LidarCloud(np.zeros((0, 3)), T_TOP),
                                     LidarCloud(side_point, T_SIDE)], CAMERA, config)
    assert merged.num_projected == 1 and merged.num_dropped_out_of_range == 0
    moved = clouds_to_sparse_depth([LidarCloud(by_hand(side_point, T_SIDE) + [0, 0, 10.0],
                                               RigidTransform.identity())], CAMERA, config)
    assert moved.num_dropped_out_of_range == 1


def test_one_cloud_is_exactly_the_single_cloud_projection():
    rng = np.random.default_rng(3)
    points = rng.normal(0.0, 8.0, (5000, 3))
    points[::97] = np.nan
    camera = CameraModel(K, WIDTH, HEIGHT, 'plumb_bob', np.array([-0.1, 0.02, 0.001, 0.0, 0.0]))
    config = ProjectionConfig(min_range=0.5, max_range=30.0, remove_occluded=True)
    expected = lidar_to_sparse_depth(points, T_TOP, camera, config)
    rgb = np.zeros((HEIGHT, WIDTH, 3), np.uint8)
    for inputs in (FrameInputs(rgb, camera, points, T_TOP),
                   FrameInputs.from_clouds(rgb, camera, [LidarCloud(points, T_TOP)])):
        projected = prepare_frame(inputs, config).projection
        assert projected.depth.tobytes() == expected.depth.tobytes()
        assert dataclasses.asdict(projected).keys() == dataclasses.asdict(expected).keys()
        for field in dataclasses.fields(expected):
            if field.name != 'depth':
                assert getattr(projected, field.name) == getattr(expected, field.name)


def test_a_frame_of_two_clouds_projects_both():
    rng = np.random.default_rng(11)
    top, side = points_at_pixel_centres(rng, 300, T_TOP), points_at_pixel_centres(rng, 300,
                                                                                  T_SIDE)
    clouds = [LidarCloud(top, T_TOP), LidarCloud(side, T_SIDE)]
    inputs = FrameInputs.from_clouds(np.zeros((HEIGHT, WIDTH, 3), np.uint8), CAMERA, clouds,
                                     stamp_ns=5)
    assert len(inputs.clouds) == 2 and inputs.stamp_ns == 5
    np.testing.assert_array_equal(prepare_frame(inputs, PLAIN).sparse_depth,
                                  clouds_to_sparse_depth(clouds, CAMERA, PLAIN).depth)


def test_no_cloud_is_an_error_not_an_empty_map():
    with pytest.raises(InvalidPointsError, match='no LiDAR cloud'):
        clouds_to_sparse_depth([], CAMERA, PLAIN)
    with pytest.raises(InvalidPointsError, match='cloud 1'):
        clouds_to_sparse_depth([LidarCloud(np.zeros((2, 3)), T_TOP),
                                LidarCloud(np.zeros((2, 4)), T_SIDE)], CAMERA, PLAIN)
