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
Launch the depth completion node, optionally with rviz2 and a rosbag2 replay.

Examples::

    ros2 launch lrda_ros completion.launch.py image:=/camera/image_raw \
        camera_info:=/camera/camera_info points:=/lidar/points
    ros2 launch lrda_ros completion.launch.py bag:=/path/to/bag rviz:=true use_sim_time:=true \
        image:=/kitti/camera_color_left/image_raw \
        camera_info:=/kitti/camera_color_left/camera_info points:=/kitti/velo/pointcloud
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import (
    DeclareLaunchArgument, ExecuteProcess, OpaqueFunction, SetEnvironmentVariable)
from launch.conditions import IfCondition
from launch.substitutions import EnvironmentVariable, LaunchConfiguration
from launch_ros.actions import Node


def _completion_node(context):
    """Build the node; model/device override the params file only when given."""
    overrides = {'use_sim_time': LaunchConfiguration('use_sim_time').perform(context) == 'true'}
    for name in ('model', 'device'):
        value = LaunchConfiguration(name).perform(context)
        if value:
            overrides[name] = value
    remappings = [(topic, LaunchConfiguration(topic).perform(context))
                  for topic in ('image', 'camera_info', 'points')]
    return [Node(
        package='lrda_ros', executable='completion_node', name='completion_node',
        namespace=LaunchConfiguration('namespace'), output='screen', emulate_tty=True,
        parameters=[LaunchConfiguration('params_file'), overrides], remappings=remappings,
        arguments=['--ros-args', '--log-level', LaunchConfiguration('log_level')])]


def _bag_player(context):
    """Play the bag given in ``bag`` (with --clock when use_sim_time is set)."""
    bag = LaunchConfiguration('bag').perform(context)
    if not bag:
        return []
    command = ['ros2', 'bag', 'play', bag, '--rate', LaunchConfiguration('bag_rate').perform(
        context)]
    if LaunchConfiguration('use_sim_time').perform(context) == 'true':
        command.append('--clock')
    if LaunchConfiguration('bag_loop').perform(context) == 'true':
        command.append('--loop')
    return [ExecuteProcess(cmd=command, output='screen')]


def generate_launch_description():
    """Declare the arguments and the node, rviz2 and bag player."""
    share = get_package_share_directory('lrda_ros')
    arguments = [
        DeclareLaunchArgument('params_file',
                              default_value=os.path.join(share, 'config', 'completion.yaml'),
                              description='Parameter YAML of the completion node.'),
        DeclareLaunchArgument('model', default_value='',
                              description='Override the model parameter (hub id, directory, '
                                          '.pth, demo or auto).'),
        DeclareLaunchArgument('device', default_value='',
                              description='Override the device parameter (auto, cpu, cuda).'),
        DeclareLaunchArgument('image', default_value='image', description='Input image topic.'),
        DeclareLaunchArgument('camera_info', default_value='camera_info',
                              description='Input CameraInfo topic.'),
        DeclareLaunchArgument('points', default_value='points',
                              description='Input PointCloud2 topic.'),
        DeclareLaunchArgument('namespace', default_value='',
                              description='Namespace of the node and its output topics.'),
        DeclareLaunchArgument('rviz', default_value='false',
                              description='Start rviz2 with config/completion.rviz.'),
        DeclareLaunchArgument('fixed_frame', default_value='base_link',
                              description='rviz2 fixed frame (needs tf to the camera frame).'),
        DeclareLaunchArgument('bag', default_value='',
                              description='A rosbag2 to play alongside (path).'),
        DeclareLaunchArgument('bag_rate', default_value='1.0',
                              description='Playback rate of the bag.'),
        DeclareLaunchArgument('bag_loop', default_value='false',
                              description='Loop the bag.'),
        DeclareLaunchArgument('use_sim_time', default_value='false',
                              description='Use /clock (set it with bag replays).'),
        DeclareLaunchArgument('log_level', default_value='info',
                              description='Log level of the node (debug shows per-frame '
                                          'timing).'),
    ]
    rviz = Node(package='rviz2', executable='rviz2', name='rviz2', output='screen',
                arguments=['-d', os.path.join(share, 'config', 'completion.rviz'),
                           '-f', LaunchConfiguration('fixed_frame')],
                parameters=[{'use_sim_time': LaunchConfiguration('use_sim_time')}],
                condition=IfCondition(LaunchConfiguration('rviz')))
    # Megabyte images and clouds need Fast DDS's large-data transports between processes;
    # keep the user's choice when one is set (other RMWs ignore the variable).
    transports = SetEnvironmentVariable(
        'FASTDDS_BUILTIN_TRANSPORTS',
        EnvironmentVariable('FASTDDS_BUILTIN_TRANSPORTS', default_value='LARGE_DATA'))
    return LaunchDescription(arguments + [
        transports,
        OpaqueFunction(function=_completion_node),
        OpaqueFunction(function=_bag_player),
        rviz,
    ])
