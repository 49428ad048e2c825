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
Anytime curve: accuracy against the time budget per frame (``lrda eval --budgets``).

For each budget, ``lrda`` (cold) and ``lrda-warm`` run the frames with ``time_budget`` set:
the steps stop in time and the best iterate so far is scored. With warm start the adapters
keep improving along a sequence, so a small budget costs less accuracy than it does cold.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Sequence

from .harness import evaluate
from .methods import METHODS, TTOMethod
from ..datasets import Frame
from ..engine import DepthModel, TTOConfig

#: The methods of the curve: cold starts, and warm starts along the sequence.
CURVE_METHODS = ('lrda', 'lrda-warm')


def budget_curve(frames: Sequence[Frame], model: DepthModel, config: TTOConfig,
                 budgets: Sequence[float], max_depth: float | None = None,
                 progress: bool = True) -> list[dict]:
    """
    Score each method at each budget (seconds per frame; 0 = unlimited) on the frames.

    Returns one row per (method, budget): MAE, RMSE, mean iterations and seconds per frame.
    """
    rows = []
    for name in CURVE_METHODS:
        for budget in budgets:
            method = TTOMethod(METHODS[name], model, replace(config, time_budget=budget))
            summary = evaluate(frames, [method], device=str(model.device), max_depth=max_depth,
                               progress=False).summary()[name]
            rows.append({'method': name, 'budget_s': float(budget), 'mae': summary['mae'],
                         'rmse': summary['rmse'], 'iterations': summary['iterations'],
                         'seconds_per_frame': summary['seconds_per_frame']})
            if progress:
                print(f'  {name} budget {budget:g} s: MAE {summary["mae"]:.3f} m, '
                      f'{summary["iterations"]:.1f} iterations, '
                      f'{summary["seconds_per_frame"]:.2f} s/frame', flush=True)
    return rows


def curve_table(rows: list[dict]) -> str:
    """Return the curve as a Markdown table."""
    lines = ['| method | budget (s/frame) | MAE (m) | RMSE (m) | iterations | s/frame |',
             '|---|---|---|---|---|---|']
    for row in rows:
        budget = f'{row["budget_s"]:g}' if row['budget_s'] > 0 else 'unlimited'
        lines.append(f'| {row["method"]} | {budget} | {row["mae"]:.3f} | {row["rmse"]:.3f} | '
                     f'{row["iterations"]:.1f} | {row["seconds_per_frame"]:.2f} |')
    return '\n'.join(lines) + '\n'


def curve_plot(rows: list[dict], path: Path, title: str,
               baseline_mae: float | None = None) -> None:
    """Plot MAE and iterations against the budget (log axis), one line per method."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    figure, (accuracy, steps) = plt.subplots(1, 2, figsize=(11, 4.2))
    for name in CURVE_METHODS:
        mine = [r for r in rows if r['method'] == name and r['budget_s'] > 0]
        budgets = [r['budget_s'] for r in mine]
        line, = accuracy.plot(budgets, [r['mae'] for r in mine], 'o-', label=name)
        steps.plot(budgets, [r['iterations'] for r in mine], 'o-', color=line.get_color(),
                   label=name)
        unlimited = [r for r in rows if r['method'] == name and r['budget_s'] <= 0]
        if unlimited:
            accuracy.axhline(unlimited[0]['mae'], color=line.get_color(), linestyle='--',
                             linewidth=1, label=f'{name}, no budget')
    if baseline_mae is not None:
        accuracy.axhline(baseline_mae, color='grey', linestyle=':', label='scale-shift (0 steps)')
    ticks = sorted({r['budget_s'] for r in rows if r['budget_s'] > 0})
    for axis in (accuracy, steps):
        axis.set_xscale('log')
        axis.set_xticks(ticks, [f'{t:g}' for t in ticks])
        axis.xaxis.set_minor_formatter(NullFormatter())
        axis.set_xlabel('time budget per frame (s, log scale)')
        axis.grid(True, which='both', alpha=0.3)
        axis.legend(fontsize=8)
    accuracy.set_ylabel('MAE (m)')
    accuracy.set_title('accuracy within the budget')
    steps.set_ylabel('optimizer steps that fit (mean per frame)')
    steps.set_title('iterations that fit')
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
