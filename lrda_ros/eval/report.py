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
Evaluation reports: per-frame CSV, summary table (Markdown + JSON) and figures (PNG).

Figures: per frame, RGB | sparse input | ground truth on top and one row per method with its
prediction and absolute error (depth and error each on one colour scale shared by all panels,
with a colour bar in metres); and a speed/accuracy plot, time per frame against MAE with one
point per method.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from .datasets import Frame
from .harness import EvalResult, METRIC_NAMES
from ..colormap import colorize_depth, depth_display_range

_COLUMNS = {'mae': 'MAE (m)', 'rmse': 'RMSE (m)', 'imae': 'iMAE (1/km)',
            'irmse': 'iRMSE (1/km)', 'absrel': 'AbsRel', 'delta1': 'δ<1.25'}


def write_csv(result: EvalResult, path: Path) -> None:
    """Write one row per (frame, method)."""
    rows = [record.row() for record in result.records]
    if not rows:
        return
    with open(path, 'w', newline='') as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def summary_markdown(summary: dict[str, dict], title: str) -> str:
    """Return the summary as a Markdown table."""
    header = ['method', 'frames', *_COLUMNS.values(), 's/frame', 'peak MB', 'iterations']
    lines = [f'# {title}', '', '| ' + ' | '.join(header) + ' |',
             '|' + '---|' * len(header)]
    for method, entry in summary.items():
        if not entry.get('frames'):
            lines.append(f'| {method} | 0 | ' + ' | '.join(['–'] * (len(header) - 2)) + ' |')
            continue
        cells = [method, str(entry['frames'])]
        cells += [f'{entry[name]:.4f}' if name in ('absrel', 'delta1') else f'{entry[name]:.3f}'
                  for name in METRIC_NAMES]
        cells += [_number(entry['seconds_per_frame'], 2), _number(entry['peak_mb'], 0),
                  _number(entry['iterations'], 1)]
        lines.append('| ' + ' | '.join(cells) + ' |')
    failures = {m: e['failures'] for m, e in summary.items() if e.get('failures')}
    if failures:
        lines += ['', f'Failed frames (not scored): {failures}']
    return '\n'.join(lines) + '\n'


def _number(value: float, digits: int) -> str:
    """Format a number, or a dash where it was not measured (NaN)."""
    return '–' if value != value else f'{value:.{digits}f}'


def write_summary(result: EvalResult, folder: Path, title: str,
                  metadata: dict | None = None) -> dict:
    """Write summary.json and summary.md; return the summary."""
    summary = result.summary()
    (folder / 'summary.json').write_text(json.dumps(
        {'title': title, 'metadata': metadata or {}, 'methods': summary}, indent=2) + '\n')
    (folder / 'summary.md').write_text(summary_markdown(summary, title))
    return summary


#: Width in pixels of one panel of a frame figure (4 inches at the figure's 90 dpi).
PANEL_PIXELS = 360


def frame_figure(frame: Frame, predictions: dict[str, np.ndarray], path: Path) -> None:
    """
    Save RGB | sparse | ground truth, then prediction | error per method.

    Depth panels share one colour scale and error panels another, each with a colour bar in
    metres. Sparse input, ground truth and errors (defined where the ground truth is) are drawn
    as squares grown from their pixels, sized so that they stay visible whatever the image
    width: each covers about the same area of the panel at 320 or 2048 pixels wide.
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    gt = frame.gt_depth
    has_gt = gt is not None and bool(np.any(gt > 0))
    near, far = depth_display_range(gt if has_gt else frame.sparse_depth)
    radius = marker_radius(frame.width)
    errors = {m: np.where(gt > 0, np.abs(p - gt), np.nan) for m, p in predictions.items()} \
        if has_gt else {}
    finite = [e[np.isfinite(e)] for e in errors.values() if np.isfinite(e).any()]
    error_max = max(float(np.percentile(np.concatenate(finite), 95)), 1e-3) if finite else 1.0
    rows = 1 + len(predictions)
    aspect = frame.height / frame.width
    figure, axes = plt.subplots(rows, 3, figsize=(13, 4 * aspect * rows + 0.8), squeeze=False,
                                layout='constrained')
    gt_spread = spread_index(gt, radius) if has_gt else None
    panels = [(frame.rgb, 'RGB'),
              (colorize_depth(gather(frame.sparse_depth,
                                     spread_index(frame.sparse_depth, radius)), near, far),
               f'sparse input ({np.count_nonzero(frame.sparse_depth > 0)} px)')]
    if has_gt:
        panels.append((colorize_depth(gather(gt, gt_spread), near, far),
                       f'ground truth ({np.count_nonzero(gt > 0)} px)'))
    for axis, (image, title) in zip(axes[0], panels):
        axis.imshow(image, interpolation='nearest')
        axis.set_title(title, fontsize=9)
    error_image = None
    error_cmap = matplotlib.colormaps['magma'].with_extremes(bad='0.25')
    for row, (method, prediction) in enumerate(predictions.items(), start=1):
        axes[row, 0].imshow(colorize_depth(prediction, near, far), interpolation='nearest')
        axes[row, 0].set_title(f'{method}: depth', fontsize=9)
        if method in errors:
            error_image = axes[row, 1].imshow(gather(errors[method], gt_spread, np.nan),
                                              cmap=error_cmap, vmin=0, vmax=error_max,
                                              interpolation='nearest')
            mae = np.nanmean(errors[method])
            axes[row, 1].set_title(f'{method}: |error| at ground truth (MAE {mae:.3f} m)',
                                   fontsize=9)
    for axis in axes.ravel():
        axis.axis('off')
    depth_bar = figure.colorbar(_depth_mappable(near, far), ax=axes[:, 2], fraction=0.08,
                                aspect=30 * rows)
    depth_bar.set_label('depth (m)')
    ticks = _depth_ticks(near, far)
    depth_bar.set_ticks(ticks, labels=[f'{t:g}' for t in ticks])
    if error_image is not None:
        error_bar = figure.colorbar(error_image, ax=axes[1:, 1], fraction=0.05,
                                    aspect=30 * (rows - 1), extend='max')
        error_bar.set_label('absolute error (m)')
    figure.suptitle(f'{frame.name}   ({frame.width}x{frame.height}; points drawn '
                    f'{2 * radius + 1}x{2 * radius + 1} px)', fontsize=10)
    figure.savefig(path, dpi=90)
    plt.close(figure)


def marker_radius(width: int, panel_pixels: int = PANEL_PIXELS) -> int:
    """Return the half-size in image pixels that makes a point ~2 panel pixels wide."""
    return max(1, int(round(width / panel_pixels)))


def spread_index(depth: np.ndarray, radius: int) -> np.ndarray:
    """
    Return, per pixel, the flat index of the nearest-depth measured pixel within ``radius``.

    A (2 radius + 1)^2 square around each measured pixel (> 0, finite) takes its index, the
    nearest depth winning where squares overlap (as a nearer surface hides a farther one);
    -1 where no measurement is within reach. Images do not wrap at their borders.
    """
    valid = np.isfinite(depth) & (depth > 0)
    priority = np.where(valid, depth, np.inf)
    index = np.where(valid, np.arange(depth.size).reshape(depth.shape), -1)
    for axis in (0, 1):  # a square's minimum is the minimum of the row-wise minima
        best_priority, best_index = priority.copy(), index.copy()
        for offset in [o for step in range(1, radius + 1) for o in (step, -step)]:
            candidate = _shift(priority, offset, axis, np.inf)
            better = candidate < best_priority
            best_priority[better] = candidate[better]
            best_index[better] = _shift(index, offset, axis, -1)[better]
        priority, index = best_priority, best_index
    return index


def gather(values: np.ndarray, index: np.ndarray, empty: float = 0.0) -> np.ndarray:
    """Return ``values`` at ``spread_index``'s indices (``empty`` where it is -1)."""
    return np.where(index >= 0, values.ravel()[np.maximum(index, 0)], empty).astype(np.float32)


def _shift(array: np.ndarray, offset: int, axis: int, fill: float) -> np.ndarray:
    """Return ``array`` moved by ``offset`` along ``axis``, ``fill`` where nothing moved in."""
    out = np.full_like(array, fill)
    length = array.shape[axis]
    if abs(offset) >= length:
        return out
    source = [slice(None)] * 2
    target = [slice(None)] * 2
    source[axis] = slice(max(0, -offset), length - max(0, offset))
    target[axis] = slice(max(0, offset), length - max(0, -offset))
    out[tuple(target)] = array[tuple(source)]
    return out


def _depth_mappable(near: float, far: float):
    """Return a colour-bar source that maps metres exactly as :func:`colorize_depth` does."""
    import matplotlib
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import FuncNorm

    # colorize_depth: turbo((1/d - 1/far) / (1/near - 1/far)); FuncNorm of 1/d runs from 0 at
    # near to 1 at far, so the reversed palette gives the same colour for every depth.
    def inverse(values):
        return 1.0 / np.maximum(np.asarray(values, dtype=np.float64), 1e-9)

    norm = FuncNorm((inverse, inverse), vmin=near, vmax=far)
    return ScalarMappable(norm=norm, cmap=matplotlib.colormaps['turbo_r'])


def _depth_ticks(near: float, far: float, min_gap: float = 0.07) -> list[float]:
    """Return near, far and round depths between, at least ``min_gap`` of the bar apart."""
    def position(depth: float) -> float:  # along the bar, as colorize_depth's inverse depth
        return (1.0 / near - 1.0 / depth) / (1.0 / near - 1.0 / far)

    candidates = sorted(m * 10.0 ** e for e in range(-2, 4) for m in (1, 2, 3, 5))
    ticks = [near]
    for tick in candidates:
        if near < tick < far and position(tick) - position(ticks[-1]) >= min_gap \
                and 1.0 - position(tick) >= min_gap:
            ticks.append(tick)
    return [float(f'{t:.3g}') for t in ticks + [far]]


def speed_accuracy_plot(summary: dict[str, dict], path: Path, title: str) -> None:
    """Plot time per frame (log) against MAE, one labelled point per method."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6.5, 4.5))
    for method, entry in summary.items():
        if not entry.get('frames'):
            continue
        seconds = max(entry['seconds_per_frame'], 1e-4)
        axis.scatter(seconds, entry['mae'], s=40)
        axis.annotate(method, (seconds, entry['mae']), textcoords='offset points',
                      xytext=(5, 4), fontsize=9)
    axis.set_xscale('log')
    axis.set_xlabel('time per frame (s, log scale)')
    axis.set_ylabel('MAE (m)')
    axis.set_title(title, fontsize=10)
    axis.grid(True, which='both', alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
