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
Replay a rosbag2 into a running completion node over rclpy, one synchronized frame at a time.

Lock-step replay publishes a frame's image, camera_info and cloud and waits for the node's
outputs for that image stamp before the next: every frame is processed, deterministically (used
by the demo and the tests). :func:`play_timed` replays at the recorded rate like ``ros2 bag
play``, for machines without ros2cli (``lrda play``). Both need only the rclpy PyPI wheels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
import time
from typing import Any, Callable
import uuid

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import CameraInfo, Image, PointCloud2

from ..eval.datasets.rosbag import BagTopics, cdr_header_stamp, RosbagSource

_MESSAGE_TYPES = {'sensor_msgs/msg/Image': Image, 'sensor_msgs/msg/CameraInfo': CameraInfo,
                  'sensor_msgs/msg/PointCloud2': PointCloud2}


@dataclass
class ReplayedFrame:
    """The inputs published for one frame and the outputs received for it."""

    stamp_ns: int
    inputs: dict[str, Any]
    outputs: dict[str, Any] = field(default_factory=dict)


class LockstepReplay:
    """Publish a bag's synchronized frames to ``image``/``camera_info``/``points``."""

    def __init__(self, node, source: RosbagSource,
                 outputs: tuple[str, ...] = ('depth', 'sparse_depth')) -> None:
        self.node = node
        self.source = source
        self.publishers = {name: node.create_publisher(msg_type, name, 10) for name, msg_type
                           in (('image', Image), ('camera_info', CameraInfo),
                               ('points', PointCloud2))}
        self._received: dict[str, dict[int, Any]] = {name: {} for name in outputs}
        for name in outputs:
            node.create_subscription(Image, name, self._store(name), 10)

    def _store(self, name: str):
        def store(message: Image) -> None:
            stamp = message.header.stamp
            self._received[name][stamp.sec * 1_000_000_000 + stamp.nanosec] = message
        return store

    def frames(self) -> list[dict[str, Any]]:
        """Return the synchronized frames as rclpy messages keyed by input name."""
        topics = self.source.topics
        roles = {topics.image: 'image', topics.camera_info: 'camera_info',
                 topics.points: 'points'}
        order = self.source.synchronized_stamps()
        wanted = {(topic, stamp) for match in order
                  for topic, stamp in zip(roles, match)}
        messages = {}
        for topic, msgtype, _, raw in self.source.raw_messages(list(roles)):
            key = (topic, cdr_header_stamp(raw))
            if key in wanted:
                messages[key] = deserialize_message(raw, _MESSAGE_TYPES[msgtype])
        return [{roles[t]: messages[(t, s)] for t, s in zip(roles, match)} for match in order]

    def wait_for_subscribers(self, executor, timeout: float = 10.0) -> bool:
        """Spin until the node under test subscribes to all three inputs."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(p.get_subscription_count() > 0 for p in self.publishers.values()):
                return True
            executor.spin_once(timeout_sec=0.05)
        return False

    def play(self, executor, timeout_per_frame: float = 120.0,
             on_frame=None) -> list[ReplayedFrame]:
        """
        Publish each frame and spin until its outputs arrive (or the timeout passes).

        A frame whose outputs never arrive (dropped by the node) has empty ``outputs``.
        """
        replayed = []
        for inputs in self.frames():
            stamp = inputs['image'].header.stamp
            stamp_ns = stamp.sec * 1_000_000_000 + stamp.nanosec
            for name in ('image', 'camera_info', 'points'):
                self.publishers[name].publish(inputs[name])
            deadline = time.monotonic() + timeout_per_frame
            while time.monotonic() < deadline and not all(
                    stamp_ns in received for received in self._received.values()):
                executor.spin_once(timeout_sec=0.05)
            frame = ReplayedFrame(stamp_ns, inputs, {
                name: received.pop(stamp_ns) for name, received in self._received.items()
                if stamp_ns in received})
            replayed.append(frame)
            if on_frame is not None:
                on_frame(frame)
        return replayed


def play_timed(node, source: RosbagSource, rate: float = 1.0, loop: bool = False,
               prefix: str = '', wait_for_subscribers_s: float = 0.0) -> int:
    """
    Publish the bag's image, camera_info and points messages at the recorded pace.

    Topics keep their recorded names (with ``prefix`` prepended). Waits up to
    ``wait_for_subscribers_s`` for every topic to have a subscriber (messages published before
    discovery are lost). Returns the number of messages published; ``rate`` scales the speed.
    """
    if rate <= 0:
        raise ValueError('rate must be > 0')
    topics = [source.topics.image, source.topics.camera_info, source.topics.points]
    publishers = {topic: node.create_publisher(_MESSAGE_TYPES[source.msgtype(topic)],
                                               prefix + topic, 10) for topic in topics}
    deadline = time.monotonic() + wait_for_subscribers_s
    while time.monotonic() < deadline and not all(
            p.get_subscription_count() > 0 for p in publishers.values()):
        time.sleep(0.05)
    published = 0
    while True:
        start_wall, start_log = time.monotonic(), None
        for topic, msgtype, log_ns, raw in source.raw_messages(topics):
            start_log = log_ns if start_log is None else start_log
            delay = (log_ns - start_log) * 1e-9 / rate - (time.monotonic() - start_wall)
            if delay > 0:
                time.sleep(delay)
            publishers[topic].publish(deserialize_message(raw, _MESSAGE_TYPES[msgtype]))
            published += 1
        if not loop:
            return published


def complete_bag_in_process(bag: Path, topics: BagTopics, parameters: dict[str, Any],
                            on_frame: Callable[[ReplayedFrame], None] | None = None
                            ) -> tuple[list[ReplayedFrame], list[tuple[float, int]]]:
    """
    Replay ``bag`` lock-step into a fresh in-process completion node with ``parameters``.

    Returns the replayed frames and, per frame, the node's own processing seconds and
    iterations. A private context and namespace keep it apart from other nodes.
    """
    from .node import CompletionNode

    context = rclpy.Context()
    rclpy.init(context=context)
    namespace = '/lrda_replay_' + uuid.uuid4().hex[:8]
    try:
        with RosbagSource(bag, topics) as source:
            node = CompletionNode(context=context, namespace=namespace, parameter_overrides=[
                Parameter(name, value=value) for name, value in parameters.items()])
            player = rclpy.create_node('lrda_replay_player', namespace=namespace,
                                       context=context)
            replay = LockstepReplay(player, source, outputs=('depth',))
            executor = SingleThreadedExecutor(context=context)
            executor.add_node(node)
            executor.add_node(player)
            if not replay.wait_for_subscribers(executor):
                raise RuntimeError('the completion node did not subscribe to the replayed topics')
            stats: list[tuple[float, int]] = []

            def record(frame: ReplayedFrame) -> None:
                # The node's own processing time and iterations for the frame just completed.
                stats.append((node.stats.last_processing_s, node.stats.last_iterations))
                if on_frame is not None:
                    on_frame(frame)

            frames = replay.play(executor, on_frame=record)
            executor.shutdown()
            node.destroy_node()
            player.destroy_node()
            return frames, stats
    finally:
        rclpy.try_shutdown(context=context)


def play_bag(bag: Path, topics: BagTopics, rate: float = 1.0, loop: bool = False,
             wait_for_subscribers_s: float = 0.0, linger_s: float = 2.0) -> int:
    """Replay ``bag`` at the recorded pace from a node of its own (``lrda play``)."""
    from .startup import prefer_large_data_transport

    prefer_large_data_transport()
    rclpy.init()
    node = rclpy.create_node('lrda_play')
    try:
        with RosbagSource(bag, topics) as source:
            count = play_timed(node, source, rate, loop,
                               wait_for_subscribers_s=wait_for_subscribers_s)
        time.sleep(linger_s)  # let reliable retransmissions finish before the node goes
        node.get_logger().info(f'published {count} messages from {bag}')
        return count
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
