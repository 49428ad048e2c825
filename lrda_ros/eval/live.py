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
Live evaluation without ROS: the records of frames that arrive in parts, and their report.

The evaluator node (lrda_ros/ros/evaluator_node.py) scores a depth topic against a
ground-truth topic; the rest of a frame's record arrives on its own, matched by the frame's
name (its stamp): the completion node's numbers on /diagnostics (iterations, time, final loss,
peak memory: :class:`FrameStats`), and its ``depth/confidence`` and ``sparse_depth``, from
which the frame's AUSE and sparsification curves are scored as ``lrda eval`` scores them
(:func:`~.harness.score_sparsification`). The report is ``lrda eval``'s, through its writer.
"""

from __future__ import annotations

from dataclasses import dataclass
import math
from pathlib import Path
from typing import Mapping

import numpy as np

from .figures import frame_figure
from .harness import EvalResult, FrameRecord, score_sparsification
from .metrics import compute_metrics
from .report import figure_path, write_report
from .temporal import TemporalTracker
from ..datasets import Frame

#: The completion node's /diagnostics keys of its last frame that live evaluation reads.
KEY_FRAME_STAMP = 'last frame stamp'
KEY_ITERATIONS = 'last iterations'
KEY_PROCESSING_S = 'processing time (s)'
KEY_LOSS = 'last loss'
KEY_PEAK_MB = 'last peak memory (MB)'
KEY_STATUS = 'last status'


@dataclass(frozen=True)
class FrameStats:
    """The completion node's numbers for one frame (its /diagnostics)."""

    iterations: int
    seconds: float
    final_loss: float = math.nan
    peak_mb: float = math.nan
    #: The engine's status (CompletionStatus value), as lrda eval's records carry it.
    status: str = 'ok'


@dataclass(frozen=True)
class LiveLimits:
    """How many frames wait for their other parts: the input may never send them."""

    #: Frames' numbers, and records waiting for them (small).
    stats: int = 200
    #: Frames' maps waiting for the rest of their AUSE inputs (whole images: a few frames,
    #: as the parts of a frame are published together).
    maps: int = 10


def diagnostics_stats(values: Mapping[str, str]) -> tuple[str, FrameStats] | None:
    """Return (frame name, numbers) of a status's values, None where it has no frame's."""
    name = values.get(KEY_FRAME_STAMP)
    if not name:
        return None
    try:
        iterations, seconds = int(values[KEY_ITERATIONS]), float(values[KEY_PROCESSING_S])
    except (KeyError, ValueError):
        return None
    return name, FrameStats(iterations, seconds, _number(values.get(KEY_LOSS)),
                            _number(values.get(KEY_PEAK_MB)), values.get(KEY_STATUS) or 'ok')


def _number(text: str | None) -> float:
    """Return a value's number, NaN where it is missing or no number."""
    try:
        return float(text) if text is not None else math.nan
    except ValueError:
        return math.nan


@dataclass
class _Maps:
    """A frame's inputs to its AUSE, as they arrive."""

    #: Depth frames scored before its first part arrived (which pass it belongs to).
    depths_before: int = 0
    record: FrameRecord | None = None
    prediction: np.ndarray | None = None
    truth: np.ndarray | None = None
    confidence: np.ndarray | None = None
    sparse_depth: np.ndarray | None = None

    def complete(self) -> bool:
        return all(part is not None for part in (
            self.record, self.prediction, self.truth, self.confidence, self.sparse_depth))


def _keep(store: dict, key: str, value, limit: int) -> None:
    """Store ``value`` under ``key`` and forget the oldest entries beyond ``limit``."""
    store[key] = value
    while len(store) > limit:
        del store[next(iter(store))]


class LiveEvaluation:
    """One method's records, scored as depth frames come and completed by their other parts."""

    def __init__(self, method: str, max_depth: float | None = None,
                 limits: LiveLimits = LiveLimits()) -> None:
        self.method = method
        self.max_depth = max_depth
        self.limits = limits
        self.result = EvalResult([method])
        self._tracker = TemporalTracker()
        self._stats: dict[str, FrameStats] = {}
        self._unmatched: dict[str, FrameRecord] = {}
        self._maps: dict[str, _Maps] = {}
        self._depths_scored = 0
        self._last_stamp_ns: int | None = None

    def starts_next_pass(self, stamp_ns: int) -> bool:
        """
        Note a depth frame's stamp; return whether it starts the input's next pass.

        One pass (a bag played once) brings each stamp once, in order: a stamp not after the
        last one (the same one included: a slow completion may take the same frame in two
        passes of a looping bag) means the input came round again.
        """
        last, self._last_stamp_ns = self._last_stamp_ns, stamp_ns
        return last is not None and stamp_ns <= last

    def score(self, name: str, prediction: np.ndarray, truth: np.ndarray,
              K: np.ndarray | None = None, pose: np.ndarray | None = None,
              interval: float = math.nan) -> FrameRecord:
        """
        Score a depth frame against its ground truth (NaN or 0: none) and record it.

        ``K`` and ``pose`` (``T_world_cam``) give its TAE against the previous frame;
        ``interval`` (s since the previous frame) stands in for its time until its numbers
        arrive. Raises ValueError for a depth and ground truth that cannot be scored (then
        nothing is recorded); a confidence or sparse map that does not fit the depth leaves
        the AUSE empty and says why in the record's ``error``.
        """
        metrics = compute_metrics(prediction, truth, max_depth=self.max_depth)
        record = FrameRecord(name, self.method, interval, math.nan, 0, 'ok', math.nan,
                             metrics, tae=self._tracker.update(prediction, K, pose))
        self.result.records.append(record)
        self._depths_scored += 1
        if name in self._stats:
            _apply(record, self._stats[name])
        else:  # the numbers may come after the depth
            _keep(self._unmatched, name, record, self.limits.stats)
        self._add_maps(name, record=record, prediction=prediction, truth=truth)
        return record

    def add_stats(self, name: str, stats: FrameStats) -> None:
        """Take a frame's numbers from the completion node, before or after its depth."""
        _keep(self._stats, name, stats, self.limits.stats)
        record = self._unmatched.pop(name, None)
        if record is not None:
            _apply(record, stats)

    def has_stats(self, name: str) -> bool:
        """Return whether a frame's numbers arrived (and are still kept)."""
        return name in self._stats

    def add_confidence(self, name: str, confidence: np.ndarray) -> None:
        """Take a frame's published confidence (NaN where its depth is)."""
        self._add_maps(name, confidence=confidence)

    def add_sparse_depth(self, name: str, sparse_depth: np.ndarray) -> None:
        """Take the LiDAR input the completion saw (0 or NaN: none), for the AUSE baseline."""
        self._add_maps(name, sparse_depth=sparse_depth)

    def _add_maps(self, name: str, **parts) -> None:
        maps = self._maps.setdefault(name, _Maps(self._depths_scored))
        for part, value in parts.items():
            setattr(maps, part, value)
        if maps.complete():
            del self._maps[name]
            try:
                score_sparsification(maps.record, maps.prediction, maps.truth,
                                     maps.confidence, maps.sparse_depth)
            except ValueError as error:  # maps of another camera or size: said in its row
                maps.record.error = f'no AUSE: {error}'
        while len(self._maps) > self.limits.maps:
            del self._maps[next(iter(self._maps))]

    def restart(self) -> None:
        """Start a new report (the input looped): no record, nothing waiting."""
        self.result = EvalResult([self.method])
        self._tracker.reset()
        # Stamps repeat in the next loop: the last loop's parts must not match. But the next
        # loop's first maps come before its first depth (the completion node publishes its
        # LiDAR input as it starts a frame): the parts of no frame scored yet that arrived
        # after the last depth stay.
        self._stats.clear()
        self._unmatched.clear()
        self._maps = {name: maps for name, maps in self._maps.items()
                      if maps.record is None and maps.depths_before == self._depths_scored}

    def snapshot(self) -> EvalResult:
        """Return the records so far, apart from those still to come."""
        return EvalResult(list(self.result.methods), list(self.result.records))


def _apply(record: FrameRecord, stats: FrameStats) -> None:
    record.iterations, record.seconds = stats.iterations, stats.seconds
    record.final_loss, record.peak_mb = stats.final_loss, stats.peak_mb
    record.status = stats.status


def write_live_report(result: EvalResult, folder: Path, metadata: dict) -> dict:
    """Write ``lrda eval``'s report files of a live evaluation; return its summary."""
    title = f'live evaluation: {", ".join(result.methods)}'
    return write_report(result, folder, title, metadata, 'live: time per frame vs MAE')


def draw_live_figure(folder: Path, method: str, name: str, rgb: np.ndarray,
                     prediction: np.ndarray, truth: np.ndarray) -> Path:
    """Draw a frame's figure where ``lrda eval`` puts it (its sparse input panel empty)."""
    path = figure_path(folder, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    frame_figure(Frame(name, rgb, np.zeros_like(truth), truth), {method: prediction}, path)
    return path
