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
The node's background calibration check (lrda_ros/ros/calibration_monitor.py) on the plank.

Frames of the hand-made plank scene (test/calibration_scene.py) with an extrinsic turned by a
known yaw: the status must turn WARN naming the yaw, and with ``apply`` the later frames'
extrinsic must be the true one again. The tests wait on the monitor's event, never on time.
"""

from calibration_scene import CX, CY, FOCAL, HEIGHT, plank_image, plank_scan, R_CAM_LIDAR, WIDTH
from diagnostic_msgs.msg import DiagnosticStatus
from lrda_ros.calibration.score import rotation_matrix
from lrda_ros.geometry import CameraModel, LidarCloud, RigidTransform
from lrda_ros.pipeline import FrameInputs
from lrda_ros.settings.node_settings import CalibrationCheckSettings
import numpy as np
import pytest

monitor_module = pytest.importorskip('lrda_ros.ros.calibration_monitor',
                                     reason='diagnostic_msgs is not installed')

CAMERA = CameraModel(K=np.array([[FOCAL, 0, CX], [0, FOCAL, CY], [0, 0, 1.0]]),
                     D=np.zeros(5), width=WIDTH, height=HEIGHT)
TRUE = RigidTransform(R_CAM_LIDAR, np.zeros(3))
#: The given extrinsic is off by 1 degree of yaw: the correction is that rotation.
TURNED = RigidTransform(rotation_matrix(np.radians([0.0, 1.0, 0.0])), np.zeros(3)).inverse() \
    @ TRUE
PLANKS = ((-2.0, -0.5), (-0.8, 0.9), (0.3, 2.2))


def _frames():
    for left, right in PLANKS:
        yield FrameInputs(plank_image(left, right), CAMERA, plank_scan(left, right)[0], TURNED)


class _Clock:
    """A clock an hour further on at every reading: every frame and check is due."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 3600.0
        return self.now


def _run(monitor) -> None:
    """Offer each frame once the previous one is in the window; wait for the check."""
    for inputs in _frames():
        monitor.frame_added.clear()
        monitor.offer(inputs)
        assert monitor.frame_added.wait(60), 'the frame never joined the window'
    assert monitor.checked.wait(60), 'no check ran'


def test_a_turned_extrinsic_turns_the_status_to_warn_naming_the_yaw():
    messages = []
    monitor = monitor_module.CalibrationMonitor(
        CalibrationCheckSettings(window=3, period_s=1.0), messages.append, _Clock())
    try:
        waiting = monitor.status('/node')
        assert waiting.level == DiagnosticStatus.OK and 'waiting' in waiting.message
        _run(monitor)
        status = monitor.status('/node')
    finally:
        monitor.stop()
    assert status.name == '/node: calibration'
    assert status.level == DiagnosticStatus.WARN, status.message
    assert 'yaw' in status.message and 'extrinsic' in status.message
    values = {kv.key: kv.value for kv in status.values}
    assert set(values) == set(monitor_module.CALIBRATION_KEYS)
    assert values['verdict'] == 'suspect' and values['frames used'] == '3'
    yaw = float(values['correction rotation vector (deg, camera frame)'].split(',')[1])
    assert abs(yaw - 1.0) <= 0.15
    # The verdict is logged once, as it changed; no correction without calibration_check.apply.
    assert len(messages) == 1 and messages[0].startswith('calibration check: check the')
    assert values['correction applied'] == 'no'


def test_apply_corrects_later_frames_and_says_so():
    messages = []
    monitor = monitor_module.CalibrationMonitor(
        CalibrationCheckSettings(window=3, period_s=1.0, apply=True), messages.append,
        _Clock())
    cloud = LidarCloud(np.zeros((1, 3)), TURNED)
    try:
        assert monitor.corrected([cloud]) == [cloud]  # nothing applied before a check
        _run(monitor)
    finally:
        monitor.stop()
    assert len(messages) == 2 and 'applying the correction' in messages[1]
    corrected = monitor.corrected([cloud])[0].T_cam_lidar
    angle = np.degrees(np.arccos(np.clip((np.trace(corrected.rotation @ TRUE.rotation.T) - 1)
                                         / 2, -1, 1)))
    assert angle <= 0.15


def test_a_disabled_check_reports_off_and_changes_nothing():
    monitor = monitor_module.CalibrationMonitor(CalibrationCheckSettings(enabled=False),
                                                lambda message: None)
    monitor.offer(next(_frames()))
    status = monitor.status('/node')
    monitor.stop()
    assert status.level == DiagnosticStatus.OK and status.message.startswith('off')
    assert not monitor.frame_added.is_set()


def test_a_frame_the_check_cannot_read_is_skipped_and_the_thread_goes_on():
    monitor = monitor_module.CalibrationMonitor(
        CalibrationCheckSettings(window=3, period_s=1.0), lambda message: None, _Clock())
    try:
        left, right = PLANKS[0]
        wrong_size = FrameInputs(plank_image(left, right)[:, :100], CAMERA,
                                 plank_scan(left, right)[0], TURNED)
        monitor.offer(wrong_size)
        assert monitor.frame_added.wait(60)
        values = {kv.key: kv.value for kv in monitor.status('/node').values}
        assert values['frames in window'] == '0/3'
        _run(monitor)  # later frames still join, and the check runs
        assert monitor.status('/node').level == DiagnosticStatus.WARN
    finally:
        monitor.stop()


def test_an_image_the_window_holds_already_is_not_counted_again():
    # A bag replayed in a loop repeats its images: each counts once.
    monitor = monitor_module.CalibrationMonitor(
        CalibrationCheckSettings(window=3, period_s=1.0), lambda message: None, _Clock())
    try:
        left, right = PLANKS[0]
        stamped = FrameInputs(plank_image(left, right), CAMERA, plank_scan(left, right)[0],
                              TURNED, stamp_ns=1_000_000_000)
        for _ in range(3):
            monitor.frame_added.clear()
            monitor.offer(stamped)
            assert monitor.frame_added.wait(60)
        values = {kv.key: kv.value for kv in monitor.status('/node').values}
    finally:
        monitor.stop()
    assert values['frames in window'] == '1/3' and monitor.checks_run == 0


def _three_frame_monitor(log, **logs):
    """Return a monitor checking every 3 frames on the hour-a-reading clock."""
    return monitor_module.CalibrationMonitor(CalibrationCheckSettings(window=3, period_s=1.0),
                                             log, _Clock(), **logs)


def test_a_failed_check_is_an_error_and_the_next_window_is_checked(monkeypatch):
    # A defect in the check (or memory running out) must not end the thread in silence.
    real = monitor_module.check_window
    calls = []

    def fails_once(frames, settings):
        calls.append(len(frames))
        if len(calls) == 1:
            raise MemoryError('no memory for the outline')
        return real(frames, settings)

    monkeypatch.setattr(monitor_module, 'check_window', fails_once)
    warnings, errors = [], []
    monitor = _three_frame_monitor(warnings.append, log_error=errors.append)
    try:
        _run(monitor)
        failed = monitor.status('/node')
        assert failed.level == DiagnosticStatus.ERROR, failed.message
        assert 'MemoryError: no memory for the outline' in failed.message
        values = {kv.key: kv.value for kv in failed.values}
        assert values['checks failed'] == '1' and values['frames in window'] == '0/3'
        assert len(errors) == 1 and 'going on with the next window' in errors[0]
        assert 'Traceback' in errors[0]
        monitor.checked.clear()
        _run(monitor)  # the thread is alive: the next window fills and is checked
        checked = monitor.status('/node')
    finally:
        monitor.stop()
    assert calls == [3, 3]
    assert checked.level == DiagnosticStatus.WARN and 'yaw' in checked.message
    assert len(warnings) == 1 and len(errors) == 1


def test_the_verdict_is_logged_once_per_change():
    warnings, infos = [], []
    monitor = _three_frame_monitor(warnings.append, log_info=infos.append)
    try:
        _run(monitor)
        monitor.checked.clear()
        _run(monitor)  # the same frames again (unstamped): the same verdict
    finally:
        monitor.stop()
    assert monitor.checks_run >= 2
    assert len(warnings) == 1 and 'yaw' in warnings[0] and infos == []


@pytest.mark.slow
def test_the_node_shows_a_failing_check_as_error_and_goes_on(ros_context, namespace,
                                                             tiny_model_dir, monkeypatch):
    # Over DDS: the node's monitor thread survives a check that raises, /diagnostics says so.
    pytest.importorskip('rclpy', reason='rclpy is not installed')
    from conftest import spin_until
    from lrda_ros import world
    from lrda_ros.ros.node import CompletionNode
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from test_node import Harness, node_parameters

    def fails(frames, settings):
        raise MemoryError('no memory for the outline')

    monkeypatch.setattr(monitor_module, 'check_window', fails)
    frame = world.make_sequence(world.SequenceConfig(
        'indoor', num_frames=1, width=112, height=84, seed=3,
        lidar=world.LidarConfig.indoor(beams=16)))[0]
    node = CompletionNode(context=ros_context, namespace=namespace, parameter_overrides=[
        *node_parameters(tiny_model_dir, frame), Parameter('calibration_check.window', value=3),
        Parameter('calibration_check.period', value=1.0)])
    harness = Harness(ros_context, namespace)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    executor.add_node(harness.node)
    name = f'{namespace}/completion_node: calibration'
    stamp = [1_000_000_000]

    def sensor() -> None:
        stamp[0] += 100_000_000
        harness.publish(frame, stamp[0])

    def failed_checks() -> int:
        ours = [s for array in harness.diagnostics for s in array.status if s.name == name]
        if not ours or ours[-1].level != DiagnosticStatus.ERROR:
            return 0
        assert 'MemoryError: no memory for the outline' in ours[-1].message
        return int({kv.key: kv.value for kv in ours[-1].values}['checks failed'])

    try:
        assert spin_until(executor, lambda: harness.pub_points.get_subscription_count() > 0, 10)
        timer = harness.node.create_timer(0.2, sensor)
        assert spin_until(executor, lambda: failed_checks() >= 1, 60)
        processed = node.stats.processed
        # The next window fills and is checked (and fails again): the thread is alive, and
        # frames go on being completed.
        assert spin_until(executor, lambda: failed_checks() >= 2, 60)
        assert spin_until(executor, lambda: node.stats.processed > processed, 30)
        timer.cancel()
    finally:
        executor.shutdown()
        node.destroy_node()
        harness.node.destroy_node()
