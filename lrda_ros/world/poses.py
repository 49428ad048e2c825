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
"""Camera models and poses, and where the LiDAR sits on the camera rig."""

from __future__ import annotations

from collections.abc import Sequence
import math

import numpy as np

from .common import DEFAULT_HFOV_DEG
from ..geometry import CameraModel


def pinhole_camera(width: int, height: int, hfov_deg: float = DEFAULT_HFOV_DEG) -> CameraModel:
    """Return a distortion-free camera with square pixels and a horizontal field of view."""
    return pinhole_camera_focal(width, height, 0.5 * width / math.tan(math.radians(hfov_deg) / 2))


def pinhole_camera_focal(width: int, height: int, fx: float) -> CameraModel:
    """Return a distortion-free camera with square pixels and focal length ``fx`` (pixels)."""
    # Pixel centres sit at integer coordinates, so the image centre is (W-1)/2, (H-1)/2.
    K = [[fx, 0.0, (width - 1) / 2.0], [0.0, fx, (height - 1) / 2.0], [0.0, 0.0, 1.0]]
    return CameraModel(np.array(K), width, height, 'plumb_bob', np.zeros(5))


def _rot_x(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def _rot_y(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def _rot_z(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _body_from_optical() -> np.ndarray:
    # Columns: optical x (right) = -y_body, optical y (down) = -z_body, optical z = x_body.
    return np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])


def camera_pose(position: Sequence[float], yaw: float, pitch: float,
                roll: float = 0.0) -> np.ndarray:
    """
    Return ``T_world_cam`` (4x4) for an optical frame at ``position``.

    ``yaw`` is the heading in radians (0 looks along world +x, counter-clockwise positive),
    ``pitch`` > 0 looks up, ``roll`` rotates about the viewing direction.
    """
    T = np.eye(4)
    T[:3, :3] = _rot_z(yaw) @ _rot_y(-pitch) @ _rot_x(roll) @ _body_from_optical()
    T[:3, 3] = np.asarray(position, dtype=np.float64)
    return T


def lidar_mount(up: float = 0.2, back: float = 0.1) -> np.ndarray:
    """
    Return ``T_cam_lidar`` for a LiDAR ``up`` m above and ``back`` m behind the camera.

    The LiDAR axes (x forward, y left, z up) are aligned with the camera's viewing direction.
    """
    R_body_opt = _body_from_optical()
    T = np.eye(4)
    T[:3, :3] = R_body_opt.T
    T[:3, 3] = R_body_opt.T @ np.array([-back, 0.0, up])
    return T


# --------------------------------------------------------------------------------------------
