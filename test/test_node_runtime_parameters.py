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
Run-time parameter changes over DDS: checked as at start-up, applied between frames.

rclpy's pre-set and post-set parameter callbacks exist from Iron on; Humble has only on-set.
The node is run here also with those two hidden, as on Humble, and must behave the same.
"""

from __future__ import annotations

from conftest import spin_until
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from lrda_ros import world  # noqa: E402, I100
from lrda_ros.messages.conversions import depth_image_to_array  # noqa: E402
from lrda_ros.ros.node import CompletionNode  # noqa: E402
from node_harness import one_frame_outputs  # noqa: E402
from rcl_interfaces.srv import SetParameters  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from test_node import node_parameters  # noqa: E402
from unidepth_tiny import tiny_unidepth_network, write_official_checkpoint  # noqa: E402

#: rclpy's parameter callbacks that Humble lacks.
IRON_CALLBACKS = ('add_pre_set_parameters_callback', 'add_post_set_parameters_callback')


@pytest.fixture(scope='module')
def frame():
    return world.make_sequence(world.SequenceConfig(
        'indoor', num_frames=1, width=112, height=84, seed=3,
        lidar=world.LidarConfig.indoor(beams=16)))[0]


@pytest.fixture(params=['rclpy', 'humble'])
def distro_api(request, monkeypatch):
    """Run with this rclpy's parameter callbacks, then with the Iron+ ones hidden."""
    if request.param == 'humble':
        for name in IRON_CALLBACKS:
            monkeypatch.delattr(Node, name, raising=False)
    return request.param


class Running:
    """A completion node and a parameter client in one context, as ``ros2 param set`` is."""

    def __init__(self, context, namespace: str, node: CompletionNode) -> None:
        self.context, self.namespace, self.node = context, namespace, node
        self.client_node = rclpy.create_node('parameter_client', context=context)
        self.client = self.client_node.create_client(
            SetParameters, f'{namespace}/completion_node/set_parameters')

    def set_parameter(self, name: str, value):
        """Set one parameter through the node's service; return its SetParametersResult."""
        executor = SingleThreadedExecutor(context=self.context)
        executor.add_node(self.node)
        executor.add_node(self.client_node)
        try:
            assert spin_until(executor, self.client.service_is_ready, 10)
            future = self.client.call_async(SetParameters.Request(
                parameters=[Parameter(name, value=value).to_parameter_msg()]))
            assert spin_until(executor, future.done, 10)
            return future.result().results[0]
        finally:
            executor.shutdown()

    def depth(self, frame):
        """Publish ``frame``; return the published depth in metres."""
        return depth_image_to_array(one_frame_outputs(
            self.context, self.namespace, self.node, frame, topics=('depth',))['depth'])

    def close(self) -> None:
        self.client_node.destroy_node()
        self.node.destroy_node()


@pytest.fixture
def start(ros_context, namespace, frame):
    started = []

    def run(model, **overrides) -> Running:
        node = CompletionNode(context=ros_context, namespace=namespace,
                              parameter_overrides=node_parameters(model, frame, **overrides))
        started.append(Running(ros_context, namespace, node))
        return started[-1]

    yield run
    for running in started:
        running.close()


def test_changes_are_typed_checked_and_applied_with_or_without_iron_callbacks(
        distro_api, start, tiny_model_dir, frame):
    running = start(tiny_model_dir)
    node = running.node
    assert all(hasattr(node, name) == (distro_api == 'rclpy') for name in IRON_CALLBACKS)
    result = running.set_parameter('max_depth', 6)  # an integer: `ros2 param set ... 6` sends it
    assert result.successful, result.reason
    assert node.settings.tto.max_depth == 6.0
    refused = running.set_parameter('max_depth', 'far')
    assert not refused.successful and "'max_depth'" in refused.reason
    refused = running.set_parameter('min_depth', 7.0)  # beyond max_depth: a cross check
    assert not refused.successful and 'must exceed min_depth' in refused.reason
    assert node.settings.tto.max_depth == 6.0
    depth = running.depth(frame)
    # The frame ran with the change: nothing finite beyond the new far limit.
    assert depth[depth < 6.0].size > 0 and not (depth[depth >= 6.0] < float('inf')).any()
    assert node.pipeline.completer.config.max_depth == 6.0


def test_schedule_fast_on_unidepth_is_refused_and_the_node_runs_on(distro_api, start, tmp_path,
                                                                   frame):
    model = write_official_checkpoint(tmp_path / 'unidepth', tiny_unidepth_network())
    running = start(model, iterations=3)
    refused = running.set_parameter('schedule', 'fast')
    assert not refused.successful
    assert "'schedule'" in refused.reason and "use 'adaptive' or 'paper'" in refused.reason
    refused = running.set_parameter('tail_strips', 2)
    assert not refused.successful and "'tail_strips'" in refused.reason
    assert running.node.get_parameter('schedule').value == 'adaptive'
    assert running.node.get_parameter('tail_strips').value == 1
    depth = running.depth(frame)  # no fatal error: the next frame is completed
    assert (depth > 0).mean() > 0.9
    assert not running.node.failed


def test_scene_cut_factor_takes_effect_or_is_refused(distro_api, start, tiny_model_dir, frame):
    running = start(tiny_model_dir)
    # The 'adaptive' schedule has no such rule.
    refused = running.set_parameter('scene_cut_factor', 8.0)
    assert not refused.successful and "'paper'" in refused.reason
    assert running.set_parameter('schedule', 'paper').successful
    assert running.set_parameter('scene_cut_factor', 8.0).successful
    running.depth(frame)
    # The derived rule was rebuilt for the frame (the engine's scene-cut test reads it).
    assert running.node.pipeline.completer.config.scene_cut_factor == 8.0
    assert running.node.pipeline.completer._scene_cut_rule.factor == 8.0


def test_the_extrinsic_override_is_set_one_parameter_at_a_time(start, tiny_model_dir, frame):
    from lrda_ros.geometry import RigidTransform

    true = RigidTransform.from_matrix(frame.T_cam_lidar)
    running = start(tiny_model_dir, **{'lidar_to_camera.matrix': [0.0],
                                       'lidar_to_camera.translation': [0.1, -0.2, 0.3]})
    node = running.node
    # Only the translation: no rotation (hand-computed: the identity).
    expected = np.eye(4)
    expected[:3, 3] = [0.1, -0.2, 0.3]
    np.testing.assert_allclose(node.settings.extrinsic.as_matrix(), expected, atol=1e-12)
    # A quarter turn about z alone, on top: [0, 0, sin 45°, cos 45°].
    half = np.sqrt(0.5)
    assert running.set_parameter('lidar_to_camera.rotation', [0.0, 0.0, half, half]).successful
    expected[:3, :3] = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    np.testing.assert_allclose(node.settings.extrinsic.as_matrix(), expected, atol=1e-12)
    # Each part of the true extrinsic in turn: frames are completed with it.
    assert running.set_parameter('lidar_to_camera.rotation',
                                 [float(v) for v in true.quaternion_xyzw()]).successful
    assert running.set_parameter('lidar_to_camera.translation',
                                 [float(v) for v in true.translation]).successful
    np.testing.assert_allclose(node.settings.extrinsic.as_matrix(), frame.T_cam_lidar,
                               atol=1e-9)
    assert np.isfinite(running.depth(frame)).mean() > 0.9
    refused = running.set_parameter('lidar_to_camera.rotation', [0.0, 0.0, 1.0])
    assert not refused.successful and 'needs 4 values' in refused.reason
    # Removed part by part: tf2 then gives the transform, where the node listens to it.
    assert running.set_parameter('lidar_to_camera.translation', [0.0]).successful
    removed = running.set_parameter('lidar_to_camera.rotation', [0.0])
    if node._tf is None:  # tf2_ros missing: the override cannot go
        assert not removed.successful and 'does not listen to tf2' in removed.reason
    else:
        assert removed.successful and node.settings.extrinsic is None
