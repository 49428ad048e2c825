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

"""Evaluation end to end: rosbag2 frames, LiDAR hold-out, every method, complete reports."""

from __future__ import annotations

import csv
from dataclasses import replace
import json

from lrda_ros.cli import main as lrda_main
from lrda_ros.datasets.rosbag import RosbagDataset
from lrda_ros.eval.methods import METHODS
from lrda_ros.eval.run import EvalOptions, run_evaluation
from lrda_ros.messages.rosbag import cdr_header_stamp, RosbagSource
from lrda_ros.pipeline import holdout_split
import numpy as np
import pytest

KITTI_BAG = 'bags/kitti_2011_09_26_3frames_db3'


def test_holdout_split_is_disjoint_seeded_and_complete():
    rng = np.random.default_rng(0)
    sparse = np.where(rng.random((50, 60)) < 0.1, rng.uniform(1, 50, (50, 60)), 0).astype(
        np.float32)
    kept, held = holdout_split(sparse, 0.25, np.random.default_rng(3))
    assert not np.any((kept > 0) & (held > 0))
    np.testing.assert_array_equal(kept + held, sparse)
    assert np.count_nonzero(held) == round(0.25 * np.count_nonzero(sparse))
    again, _ = holdout_split(sparse, 0.25, np.random.default_rng(3))
    other, _ = holdout_split(sparse, 0.25, np.random.default_rng(4))
    np.testing.assert_array_equal(kept, again)
    assert not np.array_equal(kept, other)
    with pytest.raises(ValueError):
        holdout_split(sparse, 1.0, rng)


def test_bag_frames_never_leak_held_out_lidar(shared_data):
    dataset = RosbagDataset(shared_data / KITTI_BAG, holdout_fraction=0.2, seed=5)
    assert len(dataset) == 3
    assert dataset.source.topics.points == '/kitti/velo/pointcloud'
    for frame in dataset:
        assert frame.rgb.shape == (375, 1242, 3) and frame.K[0, 0] == pytest.approx(721.5377)
        given, truth = frame.sparse_depth > 0, frame.gt_depth > 0
        assert not np.any(given & truth)
        total = given.sum() + truth.sum()
        assert 10_000 < total < 25_000  # an HDL-64 projected into the left colour camera
        assert truth.sum() == round(0.2 * total)
        assert 2.0 < frame.gt_depth[truth].min() and frame.gt_depth[truth].max() < 90.0


def test_bag_header_stamps_are_read_without_deserializing(shared_data):
    source = RosbagSource(shared_data / KITTI_BAG)
    for _, _, _, raw in source.raw_messages():
        assert cdr_header_stamp(raw) // 10**9 == 1317027000
    stamps = source.synchronized_stamps()
    assert [s[0] - stamps[0][0] for s in stamps] == [0, 100_000_000, 200_000_000]
    tree = source.transform_tree()
    T = tree.lookup('camera_color_left', 'velo_link')
    # KITTI: the camera sits ~0.27 m ahead of the Velodyne, looking along its x axis.
    forward = T.apply(np.array([[10.0, 0.0, 0.0]]))[0]
    assert forward[2] == pytest.approx(10.0 - 0.27, abs=0.05)
    source.close()


def _complete_report(output, methods, frames):
    rows = list(csv.DictReader(open(output / 'frames.csv')))
    assert len(rows) == len(methods) * frames
    assert {r['method'] for r in rows} == set(methods)
    assert all(float(r['mae']) >= 0 and float(r['seconds']) > 0 for r in rows)
    summary = json.loads((output / 'summary.json').read_text())['methods']
    assert set(summary) == set(methods)
    assert all(entry['frames'] == frames and entry['failures'] == 0
               for entry in summary.values())
    markdown = (output / 'summary.md').read_text()
    assert all(f'| {m} |' in markdown for m in methods)
    assert (output / 'speed_accuracy.png').stat().st_size > 10_000
    assert len(list((output / 'frames').glob('*.png'))) == frames
    return summary


@pytest.mark.slow
def test_every_method_on_two_kitti_frames_gives_a_complete_report(shared_data, tiny_model_dir,
                                                                  tmp_path):
    # KITTI DC has no camera poses: the method that fuses frames by pose fails every frame,
    # saying why; every other method is scored.
    posed = tuple(name for name, spec in METHODS.items() if spec.temporal_fusion)
    methods = tuple(name for name in METHODS if name not in posed)
    options = EvalOptions(kind='kitti_dc', root=shared_data / 'kitti_dc', output=tmp_path,
                          methods=methods, model=str(tiny_model_dir), device='cpu',
                          iterations=2, warm_iterations=1, processing_size=126, max_frames=2,
                          figures=2, progress=False)
    run_evaluation(options)
    summary = _complete_report(tmp_path, methods, 2)
    assert summary['classical']['mae'] < 5.0  # IP-Basic on real LiDAR is a sane floor
    run_evaluation(replace(options, methods=posed, output=tmp_path / 'posed', figures=0))
    with open(tmp_path / 'posed' / 'frames.csv') as table:
        failed = list(csv.DictReader(table))
    assert len(failed) == 2 * len(posed)
    assert all(row['status'] == 'failed' and 'no poses' in row['error'] for row in failed)


@pytest.mark.slow
def test_lrda_eval_on_the_kitti_bag_writes_the_report(shared_data, tiny_model_dir, tmp_path):
    code = lrda_main(['eval', '--bag', str(shared_data / KITTI_BAG), '--output', str(tmp_path),
                      '--methods', 'scale-shift,lrda,classical', '--model', str(tiny_model_dir),
                      '--device', 'cpu', '--iterations', '2', '--processing-size', '126',
                      '--figures', '3'])
    assert code == 0
    _complete_report(tmp_path, ('scale-shift', 'lrda', 'classical'), 3)


class _StoppedAtThirdFrame:
    """A method whose third frame is interrupted (Ctrl-C or SIGTERM in its middle)."""

    name = 'stopped'

    def __init__(self) -> None:
        self.calls = 0

    def reset(self) -> None:
        pass

    def complete(self, rgb, sparse_depth, K=None, T_world_cam=None):
        from lrda_ros.eval.methods import MethodOutput

        self.calls += 1
        if self.calls == 3:
            raise KeyboardInterrupt
        return MethodOutput(np.full(sparse_depth.shape, 2.0, np.float32))


def test_an_interrupted_evaluation_returns_the_frames_done(tmp_path):
    from lrda_ros.datasets import Frame
    from lrda_ros.eval.harness import evaluate
    from lrda_ros.eval.report import write_report

    truth = np.full((4, 6), 3.0, np.float32)
    frames = [Frame(f'{k}', np.zeros((4, 6, 3), np.uint8), truth, truth) for k in range(5)]
    result = evaluate(frames, [_StoppedAtThirdFrame()], progress=False)
    assert result.interrupted and result.num_frames == 2
    summary = write_report(result, tmp_path, 'interrupted', {'interrupted': True}, 'plot')
    assert summary['stopped']['frames'] == 2 and summary['stopped']['mae'] == 1.0
