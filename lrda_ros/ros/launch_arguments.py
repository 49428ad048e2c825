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
The arguments of ``launch/completion.launch.py``: one table for the launch file and its tests.

The launch file declares exactly these (:data:`LAUNCH_ARGUMENTS`, in this order); the tests
and doc/ros.md's table are checked against them. Like :mod:`.transport`, this module imports
nothing of ROS at module level, so it loads where the launch system is absent.
"""

from __future__ import annotations

from typing import NamedTuple


class LaunchArgument(NamedTuple):
    """One launch argument: its name, default (as launch reads it: text) and description."""

    name: str
    default: str
    description: str


#: Arguments whose default is a path inside the installed package share (the launch file
#: resolves it).
DEFAULTS_IN_SHARE = frozenset({'params_file'})

LAUNCH_ARGUMENTS: tuple[LaunchArgument, ...] = (
    LaunchArgument('params_file', 'config/completion.yaml',
                   'Parameter YAML of the completion node.'),
    LaunchArgument('model', '', 'Override the model parameter (hub id, directory, .pth, '
                   'da3-small and the other Depth Anything 3 names, demo or auto).'),
    LaunchArgument('device', '', 'Override the device parameter (auto, cpu, cuda).'),
    LaunchArgument('processing_size', '', 'Override the processing_size parameter (longer '
                   'side of the network input; lower is faster).'),
    LaunchArgument('time_budget', '', 'Override the time_budget parameter (seconds per frame, '
                   'anytime mode; 0 = off).'),
    LaunchArgument('cameras', '', 'Camera names, e.g. "front,left" or "[front, left]": one '
                   'node and one model for all, each camera on <camera>/image, '
                   '<camera>/camera_info, <camera>/points -> <camera>/depth, ... (empty: one '
                   'camera on image, camera_info, points).'),
    LaunchArgument('point_topics', '', 'Point cloud topics of each camera, one per LiDAR, e.g. '
                   '"points,points_rear" (relative names; merged into one scan per frame; '
                   "empty: the params file's, points by default)."),
    LaunchArgument('image', 'image', 'Input image topic.'),
    LaunchArgument('camera_info', 'camera_info', 'Input CameraInfo topic.'),
    LaunchArgument('points', 'points', 'Input PointCloud2 topic.'),
    LaunchArgument('namespace', '', 'Namespace of the node and its output topics.'),
    LaunchArgument('rviz', 'false', 'Start rviz2 with config/completion.rviz.'),
    LaunchArgument('fixed_frame', 'base_link', 'rviz2 fixed frame (needs tf to the camera '
                   'frame).'),
    LaunchArgument('bag', '', 'A rosbag2 to play alongside with `ros2 bag play` (path).'),
    LaunchArgument('bag_rate', '1.0', 'Playback rate of the bag.'),
    LaunchArgument('bag_loop', 'false', 'Loop the bag.'),
    LaunchArgument('use_sim_time', 'false', 'Use /clock (set it with bag replays); the bag is '
                   'then played with --clock.'),
    LaunchArgument('lifecycle', 'false', 'Start completion_lifecycle_node (managed: loads the '
                   'model on configure, subscribes on activate) instead of completion_node.'),
    LaunchArgument('autostart', 'true', 'With lifecycle:=true: configure and activate the node '
                   'at start; false leaves it unconfigured for a lifecycle manager.'),
    LaunchArgument('respawn', 'false', 'Restart the node whenever it exits (a robot that must '
                   'keep depth coming; with lifecycle:=true only with autostart:=false, as a '
                   'restarted managed node waits for its lifecycle manager). false: the '
                   "node's exit ends the launch, with exit code 1 when it failed, so a start-up "
                   'error or a defect is seen at once instead of hidden behind restarts.'),
    LaunchArgument('respawn_delay', '0.0', 'With respawn:=true: seconds to wait before each '
                   'restart.'),
    LaunchArgument('log_level', 'info', "Log level of the node's own logger (debug shows "
                   'per-frame timing); rcl and DDS stay at info.'),
)


def package_installed(package: str) -> bool:
    """Return whether ``package`` is an installed ROS package (in the ament index)."""
    from ament_index_python.packages import get_package_share_directory, PackageNotFoundError

    try:
        get_package_share_directory(package)
    except PackageNotFoundError:
        return False
    return True
