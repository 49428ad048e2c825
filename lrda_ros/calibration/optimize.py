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
The calibration check's searches: derivative-free climbs of the window's score.

The score is a sum over a few thousand outline points of a smooth (spread, bilinearly
sampled) edge map: cheap to evaluate, without a useful analytic gradient through the pixel
grid, and with side peaks. Levinson & Thrun search a grid of small perturbations around the
current calibration; here a *compass search* (:func:`pattern_search`) climbs, a grid around
the rotation's peak finds what the compass misses (:func:`rotation_search`), and the time
offset and the translation are scanned over their range along the ridge they share with the
rotation (:func:`time_scan`, :func:`translation_scan`).

A translation moves near points more than far ones; at one depth it is the same as a
rotation. Searched along its own axis, a translation error is first taken up by the rotation
and the compass then stops on the ridge the two share. So a translation is moved along its
*ridge direction*: the translation with the rotation that best makes up its shift in the
image (a column of ``basis``, from the outline points' pixel Jacobian), which changes only
the parallax.
"""

from __future__ import annotations

import numpy as np

from .score import WindowScore

DEG = np.pi / 180.0
#: The searches' finest steps: 0.01 degree, 2 mm, 0.5 ms.
SMALLEST = np.array([0.01 * DEG] * 3 + [0.002] * 3 + [0.0005])


def pattern_search(score: WindowScore, theta: np.ndarray, free: np.ndarray,
                   steps: np.ndarray, smallest: np.ndarray, bounds: np.ndarray,
                   basis: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """
    Maximize ``score`` over the ``free`` entries by compass search; return (theta, best).

    Every free parameter is tried ±step and the best move taken (the steepest of the
    compass's directions: taking the first gain can lock a coupled pair, roll and pitch, into
    a side peak); without any gain the steps halve, down to ``smallest``. ``basis`` (7, 7):
    parameter ``i`` moves theta along its column ``i`` (default: the identity, each alone),
    within the free entries.
    """
    basis = np.where(free[:, None], np.eye(7) if basis is None else basis, 0.0)
    theta = theta.copy()
    best = score(theta)
    steps = steps.copy()
    while np.any(free & (steps >= smallest)):
        trials = []
        for index in np.flatnonzero(free & (steps >= smallest)):
            for sign in (1.0, -1.0):
                trial = np.clip(theta + sign * steps[index] * basis[:, index], -bounds, bounds)
                if np.any(trial != theta):
                    trials.append(trial)
        values = [score(trial) for trial in trials]
        if values and max(values) > best:
            best = max(values)
            theta = trials[int(np.argmax(values))]
        else:
            steps = steps / 2.0
    return theta, best


def rotation_search(score: WindowScore, theta: np.ndarray, scales: np.ndarray,
                    smallest: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """
    Maximize over the rotation: compass search, then Levinson & Thrun's grid around the peak.

    The grid (5 x 5 x 5 rotations, ±0.5 degree) finds a higher peak a coupled pair (roll and
    pitch) can hide from the compass; the compass restarts from it until the grid finds none.
    """
    rotation_only = np.zeros(7, bool)
    rotation_only[:3] = True
    offsets = np.stack(np.meshgrid(*[np.linspace(-0.5, 0.5, 5) * DEG] * 3, indexing='ij'),
                       axis=-1).reshape(-1, 3)
    theta, best = pattern_search(score, theta, rotation_only, scales, smallest, bounds)
    for _ in range(10):
        grid = np.repeat(theta[None], len(offsets), axis=0)
        grid[:, :3] = np.clip(grid[:, :3] + offsets, -bounds[:3], bounds[:3])
        values = np.array([score(trial) for trial in grid])
        if values.max() <= best:
            break
        theta, best = pattern_search(score, grid[int(np.argmax(values))], rotation_only,
                                     scales / 4, smallest, bounds)
    return theta


def time_scan(score: WindowScore, theta: np.ndarray, rotation: bool, scales: np.ndarray,
              smallest: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """
    Return theta at the best time offset of a scan over its whole range (5 ms steps).

    The offset's profile has side peaks, so it is scanned rather than climbed. An offset also
    turns the LiDAR as a yaw of the mount would: with the rotation searched, each offset of
    the scan gets its own best rotation, fitted from the given one (a fit carried from offset
    to offset, or started from the rotation fitted without an offset, stops in side peaks), so
    the scan follows that ridge instead of crossing it.
    """
    rotation_only = np.zeros(7, bool)
    rotation_only[:3] = rotation
    best, best_value = theta, -np.inf
    for offset in np.arange(-bounds[6], bounds[6] + 1e-9, 0.005):
        current = np.where(rotation_only, 0.0, theta)
        current[6] = offset
        if rotation:
            current, value = pattern_search(score, current, rotation_only, scales,
                                            smallest * 4, bounds)
        else:
            value = score(current)
        if value > best_value:
            best, best_value = current.copy(), value
    return best


def translation_scan(score: WindowScore, theta: np.ndarray, free: np.ndarray,
                     basis: np.ndarray, bounds: np.ndarray, step: float = 0.01,
                     passes: int = 2) -> np.ndarray:
    """
    Return theta at the best point of scans of each free translation along its ridge.

    Each translation in turn is set to every value of its range (``step`` apart) along its
    column of ``basis`` (the rotation making up its shift moves with it) and kept at the
    best; ``passes`` times over the axes. The ridge's profile, like the time offset's, has
    side peaks where an edge meets its neighbour's outline.
    """
    theta = theta.copy()
    for _ in range(passes):
        for index in np.flatnonzero(free[3:6]) + 3:
            values = np.arange(-bounds[index], bounds[index] + 1e-9, step)
            direction = np.where(free, basis[:, index], 0.0)
            trials = [np.clip(theta + (value - theta[index]) * direction, -bounds, bounds)
                      for value in values]
            scores = [score(trial) for trial in trials]
            if max(scores) > score(theta):
                theta = trials[int(np.argmax(scores))]
    return theta
