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

A missing optional tool (rviz2 for ``rviz:=true``, rosbag2 for ``bag:=...``) or a missing
params file is one clear message before anything starts; when the completion node exits (a
start-up error, or Ctrl-C) the whole launch ends, so nothing is left running.

Examples::

    ros2 launch lrda_ros completion.launch.py image:=/camera/image_raw \
        camera_info:=/camera/camera_info points:=/lidar/points
    ros2 launch lrda_ros completion.launch.py bag:=/path/to/bag rviz:=true use_sim_time:=true \
        image:=/kitti/camera_color_left/image_raw \
        camera_info:=/kitti/camera_color_left/camera_info points:=/kitti/velo/pointcloud
"""

import os

from ament_index_python.packages import get_package_share_directory, PackageNotFoundError
from launch import LaunchDescription
from launch.actions import (
    DeclareLaunchArgument, ExecuteProcess, LogInfo, OpaqueFunction, SetEnvironmentVariable,
    Shutdown)
from launch.substitutions import EnvironmentVariable, LaunchConfiguration
from launch_ros.actions import Node


def _installed(package: str) -> bool:
    try:
        get_package_share_directory(package)
    except PackageNotFoundError:
        return False
    return True


def _flag(context, name: str) -> bool:
    return LaunchConfiguration(name).perform(context).lower() in ('true', '1', 'yes')


def _completion_node(context):
    """Build the node; model/device override the params file only when given."""
    overrides = {'use_sim_time': LaunchConfiguration('use_sim_time').perform(context) == 'true'}
    for name in ('model', 'device'):
        value = LaunchConfiguration(name).perform(context)
        if value:
            overrides[name] = value
    remappings = [(topic, LaunchConfiguration(topic).perform(context))
                  for topic in ('image', 'camera_info', 'points')]
    executable = 'completion_lifecycle_node' if _flag(context, 'lifecycle') else 'completion_node'
    return [Node(
        package='lrda_ros', executable=executable, name='completion_node',
        namespace=LaunchConfiguration('namespace'), output='screen', emulate_tty=True,
        parameters=[LaunchConfiguration('params_file'), overrides], remappings=remappings,
        arguments=['--ros-args', '--log-level', LaunchConfiguration('log_level')],
        # The node is the point of this launch: when it ends, everything ends with it.
        on_exit=Shutdown(reason='completion_node exited'))]


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


def _rviz(context):
    """Start rviz2 when asked; without rviz2 installed, say so and go on without it."""
    if not _flag(context, 'rviz'):
        return []
    if not _installed('rviz2'):
        return [LogInfo(msg='rviz:=true but rviz2 is not installed (package rviz2 not found): '
                            'continuing without it')]
    share = get_package_share_directory('lrda_ros')
    return [Node(package='rviz2', executable='rviz2', name='rviz2', output='screen',
                 arguments=['-d', os.path.join(share, 'config', 'completion.rviz'),
                            '-f', LaunchConfiguration('fixed_frame').perform(context)],
                 parameters=[{'use_sim_time': _flag(context, 'use_sim_time')}])]


def _start_problem(context) -> str | None:
    """Return why this launch cannot start as asked (one line), or None."""
    params_file = LaunchConfiguration('params_file').perform(context)
    if not os.path.isfile(params_file):
        return f'params_file {params_file!r} does not exist'
    bag = LaunchConfiguration('bag').perform(context)
    if bag and not _installed('ros2bag'):
        return (f'bag:={bag} needs `ros2 bag` (rosbag2), which is not installed: replay the bag '
                'with `ros2 run lrda_ros lrda play <bag>` in another terminal instead')
    if bag and not os.path.exists(bag):
        return f'bag {bag!r} does not exist'
    return None


def _launch_setup(context):
    """Check the arguments first, so a bad one stops the launch before any process starts."""
    problem = _start_problem(context)
    if problem:
        return [LogInfo(msg=f'[ERROR] {problem}'), Shutdown(reason=problem)]
    return _completion_node(context) + _bag_player(context) + _rviz(context)


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
        DeclareLaunchArgument('lifecycle', default_value='false',
                              description='Start completion_lifecycle_node (managed: loads the '
                                          'model on configure, subscribes on activate) instead '
                                          'of completion_node.'),
        DeclareLaunchArgument('log_level', default_value='info',
                              description='Log level of the node (debug shows per-frame '
                                          'timing).'),
    ]
    # Megabyte images and clouds need Fast DDS's large-data transports between processes;
    # keep the user's choice when one is set (other RMWs ignore the variable).
    transports = SetEnvironmentVariable(
        'FASTDDS_BUILTIN_TRANSPORTS',
        EnvironmentVariable('FASTDDS_BUILTIN_TRANSPORTS', default_value='LARGE_DATA'))
    return LaunchDescription(arguments + [
        transports,
        OpaqueFunction(function=_launch_setup),
    ])
