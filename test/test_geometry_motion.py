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
lrda_ros.geometry.motion against references it does not share code with.

The SE(3) exponential is checked against the matrix exponential of the 4x4 twist matrix
(``torch.linalg.matrix_exp``), rotations against OpenCV's Rodrigues, and a constant-velocity
drive against the hand-computed circular arc.
"""

import math

from lrda_ros.geometry import RigidTransform
from lrda_ros.geometry.motion import (
    align_sweep, check_times, move_points, points_at_instant, pose_window, se3_exp, se3_log)
import numpy as np
import pytest

torch = pytest.importorskip('torch', reason='torch (a package dependency) gives matrix_exp')

RNG = np.random.default_rng(7)


def twist_matrix(twist):
    """Return the 4x4 se(3) matrix of a twist (rho, omega)."""
    rho, omega = twist[:3], twist[3:]
    matrix = np.zeros((4, 4))
    matrix[:3, :3] = [[0, -omega[2], omega[1]], [omega[2], 0, -omega[0]],
                      [-omega[1], omega[0], 0]]
    matrix[:3, 3] = rho
    return matrix


def matrix_exp(matrices):
    return torch.linalg.matrix_exp(torch.from_numpy(np.asarray(matrices))).numpy()


TWISTS = [RNG.normal(size=6) for _ in range(6)] + [
    np.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.0]),  # pure translation
    np.array([0.5, -0.2, 0.1, 0.0, 0.0, 3.0]),  # near half a turn
    np.array([0.3, 0.1, 0.0, 1e-7, 0.0, 2e-7]),  # tiny rotation
]


@pytest.mark.parametrize('twist', TWISTS)
def test_se3_exp_is_the_matrix_exponential(twist):
    # float64 matrix exponentials agree to a few ulps of values of order 1.
    np.testing.assert_allclose(se3_exp(twist).as_matrix(), matrix_exp(twist_matrix(twist)),
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize('twist', TWISTS)
def test_se3_log_inverts_the_exponential(twist):
    transform = RigidTransform.from_matrix(matrix_exp(twist_matrix(twist)))
    if np.linalg.norm(twist[3:]) < math.pi:  # the log is unique below half a turn
        np.testing.assert_allclose(se3_log(transform), twist, rtol=0, atol=1e-9)
    back = matrix_exp(twist_matrix(se3_log(transform)))
    np.testing.assert_allclose(back, transform.as_matrix(), rtol=0, atol=1e-9)


@pytest.mark.parametrize('twist', TWISTS)
def test_move_points_applies_each_points_own_exponential(twist):
    points = RNG.uniform(-60, 60, (40000, 3))  # more than one chunk
    fractions = RNG.uniform(-1.5, 1.5, len(points))
    transforms = matrix_exp(fractions[:, None, None] * twist_matrix(twist)[None])
    expected = np.einsum('nij,nj->ni', transforms[:, :3, :3], points) + transforms[:, :3, 3]
    # 60 m points, float64: 1e-9 m is still ~1e5 ulps of slack for the two formulas.
    np.testing.assert_allclose(move_points(points, twist, fractions), expected,
                               rtol=0, atol=1e-9)


def test_rotation_part_agrees_with_opencv_rodrigues():
    cv2 = pytest.importorskip('cv2', reason='opencv-python-headless is not installed')
    twist = np.array([0.4, -0.3, 0.2, 0.3, -0.5, 0.7])
    for fraction in (-0.7, 0.25, 1.0):
        rotation, _ = cv2.Rodrigues(fraction * twist[3:])
        unit = move_points(np.eye(3), twist, np.full(3, fraction))
        origin = move_points(np.zeros((1, 3)), twist, np.full(1, fraction))
        np.testing.assert_allclose((unit - origin).T, rotation, rtol=0, atol=1e-12)


def test_constant_velocity_drive_follows_the_circular_arc():
    # A robot at 10 m/s turning at 30 deg/s: after t seconds its origin has gone round an arc
    # of radius v / w, heading w t (hand-computed kinematics).
    speed, yaw_rate = 10.0, math.radians(30.0)
    twist = np.array([speed, 0.0, 0.0, 0.0, 0.0, yaw_rate])
    times = np.array([0.0, 0.05, 0.1, 1.0])
    moved = move_points(np.zeros((4, 3)), twist, times)
    radius = speed / yaw_rate
    expected = np.stack([radius * np.sin(yaw_rate * times),
                         radius * (1 - np.cos(yaw_rate * times)), np.zeros(4)], axis=1)
    np.testing.assert_allclose(moved, expected, rtol=0, atol=1e-12)


def poses_along(twist, T_start, times):
    """Return T_fixed_lidar(t) = T_start exp(t * twist) for each time."""
    return [RigidTransform.from_matrix(T_start @ matrix_exp(t * twist_matrix(twist)))
            for t in times]


def test_points_at_instant_recovers_where_each_point_was_at_the_image():
    twist = np.array([12.0, 0.4, 0.1, 0.02, -0.01, math.radians(35.0)])  # per second
    T_start = RigidTransform.from_translation_quaternion(
        [3.0, -2.0, 0.5], [0.0, 0.0, math.sin(0.4), math.cos(0.4)]).as_matrix()
    world = RNG.uniform(-40, 40, (5000, 3))
    times = RNG.uniform(-0.03, 0.09, len(world))  # s from the cloud stamp
    image_s = 0.045
    start_s, end_s = -0.05, 0.1
    measured = np.stack([
        pose.inverse().apply(point[None])[0]
        for pose, point in zip(poses_along(twist, T_start, times - start_s), world)])
    pose_start, pose_end, pose_image = poses_along(
        twist, T_start, [0.0, end_s - start_s, image_s - start_s])
    aligned = points_at_instant(measured, times, pose_start, pose_end, start_s, end_s, image_s)
    # Poses go through 4x4 products and a quaternion: 1e-9 m over 40 m is ample.
    np.testing.assert_allclose(aligned, pose_image.inverse().apply(world), rtol=0, atol=1e-9)


def test_no_motion_or_empty_window_returns_the_points_untouched():
    points = RNG.uniform(-10, 10, (100, 3)).astype(np.float32)
    pose = RigidTransform.from_translation_quaternion([1.0, 2.0, 3.0], [0.0, 0.0, 0.6, 0.8])
    times = RNG.uniform(0, 0.1, 100)
    assert points_at_instant(points, times, pose, pose, 0.0, 0.1, 0.05) is points
    moved = RigidTransform.from_translation_quaternion([1.5, 2.0, 3.0], [0.0, 0.0, 0.6, 0.8])
    assert points_at_instant(points, times, pose, moved, 0.0, 0.0, 0.0) is points


def test_check_times_counts_and_neutralizes_bad_times():
    times = np.array([0.01, np.nan, 0.05, np.inf, -np.inf, 3.0, -0.02, -0.4])
    checked = check_times(times, max_offset_s=0.25)
    assert checked.num_not_finite == 3
    assert checked.num_outside_sweep == 2  # 3.0 s and -0.4 s
    np.testing.assert_array_equal(checked.seconds, [0.01, 0, 0.05, 0, 0, 0, -0.02, 0])
    assert (checked.start_s, checked.end_s) == (-0.02, 0.05)
    empty = check_times(np.array([np.nan]), 0.25)
    assert (empty.start_s, empty.end_s, empty.num_not_finite) == (0.0, 0.0, 1)
    with pytest.raises(ValueError, match='max_offset_s'):
        check_times(times, 0.0)


def test_times_all_at_the_stamp_are_checked_as_the_general_path_checks_them():
    # A cloud without point times (every time 0, -0.0 among them): what the general path
    # gives for the same times with one point moved off the stamp, that point aside.
    zeros = np.array([0.0, -0.0, 0.0])
    checked = check_times(zeros, 0.25)
    general = check_times(np.append(zeros, 0.1), 0.25)
    np.testing.assert_array_equal(checked.seconds, general.seconds[:3])
    assert (checked.num_not_finite, checked.num_outside_sweep) == (0, 0)
    assert (checked.start_s, checked.end_s) == (0.0, 0.0) == (general.start_s, 0.0)
    with pytest.raises(ValueError, match='max_offset_s'):
        check_times(zeros, -1.0)


def test_pose_window_spans_the_sweep_the_stamp_and_the_image():
    checked = check_times(np.array([0.01, 0.09]), 0.25)
    assert pose_window(checked, 0.03) == (0.0, 0.09)
    assert pose_window(checked, -0.04) == (-0.04, 0.09)
    assert pose_window(checked, 0.12) == (0.0, 0.12)


def test_align_sweep_looks_up_the_window_ends_and_counts_bad_times():
    twist = np.array([10.0, 0.0, 0.0, 0.0, 0.0, math.radians(30.0)])
    looked_up = []

    def pose_at(seconds):
        looked_up.append(seconds)
        return poses_along(twist, np.eye(4), [seconds])[0]

    world = RNG.uniform(-30, 30, (200, 3))
    times = np.linspace(0.0, 0.1, 200)
    measured = np.stack([pose.inverse().apply(point[None])[0]
                         for pose, point in zip(poses_along(twist, np.eye(4), times), world)])
    times_read = times.copy()
    times_read[5] = np.nan  # moved as if measured at the stamp, and counted
    result = align_sweep(measured, times_read, 0.12, pose_at)
    assert looked_up == [0.0, 0.12] and result.window_s == (0.0, 0.12)
    assert result.times.num_not_finite == 1
    expected = poses_along(twist, np.eye(4), [0.12])[0].inverse().apply(world)
    good = np.arange(200) != 5
    np.testing.assert_allclose(result.points[good], expected[good], rtol=0, atol=1e-9)


def test_align_sweep_without_a_window_looks_nothing_up_and_lookup_errors_propagate():
    points = RNG.uniform(-10, 10, (10, 3))

    def unavailable(seconds):
        raise LookupError('extrapolation into the future')

    still = align_sweep(points, np.zeros(10), 0.0, unavailable)
    assert still.points is points
    with pytest.raises(LookupError, match='extrapolation'):
        align_sweep(points, np.zeros(10), 0.03, unavailable)
