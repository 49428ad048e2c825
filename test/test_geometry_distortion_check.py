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

"""Distortion models and coefficients are checked in one place, geometry.camera."""

from __future__ import annotations

from lrda_ros.geometry import camera as camera_module
from lrda_ros.geometry import (
    camera_for_image, CameraModel, distort_normalized, InvalidCameraError,
    undistort_normalized, UnsupportedDistortionError)
from lrda_ros.geometry.camera import check_distortion
import numpy as np
import pytest

K = np.array([[500.0, 0.0, 320.0], [0.0, 500.0, 240.0], [0.0, 0.0, 1.0]])
XY = np.array([[0.1, -0.2], [0.3, 0.25]])


def _camera(model: str, D) -> CameraModel:
    return CameraModel(K, 640, 480, model, np.asarray(D, dtype=np.float64))


def _distort(model: str, D) -> np.ndarray:
    return distort_normalized(XY, model, np.asarray(D, dtype=np.float64))


def test_every_distortion_user_goes_through_the_one_check(monkeypatch):
    calls = []

    def recording(model, D, calibration=True):
        calls.append((model, calibration))
        return check_distortion(model, D, calibration)

    monkeypatch.setattr(camera_module, 'check_distortion', recording)
    D = [-0.2, 0.05, 0.001, -0.001, 0.0]
    camera = _camera('plumb_bob', D)
    camera_for_image(640, 480, K.ravel(), D + [0.0] * 3, 'rational_polynomial', None, False)
    distorted = _distort('equidistant', [0.1, 0.01, 0.0, 0.0])
    undistort_normalized(distorted, 'equidistant', np.array([0.1, 0.01, 0.0, 0.0]))
    camera.scaled(320, 240)
    assert calls == [('plumb_bob', True), ('rational_polynomial', True),
                     ('equidistant', False), ('equidistant', False), ('plumb_bob', True)]


@pytest.mark.parametrize('model, D, message', [
    ('kannala_brandt', [0.1, 0.0, 0.0, 0.0],
     "^distortion_model 'kannala_brandt' is not supported; supported: "),
    ('none', [0.1], r"^distortion_model 'none' means no distortion, but D = \[0.1\]"),
    ('plumb_bob', [0.1, np.nan, 0.0, 0.0, 0.0], '^D must be a 1-D array of finite numbers'),
    ('equidistant', [0.1] * 6, "^D has 6 coefficients, but distortion_model 'equidistant' "
                               'takes'),
])
def test_camera_and_point_distortion_reject_alike_naming_the_field(model, D, message):
    with pytest.raises(UnsupportedDistortionError, match=message):
        _distort(model, D)
    with pytest.raises(InvalidCameraError, match=message) as raised:
        _camera(model, D)
    assert isinstance(raised.value, UnsupportedDistortionError)


def test_a_calibration_needs_a_full_length_while_points_take_a_leading_part():
    short = [-0.2, 0.05, 0.001]
    with pytest.raises(InvalidCameraError,
                       match=r"^D has 3 coefficients, but distortion_model 'plumb_bob' takes "
                             r'4 or 5 \(or none\)'):
        _camera('plumb_bob', short)
    np.testing.assert_array_equal(_distort('plumb_bob', short),
                                  _distort('plumb_bob', short + [0.0, 0.0]))
    padded = check_distortion('plumb_bob', np.array(short), calibration=False)
    np.testing.assert_array_equal(padded, short + [0.0, 0.0])
    assert check_distortion('rational_polynomial', np.zeros(8)) is None
    assert check_distortion('', np.zeros(0)) is None
