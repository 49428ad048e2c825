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

"""Tests for lrda_ros.geometry against hand-computed geometry."""

import math

from lrda_ros.geometry import (
    backproject_depth, CameraModel, distort_normalized, InvalidCameraError, InvalidConfigError,
    InvalidPointsError, InvalidTransformError, lidar_to_sparse_depth, project_points,
    ProjectionConfig, RigidTransform, undistort_normalized, UnsupportedDistortionError)
import numpy as np
import pytest

WIDTH, HEIGHT = 640, 480
K = np.array([[500.0, 0.0, 320.0], [0.0, 400.0, 240.0], [0.0, 0.0, 1.0]])
# LiDAR (x forward, y left, z up) to camera optical (x right, y down, z forward).
R_CAM_LIDAR = np.array([[0.0, -1.0, 0.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0]])
T_CAM_LIDAR = RigidTransform(R_CAM_LIDAR, np.array([0.1, -0.2, 0.0]))
NO_RANGE_LIMIT = ProjectionConfig(min_range=0.0, max_range=1e6)


@pytest.fixture
def camera():
    return CameraModel(K, WIDTH, HEIGHT)


def rodrigues(axis, angle):
    axis = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    cross = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + math.sin(angle) * cross + (1 - math.cos(angle)) * cross @ cross


def test_camera_model_properties_and_validation(camera):
    assert (camera.fx, camera.fy, camera.cx, camera.cy) == (500.0, 400.0, 320.0, 240.0)
    assert not camera.has_distortion
    assert not CameraModel(K, 10, 10, 'plumb_bob', np.zeros(5)).has_distortion
    assert CameraModel(K, 10, 10, 'plumb_bob', [0, 0, 0, 0.001, 0]).has_distortion
    with pytest.raises(InvalidCameraError, match='uncalibrated'):
        CameraModel(np.zeros((3, 3)), 10, 10)
    with pytest.raises(InvalidCameraError, match='width'):
        CameraModel(K, 0, 10)
    with pytest.raises(InvalidCameraError, match='3x3'):
        CameraModel(np.eye(4), 10, 10)
    with pytest.raises(InvalidCameraError, match='finite'):
        CameraModel(np.array([[np.nan, 0, 1], [0, 1, 1], [0, 0, 1]]), 10, 10)
    with pytest.raises(ValueError):
        camera.K[0, 0] = 1.0  # stored read-only


def test_scaled_camera_keeps_pixel_centres(camera):
    half = camera.scaled(320, 240)
    assert half.fx == 250.0 and half.fy == 200.0
    point = np.array([[0.3, -0.2, 2.0]])
    uv_full, _ = project_points(point, camera)
    uv_half, _ = project_points(point, half)
    np.testing.assert_allclose(uv_half, (uv_full + 0.5) * 0.5 - 0.5)


def test_projection_matches_hand_computed_pixels(camera):
    # cam = R p + t: (10, 1.1, 0.3) -> (-1.0, -0.5, 10) -> u = 500*-0.1+320, v = 400*-0.05+240.
    points_lidar = np.array([[10.0, 1.1, 0.3], [5.0, -0.6, -0.7]])
    points_cam = T_CAM_LIDAR.apply(points_lidar)
    np.testing.assert_allclose(points_cam, [[-1.0, -0.5, 10.0], [0.7, 0.5, 5.0]], atol=1e-12)
    uv, depth = project_points(points_cam, camera)
    np.testing.assert_allclose(uv, [[270.0, 220.0], [390.0, 280.0]], atol=1e-9)
    np.testing.assert_allclose(depth, [10.0, 5.0])

    projection = lidar_to_sparse_depth(points_lidar, T_CAM_LIDAR, camera, ProjectionConfig())
    expected = np.zeros((HEIGHT, WIDTH), dtype=np.float32)
    expected[220, 270] = 10.0
    expected[280, 390] = 5.0
    assert projection.depth.dtype == np.float32
    np.testing.assert_array_equal(projection.depth, expected)
    assert projection.num_points_in == 2 and projection.num_projected == 2


def test_project_points_behind_camera_gives_nan(camera):
    uv, depth = project_points(np.array([[1.0, 1.0, -2.0], [0.0, 0.0, 0.0]]), camera)
    assert np.all(np.isnan(uv))
    np.testing.assert_array_equal(depth, [-2.0, 0.0])


def test_pixel_rounding_is_floor_of_u_plus_half(camera):
    identity = RigidTransform.identity()
    # u = 500 * x / z + 320 with z = 5: choose x so that u = 10.4, 10.6 and 10.5.
    us = np.array([10.4, 10.6, 10.5, -0.4, -0.6])
    points = np.stack([(us - 320.0) * 5.0 / 500.0, np.zeros(5), np.full(5, 5.0)], axis=1)
    for point, expected_col in zip(points, [10, 11, 11, 0, None]):
        result = lidar_to_sparse_depth(point[None], identity, camera, NO_RANGE_LIMIT)
        cols = np.nonzero(result.depth[240])[0].tolist()
        assert cols == ([] if expected_col is None else [expected_col])


def test_zbuffer_keeps_nearest_point(camera):
    direction = np.array([0.02, -0.01, 1.0])
    points = np.stack([direction * d for d in (7.0, 3.0, 5.0, 3.5)])
    result = lidar_to_sparse_depth(points, RigidTransform.identity(), camera, NO_RANGE_LIMIT)
    assert result.num_projected == 1
    assert result.num_dropped_same_pixel == 3
    assert result.depth[result.depth > 0].tolist() == [pytest.approx(3.0)]


def test_zbuffer_matches_minimum_reference_on_random_collisions(camera):
    rng = np.random.default_rng(0)
    rows = rng.integers(0, 20, 5000)
    cols = rng.integers(0, 20, 5000)
    depth = rng.uniform(1.0, 50.0, 5000)
    # Put points exactly at pixel centres so many collide on the 20x20 block.
    x = (cols - camera.cx) / camera.fx * depth
    y = (rows - camera.cy) / camera.fy * depth
    points = np.stack([x, y, depth], axis=1)
    result = lidar_to_sparse_depth(points, RigidTransform.identity(), camera, NO_RANGE_LIMIT)
    reference = np.full((HEIGHT, WIDTH), np.inf)
    np.minimum.at(reference, (rows, cols), depth)
    reference[np.isinf(reference)] = 0.0
    np.testing.assert_allclose(result.depth, reference.astype(np.float32), rtol=1e-6)


def test_dropped_points_are_counted(camera):
    points_cam = np.array([
        [0.0, 0.0, 10.0],        # kept
        [np.nan, 0.0, 10.0],     # non-finite
        [0.0, np.inf, 10.0],     # non-finite
        [0.0, 0.0, 0.3],         # closer than min_range 0.5
        [0.0, 0.0, 150.0],       # beyond max_range 120
        [0.0, 0.0, -10.0],       # behind the camera
        [1.0, 0.0, 0.0],         # on the image plane
        [50.0, 0.0, 10.0],       # far outside the image (u = 2820)
        [0.0, -10.0, 5.0],       # above the image (v = -560)
    ])
    result = lidar_to_sparse_depth(points_cam, RigidTransform.identity(), camera,
                                   ProjectionConfig(min_range=0.5, max_range=120.0))
    assert result.num_points_in == 9
    assert result.num_projected == 1
    assert result.num_dropped_non_finite == 2
    assert result.num_dropped_out_of_range == 2
    assert result.num_dropped_behind_camera == 2
    assert result.num_dropped_outside_image == 2
    assert result.num_dropped_same_pixel == 0 and result.num_dropped_occluded == 0
    assert result.depth[240, 320] == 10.0


def test_range_is_measured_from_lidar_origin(camera):
    # 0.45 m straight ahead of the LiDAR but 1.0 m in front of a camera 0.55 m behind it.
    lidar_to_cam = RigidTransform(np.eye(3), np.array([0.0, 0.0, 0.55]))
    result = lidar_to_sparse_depth(np.array([[0.0, 0.0, 0.45]]), lidar_to_cam, camera,
                                   ProjectionConfig(min_range=0.5))
    assert result.num_dropped_out_of_range == 1 and result.num_projected == 0


def test_bad_inputs_raise(camera):
    with pytest.raises(InvalidPointsError, match=r'\(N, 3\)'):
        lidar_to_sparse_depth(np.zeros((4, 2)), RigidTransform.identity(), camera,
                              ProjectionConfig())
    with pytest.raises(InvalidConfigError, match='odd'):
        ProjectionConfig(occlusion_window=4)
    with pytest.raises(InvalidConfigError, match='max_range'):
        ProjectionConfig(min_range=5.0, max_range=1.0)
    with pytest.raises(InvalidConfigError, match='occlusion_margin'):
        ProjectionConfig(occlusion_margin=-0.1)


def plumb_bob_scalar(x, y, k1, k2, p1, p2, k3):
    r2 = x * x + y * y
    radial = 1 + k1 * r2 + k2 * r2 ** 2 + k3 * r2 ** 3
    return (x * radial + 2 * p1 * x * y + p2 * (r2 + 2 * x * x),
            y * radial + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y)


def rational_scalar(x, y, k1, k2, p1, p2, k3, k4, k5, k6):
    r2 = x * x + y * y
    radial = (1 + k1 * r2 + k2 * r2 ** 2 + k3 * r2 ** 3) / (
        1 + k4 * r2 + k5 * r2 ** 2 + k6 * r2 ** 3)
    return (x * radial + 2 * p1 * x * y + p2 * (r2 + 2 * x * x),
            y * radial + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y)


def equidistant_scalar(x, y, k1, k2, k3, k4):
    r = math.hypot(x, y)
    theta = math.atan(r)
    theta_d = theta * (1 + k1 * theta ** 2 + k2 * theta ** 4 + k3 * theta ** 6
                       + k4 * theta ** 8)
    return (x * theta_d / r, y * theta_d / r) if r > 0 else (x, y)


XY = np.array([[0.0, 0.0], [0.1, -0.2], [-0.35, 0.25], [0.5, 0.4], [-0.6, -0.1]])
PLUMB_BOB_D = [-0.28, 0.07, 0.0012, -0.0008, -0.01]
RATIONAL_D = [0.9, -0.3, 0.001, 0.0005, 0.02, 1.2, -0.2, 0.05]
EQUIDISTANT_D = [-0.02, 0.005, -0.001, 0.0002]


@pytest.mark.parametrize('model, coefficients, scalar', [
    ('plumb_bob', PLUMB_BOB_D, plumb_bob_scalar),
    ('rational_polynomial', RATIONAL_D, rational_scalar),
    ('equidistant', EQUIDISTANT_D, equidistant_scalar),
])
def test_distortion_matches_scalar_formula(model, coefficients, scalar):
    distorted = distort_normalized(XY, model, np.array(coefficients))
    expected = [scalar(x, y, *coefficients) for x, y in XY]
    np.testing.assert_allclose(distorted, expected, rtol=1e-12, atol=1e-15)
    recovered = undistort_normalized(distorted, model, np.array(coefficients))
    np.testing.assert_allclose(recovered, XY, atol=1e-6)


def test_distortion_pads_short_coefficients_and_rejects_bad_models():
    short = distort_normalized(XY, 'plumb_bob', np.array([-0.2, 0.05]))
    full = distort_normalized(XY, 'plumb_bob', np.array([-0.2, 0.05, 0.0, 0.0, 0.0]))
    np.testing.assert_array_equal(short, full)
    np.testing.assert_array_equal(distort_normalized(XY, '', np.zeros(0)), XY)
    with pytest.raises(UnsupportedDistortionError, match='supported'):
        distort_normalized(XY, 'fov', np.array([0.1]))
    with pytest.raises(UnsupportedDistortionError, match='at most 5'):
        distort_normalized(XY, 'plumb_bob', np.ones(8))
    with pytest.raises(UnsupportedDistortionError, match='no distortion'):
        distort_normalized(XY, 'none', np.array([0.1]))


def test_projection_through_distortion(camera):
    distorted_camera = CameraModel(K, WIDTH, HEIGHT, 'plumb_bob', np.array(PLUMB_BOB_D))
    points = np.array([[0.5, 0.4, 1.0], [-0.9, 0.3, 3.0]])
    uv, _ = project_points(points, distorted_camera)
    normalized = distort_normalized(points[:, :2] / points[:, 2:], 'plumb_bob', PLUMB_BOB_D)
    np.testing.assert_allclose(uv, normalized * [500.0, 400.0] + [320.0, 240.0])
    pinhole_uv, _ = project_points(points, distorted_camera.without_distortion())
    np.testing.assert_allclose(pinhole_uv, points[:, :2] / points[:, 2:] * [500, 400] + [320, 240])


def test_points_folding_back_through_distortion_are_dropped():
    # r_d = r (1 - 0.5 r^2) peaks at r = 0.82: a point at r = 1.2 folds back to r_d = 0.34.
    camera = CameraModel(K, WIDTH, HEIGHT, 'plumb_bob', np.array([-0.5, 0.0, 0.0, 0.0, 0.0]))
    points = np.array([[1.2, 0.0, 1.0], [0.3, 0.0, 1.0]])
    uv, _ = project_points(points, camera)
    assert 0 <= uv[0, 0] < WIDTH  # the folded point would land inside the image
    result = lidar_to_sparse_depth(points, RigidTransform.identity(), camera,
                                   ProjectionConfig())
    assert result.num_projected == 1 and result.num_dropped_outside_image == 1


def test_quaternion_and_matrix_agree():
    axis, angle = np.array([1.0, -2.0, 0.5]), 0.7
    unit_axis = axis / np.linalg.norm(axis)
    quaternion = np.append(unit_axis * math.sin(angle / 2), math.cos(angle / 2))
    transform = RigidTransform.from_translation_quaternion([1.0, 2.0, 3.0], quaternion * 3.0)
    np.testing.assert_allclose(transform.rotation, rodrigues(axis, angle), atol=1e-12)
    quarter_turn = RigidTransform.from_translation_quaternion(
        [0, 0, 0], [0, 0, math.sin(math.pi / 4), math.cos(math.pi / 4)])
    np.testing.assert_allclose(quarter_turn.apply(np.array([[1.0, 0.0, 0.0]])), [[0, 1, 0]],
                               atol=1e-12)
    from_matrix = RigidTransform.from_matrix(transform.as_matrix())
    np.testing.assert_allclose(from_matrix.as_matrix(), transform.as_matrix())
    with pytest.raises(InvalidTransformError, match='zero length'):
        RigidTransform.from_translation_quaternion([0, 0, 0], [0, 0, 0, 0])


def test_inverse_and_composition():
    rng = np.random.default_rng(1)
    t_a_b = RigidTransform(rodrigues([0.2, 1.0, -0.3], 1.1), np.array([0.5, -1.0, 2.0]))
    t_b_c = RigidTransform(rodrigues([1.0, 0.1, 0.4], -0.6), np.array([-0.3, 0.2, 0.9]))
    points_c = rng.normal(size=(10, 3))
    np.testing.assert_allclose((t_a_b @ t_b_c).apply(points_c),
                               t_a_b.apply(t_b_c.apply(points_c)), atol=1e-12)
    np.testing.assert_allclose((t_a_b @ t_a_b.inverse()).as_matrix(), np.eye(4), atol=1e-12)
    np.testing.assert_allclose(t_a_b.inverse().as_matrix(), np.linalg.inv(t_a_b.as_matrix()),
                               atol=1e-12)
    np.testing.assert_allclose(RigidTransform.identity().apply(points_c), points_c)


@pytest.mark.parametrize('matrix, message', [
    (np.diag([2.0, 1.0, 1.0, 1.0]), 'orthonormal'),
    (np.diag([1.0, 1.0, -1.0, 1.0]), 'reflection'),
    (np.array([[1, 0.1, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]), 'orthonormal'),
    (np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 1]]), 'last row'),
    (np.eye(3), '4x4'),
])
def test_from_matrix_rejects_non_rigid(matrix, message):
    with pytest.raises(InvalidTransformError, match=message):
        RigidTransform.from_matrix(matrix)


def test_occlusion_removal_drops_far_point_beside_near_ones(camera):
    depth_points = {(100, 100): 5.0, (100, 101): 5.1, (101, 100): 4.9,  # near surface
                    (102, 102): 20.0,                                   # seen through a gap
                    (300, 400): 20.0}                                   # isolated, far
    rows, cols = np.array(list(depth_points)).T
    depth = np.array(list(depth_points.values()))
    points = np.stack([(cols - camera.cx) / camera.fx * depth,
                       (rows - camera.cy) / camera.fy * depth, depth], axis=1)
    config = ProjectionConfig(remove_occluded=True, occlusion_window=7, occlusion_margin=0.1)
    result = lidar_to_sparse_depth(points, RigidTransform.identity(), camera, config)
    assert result.num_dropped_occluded == 1
    assert result.num_projected == 4
    assert result.depth[102, 102] == 0.0
    assert result.depth[300, 400] == pytest.approx(20.0)
    # 5.1 is within the 10 % margin of 4.9, so the near surface stays whole.
    assert result.depth[100, 101] == pytest.approx(5.1)
    kept = lidar_to_sparse_depth(points, RigidTransform.identity(), camera, ProjectionConfig())
    assert kept.num_projected == 5


def test_backproject_then_project_returns_same_pixels(camera):
    rng = np.random.default_rng(2)
    depth = rng.uniform(1.0, 80.0, (HEIGHT, WIDTH)).astype(np.float32)
    depth[rng.random((HEIGHT, WIDTH)) < 0.5] = 0.0
    depth[0, 0] = np.nan
    depth[0, 1] = np.inf
    points, rows, cols = backproject_depth(depth, camera)
    assert points.dtype == np.float32 and points.shape == (rows.size, 3)
    assert rows.size == np.count_nonzero(np.isfinite(depth) & (depth > 0))
    uv, z = project_points(points, camera)
    np.testing.assert_allclose(uv, np.stack([cols, rows], axis=1), atol=1e-3)
    np.testing.assert_allclose(z, depth[rows, cols], rtol=1e-6)

    reprojected = lidar_to_sparse_depth(points, RigidTransform.identity(), camera,
                                        NO_RANGE_LIMIT)
    expected = np.where(np.isfinite(depth), depth, 0.0)
    np.testing.assert_allclose(reprojected.depth, expected, rtol=1e-6)


def test_backproject_stride_and_shape_check(camera):
    depth = np.full((HEIGHT, WIDTH), 2.0, dtype=np.float32)
    points, rows, cols = backproject_depth(depth, camera, stride=4)
    assert points.shape == (120 * 160, 3)
    assert set(np.unique(rows) % 4) == {0} and set(np.unique(cols) % 4) == {0}
    with pytest.raises(InvalidPointsError, match='scaled'):
        backproject_depth(depth[:, :100], camera)
    with pytest.raises(InvalidConfigError, match='stride'):
        backproject_depth(depth, camera, stride=0)
