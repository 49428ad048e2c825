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

"""Synthetic sequences as evaluation frames: LiDAR projected as the node does, exact truth."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from .frame import Frame
from .. import world
from ..geometry import lidar_to_sparse_depth, ProjectionConfig, RigidTransform


def synthetic_frames(config: world.SequenceConfig,
                     projection: ProjectionConfig = ProjectionConfig(remove_occluded=True)
                     ) -> Iterator[Frame]:
    """Yield a rendered sequence's frames with projected LiDAR input and exact depth truth."""
    for frame in world.iter_sequence(config):
        sparse = lidar_to_sparse_depth(frame.points_lidar[:, :3],
                                       RigidTransform.from_matrix(frame.T_cam_lidar),
                                       frame.camera, projection).depth
        yield Frame(f'{config.kind}_{config.seed}_{frame.index:03d}', frame.rgb, sparse,
                    frame.depth.astype(np.float32), frame.camera.K,
                    f'{config.kind}_{config.seed}', frame.stamp_ns,
                    T_world_cam=frame.T_world_cam)
