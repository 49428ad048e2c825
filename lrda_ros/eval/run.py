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

from collections import Counter
from dataclasses import asdict, replace
import json
from pathlib import Path
import sys
from typing import Iterator, TYPE_CHECKING

import numpy as np

from .figures import frame_figure
from .harness import EvalResult, evaluate
from .methods import build_method, check_method_names, METHODS
from .options import check_options, DEFAULT_HOLDOUT, EvalOptions, source_settings
from .report import (engine_metadata, figure_path, json_ready, report_metadata, report_title,
                     write_report)
from ..datasets import DEFAULT_PROTOCOLS, Frame, FrameDataset, open_dataset, SamplingProtocol
from ..engine import TTOConfig
from ..engine.names import check_model_path
from ..geometry import SPARSE_INPUT_FILTER
from ..messages.sweep_alignment import (
    MOVED, MOVED_WITHOUT_POINT_TIMES, NO_FIXED_FRAME_POSE, NOTHING_TO_MOVE, OUTCOMES,
    UNREADABLE_TIME_FIELD)
from ..messages.sync_losses import LOSS_REASONS
from ..settings import InvalidParameterError, OFFLINE_POINT_TOPICS

if TYPE_CHECKING:
    from ..engine import DepthModel


def open_source(options: EvalOptions) -> FrameDataset:
    """Open the dataset or bag the options name (after :func:`check_options`)."""
    check_options(options)
    holdout = options.holdout_fraction
    lidar_filter = SPARSE_INPUT_FILTER if options.outlier_filter else None
    settings = source_settings(options)
    # The node's projection: occlusion-aware by default, as for a bag.
    occlusion_aware = replace(settings.projection, outlier_filter=lidar_filter)
    if options.kind == 'rosbag':
        if len(settings.point_topics) > 1:
            raise InvalidParameterError('point_topics', OFFLINE_POINT_TOPICS)
        if holdout is None:
            holdout = settings.holdout_fraction or DEFAULT_HOLDOUT
        return open_dataset(
            'rosbag', options.root, topics=options.topics, holdout_fraction=holdout,
            seed=options.seed, projection=occlusion_aware,
            extrinsic=options.extrinsic or settings.extrinsic,
            rectified=_given(options.image_is_rectified, settings.image_is_rectified),
            slop_s=_given(options.slop_s, settings.sync_slop),
            queue_size=_given(options.queue_size, settings.sync_queue_size),
            motion=settings.motion)
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


def _load_model(spec: str, device: str) -> DepthModel:
    """Load the depth model; a model path that does not exist is refused before torch loads."""
    check_model_path(spec, device)
    from ..engine.loading import load_depth_model  # torch: seconds of import, for a model only

    return load_depth_model(spec, device)


def _given(option, parameter):
    """Return the option where given, else the node's parameter."""
    return parameter if option is None else option


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
    settings = source_settings(options)
    config = options.engine_config(settings)
    needs_model = any(METHODS[m].needs_network for m in options.methods)
    model = _load_model(options.model_spec(settings), config.device) if needs_model else None
    if model is not None and model.warning:
        print(f'warning: {model.warning}', file=sys.stderr)
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
    for line in motion_alignment_lines(getattr(dataset, 'motion_outcomes', None),
                                       getattr(dataset, 'motion_details', {})):
        print(line)
    if getattr(dataset, 'pairing_report', None):
        print(f"frames paired as the node pairs them: {dataset.pairing_report['rule']}")
    title = report_title(options.kind, options.root)
    sync_losses = getattr(dataset, 'sync_losses', None)
    metadata = report_metadata(
        methods=options.methods, model=model.source if model else None, device=device,
        options=json_ready(asdict(options)), source=str(options.root),
        topics=getattr(dataset, 'topic_roles', None), frames=result.num_frames,
        sync_losses=sync_losses, pairing=getattr(dataset, 'pairing_report', None),
        interrupted=result.interrupted,
        engine=engine_metadata(model.source if model else None, device, config))
    summary = write_report(result, output, title, metadata,
                           f'{title} — time per frame vs MAE')
    if options.budgets and not result.interrupted:
        _write_budget_curve(options, dataset, model, config, summary, title)
    return result, summary


#: What each motion alignment outcome means for the clouds, and what to change if anything.
_OUTCOME_WORDS = {
    MOVED: "moved to the image's instant with their point times",
    MOVED_WITHOUT_POINT_TIMES: (
        "moved as a whole from their stamp to the image's (no point times: right only for "
        'clouds stamped mid-sweep; -p motion.time_field:=<field> or -p '
        'motion.azimuth_times:=true gives point times)'),
    NOTHING_TO_MOVE: 'nothing to move',
    NO_FIXED_FRAME_POSE: 'projected with the static extrinsic: no pose of the LiDAR',
    UNREADABLE_TIME_FIELD: 'projected with the static extrinsic: the time field cannot be read',
}


def motion_alignment_lines(outcomes: Counter | None, details: dict[str, str]) -> list[str]:
    """Say once per outcome what motion alignment did to the clouds of a bag, and why."""
    if not outcomes or set(outcomes) == {'off'}:
        return []
    total = sum(outcomes.values())
    lines = []
    for outcome, count in sorted(outcomes.items(), key=lambda item: OUTCOMES.index(item[0])
                                 if item[0] in OUTCOMES else len(OUTCOMES)):
        detail = details.get(outcome, '')
        words = _OUTCOME_WORDS.get(outcome, outcome) + (f' ({detail})' if detail else '')
        lines.append(f'motion alignment: {count} of {total} clouds {outcome}: {words}')
    return lines


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
        model = _load_model(options.model_spec(source_settings(options)), config.device)
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
