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

from da3_official import official_api
import numpy as np
import pytest
import torch

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from lrda_ros import world  # noqa: E402, I100
from lrda_ros.messages.conversions import depth_image_to_array  # noqa: E402
from lrda_ros.ros.node import CompletionNode  # noqa: E402
from node_harness import CAMERA_HEADER, one_frame_outputs  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402


@pytest.fixture(scope='module')
def da3_small_folder(tmp_path_factory):
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp('da3-small')
    official_api().DepthAnything3(model_name='da3-small').save_pretrained(str(folder))
    return folder


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
    try:
        outputs = one_frame_outputs(ros_context, namespace, node, frame)
        depth = depth_image_to_array(outputs['depth'])
        confidence = depth_image_to_array(outputs['depth/confidence'])
        assert outputs['depth'].header == CAMERA_HEADER
        assert confidence.shape == depth.shape == frame.rgb.shape[:2]
        finite = confidence[~np.isnan(confidence)]
        assert finite.size and np.all((finite >= 0) & (finite <= 1))
        assert np.isfinite(depth).mean() > 0.5
        assert type(node.model_choice).__name__ == 'DA3Model'
    finally:
        node.destroy_node()
