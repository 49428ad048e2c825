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

from ..geometry.reprojection import relative_pose, warp_depth

__all__ = ['relative_pose', 'temporal_alignment_error', 'TemporalTracker', 'warp_depth']


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
