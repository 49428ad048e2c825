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

"""``lrda speed``'s report: the rows as Markdown tables and a bar chart."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np


def speed_table(rows: list[dict]) -> str:
    """Return the speed rows as a Markdown table."""
    lines = ['| backbone | resolution | method | s/frame | peak MB | time vs lrda | '
             'memory vs lrda | iterations | decodes beyond the steps |',
             '|---|---|---|---|---|---|---|---|---|']
    for row in rows:
        lines.append(f'| {row["backbone"]} | {row["resolution"]} | {row["method"]} | '
                     f'{row["seconds"]:.2f} | {row["peak_mb"]:.0f} | '
                     f'{row["time_vs_lrda"]:.2f}x | {row["memory_vs_lrda"]:.2f}x | '
                     f'{row["iterations"]:.0f} | {row.get("decodes", 0):.0f} |')
    against = [row for row in rows if 'seconds_against' in row]
    if against:  # lrda speed --against: the other checkout's time of the same frames
        lines += ['', '| backbone | resolution | method | s/frame | s/frame, --against '
                  'checkout | speed-up over it | iterations / --against |',
                  '|---|---|---|---|---|---|---|']
    for row in against:  # unequal step counts (a schedule that ends early) time other work
        lines.append(f'| {row["backbone"]} | {row["resolution"]} | {row["method"]} | '
                     f'{row["seconds"]:.2f} | {row["seconds_against"]:.2f} | '
                     f'{row["speedup_vs_against"]:.2f}x | {row["iterations"]:.0f} / '
                     f'{row["iterations_against"]:.0f} |')
    structure = {(r['backbone'], r['resolution']): r for r in rows
                 if not math.isnan(r['encoder_s'])}  # none with --no-structure
    if structure:
        lines += ['', '| backbone | resolution | encoder pass (ms) | decoder step, dense head '
                  '(ms) | decoder step, sparse head (ms) |', '|---|---|---|---|---|']
    for (backbone, resolution), row in structure.items():
        lines.append(f'| {backbone} | {resolution} | {row["encoder_s"] * 1e3:.0f} | '
                     f'{row["decoder_step_dense_s"] * 1e3:.0f} | '
                     f'{row["decoder_step_sparse_s"] * 1e3:.0f} |')
    return '\n'.join(lines) + '\n'


def speed_plot(rows: list[dict], path: Path) -> None:
    """Bar chart of seconds per frame, grouped by backbone and resolution (log scale)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    groups = list(dict.fromkeys((r['backbone'], r['resolution']) for r in rows))
    methods = list(dict.fromkeys(r['method'] for r in rows))
    figure, axis = plt.subplots(figsize=(max(6, 1.8 * len(groups) * len(methods) / 2), 4.5))
    width = 0.8 / len(methods)
    for offset, method in enumerate(methods):
        values = [next((r['seconds'] for r in rows if (r['backbone'], r['resolution']) == g
                        and r['method'] == method), np.nan) for g in groups]
        axis.bar(np.arange(len(groups)) + offset * width, values, width, label=method)
    axis.set_xticks(np.arange(len(groups)) + 0.4 - width / 2)
    axis.set_xticklabels([f'{b} {r}' for b, r in groups])
    axis.set_yscale('log')
    axis.set_ylabel('seconds per frame (log)')
    axis.legend(fontsize=8)
    axis.grid(True, axis='y', which='both', alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
