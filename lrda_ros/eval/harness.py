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
Run methods side by side on the same frames and record metrics, time and memory per frame.

Methods run one after another on each frame, so they see identical inputs; warm-started
methods are reset at every sequence boundary (and on frames without a sequence).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
import math
from typing import Callable, Iterable, Sequence

import numpy as np
from tqdm import tqdm

from .methods import Method
from .metrics import aggregate, compute_metrics, DepthMetrics
from .profiling import Measure
from .temporal import TemporalTracker
from .uncertainty import frame_sparsification, mean_finite
from ..datasets import Frame
from ..errors import InputError
from ..geometry.confidence import depth_confidence, support_confidence

METRIC_NAMES = ('mae', 'rmse', 'imae', 'irmse', 'absrel', 'delta1', 'coverage')


@dataclass
class FrameRecord:
    """One method on one frame."""

    frame: str
    method: str
    seconds: float
    peak_mb: float
    iterations: int
    status: str
    final_loss: float
    metrics: DepthMetrics | None = None
    error: str = ''
    #: Temporal alignment error against the method's previous frame (eval/temporal.py); NaN
    #: for a sequence's first frame or where the camera pose is unknown.
    tae: float = math.nan
    #: AUSE of the published confidence (geometry/confidence.py) and of the distance to the
    #: nearest LiDAR pixel alone (eval/uncertainty.py); NaN where not scored.
    ause: float = math.nan
    ause_lidar_distance: float = math.nan
    #: The sparsification curves (confidence, distance alone) over uncertainty.FRACTIONS.
    curves: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    def row(self) -> dict:
        """Flatten to a CSV row."""
        row = {k: v for k, v in asdict(self).items() if k not in ('metrics', 'curves')}
        values = self.metrics.to_dict() if self.metrics else {}
        row.update({name: values.get(name, math.nan) for name in METRIC_NAMES})
        row['num_valid'] = values.get('num_valid', 0)
        return row


@dataclass
class EvalResult:
    """All records of a run, plus the order methods were given in."""

    methods: list[str]
    records: list[FrameRecord] = field(default_factory=list)
    #: Set when SIGINT/SIGTERM (KeyboardInterrupt) ended the run early: the records so far.
    interrupted: bool = False

    @property
    def num_frames(self) -> int:
        """Return how many frames have a record."""
        return len({record.frame for record in self.records})

    def summary(self) -> dict[str, dict]:
        """Aggregate per method: mean of per-frame metrics, time, memory and failures."""
        table = {}
        for method in self.methods:
            mine = [r for r in self.records if r.method == method]
            scored = [r for r in mine if r.metrics is not None]
            entry = {'frames': len(scored), 'failures': len(mine) - len(scored)}
            if scored:
                entry.update({k: v for k, v in aggregate([r.metrics for r in scored]).to_dict()
                              .items() if k in METRIC_NAMES})
                entry['seconds_per_frame'] = float(np.mean([r.seconds for r in scored]))
                entry['peak_mb'] = float(np.max([r.peak_mb for r in scored]))
                entry['iterations'] = float(np.mean([r.iterations for r in scored]))
                entry.update(temporal_summary(scored))
                entry['ause'] = mean_finite(r.ause for r in scored)
                entry['ause_lidar_distance'] = mean_finite(r.ause_lidar_distance for r in scored)
            table[method] = entry
        return table


def temporal_summary(records: Sequence[FrameRecord]) -> dict[str, float]:
    """
    Return a method's temporal figures over its scored frames, in order.

    ``tae``: the mean temporal alignment error over the frames that have one (NaN: none
    has); ``tae_frames``: how many; ``mae_spread``: the standard deviation of the per-frame
    MAE (metres), how much the error against ground truth moves from frame to frame.
    """
    taes = [r.tae for r in records if math.isfinite(r.tae)]
    maes = [r.metrics.mae for r in records if r.metrics is not None
            and math.isfinite(r.metrics.mae)]
    return {'tae': float(np.mean(taes)) if taes else math.nan, 'tae_frames': len(taes),
            'mae_spread': float(np.std(maes)) if len(maes) > 1 else math.nan}


def score_confidence(record: FrameRecord, depth: np.ndarray, frame: Frame,
                     model_uncertainty: np.ndarray | None = None) -> None:
    """Set a record's AUSE of the confidence map and of the LiDAR distance alone."""
    confidence = depth_confidence(depth, frame.sparse_depth, model_uncertainty)
    score_sparsification(record, depth, frame.gt_depth, confidence, frame.sparse_depth)


def score_sparsification(record: FrameRecord, depth: np.ndarray, ground_truth: np.ndarray,
                         confidence: np.ndarray, sparse_depth: np.ndarray) -> None:
    """
    Set a record's AUSE and curves of ``confidence`` and of the LiDAR distance alone.

    ``sparse_depth``: the LiDAR input the method saw (0 or NaN: none). Left NaN where fewer
    than 10 pixels have ground truth, depth and confidence.
    """
    shapes = {depth.shape, ground_truth.shape, confidence.shape, sparse_depth.shape}
    if len(shapes) > 1:
        raise ValueError(f'frame {record.frame}: depth, ground truth, confidence and sparse '
                         f'depth differ in size: {sorted(shapes)}')
    scored = frame_sparsification(depth, ground_truth, confidence)
    baseline = frame_sparsification(depth, ground_truth, support_confidence(sparse_depth))
    if scored is None or baseline is None:
        return
    record.ause, record.ause_lidar_distance = scored[0], baseline[0]
    record.curves = (scored[1], baseline[1])


def evaluate(frames: Iterable[Frame], methods: Sequence[Method], device: str = 'cpu',
             max_frames: int | None = None, min_depth: float = 1e-3,
             max_depth: float | None = None, total: int | None = None,
             on_frame: Callable[[Frame, dict[str, np.ndarray]], None] | None = None,
             progress: bool = True) -> EvalResult:
    """
    Evaluate ``methods`` on ``frames`` (ground truth required) and return every record.

    ``on_frame(frame, {method: depth})`` is called after each frame (figures, live plots).
    A method failing on a frame is recorded with its error and left out of the metrics.
    A KeyboardInterrupt (Ctrl-C, or SIGTERM where the caller maps it so) ends the run: the
    records so far are returned with ``interrupted`` set.
    """
    result = EvalResult([m.name for m in methods])
    if total is not None and max_frames is not None:
        total = min(total, max_frames)
    bar = tqdm(total=total or max_frames, desc='evaluating', unit='frame', disable=not progress)
    try:
        _evaluate_frames(frames, methods, result, device, max_frames, min_depth, max_depth,
                         on_frame, bar)
    except KeyboardInterrupt:
        result.interrupted = True
    bar.close()
    return result


def _evaluate_frames(frames: Iterable[Frame], methods: Sequence[Method], result: EvalResult,
                     device: str, max_frames: int | None, min_depth: float,
                     max_depth: float | None,
                     on_frame: Callable[[Frame, dict[str, np.ndarray]], None] | None,
                     bar: tqdm) -> None:
    previous_sequence = None
    trackers = {method.name: TemporalTracker() for method in methods}
    for index, frame in enumerate(frames):
        if max_frames is not None and index >= max_frames:
            break
        if frame.gt_depth is None:
            raise ValueError(f'frame {frame.name!r} has no ground truth to evaluate against: '
                             'add it (e.g. gt/ in a folder) or hold out LiDAR pixels '
                             '(--holdout)')
        new_sequence = frame.sequence is None or frame.sequence != previous_sequence
        previous_sequence = frame.sequence
        outputs = {}
        for method in methods:
            tracker = trackers[method.name]
            if new_sequence:
                method.reset()
                tracker.reset()
            try:
                with Measure(device) as measured:
                    output = method.complete(frame.rgb, frame.sparse_depth, frame.K,
                                             frame.T_world_cam)
            except InputError as error:  # a frame this method cannot complete
                result.records.append(FrameRecord(frame.name, method.name, math.nan, math.nan,
                                                  0, 'failed', math.nan, None, str(error)))
                method.reset()
                tracker.reset()
                continue
            outputs[method.name] = output.depth
            metrics = compute_metrics(output.depth, frame.gt_depth, min_depth=min_depth,
                                      max_depth=max_depth)
            record = FrameRecord(
                frame.name, method.name, measured.seconds, measured.peak_mb, output.iterations,
                output.status, output.final_loss, metrics,
                tae=tracker.update(output.depth, frame.K, frame.T_world_cam))
            score_confidence(record, output.depth, frame, output.confidence)
            result.records.append(record)
        if on_frame is not None:
            on_frame(frame, outputs)
        bar.update(1)
        bar.set_postfix({m: f'{r.metrics.mae:.3f}' for m, r in
                         ((r.method, r) for r in result.records[-len(methods):])
                         if r.metrics is not None})
