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

"""The node on a real KITTI recording: rosbag2 replayed over rclpy, extrinsic from /tf_static."""

from __future__ import annotations

from conftest import SHARED_DATA
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from lrda_ros.geometry import lidar_to_sparse_depth  # noqa: E402, I100
from lrda_ros.messages.conversions import (  # noqa: E402
    camera_info_to_camera_model, depth_image_to_array, pointcloud2_to_xyz)
from lrda_ros.messages.rosbag import RosbagSource  # noqa: E402
from lrda_ros.ros.node import CompletionNode  # noqa: E402
from lrda_ros.ros.replay import LockstepReplay  # noqa: E402
from lrda_ros.settings import NodeSettings  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

BAG = SHARED_DATA / 'bags' / 'kitti_2011_09_26_3frames_db3'


@pytest.mark.slow
def test_node_on_the_kitti_bag_projects_exactly_and_completes(ros_context, namespace,
                                                              tiny_model_dir):
    if not BAG.is_dir():
        pytest.skip(f'KITTI bag not found at {BAG}')
    source = RosbagSource(BAG)
    T_cam_lidar = source.transform_tree().lookup('camera_color_left', 'velo_link')
    values = {'model': str(tiny_model_dir), 'device': 'cpu', 'iterations': 3,
              'warm_iterations': 2, 'processing_size': 252,
              'lidar_to_camera.matrix': [float(v) for v in T_cam_lidar.as_matrix().ravel()]}
    node = CompletionNode(context=ros_context, namespace=namespace, parameter_overrides=[
        Parameter(name, value=value) for name, value in values.items()])
    player = rclpy.create_node('player', namespace=namespace, context=ros_context)
    replay = LockstepReplay(player, source, outputs=('depth', 'sparse_depth'))
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    executor.add_node(player)
    try:
        assert replay.wait_for_subscribers(executor)
        frames = replay.play(executor, timeout_per_frame=120)
        assert len(frames) == 3
        projection = NodeSettings.from_values(values).projection
        for frame in frames:
            assert set(frame.outputs) == {'depth', 'sparse_depth'}, 'a frame was dropped'
            camera = camera_info_to_camera_model(frame.inputs['camera_info'])
            expected = lidar_to_sparse_depth(pointcloud2_to_xyz(frame.inputs['points']),
                                             T_cam_lidar, camera, projection).depth
            published = depth_image_to_array(frame.outputs['sparse_depth'])
            np.testing.assert_array_equal(published, expected)
            assert 8_000 < np.count_nonzero(expected) < 25_000

            depth_msg = frame.outputs['depth']
            assert depth_msg.header == frame.inputs['image'].header
            assert (depth_msg.height, depth_msg.width) == (375, 1242)
            depth = np.frombuffer(bytes(depth_msg.data), np.float32).reshape(375, 1242)
            lidar = expected > 0
            assert np.isfinite(depth[lidar]).mean() > 0.99
    finally:
        executor.shutdown()
        node.destroy_node()
        player.destroy_node()
        source.close()
