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
Live evaluation without ROS: the completion node's frames scored into ``lrda eval``'s report.

The completion node's side runs as the node runs it with hold-out on (its pipeline, the
completion measured by ``Measure``); the evaluator's side is ``lrda_ros.eval.live``, which
evaluator_node feeds from its topics.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
import math
from pathlib import Path

from lrda_ros import world
from lrda_ros.cli import main as lrda_main
from lrda_ros.datasets import Frame
from lrda_ros.engine import DepthCompleter, TTOConfig
from lrda_ros.engine.loading import load_depth_model
from lrda_ros.eval.harness import FrameRecord, score_confidence
from lrda_ros.eval.live import (
    diagnostics_stats, draw_live_figure, FrameStats, LiveEvaluation, LiveLimits,
    write_live_report)
from lrda_ros.eval.profiling import Measure
from lrda_ros.eval.report import SPARSIFICATION_PNG
from lrda_ros.geometry import ProjectionConfig, RigidTransform
from lrda_ros.messages.stamps import stamp_from_ns, stamp_text
from lrda_ros.pipeline import CompletionPipeline, FrameInputs, HoldoutRule
import numpy as np
from PIL import Image
import pytest

HOLDOUT = 0.25
ITERATIONS = 3
FIGURES = 2
START_NS = 1_552_097_915_000_000_000


@dataclass
class PublishedFrame:
    """What the completion node publishes of one frame with hold-out on."""

    name: str
    rgb: np.ndarray
    K: np.ndarray
    #: depth and depth/confidence (NaN: none), sparse_depth and holdout_depth (0: none).
    depth: np.ndarray
    confidence: np.ndarray
    sparse_depth: np.ndarray
    heldout_depth: np.ndarray
    #: The model's own uncertainty, which the confidence took in (None for the demo prior).
    model_uncertainty: np.ndarray | None
    #: Its numbers on /diagnostics.
    stats: FrameStats


@pytest.fixture(scope='module')
def published() -> list[PublishedFrame]:
    """Complete a few small synthetic frames as the completion node does under hold-out."""
    config = world.SequenceConfig('indoor', num_frames=3, width=56, height=42, seed=3,
                                  lidar=world.LidarConfig.indoor(beams=16))
    completer = DepthCompleter(load_depth_model('demo', 'cpu'), TTOConfig(
        device='cpu', dtype='float32', iterations=ITERATIONS, min_points=8))
    pipeline = CompletionPipeline(completer, ProjectionConfig(remove_occluded=True),
                                  HoldoutRule(HOLDOUT, seed=0))
    frames = []
    for view in world.iter_sequence(config):
        stamp_ns = START_NS + view.stamp_ns
        prepared = pipeline.prepare(FrameInputs(
            view.rgb, view.camera, view.points_lidar[:, :3],
            RigidTransform.from_matrix(view.T_cam_lidar), stamp_ns))
        with Measure(completer.model.device) as measured:
            outputs = pipeline.complete(prepared)
        result = outputs.completion
        frames.append(PublishedFrame(
            stamp_text(stamp_from_ns(stamp_ns)), view.rgb, view.camera.K, outputs.depth,
            outputs.confidence, prepared.sparse_depth, prepared.heldout_depth,
            result.confidence, FrameStats(result.iterations, measured.seconds,
                                          result.final_loss, measured.peak_mb,
                                          result.status.value)))
    return frames


def _write_folder(root: Path, frames: list[PublishedFrame]) -> Path:
    """Write the frames as ``lrda eval``'s folder layout, the held-out pixels as gt/."""
    for folder in ('rgb', 'sparse', 'gt'):
        (root / folder).mkdir(parents=True, exist_ok=True)
    for frame in frames:
        Image.fromarray(frame.rgb).save(root / 'rgb' / f'{frame.name}.png')
        np.save(root / 'sparse' / f'{frame.name}.npy', frame.sparse_depth)
        np.save(root / 'gt' / f'{frame.name}.npy', frame.heldout_depth)
    np.savetxt(root / 'K.txt', frames[0].K)
    return root


def _report_files(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob('*') if path.is_file())


def _live_report(frames: list[PublishedFrame], folder: Path) -> LiveEvaluation:
    """Feed the evaluation as evaluator_node does, the parts in the orders topics may bring."""
    evaluation = LiveEvaluation('lrda')
    for index, frame in enumerate(frames):
        truth = np.where(frame.heldout_depth > 0, frame.heldout_depth, np.nan)
        early = index == 1  # diagnostics and confidence before the depth, the sparse map after
        if early:
            evaluation.add_stats(frame.name, frame.stats)
            evaluation.add_confidence(frame.name, frame.confidence)
        else:
            evaluation.add_sparse_depth(frame.name, frame.sparse_depth)
        evaluation.score(frame.name, frame.depth, truth, frame.K)
        if early:
            evaluation.add_sparse_depth(frame.name, frame.sparse_depth)
        else:
            evaluation.add_confidence(frame.name, frame.confidence)
            evaluation.add_stats(frame.name, frame.stats)
        if index < FIGURES:
            draw_live_figure(folder, 'lrda', frame.name, frame.rgb, frame.depth, truth)
    write_live_report(evaluation.snapshot(), folder, {})
    return evaluation


def test_the_live_report_has_lrda_evals_files_and_real_numbers(published, tmp_path):
    assert all(np.count_nonzero(frame.heldout_depth) >= 10 for frame in published)
    root = _write_folder(tmp_path / 'frames', published)
    assert lrda_main(['eval', '--dataset', 'folder', '--root', str(root),
                      '--output', str(tmp_path / 'eval'), '--methods', 'lrda',
                      '--model', 'demo', '--device', 'cpu', '--dtype', 'float32',
                      '--iterations', str(ITERATIONS), '--figures', str(FIGURES)]) == 0
    evaluation = _live_report(published, tmp_path / 'live')

    assert _report_files(tmp_path / 'live') == _report_files(tmp_path / 'eval')
    assert SPARSIFICATION_PNG in _report_files(tmp_path / 'live')
    rows = list(csv.DictReader(open(tmp_path / 'live' / 'frames.csv')))
    assert [row['frame'] for row in rows] == [frame.name for frame in published]
    eval_rows = list(csv.DictReader(open(tmp_path / 'eval' / 'frames.csv')))
    assert [row['status'] for row in rows] == [row['status'] for row in eval_rows] == [
        'optimized'] * len(published)
    for row, frame in zip(rows, published):
        for column in ('ause', 'ause_lidar_distance', 'final_loss', 'peak_mb', 'seconds'):
            assert math.isfinite(float(row[column])), (column, row)
        assert int(row['iterations']) == frame.stats.iterations > 0
        assert float(row['final_loss']) == pytest.approx(frame.stats.final_loss)
        assert float(row['peak_mb']) >= 0
    # The AUSE lrda eval's scoring gives the frame's depth, from the confidence the node sent.
    for record, frame in zip(evaluation.result.records, published):
        expected = FrameRecord(frame.name, 'lrda', 0.0, 0.0, 0, 'ok', 0.0)
        score_confidence(expected, frame.depth, Frame(
            frame.name, frame.rgb, frame.sparse_depth, frame.heldout_depth),
            frame.model_uncertainty)
        assert (record.ause, record.ause_lidar_distance) == (
            expected.ause, expected.ause_lidar_distance)
    summary = evaluation.result.summary()['lrda']
    assert all(math.isfinite(summary[key]) for key in ('ause', 'peak_mb', 'iterations'))


def _small_frame(seed: int = 0) -> tuple[np.ndarray, ...]:
    """Return (depth, truth, confidence, sparse depth) of a 20 x 30 frame."""
    rng = np.random.default_rng(seed)
    truth = rng.uniform(2.0, 8.0, (20, 30)).astype(np.float32)
    depth = truth + rng.normal(0.0, 0.3, truth.shape).astype(np.float32)
    confidence = rng.uniform(0.0, 1.0, truth.shape).astype(np.float32)
    sparse = np.where(rng.random(truth.shape) < 0.1, truth, 0.0).astype(np.float32)
    return depth, np.where(rng.random(truth.shape) < 0.2, truth, np.nan), confidence, sparse


def test_a_frame_without_its_other_parts_keeps_nan_and_bounded_memory():
    depth, truth, confidence, sparse = _small_frame()
    stats = FrameStats(5, 0.2, 0.01, 3.0)
    evaluation = LiveEvaluation('lrda', limits=LiveLimits(stats=4, maps=2))
    for second in range(5):  # depth and confidence, never a sparse map or diagnostics
        name = f'{second}.000000000'
        evaluation.add_confidence(name, confidence)
        record = evaluation.score(name, depth, truth, interval=0.5)
    assert math.isnan(record.ause) and record.curves is None
    assert (record.iterations, record.seconds, math.isnan(record.peak_mb)) == (0, 0.5, True)
    assert len(evaluation._maps) <= 2 and len(evaluation._unmatched) <= 4
    # A sparse map of a frame still waiting completes it; one long forgotten does nothing.
    evaluation.add_sparse_depth('4.000000000', sparse)
    assert math.isfinite(evaluation.result.records[-1].ause)
    assert evaluation.result.records[-1].curves is not None
    evaluation.add_sparse_depth('0.000000000', sparse)
    assert math.isnan(evaluation.result.records[0].ause)
    # Maps of another size are not scored against the wrong pixels; the row says why.
    record = evaluation.score('9.000000000', depth, truth)
    evaluation.add_confidence('9.000000000', confidence)
    evaluation.add_sparse_depth('9.000000000', sparse[:-1])
    assert math.isnan(record.ause) and 'differ in size' in record.error
    evaluation.restart()  # a new loop: its stamps repeat, nothing of the last one matches
    assert not evaluation.has_stats('4.000000000')
    evaluation.add_stats('9.000000000', stats)
    record = evaluation.score('9.000000000', depth, truth)
    assert len(evaluation.result.records) == 1
    assert (record.iterations, record.seconds, record.final_loss, record.peak_mb) == (
        5, 0.2, 0.01, 3.0)


def test_the_next_passes_first_frame_keeps_the_maps_that_came_before_its_depth():
    depth, truth, confidence, sparse = _small_frame()
    evaluation = LiveEvaluation('lrda')
    seconds = (3, 4, 3, 3)  # a pass ending at 4 s; the next starts at 3 s, twice (a slow node)
    passes = [evaluation.starts_next_pass(second * 10 ** 9) for second in seconds]
    assert passes == [False, False, True, True]
    # Pass 1: frame 3's LiDAR input comes as the node starts it, its depth and confidence
    # when it ends; frame 4's depth never comes (dropped): its map waits in vain.
    evaluation.add_sparse_depth('3.000000000', sparse)
    evaluation.add_sparse_depth('4.500000000', sparse)
    evaluation.score('3.000000000', depth, truth)
    evaluation.add_confidence('3.000000000', confidence)
    assert math.isfinite(evaluation.result.records[0].ause)
    # Pass 2 starts: frame 3's input arrives before the depth whose stamp starts the pass.
    evaluation.add_sparse_depth('3.000000000', sparse)
    evaluation.restart()
    record = evaluation.score('3.000000000', depth, truth)
    evaluation.add_confidence('3.000000000', confidence)
    assert math.isfinite(record.ause) and record.curves is not None
    # The last pass's map of a frame never scored does not match this pass's frame.
    evaluation.restart()
    record = evaluation.score('4.500000000', depth, truth)
    evaluation.add_confidence('4.500000000', confidence)
    assert math.isnan(record.ause)


def test_diagnostics_values_give_a_frames_numbers():
    values = {'last frame stamp': '12.000000005', 'last iterations': '7',
              'processing time (s)': '0.250', 'last loss': '0.0123456789',
              'last peak memory (MB)': '41.5'}
    assert diagnostics_stats(values) == ('12.000000005', FrameStats(7, 0.25, 0.0123456789, 41.5))
    assert diagnostics_stats({**values, 'last status': 'alignment_only'})[1].status == \
        'alignment_only'
    name, stats = diagnostics_stats({**values, 'last peak memory (MB)': 'nan'})
    assert math.isnan(stats.peak_mb)  # not measured: hold-out off
    del values['last loss']
    assert math.isnan(diagnostics_stats(values)[1].final_loss)
    assert diagnostics_stats({**values, 'last frame stamp': ''}) is None
    assert diagnostics_stats({**values, 'last iterations': 'x'}) is None
