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
Camera and LiDAR geometry in pure numpy: intrinsics, rigid transforms, projection.

Conventions used throughout the package:

* Camera optical frame: x right, y down, z forward (REP 103 ``_optical`` frames).
* Pixel ``(u, v)`` is ``(column, row)`` with pixel centres at integer coordinates
  (OpenCV / ROS ``image_geometry``). A point projecting to ``u`` lands in column
  ``floor(u + 0.5)``, so 10.4 goes to column 10 and 10.6 to column 11 (10.5 to 11).
* Depth maps are float32 ``(H, W)`` arrays of z-depth in metres (REP 118). A sparse
  depth map uses 0.0 for pixels without a measurement.
* ``T_a_b`` maps points expressed in frame ``b`` into frame ``a``: ``p_a = R p_b + t``.
  A tf2 ``TransformStamped`` with ``header.frame_id = A`` and ``child_frame_id = B``
  is ``T_A_B``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# Points closer than this to the image plane (metres of z) count as behind the camera.
MIN_DEPTH_M = 1e-6

_PLUMB_BOB = 'plumb_bob'
_RATIONAL = 'rational_polynomial'
_EQUIDISTANT = 'equidistant'
_NO_DISTORTION_NAMES = ('', 'none')
# Number of coefficients each supported model takes; fewer are padded with zeros.
_MODEL_NUM_COEFFS = {_PLUMB_BOB: 5, _RATIONAL: 8, _EQUIDISTANT: 4}
SUPPORTED_DISTORTION_MODELS = tuple(_MODEL_NUM_COEFFS) + _NO_DISTORTION_NAMES


class InvalidCameraError(ValueError):
    """Camera intrinsics or image size are unusable."""


class UnsupportedDistortionError(ValueError):
    """Distortion model is unknown, or its coefficients do not fit the model."""


class InvalidTransformError(ValueError):
    """A rigid transform is malformed (not a rotation, wrong shape, non-finite)."""


class InvalidConfigError(ValueError):
    """A projection setting is out of its accepted range."""


class InvalidPointsError(ValueError):
    """A point array or depth map has the wrong shape or type."""


def _as_points(points: np.ndarray, name: str = 'points') -> np.ndarray:
    """Return ``points`` as a float64 ``(N, 3)`` array or raise ``InvalidPointsError``."""
    array = np.asarray(points, dtype=np.float64)
    if array.ndim != 2 or array.shape[1] != 3:
        raise InvalidPointsError(
            f'{name} must have shape (N, 3), got {np.shape(points)}')
    return array


def _as_xy(xy: np.ndarray) -> np.ndarray:
    """Return normalized image coordinates as float64 ``(N, 2)`` or raise."""
    array = np.asarray(xy, dtype=np.float64)
    if array.ndim != 2 or array.shape[1] != 2:
        raise InvalidPointsError(
            f'normalized coordinates must have shape (N, 2), got {np.shape(xy)}')
    return array


def _readonly(array: np.ndarray) -> np.ndarray:
    """Return a private read-only copy so frozen dataclasses stay immutable."""
    copy = np.array(array, dtype=np.float64, copy=True)
    copy.setflags(write=False)
    return copy


@dataclass(frozen=True, eq=False)
class CameraModel:
    """
    Pinhole camera intrinsics with an optional lens distortion model.

    ``K`` is the 3x3 intrinsic matrix (``[[fx, s, cx], [0, fy, cy], [0, 0, 1]]``; a
    non-zero skew ``s`` is honoured). ``D`` holds the distortion coefficients in ROS
    ``CameraInfo`` order; empty or all-zero means no distortion. Arrays are stored as
    read-only float64 copies. Equality is identity (arrays make ``==`` ambiguous).
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
        if coefficients.ndim != 1 or not np.all(np.isfinite(coefficients)):
            raise InvalidCameraError(
                f'D must be a 1-D array of finite numbers, got {coefficients.tolist()}')
        for name in ('width', 'height'):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
                raise InvalidCameraError(f'{name} must be a positive integer, got {value!r}')
            object.__setattr__(self, name, int(value))
        if not isinstance(self.distortion_model, str):
            raise InvalidCameraError(
                f'distortion_model must be a string, got {self.distortion_model!r}')
        object.__setattr__(self, 'K', _readonly(intrinsics))
        object.__setattr__(self, 'D', _readonly(coefficients))

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


def _quaternion_to_rotation(quaternion_xyzw: np.ndarray) -> np.ndarray:
    """Return the rotation matrix of a unit quaternion ``(x, y, z, w)``."""
    x, y, z, w = quaternion_xyzw
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


@dataclass(frozen=True, eq=False)
class RigidTransform:
    """
    Rigid transform ``T_a_b``: ``p_a = rotation @ p_b + translation``.

    ``rotation`` must be orthonormal with determinant +1 (within 1e-5, so calibration
    files printed with 6-7 significant digits are accepted as they are).
    """

    rotation: np.ndarray
    translation: np.ndarray

    def __post_init__(self) -> None:
        rotation = np.asarray(self.rotation, dtype=np.float64)
        translation = np.asarray(self.translation, dtype=np.float64)
        if rotation.shape != (3, 3) or translation.shape != (3,):
            raise InvalidTransformError(
                'rotation must be 3x3 and translation must have shape (3,), got '
                f'{rotation.shape} and {translation.shape}')
        _check_rotation(rotation, atol=1e-5)
        if not np.all(np.isfinite(translation)):
            raise InvalidTransformError(f'translation must be finite, got {translation}')
        object.__setattr__(self, 'rotation', _readonly(rotation))
        object.__setattr__(self, 'translation', _readonly(translation))

    @classmethod
    def identity(cls) -> RigidTransform:
        return cls(np.eye(3), np.zeros(3))

    @classmethod
    def from_translation_quaternion(cls, translation_xyz: np.ndarray,
                                    quaternion_xyzw: np.ndarray) -> RigidTransform:
        """
        Build a transform from a translation and an ``(x, y, z, w)`` quaternion.

        The quaternion is normalized first (ROS messages are often slightly off unit);
        a zero or non-finite quaternion is rejected.
        """
        quaternion = np.asarray(quaternion_xyzw, dtype=np.float64)
        if quaternion.shape != (4,) or not np.all(np.isfinite(quaternion)):
            raise InvalidTransformError(
                f'quaternion must be 4 finite numbers (x, y, z, w), got {quaternion_xyzw}')
        norm = np.linalg.norm(quaternion)
        if norm < 1e-9:
            raise InvalidTransformError(
                'quaternion has zero length; the identity rotation is (0, 0, 0, 1)')
        return cls(_quaternion_to_rotation(quaternion / norm), translation_xyz)

    @classmethod
    def from_matrix(cls, matrix: np.ndarray, atol: float = 1e-5) -> RigidTransform:
        """Build a transform from a 4x4 homogeneous matrix, checking that it is rigid."""
        homogeneous = np.asarray(matrix, dtype=np.float64)
        if homogeneous.shape != (4, 4):
            raise InvalidTransformError(
                f'matrix must be 4x4 homogeneous, got shape {homogeneous.shape}')
        if not np.allclose(homogeneous[3], [0.0, 0.0, 0.0, 1.0], rtol=0.0, atol=atol):
            raise InvalidTransformError(
                f'last row of a rigid transform must be [0, 0, 0, 1], got {homogeneous[3]}')
        _check_rotation(homogeneous[:3, :3], atol=atol)
        return cls(homogeneous[:3, :3], homogeneous[:3, 3])

    def as_matrix(self) -> np.ndarray:
        matrix = np.eye(4)
        matrix[:3, :3] = self.rotation
        matrix[:3, 3] = self.translation
        return matrix

    def quaternion_xyzw(self) -> np.ndarray:
        """Return the rotation as a unit quaternion (x, y, z, w) with w >= 0."""
        m = self.rotation
        # Shepperd's method: build from the largest of the four squared components.
        squares = np.array([1 + m[0, 0] - m[1, 1] - m[2, 2], 1 - m[0, 0] + m[1, 1] - m[2, 2],
                            1 - m[0, 0] - m[1, 1] + m[2, 2], 1 + np.trace(m)])
        k = int(np.argmax(squares))
        scale = 0.5 / np.sqrt(squares[k])
        off = {0: (m[1, 0] + m[0, 1], m[0, 2] + m[2, 0], m[2, 1] - m[1, 2]),
               1: (m[1, 0] + m[0, 1], m[2, 1] + m[1, 2], m[0, 2] - m[2, 0]),
               2: (m[0, 2] + m[2, 0], m[2, 1] + m[1, 2], m[1, 0] - m[0, 1]),
               3: (m[2, 1] - m[1, 2], m[0, 2] - m[2, 0], m[1, 0] - m[0, 1])}[k]
        others = [i for i in range(4) if i != k]
        quaternion = np.empty(4)
        quaternion[k] = 0.5 * np.sqrt(squares[k])
        quaternion[others] = np.asarray(off) * scale
        quaternion /= np.linalg.norm(quaternion)
        return quaternion if quaternion[3] >= 0 else -quaternion

    def inverse(self) -> RigidTransform:
        rotation_t = self.rotation.T
        return RigidTransform(rotation_t, -rotation_t @ self.translation)

    def apply(self, points: np.ndarray) -> np.ndarray:
        """Map ``(N, 3)`` points from the source frame into the target frame (float64)."""
        source = _as_points(points)
        # Written out rather than ``source @ R.T``: a multi-threaded BLAS call for a 3x3
        # product can stall for tens of milliseconds on a busy CPU.
        return (source[:, 0:1] * self.rotation[:, 0] + source[:, 1:2] * self.rotation[:, 1]
                + source[:, 2:3] * self.rotation[:, 2] + self.translation)

    def __matmul__(self, other: RigidTransform) -> RigidTransform:
        """Compose transforms: ``T_a_b @ T_b_c == T_a_c``."""
        if not isinstance(other, RigidTransform):
            return NotImplemented
        return RigidTransform(self.rotation @ other.rotation,
                              self.rotation @ other.translation + self.translation)


def _check_rotation(rotation: np.ndarray, atol: float) -> None:
    """Raise ``InvalidTransformError`` unless ``rotation`` is a proper rotation."""
    if not np.all(np.isfinite(rotation)):
        raise InvalidTransformError(f'rotation must be finite, got {rotation.tolist()}')
    error = np.max(np.abs(rotation.T @ rotation - np.eye(3)))
    if error > atol:
        raise InvalidTransformError(
            f'rotation is not orthonormal (max |R^T R - I| = {error:.3g} > {atol:g})')
    if np.linalg.det(rotation) <= 0:
        raise InvalidTransformError('rotation has determinant -1 (a reflection), expected +1')


def _distortion_coefficients(model: str, coefficients: np.ndarray) -> np.ndarray | None:
    """
    Return ``coefficients`` zero-padded to the model's length, or None for no distortion.

    Raise ``UnsupportedDistortionError`` for an unknown model name or too many
    coefficients.
    """
    values = np.asarray(coefficients, dtype=np.float64).reshape(-1)
    if model in _NO_DISTORTION_NAMES:
        if np.any(values != 0.0):
            raise UnsupportedDistortionError(
                f'distortion model {model!r} means no distortion, but D = {values.tolist()}')
        return None
    if model not in _MODEL_NUM_COEFFS:
        raise UnsupportedDistortionError(
            f'unsupported distortion model {model!r}; supported: '
            f'{list(SUPPORTED_DISTORTION_MODELS)}')
    expected = _MODEL_NUM_COEFFS[model]
    if values.size > expected:
        raise UnsupportedDistortionError(
            f'{model} takes at most {expected} coefficients, got {values.size}')
    if not np.any(values != 0.0):
        return None
    return np.pad(values, (0, expected - values.size))


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


def distort_normalized(xy: np.ndarray, model: str, D: np.ndarray) -> np.ndarray:
    """
    Apply lens distortion to normalized image coordinates ``(x/z, y/z)``.

    Models (OpenCV formulas, ROS ``CameraInfo`` coefficient order):
    ``plumb_bob`` (k1, k2, p1, p2, k3), ``rational_polynomial`` (k1, k2, p1, p2, k3, k4,
    k5, k6) and ``equidistant`` (fisheye k1..k4). Fewer coefficients are zero-padded;
    ``''`` / ``'none'`` or all-zero coefficients leave the points unchanged.
    """
    points = _as_xy(xy)
    coefficients = _distortion_coefficients(model, D)
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


def undistort_normalized(xy_distorted: np.ndarray, model: str, D: np.ndarray,
                         iterations: int = 20) -> np.ndarray:
    """
    Invert ``distort_normalized`` iteratively, as OpenCV's ``undistortPoints`` does.

    Fixed-point iteration for ``plumb_bob`` / ``rational_polynomial`` and Newton steps on
    the angle for ``equidistant``. Converges to ~1e-9 for moderate distortion; points
    beyond the fold-back radius of a strong distortion have no unique inverse.
    """
    distorted = _as_xy(xy_distorted)
    if iterations < 1:
        raise InvalidConfigError(f'iterations must be >= 1, got {iterations}')
    coefficients = _distortion_coefficients(model, D)
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
    k1, k2, k3, k4 = coefficients
    theta_d = np.hypot(distorted[:, 0], distorted[:, 1])
    theta = theta_d.copy()
    for _ in range(iterations):
        t2 = theta * theta
        residual = theta * _fisheye_theta_scale(theta, coefficients) - theta_d
        slope = 1 + t2 * (3 * k1 + t2 * (5 * k2 + t2 * (7 * k3 + t2 * 9 * k4)))
        theta = theta - np.divide(residual, slope, out=np.zeros_like(theta), where=slope != 0)
    scale = np.divide(np.tan(theta), theta_d, out=np.ones_like(theta_d),
                      where=theta_d > 1e-12)
    return distorted * scale[:, None]


def project_points(points_cam: np.ndarray, camera: CameraModel,
                   apply_distortion: bool) -> tuple[np.ndarray, np.ndarray]:
    """
    Project camera-frame points to pixel coordinates.

    Returns ``(uv, depth)``: ``uv`` float64 ``(N, 2)`` as (column, row) and ``depth``
    float64 ``(N,)`` equal to z. Points with ``z <= 0`` get NaN ``uv``; callers should
    drop them. With ``apply_distortion`` the camera's distortion model is applied
    (for unrectified images); otherwise the projection is pure pinhole.
    """
    points = _as_points(points_cam, 'points_cam')
    depth = points[:, 2].copy()
    in_front = depth > 0
    safe_depth = np.where(in_front, depth, 1.0)
    normalized = points[:, :2] / safe_depth[:, None]
    if apply_distortion:
        normalized = distort_normalized(normalized, camera.distortion_model, camera.D)
    uv = np.empty_like(normalized)
    uv[:, 0] = camera.fx * normalized[:, 0] + camera.K[0, 1] * normalized[:, 1] + camera.cx
    uv[:, 1] = camera.fy * normalized[:, 1] + camera.cy
    uv[~in_front] = np.nan
    return uv, depth


@dataclass(frozen=True)
class ProjectionConfig:
    """
    Settings for turning a LiDAR scan into a sparse depth map.

    ``min_range`` / ``max_range`` bound the Euclidean range from the LiDAR origin in
    metres (the quantity a LiDAR's specification states). ``apply_distortion`` projects
    through the camera's distortion model (set it for unrectified images).
    ``remove_occluded`` drops points that have a clearly nearer point within an
    ``occlusion_window`` x ``occlusion_window`` pixel neighbourhood: deeper by more than
    ``occlusion_margin`` (relative).
    """

    min_range: float = 0.5
    max_range: float = 120.0
    apply_distortion: bool = False
    remove_occluded: bool = False
    occlusion_window: int = 7
    occlusion_margin: float = 0.1

    def __post_init__(self) -> None:
        if not (np.isfinite(self.min_range) and self.min_range >= 0):
            raise InvalidConfigError(
                f'min_range must be a finite number >= 0 m, got {self.min_range}')
        if not (np.isfinite(self.max_range) and self.max_range > self.min_range):
            raise InvalidConfigError(
                f'max_range must be finite and > min_range ({self.min_range} m), '
                f'got {self.max_range}')
        window = self.occlusion_window
        if (isinstance(window, bool) or not isinstance(window, (int, np.integer))
                or window < 3 or window % 2 == 0):
            raise InvalidConfigError(
                f'occlusion_window must be an odd integer >= 3 (pixels), got {window!r}')
        if not (np.isfinite(self.occlusion_margin) and self.occlusion_margin >= 0):
            raise InvalidConfigError(
                f'occlusion_margin must be a finite number >= 0, got {self.occlusion_margin}')


@dataclass(frozen=True, eq=False)
class SparseProjection:
    """
    A sparse depth map and where each input point went.

    ``num_points_in`` equals the sum of ``num_projected`` and every ``num_dropped_*``
    count. ``num_dropped_same_pixel`` counts points that lost the z-buffer to a nearer
    point on the same pixel.
    """

    depth: np.ndarray
    num_points_in: int
    num_projected: int
    num_dropped_non_finite: int
    num_dropped_out_of_range: int
    num_dropped_behind_camera: int
    num_dropped_outside_image: int
    num_dropped_same_pixel: int
    num_dropped_occluded: int


def lidar_to_sparse_depth(points_lidar: np.ndarray, T_cam_lidar: RigidTransform,
                          camera: CameraModel, config: ProjectionConfig) -> SparseProjection:
    """
    Project a LiDAR scan into a sparse z-depth map (float32, 0.0 = no measurement).

    Drops non-finite points, points whose range from the LiDAR origin is outside
    ``[min_range, max_range]``, points with ``z <= MIN_DEPTH_M`` in the camera frame and
    points outside the image. When several points land on one pixel the nearest wins.
    With distortion, points that fold back into the image from outside the lens' valid
    field of view (where undistort(distort(p)) != p) count as outside the image.
    """
    points = _as_points(points_lidar, 'points_lidar')
    height, width = camera.height, camera.width
    num_in = points.shape[0]

    finite = np.all(np.isfinite(points), axis=1)
    points = points[finite]
    ranges = np.linalg.norm(points, axis=1)
    in_range = (ranges >= config.min_range) & (ranges <= config.max_range)
    points_cam = T_cam_lidar.apply(points[in_range])
    in_front = points_cam[:, 2] > MIN_DEPTH_M
    points_cam = points_cam[in_front]

    uv, depth = project_points(points_cam, camera, config.apply_distortion)
    # floor(u + 0.5) lies in [0, W) exactly when u + 0.5 does; test in float to avoid
    # overflowing an integer cast for points projecting far outside.
    shifted = uv + 0.5
    inside = ((shifted[:, 0] >= 0) & (shifted[:, 0] < width)
              & (shifted[:, 1] >= 0) & (shifted[:, 1] < height))
    if config.apply_distortion and camera.has_distortion:
        inside[inside] = _distortion_invertible(points_cam[inside], camera)
    cols = np.floor(shifted[inside, 0]).astype(np.intp)
    rows = np.floor(shifted[inside, 1]).astype(np.intp)
    depth = depth[inside]

    depth_map = _nearest_per_pixel(rows * width + cols, depth, height, width)
    num_first_hits = int(np.count_nonzero(depth_map))
    num_occluded = 0
    if config.remove_occluded:
        occluded = _occluded_mask(depth_map, config.occlusion_window, config.occlusion_margin)
        depth_map[occluded] = 0.0
        num_occluded = int(np.count_nonzero(occluded))

    return SparseProjection(
        depth=depth_map,
        num_points_in=num_in,
        num_projected=num_first_hits - num_occluded,
        num_dropped_non_finite=int(num_in - points.shape[0]),
        num_dropped_out_of_range=int(np.count_nonzero(~in_range)),
        num_dropped_behind_camera=int(np.count_nonzero(~in_front)),
        num_dropped_outside_image=int(np.count_nonzero(~inside)),
        num_dropped_same_pixel=int(depth.size - num_first_hits),
        num_dropped_occluded=num_occluded,
    )


def _distortion_invertible(points_cam: np.ndarray, camera: CameraModel) -> np.ndarray:
    """Return a mask of points whose distorted projection undistorts back to themselves."""
    normalized = points_cam[:, :2] / points_cam[:, 2:3]
    # Folded points may make the inverse iteration diverge; NaN then fails the test.
    with np.errstate(over='ignore', invalid='ignore', divide='ignore'):
        distorted = distort_normalized(normalized, camera.distortion_model, camera.D)
        recovered = undistort_normalized(distorted, camera.distortion_model, camera.D)
        error = np.max(np.abs(recovered - normalized), axis=1)
        return error <= 1e-4 * (1.0 + np.max(np.abs(normalized), axis=1))


def _nearest_per_pixel(pixel_index: np.ndarray, depth: np.ndarray,
                       height: int, width: int) -> np.ndarray:
    """Return an ``(H, W)`` float32 map holding the smallest depth that hit each pixel."""
    depth_map = np.zeros(height * width, dtype=np.float32)
    # Sort by pixel, then depth: the first entry of each pixel run is the nearest.
    # (Fancy assignment with repeated indices has no guaranteed winner.)
    order = np.lexsort((depth, pixel_index))
    sorted_pixels = pixel_index[order]
    unique_pixels, first = np.unique(sorted_pixels, return_index=True)
    depth_map[unique_pixels] = depth[order][first]
    return depth_map.reshape(height, width)


def _occluded_mask(depth_map: np.ndarray, window: int, margin: float) -> np.ndarray:
    """
    Mark sparse pixels that have a clearly nearer pixel within a ``window`` neighbourhood.

    LiDAR and camera see the scene from different places, so through gaps next to a near
    surface the LiDAR hits background the camera cannot see. This heuristic also drops
    some genuinely visible background points right beside depth edges.
    """
    height, width = depth_map.shape
    nearest = np.where(depth_map > 0, depth_map, np.inf)
    padded = np.pad(nearest, window // 2, mode='constant', constant_values=np.inf)
    # A box minimum is separable: over rows, then over columns, one shifted slice per
    # window offset (a whole-image operation each, not a loop over points).
    row_min = padded[:height].copy()
    for offset in range(1, window):
        np.minimum(row_min, padded[offset:offset + height], out=row_min)
    box_min = row_min[:, :width].copy()
    for offset in range(1, window):
        np.minimum(box_min, row_min[:, offset:offset + width], out=box_min)
    return (depth_map > 0) & (depth_map > box_min * (1.0 + margin))


def backproject_depth(depth: np.ndarray, camera: CameraModel,
                      stride: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    Lift valid depth pixels (finite, > 0) to 3-D points in the camera frame.

    Returns ``(points, rows, cols)``: float32 ``(M, 3)`` points and the pixel indices
    they came from, sampling every ``stride``-th row and column. The depth map must match
    the camera size and is assumed rectified: distortion is ignored.
    """
    depth_map = np.asarray(depth)
    if depth_map.shape != (camera.height, camera.width):
        raise InvalidPointsError(
            f'depth shape {depth_map.shape} does not match the camera '
            f'({camera.height}, {camera.width}); use CameraModel.scaled for resized images')
    if isinstance(stride, bool) or not isinstance(stride, (int, np.integer)) or stride < 1:
        raise InvalidConfigError(f'stride must be a positive integer, got {stride!r}')
    sampled = depth_map[::stride, ::stride].astype(np.float64)
    with np.errstate(invalid='ignore'):
        valid = np.isfinite(sampled) & (sampled > 0)
    rows, cols = np.nonzero(valid)
    z = sampled[rows, cols]
    rows = rows * stride
    cols = cols * stride
    y_normalized = (rows - camera.cy) / camera.fy
    x_normalized = (cols - camera.cx - camera.K[0, 1] * y_normalized) / camera.fx
    points = np.stack([x_normalized * z, y_normalized * z, z], axis=1).astype(np.float32)
    return points, rows, cols
