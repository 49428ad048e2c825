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

"""REP 118 over DDS: depth nearer than min_depth is -Inf, farther than max_depth +Inf."""

from __future__ import annotations

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from lrda_ros import world  # noqa: E402, I100
from lrda_ros.messages.conversions import depth_image_to_array  # noqa: E402
from lrda_ros.ros.node import CompletionNode  # noqa: E402
from node_harness import one_frame_outputs  # noqa: E402
from test_node import node_parameters  # noqa: E402


def test_depth_beyond_either_limit_is_marked_not_clamped(ros_context, namespace):
    frame = world.make_sequence(world.SequenceConfig(
        'indoor', num_frames=1, width=112, height=84, seed=3,
        lidar=world.LidarConfig.indoor(beams=16)))[0]
    # Limits inside the room's depth range: a fifth of it lies nearer, a fifth farther. The
    # demonstration prior knows this synthetic world, so its depth finds both.
    near, far = (float(v) for v in np.percentile(frame.depth[frame.depth > 0], [20, 80]))
    node = CompletionNode(context=ros_context, namespace=namespace,
                          parameter_overrides=node_parameters(
                              'demo', frame, min_depth=near, max_depth=far,
                              **{'projection.min_range': 0.1}))
    try:
        outputs = one_frame_outputs(ros_context, namespace, node, frame,
                                    topics=('depth', 'depth/confidence'))
    finally:
        node.destroy_node()
    depth = depth_image_to_array(outputs['depth'])
    raw = np.frombuffer(bytes(outputs['depth'].data), np.float32).reshape(depth.shape)
    too_close, too_far = np.isneginf(raw), np.isposinf(raw)
    assert too_close.mean() > 0.01 and too_far.mean() > 0.01 and not np.isnan(raw).any()
    # Marked where the room is that near or far (its exact depth, rendered).
    assert np.median(frame.depth[too_close]) < near and np.median(frame.depth[too_far]) > far
    finite = raw[np.isfinite(raw)]
    assert finite.size > 0.3 * raw.size and finite.min() > near and finite.max() < far
    confidence = np.frombuffer(bytes(outputs['depth/confidence'].data), np.float32)
    np.testing.assert_array_equal(np.isnan(confidence), ~np.isfinite(raw).ravel())
