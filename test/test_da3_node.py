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
The completion node on Depth Anything 3 over real rclpy.

``model`` a DA3 folder as the official code writes it (DA3-Small, random weights): depth and
its confidence are published.
"""

from __future__ import annotations

from conftest import spin_until
from da3_official import official_api
import numpy as np
import pytest
import torch

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


@pytest.fixture(scope='module')
def da3_small_folder(tmp_path_factory):
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp('da3-small')
    official_api().DepthAnything3(model_name='da3-small').save_pretrained(str(folder))
    return folder


def _header(frame_id: str, stamp_ns: int) -> Header:
    return Header(frame_id=frame_id, stamp=Time(sec=stamp_ns // 10**9,
                                                nanosec=stamp_ns % 10**9))


def test_node_on_da3_publishes_depth_and_confidence(ros_context, namespace, da3_small_folder):
    frame = world.make_sequence(world.SequenceConfig(
        'indoor', num_frames=1, width=112, height=84, seed=3,
        lidar=world.LidarConfig.indoor(beams=16)))[0]
    values = {'model': str(da3_small_folder), 'device': 'cpu', 'iterations': 3,
              'warm_iterations': 2, 'processing_size': 0, 'min_points': 8,
              'lidar_to_camera.matrix': [float(v) for v in frame.T_cam_lidar.ravel()],
              'projection.min_range': 0.1, 'projection.remove_occluded': False}
    node = CompletionNode(context=ros_context, namespace=namespace, parameter_overrides=[
        Parameter(name, value=value) for name, value in values.items()])
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
        camera_header = _header('camera_optical', stamp)
        inputs['image'].publish(rgb_to_image_msg(frame.rgb, camera_header))
        inputs['camera_info'].publish(camera_model_to_camera_info(frame.camera, camera_header))
        inputs['points'].publish(xyz_to_pointcloud2(frame.points_lidar[:, :3],
                                                    _header('lidar', stamp + 3_000_000)))
        assert spin_until(executor, lambda: received['depth'] and received['depth/confidence'],
                          120), node.stats
        depth = depth_image_to_array(received['depth'][0])
        confidence = depth_image_to_array(received['depth/confidence'][0])
        assert received['depth'][0].header == camera_header
        assert confidence.shape == depth.shape == frame.rgb.shape[:2]
        finite = confidence[~np.isnan(confidence)]
        assert finite.size and np.all((finite >= 0) & (finite <= 1))
        assert np.isfinite(depth).mean() > 0.5
        assert type(node.model_choice).__name__ == 'DA3Model'
    finally:
        executor.shutdown()
        node.destroy_node()
        harness.destroy_node()
