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

"""Where a frame's time goes: the node's stage times on /diagnostics and in lrda hold-rate."""

from __future__ import annotations

import math
import re

from conftest import spin_until
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from lrda_ros import cli  # noqa: E402, I100
from lrda_ros.ros.node import CompletionNode  # noqa: E402
from lrda_ros.ros.replay import held_rate  # noqa: E402
from lrda_ros.ros.stage_times import ENGINE, HOST, STAGES  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402
from test_node import frames, Harness, node_parameters  # noqa: E402, F401

KEYS = [f'stage time (ms) {stage}' for stage in (*STAGES, HOST, ENGINE)]


def test_the_per_stage_times_of_a_frame_are_on_diagnostics(
        ros_context, namespace, tiny_model_dir, frames):  # noqa: F811
    node = CompletionNode(context=ros_context, namespace=namespace,
                          parameter_overrides=node_parameters(tiny_model_dir, frames[0]))
    harness = Harness(ros_context, namespace)
    confidence: list[Image] = []
    harness.node.create_subscription(Image, 'depth/confidence', confidence.append, 10)
    executor = SingleThreadedExecutor(context=ros_context)
    for member in (node, harness.node):
        executor.add_node(member)
    try:
        assert spin_until(executor, lambda: node.pub_confidence.get_subscription_count() > 0
                          and harness.pub_points.get_subscription_count() > 0, 10)
        harness.publish(frames[0], 1_000_000_000)
        # Every output subscribed, then the first status after the frame: its stage values.
        assert spin_until(executor, lambda: confidence and harness.received['points_dense']
                          and harness.received['depth_colored'], 120), node.stats

        def after_the_frame() -> list:
            return [status for array in harness.diagnostics for status in array.status
                    if status.name.endswith('depth completion') and any(
                        value.key == 'frames processed' and value.value != '0'
                        for value in status.values)]

        assert spin_until(executor, after_the_frame, 10)
        values = {value.key: value.value for value in after_the_frame()[-1].values}
    finally:
        executor.shutdown()
        node.destroy_node()
        harness.node.destroy_node()
    assert [key for key in values if key.startswith('stage time (ms)')] == KEYS
    assert all(math.isfinite(float(values[key])) for key in KEYS)  # a frame's, not 'nan'


def test_the_hold_rate_line_ends_with_the_host_and_the_engine_medians():
    def frame(t, host, engine):
        stages = dict.fromkeys(STAGES, 1.0)
        stages.update({'read': host / 2, 'publish': host / 2, HOST: host, ENGINE: engine})
        return {'t': t, 'frame_s': 0.1, 'iterations': 2, 'stages_ms': stages}

    published = [frame(1.0, 500.0, 900.0)] + [frame(5.5 + k, host, 80.0 + k) for k, host in
                                              enumerate((12.0, 9.0, 30.0, 11.0))]
    rate, line = held_rate({'published': published, 'received': 9, 'superseded': 4})
    assert rate == pytest.approx(1.0)
    # Medians after the start-up frame: host (9, 11, 12, 30) -> 11.5; engine 81.5.
    assert line.startswith('1.00 Hz out (9 sets in, 4 superseded)')
    assert 'host 11.5 ms a frame (read 5.8, project 1.0, publish 5.8)' in line
    assert line.endswith('engine 81.5 ms a frame (encode 1.0, steps 1.0, final decode 1.0)')


def test_hold_rate_on_the_kitti_bag_ends_with_the_host_figure(shared_data, capsys):
    bag = shared_data / 'bags' / 'kitti_2011_09_26_10frames_mcap'
    assert cli.main(['hold-rate', str(bag), '--seconds', '8', '--budget', '0.02',
                     '--processing-size', '126']) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert re.search(r' [0-9.]+ Hz out .* host [0-9.]+ ms a frame \(read [0-9.]+, project '
                     r'[0-9.]+, publish [0-9.]+\), engine [0-9.]+ ms a frame', last), last
