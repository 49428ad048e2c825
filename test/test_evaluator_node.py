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

import json

from conftest import spin_until
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from builtin_interfaces.msg import Time  # noqa: E402, I100
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue  # noqa: E402
from lrda_ros.ros.builders import depth_to_image_msg, rgb_to_image_msg  # noqa: E402
from lrda_ros.ros.evaluator_node import EvaluatorNode  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402
from std_msgs.msg import Header  # noqa: E402


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
        spin_until(executor, lambda: f'{100 + k}.000000000' in node._frame_stats, 10)
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
