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

"""The completion node on UniDepthV2 over real rclpy: depth and its confidence published."""

from __future__ import annotations

from conftest import spin_until
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from builtin_interfaces.msg import Time  # noqa: E402, I100
from lrda_ros import world  # noqa: E402
from lrda_ros.messages.conversions import depth_image_to_array  # noqa: E402
from lrda_ros.ros.builders import (  # noqa: E402
    camera_model_to_camera_info, rgb_to_image_msg, xyz_to_pointcloud2)
from lrda_ros.ros.node import CompletionNode  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image, PointCloud2  # noqa: E402
from std_msgs.msg import Header  # noqa: E402
from unidepth_tiny import tiny_unidepth_network, write_official_checkpoint  # noqa: E402


@pytest.fixture(scope='module')
def frame():
    config = world.SequenceConfig('indoor', num_frames=1, width=112, height=84, seed=3,
                                  lidar=world.LidarConfig.indoor(beams=16))
    return world.make_sequence(config)[0]


def header(frame_id: str, stamp_ns: int) -> Header:
    return Header(frame_id=frame_id, stamp=Time(sec=stamp_ns // 10**9,
                                                nanosec=stamp_ns % 10**9))


def start(context, namespace, model, frame, **overrides):
    values = {'model': str(model), 'device': 'cpu', 'iterations': 3, 'warm_iterations': 2,
              'processing_size': 0, 'min_points': 8,
              'lidar_to_camera.matrix': [float(v) for v in frame.T_cam_lidar.ravel()],
              'projection.min_range': 0.1, 'projection.remove_occluded': False, **overrides}
    return CompletionNode(context=context, namespace=namespace, parameter_overrides=[
        Parameter(name, value=value) for name, value in values.items()])


def test_node_publishes_depth_and_confidence_with_one_header(ros_context, namespace, tmp_path,
                                                             frame):
    model = write_official_checkpoint(tmp_path / 'unidepth', tiny_unidepth_network())
    node = start(ros_context, namespace, model, frame)
    harness = rclpy.create_node('harness', namespace=namespace, context=ros_context)
    received = {'depth': [], 'depth/confidence': []}
    for topic, store in received.items():
        harness.create_subscription(Image, topic, store.append, 10)
    inputs = {topic: harness.create_publisher(kind, topic, 10) for topic, kind in
              (('image', Image), ('camera_info', CameraInfo), ('points', PointCloud2))}
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    executor.add_node(harness)
    try:
        assert spin_until(executor, lambda: node.pub_confidence.get_subscription_count() > 0
                          and inputs['points'].get_subscription_count() > 0, 10)
        stamp = 1_700_000_000_250_000_000
        camera_header = header('camera_optical', stamp)
        inputs['image'].publish(rgb_to_image_msg(frame.rgb, camera_header))
        inputs['camera_info'].publish(camera_model_to_camera_info(frame.camera, camera_header))
        inputs['points'].publish(xyz_to_pointcloud2(frame.points_lidar[:, :3],
                                                    header('lidar', stamp + 3_000_000)))
        assert spin_until(executor, lambda: received['depth'] and received['depth/confidence'],
                          120), node.stats
        depth_msg, confidence_msg = received['depth'][0], received['depth/confidence'][0]
        assert confidence_msg.encoding == '32FC1'
        assert confidence_msg.header == depth_msg.header == camera_header
        depth = depth_image_to_array(depth_msg)
        confidence = depth_image_to_array(confidence_msg)
        assert confidence.shape == depth.shape == frame.rgb.shape[:2]
        np.testing.assert_array_equal(np.isnan(confidence), np.isnan(depth))
        finite = confidence[~np.isnan(confidence)]
        assert np.all((finite >= 0) & (finite <= 1))
        assert np.isfinite(depth).mean() > 0.9
    finally:
        executor.shutdown()
        node.destroy_node()
        harness.destroy_node()


def test_models_without_a_confidence_head_publish_the_confidence_too(ros_context, namespace,
                                                                     tiny_model_dir, frame):
    node = start(ros_context, namespace, tiny_model_dir, frame)
    try:
        assert node.pub_confidence is not None
        assert [name for name, _ in node.get_publisher_names_and_types_by_node(
            node.get_name(), node.get_namespace()) if name.endswith('depth/confidence')]
    finally:
        node.destroy_node()
