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
The calibration check (lrda_ros.geometry.calibration_*) against answers worked out by hand.

Edge strength, its spread and the LiDAR discontinuities on arrays small enough to compute on
paper; the search on a painted plank scene (test/calibration_scene.py, no package code) whose
right answer is known: a rotation applied to the extrinsic, a time offset applied to the
image. Thin evidence (one frame, a blank image, a handful of points, a still rig's time
offset) must give "not enough evidence" or "not observable", never a confident number.
"""

from calibration_scene import (CX, CY, FOCAL, HEIGHT, plank_image, plank_scan, R_CAM_LIDAR,
                               WIDTH)
from lrda_ros.calibration.edges import (
    depth_discontinuities, edge_strength, inverse_distance_transform, outline_points)
from lrda_ros.calibration.score import (
    bilinear, calibration_frame, rotation_matrix, rotation_vector, WindowScore)
from lrda_ros.calibration.search import (
    check_calibration, CheckConfig, CONSISTENT, NOT_ENOUGH_EVIDENCE, SUSPECT)
from lrda_ros.calibration.text import check_to_dict, describe
from lrda_ros.geometry import CameraModel, RigidTransform
import numpy as np
import pytest

CAMERA = CameraModel(K=np.array([[FOCAL, 0, CX], [0, FOCAL, CY], [0, 0, 1.0]]),
                     D=np.zeros(5), width=WIDTH, height=HEIGHT)
TRUE = RigidTransform(R_CAM_LIDAR, np.zeros(3))
#: Planks (left, right edge in metres at 6 m) of the window's frames.
PLANKS = ((-2.0, -0.5), (-0.8, 0.9), (0.3, 2.2))


def test_edge_strength_is_the_largest_difference_to_the_eight_neighbours():
    image = np.zeros((4, 5), np.float32)
    image[:, 3:] = 1.0           # a vertical step between columns 2 and 3
    image[0, 0] = 0.25
    expected = np.zeros((4, 5), np.float32)
    expected[:, 2:4] = 1.0       # both sides of the step
    expected[0, 0] = expected[0, 1] = expected[1, 0] = expected[1, 1] = 0.25
    np.testing.assert_allclose(edge_strength(image), expected)


def test_inverse_distance_transform_of_one_edge_pixel():
    edges = np.zeros((5, 7), np.float32)
    edges[2, 3] = 1.0
    alpha, gamma = 0.25, 0.5
    spread = inverse_distance_transform(edges, alpha, gamma)
    rows, cols = np.mgrid[0:5, 0:7]
    expected = (1 - alpha) * gamma ** (np.abs(rows - 2) + np.abs(cols - 3))
    expected[2, 3] += alpha
    np.testing.assert_allclose(spread, expected, rtol=1e-6)


def test_discontinuities_score_the_near_side_of_a_jump():
    azimuth = np.radians([2.0, 1.0, 0.0, -1.0, -2.0])
    ranges = np.array([10.0, 10.0, 6.0, 6.0, 10.0])
    points = np.stack([np.cos(azimuth), np.sin(azimuth), np.zeros(5)], axis=1) * ranges[:, None]
    weights, partner = depth_discontinuities(points, max_azimuth_step_deg=1.5)
    np.testing.assert_allclose(weights, [0, 0, 2.0, 2.0, 0])   # sqrt(10 - 6)
    assert partner[2] == 1 and partner[3] == 4
    # The outline lies between the near point and the far one, at the near range.
    outline = outline_points(points[[2]], points[[1]])
    np.testing.assert_allclose(outline[0], 6.0 * np.array([np.cos(np.radians(0.5)),
                                                           np.sin(np.radians(0.5)), 0.0]))


def test_rotation_vector_round_trip_matches_rodrigues_by_hand():
    angle = np.radians(30.0)
    by_hand = np.array([[np.cos(angle), -np.sin(angle), 0], [np.sin(angle), np.cos(angle), 0],
                        [0, 0, 1.0]])
    np.testing.assert_allclose(rotation_matrix([0, 0, angle]), by_hand, atol=1e-12)
    np.testing.assert_allclose(rotation_vector(by_hand), [0, 0, angle], atol=1e-12)


def test_score_is_the_weighted_edge_value_under_the_projected_points():
    edges = np.arange(WIDTH * HEIGHT, dtype=np.float32).reshape(HEIGHT, WIDTH) / 1000
    # Two outline points 6 m ahead, projecting by hand to (160 + 160 * 0.5 / 6, 80) and
    # (160 - 160 / 6, 80 + 160 * 0.25 / 6).
    points_cam = np.array([[0.5, 0.0, 6.0], [-1.0, 0.25, 6.0]])
    uv = np.array([[CX + FOCAL * 0.5 / 6, CY], [CX - FOCAL / 6, CY + FOCAL * 0.25 / 6]])
    frame = calibration_frame(plank_image(-1, 1), np.zeros((0, 3)), TRUE, CAMERA)
    frame = type(frame)(edges, CAMERA, TRUE, points_cam @ R_CAM_LIDAR, np.array([1.0, 3.0]))
    by_hand = [(edges[int(v), int(u)] * (1 - (u % 1)) + edges[int(v), int(u) + 1] * (u % 1))
               * (1 - v % 1) + (edges[int(v) + 1, int(u)] * (1 - u % 1)
                                + edges[int(v) + 1, int(u) + 1] * (u % 1)) * (v % 1)
               for u, v in uv]
    np.testing.assert_allclose(bilinear(edges, uv), by_hand, rtol=1e-6)
    np.testing.assert_allclose(WindowScore([frame])(np.zeros(7)),
                               (by_hand[0] + 3 * by_hand[1]) / 4, rtol=1e-6)


def _window(extrinsic: RigidTransform, planks=PLANKS) -> list:
    return [calibration_frame(plank_image(left, right), plank_scan(left, right)[0], extrinsic,
                              CAMERA) for left, right in planks]


def _turned(rotation_deg) -> RigidTransform:
    """Return the extrinsic whose right correction is the rotation ``rotation_deg``."""
    return RigidTransform(rotation_matrix(np.radians(rotation_deg)), np.zeros(3)).inverse() \
        @ TRUE


def test_the_true_extrinsic_is_consistent():
    check = check_calibration(_window(TRUE))
    assert check.verdict == CONSISTENT, describe(check)
    assert np.degrees(np.linalg.norm(check.theta[:3])) <= 0.15


@pytest.mark.parametrize('rotation_deg', [(0.0, 1.0, 0.0), (0.0, -0.6, 0.0)])
def test_a_yaw_error_is_found_and_corrected(rotation_deg):
    check = check_calibration(_window(_turned(rotation_deg)))
    assert check.verdict == SUSPECT, describe(check)
    assert check.parameter('rotation_y').observable
    np.testing.assert_allclose(np.degrees(check.theta[1]), rotation_deg[1], atol=0.15)
    assert 'yaw' in describe(check)
    report = check_to_dict(check, TRUE)
    assert report['verdict'] == 'suspect' and report['time_offset_ms'] is None
    np.testing.assert_allclose(report['rotation_deg'][1], rotation_deg[1], atol=0.15)


def test_one_frame_is_not_enough_evidence():
    check = check_calibration(_window(_turned((0.0, 1.0, 0.0)), PLANKS[:1]))
    assert check.verdict == NOT_ENOUGH_EVIDENCE and 'frame' in check.reason
    assert not check.theta.any()
    assert all(p.value is None for p in check.parameters)


def test_blank_images_are_not_enough_evidence():
    frames = [calibration_frame(np.full((HEIGHT, WIDTH, 3), 90, np.uint8),
                                plank_scan(left, right)[0], _turned((0, 1, 0)), CAMERA)
              for left, right in PLANKS]
    check = check_calibration(frames)
    assert check.verdict == NOT_ENOUGH_EVIDENCE and 'edges' in check.reason


def test_a_handful_of_points_is_not_enough_evidence():
    frames = [calibration_frame(plank_image(left, right), plank_scan(left, right)[0][::40],
                                _turned((0, 1, 0)), CAMERA) for left, right in PLANKS]
    check = check_calibration(frames)
    assert check.verdict == NOT_ENOUGH_EVIDENCE and 'points' in check.reason


def test_a_still_rig_reports_the_time_offset_as_not_observable():
    frames = [calibration_frame(plank_image(left, right), *plank_scan(left, right)[:1], TRUE,
                                CAMERA, times_s=np.zeros(len(plank_scan(left, right)[0])),
                                twist=np.zeros(6)) for left, right in PLANKS]
    check = check_calibration(frames)
    offset = check.parameter('time_offset')
    assert not offset.observable and offset.value is None and 'motion' in offset.note
    assert check_to_dict(check)['time_offset_ms'] is None


def _sliding(offset_s: float, speed: float = 4.0) -> list:
    """
    Return the window of a rig sliding right at ``speed`` m/s, its images ``offset_s`` late.

    Each column is timed by its azimuth over a 0.1 s sweep (stamp at its middle); the image
    was taken ``offset_s`` after its stamp, from where the rig then was: the plank shifts by
    ``speed * offset_s`` metres, 0.12 m = 3 px at 6 m for 30 ms at 4 m/s.
    """
    def times_of(azimuth_deg: float) -> float:
        return (45.0 - azimuth_deg) / 90.0 * 0.1 - 0.05

    frames = []
    for left, right in PLANKS:
        points, times = plank_scan(left, right, times_of, speed)
        frames.append(calibration_frame(
            plank_image(left, right, camera_x_m=speed * offset_s), points, TRUE, CAMERA,
            times_s=times, twist=np.array([0.0, -speed, 0.0, 0.0, 0.0, 0.0])))
    return frames


@pytest.mark.parametrize('offset_s', [0.03, -0.05])
def test_a_time_offset_on_a_moving_rig_is_found(offset_s):
    check = check_calibration(_sliding(offset_s), CheckConfig(rotation=False))
    offset = check.parameter('time_offset')
    assert offset.observable, describe(check)
    assert abs(offset.value - offset_s) <= 0.005


def test_one_twist_makes_the_time_offset_unobservable_beside_the_rotation():
    # Every frame slides at the same speed: an offset is one fixed shift of the mount, which a
    # rotation of it matches at the plank's one depth. Searched with the rotation, the offset
    # is said to be not observable, never given a value.
    check = check_calibration(_sliding(0.03))
    offset = check.parameter('time_offset')
    assert not offset.observable and offset.value is None and 'one twist' in offset.note
    assert check_to_dict(check)['time_offset_ms'] is None


def test_the_node_parameters_make_the_monitor_settings_and_are_checked():
    from lrda_ros.settings import InvalidParameterError, NodeSettings

    settings = NodeSettings.from_values({'calibration_check.window': 5,
                                         'calibration_check.apply': True}).calibration
    assert (settings.enabled, settings.window, settings.period_s, settings.apply) == \
        (True, 5, 30.0, True)
    with pytest.raises(InvalidParameterError, match='calibration_check.window'):
        NodeSettings.from_values({'calibration_check.window': 2})  # one frame has no spread
