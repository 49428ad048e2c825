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
Launch the depth completion node, optionally managed, with rviz2 and a rosbag2 replay.

Boolean arguments (use_sim_time, lifecycle, autostart, rviz, bag_loop, respawn) are read by
launch's own conditions: true or false, 1 or 0, in any case. An argument that cannot work (a
missing params file, a word that is not a boolean, bag:= without rosbag2) stops the launch with
one error line before any process starts; a missing rviz2 is a warning. By default the node's
exit ends the launch: with exit code 0 after Ctrl-C, with exit code 1 when the node could not
start (or, with lifecycle:=true autostart:=true, could not be configured), so scripts and
operators see the failure instead of a launch that runs on without depth. respawn:=true restarts
the node instead (after respawn_delay seconds); a managed node restarts unconfigured, so it is
refused with autostart:=true (its lifecycle manager brings it up).

Only substitutions, conditions and actions that Humble's launch and launch_ros have are used
(no NotEqualsSubstitution: a condition with a predicate instead).

Examples::

    ros2 launch lrda_ros completion.launch.py image:=/camera/image_raw \
        camera_info:=/camera/camera_info points:=/lidar/points
    ros2 launch lrda_ros completion.launch.py bag:=/path/to/bag rviz:=true use_sim_time:=true \
        image:=/kitti/camera_color_left/image_raw \
        camera_info:=/kitti/camera_color_left/camera_info points:=/kitti/velo/pointcloud
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import Condition, LaunchDescription, Substitution
from launch.actions import (
    DeclareLaunchArgument, EmitEvent, ExecuteProcess, GroupAction, OpaqueFunction,
    RegisterEventHandler, SetEnvironmentVariable, Shutdown)
from launch.conditions import IfCondition, InvalidConditionExpressionError, UnlessCondition
from launch.events import matches_action
import launch.logging
from launch.substitutions import LaunchConfiguration
from launch.utilities import perform_substitutions
from launch_ros.actions import LifecycleNode, Node, SetParameter, SetParametersFromFile
from launch_ros.event_handlers import OnStateTransition
from launch_ros.events.lifecycle import ChangeState
from launch_ros.utilities import prefix_namespace
from lifecycle_msgs.msg import Transition
from lrda_ros.ros.launch_arguments import (
    DEFAULTS_IN_SHARE, LAUNCH_ARGUMENTS, package_installed)
from lrda_ros.ros.transport import large_sample_environment

NODE_NAME = 'completion_node'
#: Node parameters that a launch argument of the same name overrides when given.
OVERRIDDEN_PARAMETERS = ('model', 'device', 'processing_size', 'time_budget')
#: The numeric ones, checked here: rcl silently drops a ``-p`` value whose type differs from
#: the params file's (processing_size:=abc or :=266.0 would leave the file's value in force).
NUMERIC_ARGUMENTS = {'processing_size': (int, 'an integer'), 'time_budget': (float, 'a number')}
BOOLEAN_ARGUMENTS = ('use_sim_time', 'lifecycle', 'autostart', 'rviz', 'bag_loop', 'respawn')


class LaunchArgumentError(ValueError):
    """A launch argument that cannot work as given."""


class NodeStartError(RuntimeError):
    """The completion node could not start (or, with autostart, be configured)."""


class NodeLoggerName(Substitution):
    """
    The rcl logger name of a node: its namespace and name joined by dots.

    ``--log-level <logger>:=<level>`` then sets the level of this node's logger alone, not
    of rcl, rmw and every other library in the process.
    """

    def __init__(self, namespace, name: str) -> None:
        super().__init__()
        self._namespace = namespace
        self._name = name

    def describe(self) -> str:
        """Return a description of this substitution."""
        return f'NodeLoggerName({self._name})'

    def perform(self, context) -> str:
        """Return e.g. ``robot.completion_node`` for namespace ``/robot``."""
        namespace = prefix_namespace(context.launch_configurations.get('ros_namespace'),
                                     perform_substitutions(context, [self._namespace]))
        return '.'.join([part for part in (namespace or '').split('/') if part] + [self._name])


def _is_true(context, name: str) -> bool:
    return IfCondition(LaunchConfiguration(name)).evaluate(context)


def _check_arguments(context):
    """Raise LaunchArgumentError for an argument that cannot work, before any process starts."""
    for name in BOOLEAN_ARGUMENTS:
        try:
            _is_true(context, name)
        except InvalidConditionExpressionError:
            value = LaunchConfiguration(name).perform(context)
            raise LaunchArgumentError(
                f'{name}:={value!r} is not a boolean: use true or false, or 1 or 0 (any case)'
            ) from None
    for name, (kind, what) in NUMERIC_ARGUMENTS.items():
        value = LaunchConfiguration(name).perform(context)
        try:
            if value:
                kind(value)
        except ValueError:
            raise LaunchArgumentError(f'{name}:={value!r} is not {what}') from None
    try:
        delay = float(LaunchConfiguration('respawn_delay').perform(context))
    except ValueError:
        delay = -1.0
    if not delay >= 0.0:
        value = LaunchConfiguration('respawn_delay').perform(context)
        raise LaunchArgumentError(f'respawn_delay:={value!r} is not a number of seconds >= 0')
    if all(_is_true(context, name) for name in ('respawn', 'lifecycle', 'autostart')):
        # A crashed node's services stay in the ROS graph for seconds: a configure request sent
        # when its replacement starts can reach neither, and launch waits for it forever.
        raise LaunchArgumentError(
            'respawn:=true with lifecycle:=true autostart:=true: a restarted managed node cannot '
            'be configured again reliably by launch; use respawn with the plain node, or '
            'autostart:=false and a lifecycle manager that brings the restarted node up')
    params_file = LaunchConfiguration('params_file').perform(context)
    if not os.path.isfile(params_file):
        raise LaunchArgumentError(f'params_file {params_file!r} does not exist')
    bag = LaunchConfiguration('bag').perform(context)
    if bag and not package_installed('ros2bag'):
        raise LaunchArgumentError(
            f'bag:={bag} needs `ros2 bag` (rosbag2), which is not installed: replay the bag with '
            '`ros2 run lrda_ros lrda play <bag>` in another terminal instead')
    if bag and not os.path.exists(bag):
        raise LaunchArgumentError(f'bag {bag!r} does not exist')
    if _is_true(context, 'rviz') and not package_installed('rviz2'):
        launch.logging.get_logger('launch.user').warning(
            'rviz:=true but rviz2 is not installed (package rviz2 not found): continuing '
            'without it')
    return []


def _end_with_node(event, context):
    """End the launch with the node (unless respawned); a failed node fails it (exit code 1)."""
    if context.is_shutdown or _is_true(context, 'respawn'):
        return None  # the launch is ending already (Ctrl-C, another failure), or restarts it
    if event.returncode == 0:
        return [Shutdown(reason=f'{NODE_NAME} exited')]
    # launch logs an exception raised here as an error, shuts everything down and makes
    # `ros2 launch` return 1: its Shutdown action alone would return 0.
    raise NodeStartError(f'{NODE_NAME} exited with code {event.returncode}; its log above '
                         'says why')


def _configure_failed(context):
    raise NodeStartError(f'{NODE_NAME} could not be configured (autostart); its log above '
                         'says why')


def _bag_player(context):
    """Play ``bag`` with ``ros2 bag play`` (with --clock under sim time, --loop if asked)."""
    command = ['ros2', 'bag', 'play', LaunchConfiguration('bag').perform(context),
               '--rate', LaunchConfiguration('bag_rate').perform(context)]
    if _is_true(context, 'use_sim_time'):
        command.append('--clock')
    if _is_true(context, 'bag_loop'):
        command.append('--loop')
    return [ExecuteProcess(cmd=command, output='screen')]


def _use_sim_time():
    """Set use_sim_time on every node in scope, as launch's conditions read the argument."""
    flag = LaunchConfiguration('use_sim_time')
    return [SetParameter(name='use_sim_time', value=True, condition=IfCondition(flag)),
            SetParameter(name='use_sim_time', value=False, condition=UnlessCondition(flag))]


def _given(name: str) -> Condition:
    """Return a condition true when argument ``name`` is not empty (Humble has no NotEquals)."""
    return Condition(predicate=lambda context: LaunchConfiguration(name).perform(context) != '')


def camera_list(text: str) -> list[str]:
    """Return the names of a list argument (cameras, point_topics): 'a,b', '[a, b]'."""
    return [name for name in text.strip().strip('[]').replace(',', ' ').split() if name]


def _cameras(context):
    """Set ``cameras`` and ``point_topics`` from their arguments (unset: the file's)."""
    actions = []
    for name in ('cameras', 'point_topics'):
        names = camera_list(LaunchConfiguration(name).perform(context))
        # As YAML text: launch_ros passes a list value on as a Python tuple's text, which rcl
        # reads as one string; '[a, b]' it reads as a string array.
        actions += [SetParameter(name=name, value=f'[{", ".join(names)}]')] if names else []
    return actions


def _completion_nodes(context):
    """
    Return the node (plain, or managed with autostart) with its parameters in one scope.

    Built when the arguments are known: launch takes ``respawn_delay`` as a number only, on
    every distro, not as a substitution.
    """
    namespace = LaunchConfiguration('namespace')
    lifecycle = LaunchConfiguration('lifecycle')
    options = {
        'respawn': _is_true(context, 'respawn'),
        'respawn_delay': float(LaunchConfiguration('respawn_delay').perform(context)),
        'package': 'lrda_ros', 'name': NODE_NAME, 'namespace': namespace, 'output': 'screen',
        'emulate_tty': True,
        'remappings': [(topic, LaunchConfiguration(topic))
                       for topic in ('image', 'camera_info', 'points')],
        'ros_arguments': ['--log-level', [NodeLoggerName(namespace, NODE_NAME), ':=',
                                          LaunchConfiguration('log_level')]],
        'on_exit': _end_with_node,
    }
    plain = Node(executable='completion_node', condition=UnlessCondition(lifecycle), **options)
    managed = LifecycleNode(executable='completion_lifecycle_node', **options)

    def change_state(transition_id: int) -> EmitEvent:
        return EmitEvent(event=ChangeState(lifecycle_node_matcher=matches_action(managed),
                                           transition_id=transition_id))

    autostart = GroupAction(scoped=False, condition=IfCondition(LaunchConfiguration('autostart')),
                            actions=[
        RegisterEventHandler(OnStateTransition(
            target_lifecycle_node=managed, start_state='configuring', goal_state='inactive',
            entities=[change_state(Transition.TRANSITION_ACTIVATE)])),
        RegisterEventHandler(OnStateTransition(
            target_lifecycle_node=managed, start_state='configuring', goal_state='unconfigured',
            entities=[OpaqueFunction(function=_configure_failed)])),
        change_state(Transition.TRANSITION_CONFIGURE),
    ])
    # Global parameters apply in order: the file first, so the overridden parameters (when
    # given) and use_sim_time override it.
    return [GroupAction([
        SetParametersFromFile(LaunchConfiguration('params_file')),
        *_use_sim_time(),
        *[SetParameter(name=name, value=LaunchConfiguration(name), condition=_given(name))
          for name in OVERRIDDEN_PARAMETERS],
        OpaqueFunction(function=_cameras),
        plain,
        GroupAction(scoped=False, condition=IfCondition(lifecycle), actions=[managed, autostart]),
    ])]


def _rviz(share: str):
    if not package_installed('rviz2'):
        return []  # _check_arguments warns when rviz:=true
    # A scope of its own: rviz2 takes use_sim_time, not the completion node's parameters.
    return [GroupAction(condition=IfCondition(LaunchConfiguration('rviz')), actions=[
        *_use_sim_time(),
        Node(package='rviz2', executable='rviz2', name='rviz2', output='screen',
             arguments=['-d', os.path.join(share, 'config', 'completion.rviz'),
                        '-f', LaunchConfiguration('fixed_frame')]),
    ])]


def generate_launch_description():
    """Declare the arguments (LAUNCH_ARGUMENTS), then the node, rviz2 and the bag player."""
    share = get_package_share_directory('lrda_ros')
    arguments = [DeclareLaunchArgument(
        argument.name, description=argument.description,
        default_value=os.path.join(share, argument.default)
        if argument.name in DEFAULTS_IN_SHARE else argument.default)
        for argument in LAUNCH_ARGUMENTS]
    # Megabyte images and clouds need Fast DDS's large-data transports and a large shared-memory
    # segment between processes (the bag player and rviz2 too); the user's choices are kept.
    transports = [SetEnvironmentVariable(name, value)
                  for name, value in large_sample_environment(os.environ).items()]
    bag_player = OpaqueFunction(function=_bag_player, condition=_given('bag'))
    return LaunchDescription(arguments + [
        *transports,
        # First: an exception here ends the launch before anything below starts.
        OpaqueFunction(function=_check_arguments),
        OpaqueFunction(function=_completion_nodes),
        *_rviz(share),
        bag_player,
    ])
