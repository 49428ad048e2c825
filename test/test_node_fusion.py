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

"""Temporal fusion in the node over real rclpy/DDS: the camera's pose from /tf, per frame."""

from __future__ import annotations

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')
pytest.importorskip('tf2_ros', reason='tf2_ros is not installed (ROS 2 install; not on PyPI)')

from conftest import spin_until  # noqa: E402, I100
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from lrda_ros import world  # noqa: E402
from lrda_ros.demo.job import (  # noqa: E402
    DEPTH_TOPIC, IMAGE_TOPIC, INFO_TOPIC, POINTS_TOPIC, write_demo_bag)
from lrda_ros.messages.conversions import depth_image_to_array  # noqa: E402
from lrda_ros.messages.rosbag import BagTopics, RosbagSource  # noqa: E402
from lrda_ros.ros.node import CompletionNode  # noqa: E402
from lrda_ros.ros.replay import LockstepReplay, message_type, TransformReplay  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.serialization import deserialize_message  # noqa: E402

SHARE = 'temporal fusion: last share of pixels fused'
NO_POSE = 'temporal fusion: frames without a pose'


def _node_status(messages: list, node_name: str) -> dict[str, str]:
    # The node's main status (it also publishes '<node>: calibration').
    for message in reversed(messages):
        for status in message.status:
            if status.name == f'{node_name}: depth completion':
                return {kv.key: kv.value for kv in status.values}
    return {}


@pytest.mark.parametrize('fixed_frame, fused', [('odom', True), ('map', False)])
def test_frames_fuse_with_the_pose_from_tf_or_are_counted_without_one(
        fixed_frame, fused, ros_context, namespace, tmp_path):
    bag = tmp_path / 'room'
    write_demo_bag(list(world.iter_sequence(world.SequenceConfig(
        'indoor', 3, width=84, height=56, seed=7))), bag)
    source = RosbagSource(bag, BagTopics(IMAGE_TOPIC, INFO_TOPIC, POINTS_TOPIC, DEPTH_TOPIC))
    values = {'model': 'demo', 'device': 'cpu', 'iterations': 3, 'warm_iterations': 2,
              'min_points': 8, 'processing_size': 0, 'tf_timeout': 0.5,
              'temporal_fusion.weight': 0.5, 'temporal_fusion.fixed_frame': fixed_frame}
    node = CompletionNode(context=ros_context, namespace=namespace, parameter_overrides=[
        Parameter(name, value=value) for name, value in values.items()])
    player = rclpy.create_node('player', namespace=namespace, context=ros_context)
    transforms = TransformReplay(player, source)
    tf_message = message_type('tf2_msgs/msg/TFMessage')
    diagnostics: list = []
    player.create_subscription(DiagnosticArray, '/diagnostics', diagnostics.append, 50)
    replay = LockstepReplay(player, source, outputs=('depth',))
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    executor.add_node(player)
    try:
        assert replay.wait_for_subscribers(executor)
        for _, _, _, raw in source.raw_messages(['/tf']):   # the whole trajectory, up front
            transforms.publisher.publish(deserialize_message(raw, tf_message))
        frames = replay.play(executor, timeout_per_frame=120)
        assert [set(frame.outputs) for frame in frames] == [{'depth'}] * 3
        for frame in frames:
            assert np.isfinite(depth_image_to_array(frame.outputs['depth'])).mean() > 0.9
        name = node.get_fully_qualified_name()
        assert spin_until(executor, lambda: _node_status(diagnostics, name).get(
            'frames processed') == '3', timeout=10)
        status = _node_status(diagnostics, name)
        if fused:   # the last frame averaged with the one before, moved by odom -> camera
            assert float(status[SHARE]) > 0.5 and status[NO_POSE] == '0'
        else:       # no 'map' frame on /tf: published unfused and counted
            assert float(status[SHARE]) == 0.0 and status[NO_POSE] == '3'
    finally:
        executor.shutdown()
        node.destroy_node()
        player.destroy_node()
        source.close()
