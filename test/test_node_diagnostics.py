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

from collections import Counter
import time
from types import SimpleNamespace

from conftest import spin_until
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from builtin_interfaces.msg import Time  # noqa: E402, I100
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from lrda_ros import world  # noqa: E402
from lrda_ros.eval.live import diagnostics_stats, FrameStats  # noqa: E402
from lrda_ros.messages.causes import cause_line, STAMP_BACKWARDS, SYNC_LOSS_REASONS  # noqa
from lrda_ros.messages.stamps import latency_or_reason  # noqa: E402
from lrda_ros.messages.sync_losses import SUPERSEDED, SyncLoss  # noqa: E402
from lrda_ros.ros.diagnostics import completion_status, NodeStatistics  # noqa: E402
from lrda_ros.ros.node import CompletionNode  # noqa: E402
from lrda_ros.ros.subscriptions import SynchronizedSubscriptions  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from test_node import node_parameters  # noqa: E402

PERIOD_S = 0.2
MS = 1_000_000


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


def test_one_name_per_cause_in_warnings_and_diagnostics_keys():
    stats = NodeStatistics(
        received=1, replaced=1, dropped=Counter(malformed=1),
        sync_losses=Counter(dict.fromkeys(SYNC_LOSS_REASONS, 1)),
        stamp_backwards=Counter({'/points': 1}))
    keys = {value.key for value in completion_status('/node', stats, 'active', {}).values}
    handle = SynchronizedSubscriptions('builtin', [], None, ['/image', '/points'])
    lines = [handle.loss_message(reason, 1, SyncLoss(reason, 0, 0, (0, 80 * MS)), 0.05, 10)
             for reason in SYNC_LOSS_REASONS]
    lines += [cause_line(SUPERSEDED, 1, 'replaced'), cause_line('malformed', 1, 'image'),
              cause_line(STAMP_BACKWARDS, 1, 'went back', '/points')]
    names = [line.split(', ')[0] for line in lines]
    assert names == ['unsynchronized (beyond_slop)', 'unsynchronized (no_partner)',
                     'unsynchronized (image_lost)', 'unsynchronized (time_jump)',
                     'dropped (superseded)',
                     'dropped (malformed)', 'stamp_backwards (/points)']
    assert set(names) <= keys, sorted(keys)


def test_the_message_tells_the_last_window_and_the_values_the_totals():
    stats = NodeStatistics(received=5, processed=5)
    assert completion_status('/n', stats, 'active', {}).message == 'completing depth'
    stats.sync_losses['beyond_slop'] += 3  # a transient offset
    status = completion_status('/n', stats, 'active', {})
    assert status.level == DiagnosticStatus.WARN and status.message.startswith('3 input')
    stats.close_window()
    status = completion_status('/n', stats, 'active', {})  # one window later
    assert (status.level, status.message) == (DiagnosticStatus.OK, 'completing depth')
    assert {v.key: v.value for v in status.values}['unsynchronized (beyond_slop)'] == '3'
    stats.stamp_backwards.update({'/image': 1, '/points': 1})  # a bag loop: OK, said once
    status = completion_status('/n', stats, 'active', {})
    assert status.level == DiagnosticStatus.OK and 'stamps went back on 2 inputs' in status.message
    stats.close_window()
    assert completion_status('/n', stats, 'active', {}).message == 'completing depth'


def test_stamps_went_back_names_the_inputs_and_never_more_than_there_are():
    stats = NodeStatistics(received=5, processed=5)
    topics = ('/image', '/camera_info', '/points')
    for _ in range(2):  # two loops of a short bag within one diagnostics period
        stats.stamp_backwards.update(dict.fromkeys(topics, 1))
    message = completion_status('/n', stats, 'active', {}).message
    assert 'stamps went back 6 times on 3 inputs (/camera_info, /image, /points)' in message
    stats.close_window()
    stats.stamp_backwards.update({'/points': 1})
    message = completion_status('/n', stats, 'active', {}).message
    assert 'stamps went back on 1 input (/points)' in message


def test_latency_from_another_clock_is_absent_with_its_reason():
    stats = NodeStatistics()
    values = {v.key: v.value for v in completion_status('/n', stats, 'active', {}).values}
    assert values['latency (s)'] == 'none yet: no frame completed'
    stats.record(SimpleNamespace(status=SimpleNamespace(value='optimized'), final_loss=0.1,
                                 iterations=3, num_points=9, stopped_at_deadline=False,
                                 scene_cut=False), 0.2, 0.3,
                 (None, 'none: the stamps are from another clock'), '1.0')
    values = {v.key: v.value for v in completion_status('/n', stats, 'active', {}).values}
    assert values['latency (s)'] == 'none: the stamps are from another clock'
    stats.record(SimpleNamespace(status=SimpleNamespace(value='optimized'), final_loss=0.1,
                                 iterations=3, num_points=9, stopped_at_deadline=False,
                                 scene_cut=False), 0.2, 0.3, (0.25, ''), '2.0')
    values = {v.key: v.value for v in completion_status('/n', stats, 'active', {}).values}
    assert values['latency (s)'] == '0.250'


def test_live_evaluation_reads_the_frames_numbers_as_the_engine_gave_them():
    stats = NodeStatistics()
    loss = float(np.float32(0.012345678))  # the engine's float32 loss, every digit
    stats.record(SimpleNamespace(status=SimpleNamespace(value='optimized'), final_loss=loss,
                                 iterations=7, num_points=9, stopped_at_deadline=False,
                                 scene_cut=False), 0.25, 0.3, (0.1, ''), '12.000000005',
                 peak_mb=41.5)
    values = {v.key: v.value for v in completion_status('/n', stats, 'active', {}).values}
    expected = FrameStats(7, 0.25, loss, 41.5, 'optimized')
    assert diagnostics_stats(values) == ('12.000000005', expected)
    status = completion_status('/n', NodeStatistics(), 'active', {})
    values = {v.key: v.value for v in status.values}
    assert values['last peak memory (MB)'] == 'nan'  # not measured: no frame yet
    assert values['last status'] == ''  # no frame yet


def _record_frame(stats: NodeStatistics, latency: tuple[float | None, str], stamp: str) -> None:
    stats.record(SimpleNamespace(status=SimpleNamespace(value='optimized'), final_loss=0.1,
                                 iterations=3, num_points=9, stopped_at_deadline=False,
                                 scene_cut=False), 0.2, 0.3, latency, stamp)


def test_a_replay_loop_tells_no_negative_latency_and_the_next_window_is_steady():
    # A 10 Hz bag of 1 s looped under its /clock: its last frame (stamp 100.9 s) is done
    # after the clock went back to 100.773 s, the bag's start plus what the new loop played.
    stats = NodeStatistics(received=10, processed=9)
    stats.stamp_backwards.update({'/image': 1, '/camera_info': 1, '/points': 1})
    _record_frame(stats, latency_or_reason(100_773 * MS, 100_900 * MS), '100.900000000')
    status = completion_status('/n', stats, 'active', {})
    values = {v.key: v.value for v in status.values}
    assert values['latency (s)'] == ('none: the stamp is 0.127 s ahead of the node clock '
                                     "(clocks not synchronized, or a replay's clock jumped "
                                     'back)')
    assert status.level == DiagnosticStatus.OK
    assert 'stamps went back on 3 inputs' in status.message
    stats.close_window()
    # The loop's first frame (stamp 100.0 s) done at 100.420 s: 0.420 s, steady again.
    _record_frame(stats, latency_or_reason(100_420 * MS, 100_000 * MS), '100.000000000')
    status = completion_status('/n', stats, 'active', {})
    values = {v.key: v.value for v in status.values}
    assert values['latency (s)'] == '0.420'
    assert (status.level, status.message) == (DiagnosticStatus.OK, 'completing depth')
