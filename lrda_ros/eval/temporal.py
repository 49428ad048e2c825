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
Temporal consistency of a depth sequence: the temporal alignment error (TAE).

TAE, as video-depth work reports it: frame k's depth is lifted to 3-D with K, moved into frame
k+1 with the relative camera pose and projected (nearest pixel, a z-buffer keeps the nearest
surface where several points land on one pixel); where the warped depth and frame k+1's depth
are both valid, their AbsRel ``mean(|warped - d_k+1| / d_k+1)`` is taken; the same is done
from k+1 back into k and the two are averaged. Unitless; 0 = the two depth maps describe the
same 3-D surface. It says nothing of accuracy: a depth map that is wrong in the same way in
every frame scores well, so it is reported beside the errors against ground truth, never alone.
Moving objects and pixels that see different surfaces from the two poses (disocclusions the
z-buffer cannot resolve, pixel rounding at depth edges) add to it even for perfect depth.
"""

from __future__ import annotations

import math

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
    rays = np.linalg.solve(K, np.stack([cols, rows, np.ones_like(cols)]).astype(np.float64))
    points = rays * z
    T = np.asarray(T_target_source, dtype=np.float64)
    moved = T[:3, :3] @ points + T[:3, 3:4]
    in_front = moved[2] > 1e-6
    moved = moved[:, in_front]
    projected = K @ moved
    u = np.rint(projected[0] / projected[2]).astype(np.int64)
    v = np.rint(projected[1] / projected[2]).astype(np.int64)
    inside = (u >= 0) & (u < width) & (v >= 0) & (v < height)
    u, v, z_target = u[inside], v[inside], moved[2, inside]
    warped = np.full(height * width, np.inf)
    np.minimum.at(warped, v * width + u, z_target)
    warped[np.isinf(warped)] = np.nan
    return warped.reshape(height, width).astype(np.float32)


def _absrel(estimate: np.ndarray, reference: np.ndarray) -> tuple[float, int]:
    """Return (AbsRel of ``estimate`` against ``reference`` where both are valid, count)."""
    both = np.isfinite(estimate) & np.isfinite(reference) & (estimate > 0) & (reference > 0)
    count = int(both.sum())
    if count == 0:
        return math.nan, 0
    reference = reference[both].astype(np.float64)
    return float(np.mean(np.abs(estimate[both] - reference) / reference)), count


def temporal_alignment_error(depth_a: np.ndarray, depth_b: np.ndarray, K: np.ndarray,
                             T_b_a: np.ndarray, min_overlap: int = 1) -> float:
    """
    Return the TAE of two consecutive depth maps (a then b), both directions averaged.

    ``K`` is the camera matrix of both images; ``T_b_a`` (4x4) maps points in camera a into
    camera b (``inv(T_world_b) @ T_world_a``). NaN where fewer than ``min_overlap`` pixels
    are valid in both maps in either direction (no overlap to compare).
    """
    if depth_a.shape != depth_b.shape:
        raise ValueError(f'depth maps differ in size: {depth_a.shape} and {depth_b.shape}')
    T_b_a = np.asarray(T_b_a, dtype=np.float64)
    forward, forward_count = _absrel(warp_depth(depth_a, K, T_b_a), depth_b)
    backward, backward_count = _absrel(warp_depth(depth_b, K, np.linalg.inv(T_b_a)), depth_a)
    if min(forward_count, backward_count) < max(1, min_overlap):
        return math.nan
    return 0.5 * (forward + backward)


def relative_pose(T_world_a: np.ndarray, T_world_b: np.ndarray) -> np.ndarray:
    """Return T_b_a: points in camera a expressed in camera b."""
    return np.linalg.inv(np.asarray(T_world_b, dtype=np.float64)) @ np.asarray(
        T_world_a, dtype=np.float64)


class TemporalTracker:
    """
    The TAE of each frame of a sequence against the frame before it, for one method.

    :meth:`update` takes a frame's depth, K and camera pose (``T_world_cam``) and returns the
    TAE against the previous frame, NaN for the first frame, after :meth:`reset`, when either
    pose is unknown, or when K or the image size changed (a different camera).
    """

    def __init__(self) -> None:
        self._previous: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def reset(self) -> None:
        """Start a new sequence."""
        self._previous = None

    def update(self, depth: np.ndarray, K: np.ndarray | None,
               T_world_cam: np.ndarray | None) -> float:
        """Return the TAE of ``depth`` against the previous frame's (NaN when not defined)."""
        previous, self._previous = self._previous, None
        if K is None or T_world_cam is None:
            return math.nan
        K = np.asarray(K, dtype=np.float64)
        self._previous = (depth, K, np.asarray(T_world_cam, dtype=np.float64))
        if previous is None:
            return math.nan
        depth_a, K_a, pose_a = previous
        if depth_a.shape != depth.shape or not np.allclose(K_a, K):
            return math.nan
        return temporal_alignment_error(depth_a, depth, K, relative_pose(pose_a, T_world_cam))
