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
Lens distortion against OpenCV, the reference implementation of the ROS camera models.

``cv2.projectPoints`` (plumb_bob, rational_polynomial) and ``cv2.fisheye.projectPoints``
(equidistant) must agree with the package's projection to 0.01 px over the whole image, and the
sparse depth map of an unrectified image must put each LiDAR point on OpenCV's pixel.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

cv2 = pytest.importorskip('cv2', reason='opencv-python-headless is not installed '
                                        '(pip install -r requirements-dev.txt)')

from lrda_ros.geometry import (  # noqa: E402, I100
    backproject_depth, camera_for_image, InvalidCameraError, lidar_to_sparse_depth,
    project_points, ProjectionConfig, RigidTransform)
from lrda_ros.messages.conversions import camera_info_to_camera_model  # noqa: E402

WIDTH, HEIGHT = 1280, 720
K = np.array([[600.0, 0.0, 652.3], [0.0, 610.0, 355.8], [0.0, 0.0, 1.0]])
# P of the rectified image: another focal length and centre, so using it is visible.
P = np.array([[520.0, 0.0, 640.0, 0.0], [0.0, 520.0, 360.0, 0.0], [0.0, 0.0, 1.0, 0.0]])
FISHEYE_K = np.array([[560.0, 0.0, 641.0], [0.0, 561.0, 359.0], [0.0, 0.0, 1.0]])

# Strong distortions: a wide-angle plumb_bob (k1 = -0.3), a Kinect-like rational polynomial
# and a fisheye (equidistant, ~150 degrees across the image diagonal).
CAMERAS = {
    'plumb_bob': (K, np.array([-0.3, 0.1, 0.001, -0.0015, -0.01])),
    'rational_polynomial': (K, np.array([0.52, -2.6, 0.0012, -0.0006, 1.5, 0.41, -2.45, 1.42])),
    'equidistant': (FISHEYE_K, np.array([0.05, -0.02, 0.004, -0.0008])),
}


def opencv_project(points: np.ndarray, model: str, K: np.ndarray, D: np.ndarray) -> np.ndarray:
    """Project camera-frame points with OpenCV (identity pose)."""
    zero = np.zeros(3)
    if model == 'equidistant':
        uv, _ = cv2.fisheye.projectPoints(points.reshape(-1, 1, 3), zero, zero, K, D)
    else:
        uv, _ = cv2.projectPoints(points.reshape(-1, 1, 3), zero, zero, K, D)
    return uv.reshape(-1, 2)


def opencv_rays_for_pixels(model: str, K: np.ndarray, D: np.ndarray,
                           step: int = 16) -> np.ndarray:
    """Return normalized rays (N, 2) of a pixel grid covering the whole image, corners too."""
    cols = np.append(np.arange(0, WIDTH, step), WIDTH - 1)
    rows = np.append(np.arange(0, HEIGHT, step), HEIGHT - 1)
    grid = np.stack(np.meshgrid(cols, rows), axis=-1).reshape(-1, 1, 2).astype(np.float64)
    if model == 'equidistant':
        criteria = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 100, 1e-12)
        rays = cv2.fisheye.undistortPoints(grid, K, D, criteria=criteria)
    else:
        criteria = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 200, 1e-14)
        rays = cv2.undistortPointsIter(grid, K, D, None, None, criteria)
    return rays.reshape(-1, 2)


def camera_info(model: str, K: np.ndarray, D: np.ndarray) -> SimpleNamespace:
    """Return a CameraInfo-like message (the converter reads fields by name)."""
    return SimpleNamespace(width=WIDTH, height=HEIGHT, distortion_model=model,
                           d=list(D), k=K.ravel(), p=P.ravel(), binning_x=0, binning_y=0,
                           roi=SimpleNamespace(width=0))


@pytest.mark.parametrize('model', sorted(CAMERAS))
def test_projection_agrees_with_opencv_over_the_whole_image(model):
    K_model, D = CAMERAS[model]
    rays = opencv_rays_for_pixels(model, K_model, D)
    depth = np.random.default_rng(0).uniform(0.5, 80.0, len(rays))
    points = np.column_stack([rays * depth[:, None], depth])
    expected = opencv_project(points, model, K_model, D)
    # The grid reaches every border: the comparison covers the whole image.
    assert expected[:, 0].min() < 1 and expected[:, 0].max() > WIDTH - 2
    assert expected[:, 1].min() < 1 and expected[:, 1].max() > HEIGHT - 2
    camera = camera_info_to_camera_model(camera_info(model, K_model, D))
    uv, _ = project_points(points, camera)
    error = np.abs(uv - expected).max()
    assert error < 0.01, f'{model}: max |package - OpenCV| = {error:.4f} px'
    # Distortion matters here: pinhole projection is tens of pixels off at the borders.
    pinhole, _ = project_points(points, camera.without_distortion())
    assert np.abs(pinhole - expected).max() > 20


def _off_pixel_boundaries(uv: np.ndarray, margin: float = 0.02) -> np.ndarray:
    fraction = np.abs((uv + 0.5) - np.round(uv + 0.5))
    return np.all(fraction > margin, axis=1)


@pytest.mark.parametrize('model', sorted(CAMERAS))
def test_sparse_depth_of_an_unrectified_image_lands_where_opencv_projects(model):
    K_model, D = CAMERAS[model]
    rays = opencv_rays_for_pixels(model, K_model, D, step=40)
    depth = np.random.default_rng(1).uniform(2.0, 60.0, len(rays))
    points_cam = np.column_stack([rays * depth[:, None], depth])
    expected_uv = opencv_project(points_cam, model, K_model, D)
    keep = _off_pixel_boundaries(expected_uv)
    inside = ((expected_uv[:, 0] > -0.5) & (expected_uv[:, 0] < WIDTH - 0.5)
              & (expected_uv[:, 1] > -0.5) & (expected_uv[:, 1] < HEIGHT - 0.5))
    keep &= inside
    points_cam, expected_uv, depth = points_cam[keep], expected_uv[keep], depth[keep]
    # A LiDAR 1 m to the side of the camera: the points go through a real extrinsic.
    T_cam_lidar = RigidTransform(np.eye(3), np.array([1.0, 0.0, 0.0]))
    points_lidar = T_cam_lidar.inverse().apply(points_cam)

    camera = camera_info_to_camera_model(camera_info(model, K_model, D), rectified=False)
    sparse = lidar_to_sparse_depth(points_lidar, T_cam_lidar, camera,
                                   ProjectionConfig(min_range=0.0, max_range=1e3)).depth
    expected = np.zeros((HEIGHT, WIDTH), np.float32)
    cols, rows = np.floor(expected_uv + 0.5).astype(int).T
    expected[rows, cols] = depth
    assert len(depth) > 200
    np.testing.assert_allclose(sparse, expected, rtol=1e-6)


def test_rectified_image_uses_p_and_no_distortion():
    K_model, D = CAMERAS['plumb_bob']
    points = np.array([[0.8, -0.4, 2.0], [-1.1, 0.5, 3.0], [0.05, 0.02, 9.0]])
    camera = camera_info_to_camera_model(camera_info('plumb_bob', K_model, D), rectified=True)
    uv, _ = project_points(points, camera)
    expected = opencv_project(points, 'plumb_bob', P[:, :3], np.zeros(5))
    np.testing.assert_allclose(uv, expected, atol=1e-6)
    assert not camera.has_distortion


@pytest.mark.parametrize('model', sorted(CAMERAS))
def test_backprojection_undistorts(model):
    K_model, D = CAMERAS[model]
    camera = camera_for_image(WIDTH, HEIGHT, K_model, D, model, None, image_is_rectified=False)
    depth = np.full((HEIGHT, WIDTH), 7.5, np.float32)
    points, rows, cols = backproject_depth(depth, camera, stride=37)
    uv = opencv_project(points.astype(np.float64), model, K_model, D)
    # float32 points: ~1e-6 relative, well under 0.01 px.
    np.testing.assert_allclose(uv, np.column_stack([cols, rows]), atol=0.01)


@pytest.mark.parametrize('fields, message', [
    ({'distortion_model': 'kannala_brandt'}, "distortion_model 'kannala_brandt' is not "
                                             'supported'),
    ({'D': np.array([-0.3, 0.1, 0.0])}, 'D has 3 coefficients, but distortion_model '
                                        "'plumb_bob' takes 4 or 5"),
    ({'distortion_model': 'equidistant'}, 'D has 5 coefficients, but distortion_model '
                                          "'equidistant' takes 4"),
    ({'distortion_model': 'rational_polynomial'}, 'takes 8'),
    ({'K': np.array([[np.nan, 0, 1], [0, 1, 1], [0, 0, 1]])}, 'K must be finite'),
    ({'K': np.array([[-600.0, 0, 1], [0, 600, 1], [0, 0, 1]])}, 'fx and fy must be positive'),
    ({'K': np.zeros((3, 3))}, 'K is all zero'),
])
def test_bad_calibrations_name_the_field(fields, message):
    values = {'K': K, 'D': CAMERAS['plumb_bob'][1], 'distortion_model': 'plumb_bob'}
    values.update(fields)
    with pytest.raises(InvalidCameraError, match=message.replace('(', r'\(')):
        camera_for_image(WIDTH, HEIGHT, values['K'], values['D'], values['distortion_model'],
                         P, image_is_rectified=False)


def test_bad_rectified_calibration_names_p():
    bad_p = P.copy()
    bad_p[1, 1] = np.inf
    with pytest.raises(InvalidCameraError, match='^P: K must be finite'):
        camera_for_image(WIDTH, HEIGHT, K, np.zeros(5), 'plumb_bob', bad_p, True)
    with pytest.raises(InvalidCameraError, match='^P is all zero'):
        camera_for_image(WIDTH, HEIGHT, K, np.zeros(5), 'plumb_bob', np.zeros(12), True)
