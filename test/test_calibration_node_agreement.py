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
The node's calibration check is ``lrda calibrate``'s: one window, one verdict, one correction.

The shared KITTI bag replayed over DDS into a node whose extrinsic is turned by 0.8 deg of
pitch and -0.6 deg of roll (camera frame): the node's monitor checks the window it gathered;
``lrda calibrate``'s function, handed the same frames of the bag and the same extrinsic, must
give the same verdict and the same correction to 0.01 deg. The test waits on the monitor's
events, never on time: the monitor's clock is the test's, moved on by one sampling interval
per frame offered, so a slow machine can neither check a part of the window (a window that
stopped filling for half a period) nor pass frames over.
"""

from __future__ import annotations

import time

from conftest import SHARED_DATA, spin_until
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from lrda_ros.calibration import SUSPECT  # noqa: E402, I100
from lrda_ros.calibration.bag import bag_window, calibrate_window, CalibrateOptions  # noqa: E402
from lrda_ros.calibration.score import rotation_matrix  # noqa: E402
from lrda_ros.geometry import RigidTransform  # noqa: E402
from lrda_ros.messages.rosbag import RosbagSource  # noqa: E402
from lrda_ros.ros.node import CompletionNode  # noqa: E402
from lrda_ros.ros.replay import LockstepReplay  # noqa: E402
from lrda_ros.settings import NodeSettings  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

BAG = SHARED_DATA / 'bags' / 'kitti_2011_09_26_10frames_mcap'
#: The error put into the extrinsic: a rotation vector in the camera frame (deg).
ERROR_DEG = np.array([0.8, 0.0, -0.6])
WINDOW = 8


class SteppedClock:
    """A monotonic clock that moves only when the test moves it."""

    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


@pytest.mark.slow
def test_the_node_and_lrda_calibrate_agree_on_one_window(ros_context, namespace,
                                                         tiny_model_dir, tmp_path):
    if not BAG.is_dir():
        pytest.skip(f'KITTI bag not found at {BAG}')
    with RosbagSource(BAG) as source:
        true = source.transform_tree().lookup('camera_color_left', 'velo_link')
    error = RigidTransform(rotation_matrix(np.radians(ERROR_DEG)), np.zeros(3))
    given = error.inverse() @ true  # corrected by the error itself
    values = {'model': str(tiny_model_dir), 'device': 'cpu', 'iterations': 2,
              'warm_iterations': 1, 'processing_size': 126,
              'lidar_to_camera.matrix': [float(v) for v in given.as_matrix().ravel()],
              'calibration_check.window': WINDOW, 'calibration_check.period': 1.0}
    node = CompletionNode(context=ros_context, namespace=namespace, parameter_overrides=[
        Parameter(name, value=value) for name, value in values.items()])
    monitor = node._calibration[node.cameras[0].name]
    clock = SteppedClock(time.monotonic())
    monitor._clock = clock
    # A little over one sampling interval per offer: every offer is due, while the window
    # keeps filling well inside half a period (the partial-window check's wait).
    step_s = 1.01 * monitor.settings.sample_interval_s
    assert 2 * step_s < monitor.settings.partial_after_s
    player = rclpy.create_node('player', namespace=namespace, context=ros_context)
    source = RosbagSource(BAG)
    replay = LockstepReplay(player, source, outputs=('depth',))
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    executor.add_node(player)
    try:
        assert replay.wait_for_subscribers(executor, timeout=30)
        for inputs in replay.frames():
            if monitor.checked.is_set():
                break
            held = len(monitor.window())
            # A frame joins once per period / window: sent again until it has (or a check ran).
            while len(monitor.window()) == held and not monitor.checked.is_set():
                monitor.frame_added.clear()
                clock.now += step_s
                for name in ('image', 'camera_info', 'points'):
                    replay.publishers[name].publish(inputs[name])
                spin_until(executor, monitor.frame_added.is_set, 60)
        assert spin_until(executor, monitor.checked.is_set, 120), monitor.status('').message
        node_check, frames = monitor.check, monitor.window()
    finally:
        executor.shutdown()
        node.destroy_node()
        player.destroy_node()
        source.close()
    assert node_check.frames == WINDOW == len(frames)
    # lrda calibrate's function on the same frames of the bag, with the same extrinsic.
    settings = NodeSettings.from_values(values)
    window = bag_window(BAG, extrinsic=given, pairing=settings.pairing)
    stamps = {frame.stamp_ns for frame in frames}
    same = window.__class__(window.path, tuple(f for f in window.raw if f.stamp_ns in stamps),
                            given, window.camera_frame, window.lidar_frame, window.pairing)
    assert len(same.raw) == WINDOW
    result = calibrate_window(same, CalibrateOptions(BAG, output=tmp_path,
                                                     check=settings.calibration.check))
    assert result.check.verdict == node_check.verdict == SUSPECT, result.message
    np.testing.assert_allclose(np.degrees(node_check.theta[:3]),
                               np.degrees(result.check.theta[:3]), atol=0.01)
    assert np.degrees(np.linalg.norm(node_check.theta[:3] - np.radians(ERROR_DEG))) < 0.3, \
        result.message
