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
"""Analytic primitives: ray distance (inf for a miss), then normals and surface (u, v)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
import math

import numpy as np

from .common import dot, EPS, F32, Vec3, vec3
from .materials import Material

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
            object.__setattr__(self, name, vec3(getattr(self, name)))

    @cached_property
    def _frame(self) -> tuple:
        eu, ev = np.array(self.edge_u), np.array(self.edge_v)
        lu, lv = float(np.linalg.norm(eu)), float(np.linalg.norm(ev))
        n = np.cross(eu, ev)
        n /= np.linalg.norm(n)
        return vec3(eu / lu), vec3(ev / lv), vec3(n), 0.5 * lu, 0.5 * lv

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
            t = -dot(n, *rel) / dot(n, *d)
            ok = t > EPS
            if not self.infinite:
                u = dot(au, *rel) + t * dot(au, *d)
                v = dot(av, *rel) + t * dot(av, *d)
                ok &= (np.abs(u) <= hu) & (np.abs(v) <= hv)
        return np.where(ok, t, np.inf)

    def surface(self, p: tuple) -> tuple:
        """Return (normal components, u, v) at surface points ``p``."""
        au, av, n, _, _ = self._frame
        rel = (p[0] - self.center[0], p[1] - self.center[1], p[2] - self.center[2])
        ones = np.ones_like(p[0])
        return (n[0] * ones, n[1] * ones, n[2] * ones), dot(au, *rel), dot(av, *rel)

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
        object.__setattr__(self, 'center', vec3(self.center))
        object.__setattr__(self, 'size', vec3(self.size))
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
            t = np.where(t_near > EPS, t_near, t_far)
            ok = (t_near <= t_far) & (t > EPS)
        return np.where(ok, t, np.inf)

    def surface(self, p: tuple) -> tuple:
        """Return (normal components, u, v) at surface points ``p``."""
        q = self._local(p)
        gap = np.stack([0.5 * self.size[k] - np.abs(q[k]) for k in range(3)])
        face = np.argmin(gap, axis=0)
        nl = [np.where(face == k, np.sign(q[k]), 0.0).astype(F32) for k in range(3)]
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
        object.__setattr__(self, 'center', vec3(self.center))
        object.__setattr__(self, 'radius', float(self.radius))

    def bound(self) -> tuple[Vec3, float] | None:
        """Return a bounding sphere (centre, radius)."""
        return self.center, self.radius

    def intersect(self, o: tuple, d: tuple) -> np.ndarray:
        """Return the distance along each ray to the surface (inf for a miss)."""
        c = self.center
        oc = (o[0] - c[0], o[1] - c[1], o[2] - c[2])
        b = dot(oc, *d)
        disc = b * b - (dot(oc, *oc) - self.radius ** 2)
        with np.errstate(invalid='ignore'):
            sq = np.sqrt(disc)
        t0, t1 = -b - sq, -b + sq
        t = np.where(t0 > EPS, t0, t1)
        return np.where((disc >= 0.0) & (t > EPS), t, np.inf)

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
        object.__setattr__(self, 'base', vec3(self.base))
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
            ok = (disc >= 0.0) & (t_side > EPS) & (z >= bz) & (z <= top)
            t_side = np.where(ok, t_side, np.inf)
            t_cap = (top - o[2]) / d[2]
            hx, hy = ox + t_cap * d[0], oy + t_cap * d[1]
            ok_cap = (t_cap > EPS) & (hx * hx + hy * hy <= self.radius ** 2)
        return np.minimum(t_side, np.where(ok_cap, t_cap, np.inf))

    def surface(self, p: tuple) -> tuple:
        """Return (normal components, u, v) at surface points ``p``."""
        bx, by, bz = self.base
        rx, ry = p[0] - bx, p[1] - by
        radial = np.sqrt(rx * rx + ry * ry)
        cap = np.abs(p[2] - (bz + self.height)) < np.abs(radial - self.radius)
        inv_r = 1.0 / self.radius
        normal = (np.where(cap, 0.0, rx * inv_r).astype(F32),
                  np.where(cap, 0.0, ry * inv_r).astype(F32),
                  cap.astype(F32))
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
