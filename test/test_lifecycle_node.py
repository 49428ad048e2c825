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

"""The managed completion node over real rclpy: transitions via the lifecycle services."""

from __future__ import annotations

import threading

from conftest import spin_until
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')
pytest.importorskip('lifecycle_msgs', reason='lifecycle_msgs is not installed')

from lifecycle_msgs.msg import State, Transition  # noqa: E402, I100
from lifecycle_msgs.srv import ChangeState, GetState  # noqa: E402
from lrda_ros.ros.lifecycle_node import CompletionLifecycleNode  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.lifecycle import TransitionCallbackReturn  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from lrda_ros import world  # noqa: E402, I100
from test_node import Harness, node_parameters  # noqa: E402


@pytest.fixture(scope='module')
def frames():
    """Return one synthetic indoor frame with a 16-beam LiDAR (as test_node's)."""
    return world.make_sequence(world.SequenceConfig(
        'indoor', num_frames=1, width=112, height=84, seed=3,
        lidar=world.LidarConfig.indoor(beams=16)))


@pytest.fixture
def managed(ros_context, namespace, tiny_model_dir, frames):
    node = CompletionLifecycleNode(context=ros_context, namespace=namespace,
                                   parameter_overrides=node_parameters(tiny_model_dir, frames[0]))
    harness = Harness(ros_context, namespace)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    executor.add_node(harness.node)
    yield node, harness, executor
    executor.shutdown()
    node.destroy_node()
    harness.node.destroy_node()


def call(executor, client, request):
    assert client.wait_for_service(timeout_sec=10)
    future = client.call_async(request)
    assert spin_until(executor, future.done, 60)
    return future.result()


def test_depth_only_while_active_and_the_model_only_while_configured(managed, frames, namespace):
    node, harness, executor = managed
    change = harness.node.create_client(ChangeState, f'{namespace}/completion_node/change_state')
    get = harness.node.create_client(GetState, f'{namespace}/completion_node/get_state')

    def transition(transition_id):
        assert call(executor, change, ChangeState.Request(
            transition=Transition(id=transition_id))).success

    def state():
        return call(executor, get, GetState.Request()).current_state.id

    def publish_and_wait(stamp_ns, expect_depth):
        before = len(harness.received['depth'])
        harness.publish(frames[0], stamp_ns)
        arrived = spin_until(executor, lambda: len(harness.received['depth']) > before,
                             30 if expect_depth else 3)
        assert arrived == expect_depth

    assert state() == State.PRIMARY_STATE_UNCONFIGURED and node.pipeline is None
    transition(Transition.TRANSITION_CONFIGURE)
    assert state() == State.PRIMARY_STATE_INACTIVE and node.pipeline is not None
    assert spin_until(executor, lambda: node.pub_depth.get_subscription_count() > 0, 10)
    publish_and_wait(1_000_000_000, expect_depth=False)  # inactive: not even subscribed
    assert harness.pub_image.get_subscription_count() == 0

    transition(Transition.TRANSITION_ACTIVATE)
    assert spin_until(executor, lambda: harness.pub_points.get_subscription_count() > 0, 10)
    publish_and_wait(2_000_000_000, expect_depth=True)
    assert spin_until(executor, lambda: node.stats.processed >= 1, 10)  # counted after publish
    processed = node.stats.processed

    transition(Transition.TRANSITION_DEACTIVATE)
    assert spin_until(executor, lambda: harness.pub_image.get_subscription_count() == 0, 10)
    model = node.pipeline
    publish_and_wait(3_000_000_000, expect_depth=False)
    assert node.stats.processed == processed and node.pipeline is model  # kept loaded

    transition(Transition.TRANSITION_ACTIVATE)  # instant: no model load
    assert spin_until(executor, lambda: harness.pub_points.get_subscription_count() > 0, 10)
    publish_and_wait(4_000_000_000, expect_depth=True)

    transition(Transition.TRANSITION_DEACTIVATE)
    transition(Transition.TRANSITION_CLEANUP)
    assert state() == State.PRIMARY_STATE_UNCONFIGURED
    assert node.pipeline is None and node._worker is None


def test_a_failed_configure_returns_failure_and_stays_unconfigured(ros_context, namespace,
                                                                   frames, tmp_path):
    node = CompletionLifecycleNode(context=ros_context, namespace=namespace,
                                   parameter_overrides=node_parameters(
                                       tmp_path / 'missing', frames[0]))
    try:
        assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
        assert node.pipeline is None and node._worker is None
        assert node._lifecycle_state() == 'unconfigured'
    finally:
        node.destroy_node()


def test_diagnostics_report_the_real_lifecycle_state(managed, namespace):
    node, harness, executor = managed
    name = f'{namespace}/completion_node: depth completion'

    def reports(state):
        ours = [s for d in harness.diagnostics for s in d.status if s.name == name]
        last = ours[-1] if ours else None
        return last if last is not None and {
            kv.key: kv.value for kv in last.values}.get('state') == state else None

    # Only an active node processes frames: every other state is a warning, never OK.
    assert spin_until(executor, lambda: reports('unconfigured'), 10)
    unconfigured = reports('unconfigured')
    assert unconfigured.message.startswith('unconfigured')
    assert unconfigured.level == unconfigured.WARN
    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
    assert spin_until(executor, lambda: reports('inactive'), 10)
    assert reports('inactive').level == unconfigured.WARN
    assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
    assert spin_until(executor, lambda: reports('active'), 10)
    active = reports('active')
    assert active.message.startswith('waiting for synchronized')
    assert active.level == active.OK  # the tiny test network, not the demo prior
    assert node.trigger_deactivate() == TransitionCallbackReturn.SUCCESS
    assert spin_until(executor, lambda: reports('inactive'), 10)
    inactive = reports('inactive')
    assert inactive.level == inactive.WARN and inactive.message.startswith('inactive')
    assert node.trigger_shutdown() == TransitionCallbackReturn.SUCCESS
    assert spin_until(executor, lambda: reports('finalized'), 10)
    finalized = reports('finalized')
    assert finalized.level == finalized.WARN and finalized.message.startswith('finalized')


def _workers() -> int:
    """Return the node threads alive in this process (worker and calibration monitor)."""
    return sum(thread.name in ('lrda_worker', 'lrda_calibration')
               for thread in threading.enumerate())


def _inputs(node) -> list[str]:
    """Return the topics of the node's own input subscriptions (tf aside)."""
    return sorted(s.topic_name for s in node.subscriptions
                  if s.topic_name.rsplit('/', 1)[-1] in ('image', 'camera_info', 'points'))


def test_cycles_and_a_failed_activate_leave_nothing_and_an_error_unloads_everything(
        ros_context, namespace, tiny_model_dir, frames, monkeypatch):
    before = _workers()
    # rclpy reads the override when the third input (points) is subscribed: image and
    # camera_info are subscribed by then, and must not stay so.
    bad_qos = Parameter(f'qos_overrides.{namespace}/points.subscription.reliability',
                        value='bogus')
    node = CompletionLifecycleNode(context=ros_context, namespace=namespace,
                                   parameter_overrides=[
                                       *node_parameters(tiny_model_dir, frames[0]), bad_qos])
    try:
        unconfigured = sorted(s.topic_name for s in node.subscriptions)
        for _ in range(3):  # what configure creates, cleanup destroys
            assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
            assert _workers() - before == 2  # the worker and the calibration monitor
            assert node.trigger_cleanup() == TransitionCallbackReturn.SUCCESS
            assert _workers() == before
            assert sorted(s.topic_name for s in node.subscriptions) == unconfigured
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        assert node.trigger_activate() == TransitionCallbackReturn.FAILURE
        assert node._lifecycle_state() == 'inactive' and _inputs(node) == []
        assert _workers() - before == 2
        assert node.trigger_cleanup() == TransitionCallbackReturn.SUCCESS
        assert _workers() == before and node.pipeline is None

        # An exception in a transition (here after the model loaded): on_error releases it.
        def defect():
            raise RuntimeError('a defect after loading')
        monkeypatch.setattr(node, '_log_started', defect)
        assert node.trigger_configure() == TransitionCallbackReturn.ERROR
        assert node._lifecycle_state() == 'unconfigured'
        assert _workers() == before and node.pipeline is None and node._worker is None
        assert all(not camera.publishers for camera in node.cameras)
        monkeypatch.undo()
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        assert _workers() - before == 2  # one worker again, not a second one
    finally:
        node.destroy_node()
    assert _workers() == before


def _tf_subscriptions(harness, node, topic: str) -> int:
    """Return the node's subscriptions to ``topic`` as the ROS graph lists them."""
    return sum(info.node_name == node.get_name() and info.node_namespace == node.get_namespace()
               for info in harness.get_subscriptions_info_by_topic(topic))


def test_configure_and_cleanup_cycles_subscribe_tf_once_and_release_it(
        ros_context, namespace, tiny_model_dir, frames):
    pytest.importorskip('tf2_ros', reason='tf2_ros is not installed (ROS 2 install; not on PyPI)')
    parameters = [p for p in node_parameters(tiny_model_dir, frames[0])
                  if p.name != 'lidar_to_camera.matrix']  # the extrinsic from tf: a listener
    node = CompletionLifecycleNode(context=ros_context, namespace=namespace,
                                   parameter_overrides=parameters)
    harness = rclpy.create_node('graph', namespace=namespace, context=ros_context)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(harness)

    def subscribed(count: int) -> bool:
        return spin_until(executor, lambda: all(
            _tf_subscriptions(harness, node, topic) == count for topic in ('/tf', '/tf_static')),
            10)

    try:
        assert subscribed(0)  # unconfigured: no tf listener
        for _ in range(3):
            assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
            assert subscribed(1)
            assert node.trigger_cleanup() == TransitionCallbackReturn.SUCCESS
            assert subscribed(0)
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
        assert node.trigger_shutdown() == TransitionCallbackReturn.SUCCESS
        assert subscribed(0)
    finally:
        executor.shutdown()
        harness.destroy_node()
        node.destroy_node()
