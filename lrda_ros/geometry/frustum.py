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
Cull the LiDAR points that cannot land in the image, before they are transformed.

Most of a spinning LiDAR's sweep lies behind a camera or beside its image (KITTI: 16k of 114k
points land). Each side of the camera's view is a plane through its centre, and a plane in
the camera frame is a plane in the LiDAR's: one dot product per point and plane decides, in
float32, on the raw points. Only points that are clearly out are culled: clearly within the
range limits (so the range check would pass them), and clearly behind the camera or, for an
undistorted camera, clearly beside the image; a margin far above float32's rounding keeps every
point that the exact float64 projection could decide otherwise. The survivors go through the
exact projection, so the sparse map and every count are those of projecting all points.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .camera import CameraModel
from .transforms import RigidTransform

#: A plane's margin, relative to the largest value a point within range can give it: about
#: 100 float32 roundings, far above the error of a 3-term float32 dot product.
_MARGIN = 1e-5


@dataclass(frozen=True, eq=False)
class Culled:
    """Which points go on to the exact projection, and how the others are counted."""

    #: (N,) bool: the points to project exactly (everything not culled; NaN points too).
    keep: np.ndarray
    #: Culled points, finite and within range: behind the camera, and in front but beside it.
    num_behind: int
    num_outside: int


def _camera_planes(camera: CameraModel, min_depth: float) -> np.ndarray:
    """
    Return (k, 4) planes ``n . p_cam + c``, positive on the image's side.

    The first is the near plane (z > ``min_depth``); for an undistorted camera the four sides
    follow: ``u + 0.5 >= 0``, ``u + 0.5 < W``, ``v + 0.5 >= 0``, ``v + 0.5 < H`` multiplied by
    z (the projection's own test, for points in front).
    """
    planes = [(0.0, 0.0, 1.0, -min_depth)]
    if not camera.has_distortion:
        fx, skew, fy = camera.fx, camera.K[0, 1], camera.fy
        left = (camera.cx + 0.5, camera.cy + 0.5)
        planes += [(fx, skew, left[0], 0.0), (-fx, -skew, camera.width - left[0], 0.0),
                   (0.0, fy, left[1], 0.0), (0.0, -fy, camera.height - left[1], 0.0)]
    return np.array(planes, dtype=np.float64)


def cull_points(points: np.ndarray, T_cam_lidar: RigidTransform, camera: CameraModel,
                min_range: float, max_range: float, min_depth: float) -> Culled:
    """
    Return which of the LiDAR ``points`` (N, 3) can land in ``camera``'s image.

    ``min_range`` / ``max_range``: the range limits from the LiDAR's origin; ``min_depth``:
    the z in the camera below which a point is behind it.
    """
    if len(points) == 0:
        return Culled(np.zeros(0, dtype=bool), 0, 0)
    planes = _camera_planes(camera, min_depth)
    # n . (R p + t) + c = (R^T n) . p + (n . t + c): each plane in the LiDAR's frame.
    in_lidar = np.hstack([planes[:, :3] @ T_cam_lidar.rotation,
                          (planes[:, :3] @ T_cam_lidar.translation + planes[:, 3])[:, None]])
    margins = _MARGIN * (np.abs(in_lidar[:, :3]).sum(axis=1) * max_range
                         + np.abs(in_lidar[:, 3]))
    # Each plane moved out by its margin: a point is clearly on its outer side where the
    # moved plane's value is below 0 (the near plane's clearly-in-front test: above 2 margins).
    in_lidar[:, 3] += margins
    # The coordinates as three contiguous rows, in one transposing copy.
    x, y, z = np.ascontiguousarray(points.T, dtype=np.float32)
    # Every plane's value for every point, (k, N): a row per plane, contiguous for the
    # comparisons. Written out, not a matrix product: a multi-threaded BLAS call this thin
    # can stall on a busy CPU (transforms.py). Its float32 rounding lies far inside the margins.
    planes32 = in_lidar.astype(np.float32)
    with np.errstate(invalid='ignore', over='ignore'):
        values = np.multiply(planes32[:, 0:1], x)
        term = np.multiply(planes32[:, 1:2], y)
        values += term
        values += np.multiply(planes32[:, 2:3], z, out=term)
        values += planes32[:, 3:4]
        squared = x * x
        squared += y * y
        squared += z * z
        in_range = ((squared >= np.float32(min_range ** 2 * (1 + _MARGIN)))
                    & (squared <= np.float32(max_range ** 2 * (1 - _MARGIN))))
        behind = (values[0] < 0) & in_range
        if len(values) == 1:
            return Culled(~behind, int(np.count_nonzero(behind)), 0)
        # Beside some side plane: the smallest of their values, one reduction over the rows.
        beside = np.minimum.reduce(values[1:], axis=0) < 0
        beside &= in_range & (values[0] > np.float32(2 * margins[0]))
    keep = ~(behind | beside)
    return Culled(keep, int(np.count_nonzero(behind)), int(np.count_nonzero(beside)))


def select_rows(points: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """
    Return ``points[mask]`` of an (N, 3) array: each row gathered as one 12- or 24-byte item.

    numpy's boolean index of an (N, 3) array moves element by element, several times slower.
    """
    if not points.flags.c_contiguous or points.ndim != 2:
        return points[mask]
    rows = points.view(np.dtype((np.void, points.shape[1] * points.itemsize))).reshape(-1)
    return rows[mask].view(points.dtype).reshape(-1, points.shape[1])
