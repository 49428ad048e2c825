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

"""The live evaluator scores depth against ground truth over rclpy and writes the report."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from conftest import spin_until
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from builtin_interfaces.msg import Time  # noqa: E402, I100
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue  # noqa: E402
from lrda_ros.eval.live import FrameStats  # noqa: E402
from lrda_ros.ros.builders import depth_to_image_msg, rgb_to_image_msg  # noqa: E402
from lrda_ros.ros.evaluator_node import EvaluatorNode  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402
from std_msgs.msg import Header  # noqa: E402


def strict_json(path: Path) -> dict:
    """Parse ``path`` as strict JSON: NaN and Infinity are not JSON."""
    def refuse(constant: str):
        raise ValueError(f'{path.name} holds {constant}, which is not JSON')

    return json.loads(path.read_text(), parse_constant=refuse)


def report_files(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob('*') if path.is_file())


class LiveEvaluation:
    """An evaluator node and a harness publishing its inputs."""

    def __init__(self, context, namespace: str, output: Path, **parameters) -> None:
        values = {'output_dir': str(output), 'method_name': 'live', **parameters}
        self.node = EvaluatorNode(context=context, namespace=namespace, parameter_overrides=[
            Parameter(name, value=value) for name, value in values.items()])
        self.harness = rclpy.create_node('harness', namespace=namespace, context=context)
        self.publishers = {name: self.harness.create_publisher(Image, name, 10)
                           for name in ('depth', 'ground_truth', 'image', 'depth/confidence',
                                        'sparse_depth')}
        self.diagnostics = self.harness.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.executor.add_node(self.harness)
        assert spin_until(self.executor, lambda: all(p.get_subscription_count() > 0
                                                     for p in self.publishers.values()), 10)

    def score(self, stamp_ns: int, depth: np.ndarray, truth: np.ndarray,
              rgb: np.ndarray | None = None, confidence: np.ndarray | None = None,
              sparse: np.ndarray | None = None, stats: FrameStats | None = None) -> None:
        """
        Publish one frame as the completion node does and spin until the evaluator scored it.

        ``sparse`` before the depth, ``confidence`` and the /diagnostics ``stats`` after it.
        """
        header = Header(frame_id='camera', stamp=Time(sec=stamp_ns // 10**9,
                                                      nanosec=stamp_ns % 10**9))
        name = f'{stamp_ns // 10**9}.{stamp_ns % 10**9:09d}'
        if rgb is not None:
            self.publishers['image'].publish(rgb_to_image_msg(rgb, header))
        if sparse is not None:
            self.publishers['sparse_depth'].publish(depth_to_image_msg(
                np.where(sparse > 0, sparse, np.nan), header))
        self.publishers['depth'].publish(depth_to_image_msg(depth, header))
        self.publishers['ground_truth'].publish(depth_to_image_msg(truth, header))
        if confidence is not None:
            self.publishers['depth/confidence'].publish(depth_to_image_msg(confidence, header))
        if stats is not None:
            self.diagnostics.publish(DiagnosticArray(status=[DiagnosticStatus(
                name='completion_node: depth completion', values=[
                    KeyValue(key=key, value=value) for key, value in (
                        ('last frame stamp', name), ('last iterations', str(stats.iterations)),
                        ('processing time (s)', f'{stats.seconds:.3f}'),
                        ('last loss', repr(stats.final_loss)),
                        ('last peak memory (MB)', f'{stats.peak_mb:.1f}'))])]))

        def scored() -> bool:
            records = self.node.result.records
            return bool(records) and records[-1].frame == name and (
                confidence is None or sparse is None or records[-1].curves is not None) and (
                stats is None or records[-1].iterations == stats.iterations)
        assert spin_until(self.executor, scored, 10)

    def announce_model(self, model: str, device: str) -> None:
        """Publish /diagnostics naming the model, as the completion node does; spin until read."""
        diagnostics = self.harness.create_publisher(DiagnosticArray, '/diagnostics', 10)
        status = DiagnosticStatus(name='completion_node: depth completion', values=[
            KeyValue(key='model', value=model), KeyValue(key='device', value=device)])
        assert spin_until(self.executor, lambda: diagnostics.publish(
            DiagnosticArray(status=[status])) or self.node._model.get('model') == model, 10)

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()  # writes the final report
        self.harness.destroy_node()


def test_metrics_and_report_of_known_errors(ros_context, namespace, tmp_path):
    node = EvaluatorNode(context=ros_context, namespace=namespace, parameter_overrides=[
        Parameter('output_dir', value=str(tmp_path)), Parameter('method_name', value='live'),
        Parameter('report_every', value=2), Parameter('figures', value=2)])
    harness = rclpy.create_node('harness', namespace=namespace, context=ros_context)
    publishers = {name: harness.create_publisher(Image, name, 10)
                  for name in ('depth', 'ground_truth', 'image')}
    diagnostics = harness.create_publisher(DiagnosticArray, '/diagnostics', 10)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    executor.add_node(harness)
    assert spin_until(executor, lambda: all(p.get_subscription_count() > 0
                                            for p in publishers.values()), 10)
    truth = np.full((20, 30), 5.0, np.float32)
    truth[:, :10] = np.nan  # no ground truth there
    for k in range(4):
        header = Header(frame_id='camera', stamp=Time(sec=100 + k))
        # The completion node's per-frame numbers, as it publishes them on /diagnostics.
        diagnostics.publish(DiagnosticArray(status=[DiagnosticStatus(
            name='completion_node: depth completion', values=[
                KeyValue(key='last frame stamp', value=f'{100 + k}.000000000'),
                KeyValue(key='last iterations', value=str(10 + k)),
                KeyValue(key='processing time (s)', value=str(0.5 * (k + 1)))])]))
        spin_until(executor, lambda: node.evaluation.has_stats(f'{100 + k}.000000000'), 10)
        if k != 0:  # frame 0's image is lost: its figure slot goes to a later frame
            publishers['image'].publish(rgb_to_image_msg(np.zeros((20, 30, 3), np.uint8),
                                                         header))
        publishers['depth'].publish(depth_to_image_msg(np.full((20, 30), 5.0 + 0.5 * k,
                                                               np.float32), header))
        publishers['ground_truth'].publish(depth_to_image_msg(truth, header))
        spin_until(executor, lambda: len(node.result.records) == k + 1, 10)
    assert len(node.result.records) == 4
    spin_until(executor, lambda: len(list((tmp_path / 'frames').glob('*.png'))) == 2, 10)
    summary = node.write_report()
    # Errors 0, 0.5, 1.0, 1.5 m on the 400 pixels with truth: mean MAE 0.75 m.
    assert summary['live']['mae'] == pytest.approx(0.75)
    # The node's iterations and times, not 0 and NaN.
    assert summary['live']['iterations'] == pytest.approx(11.5)
    assert summary['live']['seconds_per_frame'] == pytest.approx(1.25)
    assert node.result.records[2].metrics.num_valid == 400
    saved = json.loads((tmp_path / 'summary.json').read_text())
    assert saved['methods']['live']['frames'] == 4
    assert (tmp_path / 'frames.csv').exists() and (tmp_path / 'speed_accuracy.png').exists()
    assert len(list((tmp_path / 'frames').glob('*.png'))) == 2
    executor.shutdown()
    node.destroy_node()
    harness.destroy_node()


def test_nan_depth_is_no_depth_and_the_report_is_strict_json(ros_context, namespace, tmp_path):
    live = LiveEvaluation(ros_context, namespace, tmp_path)
    truth = np.full((20, 30), 5.0, np.float32)
    depth = np.full((20, 30), 6.0, np.float32)
    depth[:, :15] = np.nan  # no depth: left out, not scored as the 1 mm clamp
    live.score(100 * 10**9, depth, truth)
    live.close()
    saved = strict_json(tmp_path / 'summary.json')  # no diagnostics: NaN time and memory
    entry = saved['methods']['live']
    assert entry['mae'] == pytest.approx(1.0) and entry['coverage'] == pytest.approx(0.5)
    assert entry['peak_mb'] is None
    assert live.node.result.records[0].metrics.num_no_depth == 300


def test_the_report_has_lrda_evals_files_and_metadata(ros_context, namespace, tmp_path):
    pytest.importorskip('cv2', reason='opencv-python-headless is not installed')
    from lrda_ros import world
    from lrda_ros.cli import main as lrda_main
    from lrda_ros.datasets.rosbag import RosbagDataset
    from lrda_ros.geometry.confidence import depth_confidence
    from test_bag_inputs import START_NS, write_scene_bag

    config = world.SequenceConfig('indoor', num_frames=2, width=56, height=42, seed=3,
                                  lidar=world.LidarConfig.indoor(beams=16))
    frames = world.make_sequence(config)
    bag = write_scene_bag(tmp_path / 'bag', frames)
    # The node's numbers of each frame, as its /diagnostics carry them.
    stats = FrameStats(iterations=7, seconds=0.25, final_loss=0.0123456789, peak_mb=41.5)
    assert lrda_main(['eval', '--bag', str(bag), '--output', str(tmp_path / 'eval'),
                      '--methods', 'scale-shift', '--model', 'demo', '--device', 'cpu',
                      '--figures', '2']) == 0
    live = LiveEvaluation(ros_context, namespace, tmp_path / 'live', figures=2,
                          source=str(bag))
    live.announce_model('demo', 'cpu')  # the completion node on the demo prior
    # The frames lrda eval scored, published at their stamps, as the node would.
    for frame, scored in zip(frames, RosbagDataset(bag)):
        stamp_ns = START_NS + frame.stamp_ns
        depth = frame.depth.astype(np.float32) * 1.1
        live.score(stamp_ns, depth, np.where(scored.gt_depth > 0, scored.gt_depth, np.nan),
                   frame.rgb, depth_confidence(depth, scored.sparse_depth),
                   scored.sparse_depth, stats)
    assert spin_until(live.executor, lambda: len(list(
        (tmp_path / 'live' / 'frames').glob('*.png'))) == 2, 30)
    live.close()

    assert report_files(tmp_path / 'live') == report_files(tmp_path / 'eval')
    assert 'sparsification.png' in report_files(tmp_path / 'live')
    rows = list(csv.DictReader(open(tmp_path / 'live' / 'frames.csv')))
    assert len(rows) == 2
    for row in rows:  # the node's numbers, and the AUSE of its confidence
        assert (int(row['iterations']), float(row['seconds'])) == (7, 0.25)
        assert (float(row['final_loss']), float(row['peak_mb'])) == (0.0123456789, 41.5)
        assert math.isfinite(float(row['ause'])) and math.isfinite(
            float(row['ause_lidar_distance']))
    live_summary = strict_json(tmp_path / 'live' / 'summary.json')
    eval_summary = strict_json(tmp_path / 'eval' / 'summary.json')
    assert set(live_summary['metadata']) >= set(eval_summary['metadata']) - {'interrupted'}
    metadata = live_summary['metadata']
    assert metadata['methods'] == ['live'] and metadata['frames'] == 2
    assert metadata['source'] == str(bag)
    assert metadata['topics']['depth'] == f'{namespace}/depth'
    assert metadata['sync_losses']['beyond_slop'] == 0
    assert eval_summary['metadata']['frames'] == 2
    assert eval_summary['metadata']['topics']['image'] == '/cam/image_raw'
    # Both mark the demonstration prior, lrda eval from the model it loaded, the live
    # evaluator from the model the completion node names.
    for summary in (live_summary, eval_summary):
        assert (summary['metadata']['model'], summary['metadata']['demo_prior']) == ('demo', True)


def test_a_looping_input_reports_each_loop_in_its_own_folder(ros_context, namespace,
                                                             tmp_path):
    live = LiveEvaluation(ros_context, namespace, tmp_path)
    truth = np.full((20, 30), 5.0, np.float32)
    for loop, error in enumerate((0.5, 1.5)):
        for second in (10, 11, 12):
            live.score(second * 10**9, truth + error, truth)
        assert live.node.loop == loop
    live.close()
    first = strict_json(tmp_path / 'summary.json')
    second = strict_json(tmp_path / 'loop_1' / 'summary.json')
    assert first['methods']['live']['frames'] == 3
    assert first['methods']['live']['mae'] == pytest.approx(0.5)
    assert second['methods']['live']['mae'] == pytest.approx(1.5)
    assert second['metadata']['loop'] == 1


def test_beside_the_completion_node_the_report_is_lrda_evals_with_the_nodes_numbers(
        ros_context, namespace, tmp_path):
    """The completion node under hold-out and the evaluator over DDS, against lrda eval --bag."""
    from lrda_ros import world
    from lrda_ros.cli import main as lrda_main
    from lrda_ros.demo.job import write_demo_bag
    from lrda_ros.messages.rosbag import BagTopics, RosbagSource
    from lrda_ros.ros.node import CompletionNode
    from lrda_ros.ros.replay import LockstepReplay

    bag, topics = tmp_path / 'bag', BagTopics(image='/camera/image_raw')
    write_demo_bag(list(world.iter_sequence(world.SequenceConfig(
        'indoor', num_frames=2, width=56, height=42, seed=5,
        lidar=world.LidarConfig.indoor(beams=16)))), bag)
    with RosbagSource(bag, topics) as source:
        # Given to both programs: tf2 may be absent here.
        extrinsic = [float(v) for v in source.transform_tree().lookup(
            *source.first_frame_ids()).as_matrix().ravel()]
        parameters = {'model': 'demo', 'device': 'cpu', 'dtype': 'float32', 'iterations': 3,
                      'min_points': 8, 'evaluation.holdout_fraction': 0.25,
                      'lidar_to_camera.matrix': extrinsic}
        completion = CompletionNode(context=ros_context, namespace=namespace,
                                    parameter_overrides=[Parameter(name, value=value) for
                                                         name, value in parameters.items()])
        evaluator = EvaluatorNode(
            context=ros_context, namespace=namespace,
            cli_args=['--ros-args', '-r', 'ground_truth:=holdout_depth'],
            parameter_overrides=[Parameter('output_dir', value=str(tmp_path / 'live')),
                                 Parameter('figures', value=2)])
        player = rclpy.create_node('player', namespace=namespace, context=ros_context)
        replay = LockstepReplay(player, source, outputs=('depth', 'depth/confidence'))
        executor = SingleThreadedExecutor(context=ros_context)
        for node in (completion, evaluator, player):
            executor.add_node(node)
        assert replay.wait_for_subscribers(executor)
        assert spin_until(executor, lambda: completion.pub_sparse.get_subscription_count() > 0,
                          10)
        replay.play(executor, timeout_per_frame=60)

    def complete() -> bool:
        records = evaluator.result.records
        figures = list((tmp_path / 'live' / 'frames').glob('*.png'))
        return len(records) == 2 and len(figures) == 2 and all(
            record.curves is not None and record.iterations > 0 for record in records)
    assert spin_until(executor, complete, 30)
    executor.shutdown()
    evaluator.destroy_node()  # the final report
    completion.destroy_node()
    player.destroy_node()
    assert lrda_main(['eval', '--bag', str(bag), '--image-topic', topics.image,
                      '--output', str(tmp_path / 'eval'), '--methods', 'lrda',
                      '--model', 'demo', '--device', 'cpu', '--dtype', 'float32',
                      '--iterations', '3', '--holdout', '0.25', '--figures', '2',
                      '--lidar-to-camera-matrix', ','.join(map(repr, extrinsic))]) == 0

    assert report_files(tmp_path / 'live') == report_files(tmp_path / 'eval')
    for folder in ('live', 'eval'):
        rows = list(csv.DictReader(open(tmp_path / folder / 'frames.csv')))
        assert len(rows) == 2
        for row in rows:
            for column in ('ause', 'ause_lidar_distance', 'final_loss', 'peak_mb'):
                assert math.isfinite(float(row[column])), (folder, column, row)
            assert int(row['iterations']) > 0
