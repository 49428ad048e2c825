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
``lrda play`` (``play_timed``): compressed images, /tf and /tf_static, /clock for use_sim_time.

With tf2_msgs and tf2_ros (a ROS 2 install), a node left on its default ``use_tf`` gets its
transform from the replayed /tf_static; the PyPI wheels have neither, so that test skips there.
"""

from __future__ import annotations

import importlib.util
import math
import threading
import time

from conftest import spin_until
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')
pytest.importorskip('cv2', reason='opencv-python-headless is not installed '
                                  '(pip install -r requirements-dev.txt)')

from builtin_interfaces.msg import Time  # noqa: E402, I100 (after the rclpy skip)
from lrda_ros.geometry import lidar_to_sparse_depth, ProjectionConfig, RigidTransform  # noqa
from lrda_ros.messages.conversions import depth_image_to_array  # noqa: E402
from lrda_ros.messages.rosbag import RosbagSource  # noqa: E402, I100
from lrda_ros.messages.stamps import stamp_to_ns  # noqa: E402
from lrda_ros.ros.node import CompletionNode  # noqa: E402
from lrda_ros.ros.replay import play_timed  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, PointCloud2  # noqa: E402
from test_bag_inputs import (  # noqa: E402
    CAMERA, IMAGE, INFO, LIDAR, POINTS, START_NS, write_scene_bag)

HAVE_TF2 = all(importlib.util.find_spec(name) for name in ('tf2_msgs', 'tf2_ros'))


def _end(executor, *nodes) -> None:
    """Stop the executor and destroy the nodes it spun."""
    executor.shutdown()
    for node in nodes:
        node.destroy_node()


@pytest.fixture(scope='module')
def frames():
    from lrda_ros import world

    config = world.SequenceConfig('indoor', num_frames=3, width=112, height=84, seed=3,
                                  lidar=world.LidarConfig.indoor(beams=16))
    return world.make_sequence(config)


def test_play_replays_compressed_images_and_the_bag_clock(tmp_path, frames, ros_context,
                                                          namespace):
    bag = write_scene_bag(tmp_path / 'bag', frames, images=('jpeg',), transforms_topic='/tf')
    harness = rclpy.create_node('harness', namespace=namespace, context=ros_context)
    player = rclpy.create_node('player', context=ros_context)
    received = {'image': [], 'clock': []}
    harness.create_subscription(CompressedImage, f'{namespace}{IMAGE}/compressed',
                                received['image'].append, 10)
    harness.create_subscription(CameraInfo, f'{namespace}{INFO}', lambda _: None, 10)
    harness.create_subscription(PointCloud2, f'{namespace}{POINTS}', lambda _: None, 10)
    harness.create_subscription(Clock, '/clock', received['clock'].append, 100)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(harness)
    try:
        with RosbagSource(bag) as source:
            assert source.topics.image == IMAGE + '/compressed'
            counts = []
            play = threading.Thread(target=lambda: counts.append(play_timed(
                player, source, rate=1.0, prefix=namespace, wait_for_subscribers_s=10,
                clock_hz=100.0)))
            play.start()
            assert spin_until(executor, lambda: len(received['image']) == 3 and not
                              play.is_alive(), 30)
            play.join()
        spin_until(executor, lambda: False, 0.3)
        # 3 images, 3 camera_infos, 3 clouds (+ the /tf message with tf2_msgs).
        assert counts == [10 if HAVE_TF2 else 9]
        assert received['image'][0].format == 'rgb8; jpeg compressed bgr8'
        clock = [stamp_to_ns(message.clock) for message in received['clock']]
        # Ticks while waiting and one before each message: bag time, never backwards, ending
        # at the last message's log time (the last cloud, 0.2 s + 1 us after the start).
        assert len(clock) >= 9
        assert clock == sorted(clock)
        assert clock[0] >= START_NS and clock[-1] == START_NS + 200_000_000 + 1000
    finally:
        _end(executor, harness, player)


def _node(ros_context, namespace, tiny_model_dir, **values) -> CompletionNode:
    remaps = ['--ros-args', '-r', f'image:={namespace}{IMAGE}', '-r',
              f'camera_info:={namespace}{INFO}', '-r', f'points:={namespace}{POINTS}']
    values = {'model': str(tiny_model_dir), 'device': 'cpu', 'iterations': 2,
              'warm_iterations': 1, 'min_points': 8, 'projection.min_range': 0.1,
              'projection.remove_occluded': False, **values}
    for topic in (IMAGE + '/compressed', IMAGE, INFO, POINTS):
        values[f'qos_overrides.{namespace}{topic}.subscription.reliability'] = 'reliable'
    return CompletionNode(context=ros_context, namespace=namespace, cli_args=remaps,
                          parameter_overrides=[Parameter(k, value=v) for k, v in values.items()])


def _jpeg_node(ros_context, namespace, tiny_model_dir, frames, **values) -> CompletionNode:
    """Return a node for the scene bags with jpeg images, the rig's extrinsic given."""
    T = [float(v) for v in frames[0].T_cam_lidar.ravel()]
    return _node(ros_context, namespace, tiny_model_dir, image_transport='compressed',
                 **{'lidar_to_camera.matrix': T}, **values)


def _play_into(node, bag, ros_context, namespace, outputs, **play_options):
    """Play ``bag`` at its pace while spinning ``node``; return what ``outputs`` received."""
    received = {name: [] for name in outputs}
    harness = rclpy.create_node('harness', namespace=namespace, context=ros_context)
    for name, store in received.items():
        harness.create_subscription(Image, name, store.append, 10)
    player = rclpy.create_node('player', context=ros_context)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    executor.add_node(harness)
    try:
        with RosbagSource(bag) as source:
            play = threading.Thread(target=play_timed, args=(player, source), kwargs={
                'rate': 0.5, 'prefix': namespace, 'wait_for_subscribers_s': 10, **play_options})
            play.start()

            def settled() -> bool:
                stats = node.stats
                done = stats.processed + sum(stats.dropped.values()) + stats.replaced
                return not play.is_alive() and done >= 3

            assert spin_until(executor, settled, 120), node.stats
            assert spin_until(executor, lambda: all(received.values()), 30), node.stats
            play.join()
        return received
    finally:
        _end(executor, harness, player)


def test_clock_makes_use_sim_time_and_the_latency_meaningful(tmp_path, frames, ros_context,
                                                             namespace, tiny_model_dir):
    bag = write_scene_bag(tmp_path / 'bag', frames, images=('jpeg',))
    node = _jpeg_node(ros_context, namespace, tiny_model_dir, frames, use_sim_time=True)
    try:
        _play_into(node, bag, ros_context, namespace, ('depth',), clock_hz=50.0)
        assert node.stats.processed >= 1, node.stats
        # Sim time is the bag's (2019), so the latency is processing time, not 2019 -> now.
        assert 0 <= node.stats.last_latency_s < 60, node.stats.last_latency_s
        assert node.stats.latency_note == ''
        assert node.get_clock().now().nanoseconds < START_NS + 10**9
    finally:
        node.destroy_node()


def test_a_clock_that_jumps_back_during_a_frame_leaves_its_latency_its_own(
        tmp_path, frames, ros_context, namespace, tiny_model_dir):
    # A looped replay's /clock goes back while a frame is processed: the frame's latency is the
    # clock at its arrival minus its stamp, plus the seconds spent since, not now - stamp
    # (negative here, or a point of a later loop).
    bag = write_scene_bag(tmp_path / 'bag', frames[:1], images=('jpeg',))
    node = _jpeg_node(ros_context, namespace, tiny_model_dir, frames, use_sim_time=True,
                      iterations=30)
    harness = rclpy.create_node('harness', namespace=namespace, context=ros_context)
    harness.create_subscription(Image, 'depth', lambda _: None, 10)  # someone wants depth
    clock = harness.create_publisher(Clock, '/clock', 10)
    player = rclpy.create_node('player', context=ros_context)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    executor.add_node(harness)

    def tick(ns: int) -> bool:
        clock.publish(Clock(clock=Time(sec=ns // 10**9, nanosec=ns % 10**9)))
        return spin_until(executor, lambda: node.get_clock().now().nanoseconds == ns, 10)

    try:
        assert spin_until(executor, lambda: clock.get_subscription_count() > 0, 10)
        arrival_ns = START_NS + 20_000_000  # the bag's first message is at its start
        assert tick(arrival_ns)
        before_arrival = time.monotonic()
        with RosbagSource(bag) as source:
            play_timed(player, source, prefix=namespace, wait_for_subscribers_s=10)
        assert spin_until(executor, lambda: node.stats.received >= 1, 30), node.stats
        assert tick(START_NS - 10 * 10**9)  # the loop: 10 s back, while the frame runs
        assert spin_until(executor, lambda: node.stats.processed >= 1, 60), node.stats
        since_arrival = time.monotonic() - before_arrival  # bounds the seconds the node spent
        assert node.stats.latency_note == ''
        # arrival - stamp (20 ms) plus the seconds spent since the arrival
        assert 0.02 <= node.stats.last_latency_s <= 0.02 + since_arrival
    finally:
        _end(executor, harness, player, node)


def test_without_the_clock_the_latency_is_absent_with_its_reason(tmp_path, frames, ros_context,
                                                                 namespace, tiny_model_dir):
    bag = write_scene_bag(tmp_path / 'bag', frames, images=('jpeg',))
    node = _jpeg_node(ros_context, namespace, tiny_model_dir, frames)
    try:
        _play_into(node, bag, ros_context, namespace, ('depth',))
        assert node.stats.processed >= 1, node.stats
        # The bag's stamps (2019) against the wall clock: no latency, and why.
        assert math.isnan(node.stats.last_latency_s)
        assert 'another clock' in node.stats.latency_note, node.stats.latency_note
    finally:
        node.destroy_node()


@pytest.mark.skipif(not HAVE_TF2, reason='tf2_msgs / tf2_ros are not installed (ROS 2 only, '
                    'no PyPI wheels): /tf_static cannot be replayed here')
def test_replayed_tf_static_gives_the_node_its_transform(tmp_path, frames, ros_context,
                                                         namespace, tiny_model_dir):
    bag = write_scene_bag(tmp_path / 'bag', frames)
    node = _node(ros_context, namespace, tiny_model_dir, tf_timeout=0.5)
    try:
        received = _play_into(node, bag, ros_context, namespace, ('sparse_depth', 'depth'))
        assert node.stats.dropped.get('no_transform', 0) == 0, node.stats
        message = received['sparse_depth'][0]
        frame = frames[(stamp_to_ns(message.header.stamp) - START_NS) // 100_000_000]
        expected = lidar_to_sparse_depth(
            frame.points_lidar[:, :3], RigidTransform.from_matrix(frame.T_cam_lidar),
            frame.camera, ProjectionConfig(min_range=0.1)).depth
        np.testing.assert_array_equal(depth_image_to_array(message), expected)
        assert message.header.frame_id == CAMERA and LIDAR != CAMERA
    finally:
        node.destroy_node()
