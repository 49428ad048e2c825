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

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from lrda_ros import world  # noqa: E402, I100
from lrda_ros.messages.conversions import depth_image_to_array  # noqa: E402
from lrda_ros.ros.node import CompletionNode  # noqa: E402
from node_harness import CAMERA_HEADER, one_frame_outputs  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from unidepth_tiny import tiny_unidepth_network, write_official_checkpoint  # noqa: E402


@pytest.fixture(scope='module')
def frame():
    config = world.SequenceConfig('indoor', num_frames=1, width=112, height=84, seed=3,
                                  lidar=world.LidarConfig.indoor(beams=16))
    return world.make_sequence(config)[0]


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
    try:
        outputs = one_frame_outputs(ros_context, namespace, node, frame)
        depth_msg, confidence_msg = outputs['depth'], outputs['depth/confidence']
        assert confidence_msg.encoding == '32FC1'
        assert confidence_msg.header == depth_msg.header == CAMERA_HEADER
        depth = depth_image_to_array(depth_msg)
        confidence = depth_image_to_array(confidence_msg)
        assert confidence.shape == depth.shape == frame.rgb.shape[:2]
        np.testing.assert_array_equal(np.isnan(confidence), ~np.isfinite(depth))
        finite = confidence[~np.isnan(confidence)]
        assert np.all((finite >= 0) & (finite <= 1))
        assert np.isfinite(depth).mean() > 0.9
    finally:
        node.destroy_node()


def test_models_without_a_confidence_head_publish_the_confidence_too(ros_context, namespace,
                                                                     tiny_model_dir, frame):
    node = start(ros_context, namespace, tiny_model_dir, frame)
    try:
        assert node.pub_confidence is not None
        assert [name for name, _ in node.get_publisher_names_and_types_by_node(
            node.get_name(), node.get_namespace()) if name.endswith('depth/confidence')]
    finally:
        node.destroy_node()
