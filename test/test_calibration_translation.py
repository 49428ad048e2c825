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
The calibration check's translation against hand-made scenes whose answer is known.

Light diamond boards on a dark background (test/calibration_scene.py: painted from the
pinhole formula, scanned by intersecting rays with the boards' planes, no package code). A
translation of the mount shifts a board by ``f t / z`` pixels, a rotation shifts every board
alike: only boards at several depths near the camera tell the two apart (parallax). Near
boards (1.2-4.5 m, 400 px focal length): translation errors of 5 and 10 cm are found to 3 cm
(they come out within 2 mm; 3 cm is the tolerance the check promises). The same boards at
40-55 m, or all at one depth: the translation (sideways, at one depth) is reported as not
observable, without a value, never a confident number.
"""

from calibration_scene import (BOARD_CX, BOARD_CY, BOARD_FOCAL, BOARD_HEIGHT, board_image,
                               board_layouts, board_scan, BOARD_WIDTH, R_CAM_LIDAR)
from lrda_ros.calibration.confidence import half_windows, parallax_px, with_parallax
from lrda_ros.calibration.score import calibration_frame, rotation_matrix
from lrda_ros.calibration.search import (
    check_calibration, CheckConfig, NOT_ENOUGH_EVIDENCE, SUSPECT)
from lrda_ros.calibration.text import check_to_dict, describe
from lrda_ros.geometry import CameraModel, RigidTransform
import numpy as np
import pytest

CAMERA = CameraModel(K=np.array([[BOARD_FOCAL, 0, BOARD_CX], [0, BOARD_FOCAL, BOARD_CY],
                                 [0, 0, 1.0]]), D=np.zeros(5), width=BOARD_WIDTH,
                     height=BOARD_HEIGHT)
TRUE = RigidTransform(R_CAM_LIDAR, np.zeros(3))
NEAR = (1.2, 1.5, 1.8, 2.2, 2.6, 3.0, 3.5, 4.5)
FAR = (40.0, 42.0, 44.0, 46.0, 48.0, 50.0, 52.0, 55.0)
TRANSLATION = CheckConfig(translation=True)


def _given(rotation_deg, translation_m) -> RigidTransform:
    """Return the extrinsic whose right correction is the error: C^-1 T."""
    C = RigidTransform(rotation_matrix(np.radians(rotation_deg)), np.asarray(translation_m))
    return C.inverse() @ TRUE


def _window(depths, rotation_deg=(0.0, 0.0, 0.0), translation_m=(0.0, 0.0, 0.0),
            layouts=None) -> list:
    given = _given(rotation_deg, translation_m)
    layouts = board_layouts(depths) if layouts is None else layouts
    return [calibration_frame(board_image(boards), board_scan(boards), given, CAMERA)
            for boards in layouts]


def test_parallax_of_points_at_two_depths_by_hand():
    # Points at 2 m and 8 m, equal weights, moving along u only: a translation t shifts them
    # by f t / z, a rotation (yaw) by f alike. The rotation makes up the mean shift, what is
    # left is f t (1/2 - 1/8) / 2 at each point: the root-mean-square parallax.
    focal, tolerance = 400.0, 0.03
    jacobian = np.array([[focal, focal / 2.0], [0.0, 0.0], [focal, focal / 8.0], [0.0, 0.0]])
    # Rows u, v of each point; each point weighs 1/2 (the points' weights sum to one).
    weights = np.array([0.5, 0.5, 0.5, 0.5])
    tolerances = np.array([np.radians(0.3), tolerance])
    shifts = parallax_px(jacobian, weights, tolerances, np.array([False, True]))
    assert np.isnan(shifts[0])
    np.testing.assert_allclose(shifts[1], focal * tolerance * (1 / 2 - 1 / 8) / 2, rtol=1e-9)
    # At one depth a translation is a rotation: no parallax, dropped; the rotation is kept.
    same_depth = np.array([[focal, focal / 4.0], [0.0, 0.0]] * 2)
    kept, record = with_parallax(same_depth, weights, tolerances, np.array([False, True]), 2.0)
    assert kept.tolist() == [True, False] and record[1] < 1e-6


@pytest.mark.parametrize('rotation_deg, translation_m', [
    ((0.0, 0.0, 0.0), (0.05, 0.0, 0.0)),
    ((0.0, 0.0, 0.0), (0.0, -0.05, 0.0)),
    ((0.0, 0.0, 0.0), (0.0, 0.0, 0.1)),
    ((0.5, 0.0, 0.0), (0.05, 0.05, 0.0)),
])
def test_near_boards_find_the_translation(rotation_deg, translation_m):
    check = check_calibration(_window(NEAR, rotation_deg, translation_m), TRANSLATION)
    assert check.verdict == SUSPECT, describe(check)
    translation = check.parameters[3:6]
    assert all(p.observable for p in translation), [p.note for p in translation]
    np.testing.assert_allclose(check.theta[3:6], translation_m, atol=0.03)
    np.testing.assert_allclose(np.degrees(check.theta[:3]), rotation_deg, atol=0.15)
    assert all(p.standard_error < 0.03 for p in translation)


def test_the_true_extrinsic_of_near_boards_is_consistent():
    check = check_calibration(_window(NEAR), TRANSLATION)
    assert check.verdict != SUSPECT, describe(check)
    assert np.abs(check.theta[3:6]).max() <= 0.03


def test_far_boards_report_the_translation_not_observable():
    check = check_calibration(_window(FAR, (0.0, 1.0, 0.0), (0.1, 0.0, 0.1)), TRANSLATION)
    report = check_to_dict(check)
    for name in ('translation_x', 'translation_y', 'translation_z'):
        p = check.parameter(name)
        assert p.searched and not p.observable and p.value is None, p
        assert 'px' in p.note
        assert report['confidence'][name]['value'] is None
    assert report['translation_m'] == [0.0, 0.0, 0.0]
    # The rotation is still found: 10 cm at 40 m or more is under 0.15 degree.
    assert check.verdict == SUSPECT
    np.testing.assert_allclose(np.degrees(check.theta[:3]), (0.0, 1.0, 0.0), atol=0.3)


def test_boards_at_one_depth_cannot_tell_a_sideways_translation_from_a_rotation():
    window = _window((2.5,) * 6, (0.0, 0.0, 0.0), (0.05, 0.0, 0.0))
    check = check_calibration(window, TRANSLATION)
    for name in ('translation_x', 'translation_y'):
        assert not check.parameter(name).observable and check.parameter(name).value is None
    # Searched as a rotation, the shift is one; the message says what else it can be.
    check = check_calibration(window)
    assert check.verdict == SUSPECT
    assert 'translation error of the mount (not searched)' in describe(check)


def test_halves_that_disagree_leave_the_parameter_without_a_value():
    # The first half of the window was taken with the extrinsic turned 1 degree of yaw, the
    # second with it right: each half has its own sharp yaw peak, 1 degree apart.
    layouts = board_layouts(NEAR)
    first, second = half_windows(layouts)
    frames = (_window(NEAR, (0.0, 1.0, 0.0), layouts=first)
              + _window(NEAR, layouts=second))
    check = check_calibration(frames)
    yaw = check.parameter('rotation_y')
    assert not yaw.observable and yaw.value is None and 'halves' in yaw.note
    assert check_calibration(frames, CheckConfig(split_halves=False)).parameter(
        'rotation_y').observable


@pytest.mark.parametrize('depths, frames', [(NEAR, 1), (FAR, 1)])
def test_one_frame_is_not_enough_evidence_for_the_translation(depths, frames):
    check = check_calibration(_window(depths)[:frames], TRANSLATION)
    assert check.verdict == NOT_ENOUGH_EVIDENCE
    assert all(p.value is None for p in check.parameters)
