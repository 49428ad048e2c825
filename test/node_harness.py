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

"""One synthetic frame through a completion node over real rclpy, for the backbones' tests."""

from __future__ import annotations

from builtin_interfaces.msg import Time
from conftest import spin_until
import rclpy
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import CameraInfo, Image, PointCloud2
from std_msgs.msg import Header

from lrda_ros.ros.builders import (  # noqa: I100
    camera_model_to_camera_info, rgb_to_image_msg, xyz_to_pointcloud2)

#: The camera header the frame is published with.
CAMERA_HEADER = Header(frame_id='camera_optical',
                       stamp=Time(sec=1_700_000_000, nanosec=250_000_000))


def one_frame_outputs(context, namespace: str, node, frame,
                      topics=('depth', 'depth/confidence')) -> dict[str, Image]:
    """Publish the frame's image, camera_info and cloud; return the first message per topic."""
    harness = rclpy.create_node('harness', namespace=namespace, context=context)
    received = {topic: [] for topic in topics}
    for topic, store in received.items():
        harness.create_subscription(Image, topic, store.append, 10)
    inputs = {topic: harness.create_publisher(kind, topic, 10) for topic, kind in
              (('image', Image), ('camera_info', CameraInfo), ('points', PointCloud2))}
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    executor.add_node(harness)
    try:
        # The node's outputs reach the harness, its inputs the node, before anything is sent.
        assert spin_until(executor, lambda: all(
            any(publisher.topic_name == f'{namespace}/{topic}'
                and publisher.get_subscription_count() > 0 for publisher in node.publishers)
            for topic in topics) and inputs['points'].get_subscription_count() > 0, 10)
        stamp = CAMERA_HEADER.stamp
        lidar_header = Header(frame_id='lidar', stamp=Time(sec=stamp.sec,
                                                           nanosec=stamp.nanosec + 3_000_000))
        inputs['image'].publish(rgb_to_image_msg(frame.rgb, CAMERA_HEADER))
        inputs['camera_info'].publish(camera_model_to_camera_info(frame.camera, CAMERA_HEADER))
        inputs['points'].publish(xyz_to_pointcloud2(frame.points_lidar[:, :3], lidar_header))
        assert spin_until(executor, lambda: all(received.values()), 120), node.stats
        return {topic: messages[0] for topic, messages in received.items()}
    finally:
        executor.shutdown()
        harness.destroy_node()
