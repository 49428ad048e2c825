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
"""Camera rendering: shaded RGB and exact z-depth."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import math

import numpy as np

from .common import dot, F32, TILE, vec3
from .materials import mix
from .primitives import Primitive
from .raycast import hit_surface, nearest_hit, surface_albedo
from .scenes import Scene
from ..geometry import CameraModel

# Camera rendering
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class RenderResult:
    """
    A rendered view: ``rgb`` (H, W, 3) uint8, ``depth`` (H, W) float32 z-depth (0 = sky).

    ``normals`` (H, W, 3) float32 are unit surface normals in the camera optical frame (0 for
    sky); ``primitive_ids`` (H, W) int32 index ``scene.primitives`` (-1 for sky).
    """

    rgb: np.ndarray
    depth: np.ndarray
    normals: np.ndarray
    primitive_ids: np.ndarray


def tile_grid(rows: int, cols: int, tile: tuple[int, int]) -> tuple:
    """
    Row/col indices of a ``rows`` x ``cols`` grid in tile-major order, padded to full tiles.

    Returns (row, col, valid); padded entries repeat the edge and have ``valid`` False.
    """
    tr, tc = tile
    nr, nc = -(-rows // tr), -(-cols // tc)
    r = (np.arange(nr)[:, None, None, None] * tr + np.arange(tr)[None, None, :, None])
    c = (np.arange(nc)[None, :, None, None] * tc + np.arange(tc)[None, None, None, :])
    r, c = np.broadcast_arrays(r, c)
    r, c = r.ravel(), c.ravel()
    valid = (r < rows) & (c < cols)
    return np.minimum(r, rows - 1), np.minimum(c, cols - 1), valid


def _untile(values: np.ndarray, shape: tuple[int, int], tile: tuple[int, int]) -> np.ndarray:
    """Invert :func:`tile_grid`: tile-major values (N, ...) to a (rows, cols, ...) image."""
    (rows, cols), (tr, tc) = shape, tile
    nr, nc = -(-rows // tr), -(-cols // tc)
    tail = values.shape[1:]
    grid = values.reshape((nr, nc, tr, tc) + tail).swapaxes(1, 2)
    return np.ascontiguousarray(grid.reshape((nr * tr, nc * tc) + tail)[:rows, :cols])


def camera_rays(camera: CameraModel, T_world_cam: np.ndarray) -> tuple:
    rows, cols, valid = tile_grid(camera.height, camera.width, TILE)
    x = (cols.astype(F32) - F32(camera.cx)) / F32(camera.fx)
    y = (rows.astype(F32) - F32(camera.cy)) / F32(camera.fy)
    z_unit = 1.0 / np.sqrt(x * x + y * y + 1.0)
    x, y = x * z_unit, y * z_unit
    R = np.asarray(T_world_cam, dtype=np.float64)[:3, :3]
    d = tuple(dot([float(v) for v in R[k]], x, y, z_unit) for k in range(3))
    o = tuple(float(v) for v in np.asarray(T_world_cam)[:3, 3])
    return o, d, z_unit, rows, cols, valid


def _visibility(prims: Sequence[Primitive], p: tuple, normal: np.ndarray, to_light: tuple,
                t_max) -> np.ndarray:
    """Return 1 where a shadow ray from ``p`` toward the light is unobstructed, else 0."""
    # Offset along the normal, growing with distance from the origin for float32 precision.
    off = 2e-3 * (1.0 + 1e-3 * np.sqrt(p[0] ** 2 + p[1] ** 2 + p[2] ** 2))
    o = tuple((p[k] + off * normal[k]).astype(F32) for k in range(3))
    _, ids = nearest_hit(prims, o, to_light, t_max)
    return (ids < 0).astype(F32)


def _shade(scene: Scene, ids: np.ndarray, p: tuple, normal: np.ndarray, uv: np.ndarray,
           shadows: bool) -> np.ndarray:
    """Lambertian shading (M, 3) of hit points: ambient sky dome + sun + point lights."""
    light = scene.lighting
    albedo = surface_albedo(scene.primitives, ids, uv)
    # Hemispherical ambient: surfaces facing up see more sky (or ceiling bounce) light.
    amb = light.ambient * (0.8 + 0.2 * normal[2])
    irradiance = amb[:, None] * np.asarray(light.ambient_color, dtype=F32)
    if light.sun_direction is not None and light.sun_intensity > 0.0:
        sun = vec3(np.asarray(light.sun_direction) / np.linalg.norm(light.sun_direction))
        ndl = np.maximum(dot(sun, *normal), 0.0)
        lit = np.flatnonzero(ndl > 0.0)
        if shadows and lit.size:
            to_sun = tuple(np.full(lit.size, s, dtype=F32) for s in sun)
            ndl[lit] *= _visibility(scene.primitives, tuple(x[lit] for x in p), normal[:, lit],
                                    to_sun, None)
        irradiance += (light.sun_intensity * ndl)[:, None] * np.asarray(light.sun_color, F32)
    for lp in light.point_lights:
        vec = np.stack([lp[k] - p[k] for k in range(3)])
        dist = np.sqrt((vec * vec).sum(axis=0))
        vec /= np.maximum(dist, 1e-6)
        ndl = np.maximum((vec * normal).sum(axis=0), 0.0)
        ndl /= 1.0 + (dist / light.point_falloff) ** 2
        lit = np.flatnonzero(ndl > 0.0)
        if shadows and lit.size:
            ndl[lit] *= _visibility(scene.primitives, tuple(x[lit] for x in p), normal[:, lit],
                                    tuple(vec[k, lit] for k in range(3)), dist[lit] - 5e-3)
        irradiance += (light.point_intensity * ndl)[:, None]
    return albedo * irradiance


def _sky(scene: Scene, dz: np.ndarray) -> np.ndarray:
    """Vertical sky gradient from the horizon colour to the zenith colour."""
    f = np.sqrt(np.clip(dz, 0.0, 1.0))
    return mix(scene.sky_horizon, scene.sky_zenith, f.astype(F32))


def render(scene: Scene, camera: CameraModel, T_world_cam: np.ndarray,
           rng: np.random.Generator | None = None, noise_std: float = 0.01,
           shadows: bool | None = None) -> RenderResult:
    """
    Ray-cast a view of ``scene`` from the camera pose ``T_world_cam`` (4x4).

    Shading is Lambertian (ambient + sun + point lights, with cast shadows unless disabled),
    followed by distance fog and Gaussian image noise of ``noise_std`` (in [0, 1] units) drawn
    from ``rng`` (default: seeded from ``scene.seed``).
    """
    if rng is None:
        rng = np.random.default_rng([scene.seed, 404])
    shadows = scene.lighting.shadows if shadows is None else shadows
    o, d, z_unit, _, _, _ = camera_rays(camera, T_world_cam)
    t, ids = nearest_hit(scene.primitives, o, d)
    hit = np.flatnonzero(ids >= 0)
    color = _sky(scene, d[2])
    normal_cam = np.zeros((d[0].size, 3), dtype=F32)
    if hit.size:
        sub_d = tuple(x[hit] for x in d)
        p, normal, uv = hit_surface(scene.primitives, o, sub_d, t[hit], ids[hit])
        shaded = _shade(scene, ids[hit], p, normal, uv, shadows)
        if math.isfinite(scene.fog_distance):
            fog = np.exp(-t[hit] / scene.fog_distance)[:, None]
            shaded = shaded * fog + np.asarray(scene.sky_horizon, dtype=F32) * (1.0 - fog)
        color[hit] = shaded
        R = np.asarray(T_world_cam, dtype=np.float64)[:3, :3].astype(F32)
        normal_cam[hit] = normal.T @ R
    if noise_std > 0.0:
        color += rng.standard_normal(color.shape, dtype=F32) * F32(noise_std)
    depth = np.where(ids >= 0, t * z_unit, 0.0).astype(F32)
    rgb = np.clip(color * 255.0 + 0.5, 0.0, 255.0).astype(np.uint8)
    shape = (camera.height, camera.width)
    rgb, depth_img, normal_img, id_img = (_untile(x, shape, TILE)
                                          for x in (rgb, depth, normal_cam, ids))
    return RenderResult(rgb, depth_img, normal_img, id_img)


# --------------------------------------------------------------------------------------------
