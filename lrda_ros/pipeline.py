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
One frame through the system, without ROS: project the LiDAR, complete, mask the output.

The node and the rosbag evaluation both run frames through :class:`CompletionPipeline`, so a
replayed bag is evaluated exactly as the node would process it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .engine import CompletionResult, DepthCompleter
from .geometry import (
    CameraModel, lidar_to_sparse_depth, ProjectionConfig, RigidTransform, SparseProjection)


def holdout_split(sparse_depth: np.ndarray, fraction: float,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """
    Split sparse depth into (input, held out): disjoint pixel sets, 0 where absent.

    ``fraction`` of the valid pixels, drawn without replacement, go to the held-out map.
    """
    if not 0 < fraction < 1:
        raise ValueError(f'hold-out fraction must be in (0, 1), got {fraction}')
    valid = np.flatnonzero(sparse_depth > 0)
    held = rng.choice(valid, size=int(round(fraction * valid.size)), replace=False)
    kept = sparse_depth.copy()
    kept.flat[held] = 0.0
    heldout = np.zeros_like(sparse_depth)
    heldout.flat[held] = sparse_depth.flat[held]
    return kept, heldout


class FrameMismatchError(ValueError):
    """Image and camera calibration disagree."""


def check_camera_matches_image(camera: CameraModel, width: int, height: int) -> None:
    """Raise FrameMismatchError, naming camera_info, when its size is not the image's."""
    if (camera.width, camera.height) != (width, height):
        raise FrameMismatchError(f'camera_info is {camera.width}x{camera.height} but the image '
                                 f'is {width}x{height}')


@dataclass
class FrameInputs:
    """One synchronized camera + LiDAR frame, as arrays."""

    rgb: np.ndarray
    camera: CameraModel
    points_lidar: np.ndarray
    T_cam_lidar: RigidTransform


@dataclass
class FrameOutputs:
    """Everything published for one frame."""

    #: (H, W) float32 metres, NaN where invalid (at the engine's far limit), as REP 118 asks.
    depth: np.ndarray
    #: (H, W) float32 metres of the LiDAR input, 0 where no point landed (or held out).
    sparse_depth: np.ndarray
    projection: SparseProjection
    completion: CompletionResult


class CompletionPipeline:
    """Project the cloud into the image, complete the depth, and mark unusable pixels."""

    def __init__(self, completer: DepthCompleter, projection: ProjectionConfig) -> None:
        self.completer = completer
        self.projection = projection

    def project(self, inputs: FrameInputs) -> SparseProjection:
        """Return the sparse depth map of the LiDAR points in this image."""
        height, width = inputs.rgb.shape[:2]
        check_camera_matches_image(inputs.camera, width, height)
        return lidar_to_sparse_depth(inputs.points_lidar, inputs.T_cam_lidar, inputs.camera,
                                     self.projection)

    def process(self, inputs: FrameInputs) -> FrameOutputs:
        """Run one frame; engine errors (e.g. too few LiDAR points) propagate to the caller."""
        return self.complete(inputs, self.project(inputs))

    def complete(self, inputs: FrameInputs, projection: SparseProjection,
                 sparse_depth: np.ndarray | None = None,
                 deadline: float | None = None,
                 should_stop: Callable[[], bool] | None = None) -> FrameOutputs:
        """
        Complete a frame whose LiDAR is already projected.

        ``sparse_depth`` replaces ``projection.depth`` as the input (e.g. after a hold-out);
        ``deadline`` (``time.monotonic()``) is when the completion must end (anytime mode);
        ``should_stop`` goes to :meth:`DepthCompleter.complete`.
        """
        if sparse_depth is None:
            sparse_depth = projection.depth
        result = self.completer.complete(inputs.rgb, sparse_depth, deadline, should_stop)
        depth = result.depth.copy()
        # The engine clamps at its far limit; a clamped pixel is "no depth", not a measurement.
        depth[~(depth < self.completer.config.max_depth * (1.0 - 1e-4))] = np.nan
        return FrameOutputs(depth, sparse_depth, projection, result)
