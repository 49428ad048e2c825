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

from .datasets import (
    DEFAULT_PROTOCOLS, Frame, FrameDataset, LIDAR_KINDS, open_dataset, SamplingProtocol)
from .harness import EvalResult, evaluate
from .methods import build_method, check_method_names, METHODS
from .report import figure_path, frame_figure, report_metadata, write_report
from ..engine import DepthModel, TTOConfig
from ..engine.loading import load_depth_model
from ..errors import ConfigError
from ..geometry import ProjectionConfig, RigidTransform, SPARSE_INPUT_FILTER
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
    #: torch.compile the step and the decode (as the node's compile).
    compile: bool = False  # noqa: A003 (the option is named compile)
    #: Where the encoder runs (as the node's encoder_backend).
    encoder_backend: str = 'torch'
    #: Write every method's depth of every frame as depth/<method>/<frame>.npy.
    save_depth: bool = False
    #: Also the anytime curve: lrda and lrda-warm at these time budgets (s/frame; 0 =
    #: unlimited), written as budget_curve.{md,png}.
    budgets: tuple[float, ...] = ()
    #: The LiDAR input's outlier filter (geometry/outliers.py) on or off; None: the source's
    #: protocol (on for kitti_dc and ddad, off for bags and kitti_object).
    outlier_filter: bool | None = None


def check_options(options: EvalOptions) -> None:
    """Reject options that do not apply to the source, or are out of range, naming the option."""
    kind = options.kind
    problems = [
        (kind != 'rosbag' and (options.slop_s is not None or options.queue_size is not None),
         '--slop', f'--slop and --queue-size synchronize bag topics; --dataset {kind} has none: '
         'drop them'),
        (options.holdout_fraction is not None and kind not in HOLDOUT_KINDS, '--holdout',
         f'--holdout applies to --bag and --dataset folder or kitti_object; {kind} ships its '
         'own ground truth: drop --holdout'),
        (options.holdout_fraction is not None and not 0 < options.holdout_fraction < 1,
         '--holdout', f'--holdout must be in (0, 1), got {options.holdout_fraction}'),
        (options.holdout_fraction is not None and kind == 'rosbag' and bool(options.topics.depth),
         '--holdout', '--holdout and --depth-topic both give the ground truth: drop one'),
        (options.outlier_filter is not None and kind not in LIDAR_KINDS, '--outlier-filter',
         f'--outlier-filter applies to LiDAR input ({", ".join(LIDAR_KINDS)}); {kind} has '
         'none: drop it'),
        (options.num_points is not None and kind in ('rosbag', 'kitti_object', 'ddad'),
         '--num-points',
         f'--num-points samples the input from dataset ground truth; {kind} input is the LiDAR '
         'itself: drop --num-points'),
        (options.slop_s is not None and not options.slop_s > 0, '--slop',
         f'--slop must be positive (seconds), got {options.slop_s}'),
        (options.queue_size is not None and options.queue_size < 1, '--queue-size',
         f'--queue-size must be at least 1, got {options.queue_size}'),
        (options.max_frames is not None and options.max_frames < 1, '--max-frames',
         f'--max-frames must be at least 1, got {options.max_frames}'),
        (kind != 'rosbag' and (options.extrinsic is not None or options.image_is_rectified),
         '--image-is-rectified', '--image-is-rectified and --lidar-to-camera-* only apply to '
         '--bag (a --dataset already holds projected sparse depth)'),
    ]
    for rejected, option, message in problems:
        if rejected:
            raise ConfigError(message, field=option)


def open_source(options: EvalOptions) -> FrameDataset:
    """Open the dataset or bag the options name (after :func:`check_options`)."""
    check_options(options)
    holdout = options.holdout_fraction
    lidar_filter = SPARSE_INPUT_FILTER if options.outlier_filter else None
    occlusion_aware = ProjectionConfig(remove_occluded=True, outlier_filter=lidar_filter)
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
    if options.outlier_filter is not None:
        extra['input_filter' if options.kind == 'ddad' else 'outlier_filter'] = lidar_filter
    if options.num_points is not None:
        if options.kind == 'ibims':
            extra['num_points'] = options.num_points
        else:
            # Only the count (and its seed) changes: resize, crop and depth cap stay.
            base = DEFAULT_PROTOCOLS.get(options.kind, SamplingProtocol())
            extra['protocol'] = replace(base, num_points=options.num_points, seed=options.seed)
    return open_dataset(options.kind, options.root, **extra)


def _independent(frames: FrameDataset) -> Iterator[Frame]:
    """Yield the frames as unrelated (no sequence): warm-started methods reset on each."""
    for frame in frames:
        yield replace(frame, sequence=None)


def run_evaluation(options: EvalOptions) -> tuple[EvalResult, dict]:
    """Evaluate, write the report into ``options.output`` and return (records, summary)."""
    check_method_names(options.methods)
    dataset = open_source(options)
    _warn_sync_losses(getattr(dataset, 'sync_losses', None))
    if getattr(dataset, 'pose_warning', None):
        print(f'warning: {dataset.pose_warning}', file=sys.stderr)
    needs_model = any(METHODS[m].needs_network for m in options.methods)
    model = load_depth_model(options.model, options.device) if needs_model else None
    if model is not None and model.warning:
        print(f'warning: {model.warning}', file=sys.stderr)
    config = TTOConfig(iterations=options.iterations, warm_iterations=options.warm_iterations,
                       learning_rate=options.learning_rate,
                       processing_size=options.processing_size, device=options.device,
                       dtype=options.dtype, seed=options.seed, min_points=8,
                       compile=options.compile, encoder_backend=options.encoder_backend)
    methods = [build_method(name, model, config) for name in options.methods]
    output = Path(options.output)
    (output / 'frames').mkdir(parents=True, exist_ok=True)
    drawn = []

    def draw(frame, predictions):
        # Names may hold folders (VOID and DDAD: <sequence>/<stamp>).
        if options.save_depth:
            for method, depth in predictions.items():
                path = output / 'depth' / method / f'{frame.name}.npy'
                path.parent.mkdir(parents=True, exist_ok=True)
                np.save(path, depth)
        if len(drawn) < options.figures:
            path = figure_path(output, frame.name)
            path.parent.mkdir(parents=True, exist_ok=True)  # names may hold folders (VOID, DDAD)
            frame_figure(frame, predictions, path)
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
