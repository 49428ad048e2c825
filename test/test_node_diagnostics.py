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

"""The completion node's /diagnostics over real rclpy/DDS: its name and its clock."""

from __future__ import annotations

import time

from conftest import spin_until
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from builtin_interfaces.msg import Time  # noqa: E402, I100
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from lrda_ros import world  # noqa: E402
from lrda_ros.ros.node import CompletionNode  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from test_node import node_parameters  # noqa: E402

PERIOD_S = 0.2


@pytest.fixture(scope='module')
def frame():
    """Return a synthetic frame: its extrinsic configures the node."""
    return world.make_sequence(world.SequenceConfig(
        'indoor', num_frames=1, width=112, height=84, seed=3,
        lidar=world.LidarConfig.indoor(beams=16)))[0]


@pytest.fixture
def executor(ros_context):
    """Yield an executor; destroy its nodes afterwards."""
    executor = SingleThreadedExecutor(context=ros_context)
    yield executor
    nodes = list(executor.get_nodes())
    executor.shutdown()
    for node in nodes:
        node.destroy_node()


def completion_node(context, namespace, model_dir, frame, **options):
    return CompletionNode(context=context, namespace=namespace,
                          parameter_overrides=node_parameters(
                              model_dir, frame, diagnostics_period=PERIOD_S),
                          **options)


def statuses(received: list[DiagnosticArray], name: str) -> list:
    return [status for array in received for status in array.status if status.name == name]


def test_nodes_in_two_namespaces_report_under_their_fully_qualified_names(
        ros_context, namespace, tiny_model_dir, frame, executor):
    first, second = f'{namespace}/left', f'{namespace}/right'
    for node_namespace in (first, second):
        executor.add_node(completion_node(ros_context, node_namespace, tiny_model_dir, frame))
    listener = rclpy.create_node('listener', context=ros_context)
    executor.add_node(listener)
    received: list[DiagnosticArray] = []
    listener.create_subscription(DiagnosticArray, '/diagnostics', received.append, 50)
    names = [f'{first}/completion_node: depth completion',
             f'{second}/completion_node: depth completion']
    assert spin_until(executor, lambda: all(statuses(received, name) for name in names), 10), [
        status.name for array in received for status in array.status]


def test_diagnostics_keep_their_period_while_sim_time_loops_back(
        ros_context, namespace, tiny_model_dir, frame, executor):
    # /clock of this test alone (remapped), as a looping bag replay publishes it: each loop
    # spans less than one diagnostics period, then time jumps back to the loop's start.
    clock_topic = f'{namespace}/clock'
    node = completion_node(ros_context, namespace, tiny_model_dir, frame,
                           cli_args=['--ros-args', '-r', f'/clock:={clock_topic}'])
    node.set_parameters([Parameter('use_sim_time', value=True)])
    executor.add_node(node)
    harness = rclpy.create_node('harness', context=ros_context)
    executor.add_node(harness)
    clock = harness.create_publisher(Clock, clock_topic, 10)
    received: list[DiagnosticArray] = []
    harness.create_subscription(DiagnosticArray, '/diagnostics', received.append, 50)
    assert spin_until(executor, lambda: clock.get_subscription_count() > 0, 10)
    name = f'{namespace}/completion_node: depth completion'

    def loop_clock(seconds: float) -> None:
        end, tick = time.monotonic() + seconds, 0
        while time.monotonic() < end:
            clock.publish(Clock(clock=Time(sec=100, nanosec=(tick % 3) * 50_000_000)))
            tick += 1
            spin_until(executor, lambda: False, 0.05)

    loop_clock(1.0)  # settle: sim time on, first jumps done
    before = len(statuses(received, name))
    loop_clock(2.0)
    during = len(statuses(received, name)) - before
    assert during >= 0.5 * 2.0 / PERIOD_S, f'{during} diagnostics in 2 s (period {PERIOD_S} s)'
    assert node.get_clock().now().nanoseconds < 101 * 10**9  # the node did run on sim time
