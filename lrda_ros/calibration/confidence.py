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
How sure the calibration check is of each parameter: curvature, stability, standard errors.

Three tests, each necessary for a parameter to count as *observable*:

1. **Sharpness.** Its marginal curvature ``1 / ((-H)^-1)_pp`` (the score's Hessian ``H`` by
   central differences) is what the score loses when the parameter moves and every other free
   one re-adjusts: moving it by its tolerance must cost at least ``least_drop`` of the score
   (:func:`sharp_parameters`).
2. **Inside the range.** Its peak is not within a fifth of the search range's edge.
3. **Stability.** The window's two halves in time, each searched again from the window's
   estimate, agree on it within its tolerance (:func:`half_window_spread`). The frames of a
   window are consecutive views of one scene, so their errors are correlated: the frame-wise
   sandwich covariance ``H^-1 (sum_f g_f g_f^T) H^-1`` treats them as independent samples and
   comes out too small, and a flat or coupled direction (a translation beside the rotation it
   trades off against) wanders between subsets where a curvature at one point does not show
   it. Halves in time are the least correlated split a window has.

A parameter's standard error is the larger of the sandwich's and half the halves' difference
(the standard error of the mean of two independent halves, from their one difference).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .score import CalibrationFrame, WindowScore

#: A local search: (score, theta, free) -> the nearest peak's theta.
Climb = Callable[[WindowScore, np.ndarray, np.ndarray], np.ndarray]


def score_derivatives(score: WindowScore, theta: np.ndarray, index: np.ndarray,
                      h: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """
    Return the score's Hessian over ``index`` (central differences), frame gradients, score.

    The gradients are each frame's (F, n), as shares of the window score (a frame's score
    over the number of frames); the score is the window's at ``theta``, or a tenth of the
    edge maps' scale where that is larger (``WindowScore.scale``; a contrast map's score is
    near zero): the unit relative drops are taken in.
    """
    n = len(index)
    center = score.per_frame(theta)

    def at(offsets: dict[int, float]) -> np.ndarray:
        trial = theta.copy()
        for position, sign in offsets.items():
            trial[index[position]] += sign * h[position]
        return score.per_frame(trial)

    plus = [at({i: 1.0}) for i in range(n)]
    minus = [at({i: -1.0}) for i in range(n)]
    gradients = np.zeros((len(center), n))
    for i in range(n):
        gradients[:, i] = (plus[i] - minus[i]) / (2 * h[i])
    total = max(float(center.mean()), 0.1 * score.scale)  # the unit drops are measured in
    hessian = np.zeros((n, n))
    for i in range(n):
        hessian[i, i] = (plus[i].mean() - 2 * center.mean() + minus[i].mean()) / h[i] ** 2
        for j in range(i + 1, n):
            cross = (at({i: 1.0, j: 1.0}).mean() - at({i: 1.0, j: -1.0}).mean()
                     - at({i: -1.0, j: 1.0}).mean() + at({i: -1.0, j: -1.0}).mean())
            hessian[i, j] = hessian[j, i] = cross / (4 * h[i] * h[j])
    return hessian, gradients / len(center), total


def curvature_inverse(hessian: np.ndarray, total: float) -> np.ndarray:
    """Return ``(-H)^-1`` with a curvature floor: a flat direction gets a large variance."""
    if hessian.size == 0:
        return hessian
    values, vectors = np.linalg.eigh(-(hessian + hessian.T) / 2)
    values = np.maximum(values, 1e-9 * max(total, 1e-12))
    return (vectors / values) @ vectors.T


def sharp_parameters(hessian: np.ndarray, total: float, tolerances: np.ndarray,
                     least_drop: float) -> np.ndarray:
    """
    Return which parameters' *marginal* peak is sharp enough to resolve their tolerance.

    A parameter counts when moving it by its tolerance, every other free one re-adjusted,
    costs at least ``least_drop`` of the score; the weakest one is dropped (held at the given
    value) and the rest judged again without it.
    """
    kept = np.ones(len(tolerances), bool)
    while kept.any():
        positions = np.flatnonzero(kept)
        inverse = curvature_inverse(hessian[np.ix_(positions, positions)], total)
        drops = 0.5 * tolerances[positions] ** 2 / np.diag(inverse) / max(total, 1e-12)
        weakest = int(np.argmin(drops))
        if drops[weakest] >= least_drop:
            break
        kept[positions[weakest]] = False
    return kept


def sandwich_errors(hessian: np.ndarray, gradients: np.ndarray, total: float) -> np.ndarray:
    """Return the sandwich standard errors with the frames as samples."""
    frames, n = gradients.shape
    if n == 0:
        return np.zeros(0)
    inverse = curvature_inverse(hessian, total)
    meat = gradients.T @ gradients * frames / max(frames - 1, 1)
    return np.sqrt(np.maximum(np.diag(inverse @ meat @ inverse), 0.0))


def pixel_jacobian(score: WindowScore, theta: np.ndarray, index: np.ndarray,
                   h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """
    Return how the outline points' pixels move per unit of each parameter, and their weights.

    The Jacobian (2 M, n) by central differences over ``index``, one row per pixel coordinate
    of the M points in front of the camera and inside its image at ``theta``; the weights
    (2 M,) are the points' discontinuity weights, each frame's summing to one over the
    window's frames (as the score weighs them).
    """
    center = score.pixels(theta)
    keep, weights = [], []
    for frame, (uv, depth) in zip(score.frames, center):
        height, width = frame.edges.shape
        inside = (depth > 0) & (uv[:, 0] >= 0) & (uv[:, 0] <= width - 1) & (
            uv[:, 1] >= 0) & (uv[:, 1] <= height - 1)
        keep.append(inside)
        total = frame.weights[inside].sum()
        weights.append(np.repeat(frame.weights[inside] / max(total, 1e-12), 2))
    columns = []
    for position, parameter in enumerate(index):
        step = np.zeros(7)
        step[parameter] = h[position]
        plus, minus = score.pixels(theta + step), score.pixels(theta - step)
        columns.append(np.concatenate([((p[0] - m[0])[inside] / (2 * h[position])).ravel()
                                       for p, m, inside in zip(plus, minus, keep)]))
    weights = np.concatenate(weights) if weights else np.zeros(0)
    jacobian = np.stack(columns, axis=1) if columns else np.zeros((len(weights), 0))
    return jacobian, weights / max(weights.sum() / 2, 1e-12)


def parallax_px(jacobian: np.ndarray, weights: np.ndarray, tolerances: np.ndarray,
                judged: np.ndarray) -> np.ndarray:
    """
    Return per column how far its tolerance moves the points beyond what the others make up.

    The weighted root-mean-square pixel shift (per point, both coordinates) of moving the
    parameter by its tolerance, less its least-squares fit by every other column: what tells
    it apart from them. A translation differs from a rotation only by parallax, a shift that
    falls with depth: at one depth the two are the same. NaN for columns not ``judged``.
    """
    root = np.sqrt(weights)[:, None]
    scaled = jacobian * tolerances[None, :] * root
    shifts = np.full(jacobian.shape[1], np.nan)
    for column in np.flatnonzero(judged):
        others = np.delete(scaled, column, axis=1)
        target = scaled[:, column]
        if others.shape[1]:
            target = target - others @ np.linalg.lstsq(others, target, rcond=None)[0]
        shifts[column] = float(np.sqrt(target @ target))
    return shifts


def with_parallax(jacobian: np.ndarray, weights: np.ndarray, tolerances: np.ndarray,
                  judged: np.ndarray, least_px: float) -> tuple[np.ndarray, np.ndarray]:
    """
    Return which columns to keep and each judged column's parallax (px) when last judged.

    The judged column with the least parallax below ``least_px`` is dropped and the rest
    judged again without it (dropping a translation gives its coupled rotation back its
    own shift), until every judged column left moves the points by at least ``least_px``.
    """
    kept = np.ones(jacobian.shape[1], bool)
    record = np.full(jacobian.shape[1], np.nan)
    while (judged & kept).any():
        shifts = parallax_px(jacobian[:, kept], weights, tolerances[kept], (judged & kept)[kept])
        record[kept] = np.where(np.isnan(shifts), record[kept], shifts)
        weakest = np.flatnonzero(kept)[int(np.nanargmin(shifts))]
        if record[weakest] >= least_px:
            break
        kept[weakest] = False
    return kept, record


def ridge_basis(jacobian: np.ndarray, weights: np.ndarray, index: np.ndarray) -> np.ndarray:
    """
    Return the search's directions (7, 7): each translation with the rotation making it up.

    Column ``k`` of a translation in ``index`` is ``e_k - sum_r c_r e_r`` over the rotations
    in ``index``, ``c`` the weighted least-squares fit of the translation's pixel shift by
    theirs: moving along it changes only what tells the translation from a rotation. Other
    columns are the identity's.
    """
    basis = np.eye(7)
    root = np.sqrt(weights)[:, None]
    rotations = np.flatnonzero(index < 3)
    if not len(rotations):
        return basis
    for column in np.flatnonzero((index >= 3) & (index < 6)):
        fit = np.linalg.lstsq(jacobian[:, rotations] * root, jacobian[:, column] * root[:, 0],
                              rcond=None)[0]
        basis[index[rotations], index[column]] = -fit
    return basis


def half_windows(frames: list[CalibrationFrame]) -> tuple[list, list]:
    """Return the window's first and second half in time (the middle frame goes second)."""
    middle = len(frames) // 2
    return list(frames[:middle]), list(frames[middle:])


def half_window_spread(frames: list[CalibrationFrame], theta: np.ndarray, free: np.ndarray,
                       climb: Climb) -> tuple[np.ndarray, np.ndarray]:
    """
    Return ``|theta_first - theta_second|`` (7,) of the halves' own peaks, and the halves.

    Each half is climbed from the window's estimate ``theta`` over the ``free`` parameters;
    entries not free are NaN. A window of fewer than two frames has no halves: all NaN.
    """
    spread = np.full(7, np.nan)
    first, second = half_windows(frames)
    if not first or not second or not free.any():
        return spread, np.full((2, 7), np.nan)
    estimates = np.stack([climb(WindowScore(half), theta, free) for half in (first, second)])
    spread[free] = np.abs(estimates[0] - estimates[1])[free]
    return spread, estimates
