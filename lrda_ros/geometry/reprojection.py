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
A depth map seen from another pose of the same camera: the warp of TAE and temporal fusion.

Nearest-pixel forward splatting with a z-buffer; pixels nothing lands on are NaN (holes where
the target camera sees more detail than the source had, and disocclusions).
"""

from __future__ import annotations

import numpy as np


def warp_depth(depth: np.ndarray, K: np.ndarray, T_target_source: np.ndarray,
               target_shape: tuple[int, int] | None = None) -> np.ndarray:
    """
    Return ``depth`` (source camera) as seen from the target camera, NaN where nothing lands.

    ``T_target_source`` (4x4) maps points in the source camera frame into the target's. Each
    valid source pixel (finite, > 0) goes to the target pixel nearest its projection; where
    several land on one pixel the nearest (smallest target z) wins, as a z-buffer draws it.
    """
    height, width = depth.shape if target_shape is None else target_shape
    rows, cols = np.nonzero(np.isfinite(depth) & (depth > 0))
    z = depth[rows, cols].astype(np.float64)
    K = np.asarray(K, dtype=np.float64)
    T = np.asarray(T_target_source, dtype=np.float64)
    # K (R K^-1 (z p) + t) in one 3x3 product: K's last row is (0, 0, 1), so the third row is
    # the depth in the target camera.
    pixel_to_pixel = K @ T[:3, :3] @ np.linalg.inv(K)
    projected = (pixel_to_pixel @ np.stack([cols, rows, np.ones_like(cols)]).astype(np.float64)
                 ) * z + (K @ T[:3, 3])[:, None]
    projected = projected[:, projected[2] > 1e-6]
    u = np.rint(projected[0] / projected[2]).astype(np.int64)
    v = np.rint(projected[1] / projected[2]).astype(np.int64)
    inside = (u >= 0) & (u < width) & (v >= 0) & (v < height)
    u, v, z_target = u[inside], v[inside], projected[2, inside]
    warped = np.full(height * width, np.inf)
    np.minimum.at(warped, v * width + u, z_target)
    warped[np.isinf(warped)] = np.nan
    return warped.reshape(height, width).astype(np.float32)


def relative_pose(T_world_a: np.ndarray, T_world_b: np.ndarray) -> np.ndarray:
    """Return T_b_a: points in camera a expressed in camera b."""
    return np.linalg.inv(np.asarray(T_world_b, dtype=np.float64)) @ np.asarray(
        T_world_a, dtype=np.float64)
