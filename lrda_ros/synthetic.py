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
Procedural synthetic worlds: a vectorized ray caster for a camera and a spinning LiDAR.

Scenes are built from a few dozen analytic primitives (rectangles, yaw-rotated boxes, spheres
and vertical cylinders), each with a procedural texture defined in the surface's own 2-D
coordinates in metres, so texture frequency in the image falls with distance like in real
images.  One ray-casting routine serves both sensors: camera pixels and LiDAR beams are just
origins plus directions.

Conventions: world z up; camera optical frame x right, y down, z forward; LiDAR frame x
forward, y left, z up; ``T_a_b`` maps points in frame b to frame a; depth images are float32
z-depth in metres with 0 where there is no surface (sky).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
import math

import numpy as np

from .geometry import CameraModel

Vec3 = tuple[float, float, float]
_F32 = np.float32
# Rays closer than this to their origin are ignored: it rejects a ray re-hitting its own surface.
_EPS = 1e-4
# Camera rays are cast in 8x8 pixel tiles so that one cone bounds each group (cheap culling).
_TILE = (8, 8)
_LIDAR_TILE = (4, 16)
_CHUNK = 64  # rays per culling group: one full tile of either layout
DEFAULT_HFOV_DEG = 70.0

__all__ = [
    'Box', 'Cylinder', 'DEFAULT_HFOV_DEG', 'LidarConfig', 'Lighting', 'Material', 'RayHits',
    'Rect', 'RenderResult', 'Scene', 'SceneLayout', 'SequenceConfig', 'Sphere',
    'SyntheticFrame', 'TEXTURES', 'camera_pose', 'cast_rays', 'pinhole_camera',
    'pinhole_camera_focal', 'iter_sequence', 'lidar_mount', 'make_scene', 'make_sequence',
    'random_view', 'render', 'sequence_poses', 'simulate_lidar',
]


def _vec3(values: Sequence[float]) -> Vec3:
    # Plain Python floats keep float32 arrays float32 (NumPy scalars would promote to float64).
    x, y, z = (float(v) for v in values)
    return (x, y, z)


def _dot(a: Sequence[float], x, y, z):
    return a[0] * x + a[1] * y + a[2] * z


# --------------------------------------------------------------------------------------------
# Camera and poses
# --------------------------------------------------------------------------------------------


def pinhole_camera(width: int, height: int, hfov_deg: float = DEFAULT_HFOV_DEG) -> CameraModel:
    """Return a distortion-free camera with square pixels and a horizontal field of view."""
    return pinhole_camera_focal(width, height, 0.5 * width / math.tan(math.radians(hfov_deg) / 2))


def pinhole_camera_focal(width: int, height: int, fx: float) -> CameraModel:
    """Return a distortion-free camera with square pixels and focal length ``fx`` (pixels)."""
    # Pixel centres sit at integer coordinates, so the image centre is (W-1)/2, (H-1)/2.
    K = [[fx, 0.0, (width - 1) / 2.0], [0.0, fx, (height - 1) / 2.0], [0.0, 0.0, 1.0]]
    return CameraModel(np.array(K), width, height, 'plumb_bob', np.zeros(5))


def _rot_x(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def _rot_y(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def _rot_z(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _body_from_optical() -> np.ndarray:
    # Columns: optical x (right) = -y_body, optical y (down) = -z_body, optical z = x_body.
    return np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])


def camera_pose(position: Sequence[float], yaw: float, pitch: float,
                roll: float = 0.0) -> np.ndarray:
    """
    Return ``T_world_cam`` (4x4) for an optical frame at ``position``.

    ``yaw`` is the heading in radians (0 looks along world +x, counter-clockwise positive),
    ``pitch`` > 0 looks up, ``roll`` rotates about the viewing direction.
    """
    T = np.eye(4)
    T[:3, :3] = _rot_z(yaw) @ _rot_y(-pitch) @ _rot_x(roll) @ _body_from_optical()
    T[:3, 3] = np.asarray(position, dtype=np.float64)
    return T


def lidar_mount(up: float = 0.2, back: float = 0.1) -> np.ndarray:
    """
    Return ``T_cam_lidar`` for a LiDAR ``up`` m above and ``back`` m behind the camera.

    The LiDAR axes (x forward, y left, z up) are aligned with the camera's viewing direction.
    """
    R_body_opt = _body_from_optical()
    T = np.eye(4)
    T[:3, :3] = R_body_opt.T
    T[:3, 3] = R_body_opt.T @ np.array([-back, 0.0, up])
    return T


# --------------------------------------------------------------------------------------------
# Materials and procedural textures
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Material:
    """
    Surface appearance: colours, a procedural texture and a LiDAR reflectivity.

    ``scale`` is the texture period in metres (brick length, tile size, window spacing, ...);
    ``params`` carries texture-specific numbers (the road uses the lane-line offset).
    """

    color: Vec3
    color2: Vec3 = (0.1, 0.1, 0.1)
    texture: str = 'plain'
    scale: float = 1.0
    reflectivity: float = 0.5
    seed: int = 0
    params: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if self.texture not in TEXTURES:
            raise ValueError(f'unknown texture {self.texture!r}; expected one of {TEXTURES}')
        object.__setattr__(self, 'color', _vec3(self.color))
        object.__setattr__(self, 'color2', _vec3(self.color2))


def _hash2(ix: np.ndarray, iy: np.ndarray, seed: int) -> np.ndarray:
    """Hash integer lattice coordinates to floats in [0, 1)."""
    # Integer mixing in uint32 (wrap-around is intended); deterministic across platforms.
    h = ix.astype(np.int32).astype(np.uint32) * np.uint32(0x8DA6B343)
    h ^= iy.astype(np.int32).astype(np.uint32) * np.uint32(0xD8163841)
    h ^= np.uint32((seed * 0x9E3779B1 + 0x7F4A7C15) & 0xFFFFFFFF)
    h ^= h >> np.uint32(15)
    h *= np.uint32(0x2C1B3C6D)
    h ^= h >> np.uint32(12)
    h *= np.uint32(0x297A2D39)
    h ^= h >> np.uint32(15)
    return (h >> np.uint32(8)).astype(_F32) * _F32(1.0 / 16777216.0)


def _value_noise(u: np.ndarray, v: np.ndarray, seed: int) -> np.ndarray:
    """Smooth value noise in [0, 1] with unit lattice spacing."""
    fu0, fv0 = np.floor(u), np.floor(v)
    iu, iv = fu0.astype(np.int32), fv0.astype(np.int32)
    fu, fv = u - fu0, v - fv0
    su, sv = fu * fu * (3.0 - 2.0 * fu), fv * fv * (3.0 - 2.0 * fv)
    a, b = _hash2(iu, iv, seed), _hash2(iu + 1, iv, seed)
    c, d = _hash2(iu, iv + 1, seed), _hash2(iu + 1, iv + 1, seed)
    top = a + (b - a) * su
    bottom = c + (d - c) * su
    return top + (bottom - top) * sv


def _fbm(u: np.ndarray, v: np.ndarray, seed: int, octaves: int = 3) -> np.ndarray:
    """Fractal sum of value noise, normalized to [0, 1]."""
    total = np.zeros_like(u)
    amplitude, norm = 0.5, 0.0
    for k in range(octaves):
        f = float(2 ** k)
        # The offset stops the octaves' lattices from lining up at the origin.
        total += amplitude * _value_noise(u * f + 17.31 * k, v * f - 5.7 * k, seed + k)
        norm += amplitude
        amplitude *= 0.5
    return total / norm


def _mix(c1: Vec3, c2: Vec3, f: np.ndarray) -> np.ndarray:
    a = np.asarray(c1, dtype=_F32)
    b = np.asarray(c2, dtype=_F32)
    return a + (b - a) * f[:, None]


def _tex_plain(m: Material, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.broadcast_to(np.asarray(m.color, dtype=_F32), (u.size, 3)).copy()


def _tex_checker(m: Material, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    f = (np.floor(u / m.scale) + np.floor(v / m.scale)) % 2.0
    return _mix(m.color, m.color2, f)


def _tex_stripes(m: Material, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    # Two stripe widths per period read as wallpaper / awning stripes.
    f = (_fract(u / m.scale) < 0.35).astype(_F32)
    return _mix(m.color, m.color2, f)


def _tex_noise(m: Material, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    f = np.clip((_fbm(u / m.scale, v / m.scale, m.seed) - 0.5) * 2.2 + 0.5, 0.0, 1.0)
    return _mix(m.color, m.color2, f)


def _fract(x: np.ndarray) -> np.ndarray:
    return x - np.floor(x)


def _masonry(m: Material, u: np.ndarray, v: np.ndarray, length: float, height: float,
             joint: float, stagger: float, variation: float) -> np.ndarray:
    """Shade a grid of cells (bricks or tiles) separated by joints drawn in ``color2``."""
    rv = v / height
    row = np.floor(rv)
    ru = u / length + stagger * (row % 2.0)
    col = np.floor(ru)
    joints = ((ru - col) * length < joint) | ((rv - row) * height < joint)
    shade = (1.0 - variation) + 2.0 * variation * _hash2(col, row, m.seed)
    out = np.asarray(m.color, dtype=_F32) * shade[:, None]
    out[joints] = m.color2
    return out


def _tex_bricks(m: Material, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return _masonry(m, u, v, m.scale, 0.4 * m.scale, 0.03 * m.scale, 0.5, 0.2)


def _tex_tiles(m: Material, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return _masonry(m, u, v, m.scale, m.scale, 0.04 * m.scale, 0.0, 0.07)


def _tex_planks(m: Material, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    width, length = m.scale, 6.0 * m.scale
    rv = v / width
    row = np.floor(rv)
    ru = u / length + _hash2(row, np.full_like(row, 7.0), m.seed)  # staggered plank ends
    col = np.floor(ru)
    seams = ((ru - col) * length < 0.01) | ((rv - row) * width < 0.008)
    # Grain: noise stretched along the plank.
    grain = _value_noise(u * (1.5 / m.scale), v * (14.0 / m.scale), m.seed + 3)
    shade = (0.78 + 0.4 * _hash2(col, row, m.seed)) * (0.85 + 0.3 * grain)
    out = np.asarray(m.color, dtype=_F32) * shade[:, None]
    out[seams] = m.color2
    return out


def _tex_windows(m: Material, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Facade: a regular grid of windows, one row per storey (``v`` is height above ground)."""
    bay, storey = m.scale, 1.15 * m.scale
    cu, cv = u / bay, v / storey
    fu, fv = _fract(cu), _fract(cv)
    window = (fu > 0.22) & (fu < 0.78) & (fv > 0.3) & (fv < 0.85) & (v > 0.8)
    stain = 0.88 + 0.24 * _value_noise(u * 0.3, v * 0.3, m.seed)
    wall = np.asarray(m.color, dtype=_F32) * stain[:, None]
    glass = np.asarray(m.color2, dtype=_F32) * (
        0.6 + 0.8 * _hash2(np.floor(cu), np.floor(cv), m.seed))[:, None]
    return np.where(window[:, None], glass, wall)


def _tex_road(m: Material, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Asphalt with a dashed centre line at v=0 and solid lines at ``|v| = params[0]``."""
    asphalt = _mix(m.color, m.color2, _fbm(u * 1.3, v * 1.3, m.seed, 2))
    line = m.params[0] if m.params else 3.0
    centre = (np.abs(v) < 0.07) & (_fract(u / 9.0) < 0.4)
    side = np.abs(np.abs(v) - line) < 0.06
    asphalt[centre | side] = (0.86, 0.86, 0.8)
    return asphalt


_TEXTURE_FUNCS: dict[str, Callable[[Material, np.ndarray, np.ndarray], np.ndarray]] = {
    'plain': _tex_plain, 'checker': _tex_checker, 'stripes': _tex_stripes, 'noise': _tex_noise,
    'bricks': _tex_bricks, 'tiles': _tex_tiles, 'planks': _tex_planks,
    'windows': _tex_windows, 'road': _tex_road,
}
TEXTURES = tuple(sorted(_TEXTURE_FUNCS))


# --------------------------------------------------------------------------------------------
# Primitives: each gives the ray distance (inf for a miss), then normals and surface (u, v)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rect:
    """
    Rectangle with centre and two orthogonal edge vectors (full lengths); or an infinite plane.

    Surface coordinates are metres along the two edges from the centre.
    """

    center: Vec3
    edge_u: Vec3
    edge_v: Vec3
    material: Material
    infinite: bool = False

    def __post_init__(self) -> None:
        for name in ('center', 'edge_u', 'edge_v'):
            object.__setattr__(self, name, _vec3(getattr(self, name)))

    @cached_property
    def _frame(self) -> tuple:
        eu, ev = np.array(self.edge_u), np.array(self.edge_v)
        lu, lv = float(np.linalg.norm(eu)), float(np.linalg.norm(ev))
        n = np.cross(eu, ev)
        n /= np.linalg.norm(n)
        return _vec3(eu / lu), _vec3(ev / lv), _vec3(n), 0.5 * lu, 0.5 * lv

    def bound(self) -> tuple[Vec3, float] | None:
        """Return a bounding sphere (centre, radius), or None when unbounded."""
        if self.infinite:
            return None
        _, _, _, hu, hv = self._frame
        return self.center, math.hypot(hu, hv)

    def intersect(self, o: tuple, d: tuple) -> np.ndarray:
        """Return the distance along each ray to the surface (inf for a miss)."""
        au, av, n, hu, hv = self._frame
        c = self.center
        rel = (o[0] - c[0], o[1] - c[1], o[2] - c[2])
        with np.errstate(divide='ignore', invalid='ignore'):
            t = -_dot(n, *rel) / _dot(n, *d)
            ok = t > _EPS
            if not self.infinite:
                u = _dot(au, *rel) + t * _dot(au, *d)
                v = _dot(av, *rel) + t * _dot(av, *d)
                ok &= (np.abs(u) <= hu) & (np.abs(v) <= hv)
        return np.where(ok, t, np.inf)

    def surface(self, p: tuple) -> tuple:
        """Return (normal components, u, v) at surface points ``p``."""
        au, av, n, _, _ = self._frame
        rel = (p[0] - self.center[0], p[1] - self.center[1], p[2] - self.center[2])
        ones = np.ones_like(p[0])
        return (n[0] * ones, n[1] * ones, n[2] * ones), _dot(au, *rel), _dot(av, *rel)

    def contains(self, points: np.ndarray, margin: float = 0.0) -> np.ndarray:
        """Return False for every point: a rectangle has no interior."""
        return np.zeros(len(points), dtype=bool)


@dataclass(frozen=True)
class Box:
    """
    Box with centre, full size (x, y, z) and a rotation ``yaw`` (radians) about world z.

    Surface coordinates: top/bottom faces use the box's local (x, y); side faces use the
    horizontal coordinate along the face and the height above the world origin.
    """

    center: Vec3
    size: Vec3
    material: Material
    yaw: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, 'center', _vec3(self.center))
        object.__setattr__(self, 'size', _vec3(self.size))
        object.__setattr__(self, 'yaw', float(self.yaw))

    def bound(self) -> tuple[Vec3, float] | None:
        """Return a bounding sphere (centre, radius)."""
        return self.center, 0.5 * math.sqrt(sum(s * s for s in self.size))

    def _local(self, p: tuple) -> tuple:
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        rx, ry = p[0] - self.center[0], p[1] - self.center[1]
        return c * rx + s * ry, c * ry - s * rx, p[2] - self.center[2]

    def _local_dir(self, d: tuple) -> tuple:
        if self.yaw == 0.0:
            return d
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        return c * d[0] + s * d[1], c * d[1] - s * d[0], d[2]

    def intersect(self, o: tuple, d: tuple) -> np.ndarray:
        """Return the distance along each ray to the surface (inf for a miss)."""
        lo = self._local(o)
        ld = self._local_dir(d)
        t_near, t_far = None, None
        with np.errstate(divide='ignore', invalid='ignore', over='ignore'):
            for k in range(3):
                h = 0.5 * self.size[k]
                inv = 1.0 / ld[k]
                t1, t2 = (-h - lo[k]) * inv, (h - lo[k]) * inv
                a, b = np.minimum(t1, t2), np.maximum(t1, t2)
                t_near = a if t_near is None else np.maximum(t_near, a)
                t_far = b if t_far is None else np.minimum(t_far, b)
            # A ray starting inside the box reports its exit point.
            t = np.where(t_near > _EPS, t_near, t_far)
            ok = (t_near <= t_far) & (t > _EPS)
        return np.where(ok, t, np.inf)

    def surface(self, p: tuple) -> tuple:
        """Return (normal components, u, v) at surface points ``p``."""
        q = self._local(p)
        gap = np.stack([0.5 * self.size[k] - np.abs(q[k]) for k in range(3)])
        face = np.argmin(gap, axis=0)
        nl = [np.where(face == k, np.sign(q[k]), 0.0).astype(_F32) for k in range(3)]
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        normal = (c * nl[0] - s * nl[1], s * nl[0] + c * nl[1], nl[2])
        u = np.where(face == 0, q[1], q[0])
        v = np.where(face == 2, q[1], p[2])
        return normal, u, v

    def contains(self, points: np.ndarray, margin: float = 0.0) -> np.ndarray:
        """Return whether each point (N, 3) lies inside the box grown by ``margin``."""
        q = self._local((points[:, 0], points[:, 1], points[:, 2]))
        inside = np.ones(len(points), dtype=bool)
        for k in range(3):
            inside &= np.abs(q[k]) <= 0.5 * self.size[k] + margin
        return inside


@dataclass(frozen=True)
class Sphere:
    """Sphere; surface coordinates are longitude and latitude arc lengths in metres."""

    center: Vec3
    radius: float
    material: Material

    def __post_init__(self) -> None:
        object.__setattr__(self, 'center', _vec3(self.center))
        object.__setattr__(self, 'radius', float(self.radius))

    def bound(self) -> tuple[Vec3, float] | None:
        """Return a bounding sphere (centre, radius)."""
        return self.center, self.radius

    def intersect(self, o: tuple, d: tuple) -> np.ndarray:
        """Return the distance along each ray to the surface (inf for a miss)."""
        c = self.center
        oc = (o[0] - c[0], o[1] - c[1], o[2] - c[2])
        b = _dot(oc, *d)
        disc = b * b - (_dot(oc, *oc) - self.radius ** 2)
        with np.errstate(invalid='ignore'):
            sq = np.sqrt(disc)
        t0, t1 = -b - sq, -b + sq
        t = np.where(t0 > _EPS, t0, t1)
        return np.where((disc >= 0.0) & (t > _EPS), t, np.inf)

    def surface(self, p: tuple) -> tuple:
        """Return (normal components, u, v) at surface points ``p``."""
        r = self.radius
        n = tuple((p[k] - self.center[k]) / r for k in range(3))
        u = np.arctan2(n[1], n[0]) * r
        v = np.arcsin(np.clip(n[2], -1.0, 1.0)) * r
        return n, u, v

    def contains(self, points: np.ndarray, margin: float = 0.0) -> np.ndarray:
        """Return whether each point (N, 3) lies inside the sphere grown by ``margin``."""
        return np.linalg.norm(points - np.array(self.center), axis=1) <= self.radius + margin


@dataclass(frozen=True)
class Cylinder:
    """
    Vertical cylinder standing on ``base`` (x, y, z) with a top cap; open at the bottom.

    Surface coordinates: arc length around the axis and height on the side; (x, y) offsets
    from the axis on the cap.
    """

    base: Vec3
    radius: float
    height: float
    material: Material

    def __post_init__(self) -> None:
        object.__setattr__(self, 'base', _vec3(self.base))
        object.__setattr__(self, 'radius', float(self.radius))
        object.__setattr__(self, 'height', float(self.height))

    def bound(self) -> tuple[Vec3, float] | None:
        """Return a bounding sphere (centre, radius)."""
        x, y, z = self.base
        return (x, y, z + 0.5 * self.height), math.hypot(self.radius, 0.5 * self.height)

    def intersect(self, o: tuple, d: tuple) -> np.ndarray:
        """Return the distance along each ray to the surface (inf for a miss)."""
        bx, by, bz = self.base
        top = bz + self.height
        ox, oy = o[0] - bx, o[1] - by
        with np.errstate(divide='ignore', invalid='ignore'):
            a = d[0] * d[0] + d[1] * d[1]
            b = ox * d[0] + oy * d[1]
            disc = b * b - a * (ox * ox + oy * oy - self.radius ** 2)
            t_side = (-b - np.sqrt(disc)) / a
            z = o[2] + t_side * d[2]
            ok = (disc >= 0.0) & (t_side > _EPS) & (z >= bz) & (z <= top)
            t_side = np.where(ok, t_side, np.inf)
            t_cap = (top - o[2]) / d[2]
            hx, hy = ox + t_cap * d[0], oy + t_cap * d[1]
            ok_cap = (t_cap > _EPS) & (hx * hx + hy * hy <= self.radius ** 2)
        return np.minimum(t_side, np.where(ok_cap, t_cap, np.inf))

    def surface(self, p: tuple) -> tuple:
        """Return (normal components, u, v) at surface points ``p``."""
        bx, by, bz = self.base
        rx, ry = p[0] - bx, p[1] - by
        radial = np.sqrt(rx * rx + ry * ry)
        cap = np.abs(p[2] - (bz + self.height)) < np.abs(radial - self.radius)
        inv_r = 1.0 / self.radius
        normal = (np.where(cap, 0.0, rx * inv_r).astype(_F32),
                  np.where(cap, 0.0, ry * inv_r).astype(_F32),
                  cap.astype(_F32))
        u = np.where(cap, rx, np.arctan2(ry, rx) * self.radius)
        v = np.where(cap, ry, p[2])
        return normal, u, v

    def contains(self, points: np.ndarray, margin: float = 0.0) -> np.ndarray:
        """Return whether each point (N, 3) lies inside the cylinder grown by ``margin``."""
        bx, by, bz = self.base
        radial = np.hypot(points[:, 0] - bx, points[:, 1] - by)
        z = points[:, 2]
        return ((radial <= self.radius + margin) & (z >= bz - margin)
                & (z <= bz + self.height + margin))


Primitive = Rect | Box | Sphere | Cylinder


# --------------------------------------------------------------------------------------------
# Scenes
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lighting:
    """
    Ambient + directional sun + point lights, all Lambertian.

    ``sun_direction`` points from the scene toward the sun (world frame).
    """

    ambient: float = 0.4
    ambient_color: Vec3 = (1.0, 1.0, 1.0)
    sun_direction: Vec3 | None = None
    sun_intensity: float = 0.0
    sun_color: Vec3 = (1.0, 1.0, 1.0)
    point_lights: tuple[Vec3, ...] = ()
    point_intensity: float = 0.0
    point_falloff: float = 3.0
    shadows: bool = True


@dataclass(frozen=True)
class SceneLayout:
    """
    Where cameras may go in a generated scene, and the nominal track of a sequence.

    ``bounds`` (xmin, ymin, xmax, ymax) and ``ceiling`` bound the free space; indoor tracks
    are ellipses (``track_center``, ``track_radii``); outdoor tracks follow ``lane_y``.
    """

    bounds: tuple[float, float, float, float]
    ceiling: float
    track_center: tuple[float, float] = (0.0, 0.0)
    track_radii: tuple[float, float] = (0.0, 0.0)
    lane_y: float = 0.0
    road_half_width: float = 0.0
    sidewalk_width: float = 0.0


@dataclass(frozen=True, eq=False)
class Scene:
    """A static world: primitives, lighting, sky colours and distance fog."""

    primitives: tuple[Primitive, ...]
    kind: str = 'custom'
    lighting: Lighting = Lighting()
    sky_zenith: Vec3 = (0.35, 0.55, 0.85)
    sky_horizon: Vec3 = (0.82, 0.86, 0.92)
    fog_distance: float = math.inf
    layout: SceneLayout | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, 'primitives', tuple(self.primitives))


def _rand_color(rng: np.random.Generator, base: Sequence[float], jitter: float = 0.08) -> Vec3:
    c = np.clip(np.asarray(base) + rng.uniform(-jitter, jitter, 3), 0.02, 0.98)
    return _vec3(c)


def _pick_material(rng: np.random.Generator, options: list, reflectivity: float) -> Material:
    """Draw one material from ``(texture, colour, colour2, (scale_lo, scale_hi))`` options."""
    texture, c1, c2, scale = options[int(rng.integers(len(options)))]
    return Material(_rand_color(rng, c1), _rand_color(rng, c2, 0.05), texture,
                    float(rng.uniform(*scale)), reflectivity, int(rng.integers(1 << 30)))


_FLOORS = [
    ('tiles', (0.75, 0.72, 0.66), (0.35, 0.33, 0.3), (0.3, 0.6)),
    ('planks', (0.55, 0.38, 0.22), (0.2, 0.13, 0.08), (0.12, 0.22)),
    ('checker', (0.8, 0.8, 0.78), (0.2, 0.2, 0.22), (0.3, 0.5)),
    ('noise', (0.45, 0.42, 0.4), (0.62, 0.6, 0.56), (0.4, 1.2)),
]
_WALLS = [
    ('bricks', (0.62, 0.3, 0.22), (0.78, 0.76, 0.7), (0.22, 0.3)),
    ('stripes', (0.82, 0.78, 0.66), (0.6, 0.66, 0.7), (0.15, 0.4)),
    ('noise', (0.78, 0.76, 0.72), (0.58, 0.6, 0.62), (0.5, 1.5)),
    ('tiles', (0.72, 0.8, 0.82), (0.5, 0.55, 0.56), (0.15, 0.3)),
    ('checker', (0.7, 0.74, 0.62), (0.5, 0.56, 0.48), (0.5, 1.0)),
]
_CEILINGS = [
    ('tiles', (0.88, 0.88, 0.86), (0.6, 0.6, 0.6), (0.5, 0.7)),
    ('noise', (0.86, 0.86, 0.84), (0.72, 0.72, 0.7), (0.8, 2.0)),
]
_FURNITURE = [
    ('planks', (0.5, 0.34, 0.2), (0.25, 0.16, 0.1), (0.08, 0.15)),
    ('plain', (0.3, 0.35, 0.55), (0.2, 0.2, 0.2), (1.0, 1.0)),
    ('noise', (0.55, 0.2, 0.18), (0.35, 0.12, 0.1), (0.1, 0.3)),
    ('checker', (0.85, 0.85, 0.8), (0.25, 0.45, 0.3), (0.1, 0.25)),
    ('stripes', (0.9, 0.75, 0.3), (0.3, 0.25, 0.2), (0.08, 0.2)),
    ('plain', (0.7, 0.7, 0.68), (0.2, 0.2, 0.2), (1.0, 1.0)),
]
_FACADES = [
    ('windows', (0.72, 0.66, 0.58), (0.15, 0.2, 0.28), (2.6, 3.6)),
    ('windows', (0.55, 0.3, 0.24), (0.12, 0.16, 0.22), (2.4, 3.2)),
    ('windows', (0.82, 0.82, 0.8), (0.2, 0.28, 0.36), (2.8, 4.0)),
    ('bricks', (0.6, 0.32, 0.24), (0.75, 0.72, 0.66), (0.22, 0.28)),
    ('noise', (0.62, 0.62, 0.6), (0.45, 0.45, 0.44), (1.0, 3.0)),
]
_FURNITURE_SIZES = [  # (width, depth, height) ranges: shelf, cabinet, table, crate, sofa
    ((0.8, 1.6), (0.3, 0.45), (1.5, 2.2)),
    ((0.6, 1.2), (0.4, 0.6), (0.7, 1.1)),
    ((0.8, 1.6), (0.6, 0.9), (0.7, 0.8)),
    ((0.3, 0.7), (0.3, 0.7), (0.3, 0.7)),
    ((1.6, 2.2), (0.8, 0.95), (0.7, 0.9)),
]


def _rect_distance(points: np.ndarray, center: Sequence[float], half: Sequence[float],
                   yaw: float) -> np.ndarray:
    """Distance from 2-D points (P, 2) to a yaw-rotated rectangle (0 inside)."""
    c, s = math.cos(yaw), math.sin(yaw)
    rx, ry = points[:, 0] - center[0], points[:, 1] - center[1]
    qx = np.maximum(np.abs(c * rx + s * ry) - half[0], 0.0)
    qy = np.maximum(np.abs(c * ry - s * rx) - half[1], 0.0)
    return np.hypot(qx, qy)


def _rect_corners(center: Sequence[float], half: Sequence[float], yaw: float) -> np.ndarray:
    c, s = math.cos(yaw), math.sin(yaw)
    local = np.array([[1, 1], [1, -1], [-1, -1], [-1, 1]]) * np.asarray(half)
    return local @ np.array([[c, s], [-s, c]]) + np.asarray(center)


def _footprints_overlap(a: tuple, b: tuple, margin: float) -> bool:
    """Separating-axis test for two yaw-rotated rectangles ``(center, half, yaw)``."""
    ca, cb = _rect_corners(*a), _rect_corners(*b)
    for yaw in (a[2], b[2]):
        for axis in (np.array([math.cos(yaw), math.sin(yaw)]),
                     np.array([-math.sin(yaw), math.cos(yaw)])):
            pa, pb = ca @ axis, cb @ axis
            if pa.max() + margin < pb.min() or pb.max() + margin < pa.min():
                return False
    return True


def _ellipse_points(center: Sequence[float], radii: Sequence[float], n: int = 96) -> np.ndarray:
    a = np.linspace(0.0, 2.0 * math.pi, n, endpoint=False)
    return np.stack([center[0] + radii[0] * np.cos(a), center[1] + radii[1] * np.sin(a)], 1)


@dataclass
class _Placer:
    """Rejection sampler for furniture footprints in a room, keeping a walking track clear."""

    size: tuple[float, float]
    track: np.ndarray
    clearance: float
    footprints: list

    def fits(self, center: Sequence[float], half: Sequence[float], yaw: float) -> bool:
        corners = _rect_corners(center, half, yaw)
        if (corners.min() < 0.02 or corners[:, 0].max() > self.size[0] - 0.02
                or corners[:, 1].max() > self.size[1] - 0.02):
            return False
        if _rect_distance(self.track, center, half, yaw).min() < self.clearance:
            return False
        fp = (tuple(center), tuple(half), yaw)
        return not any(_footprints_overlap(fp, other, 0.05) for other in self.footprints)

    def add(self, center: Sequence[float], half: Sequence[float], yaw: float) -> None:
        self.footprints.append((tuple(center), tuple(half), yaw))


def _room_shell(rng: np.random.Generator, lx: float, ly: float, lz: float) -> list:
    """Floor, ceiling and four walls; they overlap by 2 cm so corners have no cracks."""
    e = 0.04
    floor = _pick_material(rng, _FLOORS, 0.3)
    ceiling = _pick_material(rng, _CEILINGS, 0.6)
    wall = _pick_material(rng, _WALLS, 0.5)
    # One accent wall in a different material half of the time.
    accent = _pick_material(rng, _WALLS, 0.5) if rng.random() < 0.5 else wall
    return [
        Rect((lx / 2, ly / 2, 0.0), (lx + e, 0, 0), (0, ly + e, 0), floor),
        Rect((lx / 2, ly / 2, lz), (lx + e, 0, 0), (0, ly + e, 0), ceiling),
        Rect((0.0, ly / 2, lz / 2), (0, ly + e, 0), (0, 0, lz + e), wall),
        Rect((lx, ly / 2, lz / 2), (0, ly + e, 0), (0, 0, lz + e), accent),
        Rect((lx / 2, 0.0, lz / 2), (lx + e, 0, 0), (0, 0, lz + e), wall),
        Rect((lx / 2, ly, lz / 2), (lx + e, 0, 0), (0, 0, lz + e), wall),
    ]


def _furniture_pose(rng: np.random.Generator, lx: float, ly: float, w: float,
                    d: float) -> tuple[tuple[float, float], float]:
    """Sample a footprint centre and yaw: against a random wall, or free-standing."""
    if rng.random() < 0.35:
        return (rng.uniform(0.8, lx - 0.8), rng.uniform(0.8, ly - 0.8)), rng.uniform(0, math.pi)
    wall = int(rng.integers(4))
    gap = d / 2 + 0.03
    if wall < 2:  # walls x = 0 and x = lx: the box's width runs along y
        s = rng.uniform(w / 2 + 0.05, ly - w / 2 - 0.05)
        return ((gap if wall == 0 else lx - gap), s), math.pi / 2
    s = rng.uniform(w / 2 + 0.05, lx - w / 2 - 0.05)
    return (s, (gap if wall == 2 else ly - gap)), 0.0


def _furnish(rng: np.random.Generator, placer: _Placer, lx: float, ly: float,
             lz: float) -> list:
    prims: list = []
    target = int(rng.integers(4, 9))
    for _ in range(60):
        if len(placer.footprints) >= target:
            break
        sw, sd, sh = _FURNITURE_SIZES[int(rng.integers(len(_FURNITURE_SIZES)))]
        w, d, h = rng.uniform(*sw), rng.uniform(*sd), rng.uniform(*sh)
        center, yaw = _furniture_pose(rng, lx, ly, w, d)
        if not placer.fits(center, (w / 2, d / 2), yaw):
            continue
        placer.add(center, (w / 2, d / 2), yaw)
        mat = _pick_material(rng, _FURNITURE, 0.5)
        prims.append(Box((center[0], center[1], h / 2), (w, d, h), mat, yaw))
        if h < 1.2 and rng.random() < 0.5:
            # Something on top: a ball or a small box, within the top face.
            r = rng.uniform(0.07, min(0.2, d / 2))
            off = rng.uniform(-1, 1) * max(w / 2 - r, 0.0)
            cx = center[0] + off * math.cos(yaw)
            cy = center[1] + off * math.sin(yaw)
            top = _pick_material(rng, _FURNITURE, 0.6)
            if rng.random() < 0.5:
                prims.append(Sphere((cx, cy, h + r), r, top))
            else:
                prims.append(Box((cx, cy, h + r), (2 * r, 2 * r, 2 * r), top,
                                 yaw + rng.uniform(-0.5, 0.5)))
    return prims


def _free_round(rng: np.random.Generator, placer: _Placer,
                radius: float) -> tuple[float, float] | None:
    for _ in range(20):
        c = (rng.uniform(radius + 0.05, placer.size[0] - radius - 0.05),
             rng.uniform(radius + 0.05, placer.size[1] - radius - 0.05))
        if placer.fits(c, (radius, radius), 0.0):
            placer.add(c, (radius, radius), 0.0)
            return c
    return None


def _indoor_scene(seed: int) -> Scene:
    rng = np.random.default_rng([seed, 101])
    lx, ly, lz = rng.uniform(5.0, 10.0), rng.uniform(5.0, 9.0), rng.uniform(2.6, 3.6)
    track_c, track_r = (lx / 2, ly / 2), (lx / 2 - 1.3, ly / 2 - 1.3)
    placer = _Placer((lx, ly), _ellipse_points(track_c, track_r), 0.6, [])
    prims = _room_shell(rng, lx, ly, lz) + _furnish(rng, placer, lx, ly, lz)
    for _ in range(int(rng.integers(2, 5))):
        r = rng.uniform(0.12, 0.4)
        c = _free_round(rng, placer, r)
        if c is not None:
            prims.append(Sphere((c[0], c[1], r), r, _pick_material(rng, _FURNITURE, 0.6)))
    if rng.random() < 0.4:
        r = rng.uniform(0.15, 0.3)
        c = _free_round(rng, placer, r)
        if c is not None:
            prims.append(Cylinder((c[0], c[1], 0.0), r, lz,
                                  _pick_material(rng, _WALLS[2:3] + _CEILINGS, 0.5)))
    n_lights = int(rng.integers(1, 3))
    lights = tuple((float(rng.uniform(1.0, lx - 1.0)), float(rng.uniform(1.0, ly - 1.0)),
                    lz - 0.1) for _ in range(n_lights))
    lighting = Lighting(ambient=float(rng.uniform(0.3, 0.42)), point_lights=lights,
                        point_intensity=float(rng.uniform(1.0, 1.4)) / math.sqrt(n_lights),
                        point_falloff=float(rng.uniform(2.5, 4.0)))
    layout = SceneLayout((0.0, 0.0, lx, ly), lz, track_c, track_r)
    return Scene(tuple(prims), 'indoor', lighting, (0.8, 0.8, 0.8), (0.8, 0.8, 0.8),
                 float(rng.uniform(40.0, 80.0)), layout, seed)


def _buildings(rng: np.random.Generator, side: int, y0: float, x0: float,
               x1: float) -> list:
    """Facades as boxes along one side of the street (``side`` = +1 left, -1 right)."""
    prims = []
    x = x0
    while x < x1:
        w = rng.uniform(8.0, 25.0)
        if rng.random() < 0.35:
            x += rng.uniform(2.0, 8.0)  # a gap between buildings (alley)
        setback = rng.uniform(0.0, 3.0) if rng.random() < 0.5 else 0.0
        depth, height = rng.uniform(10.0, 20.0), rng.uniform(6.0, 30.0)
        y = side * (y0 + setback + depth / 2)
        prims.append(Box((x + w / 2, y, height / 2), (w, depth, height),
                         _pick_material(rng, _FACADES, 0.45)))
        x += w
    return prims


def _parked_cars(rng: np.random.Generator, side: int, y: float, x0: float,
                 x1: float) -> list:
    prims = []
    x = x0 + rng.uniform(0.0, 6.0)
    while x < x1:
        if rng.random() < 0.6:
            paint = Material(_rand_color(rng, rng.uniform(0.1, 0.85, 3), 0.0),
                             reflectivity=0.8)
            glass = Material(_rand_color(rng, (0.12, 0.14, 0.17), 0.03), reflectivity=0.2)
            yaw = rng.uniform(-0.04, 0.04)
            length = rng.uniform(3.9, 4.8)
            prims.append(Box((x, side * y, 0.55), (length, 1.8, 1.0), paint, yaw))
            prims.append(Box((x - 0.2, side * y, 1.28), (0.55 * length, 1.6, 0.46), glass,
                             yaw))
        x += rng.uniform(5.5, 9.0)
    return prims


def _street_furniture(rng: np.random.Generator, side: int, hw: float, sw: float,
                      x0: float, x1: float) -> list:
    """Poles near the kerb, trees and bushes further back on the sidewalk."""
    prims = []
    metal = Material(_rand_color(rng, (0.35, 0.36, 0.38)), reflectivity=0.7)
    bark = Material((0.3, 0.22, 0.15), (0.2, 0.14, 0.1), 'noise', 0.3, 0.3, 11)
    leaves = Material(_rand_color(rng, (0.22, 0.42, 0.16)), (0.1, 0.25, 0.08), 'noise', 0.35,
                      0.4, int(rng.integers(1 << 30)))
    x = x0 + rng.uniform(0.0, 20.0)
    while x < x1:
        prims.append(Cylinder((x, side * (hw + 0.4), 0.15), rng.uniform(0.07, 0.14),
                              rng.uniform(4.0, 8.0), metal))
        x += rng.uniform(15.0, 30.0)
    x = x0 + rng.uniform(0.0, 15.0)
    while x < x1:
        y = side * (hw + sw - rng.uniform(0.8, 1.2))
        if rng.random() < 0.6:
            trunk = rng.uniform(2.2, 3.0)
            crown = rng.uniform(1.0, min(1.8, sw - 0.3))
            prims.append(Cylinder((x, y, 0.15), rng.uniform(0.12, 0.2), trunk, bark))
            prims.append(Sphere((x, y, 0.15 + trunk + 0.6 * crown), crown, leaves))
        else:
            r = rng.uniform(0.4, 0.8)
            prims.append(Sphere((x, y, 0.15 + 0.6 * r), r, leaves))
        x += rng.uniform(8.0, 22.0)
    return prims


def _outdoor_scene(seed: int, length: float) -> Scene:
    rng = np.random.default_rng([seed, 202])
    hw, sw = rng.uniform(4.7, 6.0), rng.uniform(2.8, 4.5)
    line = hw - 2.2  # parking lane on each side, 2.2 m wide
    x0, x1 = -40.0, length + 120.0
    road = Material((0.3, 0.3, 0.31), (0.42, 0.41, 0.4), 'road', 1.0, 0.15,
                    int(rng.integers(1 << 30)), (line,))
    paving = _pick_material(rng, [('tiles', (0.62, 0.6, 0.56), (0.4, 0.38, 0.36), (0.3, 0.8))],
                            0.35)
    span = x1 - x0 + 400.0
    prims: list = [Rect(((x0 + x1) / 2, 0.0, 0.0), (span, 0, 0), (0, 300.0, 0), road)]
    for side in (1, -1):
        prims.append(Box(((x0 + x1) / 2, side * (hw + sw / 2), 0.075), (span, sw, 0.15),
                         paving))
        prims += _buildings(rng, side, hw + sw, x0 - 20.0, x1 + 20.0)
        prims += _parked_cars(rng, side, hw - 1.1, x0, x1)
        prims += _street_furniture(rng, side, hw, sw, x0, x1)
    elevation, azimuth = math.radians(rng.uniform(25, 65)), rng.uniform(0, 2 * math.pi)
    sun = (math.cos(elevation) * math.cos(azimuth), math.cos(elevation) * math.sin(azimuth),
           math.sin(elevation))
    lighting = Lighting(ambient=float(rng.uniform(0.35, 0.45)),
                        ambient_color=(0.9, 0.95, 1.08), sun_direction=sun,
                        sun_intensity=float(rng.uniform(0.7, 0.9)), sun_color=(1.0, 0.96, 0.86))
    zenith = _rand_color(rng, (0.32, 0.5, 0.85), 0.06)
    horizon = _rand_color(rng, (0.8, 0.85, 0.9), 0.04)
    layout = SceneLayout((x0, -(hw + sw), x1, hw + sw), 8.0, (0.0, 0.0), (0.0, 0.0),
                         -line / 2, hw, sw)
    return Scene(tuple(prims), 'outdoor', lighting, zenith, horizon,
                 float(rng.uniform(150.0, 350.0)), layout, seed)


def make_scene(kind: str, seed: int, length: float = 120.0) -> Scene:
    """
    Generate a random ``'indoor'`` room or ``'outdoor'`` street from ``seed``.

    ``length`` is the street length in metres the outdoor scene must cover (ignored indoors).
    """
    if kind == 'indoor':
        return _indoor_scene(seed)
    if kind == 'outdoor':
        return _outdoor_scene(seed, length)
    raise ValueError(f"kind must be 'indoor' or 'outdoor', not {kind!r}")


# --------------------------------------------------------------------------------------------
# Ray casting (shared by the camera and the LiDAR)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class RayHits:
    """
    Nearest hits of N rays: ``t`` (inf for a miss), ``primitive`` index (-1 for a miss).

    ``points``, ``normals`` (unit, facing the incoming ray) and surface ``uv`` are zero for
    misses.
    """

    t: np.ndarray
    primitive: np.ndarray
    points: np.ndarray
    normals: np.ndarray
    uv: np.ndarray


def _pad(x, m: int):
    if isinstance(x, np.ndarray) and x.size != m:
        return np.concatenate([x, np.repeat(x[-1:], m - x.size)])
    return x


def _chunk_cones(o: tuple, d: tuple, chunk: int) -> tuple:
    """Bound each group of ``chunk`` rays by an origin ball and a direction cone."""
    k = d[0].size // chunk
    dk = [x.reshape(k, chunk) for x in d]
    axis = np.stack([x.sum(axis=1) for x in dk], axis=1)
    axis /= np.maximum(np.linalg.norm(axis, axis=1, keepdims=True), 1e-12)
    cos_min = _dot(axis.T[:, :, None], *dk).min(axis=1)
    # Small slack absorbs float32 rounding in the cone angle.
    half = np.arccos(np.clip(cos_min, -1.0, 1.0)) + 2e-3
    if isinstance(o[0], np.ndarray):
        ok = [x.reshape(k, chunk) for x in o]
        centre = np.stack([x.mean(axis=1) for x in ok], axis=1)
        spread = sum((ok[j] - centre[:, j:j + 1]) ** 2 for j in range(3))
        rho = np.sqrt(spread.max(axis=1))
    else:
        centre = np.broadcast_to(np.asarray(o, dtype=_F32), (k, 3))
        rho = np.zeros(k, dtype=_F32)
    return axis, half, centre, rho


def _front_to_back(prims: Sequence[Primitive], origin: np.ndarray) -> list:
    """Order primitives by nearest possible distance so occlusion culling bites early."""
    keys = []
    for i, p in enumerate(prims):
        b = p.bound()
        key = -math.inf if b is None else float(np.linalg.norm(np.asarray(b[0]) - origin)) - b[1]
        keys.append((key, i))
    return [i for _, i in sorted(keys)]


def _nearest(prims: Sequence[Primitive], o: tuple, d: tuple, t_max=None,
             chunk: int = _CHUNK) -> tuple[np.ndarray, np.ndarray]:
    """
    Return (distance, primitive index) of the nearest hit per ray; misses give (inf, -1).

    Rays are processed in consecutive groups of ``chunk``; a primitive is tested only against
    groups whose bounding cone meets its bounding sphere and whose current hits are farther.
    With ``t_max`` only hits closer than it count (shadow rays).
    """
    n = d[0].size
    m = -(-n // chunk) * chunk
    o = tuple(_pad(x, m) for x in o)
    d = tuple(_pad(x, m) for x in d)
    best = np.full(m, np.inf, dtype=_F32) if t_max is None else _pad(
        np.broadcast_to(np.asarray(t_max, dtype=_F32), (n,)).copy(), m)
    ids = np.full(m, -1, dtype=np.int32)
    if m == 0:
        return best, ids
    axis, half, centre, rho = _chunk_cones(o, d, chunk)
    far = best.reshape(-1, chunk).max(axis=1)
    lane = np.arange(chunk)
    for i in _front_to_back(prims, centre.mean(axis=0)):
        p = prims[i]
        bound = p.bound()
        if bound is None:
            sel = np.arange(far.size)
        else:
            w = np.asarray(bound[0], dtype=_F32) - centre
            dist = np.linalg.norm(w, axis=1)
            rr = bound[1] * 1.001 + 1e-3 + rho
            cos_a = np.einsum('kj,kj->k', w, axis) / np.maximum(dist, 1e-9)
            reach = np.arcsin(np.clip(rr / np.maximum(dist, 1e-9), 0.0, 1.0))
            meets = (dist <= rr) | (np.arccos(np.clip(cos_a, -1.0, 1.0)) <= half + reach)
            sel = np.flatnonzero(meets & (dist - rr < far))
        if sel.size == 0:
            continue
        if sel.size == far.size:
            t = p.intersect(o, d)
            closer = t < best
            best[closer] = t[closer]
            ids[closer] = i
            far = best.reshape(-1, chunk).max(axis=1)
            continue
        idx = (sel[:, None] * chunk + lane).ravel()
        sub_o = tuple(x[idx] if isinstance(x, np.ndarray) else x for x in o)
        t = p.intersect(sub_o, (d[0][idx], d[1][idx], d[2][idx]))
        cur = best[idx]
        closer = t < cur
        if closer.any():
            j = idx[closer]
            best[j] = t[closer]
            ids[j] = i
            far[sel] = np.minimum(cur, t).reshape(-1, chunk).max(axis=1)
    best = best[:n]
    ids = ids[:n]
    return np.where(ids >= 0, best, np.inf).astype(_F32), ids


def _hit_surface(prims: Sequence[Primitive], o: tuple, d: tuple, t: np.ndarray,
                 ids: np.ndarray) -> tuple:
    """Points, normals (facing the ray) and uv for rays that all hit something."""
    p = tuple((o[k] + t * d[k]).astype(_F32) for k in range(3))
    normal = np.zeros((3, t.size), dtype=_F32)
    uv = np.zeros((2, t.size), dtype=_F32)
    for i, idx in _groups(ids):
        n, u, v = prims[i].surface(tuple(x[idx] for x in p))
        for k in range(3):
            normal[k, idx] = n[k]
        uv[0, idx], uv[1, idx] = u, v
    flip = _dot(normal, *d) > 0.0
    normal[:, flip] *= -1.0
    return p, normal, uv


def _groups(ids: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """Yield (id, indices) for each distinct non-negative id."""
    order = np.argsort(ids, kind='stable')
    sorted_ids = ids[order]
    values, starts = np.unique(sorted_ids, return_index=True)
    ends = np.append(starts[1:], sorted_ids.size)
    for value, s, e in zip(values, starts, ends):
        if value >= 0:
            yield int(value), order[s:e]


def _soa_origin(origins: np.ndarray) -> tuple:
    origins = np.asarray(origins)
    if origins.ndim == 1:
        return tuple(float(x) for x in origins)
    return tuple(np.ascontiguousarray(origins[:, k], dtype=_F32) for k in range(3))


def cast_rays(scene: Scene, origins: np.ndarray, directions: np.ndarray) -> RayHits:
    """
    Intersect rays with the scene: ``origins`` (3,) or (N, 3), ``directions`` (N, 3).

    Directions need not be unit length; ``t`` is the Euclidean distance along the ray.
    """
    dirs = np.asarray(directions, dtype=np.float64)
    dirs = dirs / np.linalg.norm(dirs, axis=1, keepdims=True)
    d = tuple(np.ascontiguousarray(dirs[:, k], dtype=_F32) for k in range(3))
    o = _soa_origin(origins)
    t, ids = _nearest(scene.primitives, o, d)
    n = len(dirs)
    points = np.zeros((n, 3), dtype=_F32)
    normals = np.zeros((n, 3), dtype=_F32)
    uv = np.zeros((n, 2), dtype=_F32)
    hit = np.flatnonzero(ids >= 0)
    if hit.size:
        sub_o = tuple(x[hit] if isinstance(x, np.ndarray) else x for x in o)
        p, nrm, tex = _hit_surface(scene.primitives, sub_o, tuple(x[hit] for x in d),
                                   t[hit], ids[hit])
        points[hit] = np.stack(p, axis=1)
        normals[hit] = nrm.T
        uv[hit] = tex.T
    return RayHits(t, ids, points, normals, uv)


def _albedo(prims: Sequence[Primitive], ids: np.ndarray, uv: np.ndarray) -> np.ndarray:
    """Texture colour (M, 3) in [0, 1] for hits on primitives ``ids`` at surface ``uv``."""
    out = np.zeros((ids.size, 3), dtype=_F32)
    for i, idx in _groups(ids):
        m = prims[i].material
        out[idx] = _TEXTURE_FUNCS[m.texture](m, uv[0, idx], uv[1, idx])
    return np.clip(out, 0.0, 1.0)


# --------------------------------------------------------------------------------------------
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


def _tile_grid(rows: int, cols: int, tile: tuple[int, int]) -> tuple:
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
    """Invert :func:`_tile_grid`: tile-major values (N, ...) to a (rows, cols, ...) image."""
    (rows, cols), (tr, tc) = shape, tile
    nr, nc = -(-rows // tr), -(-cols // tc)
    tail = values.shape[1:]
    grid = values.reshape((nr, nc, tr, tc) + tail).swapaxes(1, 2)
    return np.ascontiguousarray(grid.reshape((nr * tr, nc * tc) + tail)[:rows, :cols])


def _camera_rays(camera: CameraModel, T_world_cam: np.ndarray) -> tuple:
    rows, cols, valid = _tile_grid(camera.height, camera.width, _TILE)
    x = (cols.astype(_F32) - _F32(camera.cx)) / _F32(camera.fx)
    y = (rows.astype(_F32) - _F32(camera.cy)) / _F32(camera.fy)
    z_unit = 1.0 / np.sqrt(x * x + y * y + 1.0)
    x, y = x * z_unit, y * z_unit
    R = np.asarray(T_world_cam, dtype=np.float64)[:3, :3]
    d = tuple(_dot([float(v) for v in R[k]], x, y, z_unit) for k in range(3))
    o = tuple(float(v) for v in np.asarray(T_world_cam)[:3, 3])
    return o, d, z_unit, rows, cols, valid


def _visibility(prims: Sequence[Primitive], p: tuple, normal: np.ndarray, to_light: tuple,
                t_max) -> np.ndarray:
    """Return 1 where a shadow ray from ``p`` toward the light is unobstructed, else 0."""
    # Offset along the normal, growing with distance from the origin for float32 precision.
    off = 2e-3 * (1.0 + 1e-3 * np.sqrt(p[0] ** 2 + p[1] ** 2 + p[2] ** 2))
    o = tuple((p[k] + off * normal[k]).astype(_F32) for k in range(3))
    _, ids = _nearest(prims, o, to_light, t_max)
    return (ids < 0).astype(_F32)


def _shade(scene: Scene, ids: np.ndarray, p: tuple, normal: np.ndarray, uv: np.ndarray,
           shadows: bool) -> np.ndarray:
    """Lambertian shading (M, 3) of hit points: ambient sky dome + sun + point lights."""
    light = scene.lighting
    albedo = _albedo(scene.primitives, ids, uv)
    # Hemispherical ambient: surfaces facing up see more sky (or ceiling bounce) light.
    amb = light.ambient * (0.8 + 0.2 * normal[2])
    irradiance = amb[:, None] * np.asarray(light.ambient_color, dtype=_F32)
    if light.sun_direction is not None and light.sun_intensity > 0.0:
        sun = _vec3(np.asarray(light.sun_direction) / np.linalg.norm(light.sun_direction))
        ndl = np.maximum(_dot(sun, *normal), 0.0)
        lit = np.flatnonzero(ndl > 0.0)
        if shadows and lit.size:
            to_sun = tuple(np.full(lit.size, s, dtype=_F32) for s in sun)
            ndl[lit] *= _visibility(scene.primitives, tuple(x[lit] for x in p), normal[:, lit],
                                    to_sun, None)
        irradiance += (light.sun_intensity * ndl)[:, None] * np.asarray(light.sun_color, _F32)
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
    return _mix(scene.sky_horizon, scene.sky_zenith, f.astype(_F32))


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
    o, d, z_unit, _, _, _ = _camera_rays(camera, T_world_cam)
    t, ids = _nearest(scene.primitives, o, d)
    hit = np.flatnonzero(ids >= 0)
    color = _sky(scene, d[2])
    normal_cam = np.zeros((d[0].size, 3), dtype=_F32)
    if hit.size:
        sub_d = tuple(x[hit] for x in d)
        p, normal, uv = _hit_surface(scene.primitives, o, sub_d, t[hit], ids[hit])
        shaded = _shade(scene, ids[hit], p, normal, uv, shadows)
        if math.isfinite(scene.fog_distance):
            fog = np.exp(-t[hit] / scene.fog_distance)[:, None]
            shaded = shaded * fog + np.asarray(scene.sky_horizon, dtype=_F32) * (1.0 - fog)
        color[hit] = shaded
        R = np.asarray(T_world_cam, dtype=np.float64)[:3, :3].astype(_F32)
        normal_cam[hit] = normal.T @ R
    if noise_std > 0.0:
        color += rng.standard_normal(color.shape, dtype=_F32) * _F32(noise_std)
    depth = np.where(ids >= 0, t * z_unit, 0.0).astype(_F32)
    rgb = np.clip(color * 255.0 + 0.5, 0.0, 255.0).astype(np.uint8)
    shape = (camera.height, camera.width)
    rgb, depth_img, normal_img, id_img = (_untile(x, shape, _TILE)
                                          for x in (rgb, depth, normal_cam, ids))
    return RenderResult(rgb, depth_img, normal_img, id_img)


# --------------------------------------------------------------------------------------------
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
    beam, az, valid = _tile_grid(config.beams, n_az, _LIDAR_TILE)
    ce = np.cos(elevation)[beam]
    dl = ((ce * np.cos(azimuth[az])).astype(_F32), (ce * np.sin(azimuth[az])).astype(_F32),
          np.sin(elevation)[beam].astype(_F32))
    T = np.asarray(T_world_lidar, dtype=np.float64)
    d = tuple(_dot([float(v) for v in T[k, :3]], *dl) for k in range(3))
    o = tuple(float(v) for v in T[:3, 3])
    t, ids = _nearest(scene.primitives, o, d)
    keep = valid & (ids >= 0) & (t <= config.max_range)
    # Back to ring-major order, like the sensor's rings.
    keep_idx = np.flatnonzero(keep)
    keep_idx = keep_idx[np.argsort(beam[keep_idx] * n_az + az[keep_idx], kind='stable')]
    intensity = _lidar_intensity(scene, o, d, t, ids, keep_idx)
    rng_noise = rng.standard_normal(keep_idx.size) * config.range_noise_std
    r = t[keep_idx] + rng_noise.astype(_F32)
    points = np.stack([x[keep_idx] * r for x in dl] + [intensity], axis=1).astype(_F32)
    if config.dropout > 0.0:
        points = points[rng.random(len(points)) >= config.dropout]
    return points


def _lidar_intensity(scene: Scene, o: tuple, d: tuple, t: np.ndarray, ids: np.ndarray,
                     idx: np.ndarray) -> np.ndarray:
    if idx.size == 0:
        return np.zeros(0, dtype=_F32)
    sub_d = tuple(x[idx] for x in d)
    _, normal, uv = _hit_surface(scene.primitives, o, sub_d, t[idx], ids[idx])
    albedo = _albedo(scene.primitives, ids[idx], uv)
    reflectivity = np.array([p.material.reflectivity for p in scene.primitives], _F32)[ids[idx]]
    cos_inc = np.abs(_dot(normal, *sub_d))
    value = reflectivity * (0.4 + albedo.mean(axis=1)) * (0.3 + 0.7 * cos_inc)
    return np.clip(value, 0.0, 1.0).astype(_F32)


# --------------------------------------------------------------------------------------------
# Sequences and random views
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SequenceConfig:
    """
    A synthetic drive (``'outdoor'``) or walk (``'indoor'``) with a camera and a LiDAR.

    ``fx`` defaults to a 70 degree horizontal field of view; ``lidar`` to a 32-beam
    Velodyne-like sensor (indoors: +-15 degrees); ``speed_mps`` to 8 m/s outdoors and 0.7 m/s
    indoors.
    """

    kind: str
    num_frames: int
    width: int = 640
    height: int = 480
    fx: float | None = None
    lidar: LidarConfig | None = None
    fps: float = 10.0
    speed_mps: float | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.kind not in ('indoor', 'outdoor'):
            raise ValueError(f"kind must be 'indoor' or 'outdoor', not {self.kind!r}")
        if self.num_frames < 0 or self.fps <= 0.0:
            raise ValueError('num_frames must be >= 0 and fps > 0')

    def camera(self) -> CameraModel:
        """Return the camera model of the sequence."""
        if self.fx is None:
            return pinhole_camera(self.width, self.height, DEFAULT_HFOV_DEG)
        return pinhole_camera_focal(self.width, self.height, self.fx)

    def lidar_config(self) -> LidarConfig:
        """Return the LiDAR configuration, resolving the per-kind default."""
        if self.lidar is not None:
            return self.lidar
        return LidarConfig.indoor() if self.kind == 'indoor' else LidarConfig()

    def speed(self) -> float:
        """Return the travel speed in m/s, resolving the per-kind default."""
        if self.speed_mps is not None:
            return float(self.speed_mps)
        return 0.7 if self.kind == 'indoor' else 8.0


@dataclass(frozen=True, eq=False)
class SyntheticFrame:
    """
    One synchronized camera + LiDAR frame with ground truth.

    ``points_lidar`` is (N, 4) [x, y, z, intensity] in the LiDAR frame; ``T_cam_lidar`` is the
    fixed mounting extrinsic; ``depth`` is the ground-truth z-depth (0 = no surface).
    """

    index: int
    stamp_ns: int
    rgb: np.ndarray
    depth: np.ndarray
    camera: CameraModel
    points_lidar: np.ndarray
    T_cam_lidar: np.ndarray
    T_world_cam: np.ndarray

    @property
    def T_world_lidar(self) -> np.ndarray:
        """Return the LiDAR pose in the world frame."""
        return self.T_world_cam @ self.T_cam_lidar


def _sequence_scene(config: SequenceConfig) -> Scene:
    duration = max(config.num_frames - 1, 0) / config.fps
    return make_scene(config.kind, config.seed, length=config.speed() * duration + 10.0)


def sequence_poses(config: SequenceConfig, scene: Scene | None = None) -> np.ndarray:
    """
    Return the camera trajectory ``T_world_cam`` of the sequence, shape (num_frames, 4, 4).

    Outdoors the camera drives along the right-hand lane with a gentle lateral sway; indoors it
    walks an elliptical loop around the room, looking slightly inward, with gentle yaw.
    """
    scene = _sequence_scene(config) if scene is None else scene
    layout = scene.layout
    if layout is None:
        raise ValueError('the scene has no layout to derive a trajectory from')
    rng = np.random.default_rng([config.seed, 303])
    t = np.arange(config.num_frames) / config.fps
    v = config.speed()
    sway_a, sway_p, sway_ph = rng.uniform(0.1, 0.35), rng.uniform(6.0, 12.0), rng.uniform(0, 6.3)
    yaw_a, yaw_p = rng.uniform(0.03, 0.08), rng.uniform(5.0, 9.0)
    w = 2.0 * math.pi / sway_p
    if config.kind == 'outdoor':
        height, pitch = rng.uniform(1.45, 1.7), math.radians(rng.uniform(-3.0, 0.0))
        x = 2.0 + v * t
        y = layout.lane_y + sway_a * np.sin(w * t + sway_ph)
        yaw = np.arctan2(sway_a * w * np.cos(w * t + sway_ph), v) + yaw_a * np.sin(
            2.0 * math.pi * t / yaw_p)
        z = height + 0.01 * np.sin(7.0 * t)
    else:
        (cx, cy), (rx, ry) = layout.track_center, layout.track_radii
        height, pitch = rng.uniform(1.3, 1.6), math.radians(rng.uniform(-10.0, -4.0))
        direction = 1.0 if rng.random() < 0.5 else -1.0
        phi = rng.uniform(0, 2 * math.pi) + direction * v * t / (0.5 * (rx + ry))
        x, y = cx + rx * np.cos(phi), cy + ry * np.sin(phi)
        heading = np.arctan2(direction * ry * np.cos(phi), -direction * rx * np.sin(phi))
        # Look a little toward the room's centre, plus a slow side-to-side glance.
        yaw = heading + direction * 0.3 + 4.0 * yaw_a * np.sin(2.0 * math.pi * t / yaw_p)
        z = height + 0.02 * np.sin(2.0 * math.pi * t / 0.9)
    poses = [camera_pose((x[i], y[i], z[i]), yaw[i], pitch) for i in range(config.num_frames)]
    return np.stack(poses) if poses else np.zeros((0, 4, 4))


def iter_sequence(config: SequenceConfig) -> Iterator[SyntheticFrame]:
    """Generate the frames of a sequence lazily (same content as :func:`make_sequence`)."""
    scene = _sequence_scene(config)
    camera = config.camera()
    lidar = config.lidar_config()
    T_cam_lidar = lidar_mount()
    for i, T_world_cam in enumerate(sequence_poses(config, scene)):
        view = render(scene, camera, T_world_cam, np.random.default_rng([config.seed, 2, i]))
        points = simulate_lidar(scene, T_world_cam @ T_cam_lidar, lidar,
                                np.random.default_rng([config.seed, 3, i]))
        yield SyntheticFrame(i, int(round(i * 1e9 / config.fps)), view.rgb, view.depth, camera,
                             points, T_cam_lidar.copy(), T_world_cam)


def make_sequence(config: SequenceConfig) -> list[SyntheticFrame]:
    """Generate all frames of a sequence as a list of :class:`SyntheticFrame`."""
    return list(iter_sequence(config))


def _clear(scene: Scene, position: np.ndarray, clearance: float) -> bool:
    """Return whether ``position`` is outside every solid and ``clearance`` from all surfaces."""
    pt = position[None, :]
    if any(p.contains(pt, clearance)[0] for p in scene.primitives):
        return False
    # 26 directions: cube faces, edges and corners.
    g = np.array(np.meshgrid([-1, 0, 1], [-1, 0, 1], [-1, 0, 1])).reshape(3, -1).T
    g = g[np.any(g != 0, axis=1)].astype(np.float64)
    g /= np.linalg.norm(g, axis=1, keepdims=True)
    d = tuple(np.ascontiguousarray(g[:, k], dtype=_F32) for k in range(3))
    t, _ = _nearest(scene.primitives, _vec3(position), d, chunk=g.shape[0])
    return bool(t.min() > clearance)


def _probe(scene: Scene, camera: CameraModel, T_world_cam: np.ndarray) -> tuple:
    """Return (median depth, sky fraction) of a coarse 12x9 ray grid of the view."""
    rows = max(2, round(12 * camera.height / camera.width))
    small = pinhole_camera_focal(12, rows, camera.fx * 12.0 / camera.width)
    o, d, z_unit, _, _, valid = _camera_rays(small, T_world_cam)
    t, ids = _nearest(scene.primitives, o, d)
    depth = np.where(ids >= 0, t * z_unit, 0.0)[valid]
    sky = float(np.mean(depth == 0.0))
    return (float(np.median(depth[depth > 0])) if sky < 1.0 else 0.0), sky


def _sample_pose(scene: Scene, rng: np.random.Generator) -> np.ndarray:
    """Draw a camera pose: position, height, heading and pitch plausible for the scene kind."""
    lay = scene.layout
    if scene.kind == 'indoor':
        x0, y0, x1, y1 = lay.bounds
        pos = (rng.uniform(x0 + 0.3, x1 - 0.3), rng.uniform(y0 + 0.3, y1 - 0.3),
               rng.uniform(0.3, min(2.2, lay.ceiling - 0.3)))
        if rng.random() < 0.7:  # mostly look into the room rather than at the nearest wall
            cx, cy = lay.track_center
            yaw = math.atan2(cy - pos[1], cx - pos[0]) + rng.normal(0.0, 0.7)
        else:
            yaw = rng.uniform(-math.pi, math.pi)
        pitch = float(np.clip(rng.normal(-0.12, 0.2), -0.8, 0.5))
    else:
        hw, sw = lay.road_half_width, lay.sidewalk_width
        u = rng.random()
        if u < 0.6:  # on the carriageway, between the parked cars
            y = rng.uniform(-(hw - 2.4), hw - 2.4)
        else:  # on a sidewalk
            y = rng.choice([-1.0, 1.0]) * rng.uniform(hw + 0.3, hw + sw - 0.3)
        high = rng.random() < 0.15
        z = rng.uniform(2.0, 6.0) if high else rng.uniform(1.1, 2.0)
        pos = (rng.uniform(lay.bounds[0] + 40.0, lay.bounds[2] - 60.0), y, z)
        along = rng.random() < 0.7
        yaw = (rng.choice([0.0, math.pi]) + rng.normal(0.0, 0.25)) if along else rng.uniform(
            -math.pi, math.pi)
        pitch = float(np.clip(rng.normal(-0.05 - (0.15 if high else 0.0), 0.12), -0.6, 0.35))
    return camera_pose(pos, yaw, pitch, rng.normal(0.0, 0.04))


def random_view(seed: int, kind: str = 'indoor', width: int = 224,
                height: int = 224) -> tuple[np.ndarray, np.ndarray, CameraModel]:
    """
    Render one random view of a fresh random scene: (rgb uint8, depth float32, camera).

    Intrinsics vary (55-85 degree horizontal FOV); poses vary in position, height, heading,
    pitch and roll but are rejected when inside or within 0.3 m of an object, or (most of the
    time) when the view is dominated by a nearby surface or by sky.
    """
    rng = np.random.default_rng([seed, 606])
    scene = make_scene(kind, seed, length=60.0)
    fx = 0.5 * width / math.tan(math.radians(rng.uniform(55.0, 85.0)) / 2.0)
    camera = pinhole_camera_focal(width, height, fx)
    min_depth = 1.5 if kind == 'indoor' else 3.0
    pose = None
    for _ in range(50):
        candidate = _sample_pose(scene, rng)
        if not _clear(scene, candidate[:3, 3], 0.3):
            continue
        median, sky = _probe(scene, camera, candidate)
        close_ok = rng.random() < 0.05  # keep a few close-up views for variety
        if (median >= min_depth or close_ok) and sky < 0.6:
            pose = candidate
            break
    if pose is None:
        pose = sequence_poses(SequenceConfig(kind, 1, seed=seed), scene)[0]
    view = render(scene, camera, pose, rng)
    return view.rgb, view.depth, camera
