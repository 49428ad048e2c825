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
The sparse-depth outlier filter of the depth-completion benchmarks (LiDAR seen through objects).

A LiDAR mounted above or beside the camera sees background through gaps that, from the camera,
are covered by a nearer object; projected into the image, those returns sit among the object's
pixels with a much larger depth. The field removes them with a local-window rule: Conti et al.,
"Sparsity Agnostic Depth Completion" (WACV 2023), as implemented by VPP4DC (bartn8/vppdc,
``filter.py``: ``delta_depth`` / ``conti_conf_depth`` / ``filter``) and applied by Marigold-DC
(prs-eth/Marigold-DC, ``script/utils.py`` ``filter_heuristic_depth(nx=7, ny=7, th=1.5)``) to the
KITTI DC and DDAD sparse inputs; VPP4DC's DDAD conversion (``convert_ddad.py``) applies the same
rule with a 3 m threshold to the DDAD ground truth.

The rule, exactly: every valid pixel ``q`` (depth > 0) takes the minimum ``m(q)`` of the depths
above 1 mm in its ``width x height`` window (clipped at the image border); every valid pixel
``p`` is removed when, for some valid ``q`` whose window contains ``p``,
``depth(p) - m(q) > threshold_m``. Equivalently ``p`` is compared with the nearest depth found in
the windows of its valid neighbours, which reaches up to twice the half-window away.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .checks import InvalidConfigError

#: Depths at or below this (metres) are not candidates for a window's minimum (as in VPP4DC).
WINDOW_MIN_FLOOR_M = 1e-3


@dataclass(frozen=True)
class OutlierFilter:
    """
    The local-window background-point filter (see the module docstring for the rule).

    ``window``: ``(width, height)`` in pixels, odd. ``threshold_m``: metres a point may lie
    behind the nearest point of a neighbouring window before it is removed.
    """

    window: tuple[int, int] = (7, 7)
    threshold_m: float = 1.5

    def __post_init__(self) -> None:
        """Reject windows that are not odd positive sizes and negative thresholds."""
        window = tuple(self.window)
        if (len(window) != 2 or any(isinstance(s, bool) or not isinstance(s, (int, np.integer))
                                    or s < 1 or s % 2 == 0 for s in window)):
            raise InvalidConfigError(f'outlier window must be two odd sizes >= 1 (width, '
                                     f'height), got {self.window!r}', field='window')
        object.__setattr__(self, 'window', (int(window[0]), int(window[1])))
        if not (np.isfinite(self.threshold_m) and self.threshold_m >= 0):
            raise InvalidConfigError(f'outlier threshold must be a finite number >= 0 m, got '
                                     f'{self.threshold_m}', field='threshold_m')


#: KITTI DC and DDAD sparse input, as Marigold-DC filters it (7x7 window, 1.5 m).
SPARSE_INPUT_FILTER = OutlierFilter((7, 7), 1.5)
#: DDAD ground truth, as VPP4DC's conversion filters it (7x7 window, 3 m).
DDAD_GROUND_TRUTH_FILTER = OutlierFilter((7, 7), 3.0)


def _box_min(values: np.ndarray, half_width: int, half_height: int) -> np.ndarray:
    """Return the minimum over each pixel's clipped window (``inf`` outside the image)."""
    height, width = values.shape
    padded = np.pad(values, ((half_height, half_height), (half_width, half_width)),
                    mode='constant', constant_values=np.inf)
    # Separable: rows first, then columns, one shifted slice per offset.
    rows = padded[:height].copy()
    for offset in range(1, 2 * half_height + 1):
        np.minimum(rows, padded[offset:offset + height], out=rows)
    out = rows[:, :width].copy()
    for offset in range(1, 2 * half_width + 1):
        np.minimum(out, rows[:, offset:offset + width], out=out)
    return out


def outlier_mask(depth: np.ndarray, config: OutlierFilter = SPARSE_INPUT_FILTER) -> np.ndarray:
    """Return the boolean mask of sparse points the rule removes (HxW; 0 = no point)."""
    values = np.asarray(depth, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f'sparse depth must be HxW, got shape {values.shape}')
    with np.errstate(invalid='ignore'):
        valid = np.isfinite(values) & (values > 0)
        candidate = valid & (values > WINDOW_MIN_FLOOR_M)
    half_width, half_height = config.window[0] // 2, config.window[1] // 2
    window_min = _box_min(np.where(candidate, values, np.inf), half_width, half_height)
    # Only windows centred on a valid point take part; their minima spread over their windows.
    reach_min = _box_min(np.where(valid, window_min, np.inf), half_width, half_height)
    with np.errstate(invalid='ignore'):
        return valid & (values - reach_min > config.threshold_m)


def filter_outliers(depth: np.ndarray, config: OutlierFilter = SPARSE_INPUT_FILTER
                    ) -> tuple[np.ndarray, int]:
    """Return (a copy of ``depth`` with the removed points set to 0, how many were removed)."""
    removed = outlier_mask(depth, config)
    out = np.array(depth, copy=True)
    out[removed] = 0
    return out, int(removed.sum())
