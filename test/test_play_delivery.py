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
``lrda play`` over real DDS, as users run it: what it says it published arrives.

Large raw images, a subscriber process started before it: every message it says it published
arrives, or it names what could not be confirmed.

The bag holds 1920x1200 rgb8 images (6.9 MB) with camera_info and a cloud: over the DDS
transports such messages take long enough that a replay ending right after its last publish
loses them.
"""

from __future__ import annotations

import os
from pathlib import Path
import re
import signal
import sys
import time

import numpy as np
from processes import Program, python, ROOT
import pytest

pytest.importorskip('rclpy', reason='rclpy is not installed')

from lrda_ros.ros.bag_writer import stamped_header, write_bag  # noqa: E402, I100
from lrda_ros.ros.builders import rgb_to_image_msg, xyz_to_pointcloud2  # noqa: E402
from sensor_msgs.msg import CameraInfo  # noqa: E402

START_NS = 1_700_000_000_000_000_000
WIDTH, HEIGHT = 1920, 1200


def write_large_image_bag(path: Path, prefix: str, frames: int = 3,
                          period_ns: int = 100_000_000) -> Path:
    """Write ``frames`` 1920x1200 rgb8 images with camera_info and a cloud, ``period_ns`` apart."""
    rng = np.random.default_rng(0)

    def messages():
        for k in range(frames):
            stamp = START_NS + k * period_ns
            header = stamped_header('camera', stamp)
            rgb = rng.integers(0, 255, (HEIGHT, WIDTH, 3), dtype=np.uint8)
            yield f'{prefix}/cam/image_raw', stamp, rgb_to_image_msg(rgb, header)
            # A distorted industrial camera (plumb_bob).
            yield f'{prefix}/cam/camera_info', stamp, CameraInfo(
                header=header, width=WIDTH, height=HEIGHT, distortion_model='plumb_bob',
                d=[-0.3, 0.1, 0.0, 0.0, 0.0],
                k=[1400.0, 0.0, 960.0, 0.0, 1400.0, 600.0, 0.0, 0.0, 1.0])
            cloud = rng.normal(size=(2000, 3)).astype(np.float32)
            yield f'{prefix}/lidar/points', stamp + 1000, xyz_to_pointcloud2(
                cloud, stamped_header('lidar', stamp))

    write_bag(path, messages())
    return path


class Subscriber(Program):
    """``replay_subscriber.py`` on the bag's three topics."""

    def __init__(self, prefix: str, reliability: str, *options: str) -> None:
        super().__init__([sys.executable, str(ROOT / 'test' / 'replay_subscriber.py'),
                          f'{prefix}/cam/image_raw', f'{prefix}/cam/camera_info',
                          f'{prefix}/lidar/points', reliability, *options])
        self.wait_for('^ready', 60, regex=True)

    def counts(self) -> dict[str, int]:
        counts = {'image': 0, 'camera_info': 0, 'points': 0}
        for line in self.lines:
            kind, _, number = line.partition(' ')
            if kind in counts:
                counts[kind] = max(counts[kind], int(number))
        return counts


def lrda_play(bag: Path, *options: str) -> Program:
    return python('-m', 'lrda_ros.cli', 'play', str(bag), '--wait', '30', *options)


def play_to_subscriber(tmp_path: Path, namespace: str, processes: list, reliability: str,
                       subscriber_options: tuple = (), play_options: tuple = (),
                       **bag_options) -> tuple[Subscriber, Program]:
    """Start a subscriber, then `lrda play` of a large-image bag; ``processes`` ends both."""
    bag = write_large_image_bag(tmp_path / 'bag', namespace, **bag_options)
    subscriber = Subscriber(namespace, reliability, *subscriber_options)
    processes.append(subscriber)
    play = lrda_play(bag, *play_options)
    processes.append(play)
    return subscriber, play


@pytest.fixture
def processes():
    """Collect the processes a test starts; end them whatever happens."""
    started: list[Program] = []
    yield started
    for process in started:
        process.end()


@pytest.mark.slow
def test_large_raw_images_reach_a_reliable_subscriber_started_before_play(
        tmp_path, namespace, processes):
    subscriber, play = play_to_subscriber(tmp_path, namespace, processes, 'reliable')
    assert play.finish(120) == 0, play.output
    deadline = time.monotonic() + 10
    while subscriber.counts() != {'image': 3, 'camera_info': 3, 'points': 3}:
        assert time.monotonic() < deadline, (subscriber.counts(), play.output)
        time.sleep(0.1)
    assert 'published 9 messages' in play.output, play.output
    assert 'each acknowledged by every subscriber' in play.output, play.output
    assert 'not confirmed' not in play.output and 'Traceback' not in play.output, play.output


@pytest.mark.slow
def test_large_raw_images_reach_a_best_effort_subscriber(tmp_path, namespace, processes):
    # As `ros2 topic hz` or the node's default sensor-data QoS: Fast DDS cannot send a sample
    # larger than the publisher's shared-memory segment (512 KiB by default) to best-effort
    # readers on the same host, so none arrives; lrda play's profile (ros/transport.py) makes
    # the segment large. Best effort may still lose one on a starved machine: most must come.
    # The subscriber keeps Fast DDS's defaults, as a ROS 2 tool would.
    subscriber, play = play_to_subscriber(tmp_path, namespace, processes, 'best_effort',
                                          period_ns=500_000_000)
    assert play.finish(120) == 0, play.output
    deadline = time.monotonic() + 10
    while subscriber.counts()['image'] < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert subscriber.counts()['image'] >= 2, (subscriber.counts(), play.output)


@pytest.mark.slow
def test_a_stalled_reliable_subscriber_gets_every_message_once_it_resumes(
        tmp_path, namespace, processes):
    # The subscriber gets no CPU for 5 s from its first image on (as on a loaded machine):
    # play must keep its publishers until everything is acknowledged, not end after a sleep.
    subscriber, play = play_to_subscriber(tmp_path, namespace, processes, 'reliable',
                                          ('--stall',), period_ns=500_000_000)
    subscriber.wait_for('^image 1', 60, regex=True)
    time.sleep(5.0)
    os.kill(subscriber.process.pid, signal.SIGCONT)
    assert play.finish(120) == 0, play.output
    deadline = time.monotonic() + 10  # acknowledged: received; the count is printed after
    while subscriber.counts() != {'image': 3, 'camera_info': 3, 'points': 3}:
        assert time.monotonic() < deadline, (subscriber.counts(), play.output)
        time.sleep(0.1)
    assert 'each acknowledged by every subscriber' in play.output, play.output


@pytest.mark.slow
def test_play_names_the_messages_a_stalled_subscriber_did_not_acknowledge_in_time(
        tmp_path, namespace, processes):
    _, play = play_to_subscriber(tmp_path, namespace, processes, 'reliable', ('--stall',),
                                 ('--linger', '1'), period_ns=500_000_000)
    assert play.finish(120) == 0, play.output  # the subscriber is still stopped
    assert 'published 9 messages' in play.output, play.output
    image_line = next((line for line in play.lines if 'not confirmed' in line
                       and f'{namespace}/cam/image_raw:' in line), '')
    # The first image was received (it stopped the subscriber); the later two were not.
    later = [f'{(START_NS + k * 500_000_000) / 1e9:.3f}' for k in (1, 2)]
    assert re.search(r'image_raw: [23] of 3 messages not confirmed', image_line), play.output
    assert all(stamp in image_line for stamp in later), play.output
    assert '[WARN]' in image_line and 'Traceback' not in play.output


@pytest.mark.slow
def test_play_says_it_cannot_confirm_delivery_to_best_effort_subscribers(
        tmp_path, namespace, processes):
    # `ros2 topic echo` started before any publisher subscribes best effort (sensor data QoS):
    # large images are often lost, and no acknowledgement tells the publisher.
    _, play = play_to_subscriber(tmp_path, namespace, processes, 'best_effort', frames=2)
    assert play.finish(120) == 0, play.output
    assert 'published 6 messages' in play.output, play.output
    warning = next((line for line in play.lines if 'best-effort subscribers on' in line), '')
    assert f'{namespace}/cam/image_raw' in warning and '[WARN]' in warning, play.output
    assert '--qos-reliability reliable' in warning and '--rate' in warning, play.output
    assert 'each acknowledged' not in play.output, play.output
