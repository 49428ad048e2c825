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
The node as users run it: its own process, config/completion.yaml, a bag replayed at pace.

``completion_node --ros-args --params-file config/completion.yaml`` with the input topics
remapped and the KITTI extrinsic given as a parameter (no tf2 here); the KITTI bag is played at
its recorded timing (as ``ros2 bag play`` / ``lrda play`` would) and depth must come back.
The inputs are switched to reliable QoS through the node's QoS override parameters.
"""

from __future__ import annotations

import os
from pathlib import Path
import signal
import subprocess
import sys
import threading

from conftest import SHARED_DATA, spin_until
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from lrda_ros.messages.rosbag import RosbagSource  # noqa: E402, I100
from lrda_ros.ros.replay import play_timed  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BAG = SHARED_DATA / 'bags' / 'kitti_2011_09_26_3frames_db3'


@pytest.fixture
def large_data_transport(monkeypatch):
    """Use Fast DDS's large-data transports here too (the node defaults to them)."""
    monkeypatch.setenv('FASTDDS_BUILTIN_TRANSPORTS', 'LARGE_DATA')


@pytest.mark.slow
def test_completion_node_process_with_the_shipped_params_file(large_data_transport,
                                                              ros_context, namespace):
    if not BAG.is_dir():
        pytest.skip(f'KITTI bag not found at {BAG}')
    with RosbagSource(BAG) as source:
        topics = source.topics
        matrix = source.transform_tree().lookup('camera_color_left', 'velo_link').as_matrix()
    prefix = namespace  # keep this test's topics apart from anything else on the network
    command = [
        sys.executable, '-m', 'lrda_ros.ros.node', '--ros-args',
        '--params-file', str(ROOT / 'config' / 'completion.yaml'),
        '-r', f'__ns:={namespace}',
        '-r', f'image:={prefix}{topics.image}', '-r', f'camera_info:={prefix}{topics.camera_info}',
        '-r', f'points:={prefix}{topics.points}',
        '-p', 'lidar_to_camera.matrix:=[' + ','.join(repr(float(v)) for v in matrix.ravel()) + ']',
        '-p', 'model:=demo']
    # Replays want every frame: reliable inputs (the default SensorDataQoS is best effort, and
    # megabyte messages between processes are often lost that way).
    for topic in (topics.image, topics.camera_info, topics.points):
        command += ['-p', f'qos_overrides.{prefix}{topic}.subscription.reliability:=reliable']
    # The shipped 'auto' model fails closed offline; the demonstration prior is asked for.
    environment = {**os.environ, 'HF_HUB_OFFLINE': '1'}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, env=environment)
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(process.stdout), daemon=True)
    reader.start()
    node = rclpy.create_node('harness', namespace=namespace, context=ros_context)
    received = []
    node.create_subscription(Image, 'depth', received.append, 10)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    player = rclpy.create_node('player', context=ros_context)
    try:
        assert spin_until(executor, lambda: node.count_publishers(f'{namespace}/depth') > 0,
                          60), ''.join(output)
        with RosbagSource(BAG) as source:
            # A fifth of the recorded pace: the CPU-bound node may still skip frames.
            play = threading.Thread(target=play_timed, args=(player, source, 0.2),
                                    kwargs={'prefix': prefix, 'wait_for_subscribers_s': 30})
            play.start()
            assert spin_until(executor, lambda: len(received) >= 1, 120), ''.join(output)
            play.join()
        depth = received[0]
        assert depth.encoding == '32FC1' and (depth.height, depth.width) == (375, 1242)
        assert depth.header.frame_id == 'camera_color_left'
        values = np.frombuffer(bytes(depth.data), np.float32)
        assert np.isfinite(values).mean() > 0.5
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=30)
        reader.join(timeout=5)
        executor.shutdown()
        node.destroy_node()
        player.destroy_node()
    log = ''.join(output)
    assert code == 0, log
    assert "model 'demo'" in log
