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
"""Spinning LiDAR simulation."""

from __future__ import annotations

from dataclasses import dataclass
import math

import numpy as np

from .common import dot, F32, LIDAR_TILE
from .raycast import hit_surface, nearest_hit, surface_albedo
from .rendering import tile_grid
from .scenes import Scene

# LiDAR
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LidarConfig:
    """Spinning LiDAR: ``beams`` rings evenly spread over ``vertical_fov_deg`` (low, high)."""

    beams: int = 32
    vertical_fov_deg: tuple[float, float] = (-25.0, 3.0)
    horizontal_resolution_deg: float = 0.35
    max_range: float = 100.0
    range_noise_std: float = 0.02
    dropout: float = 0.0

    def __post_init__(self) -> None:
        if self.beams < 1 or self.horizontal_resolution_deg <= 0.0 or self.max_range <= 0.0:
            raise ValueError('beams, horizontal_resolution_deg and max_range must be positive')
        if not 0.0 <= self.dropout < 1.0 or self.range_noise_std < 0.0:
            raise ValueError('dropout must be in [0, 1) and range_noise_std >= 0')

    @classmethod
    def indoor(cls, **overrides) -> LidarConfig:
        """Return a configuration with a symmetric +-15 degree field of view and 30 m range."""
        values = {'vertical_fov_deg': (-15.0, 15.0), 'max_range': 30.0}
        values.update(overrides)
        return cls(**values)


def simulate_lidar(scene: Scene, T_world_lidar: np.ndarray, config: LidarConfig,
                   rng: np.random.Generator | None = None) -> np.ndarray:
    """
    Simulate one 360-degree sweep; return (N, 4) float32 [x, y, z, intensity] (LiDAR frame).

    Points are ordered beam by beam (lowest first), azimuth increasing from +x toward +y.
    Range noise is added along each ray; ``rng`` (default: seeded from ``scene.seed``) draws
    noise and dropout.  Intensity in [0, 1] comes from the material reflectivity, the texture
    brightness and the incidence angle.
    """
    if rng is None:
        rng = np.random.default_rng([scene.seed, 505])
    n_az = int(round(360.0 / config.horizontal_resolution_deg))
    elevation = np.radians(np.linspace(*config.vertical_fov_deg, config.beams))
    azimuth = np.arange(n_az) * (2.0 * math.pi / n_az)
    beam, az, valid = tile_grid(config.beams, n_az, LIDAR_TILE)
    ce = np.cos(elevation)[beam]
    dl = ((ce * np.cos(azimuth[az])).astype(F32), (ce * np.sin(azimuth[az])).astype(F32),
          np.sin(elevation)[beam].astype(F32))
    T = np.asarray(T_world_lidar, dtype=np.float64)
    d = tuple(dot([float(v) for v in T[k, :3]], *dl) for k in range(3))
    o = tuple(float(v) for v in T[:3, 3])
    t, ids = nearest_hit(scene.primitives, o, d)
    keep = valid & (ids >= 0) & (t <= config.max_range)
    # Back to ring-major order, like the sensor's rings.
    keep_idx = np.flatnonzero(keep)
    keep_idx = keep_idx[np.argsort(beam[keep_idx] * n_az + az[keep_idx], kind='stable')]
    intensity = _lidar_intensity(scene, o, d, t, ids, keep_idx)
    rng_noise = rng.standard_normal(keep_idx.size) * config.range_noise_std
    r = t[keep_idx] + rng_noise.astype(F32)
    points = np.stack([x[keep_idx] * r for x in dl] + [intensity], axis=1).astype(F32)
    if config.dropout > 0.0:
        points = points[rng.random(len(points)) >= config.dropout]
    return points


def _lidar_intensity(scene: Scene, o: tuple, d: tuple, t: np.ndarray, ids: np.ndarray,
                     idx: np.ndarray) -> np.ndarray:
    if idx.size == 0:
        return np.zeros(0, dtype=F32)
    sub_d = tuple(x[idx] for x in d)
    _, normal, uv = hit_surface(scene.primitives, o, sub_d, t[idx], ids[idx])
    albedo = surface_albedo(scene.primitives, ids[idx], uv)
    reflectivity = np.array([p.material.reflectivity for p in scene.primitives], F32)[ids[idx]]
    cos_inc = np.abs(dot(normal, *sub_d))
    value = reflectivity * (0.4 + albedo.mean(axis=1)) * (0.3 + 0.7 * cos_inc)
    return np.clip(value, 0.0, 1.0).astype(F32)


# --------------------------------------------------------------------------------------------
