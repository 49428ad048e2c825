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
Evaluation reports: per-frame CSV, summary table (Markdown + JSON), and the files' names.

``lrda eval`` and the live evaluator write the same files through :func:`write_report`:
``frames.csv``, ``summary.json`` (strict JSON: null where a number is NaN or infinite),
``summary.md``, ``speed_accuracy.png`` and ``frames/<frame>.png`` (:func:`figure_path`), with
the same metadata keys (:func:`report_metadata`); the figures are drawn by :mod:`.figures`.
"""

from __future__ import annotations

import csv
import json
import math
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .figures import sparsification_plot, speed_accuracy_plot
from .harness import EvalResult, METRIC_NAMES
from ..engine.loading import is_demo_prior_source

FRAMES_CSV = 'frames.csv'
SUMMARY_JSON = 'summary.json'
SUMMARY_MD = 'summary.md'
SPEED_ACCURACY_PNG = 'speed_accuracy.png'
SPARSIFICATION_PNG = 'sparsification.png'
FIGURES_DIR = 'frames'

_COLUMNS = {'mae': 'MAE (m)', 'rmse': 'RMSE (m)', 'imae': 'iMAE (1/km)',
            'irmse': 'iRMSE (1/km)', 'absrel': 'AbsRel', 'delta1': 'δ<1.25',
            'coverage': 'coverage'}


def write_csv(result: EvalResult, path: Path) -> None:
    """Write one row per (frame, method)."""
    rows = [record.row() for record in result.records]
    if not rows:
        return
    partial = path.with_name(path.name + '.partial')
    with open(partial, 'w', newline='') as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    os.replace(partial, path)


def summary_markdown(summary: dict[str, dict], title: str) -> str:
    """Return the summary as a Markdown table."""
    header = ['method', 'frames', *_COLUMNS.values(), 'TAE', 'MAE spread (m)', 'AUSE',
              'AUSE LiDAR dist.', 's/frame', 'peak MB', 'iterations']
    lines = [f'# {title}', '', '| ' + ' | '.join(header) + ' |',
             '|' + '---|' * len(header)]
    for method, entry in summary.items():
        if not entry.get('frames'):
            lines.append(f'| {method} | 0 | ' + ' | '.join(['–'] * (len(header) - 2)) + ' |')
            continue
        cells = [method, str(entry['frames'])]
        cells += [f'{entry[name]:.4f}' if name in ('absrel', 'delta1') else f'{entry[name]:.3f}'
                  for name in METRIC_NAMES]
        cells += [_number(entry.get('tae', math.nan), 4),
                  _number(entry.get('mae_spread', math.nan), 3),
                  _number(entry.get('ause', math.nan), 3),
                  _number(entry.get('ause_lidar_distance', math.nan), 3)]
        cells += [_number(entry['seconds_per_frame'], 2), _number(entry['peak_mb'], 0),
                  _number(entry['iterations'], 1)]
        lines.append('| ' + ' | '.join(cells) + ' |')
    failures = {m: e['failures'] for m, e in summary.items() if e.get('failures')}
    if failures:
        lines += ['', f'Failed frames (not scored): {failures}']
    lines += ['', 'TAE: temporal alignment error, the AbsRel between consecutive depth maps '
              'reprojected into each other with the camera poses (0 = consistent; '
              'doc/evaluation.md); – where no pose is known. MAE spread: standard deviation '
              'of the per-frame MAE. AUSE: area between the sparsification curve of '
              "depth/confidence and the oracle's (0 = best; sparsification.png), beside that "
              'of the distance to the nearest LiDAR pixel alone.']
    return '\n'.join(lines) + '\n'


def _number(value: float, digits: int) -> str:
    """Format a number, or a dash where it was not measured (NaN)."""
    return '–' if value != value else f'{value:.{digits}f}'


def json_ready(value: Any) -> Any:
    """
    Return ``value`` as strict JSON can hold it: NaN and infinities become None (null).

    Numpy scalars become Python numbers and other objects (paths, enums) their text, in
    nested dicts, lists and tuples too.
    """
    if isinstance(value, dict):
        return {str(key): json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(item) for item in value]
    if isinstance(value, (bool, str)) or value is None:
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    return str(value)


def _write_text(path: Path, text: str) -> None:
    """Replace ``path`` at once: a reader (or an interrupted run) never sees half a file."""
    partial = path.with_name(path.name + '.partial')
    partial.write_text(text)
    os.replace(partial, path)


def write_summary(result: EvalResult, folder: Path, title: str,
                  metadata: dict | None = None) -> dict:
    """Write summary.json (strict JSON) and summary.md; return the summary."""
    summary = result.summary()
    document = json_ready({'title': title, 'metadata': metadata or {}, 'methods': summary})
    _write_text(folder / SUMMARY_JSON, json.dumps(document, indent=2, allow_nan=False) + '\n')
    _write_text(folder / SUMMARY_MD, summary_markdown(summary, title))
    return summary


def figure_path(folder: Path, frame_name: str) -> Path:
    """Return where a frame's figure goes in a report folder (every report names them so)."""
    return Path(folder) / FIGURES_DIR / f'{frame_name}.png'


def report_metadata(*, methods: Sequence[str], model: str | None, device: str | None,
                    options: dict[str, Any], source: str | None,
                    topics: dict[str, str] | None, frames: int,
                    sync_losses: dict | None, **extra: Any) -> dict:
    """
    Return a report's metadata: the same keys for ``lrda eval`` and the live evaluator.

    ``model``: the model's source as loaded (``demo`` for the demonstration prior, which
    ``demo_prior`` records); ``source``: the dataset folder or bag (None when not known);
    ``topics``: the topics read, by role (None for datasets); ``frames``: frames scored;
    ``sync_losses``: the synchronizer's losses per reason (None when nothing was
    synchronized); ``extra``: anything the writer adds.
    """
    return {'methods': list(methods), 'model': model, 'device': device,
            'demo_prior': is_demo_prior_source(model), 'options': options, 'source': source,
            'topics': topics, 'frames': frames, 'sync_losses': sync_losses, **extra}


def write_report(result: EvalResult, folder: Path, title: str, metadata: dict,
                 plot_title: str) -> dict:
    """Write frames.csv, summary.json/.md and speed_accuracy.png; return the summary."""
    folder = Path(folder)
    (folder / FIGURES_DIR).mkdir(parents=True, exist_ok=True)
    write_csv(result, folder / FRAMES_CSV)
    summary = write_summary(result, folder, title, metadata)
    speed_accuracy_plot(summary, folder / SPEED_ACCURACY_PNG, plot_title)
    sparsification_plot(result, folder / SPARSIFICATION_PNG, title)
    return summary
