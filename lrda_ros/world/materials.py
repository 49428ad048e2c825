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
"""Surface materials and procedural textures in surface coordinates (metres)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .common import F32, Vec3, vec3

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
        object.__setattr__(self, 'color', vec3(self.color))
        object.__setattr__(self, 'color2', vec3(self.color2))


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
    return (h >> np.uint32(8)).astype(F32) * F32(1.0 / 16777216.0)


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


def mix(c1: Vec3, c2: Vec3, f: np.ndarray) -> np.ndarray:
    a = np.asarray(c1, dtype=F32)
    b = np.asarray(c2, dtype=F32)
    return a + (b - a) * f[:, None]


def _tex_plain(m: Material, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.broadcast_to(np.asarray(m.color, dtype=F32), (u.size, 3)).copy()


def _tex_checker(m: Material, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    f = (np.floor(u / m.scale) + np.floor(v / m.scale)) % 2.0
    return mix(m.color, m.color2, f)


def _tex_stripes(m: Material, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    # Two stripe widths per period read as wallpaper / awning stripes.
    f = (_fract(u / m.scale) < 0.35).astype(F32)
    return mix(m.color, m.color2, f)


def _tex_noise(m: Material, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    f = np.clip((_fbm(u / m.scale, v / m.scale, m.seed) - 0.5) * 2.2 + 0.5, 0.0, 1.0)
    return mix(m.color, m.color2, f)


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
    out = np.asarray(m.color, dtype=F32) * shade[:, None]
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
    out = np.asarray(m.color, dtype=F32) * shade[:, None]
    out[seams] = m.color2
    return out


def _tex_windows(m: Material, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Facade: a regular grid of windows, one row per storey (``v`` is height above ground)."""
    bay, storey = m.scale, 1.15 * m.scale
    cu, cv = u / bay, v / storey
    fu, fv = _fract(cu), _fract(cv)
    window = (fu > 0.22) & (fu < 0.78) & (fv > 0.3) & (fv < 0.85) & (v > 0.8)
    stain = 0.88 + 0.24 * _value_noise(u * 0.3, v * 0.3, m.seed)
    wall = np.asarray(m.color, dtype=F32) * stain[:, None]
    glass = np.asarray(m.color2, dtype=F32) * (
        0.6 + 0.8 * _hash2(np.floor(cu), np.floor(cv), m.seed))[:, None]
    return np.where(window[:, None], glass, wall)


def _tex_road(m: Material, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Asphalt with a dashed centre line at v=0 and solid lines at ``|v| = params[0]``."""
    asphalt = mix(m.color, m.color2, _fbm(u * 1.3, v * 1.3, m.seed, 2))
    line = m.params[0] if m.params else 3.0
    centre = (np.abs(v) < 0.07) & (_fract(u / 9.0) < 0.4)
    side = np.abs(np.abs(v) - line) < 0.06
    asphalt[centre | side] = (0.86, 0.86, 0.8)
    return asphalt


TEXTURE_FUNCS: dict[str, Callable[[Material, np.ndarray, np.ndarray], np.ndarray]] = {
    'plain': _tex_plain, 'checker': _tex_checker, 'stripes': _tex_stripes, 'noise': _tex_noise,
    'bricks': _tex_bricks, 'tiles': _tex_tiles, 'planks': _tex_planks,
    'windows': _tex_windows, 'road': _tex_road,
}
TEXTURES = tuple(sorted(TEXTURE_FUNCS))


# --------------------------------------------------------------------------------------------
