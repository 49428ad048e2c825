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
``summary.md``, ``speed_accuracy.png``, ``sparsification.png`` (where a frame has an AUSE) and
``frames/<frame>.png`` (:func:`figure_path`), with the same metadata keys
(:func:`report_metadata`); the figures are drawn by :mod:`.figures`.
"""

from __future__ import annotations

import csv
from dataclasses import asdict, is_dataclass
from enum import Enum
import json
import math
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from .figures import sparsification_plot, speed_accuracy_plot
from .harness import EvalResult, METRIC_NAMES
from ..engine.names import is_demo_prior_source

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


def summary_markdown(summary: dict[str, dict], title: str,
                     engine: dict[str, Any] | None = None) -> str:
    """Return the summary as a Markdown table, after the engine's sentence when given."""
    header = ['method', 'frames', *_COLUMNS.values(), 'TAE', 'MAE spread (m)', 'AUSE',
              'AUSE LiDAR dist.', 's/frame', 'peak MB', 'iterations']
    lines = [f'# {title}', '', *([engine_line(engine), ''] if engine else []),
             '| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
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
    if isinstance(value, np.ndarray):
        return json_ready(value.tolist())
    if isinstance(value, Enum):
        return json_ready(value.value)
    if is_dataclass(value) and not isinstance(value, type):
        return json_ready(asdict(value))
    if isinstance(value, Mapping):
        return json_ready(dict(value))
    return str(value)


def report_title(kind: str, root: str | Path) -> str:
    """Return a report's title: the kind and the folder's name, the name once when they agree."""
    name = Path(root).name
    return kind if name == kind else f'{kind}: {name}'


def weights_origin(source: str | None) -> str | None:
    """Say where a model's weights came from: the demo prior, a file, a folder or the hub."""
    if source is None:
        return None
    if is_demo_prior_source(source):
        return 'the embedded demo prior, trained on the synthetic world, not a foundation model'
    path = Path(source).expanduser()
    if path.is_file():
        return f'checkpoint file {path.resolve()}'
    if path.is_dir():
        return f'local folder {path.resolve()}'
    return f'Hugging Face hub id {source} (local cache, else the hub)'


def engine_metadata(source: str | None, device: str, config: Any,
                    weights: str | None = None) -> dict[str, Any]:
    """
    Return what a report says about the engine: model, weights, device, precision, schedule.

    ``source``: the loaded model's spec (None when no method needed one); ``config``: the
    TTOConfig the methods started from; ``weights``: where the weights came from, when the
    source does not say it (:func:`weights_origin`). ``precision`` is what ``dtype`` resolves
    to on the device ('auto' becomes bfloat16 or float32).
    """
    import torch

    from ..engine.precision import resolve_precision

    return {'model': source, 'weights': weights or weights_origin(source),
            'device': str(device), 'dtype': config.dtype,
            'precision': resolve_precision(torch.device(device), config.dtype),
            'schedule': config.schedule, 'iterations': config.iterations,
            'warm_iterations': config.warm_iterations, 'learning_rate': config.learning_rate,
            'processing_size': config.processing_size}


def engine_line(engine: dict[str, Any]) -> str:
    """Return the report's sentence on the engine (a dict of :func:`engine_metadata`)."""
    if engine.get('model') is None:
        return f"No depth model (classical methods only), device {engine['device']}."
    size = engine['processing_size'] or 'the image size'
    return (f"Model `{engine['model']}` ({engine['weights']}), device {engine['device']}, "
            f"precision {engine['precision']} (dtype {engine['dtype']}), schedule "
            f"'{engine['schedule']}': at most {engine['iterations']} steps cold, "
            f"{engine['warm_iterations']} warm, learning rate {engine['learning_rate']:g}, "
            f'network input {size}.')


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
    engine = (metadata or {}).get('engine')
    _write_text(folder / SUMMARY_MD, summary_markdown(summary, title, engine))
    return summary


def figure_path(folder: Path, frame_name: str) -> Path:
    """Return where a frame's figure goes in a report folder (every report names them so)."""
    return Path(folder) / FIGURES_DIR / f'{frame_name}.png'


def report_metadata(*, methods: Sequence[str], model: str | None, device: str | None,
                    options: dict[str, Any], source: str | None,
                    topics: dict[str, str] | None, frames: int,
                    sync_losses: dict | None, engine: dict[str, Any] | None,
                    pairing: dict | None = None, **extra: Any) -> dict:
    """
    Return a report's metadata: the same keys for ``lrda eval`` and the live evaluator.

    ``model``: the model's source as loaded (``demo`` for the demonstration prior, which
    ``demo_prior`` records); ``source``: the dataset folder or bag (None when not known);
    ``topics``: the topics read, by role (None for datasets); ``frames``: frames scored;
    ``sync_losses``: the synchronizer's losses per reason (None when nothing was
    synchronized); ``engine``: :func:`engine_metadata` (None where the writer does not run
    the engine: the live evaluator scores a topic); ``pairing``: the rule that paired a bag's
    clouds with its images and each set's stamps (None: datasets, and the live evaluator, which
    scores what the node paired); ``extra``: anything the writer adds.
    """
    return {'methods': list(methods), 'model': model, 'device': device,
            'demo_prior': is_demo_prior_source(model), 'options': options, 'source': source,
            'topics': topics, 'frames': frames, 'sync_losses': sync_losses, 'engine': engine,
            'pairing': pairing, **extra}


def write_report(result: EvalResult, folder: Path, title: str, metadata: dict,
                 plot_title: str) -> dict:
    """
    Write frames.csv, summary.json/.md, speed_accuracy.png and sparsification.png.

    Return the summary.
    """
    folder = Path(folder)
    (folder / FIGURES_DIR).mkdir(parents=True, exist_ok=True)
    write_csv(result, folder / FRAMES_CSV)
    summary = write_summary(result, folder, title, metadata)
    speed_accuracy_plot(summary, folder / SPEED_ACCURACY_PNG, plot_title)
    sparsification_plot(result, folder / SPARSIFICATION_PNG, title)
    return summary
