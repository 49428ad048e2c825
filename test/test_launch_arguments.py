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
completion.launch.py as users run it: ``ros2 launch`` in its own process group.

Needs ros2cli's ``ros2 launch`` and lrda_ros built and sourced (its executables and config);
skipped otherwise. The launch file is the one of this source tree. Ctrl-C is SIGINT to the
whole process group, as a terminal sends it.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
import shutil
from types import SimpleNamespace
import uuid

from conftest import SHARED_DATA
from lrda_ros.ros.launch_arguments import package_installed
from processes import Program
import pytest

ROOT = Path(__file__).resolve().parents[1]
LAUNCH_FILE = ROOT / 'launch' / 'completion.launch.py'
BAG = SHARED_DATA / 'bags' / 'kitti_2011_09_26_10frames_mcap'
MISSING_MODEL = 'model:=/nonexistent/depth_anything_v2_vits.pth'


def _unavailable() -> str | None:
    if shutil.which('ros2') is None or importlib.util.find_spec('ros2launch') is None:
        return 'ros2 launch (ros2cli, ros2launch) is not installed'
    if importlib.util.find_spec('ament_index_python') is None:
        return 'ament_index_python is not installed'
    if not package_installed('lrda_ros'):
        return 'lrda_ros is not built and sourced (colcon build; source install/setup.bash)'
    return None


pytestmark = pytest.mark.skipif(_unavailable() is not None, reason=str(_unavailable()))


def launch_program(arguments: list[str]) -> Program:
    """Start ``ros2 launch`` of the completion launch file in a session of its own."""
    return Program(['ros2', 'launch', str(LAUNCH_FILE), *arguments])


def survivors(marker: str) -> list[str]:
    """Return the command lines of running processes that contain ``marker``."""
    found = []
    for entry in Path('/proc').iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / 'cmdline').read_bytes().replace(b'\0', b' ').decode()
        except OSError:
            continue  # exited meanwhile
        if marker in command:
            found.append(command)
    return found


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith('[ERROR] [launch]')]


@pytest.fixture
def unique_namespace() -> str:
    """Return a namespace that marks this test's processes."""
    return '/t' + uuid.uuid4().hex[:10]


@pytest.mark.parametrize('argument, says', [
    ('params_file:=/nonexistent/params.yaml',
     "params_file '/nonexistent/params.yaml' does not exist"),
    ('use_sim_time:=yes', "use_sim_time:='yes' is not a boolean: use true or false, or 1 or 0"),
    ('lifecycle:=on', "lifecycle:='on' is not a boolean"),
    # rcl would drop these -p values silently (their type differs from the params file's).
    ('processing_size:=abc', "processing_size:='abc' is not an integer"),
    ('processing_size:=266.0', "processing_size:='266.0' is not an integer"),
    ('time_budget:=fast', "time_budget:='fast' is not a number"),
    ('respawn:=maybe', "respawn:='maybe' is not a boolean"),
    ('respawn_delay:=-1', "respawn_delay:='-1' is not a number of seconds >= 0"),
    ('respawn_delay:=soon', "respawn_delay:='soon' is not a number of seconds >= 0"),
    # A restarted managed node starts unconfigured: launch cannot bring it up reliably.
    ('respawn:=true lifecycle:=true', 'a restarted managed node cannot be configured again'),
])
def test_an_unusable_argument_stops_the_launch_before_any_process_starts(argument, says):
    launch = launch_program(argument.split())
    assert launch.run_out(60) == 1, launch.output
    errors = error_lines(launch.output)
    assert len(errors) == 1 and says in errors[0], launch.output
    assert 'process started' not in launch.output
    assert '[launch.user]: [ERROR]' not in launch.output


def test_a_bag_without_rosbag2_stops_the_launch_before_any_process_starts():
    if package_installed('ros2bag'):
        pytest.skip('ros2bag is installed: bag:= plays the bag')
    launch = launch_program([f'bag:={BAG}'])
    assert launch.run_out(60) == 1, launch.output
    errors = error_lines(launch.output)
    assert len(errors) == 1 and 'needs `ros2 bag`' in errors[0], launch.output
    assert 'lrda play' in errors[0] and 'process started' not in launch.output


@pytest.mark.slow
@pytest.mark.parametrize('arguments, node_says, launch_says', [
    ([MISSING_MODEL], "parameter 'model'", 'completion_node exited with code 1'),
    ([MISSING_MODEL, 'lifecycle:=true'], "parameter 'model'",
     'completion_node could not be configured'),
    (['params_file:={params_file}'], "parameter 'iterations'",
     'completion_node exited with code 1'),
])
def test_a_node_that_cannot_start_fails_the_launch(tmp_path, unique_namespace, arguments,
                                                   node_says, launch_says):
    params_file = tmp_path / 'params.yaml'
    params_file.write_text('/**:\n  ros__parameters:\n    iterations: 5000\n')
    launch = launch_program([f'namespace:={unique_namespace}'] + [
        argument.format(params_file=params_file) for argument in arguments])
    assert launch.run_out(180) == 1, launch.output
    assert node_says in launch.output
    assert any(launch_says in line for line in error_lines(launch.output)), launch.output
    assert not survivors(f'__ns:={unique_namespace}')


@pytest.mark.slow
def test_respawn_restarts_a_node_that_exits_and_ctrl_c_still_ends_everything(
        unique_namespace):
    launch = launch_program([f'namespace:={unique_namespace}', MISSING_MODEL, 'respawn:=true',
                             'respawn_delay:=0.5'])
    try:
        # The node fails to start, and is started again: the launch does not end with it.
        launch.wait_for(r"parameter 'model'(.|\n)*parameter 'model'", 240, regex=True)
        assert not error_lines(launch.output), launch.output
        assert launch.interrupt() == 0, launch.output
    finally:
        launch.end()
    assert not survivors(f'__ns:={unique_namespace}')


def _call(executor, node, service_type, name: str, request, timeout: float = 30):
    client = node.create_client(service_type, name)
    assert client.wait_for_service(timeout_sec=timeout), f'no service {name}'
    future = client.call_async(request)
    executor.spin_until_future_complete(future, timeout_sec=timeout)
    assert future.done(), f'{name} did not answer'
    return future.result()


@pytest.fixture(scope='module')
def managed_launch():
    """
    Launch the managed node with autostart, use_sim_time:=1, log_level:=debug and rviz:=true.

    With processing_size and time_budget overrides and two point topics too. Ask the running
    node for its state and those parameters, then Ctrl-C; return what was seen.
    """
    import rclpy
    from lifecycle_msgs.srv import GetState
    from rclpy.executors import SingleThreadedExecutor
    from rcl_interfaces.srv import GetParameters

    namespace = '/t' + uuid.uuid4().hex[:10]
    launch = launch_program(['model:=demo', 'device:=cpu', 'lifecycle:=true', 'use_sim_time:=1',
                             'log_level:=debug', 'rviz:=true', f'namespace:={namespace}',
                             'processing_size:=266', 'time_budget:=2',
                             'point_topics:=points,points_rear'])
    seen = SimpleNamespace(namespace=namespace)
    try:
        launch.wait_for('active; synchronization', 180)
        context = rclpy.Context()
        rclpy.init(context=context)
        node = rclpy.create_node('launch_observer', context=context)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        try:
            target = f'{namespace}/completion_node'
            seen.state = _call(executor, node, GetState, f'{target}/get_state',
                               GetState.Request()).current_state.label
            values = _call(executor, node, GetParameters, f'{target}/get_parameters',
                           GetParameters.Request(names=['use_sim_time', 'processing_size',
                                                        'time_budget', 'point_topics'])).values
            seen.use_sim_time = values[0].bool_value
            seen.processing_size = values[1].integer_value
            seen.time_budget = values[2].double_value
            seen.point_topics = list(values[3].string_array_value)
        finally:
            executor.shutdown()
            node.destroy_node()
            rclpy.try_shutdown(context=context)
        seen.code = launch.interrupt()
    finally:
        launch.end()
    seen.output = launch.output
    seen.survivors = survivors(f'__ns:={namespace}')
    return seen


@pytest.mark.slow
def test_autostart_configures_and_activates_the_managed_node(managed_launch):
    assert managed_launch.state == 'active', managed_launch.output


@pytest.mark.slow
def test_use_sim_time_1_gives_the_node_sim_time(managed_launch):
    assert managed_launch.use_sim_time is True


@pytest.mark.slow
def test_processing_size_and_time_budget_override_the_params_file(managed_launch):
    # time_budget:=2 is an integer for a double parameter: the node takes it as 2.0.
    assert (managed_launch.processing_size, managed_launch.time_budget) == (266, 2.0)


@pytest.mark.slow
def test_point_topics_gives_each_camera_a_topic_per_lidar(managed_launch):
    assert managed_launch.point_topics == ['points', 'points_rear']


@pytest.mark.slow
def test_log_level_debug_is_the_level_of_the_node_logger_alone(managed_launch):
    logger = managed_launch.namespace.strip('/').replace('/', '.') + '.completion_node'
    debug = [line for line in managed_launch.output.splitlines() if '[DEBUG]' in line]
    assert any(f'[{logger}]: parameters: ' in line for line in debug), managed_launch.output
    assert all(f'[{logger}]' in line for line in debug), '\n'.join(
        line for line in debug if f'[{logger}]' not in line)[:2000]


@pytest.mark.slow
def test_a_missing_rviz2_is_one_warning_and_the_launch_goes_on(managed_launch):
    if package_installed('rviz2'):
        pytest.skip('rviz2 is installed')
    warnings = [line for line in managed_launch.output.splitlines()
                if line.startswith('[WARNING]') and 'rviz2 is not installed' in line]
    assert len(warnings) == 1, managed_launch.output


@pytest.mark.slow
def test_ctrl_c_ends_the_launch_and_the_node_with_exit_code_0(managed_launch):
    output = managed_launch.output
    assert managed_launch.code == 0, output
    assert 'process has finished cleanly' in output and 'process has died' not in output
    assert 'Traceback' not in output and '[ERROR]' not in output, output
    assert not managed_launch.survivors
