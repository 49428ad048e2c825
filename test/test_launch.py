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
launch_testing test of completion.launch.py (needs a ROS 2 install; skipped without one).

Starts the launch file with the demo prior and a parameter file that sets the extrinsic,
publishes synthetic camera + LiDAR frames, and expects dense depth back on /depth.
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

from ament_index_python.packages import get_package_share_directory  # noqa: E402, I100
from builtin_interfaces.msg import Time  # noqa: E402
from launch import LaunchDescription  # noqa: E402
from launch.actions import IncludeLaunchDescription  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402
from lrda_ros import world  # noqa: E402
from lrda_ros.ros.builders import (  # noqa: E402
    camera_model_to_camera_info, rgb_to_image_msg, xyz_to_pointcloud2)
import rclpy  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image, PointCloud2  # noqa: E402
from std_msgs.msg import Header  # noqa: E402
import yaml  # noqa: E402

FRAMES = world.make_sequence(world.SequenceConfig(
    'indoor', num_frames=2, width=160, height=120, seed=1,
    lidar=world.LidarConfig.indoor(beams=16)))


def _launch_file() -> str:
    try:
        share = get_package_share_directory('lrda_ros')
        return os.path.join(share, 'launch', 'completion.launch.py')
    except Exception:  # running from the source tree
        return str(Path(__file__).resolve().parents[1] / 'launch' / 'completion.launch.py')


def _params_file() -> str:
    source = Path(_launch_file()).parents[1] / 'config' / 'completion.yaml'
    params = yaml.safe_load(source.read_text())
    values = params['/**']['ros__parameters']
    values.update({'iterations': 5, 'warm_iterations': 2, 'processing_size': 0})
    values['lidar_to_camera']['matrix'] = [float(v) for v in FRAMES[0].T_cam_lidar.ravel()]
    handle = tempfile.NamedTemporaryFile('w', suffix='.yaml', delete=False)
    yaml.safe_dump(params, handle)
    handle.close()
    return handle.name


@pytest.mark.launch_test
def generate_test_description():
    """Launch completion.launch.py with the demo prior on the CPU."""
    include = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(_launch_file()),
        launch_arguments={'model': 'demo', 'device': 'cpu', 'params_file': _params_file(),
                          'rviz': 'false'}.items())
    return LaunchDescription([include, launch_testing.actions.ReadyToTest()])


class TestDepthIsPublished(unittest.TestCase):
    """Feed synthetic frames and wait for /depth."""

    @classmethod
    def setUpClass(cls):
        rclpy.init()
        cls.node = rclpy.create_node('launch_test_harness')

    @classmethod
    def tearDownClass(cls):
        cls.node.destroy_node()
        rclpy.shutdown()

    def test_depth_arrives_with_the_image_header(self):
        received = []
        self.node.create_subscription(Image, '/depth', received.append, 10)
        images = self.node.create_publisher(Image, '/image', 10)
        infos = self.node.create_publisher(CameraInfo, '/camera_info', 10)
        clouds = self.node.create_publisher(PointCloud2, '/points', 10)
        frame = FRAMES[0]
        camera = frame.camera
        deadline = time.monotonic() + 120
        stamp = 1
        while not received and time.monotonic() < deadline:
            header = Header(frame_id='camera_optical', stamp=Time(sec=stamp))
            images.publish(rgb_to_image_msg(frame.rgb, header))
            infos.publish(camera_model_to_camera_info(camera, header))
            clouds.publish(xyz_to_pointcloud2(frame.points_lidar[:, :3],
                                              Header(frame_id='lidar', stamp=header.stamp)))
            stamp += 1
            end = time.monotonic() + 1.0
            while time.monotonic() < end and not received:
                rclpy.spin_once(self.node, timeout_sec=0.1)
        self.assertTrue(received, 'no depth image within 120 s')
        depth = received[0]
        self.assertEqual(depth.encoding, '32FC1')
        self.assertEqual((depth.height, depth.width), (120, 160))
        self.assertEqual(depth.header.frame_id, 'camera_optical')


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    """The node exits with code 0 when the launch ends (SIGINT), not with -2 or -15."""

    def test_exit_codes(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info, allowable_exit_codes=[0])
