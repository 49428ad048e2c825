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
Counted losses over real rclpy/DDS: sync losses per reason, per-kind warnings, time jumps.

Each loss shows on /diagnostics and in a log line with its reason, on both synchronizers:
the built-in one, and message_filters (the ROS 2 install's; skipped where it is absent).
"""

from __future__ import annotations

from conftest import spin_until
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from diagnostic_msgs.msg import DiagnosticStatus  # noqa: E402, I100
from lrda_ros.ros import subscriptions  # noqa: E402
from lrda_ros.ros.builders import (  # noqa: E402
    camera_model_to_camera_info, rgb_to_image_msg, xyz_to_pointcloud2)
from test_node import CAMERA_FRAME, frames, header, LIDAR_FRAME, system  # noqa: E402, F401

MS = 1_000_000


class LoggedWarnings:
    """Record the node's warnings (and still log them)."""

    def __init__(self, node) -> None:
        self.lines: list[str] = []
        logger = node.get_logger()
        original = logger.warning

        def warning(message, *args, **kwargs):
            self.lines.append(str(message))
            return original(message, *args, **kwargs)

        logger.warning = warning

    def matching(self, *words: str) -> list[str]:
        return [line for line in self.lines if all(word in line for word in words)]


def latest_status(node, harness):
    mine = node.get_fully_qualified_name()  # /diagnostics is shared
    ours = [s for d in harness.diagnostics for s in d.status if s.name.startswith(mine)]
    return ours[-1] if ours else None


def diagnostic_values(node, harness) -> dict[str, str]:
    status = latest_status(node, harness)
    return {kv.key: kv.value for kv in status.values} if status else {}


@pytest.fixture(params=['builtin', 'message_filters'], autouse=True)
def synchronizer(request, monkeypatch) -> str:
    """Run each test on both synchronizers: the built-in one, and message_filters if installed."""
    if request.param == 'builtin':
        monkeypatch.setattr(subscriptions, 'message_filters_available', lambda: False)
    elif not subscriptions.message_filters_available():
        pytest.skip('message_filters is not installed (it comes with a ROS 2 install)')
    return request.param


def test_a_cloud_55_ms_before_the_camera_is_beyond_slop(system, frames,  # noqa: F811
                                                        synchronizer):
    # A DDAD-like rig at the default sync.slop (0.05 s): every frame is lost, each message
    # counted, and the log names the slop that pairs them.
    node, harness, executor = system(**{'sync.queue_size': 2})
    warnings = LoggedWarnings(node)
    for k in range(5):
        harness.publish(frames[k % len(frames)], 20_000_000_000 + k * 500 * MS,
                        cloud_delay_ns=-55 * MS)
        spin_until(executor, lambda: False, 0.1)

    def counted() -> bool:
        return int(diagnostic_values(node, harness).get('unsynchronized (beyond_slop)', 0)) > 0

    assert spin_until(executor, counted, 20), diagnostic_values(node, harness)
    values = diagnostic_values(node, harness)
    assert int(values['unsynchronized (no_partner)']) == 0
    assert node.stats.received == 0 and node.stats.sync_losses['beyond_slop'] >= 3
    lines = warnings.matching('beyond_slop', 'sync.slop 0.07')
    assert lines, warnings.lines
    assert '-0.055 s' in lines[0] or '+0.055 s' in lines[0], lines[0]
    assert values['synchronization'] == synchronizer and synchronizer in lines[0]
    # Advice the launch file can follow: a params_file line, never a -p it does not take.
    advice = warnings.matching('sync.slop')
    assert all('params_file:=' in line and '-p ' not in line for line in advice), advice
    assert any('"sync.slop: 0.07"' in line for line in advice), advice


def test_a_late_cloud_is_counted_beyond_slop_on_either_synchronizer(system, frames,  # noqa: F811
                                                                    synchronizer):
    # An image and its camera_info at t, the cloud at t + 0.5 s (sync.slop 0.05 s), then good
    # frames: the three stale messages can never pair, though no queue ever overflows.
    node, harness, executor = system()
    warnings = LoggedWarnings(node)
    frame, base = frames[0], 40_000_000_000
    camera_header = header(CAMERA_FRAME, base)
    harness.pub_image.publish(rgb_to_image_msg(frame.rgb, camera_header))
    harness.pub_info.publish(camera_model_to_camera_info(frame.camera, camera_header))
    harness.pub_points.publish(xyz_to_pointcloud2(
        frame.points_lidar[:, :3], header(LIDAR_FRAME, base + 500 * MS)))
    spin_until(executor, lambda: False, 0.2)
    for k in range(1, 4):
        harness.publish(frames[k % len(frames)], base + k * 1000 * MS)
        assert spin_until(executor, lambda: node.stats.processed == k, 60), node.stats

    def counted() -> bool:
        values = diagnostic_values(node, harness)
        return int(values.get('unsynchronized messages', 0)) == 3

    assert spin_until(executor, counted, 10), diagnostic_values(node, harness)
    values = diagnostic_values(node, harness)
    assert values['synchronization'] == synchronizer
    # The cloud had its image and camera_info 0.5 s away: beyond the slop, not partnerless.
    assert int(values['unsynchronized (beyond_slop)']) >= 1
    lines = warnings.matching('unsynchronized (beyond_slop', 'sync.slop 0.6')
    assert lines and synchronizer in lines[0], warnings.lines
    assert node.stats.processed == 3 and node.stats.received == 3


def test_two_kinds_of_malformed_input_in_one_window_both_warn(system, frames):  # noqa: F811
    node, harness, executor = system()
    warnings = LoggedWarnings(node)
    frame, base = frames[0], 30_000_000_000

    image = rgb_to_image_msg(frame.rgb, header(CAMERA_FRAME, base))
    image.data = bytes(image.data)[:-1]  # a byte short of height x step
    harness.publish(frame, base, image=image)
    assert spin_until(executor, lambda: node.stats.dropped['malformed'] == 1, 30)

    camera_header = header(CAMERA_FRAME, base + 10**8)
    cloud = xyz_to_pointcloud2(frame.points_lidar[:, :3],
                               header(LIDAR_FRAME, base + 10**8 + 3 * MS))
    cloud.row_step += 4  # the data no longer fills the rows it claims
    harness.pub_image.publish(rgb_to_image_msg(frame.rgb, camera_header))
    harness.pub_info.publish(camera_model_to_camera_info(frame.camera, camera_header))
    harness.pub_points.publish(cloud)
    assert spin_until(executor, lambda: node.stats.dropped['malformed'] == 2, 30)

    assert len(warnings.matching('dropped (malformed)', 'so far: image')) == 1, warnings.lines
    assert len(warnings.matching('dropped (malformed)', 'so far: points')) == 1, warnings.lines


def test_a_stamp_going_back_is_counted_warned_and_restarts_cold(system, frames):  # noqa: F811
    node, harness, executor = system(warm_start=True)
    warnings = LoggedWarnings(node)
    resets = []
    completer = node.pipeline.completer
    original_reset = completer.reset

    def reset(stream=None) -> None:
        resets.append(node.stats.processed)
        original_reset(stream)

    completer.reset = reset
    for k, stamp_s in enumerate((10, 15, 9)):
        harness.publish(frames[k], stamp_s * 10**9)
        assert spin_until(executor, lambda: node.stats.processed == k + 1, 60), node.stats
    # Counted as processed once published: wait for the depth itself to arrive.
    assert spin_until(executor, lambda: [
        m.header.stamp.sec for m in harness.received['depth']][-1:] == [9], 60)
    # The frame at 9 s started cold: the warm start of the 15 s frame was reset before it.
    assert resets == [2]
    assert node.stats.stamp_backwards['image'] == 1
    assert warnings.matching('stamp_backwards (image)', '15.000 s, then 9.000 s')

    assert spin_until(executor, lambda: diagnostic_values(node, harness).get(
        'stamp_backwards (image)') == '1', 10)
    values = diagnostic_values(node, harness)
    assert values['stamp_backwards (points)'] == '1'


def test_a_recording_replayed_twice_is_a_time_jump_with_no_slop_advice(  # noqa: F811
        system, frames):  # noqa: F811
    node, harness, executor = system(**{'sync.slop': 0.05})
    warnings = LoggedWarnings(node)
    # Played twice in a row, as lrda play --loop does: the stamps jump back 1 s.
    for k, stamp_ns in enumerate([10 * 10**9 + j * 500 * MS for _ in range(2) for j in range(3)]):
        harness.publish(frames[k % 3], stamp_ns)
        # One set at a time: the worker takes each, none superseded.
        assert spin_until(executor, lambda: node.stats.processed == k + 1, 60), node.stats
    # Synchronization resumed on the next set: all six sets paired, none lost to the jump
    # (read once a status after the sixth has been published: the reports run on a timer).
    assert spin_until(executor, lambda: diagnostic_values(node, harness).get(
        'frames received') == '6', 10), diagnostic_values(node, harness)
    values = diagnostic_values(node, harness)
    assert values['stamp_backwards (image)'] == '1'
    assert values['unsynchronized (beyond_slop)'] == '0'
    assert values['stamp_backwards (points)'] == '1'
    assert not warnings.matching('sync.slop:='), warnings.lines
    assert not warnings.matching('beyond_slop'), warnings.lines
    assert len(warnings.matching('stamp_backwards (')) == 1, warnings.lines
    # The jump was told once; within a reporting window the message is back to steady.
    assert spin_until(executor, lambda: latest_status(node, harness).message
                      == 'completing depth', 10), latest_status(node, harness)
    assert latest_status(node, harness).level == DiagnosticStatus.OK


def test_100_backward_stamps_log_a_few_lines_and_count_every_one(
        system, synchronizer):  # noqa: F811
    if synchronizer != 'builtin':
        pytest.skip('feeds the built-in synchronizer directly')
    node, harness, executor = system()
    warnings = LoggedWarnings(node)
    sync = node.subscriptions_handle.synchronizer
    # 101 images, each stamped before the one before: 100 time jumps on one input.
    for k in range(101):
        sync.add(0, type('Stamped', (), {'header': header('camera', (200 - k) * 10**9)})())
    assert spin_until(executor, lambda: diagnostic_values(node, harness).get(
        'stamp_backwards (image)') == '100', 10)
    lines = warnings.matching('stamp_backwards (image)')
    assert 1 <= len(lines) <= 3, warnings.lines
    assert lines[0].startswith('stamp_backwards (image), 1 so far')


def test_a_camera_info_whose_image_was_lost_has_a_cause_of_its_own(system, frames,  # noqa: F811
                                                                   synchronizer):
    # Frame 2's image never arrives (lost in transport): its camera_info and cloud are lost
    # for that, not beyond the slop, and no slop is advised.
    node, harness, executor = system()
    warnings = LoggedWarnings(node)
    base = 60_000_000_000
    for k in range(1, 5):
        frame, stamp = frames[k % len(frames)], base + k * 500 * MS
        if k == 2:
            camera_header = header(CAMERA_FRAME, stamp)
            harness.pub_info.publish(camera_model_to_camera_info(frame.camera, camera_header))
            harness.pub_points.publish(xyz_to_pointcloud2(frame.points_lidar[:, :3],
                                                          header(LIDAR_FRAME, stamp)))
            continue
        harness.publish(frame, stamp)
        assert spin_until(executor, lambda: node.stats.received == k - (k > 2), 60), node.stats

    def counted() -> bool:
        return int(diagnostic_values(node, harness).get('unsynchronized (image_lost)', 0)) >= 2

    assert spin_until(executor, counted, 20), diagnostic_values(node, harness)
    values = diagnostic_values(node, harness)
    assert values['unsynchronized (beyond_slop)'] == '0', values
    assert values['unsynchronized (no_partner)'] == '0', values
    lines = warnings.matching('unsynchronized (image_lost)', 'its image never reached')
    assert lines and synchronizer in lines[0], warnings.lines
    assert not warnings.matching('beyond_slop'), warnings.lines
