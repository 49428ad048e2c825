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
The calibration check's score: how well LiDAR depth discontinuities land on image edges.

A :class:`CalibrationFrame` holds what one frame contributes: the image's spread edge map
(:func:`~.edges.inverse_distance_transform`), the outlines of LiDAR depth jumps with
their weights (:func:`~.edges.depth_discontinuities`), the given extrinsic, the
camera and, on a moving robot, each point's time and the LiDAR's twist. The score of a
correction ``theta`` is, per frame, ``sum_i X_i D(pi(C(theta) T p_i)) / sum_i X_i``: the
weighted mean edge value under the projected discontinuities (Levinson & Thrun's objective,
normalized so every frame weighs the same and a score reads as a mean edge value).

``theta`` is 7 numbers: a rotation vector (rad) and a translation (m) in the camera's optical
frame, composed as ``T_cam_lidar' = C T_cam_lidar``, then a time offset (s): the image was
taken ``time_offset`` after its stamp, so each point is moved to the stamp plus the offset with
the constant-velocity twist (without motion the offset changes nothing).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .edges import (
    depth_discontinuities, edge_strength, grey, inverse_distance_transform,
    local_contrast, outline_points)
from ..geometry.camera import CameraModel, project_points
from ..geometry.checks import as_points, InvalidPointsError
from ..geometry.motion import move_points
from ..geometry.transforms import RigidTransform

#: The names of theta's entries, in order.
PARAMETER_NAMES = ('rotation_x', 'rotation_y', 'rotation_z', 'translation_x',
                   'translation_y', 'translation_z', 'time_offset')
#: theta's units -> the units results are shown in (degrees, metres, milliseconds), and their
#: names.
SHOWN_SCALES = np.array([180.0 / np.pi] * 3 + [1.0] * 3 + [1000.0])
SHOWN_UNITS = ('deg',) * 3 + ('m',) * 3 + ('ms',)


@dataclass(frozen=True)
class FrameSelection:
    """Which LiDAR points a frame keeps for the score, and how its edges are spread."""

    #: Depth jump (m) a point must be nearer than a neighbour by to count as an outline.
    min_jump_m: float = 0.3
    #: Points farther than this (m) are ignored: their outlines are a pixel or two wide.
    max_range_m: float = 60.0
    #: The strongest discontinuities kept per frame (cost bound).
    max_points: int = 6000
    #: Where an outline lies between its near point's ray (0) and the far neighbour's (1):
    #: 0 for real spinning LiDARs, whose beams are about as wide as their azimuth step; 0.5
    #: for ideal thin rays (the synthetic world): edges.outline_points.
    outline_shift: float = 0.0
    #: 0: the plain spread edge map (Levinson & Thrun); an odd number of pixels: the map minus
    #: its mean over that box (edges.local_contrast), for images textured all over.
    edge_contrast_px: int = 0

    def __post_init__(self) -> None:
        if not (self.min_jump_m > 0 and self.max_range_m > 0 and self.max_points >= 1
                and 0.0 <= self.outline_shift <= 1.0 and self.edge_contrast_px >= 0):
            raise ValueError('min_jump_m and max_range_m must be > 0, max_points >= 1, '
                             'outline_shift in [0, 1]')


@dataclass(frozen=True, eq=False)
class CalibrationFrame:
    """
    One frame of the window: spread edges, outline points and what places them.

    ``points`` (N, 3) are in the LiDAR frame, each at ``times_s`` (N,) seconds from the image's
    stamp (None: all at the stamp); ``twist`` (6,) is the LiDAR's constant-velocity body twist
    per second (translation, then rotation; None: not known, the time offset is not observable
    from this frame). ``edge_level`` is the image's mean raw edge strength (0: a blank image).
    """

    edges: np.ndarray
    camera: CameraModel
    T_cam_lidar: RigidTransform
    points: np.ndarray
    weights: np.ndarray
    times_s: np.ndarray | None = None
    twist: np.ndarray | None = None
    edge_level: float = 0.0

    @property
    def moving(self) -> bool:
        """Return whether the frame has point times and a twist that is not zero."""
        return (self.times_s is not None and self.twist is not None
                and bool(np.any(np.abs(self.twist) > 1e-9)))


def calibration_frame(rgb: np.ndarray, points_lidar: np.ndarray, T_cam_lidar: RigidTransform,
                      camera: CameraModel, times_s: np.ndarray | None = None,
                      twist: np.ndarray | None = None,
                      selection: FrameSelection = FrameSelection()) -> CalibrationFrame:
    """
    Return a frame's contribution: the spread edge map and its strongest outline points.

    ``points_lidar`` (N, 3), in scan order where the driver gives it (see
    :func:`~.edges.scan_neighbours`); NaN points are dropped first.
    """
    points = as_points(points_lidar, 'points_lidar')
    image = np.asarray(rgb)
    if image.shape[:2] != (camera.height, camera.width):
        raise InvalidPointsError(f'image is {image.shape[1]}x{image.shape[0]}, the camera '
                                 f'{camera.width}x{camera.height}')
    if times_s is not None:
        times_s = np.asarray(times_s, np.float64).reshape(-1)
        if times_s.shape[0] != points.shape[0]:
            raise InvalidPointsError(f'times_s must have one value per point ({len(points)}), '
                                     f'got {times_s.shape[0]}')
    finite = np.isfinite(points).all(axis=1)
    if times_s is not None:
        finite &= np.isfinite(times_s)
    points = points[finite]
    times = times_s[finite] if times_s is not None else None
    weights, partner = depth_discontinuities(points)
    ranges = np.linalg.norm(points, axis=1)
    keep = np.flatnonzero((weights >= np.sqrt(selection.min_jump_m))
                          & (ranges <= selection.max_range_m))
    if keep.size > selection.max_points:
        keep = keep[np.argsort(-weights[keep], kind='stable')[:selection.max_points]]
    raw = edge_strength(grey(image))
    edges = inverse_distance_transform(raw)
    if selection.edge_contrast_px:
        edges = local_contrast(edges, selection.edge_contrast_px)
    # Each outline between its point and the neighbour it jumps to, at the mean time.
    far = np.where(partner[keep] >= 0, partner[keep], keep)
    outline = outline_points(points[keep], points[far], selection.outline_shift)
    if times is not None:
        times = (times[keep] + times[far]) / 2
    return CalibrationFrame(
        edges=edges, camera=camera, T_cam_lidar=T_cam_lidar, points=outline,
        weights=weights[keep], times_s=times,
        twist=None if twist is None else np.asarray(twist, np.float64).reshape(6),
        edge_level=float(raw.mean()))


def rotation_matrix(rotation_vector: np.ndarray) -> np.ndarray:
    """Return the rotation of a rotation vector (rad; Rodrigues' formula)."""
    r = np.asarray(rotation_vector, np.float64)
    angle = float(np.linalg.norm(r))
    if angle < 1e-12:
        return np.eye(3)
    k = r / angle
    skew = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + np.sin(angle) * skew + (1.0 - np.cos(angle)) * (skew @ skew)


def rotation_vector(rotation: np.ndarray) -> np.ndarray:
    """Return the rotation vector (rad) of a rotation matrix (angles below pi)."""
    R = np.asarray(rotation, np.float64)
    cos_angle = np.clip((np.trace(R) - 1.0) / 2.0, -1.0, 1.0)
    angle = float(np.arccos(cos_angle))
    axis = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    if angle < 1e-9:
        return axis / 2.0
    return axis * (angle / (2.0 * np.sin(angle)))


def correction_transform(theta: np.ndarray) -> RigidTransform:
    """Return the rigid correction ``C`` of theta's first six entries (camera frame)."""
    theta = np.asarray(theta, np.float64)
    return RigidTransform(rotation_matrix(theta[:3]), theta[3:6])


def bilinear(image: np.ndarray, uv: np.ndarray) -> np.ndarray:
    """Return ``image`` sampled at (column, row) ``uv`` (N, 2); 0 outside the image or NaN."""
    height, width = image.shape
    u, v = uv[:, 0], uv[:, 1]
    inside = (u >= 0) & (u <= width - 1) & (v >= 0) & (v <= height - 1)  # NaN: False
    values = np.zeros(len(uv), np.float64)
    u, v = u[inside], v[inside]
    u0 = np.minimum(np.floor(u).astype(np.int64), width - 2)
    v0 = np.minimum(np.floor(v).astype(np.int64), height - 2)
    fu, fv = u - u0, v - v0
    values[inside] = ((image[v0, u0] * (1 - fu) + image[v0, u0 + 1] * fu) * (1 - fv)
                      + (image[v0 + 1, u0] * (1 - fu) + image[v0 + 1, u0 + 1] * fu) * fv)
    return values


class WindowScore:
    """
    The score of a window of frames as a function of theta, per frame.

    Points in the camera frame are cached per time offset (the one costly step on a moving
    robot), so a search that varies the rigid part only projects.
    """

    def __init__(self, frames: list[CalibrationFrame]) -> None:
        """Keep the frames; nothing is computed until the first call."""
        self.frames = list(frames)
        self._cached_offset: float | None = None
        self._cached: list[np.ndarray] = []
        #: Evaluations so far (the optimizer's cost).
        self.evaluations = 0

    @property
    def scale(self) -> float:
        """
        Return the frames' mean absolute edge value: the score's unit where it is small.

        A plain edge map's score is of its order; a contrast map's
        (``FrameSelection.edge_contrast_px``) is near zero away from an edge, so its gains and
        drops are measured against a tenth of this instead.
        """
        if not self.frames:
            return 0.0
        return float(np.mean([np.abs(frame.edges).mean() for frame in self.frames]))

    def _points_in_camera(self, time_offset_s: float) -> list[np.ndarray]:
        if self._cached_offset != time_offset_s:
            cached = []
            for frame in self.frames:
                points = frame.points
                if frame.moving:
                    # The LiDAR at the image's true instant, stamp + offset: exp((t_i - o) xi).
                    points = move_points(points, frame.twist, frame.times_s - time_offset_s)
                cached.append(frame.T_cam_lidar.apply(points))
            self._cached_offset, self._cached = time_offset_s, cached
        return self._cached

    def pixels(self, theta: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Return each frame's outline points in its image, (column, row) and depth, at theta."""
        theta = np.asarray(theta, np.float64)
        rotation = rotation_matrix(theta[:3])
        return [project_points(points @ rotation.T + theta[3:6], frame.camera)
                for frame, points in zip(self.frames, self._points_in_camera(float(theta[6])))]

    def per_frame(self, theta: np.ndarray) -> np.ndarray:
        """Return each frame's score (float64 (F,)) at ``theta`` (7,)."""
        theta = np.asarray(theta, np.float64)
        self.evaluations += 1
        rotation = rotation_matrix(theta[:3])
        scores = np.zeros(len(self.frames))
        for index, (frame, points) in enumerate(
                zip(self.frames, self._points_in_camera(float(theta[6])))):
            total = frame.weights.sum()
            if total <= 0:
                continue
            uv, _ = project_points(points @ rotation.T + theta[3:6], frame.camera)
            scores[index] = float(frame.weights @ bilinear(frame.edges, uv)) / total
        return scores

    def __call__(self, theta: np.ndarray) -> float:
        """Return the window's score: the mean of the frames' scores."""
        return float(self.per_frame(theta).mean()) if self.frames else 0.0
