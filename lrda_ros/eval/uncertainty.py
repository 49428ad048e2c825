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
Confidence evaluated as uncertainty is: sparsification curves and AUSE.

Remove the least confident fraction ``f`` of the ground-truth pixels and take the MAE of the
rest, for ``f`` from 0 to 0.98: the sparsification curve, divided by the MAE at ``f = 0``. The
oracle removes the pixels with the largest error first; the area between the two curves (AUSE,
trapezoids over ``f``) is 0 for a confidence that orders pixels exactly as their errors, and
grows as it orders them worse. A random order scores about the area under the oracle's curve
below 1.
"""

from __future__ import annotations

import math

import numpy as np

#: Fractions of pixels removed, from none to all but 2 %.
FRACTIONS = np.linspace(0.0, 0.98, 50)


def _remaining_mae(errors_in_order: np.ndarray, fractions: np.ndarray) -> np.ndarray:
    """Return the MAE of what is left after removing the first ``f`` of the ordered errors."""
    count = errors_in_order.size
    tail_sums = np.concatenate([np.cumsum(errors_in_order[::-1])[::-1], [0.0]])
    removed = np.minimum((fractions * count).astype(np.int64), count - 1)
    return tail_sums[removed] / (count - removed)


def sparsification(errors: np.ndarray, confidence: np.ndarray,
                   fractions: np.ndarray = FRACTIONS) -> tuple[np.ndarray, np.ndarray]:
    """
    Return (curve, oracle) over ``fractions``, each divided by the MAE of all pixels.

    ``errors`` and ``confidence`` are per-pixel (1-D, the same pixels); ties in confidence
    keep the pixels' order.
    """
    errors = np.asarray(errors, dtype=np.float64)
    total = errors.mean()
    by_confidence = errors[np.argsort(np.asarray(confidence), kind='stable')]
    by_error = np.sort(errors)[::-1]
    scale = total if total > 0 else 1.0
    return (_remaining_mae(by_confidence, fractions) / scale,
            _remaining_mae(by_error, fractions) / scale)


def ause(curve: np.ndarray, oracle: np.ndarray, fractions: np.ndarray = FRACTIONS) -> float:
    """Return the area between a sparsification curve and its oracle."""
    gap = np.asarray(curve) - np.asarray(oracle)
    return float(np.sum(0.5 * (gap[1:] + gap[:-1]) * np.diff(fractions)))


def frame_sparsification(prediction: np.ndarray, ground_truth: np.ndarray,
                         confidence: np.ndarray) -> tuple[float, np.ndarray] | None:
    """
    Return (AUSE, curve) of one frame, over pixels with ground truth, depth and confidence.

    None where fewer than 10 such pixels exist.
    """
    usable = (np.isfinite(ground_truth) & (ground_truth > 0) & np.isfinite(prediction)
              & np.isfinite(confidence))
    if np.count_nonzero(usable) < 10:
        return None
    errors = np.abs(prediction[usable].astype(np.float64) - ground_truth[usable])
    curve, oracle = sparsification(errors, confidence[usable])
    return ause(curve, oracle), curve


def mean_finite(values) -> float:
    """Return the mean of the finite values (NaN when there are none)."""
    finite = [value for value in values if value is not None and math.isfinite(value)]
    return float(np.mean(finite)) if finite else math.nan
