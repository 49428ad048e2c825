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
"""Ray casting, shared by the camera and the LiDAR."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
import math

import numpy as np

from .common import CHUNK, dot, F32
from .materials import TEXTURE_FUNCS
from .primitives import Primitive
from .scenes import Scene

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
    cos_min = dot(axis.T[:, :, None], *dk).min(axis=1)
    # Small slack absorbs float32 rounding in the cone angle.
    half = np.arccos(np.clip(cos_min, -1.0, 1.0)) + 2e-3
    if isinstance(o[0], np.ndarray):
        ok = [x.reshape(k, chunk) for x in o]
        centre = np.stack([x.mean(axis=1) for x in ok], axis=1)
        spread = sum((ok[j] - centre[:, j:j + 1]) ** 2 for j in range(3))
        rho = np.sqrt(spread.max(axis=1))
    else:
        centre = np.broadcast_to(np.asarray(o, dtype=F32), (k, 3))
        rho = np.zeros(k, dtype=F32)
    return axis, half, centre, rho


def _front_to_back(prims: Sequence[Primitive], origin: np.ndarray) -> list:
    """Order primitives by nearest possible distance so occlusion culling bites early."""
    keys = []
    for i, p in enumerate(prims):
        b = p.bound()
        key = -math.inf if b is None else float(np.linalg.norm(np.asarray(b[0]) - origin)) - b[1]
        keys.append((key, i))
    return [i for _, i in sorted(keys)]


def nearest_hit(prims: Sequence[Primitive], o: tuple, d: tuple, t_max=None,
                chunk: int = CHUNK) -> tuple[np.ndarray, np.ndarray]:
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
    best = np.full(m, np.inf, dtype=F32) if t_max is None else _pad(
        np.broadcast_to(np.asarray(t_max, dtype=F32), (n,)).copy(), m)
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
            w = np.asarray(bound[0], dtype=F32) - centre
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
    return np.where(ids >= 0, best, np.inf).astype(F32), ids


def hit_surface(prims: Sequence[Primitive], o: tuple, d: tuple, t: np.ndarray,
                ids: np.ndarray) -> tuple:
    """Points, normals (facing the ray) and uv for rays that all hit something."""
    p = tuple((o[k] + t * d[k]).astype(F32) for k in range(3))
    normal = np.zeros((3, t.size), dtype=F32)
    uv = np.zeros((2, t.size), dtype=F32)
    for i, idx in _groups(ids):
        n, u, v = prims[i].surface(tuple(x[idx] for x in p))
        for k in range(3):
            normal[k, idx] = n[k]
        uv[0, idx], uv[1, idx] = u, v
    flip = dot(normal, *d) > 0.0
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
    return tuple(np.ascontiguousarray(origins[:, k], dtype=F32) for k in range(3))


def cast_rays(scene: Scene, origins: np.ndarray, directions: np.ndarray) -> RayHits:
    """
    Intersect rays with the scene: ``origins`` (3,) or (N, 3), ``directions`` (N, 3).

    Directions need not be unit length; ``t`` is the Euclidean distance along the ray.
    """
    dirs = np.asarray(directions, dtype=np.float64)
    dirs = dirs / np.linalg.norm(dirs, axis=1, keepdims=True)
    d = tuple(np.ascontiguousarray(dirs[:, k], dtype=F32) for k in range(3))
    o = _soa_origin(origins)
    t, ids = nearest_hit(scene.primitives, o, d)
    n = len(dirs)
    points = np.zeros((n, 3), dtype=F32)
    normals = np.zeros((n, 3), dtype=F32)
    uv = np.zeros((n, 2), dtype=F32)
    hit = np.flatnonzero(ids >= 0)
    if hit.size:
        sub_o = tuple(x[hit] if isinstance(x, np.ndarray) else x for x in o)
        p, nrm, tex = hit_surface(scene.primitives, sub_o, tuple(x[hit] for x in d),
                                  t[hit], ids[hit])
        points[hit] = np.stack(p, axis=1)
        normals[hit] = nrm.T
        uv[hit] = tex.T
    return RayHits(t, ids, points, normals, uv)


def surface_albedo(prims: Sequence[Primitive], ids: np.ndarray, uv: np.ndarray) -> np.ndarray:
    """Texture colour (M, 3) in [0, 1] for hits on primitives ``ids`` at surface ``uv``."""
    out = np.zeros((ids.size, 3), dtype=F32)
    for i, idx in _groups(ids):
        m = prims[i].material
        out[idx] = TEXTURE_FUNCS[m.texture](m, uv[0, idx], uv[1, idx])
    return np.clip(out, 0.0, 1.0)


# --------------------------------------------------------------------------------------------
