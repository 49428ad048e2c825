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
The node's executable as users start it: start-up errors and signals.

Every start-up failure is one FATAL line naming what to change, exit code 1, no traceback;
SIGINT and SIGTERM end the process with exit code 0, no traceback, even mid-frame.
"""

from __future__ import annotations

import os
from pathlib import Path
import signal
import subprocess
import sys
import time

from processes import Program, python
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

ROOT = Path(__file__).resolve().parents[1]
NODE = [sys.executable, '-m', 'lrda_ros.ros.node', '--ros-args']


def run_to_exit(arguments: list[str], timeout: float = 120,
                **environment: str) -> subprocess.CompletedProcess:
    """Run the node executable with ``arguments`` (and ``environment``) until it exits."""
    return subprocess.run(NODE + arguments, capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env={**os.environ, 'HF_HUB_OFFLINE': '1', **environment})


def assert_one_fatal_line(completed: subprocess.CompletedProcess, *fragments: str) -> None:
    output = completed.stdout + completed.stderr
    assert completed.returncode == 1, output
    fatal = [line for line in output.splitlines() if '[FATAL]' in line]
    assert len(fatal) == 1, output
    for fragment in fragments:
        assert fragment in fatal[0], output
    assert 'Traceback' not in output and 'Error:' not in output.replace(fatal[0], ''), output


def params_file(tmp_path: Path, body: str) -> str:
    path = tmp_path / 'params.yaml'
    path.write_text('/**:\n  ros__parameters:\n' + body)
    return str(path)


@pytest.mark.parametrize('device, says', [
    ('tpu', "unknown device 'tpu'"),
    ('cuda:7', "device 'cuda:7'"),
    ('cuda', 'CUDA is not available'),
])
def test_an_unusable_device_is_one_line_naming_the_parameter(device, says):
    import torch

    if device == 'cuda' and torch.cuda.is_available():
        pytest.skip('this machine has CUDA')
    assert_one_fatal_line(run_to_exit(['-p', 'model:=demo', '-p', f'device:={device}']),
                          "parameter 'device'", says)


def test_model_auto_without_a_cached_model_fails_closed_saying_what_to_set(tmp_path):
    # Offline, an empty Hugging Face cache: never the demonstration prior in its place, and
    # said before torch loads (the cache and the hub are asked without it).
    completed = subprocess.run(
        [sys.executable, '-c', _NODE_THEN_TORCH, '--ros-args', '-p', 'model:=auto', '-p',
         'device:=cpu'], capture_output=True, text=True, timeout=120, cwd=ROOT,
        env={**os.environ, 'HF_HUB_OFFLINE': '1', 'HF_HUB_CACHE': str(tmp_path),
             'HF_HOME': str(tmp_path)})
    assert_one_fatal_line(completed, "parameter 'model'", "model 'auto'",
                          'not in the local Hugging Face cache', "'demo'")
    assert 'DEMONSTRATION' not in completed.stdout + completed.stderr
    assert 'torch imported: False' in completed.stdout, completed.stdout + completed.stderr


def test_a_missing_model_is_one_line_without_a_second_traceback(tmp_path):
    completed = run_to_exit(['-p', f'model:={tmp_path / "depth_anything_v2_vits.pth"}'])
    assert_one_fatal_line(completed, "parameter 'model'", 'does not exist')
    assert '_slot' not in completed.stderr


def test_temporal_fusion_without_tf2_is_one_line_naming_the_parameter():
    try:
        import tf2_ros  # noqa: F401
        pytest.skip('tf2_ros is installed: temporal fusion can look poses up')
    except ImportError:
        pass
    assert_one_fatal_line(run_to_exit(['-p', 'model:=demo', '-p', 'temporal_fusion.weight:=0.5']),
                          "parameter 'temporal_fusion.weight'", 'tf2_ros is not installed')


@pytest.mark.parametrize('body, fragments', [
    ('    iterations: 40.0\n', ("'iterations'", 'expects an integer', 'write 40')),
    ('    learning_rate: yes\n', ("'learning_rate'", 'expects a double', 'True (bool)')),
    ('    processing_size: 13\n', ("'processing_size'", '1 .. 13 are invalid')),
    ('    iterations: 5000\n', ("'iterations'", '<= 1000')),
    ('    iterations: [1, 2\n', ('not valid YAML', 'line 4')),
])
def test_a_params_file_with_a_wrong_value_is_one_line_naming_it(tmp_path, body, fragments):
    assert_one_fatal_line(run_to_exit(['--params-file', params_file(tmp_path, body)]),
                          *fragments)


def test_a_missing_params_file_is_one_line(tmp_path):
    assert_one_fatal_line(run_to_exit(['--params-file', str(tmp_path / 'nope.yaml')]),
                          'nope.yaml', 'does not exist')


#: The node's executable, then whether it imported torch, printed at its exit.
_NODE_THEN_TORCH = (
    'import runpy, sys\n'
    'try:\n'
    '    runpy.run_module("lrda_ros.ros.node", run_name="__main__", alter_sys=True)\n'
    'finally:\n'
    '    print("torch imported:", "torch" in sys.modules)\n')


@pytest.mark.parametrize('arguments, fragment', [
    (['-p', 'model:=demo', '-p', 'device:=tpu'], "unknown device 'tpu'"),
    (['-p', 'iterations:=5000'], "'iterations'"),
    (['-p', 'model:=/nowhere/depth_anything_v2_vits.pth'], 'does not exist'),
])
def test_a_bad_parameter_is_refused_before_torch_loads(arguments, fragment):
    # torch takes seconds to import: a parameter the node cannot run with is refused first.
    completed = subprocess.run(
        [sys.executable, '-c', _NODE_THEN_TORCH, '--ros-args', *arguments],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
        env={**os.environ, 'HF_HUB_OFFLINE': '1'})
    assert_one_fatal_line(completed, fragment)
    assert 'torch imported: False' in completed.stdout, completed.stdout + completed.stderr


@pytest.fixture
def large_data_transport(monkeypatch):
    """Use Fast DDS's large-data transports in this process too (the node defaults to them)."""
    monkeypatch.setenv('FASTDDS_BUILTIN_TRANSPORTS', 'LARGE_DATA')


def node_program(arguments: list[str], module: str = 'lrda_ros.ros.node') -> Program:
    """Start a node executable in the background with ``--ros-args arguments``."""
    return python('-m', module, '--ros-args', *arguments)


def test_misspelt_names_warn_and_integer_matrices_are_accepted(tmp_path):
    body = ('    model: demo\n    device: cpu\n    iteratons: 4\n    procesing_size: 28\n'
            '    lidar_to_camera:\n'
            '      matrix: [0, -1, 0, 0, 0, 0, -1, 0, 1, 0, 0, 0, 0, 0, 0, 1]\n')
    node = node_program(['--params-file', params_file(tmp_path, body)])
    node.wait_for("model 'demo'")
    code, _ = node.stop(signal.SIGINT)
    assert code == 0, node.output
    assert "'iteratons' is not a parameter" in node.output
    assert "did you mean 'iterations'?" in node.output
    assert "did you mean 'processing_size'?" in node.output
    assert 'Traceback' not in node.output and 'FATAL' not in node.output


def test_integers_for_double_parameters_are_accepted_at_start_up(tmp_path):
    body = '    model: demo\n    device: cpu\n    learning_rate: 1\n'
    node = node_program(['--params-file', params_file(tmp_path, body), '-p', 'max_depth:=80',
                         '--log-level', 'completion_node:=debug'])
    node.wait_for('parameters: ')
    code, _ = node.stop(signal.SIGINT)
    assert code == 0, node.output
    assert 'learning_rate=1.0' in node.output and 'max_depth=80.0' in node.output, node.output


def test_the_console_starts_with_the_first_log_line_and_no_progress_bar():
    node = node_program(['-p', 'model:=demo', '-p', 'device:=cpu'])
    node.wait_for("model 'demo'")
    code, _ = node.stop(signal.SIGINT)
    assert code == 0, node.output
    # The first line is a log line of the node (a warning about tf2_ros where it is absent).
    assert node.lines[0].startswith(('[INFO]', '[WARN]')), node.output
    assert '[completion_node]' in node.lines[0] and node.lines[0].strip(), node.output
    assert 'Loading weights' not in node.output and '\r' not in node.output, node.output


def test_a_second_signal_while_the_process_ends_is_harmless_and_the_exit_prompt(namespace,
                                                                                ros_context):
    # A terminal's Ctrl-C reaches the node twice: directly, and forwarded by ros2 launch. The
    # managed node leaves its spin loop at once; the second one came while Python unloaded its
    # modules (seconds, with its default handlers back), which ended the process with -2.
    node = node_program(['-r', f'__ns:={namespace}', '-p', 'model:=demo', '-p', 'device:=cpu'],
                        module='lrda_ros.ros.lifecycle_node')
    observer = rclpy.create_node('observer', context=ros_context)
    try:
        deadline = time.monotonic() + 120
        while ('completion_node', namespace) not in observer.get_node_names_and_namespaces():
            assert time.monotonic() < deadline and node.process.poll() is None, node.output
            time.sleep(0.1)
        time.sleep(1.0)  # past the node's own start-up
        node.process.send_signal(signal.SIGINT)
        time.sleep(0.3)
        code, seconds = node.stop(signal.SIGINT)
    finally:
        observer.destroy_node()
    assert code == 0, node.output
    assert seconds < 2.0, f'{seconds:.1f} s to exit'  # ros2 launch escalates at 5 s


@pytest.mark.slow
@pytest.mark.parametrize('signum', [signal.SIGINT, signal.SIGTERM])
def test_a_signal_mid_frame_exits_zero_at_once(large_data_transport, namespace, ros_context,
                                               signum):
    # A frame of 1000 cold iterations at 448x336 takes minutes on a CPU: the signal must stop
    # it between steps, join the worker and exit 0 (not abort inside torch). The paper's fixed
    # schedule runs every step; the adaptive one may plateau and finish before the signal.
    from builtin_interfaces.msg import Time
    from lrda_ros import world
    from lrda_ros.ros.builders import (
        camera_model_to_camera_info, rgb_to_image_msg, xyz_to_pointcloud2)
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import CameraInfo, Image, PointCloud2
    from std_msgs.msg import Header

    from conftest import spin_until

    frame = world.make_sequence(world.SequenceConfig(
        'indoor', num_frames=1, width=448, height=336, seed=2,
        lidar=world.LidarConfig.indoor(beams=16)))[0]
    matrix = '[' + ','.join(repr(float(v)) for v in frame.T_cam_lidar.ravel()) + ']'
    node = node_program(['-r', f'__ns:={namespace}', '-p', 'model:=demo', '-p', 'device:=cpu',
                         '-p', 'iterations:=1000', '-p', 'schedule:=paper',
                         '-p', 'processing_size:=0',
                         '-p', f'lidar_to_camera.matrix:={matrix}',
                         '-p', 'projection.min_range:=0.1'])
    harness = rclpy.create_node('harness', namespace=namespace, context=ros_context)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(harness)
    sparse, depth = [], []
    harness.create_subscription(Image, 'sparse_depth', sparse.append, 10)
    harness.create_subscription(Image, 'depth', depth.append, 10)
    publishers = [harness.create_publisher(t, n, 10) for t, n in (
        (Image, 'image'), (CameraInfo, 'camera_info'), (PointCloud2, 'points'))]
    try:
        node.wait_for("model 'demo'")
        assert spin_until(executor, lambda: all(p.get_subscription_count() for p in publishers)
                          and harness.count_publishers(f'{namespace}/depth') > 0, 60)
        # The inputs are best effort (SensorDataQoS): send again until a set gets through.
        # sparse_depth is published just before the optimization starts.
        for stamp in range(5, 35):
            header = Header(frame_id='camera', stamp=Time(sec=stamp))
            publishers[0].publish(rgb_to_image_msg(frame.rgb, header))
            publishers[1].publish(camera_model_to_camera_info(frame.camera, header))
            publishers[2].publish(xyz_to_pointcloud2(
                frame.points_lidar[:, :3], Header(frame_id='lidar', stamp=header.stamp)))
            if spin_until(executor, lambda: sparse, 2.0):
                break
        assert sparse, node.output
        spin_until(executor, lambda: False, 2.0)  # well inside the optimization now
        code, seconds = node.stop(signum)
    finally:
        executor.shutdown()
        harness.destroy_node()
        if node.process.poll() is None:
            node.process.kill()
    assert code == 0, node.output
    assert not depth  # the frame was abandoned, not finished
    assert seconds < 2.0, f'took {seconds:.1f} s to exit'
    assert 'Traceback' not in node.output and 'terminate called' not in node.output
