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
``speed_accuracy.png``, ``frames/<name>.png`` for the first ``figures`` frames and, with
``save_depth``, ``depth/<method>/<name>.npy`` (float32 metres, NaN = no depth, as published).
Bags also record what their synchronizer could not pair (``metadata.sync_losses``) and warn
with the slop the data needs. Interrupted (SIGINT/SIGTERM), it writes the frames done so far.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
import json
from pathlib import Path
import sys
from typing import Iterator

import numpy as np

from .datasets import Frame, FrameDataset, open_dataset, SamplingProtocol
from .harness import EvalResult, evaluate
from .methods import build_method, METHODS
from .report import figure_path, frame_figure, report_metadata, write_report
from ..engine import DepthModel, TTOConfig
from ..engine.loading import load_depth_model
from ..geometry import ProjectionConfig, RigidTransform
from ..messages.rosbag import BagTopics
from ..messages.sync_losses import LOSS_REASONS

DEFAULT_METHODS = ('scale-shift', 'lrda', 'lrda-warm', 'prompt', 'classical')
#: Fraction of LiDAR pixels held out as ground truth where a source has none (bags, KITTI object).
DEFAULT_HOLDOUT = 0.2
#: Sources that can hold out LiDAR pixels as ground truth.
HOLDOUT_KINDS = ('rosbag', 'folder', 'kitti_object')


@dataclass
class EvalOptions:
    """
    Everything ``lrda eval`` needs; ``kind`` is a dataset kind or 'rosbag'.

    ``holdout_fraction``: LiDAR pixels withheld as ground truth (bags without a depth topic and
    ``kitti_object``: ``DEFAULT_HOLDOUT`` when None; ``folder``: only when set). ``slop_s`` and
    ``queue_size``: the bag synchronizer's, as the node's ``sync.slop`` / ``sync.queue_size``
    (None: the node's defaults). ``independent``: every frame unrelated to the previous one,
    so warm-started methods start cold on each.
    """

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
    holdout_fraction: float | None = None
    topics: BagTopics = field(default_factory=BagTopics)
    slop_s: float | None = None
    queue_size: int | None = None
    independent: bool = False
    #: Bags: T_camera_lidar instead of /tf_static and /tf.
    extrinsic: RigidTransform | None = None
    #: Bags: the image is rectified (P, no distortion) rather than raw (K and D).
    image_is_rectified: bool = False
    progress: bool = True
    #: The engine's precision ('float32', 'bfloat16', 'float16' or 'auto', as the node's dtype).
    dtype: str = 'float32'
    #: Write every method's depth of every frame as depth/<method>/<frame>.npy.
    save_depth: bool = False
    #: Also the anytime curve: lrda and lrda-warm at these time budgets (s/frame; 0 =
    #: unlimited), written as budget_curve.{md,png}.
    budgets: tuple[float, ...] = ()


def check_options(options: EvalOptions) -> None:
    """Reject options that do not apply to the source, or are out of range, with a reason."""
    kind = options.kind
    if kind != 'rosbag' and (options.slop_s is not None or options.queue_size is not None):
        raise ValueError(f'--slop and --queue-size synchronize bag topics; --dataset {kind} has '
                         'none: drop them')
    if options.holdout_fraction is not None and kind not in HOLDOUT_KINDS:
        raise ValueError(f'--holdout applies to --bag and --dataset folder or kitti_object; '
                         f'{kind} ships its own ground truth: drop --holdout')
    if options.holdout_fraction is not None and not 0 < options.holdout_fraction < 1:
        raise ValueError(f'--holdout must be in (0, 1), got {options.holdout_fraction}')
    if options.holdout_fraction is not None and kind == 'rosbag' and options.topics.depth:
        raise ValueError('--holdout and --depth-topic both give the ground truth: drop one')
    if options.num_points is not None and kind in ('rosbag', 'kitti_object'):
        raise ValueError(f'--num-points samples the input from dataset ground truth; {kind} '
                         'input is the LiDAR itself: drop --num-points')
    if options.slop_s is not None and not options.slop_s > 0:
        raise ValueError(f'--slop must be positive (seconds), got {options.slop_s}')
    if options.queue_size is not None and options.queue_size < 1:
        raise ValueError(f'--queue-size must be at least 1, got {options.queue_size}')
    if options.max_frames is not None and options.max_frames < 1:
        raise ValueError(f'--max-frames must be at least 1, got {options.max_frames}')
    if kind != 'rosbag' and (options.extrinsic is not None or options.image_is_rectified):
        raise ValueError('--image-is-rectified and --lidar-to-camera-* only apply to --bag (a '
                         '--dataset already holds projected sparse depth)')


def open_source(options: EvalOptions) -> FrameDataset:
    """Open the dataset or bag the options name (after :func:`check_options`)."""
    check_options(options)
    holdout = options.holdout_fraction
    occlusion_aware = ProjectionConfig(remove_occluded=True)
    if options.kind == 'rosbag':
        sync = {'slop_s': options.slop_s, 'queue_size': options.queue_size}
        return open_dataset('rosbag', options.root, topics=options.topics,
                            holdout_fraction=DEFAULT_HOLDOUT if holdout is None else holdout,
                            seed=options.seed, projection=occlusion_aware,
                            extrinsic=options.extrinsic, rectified=options.image_is_rectified,
                            **{k: v for k, v in sync.items() if v is not None})
    if options.kind == 'kitti_object':
        return open_dataset('kitti_object', options.root, projection=occlusion_aware,
                            holdout_fraction=DEFAULT_HOLDOUT if holdout is None else holdout,
                            seed=options.seed)
    extra: dict = {}
    if options.kind == 'folder' and holdout is not None:
        extra.update(holdout_fraction=holdout, seed=options.seed)
    if options.num_points is not None:
        if options.kind == 'ibims':
            extra['num_points'] = options.num_points
        else:
            extra['protocol'] = SamplingProtocol(num_points=options.num_points, seed=options.seed)
    return open_dataset(options.kind, options.root, **extra)


def _independent(frames: FrameDataset) -> Iterator[Frame]:
    """Yield the frames as unrelated (no sequence): warm-started methods reset on each."""
    for frame in frames:
        yield replace(frame, sequence=None)


def run_evaluation(options: EvalOptions) -> tuple[EvalResult, dict]:
    """Evaluate, write the report into ``options.output`` and return (records, summary)."""
    unknown = [m for m in options.methods if m not in METHODS]
    if unknown:
        raise ValueError(f'unknown methods {unknown}; choose from {", ".join(METHODS)}')
    dataset = open_source(options)
    _warn_sync_losses(getattr(dataset, 'sync_losses', None))
    needs_model = any(METHODS[m].scope is not None for m in options.methods)
    model = load_depth_model(options.model, options.device) if needs_model else None
    if model is not None and model.warning:
        print(f'warning: {model.warning}', file=sys.stderr)
    config = TTOConfig(iterations=options.iterations, warm_iterations=options.warm_iterations,
                       learning_rate=options.learning_rate,
                       processing_size=options.processing_size, device=options.device,
                       dtype=options.dtype, seed=options.seed, min_points=8)
    methods = [build_method(name, model, config) for name in options.methods]
    output = Path(options.output)
    (output / 'frames').mkdir(parents=True, exist_ok=True)
    drawn = []

    def draw(frame, predictions):
        if options.save_depth:
            for method, depth in predictions.items():
                (output / 'depth' / method).mkdir(parents=True, exist_ok=True)
                np.save(output / 'depth' / method / f'{frame.name}.npy', depth)
        if len(drawn) < options.figures:
            frame_figure(frame, predictions, figure_path(output, frame.name))
            drawn.append(frame.name)

    device = str(model.device) if model is not None else 'cpu'
    frames = _independent(dataset) if options.independent else dataset
    result = evaluate(frames, methods, device=device, max_frames=options.max_frames,
                      min_depth=options.min_depth, max_depth=options.max_depth,
                      total=len(dataset), on_frame=draw, progress=options.progress)
    if not result.records:
        if result.interrupted:
            raise KeyboardInterrupt
        raise ValueError(f'{options.root}: no frame was evaluated')
    title = f'{options.kind}: {Path(options.root).name}'
    sync_losses = getattr(dataset, 'sync_losses', None)
    metadata = report_metadata(
        methods=options.methods, model=model.source if model else None, device=device,
        demo_prior=bool(model and model.is_demo_prior),
        options={k: str(v) for k, v in asdict(options).items()}, source=str(options.root),
        topics=getattr(dataset, 'topic_roles', None), frames=result.num_frames,
        sync_losses=sync_losses, interrupted=result.interrupted)
    summary = write_report(result, output, title, metadata,
                           f'{title} — time per frame vs MAE')
    if options.budgets and not result.interrupted:
        _write_budget_curve(options, dataset, model, config, summary, title)
    return result, summary


def _warn_sync_losses(losses: dict | None) -> None:
    """Say on stderr which bag messages could not be synchronized, and the slop to use."""
    if not losses or not any(losses[reason] for reason in LOSS_REASONS):
        return
    counts = ', '.join(f'{reason} {losses[reason]}' for reason in LOSS_REASONS
                       if losses[reason])
    examples = '; '.join(f'{reason}: {text}' for reason, text in losses['examples'].items())
    advice = ''
    if losses['suggested_slop_s'] is not None:
        advice = (f'; stamps up to {losses["largest_offset_s"]:.3f} s apart are beyond the '
                  f'slop {losses["slop_s"]:g} s: this bag needs --slop '
                  f'{losses["suggested_slop_s"]:g}')
    print(f'warning: bag messages not synchronized ({counts}): {examples}{advice}',
          file=sys.stderr)


def _write_budget_curve(options: EvalOptions, dataset, model: DepthModel | None,
                        config: TTOConfig, summary: dict, title: str) -> None:
    from .budget import budget_curve, curve_plot, curve_table

    if model is None:
        model = load_depth_model(options.model, options.device)
    frames = list(dataset)[:options.max_frames]
    rows = budget_curve(frames, model, config, options.budgets, options.max_depth,
                        options.progress)
    output = Path(options.output)
    (output / 'budget_curve.md').write_text(f'# {title}: accuracy against the time budget\n\n'
                                            + curve_table(rows))
    (output / 'budget_curve.json').write_text(json.dumps(rows, indent=2) + '\n')
    curve_plot(rows, output / 'budget_curve.png', f'{title}: anytime mode '
               f'({model.source}, {len(frames)} frames, device {model.device})',
               summary.get('scale-shift', {}).get('mae'))
