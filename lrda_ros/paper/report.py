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

"""The ``lrda paper`` report: our numbers beside the paper's (Markdown, JSON, PNG)."""

from __future__ import annotations

import json
from pathlib import Path

from .published import PAPER_DATASETS, paper_row, REFERENCE_ROWS
from ..eval.report import engine_line


def _cell(value: float | None, digits: int = 3) -> str:
    return '–' if value is None else f'{value:.{digits}f}'


def _signed(value: float | None) -> str:
    return '–' if value is None else f'{value:+.3f}'


def comparison_rows(data: dict) -> list[dict]:
    """Return, per evaluated dataset and method, our MAE/RMSE, the paper's and the difference."""
    rows = []
    for key in PAPER_DATASETS:
        result = data['datasets'].get(key)
        if result is None:
            continue
        for method, entry in result['methods'].items():
            paper = paper_row(data['paper_backbone'], method)
            cell = paper.get(key) if paper else None
            ours = (entry.get('mae'), entry.get('rmse'))
            row = {'dataset': key, 'label': result['label'], 'method': method,
                   'frames': entry['frames'], 'failures': entry['failures'],
                   'mae': ours[0], 'rmse': ours[1], 'paper_row': paper.label if paper else None,
                   'paper_mae': cell[0] if cell else None,
                   'paper_rmse': cell[1] if cell else None}
            row['delta_mae'] = (None if cell is None or ours[0] is None
                                else ours[0] - cell[0])
            row['delta_rmse'] = (None if cell is None or ours[1] is None
                                 else ours[1] - cell[1])
            rows.append(row)
    return rows


def paper_markdown(data: dict, rows: list[dict]) -> str:
    """Return the report as Markdown."""
    settings = data['settings']
    backbone, origin = data['paper_backbone'], data['backbone_origin']
    workers = f" on {data['workers']} Ray workers" if data.get('workers', 1) > 1 else ''
    lines = ["# lrda paper: the paper's table on its protocols", '',
             engine_line(data['engine']) + f" Seed {settings['seed']}; {data['seconds']:.0f} "
             f's{workers}; paper rows for **{backbone}** ({origin}).', '']
    if data['demo_prior']:
        lines += ['**Demo prior**: the embedded toy network, not a depth foundation model. '
                  'The differences to the paper say nothing about the method; the run checks '
                  'the protocols and the pipeline.', '']
    lines += ['## Datasets', '',
              '| dataset | protocol | frames evaluated / available / protocol | skipped | '
              'input points / frame | outliers removed / frame | network input (longer side) |',
              '|---|---|---|---|---|---|---|']
    for key in PAPER_DATASETS:
        result = data['datasets'].get(key)
        if result is None:
            continue
        lines.append(
            f"| {result['label']} | {result['description']} | {result['frames_evaluated']} / "
            f"{result['frames_available']} / {result['frames_protocol']} | "
            f"{result['frames_skipped']} | {_cell(result['input_points_mean'], 0)} | "
            f"{_cell(result['outliers_removed_mean'], 1)} | "
            f"{result['processing_size'] or 'image size'} |")
    if data['skipped_datasets']:
        lines += ['', 'Not run (no folder given): ' + ', '.join(
            f"{d['label']} (`{d['option']}`)" for d in data['skipped_datasets']) + '.']
    lines += ['', '## Ours beside the paper (metres; Δ = ours − paper)', '',
              '| dataset | method | frames | MAE | RMSE | paper row | paper MAE | paper RMSE | '
              'Δ MAE | Δ RMSE |', '|---|---|---|---|---|---|---|---|---|---|']
    for row in rows:
        lines.append(
            f"| {row['label']} | {row['method']} | {row['frames']} | {_cell(row['mae'])} | "
            f"{_cell(row['rmse'])} | {row['paper_row'] or '–'} | {_cell(row['paper_mae'])} | "
            f"{_cell(row['paper_rmse'])} | {_signed(row['delta_mae'])} | "
            f"{_signed(row['delta_rmse'])} |")
    lines += ['', "## The paper's table with our rows (MAE / RMSE, metres)", '',
              '| row | ' + ' | '.join(_label(key) for key in PAPER_DATASETS) + ' |',
              '|---' * (len(PAPER_DATASETS) + 1) + '|']
    methods = list(dict.fromkeys(row['method'] for row in rows))
    for method in methods:
        mine = {row['dataset']: row for row in rows if row['method'] == method}
        lines.append(f'| ours: {method} | ' + ' | '.join(
            f"{_cell(mine[k]['mae'])} / {_cell(mine[k]['rmse'])}" if k in mine else '–'
            for k in PAPER_DATASETS) + ' |')
        paper = paper_row(backbone, method)
        if paper is not None:
            lines.append(f'| {paper.label} | ' + ' | '.join(
                f'{paper.get(k)[0]:.3f} / {paper.get(k)[1]:.3f}' if paper.get(k) else '–'
                for k in PAPER_DATASETS) + ' |')
    for reference in REFERENCE_ROWS:
        lines.append(f'| {reference.label} (paper) | ' + ' | '.join(
            f'{reference.get(k)[0]:.3f} / {reference.get(k)[1]:.3f}' if reference.get(k)
            else '–' for k in PAPER_DATASETS) + ' |')
    lines += ['', '## Time and failures', '', '| dataset | method | s/frame | peak MB | failed |',
              '|---|---|---|---|---|']
    for key in PAPER_DATASETS:
        result = data['datasets'].get(key)
        for method, entry in (result or {}).get('methods', {}).items():
            lines.append(f"| {result['label']} | {method} | "
                         f"{_cell(entry.get('seconds_per_frame'), 2)} | "
                         f"{_cell(entry.get('peak_mb'), 0)} | {entry['failures']} |")
    skipped = [(data['datasets'][k]['label'], s) for k in PAPER_DATASETS
               if k in data['datasets'] for s in data['datasets'][k]['skipped']]
    if skipped:
        lines += ['', '## Skipped frames', ''] + [f"- {label} frame {s['index']}: {s['error']}"
                                                  for label, s in skipped]
    return '\n'.join(lines) + '\n'


def _label(key: str) -> str:
    return {'ibims': 'iBims-1', 'void': 'VOID', 'nyuv2': 'NYUv2', 'kitti_dc': 'KITTI DC',
            'ddad': 'DDAD'}[key]


def paper_plot(data: dict, rows: list[dict], path: Path) -> None:
    """Draw MAE and RMSE per dataset: our bars, the paper's hatched, Marigold-DC dashed."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    keys = [k for k in PAPER_DATASETS if k in data['datasets']]
    methods = list(dict.fromkeys(row['method'] for row in rows))
    # At least 9 inches wide: the title and legend need it when one dataset is shown.
    figure, axes = plt.subplots(2, len(keys), figsize=(max(9.0, 3.2 * len(keys) + 1), 6),
                                squeeze=False)
    colours = plt.get_cmap('tab10')
    for column, key in enumerate(keys):
        for line, metric in enumerate(('mae', 'rmse')):
            axis = axes[line, column]
            for m, method in enumerate(methods):
                row = next((r for r in rows if r['dataset'] == key and r['method'] == method),
                           None)
                if row is None:
                    continue
                if row[metric] is not None:
                    axis.bar(2 * m, row[metric], color=colours(m), label=f'ours: {method}')
                if row[f'paper_{metric}'] is not None:
                    axis.bar(2 * m + 0.8, row[f'paper_{metric}'], color='white',
                             edgecolor=colours(m), hatch='//', label=f'paper: {method}')
            for reference in REFERENCE_ROWS:
                if reference.get(key):
                    axis.axhline(reference.get(key)[line], color='grey', linestyle='--',
                                 label=reference.label)
            axis.set_xticks([2 * m + 0.4 for m in range(len(methods))], methods, fontsize=8)
            axis.set_title(f'{_label(key)} {metric.upper()} (m)', fontsize=10)
    handles = {}
    for axis in axes.ravel():
        for handle, label in zip(*axis.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    figure.legend(handles.values(), handles.keys(), loc='lower center',
                  ncol=min(6, len(handles)), fontsize=8)
    title = f"{data['settings'].get('model_source')} vs the paper's {data['paper_backbone']} rows"
    if data['demo_prior']:
        title += ' (demo prior: not comparable)'
    figure.suptitle(title, fontsize=11)
    figure.tight_layout(rect=(0, 0.08, 1, 0.95))
    figure.savefig(path, dpi=110)
    plt.close(figure)


def write_report(data: dict, output: Path) -> None:
    """Write paper.md, paper.json and paper.png into ``output``."""
    rows = comparison_rows(data)
    data['comparison'] = rows
    (output / 'paper.json').write_text(json.dumps(data, indent=2) + '\n')
    (output / 'paper.md').write_text(paper_markdown(data, rows))
    paper_plot(data, rows, output / 'paper.png')
