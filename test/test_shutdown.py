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
SIGINT and SIGTERM end ``lrda play``, ``lrda eval``, ``lrda speed`` and ``evaluator_node`` cleanly.

Each runs in a process (and session) of its own and gets the signal while it works; it must
exit with code 0 within 2 s, print no traceback or error line, and leave no process behind
(``lrda speed`` measures in spawned interpreters: those end with it, even after a SIGKILL).
The node executables' own checks (mid-frame, a second signal) are in test_node_startup.py, the
launch file's in test_launch.py and test_launch_sim_time.py.
"""

from __future__ import annotations

import json
from pathlib import Path
import shutil
import signal
import subprocess
import sys
import time

from conftest import spin_until
import numpy as np
from processes import Program, python
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from builtin_interfaces.msg import Time  # noqa: E402, I100
from lrda_ros.ros.builders import depth_to_image_msg, rgb_to_image_msg  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image, PointCloud2  # noqa: E402
from std_msgs.msg import Header  # noqa: E402
from test_play_delivery import START_NS, write_large_image_bag  # noqa: E402

#: Seconds from the signal to the end of the process.
DEADLINE_S = 2.0
SIGNALS = [signal.SIGINT, signal.SIGTERM]


def session_members(session: int) -> list[int]:
    """
    Return the live processes of ``session`` (a program started in a session of its own).

    Zombies (ended, not yet reaped by init) do not count: they hold no CPU and no memory.
    """
    members = []
    for entry in Path('/proc').glob('[0-9]*'):
        try:
            fields = (entry / 'stat').read_text().rsplit(')', 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == session and fields[0] != 'Z':
            members.append(int(entry.name))
    return members


def wait_until(condition, timeout: float) -> bool:
    """Poll ``condition`` every 0.05 s for ``timeout`` seconds; return its last value."""
    end = time.monotonic() + timeout
    while not condition() and time.monotonic() < end:
        time.sleep(0.05)
    return bool(condition())


def assert_clean_stop(program: Program, signum: int) -> None:
    """Send ``signum``: exit code 0 within the deadline, no error line, nothing left behind."""
    start = time.monotonic()
    program.process.send_signal(signum)
    code = program.finish(timeout=60)
    seconds = time.monotonic() - start
    output = program.output
    assert code == 0, output
    assert seconds < DEADLINE_S, f'{seconds:.2f} s to exit:\n{output}'
    for bad in ('Traceback', 'Failed to publish', 'Error:', 'context is invalid', '[ERROR]'):
        assert bad not in output, output
    # Helpers that end when the program's end closes their pipe (multiprocessing's resource
    # tracker) get a moment to see it.
    assert wait_until(lambda: session_members(program.process.pid) == [], 1.0), output


@pytest.mark.slow
@pytest.mark.parametrize('signum', SIGNALS)
def test_lrda_play_stops_between_messages(tmp_path, ros_context, namespace, signum):
    # Three frames at a tenth of the pace: the signal comes once the first image is out, while
    # play paces towards the next (it used to publish on a context already shut down).
    bag = write_large_image_bag(tmp_path / 'bag', namespace)
    listener = rclpy.create_node('listener', context=ros_context)
    images = []
    listener.create_subscription(Image, f'{namespace}/cam/image_raw', images.append, 10)
    for msg_type, topic in ((CameraInfo, 'cam/camera_info'), (PointCloud2, 'lidar/points')):
        listener.create_subscription(msg_type, f'{namespace}/{topic}', lambda _: None, 10)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(listener)
    program = python('-m', 'lrda_ros.cli', 'play', str(bag), '--wait', '30', '--rate', '0.1')
    try:
        assert spin_until(executor, lambda: images, 120), program.output
        assert_clean_stop(program, signum)
    finally:
        program.end()
        executor.shutdown()
        listener.destroy_node()
    assert 'stopped after publishing' in program.output, program.output


@pytest.mark.slow
def test_lrda_hold_rate_stops_its_replay_process_and_prints_what_it_measured(tmp_path):
    # The node runs in lrda's process, the replay in a second one (which leaves SIGINT to the
    # first): SIGINT ends both, with the summary line, long before --seconds.
    from lrda_ros import world
    from test_bag_inputs import write_scene_bag

    config = world.SequenceConfig('indoor', num_frames=3, width=160, height=120, seed=4,
                                  lidar=world.LidarConfig.indoor(beams=16))
    bag = write_scene_bag(tmp_path / 'bag', world.make_sequence(config))
    program = python('-m', 'lrda_ros.cli', 'hold-rate', str(bag), '--seconds', '600',
                     '--budget', '0.05', '--processing-size', '56')
    try:
        program.wait_for("model 'demo'", 120)
        start = time.monotonic()
        program.process.send_signal(signal.SIGINT)
        code = program.finish(timeout=60)
        seconds = time.monotonic() - start
    finally:
        program.end()
    assert code == 0, program.output
    assert seconds < 15.0, f'{seconds:.1f} s to exit:\n{program.output}'  # HOLD_RATE_GRACE_S
    assert ' Hz out (' in program.output and 'Traceback' not in program.output, program.output
    assert wait_until(lambda: session_members(program.process.pid) == [], 1.0), program.output


@pytest.mark.slow
@pytest.mark.parametrize('signum', SIGNALS)
def test_lrda_eval_stops_in_a_long_frame_and_keeps_what_it_finished(tmp_path, signum):
    pytest.importorskip('cv2', reason='opencv-python-headless is not installed')
    from lrda_ros import world
    from test_bag_inputs import write_scene_bag

    config = world.SequenceConfig('indoor', num_frames=3, width=448, height=336, seed=3,
                                  lidar=world.LidarConfig.indoor(beams=16))
    bag = write_scene_bag(tmp_path / 'bag', world.make_sequence(config))
    output = tmp_path / 'eval'
    # Scale-shift finishes at once; lrda's 1000 iterations (the most the node takes) at
    # 448x336 make a frame of tens of seconds (the paper's fixed steps: the adaptive schedule
    # may plateau and end the frame early).
    program = python('-m', 'lrda_ros.cli', 'eval', '--bag', str(bag), '--output', str(output),
                     '--methods', 'scale-shift,lrda', '--model', 'demo', '--device', 'cpu',
                     '--iterations', '1000', '--schedule', 'paper', '--figures', '0')
    try:
        program.wait_for('evaluating', 120)
        time.sleep(2.0)
        assert_clean_stop(program, signum)
    finally:
        program.end()
    assert 'interrupted' in program.output, program.output
    # A report, if the frames done allowed one in time, is whole and marked interrupted.
    if (output / 'summary.json').exists():
        assert json.loads((output / 'summary.json').read_text())['metadata']['interrupted']


def speed_program(tmp_path: Path) -> Program:
    """``lrda speed`` of one frame of tens of seconds: 1000 fixed steps of ViT-S at 224."""
    return python('-m', 'lrda_ros.cli', 'speed', '--backbones', 'vits', '--resolutions', '224',
                  '--methods', 'lrda', '--iterations', '1000', '--schedule', 'paper',
                  '--frames', '1', '--no-structure', '--no-ablations', '--device', 'cpu',
                  '--output', str(tmp_path / 'speed'))


def wait_for_measuring_process(program: Program) -> None:
    """Wait until the measurement runs in its own interpreter (it loads torch, then works)."""
    assert wait_until(lambda: len(session_members(program.process.pid)) >= 2, 60), \
        program.output
    time.sleep(3.0)


@pytest.mark.slow
@pytest.mark.parametrize('signum', SIGNALS)
def test_lrda_speed_stops_with_its_measuring_process(tmp_path, signum):
    # The measurement runs in a spawned interpreter: the signal to lrda speed alone (not its
    # process group) must end that one too, not leave it computing for minutes.
    program = speed_program(tmp_path)
    try:
        wait_for_measuring_process(program)
        assert_clean_stop(program, signum)
    finally:
        program.end()
    assert 'lrda speed: interrupted; nothing written' in program.output, program.output
    assert not (tmp_path / 'speed' / 'speed.json').exists()


@pytest.mark.slow
def test_a_killed_lrda_speed_leaves_no_measuring_process(tmp_path):
    # SIGKILL cannot be caught: the measuring process notices its parent is gone and ends.
    program = speed_program(tmp_path)
    try:
        wait_for_measuring_process(program)
        program.process.kill()
        program.finish(timeout=60)
        assert wait_until(lambda: session_members(program.process.pid) == [], 10), \
            session_members(program.process.pid)
    finally:
        program.end()


@pytest.mark.slow
@pytest.mark.parametrize('signum', SIGNALS)
def test_evaluator_node_stops_in_a_long_frame(tmp_path, ros_context, namespace, signum):
    program = python('-m', 'lrda_ros.ros.evaluator_node', '--ros-args', '-r',
                     f'__ns:={namespace}', '-p', f'output_dir:={tmp_path}', '-p',
                     'figures:=1', '-p', 'report_every:=1')
    harness = rclpy.create_node('harness', namespace=namespace, context=ros_context)
    publishers = {name: harness.create_publisher(Image, name, 10)
                  for name in ('depth', 'ground_truth', 'image')}
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(harness)
    try:
        assert spin_until(executor, lambda: all(p.get_subscription_count() > 0
                                                for p in publishers.values()), 60), \
            program.output
        # A 12-megapixel frame: its metrics, figure and report take the evaluator seconds.
        header = Header(frame_id='camera', stamp=Time(sec=START_NS // 10**9))
        truth = np.random.default_rng(0).uniform(1, 50, (3000, 4000)).astype(np.float32)
        publishers['image'].publish(rgb_to_image_msg(np.zeros((3000, 4000, 3), np.uint8),
                                                     header))
        publishers['depth'].publish(depth_to_image_msg(truth * 1.1, header))
        publishers['ground_truth'].publish(depth_to_image_msg(truth, header))
        spin_until(executor, lambda: False, 3.0)
        assert_clean_stop(program, signum)
    finally:
        program.end()
        executor.shutdown()
        harness.destroy_node()
    summary = tmp_path / 'summary.json'
    if summary.exists():  # written whole or not at all
        json.loads(summary.read_text())


@pytest.mark.parametrize('signum', SIGNALS)
def test_a_stop_past_the_grace_says_why_it_ended(signum):
    # The main thread is inside a wait that outlives the grace, as in a long torch call: the
    # watchdog ends the process with code 0 and the block's farewell line.
    code = ('import time\n'
            'from lrda_ros.interrupts import exit_within\n'
            "with exit_within(0.3, on_signal=lambda: None, farewell='job: stopped mid-work'):\n"
            "    print('working', flush=True)\n"
            '    time.sleep(60)\n')
    program = python('-c', code)
    try:
        program.wait_for('working', 60)
        assert_clean_stop(program, signum)
    finally:
        program.end()
    assert program.lines[-1] == 'job: stopped mid-work', program.output


#: What ``ros2 run`` does with the program it runs (ros2cli's ros2run.api.run_executable): it
#: waits on it, and on KeyboardInterrupt waits on, passing no signal on. The stand-in for
#: machines without ros2cli; the real one is checked too where it is installed.
ROS2_RUN = """
import subprocess, sys
process = subprocess.Popen(sys.argv[3:])
while process.returncode is None:
    try:
        process.communicate()
    except KeyboardInterrupt:
        pass
sys.exit(process.returncode)
"""


def ros2_run_play(tmp_path, namespace: str, real: bool) -> Program:
    """Start ``ros2 run lrda_ros lrda play BAG --loop`` (the real one, or the stand-in)."""
    bag = write_large_image_bag(tmp_path / 'bag', namespace)
    play = ['play', str(bag), '--loop', '--wait', '0', '--rate', '0.1']
    if real:
        return Program(['ros2', 'run', 'lrda_ros', 'lrda', *play])
    stand_in = tmp_path / 'ros2'
    stand_in.write_text(ROS2_RUN)
    return Program([sys.executable, str(stand_in), 'run', 'lrda_ros', sys.executable, '-m',
                    'lrda_ros.cli', *play])


def ros2_run_installed() -> bool:
    """Return whether ``ros2 run lrda_ros`` runs this package (ros2cli, a sourced install)."""
    if shutil.which('ros2') is None:
        return False
    found = subprocess.run(['ros2', 'pkg', 'executables', 'lrda_ros'], capture_output=True,
                           text=True, timeout=60)
    return 'lrda_ros lrda' in found.stdout


@pytest.mark.slow
@pytest.mark.parametrize('real', [False, True], ids=['stand_in', 'ros2cli'])
@pytest.mark.parametrize('signum', SIGNALS)
def test_a_signal_to_ros2_run_alone_ends_the_replay(tmp_path, namespace, signum, real):
    if real and not ros2_run_installed():
        pytest.skip('ros2cli with lrda_ros built is not installed (a sourced ROS 2 workspace)')
    program = ros2_run_play(tmp_path, namespace, real)
    try:
        program.wait_for('playing', timeout=120)
        time.sleep(0.5)  # well into the replay (the follower arms at once)
        start = time.monotonic()
        program.process.send_signal(signum)  # to ros2 run alone, not to its process group
        assert wait_until(lambda: session_members(program.process.pid) == [], DEADLINE_S), \
            program.output
        seconds = time.monotonic() - start
        code = program.finish(timeout=10)
    finally:
        program.end()
    output = program.output
    assert seconds < DEADLINE_S and 'stopped after publishing' in output, output
    assert 'Traceback' not in output and '[ERROR]' not in output, output
    # SIGINT: ros2 run waits for the replay, which ends with code 0; SIGTERM ends ros2 run
    # itself (it has no handler), and the replay follows it.
    assert code == (0 if signum == signal.SIGINT else -signal.SIGTERM), output
