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
The tf2 buffer across a replay's loop, over DDS with a simulated clock.

A looped bag sends /clock back. tf2 keeps 10 s of transforms and rejects data older than its
newest minus that: without clearing, the new loop's /tf is refused as old and motion
alignment falls back to the static extrinsic. The first test needs rclpy only (the node
clock's jump callback, on /clock messages); the second runs the node with tf2_ros (a ROS 2
install, no PyPI wheel; skipped without it): a moving rig, a 15 s first loop, then the loop.
"""

from __future__ import annotations

import uuid

from conftest import spin_until
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from builtin_interfaces.msg import Time  # noqa: E402, I100
from lrda_ros.geometry import CameraModel  # noqa: E402
from lrda_ros.ros.builders import camera_model_to_camera_info, rgb_to_image_msg  # noqa: E402
from lrda_ros.ros.node import CompletionNode  # noqa: E402
from lrda_ros.ros.tf_lookup import on_clock_jump_back  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image, PointCloud2  # noqa: E402
from std_msgs.msg import Header  # noqa: E402
from test_node_sweep_pairing import (  # noqa: E402
    driver_cloud, odom_message, PERIOD_NS, stamp, START_NS, tf2_available)

S = 10**9


def _set_clock(executor, publisher, node, ns: int) -> None:
    """Publish /clock at ``ns`` and wait until ``node``'s clock reads it."""
    publisher.publish(Clock(clock=Time(sec=ns // S, nanosec=ns % S)))
    assert spin_until(executor, lambda: node.get_clock().now().nanoseconds == ns, 10)


def test_the_node_clock_calls_back_on_a_jump_back_only(ros_context, namespace):
    node = rclpy.create_node('clocked', namespace=namespace, context=ros_context,
                             parameter_overrides=[Parameter('use_sim_time', value=True)])
    rig = rclpy.create_node('rig', namespace=namespace, context=ros_context)
    clock = rig.create_publisher(Clock, '/clock', 10)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    executor.add_node(rig)
    jumps = []
    handle = on_clock_jump_back(node.get_clock(), lambda: jumps.append(
        node.get_clock().now().nanoseconds))
    try:
        assert spin_until(executor, lambda: clock.get_subscription_count() > 0, 10)
        _set_clock(executor, clock, node, 100 * S)
        _set_clock(executor, clock, node, 200 * S)  # forward: no jump back
        _set_clock(executor, clock, node, 199 * S + S // 2)  # back by half a second: jitter
        assert jumps == []
        _set_clock(executor, clock, node, 150 * S)  # a loop: called after the clock moved
        assert jumps == [150 * S]
        handle.unregister()
        _set_clock(executor, clock, node, 100 * S)
        assert jumps == [150 * S]
    finally:
        executor.shutdown()
        node.destroy_node()
        rig.destroy_node()


@pytest.mark.skipif(not tf2_available(), reason='tf2_ros / tf2_msgs are not installed (ROS 2 '
                    'install; not on PyPI)')
def test_motion_alignment_still_moves_clouds_after_the_replay_loops(
        ros_context, namespace, tiny_model_dir):
    from tf2_msgs.msg import TFMessage

    lidar_frame = 'lidar_' + uuid.uuid4().hex[:8]  # /tf is shared by concurrent tests
    node = CompletionNode(context=ros_context, namespace=namespace, parameter_overrides=[
        Parameter('model', value=str(tiny_model_dir)), Parameter('device', value='cpu'),
        Parameter('use_sim_time', value=True),
        Parameter('lidar_to_camera.matrix', value=[0.0, -1.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0,
                                                   1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])])
    rig = rclpy.create_node('rig', namespace=namespace, context=ros_context)
    publishers = {name: rig.create_publisher(kind, name, 10) for name, kind in
                  (('image', Image), ('camera_info', CameraInfo), ('points', PointCloud2))}
    tf = rig.create_publisher(TFMessage, '/tf', 100)
    clock = rig.create_publisher(Clock, '/clock', 10)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    executor.add_node(rig)
    camera = CameraModel(np.array([[40.0, 0, 32], [0, 40.0, 24], [0, 0, 1]]), 64, 48)
    rgb = np.full((48, 64, 3), 128, np.uint8)
    stats = node.cameras[0].stats

    def frame(sweep_ns: int) -> None:
        """Publish a sweep and the image in its middle; wait until the node has read it."""
        image_ns = sweep_ns + PERIOD_NS // 2
        header = Header(frame_id='camera', stamp=stamp(image_ns))
        publishers['image'].publish(rgb_to_image_msg(rgb, header))
        publishers['camera_info'].publish(camera_model_to_camera_info(camera, header))
        publishers['points'].publish(driver_cloud('ouster', sweep_ns, lidar_frame))
        assert spin_until(executor, lambda: node.cameras[0].last_frame_ns == image_ns, 30)

    try:
        assert spin_until(executor, lambda: all(p.get_subscription_count() > 0 for p in (
            *publishers.values(), tf, clock)), 20)
        # The first loop: 15 s of a rig driving at 10 m/s, the frames at its end.
        _set_clock(executor, clock, node, START_NS + 15 * S)
        tf.publish(odom_message(lidar_frame, START_NS - S, START_NS + 15 * S))
        frame(START_NS + 14 * S)
        frame(START_NS + 14 * S + PERIOD_NS)
        assert dict(stats.motion_outcomes) == {'moved': 2} and not stats.motion_fallbacks
        # The loop: the clock back 15 s; the tf buffer is cleared once it moved.
        _set_clock(executor, clock, node, START_NS)
        assert node._tf.clears == 1
        tf.publish(odom_message(lidar_frame, START_NS - S, START_NS + 2 * S))
        frame(START_NS)
        frame(START_NS + PERIOD_NS)
    finally:
        executor.shutdown()
        node.destroy_node()
        rig.destroy_node()
    # Without the clearing the new loop's /tf is older than the newest held minus 10 s: refused,
    # and these clouds would go out with the static extrinsic (no_fixed_frame_pose).
    assert not stats.motion_fallbacks, dict(stats.motion_fallbacks)
    assert stats.motion_outcomes['moved'] >= 3, dict(stats.motion_outcomes)
