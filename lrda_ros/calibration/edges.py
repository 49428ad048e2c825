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
The two sides of the calibration check's score: image edges and LiDAR depth discontinuities.

After Levinson & Thrun ("Automatic Online Calibration of Cameras and Lasers", RSS 2013):

* an image's edge strength at a pixel is the largest absolute grey-level difference to its
  eight neighbours; the map is then spread by an *inverse distance transform*,
  ``D = alpha E + (1 - alpha) max_q E(q) gamma^dist(p, q)``, so a point a few pixels off an edge
  still scores and the score rises smoothly towards the right calibration;
* a LiDAR point's discontinuity is how much nearer it is than its neighbours on the same scan
  line, ``X = max(r_prev - r, r_next - r, 0) ** 0.5``: a point on the near side of a depth
  jump, which lies on an object's outline, where the image has an edge too.

``dist`` is the city-block distance (the transform is then two linear passes per axis; the
paper's is the chessboard one, which no separable pass gives). Pure numpy, vectorized except
for the transform's passes, which are a loop over rows and columns of whole-array steps.
"""

from __future__ import annotations

import numpy as np

from ..geometry.checks import InvalidPointsError

#: Levinson & Thrun's constants: share of the edge itself, decay per pixel of distance.
EDGE_ALPHA = 1.0 / 3.0
EDGE_GAMMA = 0.98


def grey(rgb: np.ndarray) -> np.ndarray:
    """Return an ``(H, W)`` or ``(H, W, C)`` image as float32 grey levels in [0, 1] (0-255 in)."""
    image = np.asarray(rgb)
    if image.ndim == 3:
        image = image[..., :3].astype(np.float32).mean(axis=2)
    if image.ndim != 2 or min(image.shape) < 3:
        raise InvalidPointsError(f'image must be (H, W) or (H, W, C) with H, W >= 3, got '
                                 f'{np.shape(rgb)}')
    image = image.astype(np.float32)
    return image / 255.0 if np.issubdtype(np.asarray(rgb).dtype, np.integer) else image


def edge_strength(grey_image: np.ndarray) -> np.ndarray:
    """
    Return each pixel's largest absolute difference to its 8 neighbours (float32 (H, W)).

    The border pixels compare with the neighbours they have.
    """
    g = np.asarray(grey_image, np.float32)
    edges = np.zeros_like(g)
    height, width = g.shape
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            if dy == dx == 0:
                continue
            rows = slice(max(dy, 0), height + min(dy, 0))
            cols = slice(max(dx, 0), width + min(dx, 0))
            shifted_rows = slice(max(-dy, 0), height + min(-dy, 0))
            shifted_cols = slice(max(-dx, 0), width + min(-dx, 0))
            difference = np.abs(g[rows, cols] - g[shifted_rows, shifted_cols])
            np.maximum(edges[rows, cols], difference, out=edges[rows, cols])
    return edges


def _decaying_max_along(values: np.ndarray, gamma: float, axis: int) -> np.ndarray:
    """Return ``max_q values[q] gamma^|p - q|`` along ``axis`` (two linear passes)."""
    moved = np.moveaxis(np.array(values, np.float32, copy=True), axis, 0)
    for index in range(1, moved.shape[0]):  # forward: carry the decayed maximum
        np.maximum(moved[index], moved[index - 1] * gamma, out=moved[index])
    for index in range(moved.shape[0] - 2, -1, -1):  # backward
        np.maximum(moved[index], moved[index + 1] * gamma, out=moved[index])
    return np.moveaxis(moved, 0, axis)


def inverse_distance_transform(edges: np.ndarray, alpha: float = EDGE_ALPHA,
                               gamma: float = EDGE_GAMMA) -> np.ndarray:
    """
    Return ``alpha E + (1 - alpha) max_q E(q) gamma^(|dx| + |dy|)`` (float32, same shape).

    The maximum over the whole image of an exponentially decaying kernel of the city-block
    distance is separable: the decayed maximum along rows, then along columns of that.
    """
    if not (0.0 <= alpha <= 1.0 and 0.0 < gamma < 1.0):
        raise ValueError(f'alpha must be in [0, 1] and gamma in (0, 1), got {alpha}, {gamma}')
    e = np.asarray(edges, np.float32)
    spread = _decaying_max_along(_decaying_max_along(e, gamma, 1), gamma, 0)
    return (alpha * e + (1.0 - alpha) * spread).astype(np.float32)


def local_contrast(values: np.ndarray, window: int) -> np.ndarray:
    """
    Return ``values`` minus their mean over a ``window`` x ``window`` box (edges replicated).

    A high-pass of the spread edge map: where the image is textured all over (the synthetic
    world's procedural surfaces), the plain map rises and falls smoothly with the texture's
    density and a wide search drifts towards dense texture; against its local mean only an
    edge that stands out scores.
    """
    if window < 1 or window % 2 == 0:
        raise ValueError(f'window must be odd and >= 1, got {window}')
    image = np.asarray(values, np.float64)
    height, width = image.shape
    pad = window // 2
    sums = np.cumsum(np.cumsum(np.pad(image, pad, mode='edge'), axis=0), axis=1)
    sums = np.pad(sums, ((1, 0), (1, 0)))
    box = (sums[window:window + height, window:window + width]
           - sums[:height, window:window + width]
           - sums[window:window + height, :width] + sums[:height, :width])
    return (image - box / window ** 2).astype(np.float32)


def scan_neighbours(points: np.ndarray, max_azimuth_step_deg: float = 1.0,
                    max_elevation_step_deg: float = 0.4) -> tuple[np.ndarray, np.ndarray]:
    """
    Return each point's previous and next neighbour on its scan line (index, -1 for none).

    Spinning-LiDAR drivers emit their points ring by ring in azimuth order (KITTI's Velodyne,
    Ouster, the synthetic sweep), so two consecutive points are neighbours when their azimuths
    and elevations are close. A cloud that is not in that order (fewer than half its points
    with a neighbour that way) is sorted first by elevation in steps of
    ``max_elevation_step_deg`` and then by azimuth.
    """
    p = np.asarray(points, np.float64)
    if p.ndim != 2 or p.shape[1] != 3:
        raise InvalidPointsError(f'points must have shape (N, 3), got {np.shape(points)}')
    azimuth = np.degrees(np.arctan2(p[:, 1], p[:, 0]))
    elevation = np.degrees(np.arctan2(p[:, 2], np.hypot(p[:, 0], p[:, 1])))
    order = np.arange(len(p))
    linked = _linked(azimuth, elevation, order, max_azimuth_step_deg, max_elevation_step_deg)
    if len(p) > 1 and linked.mean() < 0.5:
        order = np.lexsort((azimuth, np.round(elevation / max_elevation_step_deg)))
        linked = _linked(azimuth, elevation, order, max_azimuth_step_deg,
                         max_elevation_step_deg)
    previous = np.full(len(p), -1, np.int64)
    following = np.full(len(p), -1, np.int64)
    previous[order[1:][linked]] = order[:-1][linked]
    following[order[:-1][linked]] = order[1:][linked]
    return previous, following


def _linked(azimuth: np.ndarray, elevation: np.ndarray, order: np.ndarray,
            max_azimuth: float, max_elevation: float) -> np.ndarray:
    """Return, for each consecutive pair of ``order``, whether the two are scan neighbours."""
    step = np.abs(np.diff(azimuth[order]))
    step = np.minimum(step, 360.0 - step)  # across the +-180 degree seam
    return (step <= max_azimuth) & (np.abs(np.diff(elevation[order])) <= max_elevation)


def depth_discontinuities(points: np.ndarray, max_azimuth_step_deg: float = 1.0,
                          max_elevation_step_deg: float = 0.4
                          ) -> tuple[np.ndarray, np.ndarray]:
    """
    Return each point's discontinuity and the neighbour it jumps to (index, -1 for none).

    The discontinuity is ``max(r_prev - r, r_next - r, 0) ** 0.5`` (m^0.5), ``r`` the range
    from the sensor; a missing neighbour (the end of a scan line, a gap) counts as no jump.
    Only the near side of a jump scores: it is the object's outline.
    """
    p = np.asarray(points, np.float64)
    previous, following = scan_neighbours(p, max_azimuth_step_deg, max_elevation_step_deg)
    ranges = np.linalg.norm(p, axis=1)
    jump = np.zeros(len(p))
    partner = np.full(len(p), -1, np.int64)
    for neighbour in (previous, following):
        has = neighbour >= 0
        step = np.zeros(len(p))
        step[has] = ranges[neighbour[has]] - ranges[has]
        larger = has & (step > jump)
        jump[larger] = step[larger]
        partner[larger] = neighbour[larger]
    return np.sqrt(jump), partner


def outline_points(near: np.ndarray, far: np.ndarray, shift: float = 0.5) -> np.ndarray:
    """
    Return where each outline lies: from a near point towards the farther neighbour past it.

    The silhouette lies between the last ray that hit the object and the first that missed
    it. With rays much thinner than their spacing the near ray is on average half a step
    inside the silhouette (``shift`` 0.5: the bisector); a beam as wide as the step (real
    spinning LiDARs: a partial hit returns the near range) puts the near ray on it already
    (``shift`` 0). The outline keeps the near point's range. A pair further apart than twice
    the median pair (missing returns between them: the silhouette could be anywhere) keeps
    the near point's own ray, as does a point given as its own ``far``.
    """
    near = np.asarray(near, np.float64)
    far = np.asarray(far, np.float64)
    ranges = np.linalg.norm(near, axis=1)
    own = near / np.maximum(ranges, 1e-12)[:, None]
    other = far / np.maximum(np.linalg.norm(far, axis=1), 1e-12)[:, None]
    apart = np.linalg.norm(other - own, axis=1)
    if len(apart) and np.any(apart > 0):
        typical = np.median(apart[apart > 0])
        other = np.where((apart <= 2 * typical)[:, None], other, own)
    direction = own + shift * (other - own)
    direction /= np.maximum(np.linalg.norm(direction, axis=1), 1e-12)[:, None]
    return direction * ranges[:, None]
