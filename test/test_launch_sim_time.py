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
launch_testing: completion.launch.py on sim time, fed by a looping ``lrda play --clock``.

The KITTI bag (10 frames, 0.9 s) loops, so /clock jumps back every loop; the node must run on
the bag's clock (use_sim_time:=True), stamp /depth with the bag's stamps, keep publishing
/diagnostics across the loops, and end with everything else at SIGINT, exit code 0. Skipped
without launch_testing (a ROS 2 install) or the shared data.
"""

import os
from pathlib import Path
import tempfile
import time
import unittest

import pytest

launch_testing = pytest.importorskip('launch_testing',
                                     reason='launch_testing is not installed (ROS 2 install)')
pytest.importorskip('launch_ros', reason='launch_ros is not installed (ROS 2 install)')
# As conftest.SHARED_DATA: `launch_test` runs this file without conftest.
SHARED_DATA = Path(os.environ.get('LRDA_SHARED_DATA',
                                  Path(__file__).resolve().parents[2] / 'shared' / 'data'))
BAG = SHARED_DATA / 'bags' / 'kitti_2011_09_26_10frames_mcap'
if not BAG.is_dir():
    pytest.skip(f'KITTI bag not found at {BAG} (set LRDA_SHARED_DATA)', allow_module_level=True)

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402, I100
from launch import LaunchDescription  # noqa: E402
from launch.actions import ExecuteProcess, IncludeLaunchDescription  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from launch_ros.substitutions import ExecutableInPackage  # noqa: E402
import launch_testing.actions  # noqa: E402
from lrda_ros.messages.rosbag import cdr_header_stamp, RosbagSource  # noqa: E402
from rcl_interfaces.srv import GetParameters  # noqa: E402
import rclpy  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402
import yaml  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TOPICS = {'image': '/kitti/camera_color_left/image_raw',
          'camera_info': '/kitti/camera_color_left/camera_info',
          'points': '/kitti/velo/pointcloud'}
STATUS_NAME = '/completion_node: depth completion'


def _params_file() -> str:
    """Write the shipped parameters with a small, fast configuration; return the path."""
    params = yaml.safe_load((ROOT / 'config' / 'completion.yaml').read_text())
    values = params['/**']['ros__parameters']
    values.update({'iterations': 2, 'warm_iterations': 1, 'processing_size': 140})
    values['publish'].update({'points_dense': False, 'depth_colored': False})
    handle = tempfile.NamedTemporaryFile('w', suffix='.yaml', delete=False)
    yaml.safe_dump(params, handle)
    handle.close()
    return handle.name


def _bag_image_stamps() -> set[int]:
    with RosbagSource(BAG) as source:
        topic = source.topics.image
        return {cdr_header_stamp(raw) for _, _, _, raw in source.raw_messages([topic])}


@pytest.mark.launch_test
def generate_test_description():
    """Launch the node on sim time (demo prior, CPU) and a looping replay with /clock."""
    include = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(str(ROOT / 'launch' / 'completion.launch.py')),
        launch_arguments={'use_sim_time': 'True', 'model': 'demo', 'device': 'cpu',
                          'params_file': _params_file(), **TOPICS}.items())
    player = ExecuteProcess(
        cmd=[ExecutableInPackage('lrda', 'lrda_ros'), 'play', str(BAG), '--clock', '--loop',
             '--wait', '120'],
        output='screen', additional_env={'HF_HUB_OFFLINE': '1'})
    return LaunchDescription([include, player, launch_testing.actions.ReadyToTest()])


class TestSimTimeWithALoopingReplay(unittest.TestCase):
    """Watch /depth, /diagnostics and /clock while the bag loops."""

    @classmethod
    def setUpClass(cls):
        cls.context = rclpy.Context()
        rclpy.init(context=cls.context)
        cls.node = rclpy.create_node('sim_time_observer', context=cls.context)
        cls.executor = SingleThreadedExecutor(context=cls.context)
        cls.executor.add_node(cls.node)
        cls.depth: list[Image] = []
        cls.statuses: list[tuple[float, object]] = []
        cls.clock: list[tuple[float, int]] = []
        cls.node.create_subscription(Image, '/depth', cls.depth.append, 10)
        cls.node.create_subscription(DiagnosticArray, '/diagnostics', cls._on_diagnostics, 50)
        cls.node.create_subscription(Clock, '/clock', cls._on_clock, 100)

    @classmethod
    def tearDownClass(cls):
        cls.executor.shutdown()
        cls.node.destroy_node()
        rclpy.try_shutdown(context=cls.context)

    @classmethod
    def _on_diagnostics(cls, message):
        cls.statuses.extend((time.monotonic(), status) for status in message.status
                            if status.name == STATUS_NAME)

    @classmethod
    def _on_clock(cls, message):
        cls.clock.append((time.monotonic(),
                          message.clock.sec * 1_000_000_000 + message.clock.nanosec))

    def spin_until(self, predicate, timeout):
        deadline = time.monotonic() + timeout
        while not predicate() and time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.1)
        return predicate()

    def test_depth_carries_the_bag_stamps(self):
        self.assertTrue(self.spin_until(lambda: len(self.depth) >= 2, 240),
                        'fewer than 2 depth images within 240 s')
        stamps = _bag_image_stamps()
        for depth in self.depth:
            stamp = depth.header.stamp.sec * 1_000_000_000 + depth.header.stamp.nanosec
            self.assertIn(stamp, stamps)
            self.assertEqual(depth.header.frame_id, 'camera_color_left')

    def test_diagnostics_keep_arriving_across_loops(self):
        self.assertTrue(self.spin_until(lambda: self.statuses, 240), 'no /diagnostics')
        start = time.monotonic()
        self.spin_until(lambda: False, 6.0)  # several 0.9 s loops of the bag
        arrivals = [start] + [t for t, _ in self.statuses if t >= start] + [time.monotonic()]
        window = [stamp for arrival, stamp in self.clock if arrival >= start]
        jumps_back = sum(1 for earlier, later in zip(window, window[1:]) if later < earlier)
        self.assertGreaterEqual(jumps_back, 2, 'the bag did not loop (no /clock jump back)')
        gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
        self.assertLess(max(gaps), 2.5, f'/diagnostics silent for {max(gaps):.1f} s')

    def test_the_node_uses_sim_time(self):
        client = self.node.create_client(GetParameters, '/completion_node/get_parameters')
        self.assertTrue(client.wait_for_service(timeout_sec=120))
        future = client.call_async(GetParameters.Request(names=['use_sim_time']))
        self.assertTrue(self.spin_until(future.done, 30))
        self.assertTrue(future.result().values[0].bool_value)


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    """SIGINT at the end of the test ends every process, with exit code 0."""

    def test_every_process_exited_cleanly_and_none_survives(self, proc_info):
        for info in proc_info:
            self.assertEqual(info.returncode, 0, info.process_name)
            with self.assertRaises(ProcessLookupError, msg=f'{info.process_name} survives'):
                os.kill(info.pid, 0)
        names = ' '.join(info.process_name for info in proc_info)
        self.assertIn('completion_node', names)
        self.assertIn('lrda', names)
