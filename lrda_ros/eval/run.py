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
``lrda eval``: evaluate methods on a benchmark folder or a rosbag2 and write the report.

Output folder: ``frames.csv`` (per frame and method), ``summary.md`` / ``summary.json``,
``speed_accuracy.png`` and ``frames/<name>.png`` for the first ``figures`` frames.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
import json
from pathlib import Path

from .datasets import open_dataset, SamplingProtocol
from .datasets.rosbag import BagTopics
from .harness import EvalResult, evaluate
from .methods import build_method, METHODS
from .report import frame_figure, speed_accuracy_plot, write_csv, write_summary
from ..engine import TTOConfig
from ..engine.loading import load_model
from ..geometry import ProjectionConfig

DEFAULT_METHODS = ('scale-shift', 'lrda', 'lrda-warm', 'prompt', 'classical')


@dataclass
class EvalOptions:
    """Everything ``lrda eval`` needs; ``kind`` is a dataset kind or 'rosbag'."""

    kind: str
    root: Path
    output: Path
    methods: tuple[str, ...] = DEFAULT_METHODS
    model: str = 'auto'
    device: str = 'auto'
    iterations: int = 40
    warm_iterations: int = 10
    learning_rate: float = 1e-2
    processing_size: int | None = None
    max_frames: int | None = None
    figures: int = 10
    seed: int = 0
    num_points: int | None = None
    min_depth: float = 1e-3
    max_depth: float | None = None
    holdout_fraction: float = 0.2
    topics: BagTopics = field(default_factory=BagTopics)
    progress: bool = True
    #: Also the anytime curve: lrda and lrda-warm at these time budgets (s/frame; 0 =
    #: unlimited), written as budget_curve.{md,png}.
    budgets: tuple[float, ...] = ()


def open_source(options: EvalOptions):
    """Open the dataset or bag the options name."""
    if options.kind == 'rosbag':
        return open_dataset('rosbag', options.root, topics=options.topics,
                            holdout_fraction=options.holdout_fraction, seed=options.seed,
                            projection=ProjectionConfig(remove_occluded=True))
    extra = {}
    if options.num_points is not None:
        if options.kind == 'ibims':
            extra['num_points'] = options.num_points
        else:
            extra['protocol'] = SamplingProtocol(num_points=options.num_points, seed=options.seed)
    return open_dataset(options.kind, options.root, **extra)


def run_evaluation(options: EvalOptions) -> tuple[EvalResult, dict]:
    """Evaluate, write the report into ``options.output`` and return (records, summary)."""
    unknown = [m for m in options.methods if m not in METHODS]
    if unknown:
        raise ValueError(f'unknown methods {unknown}; choose from {", ".join(METHODS)}')
    dataset = open_source(options)
    needs_model = any(METHODS[m].scope is not None for m in options.methods)
    choice = load_model(options.model, options.device) if needs_model else None
    config = TTOConfig(iterations=options.iterations, warm_iterations=options.warm_iterations,
                       learning_rate=options.learning_rate,
                       processing_size=options.processing_size, device=options.device,
                       seed=options.seed, min_points=8)
    model = choice.model if choice else None
    methods = [build_method(name, model, config) for name in options.methods]
    output = Path(options.output)
    (output / 'frames').mkdir(parents=True, exist_ok=True)
    drawn = []

    def draw(frame, predictions):
        if len(drawn) < options.figures:
            frame_figure(frame, predictions, output / 'frames' / f'{frame.name}.png')
            drawn.append(frame.name)

    device = str(model.device) if model is not None else 'cpu'
    result = evaluate(dataset, methods, device=device, max_frames=options.max_frames,
                      min_depth=options.min_depth, max_depth=options.max_depth,
                      total=len(dataset), on_frame=draw, progress=options.progress)
    title = f'{options.kind}: {Path(options.root).name}'
    metadata = {'options': {k: str(v) for k, v in asdict(options).items()},
                'model': choice.source if choice else None,
                'demo_prior': bool(choice and choice.is_demo_prior),
                'device': device}
    write_csv(result, output / 'frames.csv')
    summary = write_summary(result, output, title, metadata)
    speed_accuracy_plot(summary, output / 'speed_accuracy.png',
                        f'{title} — time per frame vs MAE')
    if options.budgets:
        _write_budget_curve(options, dataset, choice, config, summary, title)
    return result, summary


def _write_budget_curve(options: EvalOptions, dataset, choice, config: TTOConfig,
                        summary: dict, title: str) -> None:
    from .budget import budget_curve, curve_plot, curve_table

    if choice is None:
        choice = load_model(options.model, options.device)
    frames = list(dataset)[:options.max_frames]
    rows = budget_curve(frames, choice.model, config, options.budgets, options.max_depth,
                        options.progress)
    output = Path(options.output)
    (output / 'budget_curve.md').write_text(f'# {title}: accuracy against the time budget\n\n'
                                            + curve_table(rows))
    (output / 'budget_curve.json').write_text(json.dumps(rows, indent=2) + '\n')
    curve_plot(rows, output / 'budget_curve.png', f'{title}: anytime mode '
               f'({choice.source}, {len(frames)} frames, device {choice.model.device})',
               summary.get('scale-shift', {}).get('mae'))
