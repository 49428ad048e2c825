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
How the GPU check reports: gpu_check.json, and the Markdown tables doc/performance.md takes.

``Report`` holds every part's planned rows, each marked 'not yet measured' until its part
ends, then measured or marked with how the part ended ('timed out', 'failed', 'out of
memory'); ``markdown`` writes the tables: against the paper, ``lrda speed``, per step,
several cameras and the parts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
import datetime
import json
import math
from pathlib import Path
import subprocess
from typing import Callable, Sequence

from gpu_check_parts import Context, Outcome, Part, ROOT
from gpu_check_sizes import NOT_MEASURED, OUT_OF_MEMORY, PAPER

#: How the tables name backbones and resolutions.
NAMES = {'vits': 'ViT-S', 'vitb': 'ViT-B', 'vitl': 'ViT-L', 'vitg': 'ViT-G',
         'unidepth-vits': 'UniDepthV2-S', 'unidepth-vitb': 'UniDepthV2-B',
         'unidepth-vitl': 'UniDepthV2-L', 'da3-small': 'DA3-Small', 'vga': 'VGA', 'fhd': 'FHD',
         'hd': 'HD', '224': '224²', '56': '56²'}


@dataclass
class Report:
    """Everything measured so far; written after every part."""

    device: str
    quick: bool
    commit: str
    limits: str
    started: str = field(default_factory=lambda: datetime.datetime.now(
        datetime.timezone.utc).isoformat(timespec='seconds'))
    environment: dict = field(default_factory=dict)
    parts: list[dict] = field(default_factory=list)
    tests: list[dict] = field(default_factory=list)
    speed: list[dict] = field(default_factory=list)
    steps: list[dict] = field(default_factory=list)
    cameras: list[dict] = field(default_factory=list)
    paper: dict = field(default_factory=lambda: dict(PAPER))

    def plan(self, parts: Sequence[Part], context: Context) -> None:
        """Enter every part and the rows it will fill, all not yet measured."""
        for part in parts:
            self.parts.append({'name': part.name, 'limit_s': part.limit_s,
                               'status': NOT_MEASURED, 'seconds': None,
                               'command': ' '.join(part.work.command(part.name, context))})
            for row in part.work.planned(context):
                getattr(self, part.work.table).append({'part': part.name, **row})

    def record(self, part: Part, outcome: Outcome, measured: list[dict]) -> None:
        """Enter how ``part`` ended and its rows (measured, else marked with its fate)."""
        entry = next(entry for entry in self.parts if entry['name'] == part.name)
        entry.update(status=outcome.status, seconds=round(outcome.seconds, 1))
        if part.work.table == 'environment':
            self.environment = measured[0] if measured else {}
            return
        rows = getattr(self, part.work.table)
        fate = NOT_MEASURED if outcome.status == 'ok' else outcome.status
        for index, row in enumerate(rows):
            if row['part'] != part.name:
                continue
            found = [m for m in measured if _same_row(m, row)]
            rows[index] = {**row, **found[0], 'part': part.name} if found else {
                **row, 'status': fate}
        if part.work.table == 'speed':
            _add_speedups(self.speed)

    def as_json(self) -> dict:
        """Return the report as JSON-ready data."""
        return asdict(self)


#: What tells a table's rows apart.
IDENTITY = ('backbone', 'resolution', 'dtype', 'compile', 'method', 'cameras')


def _same_row(measured: dict, planned: dict) -> bool:
    return all(measured.get(key) == planned[key] for key in IDENTITY if key in planned)


def _add_speedups(rows: list[dict]) -> None:
    """Set each row's speed-up over eager ``prompt`` of its backbone, resolution and dtype."""
    prompts = {(r['backbone'], r['resolution'], r['dtype']): r['seconds'] for r in rows
               if r['method'] == 'prompt' and not r['compile'] and r['status'] == 'measured'}
    for row in rows:
        prompt = prompts.get((row['backbone'], row['resolution'], row['dtype']))
        if row['method'] != 'prompt' and prompt and row['status'] == 'measured' \
                and row['seconds'] > 0:
            row['speedup_vs_prompt'] = prompt / row['seconds']


def _cell(row: dict, key: str, spec: str, suffix: str = '') -> str:
    """Return a number as text, or what stands for it where none was measured."""
    if row.get('status', 'measured') != 'measured':
        return row['status']
    value = row.get(key)
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return '—'
    return f'{value:{spec}}{suffix}'


def _label(row: dict) -> str:
    return f'{NAMES.get(row["backbone"], row["backbone"])} ' \
           f'{NAMES.get(row["resolution"], row["resolution"])}'


#: The comparison with the paper: (speed part, method, quantity, label, the paper's figure).
KEY_FIGURES = (
    ('vits-vga', 'lrda', 'seconds', '`lrda` cold, s/frame', '0.18'),
    ('vits-vga', 'lrda-warm', 'seconds', '`lrda-warm`, s/frame', '—'),
    ('vits-vga', 'prompt', 'seconds', '`prompt`, s/frame', '0.88'),
    ('vits-vga', 'lrda', 'speedup_vs_prompt', '`lrda` speed-up over `prompt`', '4.9×'),
    ('vits-vga', 'lrda-warm', 'speedup_vs_prompt', '`lrda-warm` speed-up over `prompt`', '—'),
    ('vitl-fhd', 'lrda', 'seconds', '`lrda` cold, s/frame', '2.34'),
    ('vitl-fhd', 'lrda', 'peak_gb', '`lrda` peak memory above the model, GB', '10.5'),
    ('vitl-fhd', 'lrda-warm', 'seconds', '`lrda-warm`, s/frame', '—'),
    ('vitl-fhd-prompt', 'prompt', 'seconds', '`prompt`, s/frame', OUT_OF_MEMORY),
    ('vitl-fhd', 'lrda', 'speedup_vs_prompt', '`lrda` speed-up over `prompt`', '—'),
)


def key_table(report: Report) -> list[str]:
    """Return the comparison with the paper's H200 figures (40 iterations)."""
    lines = ['| figure (bfloat16) | measured | paper (H200) |', '|---|---|---|']
    for part, method, quantity, label, paper in KEY_FIGURES:
        row = next((r for r in report.speed if r['part'] == part and r['method'] == method),
                   None)
        if row is None:  # the part is not in this plan (the dry run)
            continue
        row = {**row, 'peak_gb': row.get('peak_mb', math.nan) / 1024}
        spec, suffix = {'seconds': ('.3f', ''), 'peak_gb': ('.2f', ''),
                        'speedup_vs_prompt': ('.2f', '×')}[quantity]
        lines.append(f'| {_label(row)}, {label} | {_cell(row, quantity, spec, suffix)} | '
                     f'{paper} |')
    return lines


#: Each table's measured columns: (header, key, format).
SPEED_COLUMNS = (('s/frame', 'seconds', '.3f', ''), ('peak MB', 'peak_mb', '.0f', ''),
                 ('iterations', 'iterations', '.0f', ''),
                 ('speed-up over `prompt`', 'speedup_vs_prompt', '.2f', '×'))
STEPS_COLUMNS = (('encoder pass, ms', 'encoder_ms', '.1f', ''),
                 ('step, ms', 'step_ms', '.2f', ''),
                 ('host synchronizations per step', 'host_syncs_per_step', '.1f', ''),
                 ('host synchronizations per frame', 'host_syncs_per_frame', '.0f', ''),
                 ('steps run per frame', 'steps_run_per_frame', '.0f', ''),
                 ('steps reported per frame', 'steps_reported_per_frame', '.0f', ''),
                 ('kernel launches per step', 'launches_per_step', '.0f', ''),
                 ('GFLOP per step', 'step_gflop', '.1f', ''),
                 ('TFLOP/s', 'step_tflops', '.3g', ''),
                 ('encoder GFLOP', 'encoder_gflop', '.1f', ''),
                 ('peak MB', 'peak_mb', '.0f', ''), ('weights MB', 'weights_mb', '.0f', ''),
                 ('graph step, ms', 'graph_step_ms', '.2f', ''),
                 ('graph step kernels', 'graph_kernels_per_step', '.0f', ''),
                 ('graph replays per step', 'graph_replays_per_step', '.1f', ''),
                 ('decode graph replays per frame', 'graph_decode_replays', '.0f', ''),
                 ('graph steps run per frame', 'graph_steps_run_per_frame', '.0f', ''),
                 ('graph steps reported per frame', 'graph_steps_reported_per_frame', '.0f',
                  ''),
                 ('graph host synchronizations per frame', 'graph_host_syncs_per_frame', '.0f',
                  ''),
                 ('graph/eager losses, largest relative difference', 'graph_loss_difference',
                  '.1e', ''))
CAMERAS_COLUMNS = (('encoder ms/frame, batched', 'encoder_ms_batched', '.1f', ''),
                   ('encoder ms/frame, one by one', 'encoder_ms_alone', '.1f', ''),
                   ('frames/s, batched', 'frames_per_s_batched', '.2f', ''),
                   ('frames/s, one by one', 'frames_per_s_alone', '.2f', ''))


def _table(headers: Sequence[str], columns: Sequence[tuple[str, str, str, str]],
           rows: list[dict], described: Callable[[dict], list[str]]) -> list[str]:
    """
    Return a Markdown table: the described columns, then the measured ones.

    A row without figures names why in its first measured column ('not yet measured',
    'timed out', ...), and has '—' in the others.
    """
    names = [*headers, *(header for header, *_ in columns)]
    lines = ['| ' + ' | '.join(names) + ' |', '|' + '---|' * len(names)]
    for row in rows:
        measured = [_cell(row, key, spec, unit) for _, key, spec, unit in columns]
        if row['status'] != 'measured':
            measured = [row['status']] + ['—'] * (len(columns) - 1)
        lines.append('| ' + ' | '.join([*described(row), *measured]) + ' |')
    return lines


def speed_table(report: Report) -> list[str]:
    """Return every ``lrda speed`` row."""
    return _table(('backbone', 'resolution', 'dtype', 'compile', 'method'), SPEED_COLUMNS,
                  report.speed, lambda row: [
                      NAMES.get(row['backbone'], row['backbone']),
                      NAMES.get(row['resolution'], row['resolution']), row['dtype'],
                      'on' if row['compile'] else 'off', f'`{row["method"]}`'])


def steps_table(report: Report) -> list[str]:
    """Return the per-step figures."""
    return _table(('configuration', 'dtype'), STEPS_COLUMNS, report.steps,
                  lambda row: [_label(row), row['dtype']])


def cameras_table(report: Report) -> list[str]:
    """Return the multi-camera rows."""
    return _table(('configuration', 'dtype', 'cameras'), CAMERAS_COLUMNS, report.cameras,
                  lambda row: [_label(row), row['dtype'], str(row['cameras'])])


def parts_table(report: Report) -> list[str]:
    """Return how each part ended."""
    lines = ['| part | limit, s | status | s |', '|---|---|---|---|']
    for part in report.parts:
        seconds = '—' if part['seconds'] is None else f'{part["seconds"]:.0f}'
        lines.append(f'| {part["name"]} | {part["limit_s"]} | {part["status"]} | {seconds} |')
    return lines


def markdown(report: Report) -> str:
    """Return the report as the Markdown doc/performance.md takes."""
    env = report.environment
    if env:
        where = (f'{env.get("gpu", env["device"])}, torch {env["torch"]}, CUDA {env["cuda"]}, '
                 f'dtype auto = {env["dtype_auto"]}, commit {report.commit}, '
                 f'{report.started[:10]}')
    else:
        where = NOT_MEASURED
    tests = next((row['result'] if row['status'] == 'measured' else row['status']
                  for row in report.tests), '—')
    dry_run = ' Dry run: tiny sizes, not figures.' if report.quick else ''
    sections = [
        f'Measured on: {where}.{dry_run}',
        f'CUDA tests (`pytest -m cuda`): {tests}.',
        '### Against the paper', '\n'.join(key_table(report)),
        '### `lrda speed`', '\n'.join(speed_table(report)),
        '### Per step', '\n'.join(steps_table(report)),
        '### Several cameras', '\n'.join(cameras_table(report)),
        '### Parts', f'{report.limits}.\n\n' + '\n'.join(parts_table(report))]
    return '\n\n'.join(sections) + '\n'


def write_report(report: Report, output: Path) -> None:
    """Write gpu_check.json and gpu_check.md (again)."""
    (output / 'gpu_check.json').write_text(json.dumps(report.as_json(), indent=2) + '\n')
    (output / 'gpu_check.md').write_text(markdown(report))


def git_commit() -> str:
    """Return this checkout's commit ('+ changes' when the tree differs from it)."""
    try:
        commit = subprocess.run(['git', 'rev-parse', '--short=12', 'HEAD'], cwd=ROOT, text=True,
                                capture_output=True, check=True).stdout.strip()
        changed = subprocess.run(['git', 'status', '--porcelain', '--untracked-files=no'],
                                 cwd=ROOT, text=True, capture_output=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return 'unknown (no git checkout; pass --commit)'
    return commit + (' + changes' if changed else '')
