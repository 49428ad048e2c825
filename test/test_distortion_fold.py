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
The sparse depth map keeps every point before a strong lens' fold and drops those past it.

The reference is OpenCV: ``cv2.projectPoints`` / ``cv2.fisheye.projectPoints`` give each point's
pixel and, through their Jacobian with respect to the translation (which with an identity pose
is the Jacobian with respect to the point), where the lens folds: a point is before the fold
when that Jacobian's determinant stays positive on a fine sampling of the ray from the optical
axis to it. For the radial models the fold also follows by hand from the polynomial, and the
tests check OpenCV's reference against it.
"""

from __future__ import annotations

import numpy as np
import pytest

cv2 = pytest.importorskip('cv2', reason='opencv-python-headless is not installed '
                                        '(pip install -r requirements-dev.txt)')

from lrda_ros.geometry import (  # noqa: E402, I100
    CameraModel, lidar_to_sparse_depth, ProjectionConfig, RigidTransform)
from lrda_ros.geometry.camera import before_fold  # noqa: E402

WIDTH, HEIGHT = 1280, 720
K = np.array([[600.0, 0.0, 652.3], [0.0, 610.0, 355.8], [0.0, 0.0, 1.0]])
FISHEYE_K = np.array([[560.0, 0.0, 641.0], [0.0, 561.0, 359.0], [0.0, 0.0, 1.0]])
NUM_DIRECTIONS, NUM_ANGLES = 120, 500

# Lenses whose fold lies inside the image, each with the largest angle off the optical axis
# its grid spans and, for the radial ones, the fold by hand (r^2, or theta^2 for the fisheye,
# where d(r R(r^2)) / dr = 0 or the rational model has its pole).
FOLDING_LENSES = {
    # r (1 - 0.3 r^2) peaks at r^2 = 1 / (3 * 0.3).
    'plumb_bob k1': ('plumb_bob', K, [-0.3, 0.0, 0.0, 0.0, 0.0], 80.0, 1.0 / 0.9),
    # 1 - 1.05 r^2 + 0.2 r^4 is negative for r^2 in (1.25, 4): past r = 2 the image grows
    # again, on a second branch; the tangential terms make the fold depend on the direction.
    'plumb_bob two folds, tangential': (
        'plumb_bob', K, [-0.35, 0.04, 0.002, -0.003, 0.0], 80.0, None),
    # (1 - 0.25 s) / (1 + 0.1 s): d(r R) / dr has the numerator 1 - 0.85 s - 0.025 s^2.
    'rational_polynomial': (
        'rational_polynomial', K, [-0.25, 0.0, 0.001, -0.0008, 0.0, 0.1, 0.0, 0.0], 80.0, None),
    # r / (1 - 0.3 r^2) only grows, up to its pole at r^2 = 1 / 0.3; beyond it the image
    # comes back from the opposite side.
    'rational_polynomial pole': (
        'rational_polynomial', K, [0.0, 0.0, 0.0, 0.0, 0.0, -0.3, 0.0, 0.0], 80.0, 1.0 / 0.3),
    # theta (1 - 0.25 theta^2) peaks at theta^2 = 1 / (3 * 0.25).
    'equidistant': ('equidistant', FISHEYE_K, [-0.25, 0.0, 0.0, 0.0], 89.0, 1.0 / 0.75),
}


def _ray_grid(max_angle_deg: float) -> tuple[np.ndarray, np.ndarray]:
    """Return directions (D, A, 2) and their angles off the axis (A,), dense along each ray."""
    azimuth = (np.arange(NUM_DIRECTIONS) + 0.5) * 2 * np.pi / NUM_DIRECTIONS
    theta = np.radians(max_angle_deg) * np.arange(1, NUM_ANGLES + 1) / NUM_ANGLES
    radius = np.tan(theta)
    xy = np.stack([np.cos(azimuth)[:, None] * radius, np.sin(azimuth)[:, None] * radius], -1)
    return xy, theta


def _opencv(points: np.ndarray, model: str, K_model: np.ndarray,
            D: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return OpenCV's pixels (N, 2) and the sign-bearing determinant of d(uv)/d(x, y)."""
    zero = np.zeros(3)
    if model == 'equidistant':
        uv, jacobian = cv2.fisheye.projectPoints(points.reshape(-1, 1, 3), zero, zero, K_model, D)
        d_point = jacobian[:, 11:14]
    else:
        uv, jacobian = cv2.projectPoints(points.reshape(-1, 1, 3), zero, zero, K_model, D)
        d_point = jacobian[:, 3:6]
    d_u, d_v = d_point[0::2], d_point[1::2]
    return uv.reshape(-1, 2), d_u[:, 0] * d_v[:, 1] - d_u[:, 1] * d_v[:, 0]


def _kept_at_pixel(points_cam: np.ndarray, depth: np.ndarray, pixels: np.ndarray,
                   camera: CameraModel) -> np.ndarray:
    """
    Return which points the sparse depth map holds at their own pixel (column, row).

    The points go through ``lidar_to_sparse_depth`` in rounds in which no two share a pixel,
    so the z-buffer hides none of them; a point counts as kept when its depth is at its pixel,
    and nothing may land anywhere else.
    """
    pixel_id = pixels[:, 1] * WIDTH + pixels[:, 0]
    order = np.argsort(pixel_id, kind='stable')
    run_start = np.flatnonzero(np.r_[True, np.diff(pixel_id[order]) != 0])
    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.arange(len(order)) - np.repeat(run_start, np.diff(np.r_[run_start,
                                                                             len(order)]))
    kept = np.zeros(len(points_cam), dtype=bool)
    config = ProjectionConfig(min_range=0.0, max_range=1e4)
    for round_index in range(rank.max() + 1):
        chosen = np.flatnonzero(rank == round_index)
        result = lidar_to_sparse_depth(points_cam[chosen], RigidTransform.identity(), camera,
                                       config)
        cols, rows = pixels[chosen].T
        kept[chosen] = result.depth[rows, cols] == depth[chosen].astype(np.float32)
        assert result.num_projected == np.count_nonzero(kept[chosen])
    return kept


@pytest.mark.parametrize('lens', sorted(FOLDING_LENSES))
def test_sparse_depth_keeps_the_points_before_the_fold_at_opencvs_pixel(lens):
    model, K_model, coefficients, max_angle, fold_by_hand = FOLDING_LENSES[lens]
    D = np.array(coefficients)
    xy, theta = _ray_grid(max_angle)
    depth = np.random.default_rng(3).uniform(2.0, 60.0, xy.shape[:2])
    points_cam = np.concatenate([xy * depth[..., None], depth[..., None]], -1)
    uv, determinant = _opencv(points_cam.reshape(-1, 3), model, K_model, D)
    # Before the fold: OpenCV's Jacobian stays positive from the axis up to the point.
    before = np.logical_and.accumulate(determinant.reshape(xy.shape[:2]) > 0, axis=1).ravel()
    if fold_by_hand is not None:
        squared = theta ** 2 if model == 'equidistant' else np.sum(xy * xy, axis=-1)
        before_hand = np.broadcast_to(squared < fold_by_hand, xy.shape[:2]).ravel()
        np.testing.assert_array_equal(before, before_hand)

    # Points in the image, clear of pixel boundaries (where 1e-9 px decides the pixel).
    shifted = uv + 0.5
    fraction = np.abs(shifted - np.round(shifted))
    usable = (np.all(fraction > 1e-3, axis=1) & (shifted[:, 0] > 0) & (shifted[:, 0] < WIDTH)
              & (shifted[:, 1] > 0) & (shifted[:, 1] < HEIGHT))
    pixels = np.floor(shifted[usable]).astype(np.intp)
    before = before[usable]
    # The grid spans the fold: many points on either side of it land in the image.
    assert np.count_nonzero(before) > 10000 and np.count_nonzero(~before) > 1000

    camera = CameraModel(K_model, WIDTH, HEIGHT, model, D)
    kept = _kept_at_pixel(points_cam.reshape(-1, 3)[usable], depth.ravel()[usable], pixels,
                          camera)
    dropped_before = np.count_nonzero(before & ~kept)
    kept_past = np.count_nonzero(~before & kept)
    assert dropped_before == 0 and kept_past == 0, (
        f'{lens}: {dropped_before} points before the fold dropped, {kept_past} past it kept')
    # The package's own test agrees point for point.
    normalized = points_cam.reshape(-1, 3)[usable]
    np.testing.assert_array_equal(
        before_fold(normalized[:, :2] / normalized[:, 2:], model, D), before)


def test_points_just_before_the_fold_are_kept():
    # k1 = -0.3 folds at r^2 = 1.11; where the image is nearly flat (r^2 from 0.89 on) an
    # inverse iteration converges slowly, but these points are all on the central branch.
    D = np.array([-0.3, 0.0, 0.0, 0.0, 0.0])
    angle = np.linspace(0.0, 2 * np.pi, 400, endpoint=False)
    radius = np.sqrt(np.linspace(0.89, 1.11, 50))
    xy = np.stack(np.broadcast_arrays(np.cos(angle)[:, None] * radius,
                                      np.sin(angle)[:, None] * radius), -1).reshape(-1, 2)
    assert np.all(before_fold(xy, 'plumb_bob', D))
    assert not np.any(before_fold(xy * 1.01, 'plumb_bob', D)[np.sum(xy * xy, 1) > 1.1])


def test_without_distortion_every_point_is_before_the_fold():
    xy = np.array([[0.0, 0.0], [5.0, -3.0], [1e6, 1e6]])
    assert np.all(before_fold(xy, 'plumb_bob', np.zeros(5)))
    assert np.all(before_fold(xy, '', np.zeros(0)))
    assert before_fold(np.zeros((1, 2)), 'equidistant', np.array([-0.25, 0.0, 0.0, 0.0]))[0]
