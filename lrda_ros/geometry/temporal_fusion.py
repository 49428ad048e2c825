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
Temporal fusion: each published depth map blended with the previous one, moved by the pose.

Test-time optimization refits the decoder on every frame, and what is left of its error after
the fit differs from frame to frame, most of all far from the LiDAR: seen as video the depth
flickers. With the camera's pose (odometry on tf, a dataset's trajectory) the previous frame's
fused depth is warped into the new frame (geometry/reprojection.py) and, where the two agree,
averaged with the new prediction:

    fused = (1 - weight) * depth + weight * warped   where |warped - depth| <= agreement * depth

A recursive (exponential) filter: the previous fused map already carries the frames before
it. Where they disagree by more than ``agreement`` (a moving object, a disocclusion, a wrong
pose) and where nothing was warped to (the image border, holes), the new prediction is kept
alone, so the filter never invents depth and follows real changes at once. Without a pose, or
when the camera (K, image size) changes, the filter restarts from the new frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .reprojection import relative_pose, warp_depth


@dataclass(frozen=True)
class TemporalFusionConfig:
    """
    How much of the previous frame a published depth map keeps.

    ``weight`` is the previous (warped) fused depth's share where it agrees with the new
    prediction, in [0, 1); 0 turns fusion off. ``agreement`` is the largest relative
    difference ``|warped - depth| / depth`` at which the two are still averaged.
    """

    weight: float = 0.0
    agreement: float = 0.2

    def __post_init__(self) -> None:
        """Reject a weight outside [0, 1) or a non-positive agreement."""
        if not 0.0 <= self.weight < 1.0:
            raise ValueError(f'temporal fusion weight must be in [0, 1), got {self.weight}')
        if not self.agreement > 0.0:
            raise ValueError(f'temporal fusion agreement must be > 0, got {self.agreement}')

    @property
    def enabled(self) -> bool:
        """Return whether depth is fused at all."""
        return self.weight > 0.0


@dataclass
class FusionResult:
    """A fused depth map and the share of its valid pixels that took the previous frame in."""

    depth: np.ndarray
    fused_fraction: float


class TemporalFusion:
    """
    The fusion state of one camera: its last fused depth, K and pose.

    :meth:`fuse` takes each new depth map (NaN = no depth) with the camera's K and pose
    ``T_world_cam`` (4x4, camera optical frame in a fixed frame such as ``odom``).
    """

    def __init__(self, config: TemporalFusionConfig) -> None:
        self.config = config
        self._previous: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def reset(self) -> None:
        """Forget the previous frame (a new sequence, a scene cut)."""
        self._previous = None

    def fuse(self, depth: np.ndarray, K: np.ndarray, T_world_cam: np.ndarray | None,
             restart: bool = False) -> FusionResult:
        """
        Return ``depth`` fused with the previous frame's; remember the result.

        ``restart``: the frame begins anew (a scene cut), fused with nothing.
        """
        if not self.config.enabled:
            return FusionResult(depth, 0.0)
        previous, self._previous = (None if restart else self._previous), None
        if T_world_cam is None:
            return FusionResult(depth, 0.0)
        K = np.asarray(K, dtype=np.float64)
        T_world_cam = np.asarray(T_world_cam, dtype=np.float64)
        fused, fraction = depth, 0.0
        if previous is not None and previous[0].shape == depth.shape \
                and np.allclose(previous[1], K):
            warped = warp_depth(previous[0], K, relative_pose(previous[2], T_world_cam))
            fused, fraction = self._blend(depth, warped)
        self._previous = (fused, K, T_world_cam)
        return FusionResult(fused, fraction)

    def _blend(self, depth: np.ndarray, warped: np.ndarray) -> tuple[np.ndarray, float]:
        valid = np.isfinite(depth) & (depth > 0)
        with np.errstate(invalid='ignore'):
            agree = valid & np.isfinite(warped) & (
                np.abs(warped - depth) <= self.config.agreement * depth)
        weight = self.config.weight
        fused = depth.copy()
        fused[agree] = ((1.0 - weight) * depth[agree] + weight * warped[agree]).astype(
            depth.dtype)
        return fused, float(agree.sum() / max(int(valid.sum()), 1))
