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

"""Camera intrinsics and lens distortion models (plumb_bob, rational_polynomial, equidistant)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .checks import (
    as_points, InvalidCameraError, InvalidConfigError, readonly_copy, UnsupportedDistortionError)

_PLUMB_BOB = 'plumb_bob'
_RATIONAL = 'rational_polynomial'
_EQUIDISTANT = 'equidistant'
_NO_DISTORTION_NAMES = ('', 'none')
# Number of coefficients each supported model takes; fewer are padded with zeros.
_MODEL_NUM_COEFFS = {_PLUMB_BOB: 5, _RATIONAL: 8, _EQUIDISTANT: 4}
SUPPORTED_DISTORTION_MODELS = tuple(_MODEL_NUM_COEFFS) + _NO_DISTORTION_NAMES
# Lengths of D a calibration may carry per model (ROS CameraInfo / OpenCV): none (0), or the
# model's own; plumb_bob also as OpenCV's 4 (k1, k2, p1, p2).
_CALIBRATION_LENGTHS = {_PLUMB_BOB: (0, 4, 5), _RATIONAL: (0, 8), _EQUIDISTANT: (0, 4)}


@dataclass(frozen=True, eq=False)
class CameraModel:
    """
    The camera of one image: pinhole intrinsics and the lens distortion of its pixels.

    ``K`` is the 3x3 intrinsic matrix (``[[fx, s, cx], [0, fy, cy], [0, 0, 1]]``; a
    non-zero skew ``s`` is honoured). ``D`` holds the distortion coefficients in ROS
    ``CameraInfo`` order; empty or all-zero means no distortion. Projections through this
    camera always apply its distortion: a rectified image has a camera without one (see
    :func:`camera_for_image`). ``distortion_model`` must be one of
    ``SUPPORTED_DISTORTION_MODELS`` and ``D`` of a length that model defines (plumb_bob 4 or
    5, rational_polynomial 8, equidistant 4, or empty; see :func:`check_distortion`). Arrays
    are stored as read-only float64 copies. Equality is identity (arrays make ``==``
    ambiguous).
    """

    K: np.ndarray
    width: int
    height: int
    distortion_model: str = _PLUMB_BOB
    D: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self) -> None:
        try:
            intrinsics = np.asarray(self.K, dtype=np.float64)
            coefficients = np.asarray(self.D, dtype=np.float64)
        except (TypeError, ValueError) as error:
            raise InvalidCameraError(f'K and D must be numeric arrays: {error}') from error
        if intrinsics.shape != (3, 3):
            raise InvalidCameraError(f'K must be a 3x3 matrix, got shape {intrinsics.shape}')
        if not np.all(np.isfinite(intrinsics)):
            raise InvalidCameraError(f'K must be finite, got {intrinsics.tolist()}')
        if not (intrinsics[0, 0] > 0 and intrinsics[1, 1] > 0):
            raise InvalidCameraError(
                'fx and fy must be positive (an all-zero K means an uncalibrated camera), '
                f'got fx={intrinsics[0, 0]}, fy={intrinsics[1, 1]}')
        if not np.allclose([intrinsics[1, 0], *intrinsics[2]], [0.0, 0.0, 0.0, 1.0],
                           rtol=0.0, atol=1e-9):
            raise InvalidCameraError(
                'K must have the form [[fx, s, cx], [0, fy, cy], [0, 0, 1]], '
                f'got {intrinsics.tolist()}')
        check_distortion(self.distortion_model, coefficients)
        for name in ('width', 'height'):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
                raise InvalidCameraError(f'{name} must be a positive integer, got {value!r}')
            object.__setattr__(self, name, int(value))
        object.__setattr__(self, 'K', readonly_copy(intrinsics))
        object.__setattr__(self, 'D', readonly_copy(coefficients))

    @property
    def fx(self) -> float:
        return float(self.K[0, 0])

    @property
    def fy(self) -> float:
        return float(self.K[1, 1])

    @property
    def cx(self) -> float:
        return float(self.K[0, 2])

    @property
    def cy(self) -> float:
        return float(self.K[1, 2])

    @property
    def has_distortion(self) -> bool:
        return bool(np.any(self.D != 0.0))

    def scaled(self, new_width: int, new_height: int) -> CameraModel:
        """
        Return the intrinsics of this camera's image resized to ``new_width x new_height``.

        With pixel centres at integer coordinates a resize by ``s`` maps ``u`` to
        ``(u + 0.5) * s - 0.5`` (as ``cv2.resize`` and ``align_corners=False`` do),
        so ``cx' = (cx + 0.5) * s - 0.5`` and ``fx' = fx * s``. Distortion acts on
        normalized coordinates and is unchanged.
        """
        for name, value in (('new_width', new_width), ('new_height', new_height)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
                raise InvalidCameraError(f'{name} must be a positive integer, got {value!r}')
        scale_x = new_width / self.width
        scale_y = new_height / self.height
        intrinsics = self.K.copy()
        intrinsics[0, :2] *= scale_x
        intrinsics[1, 1] *= scale_y
        intrinsics[0, 2] = (self.cx + 0.5) * scale_x - 0.5
        intrinsics[1, 2] = (self.cy + 0.5) * scale_y - 0.5
        return CameraModel(intrinsics, int(new_width), int(new_height),
                           self.distortion_model, self.D)

    def without_distortion(self) -> CameraModel:
        """Return the pinhole camera with the same ``K`` (for already rectified pixels)."""
        return CameraModel(self.K, self.width, self.height)


def check_distortion(distortion_model: object, D: np.ndarray,
                     calibration: bool = True) -> np.ndarray | None:
    """
    Check a distortion model and its coefficients: the package's one check of lens distortion.

    :class:`CameraModel` (so :func:`camera_for_image` and the ROS ``CameraInfo`` conversion),
    :func:`distort_normalized` and :func:`undistort_normalized` all call it. With
    ``calibration``, ``D`` must have a length a calibration carries (ROS ``CameraInfo`` /
    OpenCV: none, or the model's own, plumb_bob also OpenCV's 4); without, any leading part
    of the model's coefficients (the rest are zero). Returns the coefficients zero-padded to
    the model's length, or None when there is no distortion. Raises
    ``UnsupportedDistortionError`` (an ``InvalidCameraError``) whose message starts with the
    field at fault: ``distortion_model`` or ``D``.
    """
    if not isinstance(distortion_model, str):
        raise UnsupportedDistortionError(
            f'distortion_model must be a string, got {distortion_model!r}')
    try:
        coefficients = np.asarray(D, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise UnsupportedDistortionError(f'D must be numeric: {error}') from error
    if coefficients.ndim != 1 or not np.all(np.isfinite(coefficients)):
        raise UnsupportedDistortionError(
            f'D must be a 1-D array of finite numbers, got {coefficients.tolist()}')
    if distortion_model in _NO_DISTORTION_NAMES:
        if np.any(coefficients != 0.0):
            raise UnsupportedDistortionError(
                f'distortion_model {distortion_model!r} means no distortion, but D = '
                f'{coefficients.tolist()}')
        return None
    if distortion_model not in _MODEL_NUM_COEFFS:
        raise UnsupportedDistortionError(
            f'distortion_model {distortion_model!r} is not supported; supported: '
            f'{list(SUPPORTED_DISTORTION_MODELS)}')
    length = _MODEL_NUM_COEFFS[distortion_model]
    if calibration and coefficients.size not in _CALIBRATION_LENGTHS[distortion_model]:
        lengths = ' or '.join(str(n) for n in _CALIBRATION_LENGTHS[distortion_model] if n)
        raise UnsupportedDistortionError(
            f'D has {coefficients.size} coefficients, but distortion_model '
            f'{distortion_model!r} takes {lengths} (or none)')
    if coefficients.size > length:
        raise UnsupportedDistortionError(
            f'D has {coefficients.size} coefficients, but distortion_model '
            f'{distortion_model!r} takes at most {length}')
    if not np.any(coefficients != 0.0):
        return None
    return np.pad(coefficients, (0, length - coefficients.size))


def camera_for_image(width: int, height: int, K: np.ndarray, D: np.ndarray,
                     distortion_model: str, P: np.ndarray | None,
                     image_is_rectified: bool) -> CameraModel:
    """
    Return the camera of an image from its calibration (the fields of a ROS ``CameraInfo``).

    The one rule of the package for which intrinsics and distortion pixels have: a raw
    (unrectified) image is projected with ``K`` and the distortion ``D`` of
    ``distortion_model``; a rectified image (``image_rect``) with ``P[:, :3]`` and no
    distortion (the rectifying rotation ``R`` is not applied: it is the identity for
    monocular cameras). The node, ``lrda eval --bag`` and :mod:`lrda_ros.messages.conversions`
    all go through here. Raises ``InvalidCameraError`` whose message starts with the field
    at fault (``K``, ``P``, ``D``, ``distortion_model``, ``width``, ``height``).
    """
    if image_is_rectified:
        if P is None:
            raise InvalidCameraError('P: a rectified image needs the projection matrix P')
        intrinsics, field_name = np.asarray(P, dtype=np.float64), 'P'
        try:
            intrinsics = intrinsics.reshape(3, 4)[:, :3]
        except ValueError:
            raise InvalidCameraError(
                f'P must hold 12 values (3x4), got {intrinsics.size}') from None
        coefficients, model = np.zeros(0), _PLUMB_BOB
    else:
        intrinsics, field_name = np.asarray(K, dtype=np.float64), 'K'
        if intrinsics.size != 9:
            raise InvalidCameraError(f'K must hold 9 values (3x3), got {intrinsics.size}')
        intrinsics = intrinsics.reshape(3, 3)
        coefficients, model = np.asarray(D, dtype=np.float64).reshape(-1), distortion_model
    if not np.any(intrinsics):
        raise InvalidCameraError(f'{field_name} is all zero: the camera is uncalibrated')
    try:
        return CameraModel(intrinsics, width, height, model, coefficients)
    except InvalidCameraError as error:
        if image_is_rectified:  # the checks speak of K; here K is P's left 3x3
            raise InvalidCameraError(f'P: {error} (K = P[:, :3] of a rectified image)') from None
        raise


def _radial_tangential_terms(xy: np.ndarray, coefficients: np.ndarray
                             ) -> tuple[np.ndarray, np.ndarray]:
    """Return the radial factor (N,) and tangential offset (N, 2) of OpenCV's model."""
    k1, k2, p1, p2, k3 = coefficients[:5]
    k4, k5, k6 = coefficients[5:8] if coefficients.size == 8 else (0.0, 0.0, 0.0)
    x, y = xy[:, 0], xy[:, 1]
    r2 = x * x + y * y
    r4 = r2 * r2
    r6 = r4 * r2
    radial = (1 + k1 * r2 + k2 * r4 + k3 * r6) / (1 + k4 * r2 + k5 * r4 + k6 * r6)
    tangential = np.stack([2 * p1 * x * y + p2 * (r2 + 2 * x * x),
                           p1 * (r2 + 2 * y * y) + 2 * p2 * x * y], axis=1)
    return radial, tangential


def _fisheye_theta_scale(theta: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
    """Return ``theta_d / theta`` of OpenCV's fisheye model, ``1 + k1 t^2 + ... k4 t^8``."""
    theta2 = theta * theta
    k1, k2, k3, k4 = coefficients
    return 1 + theta2 * (k1 + theta2 * (k2 + theta2 * (k3 + theta2 * k4)))


def _fisheye_theta_slope(theta: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
    """Return ``d theta_d / d theta`` (OpenCV fisheye), ``1 + 3 k1 t^2 + ... 9 k4 t^8``."""
    theta2 = theta * theta
    k1, k2, k3, k4 = coefficients
    return 1 + theta2 * (3 * k1 + theta2 * (5 * k2 + theta2 * (7 * k3 + theta2 * 9 * k4)))


def distort_normalized(xy: np.ndarray, model: str, D: np.ndarray) -> np.ndarray:
    """
    Apply lens distortion to normalized image coordinates ``(x/z, y/z)``.

    Models (OpenCV formulas, ROS ``CameraInfo`` coefficient order):
    ``plumb_bob`` (k1, k2, p1, p2, k3), ``rational_polynomial`` (k1, k2, p1, p2, k3, k4,
    k5, k6) and ``equidistant`` (fisheye k1..k4). Fewer coefficients are zero-padded;
    ``''`` / ``'none'`` or all-zero coefficients leave the points unchanged.
    """
    points = as_points(xy, 'normalized coordinates', columns=2)
    coefficients = check_distortion(model, np.ravel(D), calibration=False)
    if coefficients is None:
        return points.copy()
    if model == _EQUIDISTANT:
        radius = np.hypot(points[:, 0], points[:, 1])
        theta = np.arctan(radius)
        theta_d = theta * _fisheye_theta_scale(theta, coefficients)
        # theta_d / r tends to 1 at the optical axis.
        scale = np.divide(theta_d, radius, out=np.ones_like(radius), where=radius > 1e-12)
        return points * scale[:, None]
    radial, tangential = _radial_tangential_terms(points, coefficients)
    return points * radial[:, None] + tangential


# Points of the ray from the optical axis at which :func:`before_fold` checks the Jacobian:
# enough to see a real lens' fold; a fold that opens and closes again within 1/16 of the ray
# would go unseen.
_FOLD_SAMPLES = 16


def before_fold(xy: np.ndarray, model: str, D: np.ndarray) -> np.ndarray:
    """
    Return a mask of the normalized coordinates ``(x/z, y/z)`` that lie before the lens' fold.

    A strong distortion stops pushing points outwards at its fold (plumb_bob with k1 = -0.3
    at ``r^2 = 1 / (3 * 0.3)``): past it the image shrinks back towards the centre, and a
    direction there lands on a pixel that a direction before the fold already holds. A point is
    before the fold when the distortion map is locally invertible (its Jacobian determinant is
    positive) all along the ray from the optical axis to it: the point is on the branch of the
    image centre. The test samples the ray at ``_FOLD_SAMPLES`` points, the point itself
    included. Without distortion every point is before the fold.
    """
    points = as_points(xy, 'normalized coordinates', columns=2)
    coefficients = check_distortion(model, np.ravel(D), calibration=False)
    keep = np.ones(points.shape[0], dtype=bool)
    if coefficients is None:
        return keep
    unfolded = _fisheye_unfolded if model == _EQUIDISTANT else _radial_tangential_unfolded
    # Far points overflow; inf and NaN determinants fail the test, which is right for them.
    with np.errstate(over='ignore', invalid='ignore', divide='ignore'):
        for step in range(1, _FOLD_SAMPLES + 1):
            keep &= unfolded(points * (step / _FOLD_SAMPLES), coefficients)
    return keep


def _radial_tangential_unfolded(xy: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
    """
    Return where OpenCV's radial-tangential map is locally invertible and on the centre's side.

    On the centre's branch the radial factor's numerator and denominator stay positive too: a
    negative radial factor flips the point through the centre, and where a rational model's
    denominator crosses zero the map jumps to infinity and comes back on another branch.
    """
    determinant, numerator, denominator = _radial_tangential_jacobian(xy, coefficients)
    return (numerator > 0) & (denominator > 0) & (determinant > 0)


def _radial_tangential_jacobian(xy: np.ndarray, coefficients: np.ndarray
                                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    Return the Jacobian determinant of OpenCV's radial-tangential map and its radial factor.

    With ``s = r^2``, radial factor ``R(s)`` and the tangential offset's (symmetric) Jacobian
    ``B``, the map's Jacobian is ``R I + 2 R'(s) x x^T + B``; its determinant expands to
    ``R (R + 2 s R') + l (8 R + 4 s R') + det B`` with ``l = p1 y + p2 x``. Returns that
    determinant and ``R``'s numerator ``1 + k1 s + k2 s^2 + k3 s^3`` and denominator
    ``1 + k4 s + k5 s^2 + k6 s^3`` (1 for plumb_bob), each (N,).
    """
    k1, k2, p1, p2, k3 = coefficients[:5]
    k4, k5, k6 = coefficients[5:8] if coefficients.size == 8 else (0.0, 0.0, 0.0)
    x, y = xy[:, 0], xy[:, 1]
    s = x * x + y * y
    numerator = 1 + s * (k1 + s * (k2 + s * k3))
    denominator = 1 + s * (k4 + s * (k5 + s * k6))
    radial = numerator / denominator
    radial_slope = ((k1 + s * (2 * k2 + s * 3 * k3)) * denominator
                    - numerator * (k4 + s * (2 * k5 + s * 3 * k6))) / denominator ** 2
    linear = p1 * y + p2 * x
    det_tangential = 4 * (3 * (p1 * y) ** 2 + 3 * (p2 * x) ** 2 - (p1 * x) ** 2
                          - (p2 * y) ** 2 + 8 * p1 * p2 * x * y)
    determinant = (radial * (radial + 2 * s * radial_slope)
                   + linear * (8 * radial + 4 * s * radial_slope) + det_tangential)
    return determinant, numerator, denominator


def _fisheye_unfolded(xy: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
    """
    Return where OpenCV's fisheye map is locally invertible and on the centre's side.

    The map scales ``x`` by ``theta_d / r`` (``theta = atan(r)``); its Jacobian determinant is
    ``theta_d / r`` times ``d theta_d / d r = theta_d'(theta) / (1 + r^2)``. On the centre's
    branch both factors are positive (at the axis ``theta_d / r`` tends to 1); a negative
    ``theta_d`` would flip the point through the centre.
    """
    theta = np.arctan(np.hypot(xy[:, 0], xy[:, 1]))
    theta_d = theta * _fisheye_theta_scale(theta, coefficients)
    on_axis = theta == 0.0
    return on_axis | ((theta_d > 0) & (_fisheye_theta_slope(theta, coefficients) > 0))


def undistort_normalized(xy_distorted: np.ndarray, model: str, D: np.ndarray,
                         iterations: int = 20) -> np.ndarray:
    """
    Invert ``distort_normalized`` iteratively, as OpenCV's ``undistortPoints`` does.

    Fixed-point iteration for ``plumb_bob`` / ``rational_polynomial`` and Newton steps on
    the angle for ``equidistant``. Converges to ~1e-9 for moderate distortion; points
    beyond the fold-back radius of a strong distortion have no unique inverse.
    """
    distorted = as_points(xy_distorted, 'normalized coordinates', columns=2)
    if iterations < 1:
        raise InvalidConfigError(f'iterations must be >= 1, got {iterations}')
    coefficients = check_distortion(model, np.ravel(D), calibration=False)
    if coefficients is None:
        return distorted.copy()
    if model == _EQUIDISTANT:
        return _undistort_fisheye(distorted, coefficients, iterations)
    undistorted = distorted.copy()
    for _ in range(iterations):
        radial, tangential = _radial_tangential_terms(undistorted, coefficients)
        undistorted = (distorted - tangential) / radial[:, None]
    return undistorted


def _undistort_fisheye(distorted: np.ndarray, coefficients: np.ndarray,
                       iterations: int) -> np.ndarray:
    """Invert the fisheye model by Newton's method on ``theta(1 + k1 t^2 + ...) = theta_d``."""
    theta_d = np.hypot(distorted[:, 0], distorted[:, 1])
    theta = theta_d.copy()
    for _ in range(iterations):
        residual = theta * _fisheye_theta_scale(theta, coefficients) - theta_d
        slope = _fisheye_theta_slope(theta, coefficients)
        theta = theta - np.divide(residual, slope, out=np.zeros_like(theta), where=slope != 0)
    scale = np.divide(np.tan(theta), theta_d, out=np.ones_like(theta_d),
                      where=theta_d > 1e-12)
    return distorted * scale[:, None]


def project_points(points_cam: np.ndarray,
                   camera: CameraModel) -> tuple[np.ndarray, np.ndarray]:
    """
    Project camera-frame points to pixel coordinates of ``camera``'s image.

    Returns ``(uv, depth)``: ``uv`` float64 ``(N, 2)`` as (column, row) and ``depth``
    float64 ``(N,)`` equal to z. Points with ``z <= 0`` get NaN ``uv``; callers should
    drop them. The camera's distortion is applied (none for a rectified image's camera;
    ``camera.without_distortion()`` gives the pinhole projection).
    """
    points = as_points(points_cam, 'points_cam')
    depth = points[:, 2].copy()
    in_front = depth > 0
    safe_depth = np.where(in_front, depth, 1.0)
    normalized = distort_normalized(points[:, :2] / safe_depth[:, None],
                                    camera.distortion_model, camera.D)
    uv = np.empty_like(normalized)
    uv[:, 0] = camera.fx * normalized[:, 0] + camera.K[0, 1] * normalized[:, 1] + camera.cx
    uv[:, 1] = camera.fy * normalized[:, 1] + camera.cy
    uv[~in_front] = np.nan
    return uv, depth


def pixels_to_normalized(cols: np.ndarray, rows: np.ndarray, camera: CameraModel) -> np.ndarray:
    """Return the undistorted normalized coordinates ``(x/z, y/z)`` ``(N, 2)`` of pixels."""
    y_distorted = (np.asarray(rows, dtype=np.float64) - camera.cy) / camera.fy
    x_distorted = (np.asarray(cols, dtype=np.float64) - camera.cx
                   - camera.K[0, 1] * y_distorted) / camera.fx
    return undistort_normalized(np.stack([x_distorted, y_distorted], axis=1),
                                camera.distortion_model, camera.D)
