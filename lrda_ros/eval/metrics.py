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
Depth-completion error metrics (KITTI DC / NYUv2 conventions).

All depths are z-depth in metres; ``0`` (or any non-finite value) in the ground truth marks a
pixel without a measurement. Per-frame metrics are computed over the valid ground-truth pixels
only; :func:`aggregate` averages them over frames, which is how the KITTI depth-completion devkit
and the NYUv2 literature report a benchmark (the mean of per-frame RMSE, not the RMSE of all
pixels pooled).

Units: ``mae`` and ``rmse`` in metres; ``imae`` and ``irmse`` on inverse depth in 1/km (inverse
depth in 1/m times 1000, the KITTI DC leaderboard unit); ``absrel`` and ``delta*`` unitless.

NaN in a prediction means "no depth here" (REP 118). Those pixels are left out of the errors
and counted in ``num_no_depth``; ``coverage`` is the fraction of valid ground-truth pixels that
got a depth, reported beside the errors so a method cannot look better by abstaining
unnoticed. +Inf is REP 118's "too far", what the node publishes beyond its far limit
(``far_depth: too_far``): an answer, scored as the upper clamp; -Inf, "too close" (nearer than
its ``min_depth``), is scored as the lower clamp. Other unusable predictions (not positive) would
turn the inverse-depth metrics into NaN or infinity: they are counted
in ``num_invalid_pred`` and replaced by ``min_depth``, so they are penalised. Every
prediction is then clamped to ``[min_depth, max_depth]`` (``max_depth`` defaults to
:data:`PRED_CAP_M` when not given), as in the Eigen et al. evaluation code. A frame with no
depth at any valid pixel has NaN errors and coverage 0.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Sequence

import numpy as np

#: Upper clamp for predictions (metres) when ``compute_metrics`` gets no ``max_depth``.
PRED_CAP_M = 1.0e4

_INT_FIELDS = ('num_valid', 'num_invalid_pred', 'num_no_depth')


@dataclass(frozen=True)
class DepthMetrics:
    """Errors of one depth map (or the mean over frames after :func:`aggregate`)."""

    mae: float
    rmse: float
    imae: float
    irmse: float
    absrel: float
    delta1: float
    delta2: float
    delta3: float
    num_valid: int
    num_invalid_pred: int = 0
    #: Valid ground-truth pixels whose prediction is NaN (no depth), left out of the errors.
    num_no_depth: int = 0
    #: Fraction of valid ground-truth pixels with a predicted depth.
    coverage: float = 1.0

    def to_dict(self) -> dict[str, float | int]:
        """Return the metrics as a plain ``{name: value}`` dict (JSON-serialisable)."""
        return {k: (int(v) if k in _INT_FIELDS else float(v)) for k, v in asdict(self).items()}


def valid_gt_mask(gt: np.ndarray, min_depth: float = 1e-3,
                  max_depth: float | None = None) -> np.ndarray:
    """Return the boolean mask of ground-truth pixels that count for evaluation."""
    gt = np.asarray(gt)
    with np.errstate(invalid='ignore'):
        mask = np.isfinite(gt) & (gt > min_depth)
        if max_depth is not None:
            mask &= gt <= max_depth
    return mask


def compute_metrics(pred: np.ndarray, gt: np.ndarray, min_depth: float = 1e-3,
                    max_depth: float | None = None,
                    mask: np.ndarray | None = None) -> DepthMetrics:
    """
    Compute the depth errors of ``pred`` against ``gt`` over the valid ground truth.

    :param pred: HxW predicted depth in metres.
    :param gt: HxW ground-truth depth in metres; non-finite or <= ``min_depth`` is invalid.
    :param min_depth: GT at or below this is ignored; predictions are clamped up to it.
    :param max_depth: GT above this is ignored and predictions are clamped down to it.
    :param mask: optional extra HxW boolean mask (e.g. an evaluation crop), ANDed in.
    :raises ValueError: on mismatched shapes, or when no ground-truth pixel is valid.
    """
    pred = np.asarray(pred)
    gt = np.asarray(gt)
    if pred.shape != gt.shape:
        raise ValueError(f'pred shape {pred.shape} does not match gt shape {gt.shape}')
    if min_depth <= 0:
        raise ValueError(f'min_depth must be > 0, got {min_depth}')
    if max_depth is not None and max_depth <= min_depth:
        raise ValueError(f'max_depth ({max_depth}) must be > min_depth ({min_depth})')
    valid = valid_gt_mask(gt, min_depth, max_depth)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != gt.shape:
            raise ValueError(f'mask shape {mask.shape} does not match gt shape {gt.shape}')
        valid &= mask
    num_valid = int(valid.sum())
    if num_valid == 0:
        raise ValueError('no valid ground-truth pixel (finite, > min_depth'
                         + (', <= max_depth' if max_depth is not None else '') + ')')
    g = gt[valid].astype(np.float64)
    p = pred[valid].astype(np.float64)
    has_depth = ~np.isnan(p)
    num_no_depth = int(num_valid - has_depth.sum())
    coverage = float(has_depth.mean())
    if not has_depth.any():
        nan = float('nan')
        return DepthMetrics(nan, nan, nan, nan, nan, nan, nan, nan, num_valid, 0, num_no_depth,
                            coverage)
    g, p = g[has_depth], p[has_depth]
    cap = PRED_CAP_M if max_depth is None else float(max_depth)
    with np.errstate(invalid='ignore'):
        bad = (p <= 0) & ~np.isneginf(p)  # +-inf: too far or too close, answers (REP 118)
    p = np.nan_to_num(p, nan=min_depth, posinf=cap, neginf=min_depth)
    p = np.clip(p, min_depth, cap)
    err = p - g
    ierr = (1.0 / p - 1.0 / g) * 1000.0
    ratio = np.maximum(p / g, g / p)
    return DepthMetrics(
        mae=float(np.mean(np.abs(err))),
        rmse=float(np.sqrt(np.mean(err ** 2))),
        imae=float(np.mean(np.abs(ierr))),
        irmse=float(np.sqrt(np.mean(ierr ** 2))),
        absrel=float(np.mean(np.abs(err) / g)),
        delta1=float(np.mean(ratio < 1.25)),
        delta2=float(np.mean(ratio < 1.25 ** 2)),
        delta3=float(np.mean(ratio < 1.25 ** 3)),
        num_valid=num_valid,
        num_invalid_pred=int(bad.sum()),
        num_no_depth=num_no_depth,
        coverage=coverage,
    )


def aggregate(metrics: Sequence[DepthMetrics]) -> DepthMetrics:
    """
    Average per-frame metrics over frames (the benchmark convention).

    Every error and ratio field is the unweighted mean of the per-frame values, so each frame
    counts once whatever its number of valid pixels, as in the KITTI DC devkit. Frames without
    any predicted depth (NaN errors) are left out of the errors; ``coverage`` includes them.
    The counts ``num_valid``, ``num_invalid_pred`` and ``num_no_depth`` are summed.

    :raises ValueError: when ``metrics`` is empty.
    """
    metrics = list(metrics)
    if not metrics:
        raise ValueError('aggregate() needs at least one DepthMetrics')
    values = {}
    for f in fields(DepthMetrics):
        column = [getattr(m, f.name) for m in metrics]
        if f.name in _INT_FIELDS:
            values[f.name] = int(sum(column))
        else:
            finite = [value for value in column if not np.isnan(value)]
            # A frame without any depth has no errors to average; its coverage (0) counts.
            values[f.name] = float(np.mean(finite)) if finite else float('nan')
    return DepthMetrics(**values)
