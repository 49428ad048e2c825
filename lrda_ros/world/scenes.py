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
"""Procedural indoor rooms and streets built from primitives."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import math

import numpy as np

from .common import Vec3, vec3
from .materials import Material
from .primitives import Box, Cylinder, Primitive, Rect, Sphere

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
    return vec3(c)


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
