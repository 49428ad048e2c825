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
prediction and absolute error (depth and error each on one colour scale shared by all panels);
and a speed/accuracy plot, time per frame against MAE with one point per method.
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


def frame_figure(frame: Frame, predictions: dict[str, np.ndarray], path: Path) -> None:
    """Save RGB | sparse | ground truth, then prediction | error per method (shared scales)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    gt = frame.gt_depth
    reference = gt if gt is not None and np.any(gt > 0) else frame.sparse_depth
    near, far = depth_display_range(reference)
    valid = gt > 0 if gt is not None else None
    errors = {m: np.where(valid, np.abs(p - gt), np.nan) for m, p in predictions.items()} \
        if valid is not None else {}
    finite = [e[np.isfinite(e)] for e in errors.values() if np.isfinite(e).any()]
    error_max = float(np.percentile(np.concatenate(finite), 95)) if finite else 1.0
    rows = 1 + len(predictions)
    aspect = frame.height / frame.width
    figure, axes = plt.subplots(rows, 3, figsize=(12, 4 * aspect * rows + 0.6), squeeze=False)
    sparse_view = colorize_depth(_dilate_points(frame.sparse_depth), near, far)
    panels = [(frame.rgb, 'RGB'), (sparse_view, f'sparse input '
                                   f'({np.count_nonzero(frame.sparse_depth > 0)} px)')]
    if gt is not None:
        panels.append((colorize_depth(_dilate_points(gt), near, far), 'ground truth'))
    for axis, (image, title) in zip(axes[0], panels):
        axis.imshow(image)
        axis.set_title(title, fontsize=9)
    for row, (method, prediction) in enumerate(predictions.items(), start=1):
        axes[row, 0].imshow(colorize_depth(prediction, near, far))
        axes[row, 0].set_title(f'{method}: depth', fontsize=9)
        if method in errors:
            image = axes[row, 1].imshow(errors[method], cmap='magma', vmin=0, vmax=error_max)
            mae = np.nanmean(errors[method])
            axes[row, 1].set_title(f'{method}: |error| (MAE {mae:.3f} m)', fontsize=9)
            figure.colorbar(image, ax=axes[row, 1], fraction=0.03, label='m')
    for axis in axes.ravel():
        axis.axis('off')
    figure.suptitle(f'{frame.name}   depth colour range {near:.1f}–{far:.1f} m', fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)


def _dilate_points(sparse: np.ndarray, radius: int = 1) -> np.ndarray:
    """Grow isolated depth pixels to small squares so they are visible in a figure."""
    out = sparse.copy()
    for dy in range(-radius, radius + 1):
        for dx in range(-radius, radius + 1):
            shifted = np.roll(np.roll(sparse, dy, axis=0), dx, axis=1)
            out = np.where(out > 0, out, shifted)
    return out


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
