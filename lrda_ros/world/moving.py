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
A moving rig: a LiDAR that sweeps while the robot drives and turns, and a camera stamped apart.

The rig moves with a constant body twist (forward speed, yaw rate) in the LiDAR frame. Each
azimuth column of the sweep is cast from the LiDAR's pose at the column's instant and keeps
that instant as the point's time, so a cloud is skewed the way a real spinning LiDAR's is. The
camera is rendered from the rig's pose at its own stamp. Times are seconds from the cloud's
stamp, which is the sweep's start (as Ouster and Autoware stamp clouds).
"""

from __future__ import annotations

from dataclasses import dataclass
import math

import numpy as np

from .common import F32, LIDAR_TILE
from .lidar import LidarConfig
from .raycast import cast_rays
from .rendering import tile_grid
from .scenes import Scene
from ..geometry import move_points, RigidTransform


@dataclass(frozen=True)
class RigMotion:
    """
    The rig's motion: ``speed_mps`` along the LiDAR's +x, ``yaw_rate_dps`` about its +z.

    The LiDAR head turns once per ``sweep_period_s``, starting at ``start_azimuth_deg`` (180:
    behind, so the camera's view is mid-sweep), counter-clockwise seen from above.
    """

    speed_mps: float = 10.0
    yaw_rate_dps: float = 30.0
    sweep_period_s: float = 0.1
    start_azimuth_deg: float = 180.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.sweep_period_s) and self.sweep_period_s > 0):
            raise ValueError(f'sweep_period_s must be > 0, got {self.sweep_period_s}')
        if not (math.isfinite(self.speed_mps) and math.isfinite(self.yaw_rate_dps)):
            raise ValueError('speed_mps and yaw_rate_dps must be finite')

    def twist(self) -> np.ndarray:
        """Return the body twist per second in the LiDAR frame: translation, then rotation."""
        return np.array([self.speed_mps, 0.0, 0.0, 0.0, 0.0, math.radians(self.yaw_rate_dps)])

    def pose(self, T_world_lidar_start: np.ndarray, seconds: float) -> np.ndarray:
        """Return ``T_world_lidar`` ``seconds`` after the sweep started (4x4)."""
        unit = move_points(np.eye(3), self.twist(), np.full(3, seconds))
        origin = move_points(np.zeros((1, 3)), self.twist(), np.full(1, seconds))[0]
        relative = np.eye(4)
        relative[:3, :3] = (unit - origin).T
        relative[:3, 3] = origin
        return np.asarray(T_world_lidar_start, np.float64) @ relative


@dataclass(frozen=True, eq=False)
class MovingSweep:
    """A skewed sweep: ``points`` (N, 3) in the LiDAR frame each at ``times`` (N,) s."""

    points: np.ndarray
    times: np.ndarray


def simulate_moving_sweep(scene: Scene, T_world_lidar_start: np.ndarray, config: LidarConfig,
                          motion: RigMotion, rng: np.random.Generator | None = None
                          ) -> MovingSweep:
    """
    Cast one sweep from a moving LiDAR; each column from the pose at its own instant.

    Points come ring by ring in sweep order, in the LiDAR frame of their own instant (what the
    sensor reports); range noise and dropout follow ``config``.
    """
    if rng is None:
        rng = np.random.default_rng([scene.seed, 606])
    n_az = int(round(360.0 / config.horizontal_resolution_deg))
    elevation = np.radians(np.linspace(*config.vertical_fov_deg, config.beams))
    column_times = np.arange(n_az) * (motion.sweep_period_s / n_az)
    azimuth = math.radians(motion.start_azimuth_deg) + np.arange(n_az) * (2.0 * math.pi / n_az)
    beam, az, valid = tile_grid(config.beams, n_az, LIDAR_TILE)
    directions = np.stack([np.cos(elevation)[beam] * np.cos(azimuth[az]),
                           np.cos(elevation)[beam] * np.sin(azimuth[az]),
                           np.sin(elevation)[beam]], axis=1)
    times = column_times[az]
    # Each ray leaves the LiDAR as it is at the ray's instant: origin and axes both move.
    origins = move_points(np.zeros_like(directions), motion.twist(), times)
    turned = move_points(directions, motion.twist(), times) - origins
    start = RigidTransform.from_matrix(T_world_lidar_start)
    hits = cast_rays(scene, start.apply(origins), turned @ start.rotation.T)
    keep = np.flatnonzero(valid & (hits.primitive >= 0) & (hits.t <= config.max_range))
    keep = keep[np.argsort(beam[keep] * n_az + az[keep], kind='stable')]
    ranges = hits.t[keep] + rng.standard_normal(keep.size) * config.range_noise_std
    points = (directions[keep] * ranges[:, None]).astype(F32)
    point_times = times[keep]
    if config.dropout > 0.0:
        kept = rng.random(len(points)) >= config.dropout
        points, point_times = points[kept], point_times[kept]
    return MovingSweep(points, point_times)
