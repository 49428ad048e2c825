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
play``, for machines without ros2cli (``lrda play``): image (raw or compressed), camera_info and
points, the bag's ``/tf_static`` (transient local, first) and ``/tf``, and optionally ``/clock``
for ``use_sim_time``. Both need only the rclpy PyPI wheels; transforms also need ``tf2_msgs``
(part of ROS 2, not on PyPI) and are skipped with a warning without it.

``lrda play`` delivers what it says it published, or says what it could not: reliable
publishers with a deep history, a wait for subscribers (``--wait``) and for their
acknowledgements at the end (``--linger``), and a warning per topic naming what could not be
confirmed (:mod:`~lrda_ros.ros.delivery`). A stop request ends it between messages, before the
context shuts down.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
import math
import multiprocessing
from pathlib import Path
import signal
import statistics
import threading
import time
from typing import Any, Callable, Iterator
import uuid

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile
from rclpy.serialization import deserialize_message
from rclpy.signals import SignalHandlerOptions
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, PointCloud2

from .bag_writer import stamped_header
from .delivery import DeliveryTracker, REPLAY_QOS, wait_for_subscribers
from .stage_times import ENGINE, HOST, HOST_STAGES, STAGES
from .transport import prefer_large_sample_transport
from ..messages.rosbag import BagTopics, cdr_header_stamp, RosbagSource, TF_TOPICS
from ..messages.stamps import NS_PER_S, stamp_to_ns

#: Seconds a stopped replay still waits for acknowledgements of what it published.
_STOPPED_LINGER_S = 0.5
#: What ``lrda hold-rate`` subscribes to: every output the node builds for a frame.
HELD_OUTPUTS = ((Image, 'depth'), (CameraInfo, 'depth/camera_info'), (Image, 'depth/confidence'),
                (Image, 'depth_colored'), (PointCloud2, 'points_dense'))
_MESSAGE_TYPES = {'sensor_msgs/msg/Image': Image, 'sensor_msgs/msg/CameraInfo': CameraInfo,
                  'sensor_msgs/msg/PointCloud2': PointCloud2,
                  'sensor_msgs/msg/CompressedImage': CompressedImage}


def message_type(msgtype: str) -> type:
    """Return the rclpy class of a replayed ROS 2 type name (TFMessage needs tf2_msgs)."""
    if msgtype == 'tf2_msgs/msg/TFMessage':
        from tf2_msgs.msg import TFMessage  # ROS 2 only: no PyPI wheel

        return TFMessage
    try:
        return _MESSAGE_TYPES[msgtype]
    except KeyError:
        raise ValueError(f'cannot replay messages of type {msgtype}; replayable: '
                         f'{sorted(_MESSAGE_TYPES)}') from None


class TransformReplay:
    """
    Replay a bag's transforms: /tf_static at once, and a publisher for /tf.

    /tf_static is transient local like tf2's static broadcaster, keeping every recorded message.
    Without tf2_msgs nothing is replayed and a warning says why.
    """

    def __init__(self, node, source: RosbagSource) -> None:
        self.publisher = None
        self.topics = source.transform_topics()
        self.static_count = 0
        if not self.topics:
            return
        try:
            tf_message = message_type('tf2_msgs/msg/TFMessage')
        except ImportError:
            node.get_logger().warning(
                f'the recorded {" and ".join(self.topics)} are NOT replayed: tf2_msgs is not '
                'installed (it comes with ROS 2, not from PyPI); a node with lidar_to_camera.'
                'use_tf gets no transform, so give it lidar_to_camera.* instead')
            self.topics = []
            return
        if '/tf_static' in self.topics:
            statics = [deserialize_message(raw, tf_message) for _, _, _, raw
                       in source.raw_messages(['/tf_static'])]
            # Keep every recorded message for late subscribers, not only the last one.
            latched = QoSProfile(depth=max(1, len(statics)),
                                 durability=DurabilityPolicy.TRANSIENT_LOCAL)
            self._static = node.create_publisher(tf_message, '/tf_static', latched)
            for message in statics:
                self._static.publish(message)
            self.static_count = len(statics)
        if '/tf' in self.topics:
            self.publisher = node.create_publisher(tf_message, '/tf', 100)


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
        image_type = message_type(source.msgtype(source.topics.image))
        # A compressed image goes where image_transport would put it: <image>/compressed.
        image_topic = 'image/compressed' if image_type is CompressedImage else 'image'
        self.publishers = {name: node.create_publisher(msg_type, topic, 10)
                           for name, topic, msg_type in (
                               ('image', image_topic, image_type),
                               ('camera_info', 'camera_info', CameraInfo),
                               ('points', 'points', PointCloud2))}
        self._received: dict[str, dict[int, Any]] = {name: {} for name in outputs}
        for name in outputs:
            node.create_subscription(Image, name, self._store(name), 10)

    def _store(self, name: str):
        def store(message: Image) -> None:
            stamp = message.header.stamp
            self._received[name][stamp_to_ns(stamp)] = message
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
                messages[key] = deserialize_message(raw, message_type(msgtype))
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
            stamp_ns = stamp_to_ns(stamp)
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


class _Pacer:
    """Wall-clock pacing of bag time at ``rate``, publishing /clock while it waits."""

    def __init__(self, node, rate: float, clock_hz: float, stop: threading.Event) -> None:
        self.rate = rate
        self.stop = stop
        self.clock = node.create_publisher(Clock, '/clock', 10) if clock_hz > 0 else None
        self.period = 1.0 / clock_hz if clock_hz > 0 else None
        self.start_wall: float | None = None
        self.start_log = 0

    def restart(self) -> None:
        self.start_wall = None

    def _publish_clock(self, log_ns: int) -> None:
        header = stamped_header('', int(log_ns))
        self.clock.publish(Clock(clock=header.stamp))

    def wait_for(self, log_ns: int) -> None:
        """Sleep until ``log_ns`` is due; /clock ticks meanwhile and then reads ``log_ns``."""
        if self.start_wall is None:
            self.start_wall, self.start_log = time.monotonic(), log_ns
        due = self.start_wall + (log_ns - self.start_log) * 1e-9 / self.rate
        while (remaining := due - time.monotonic()) > 0 and not self.stop.is_set():
            if self.clock is None:
                self.stop.wait(remaining)
                break
            elapsed = time.monotonic() - self.start_wall
            self._publish_clock(self.start_log + int(elapsed * self.rate * 1e9))
            self.stop.wait(min(remaining, self.period))
        if self.clock is not None and not self.stop.is_set():
            self._publish_clock(log_ns)


def play_timed(node, source: RosbagSource, rate: float = 1.0, loop: bool = False,
               prefix: str = '', wait_for_subscribers_s: float = 0.0,
               clock_hz: float = 0.0, stop: threading.Event | None = None,
               delivery: DeliveryTracker | None = None) -> int:
    """
    Publish the bag's image, camera_info, points and transforms at the recorded pace.

    Topics keep their recorded names (with ``prefix`` prepended; not to /tf, /tf_static and
    /clock, which are global). /tf_static goes out first, transient local; /tf at its pace.
    ``clock_hz`` > 0 also publishes the bag's time on /clock, at that rate and before each
    message, for nodes with ``use_sim_time``. Waits up to ``wait_for_subscribers_s`` for every
    input topic to have a subscriber (messages published before discovery are lost), and says
    which has none. Publishers are reliable with a deep history (``REPLAY_QOS``); ``delivery``
    records what subscribers acknowledged. Returns the number of messages published; ``rate``
    scales the speed. ``stop`` (set by a signal handler, or by :func:`hold_rate`'s other
    process) ends any replay, between messages.
    """
    if rate <= 0:
        raise ValueError('rate must be > 0')
    if clock_hz < 0:
        raise ValueError('clock_hz must be >= 0 (0: no /clock)')
    stop = stop or threading.Event()
    delivery = delivery if delivery is not None else DeliveryTracker()
    topics = [source.topics.image, source.topics.camera_info, source.topics.points]
    publishers = {topic: node.create_publisher(message_type(source.msgtype(topic)),
                                               prefix + topic, REPLAY_QOS) for topic in topics}
    if wait_for_subscribers_s > 0:
        unheard = wait_for_subscribers(publishers, wait_for_subscribers_s, stop)
        if unheard and not stop.is_set():
            node.get_logger().warning(
                f'no subscriber on {", ".join(prefix + t for t in unheard)} after '
                f'{wait_for_subscribers_s:g} s: publishing anyway')
    transforms = TransformReplay(node, source)
    if transforms.publisher is not None:
        publishers['/tf'] = transforms.publisher
    pacer = _Pacer(node, rate, clock_hz, stop)
    published = transforms.static_count
    while not stop.is_set():
        pacer.restart()
        for topic, msgtype, log_ns, raw in source.raw_messages(list(publishers)):
            pacer.wait_for(log_ns)
            if stop.is_set():
                return published
            publisher = publishers[topic]
            stamp_ns = log_ns if topic in TF_TOPICS else cdr_header_stamp(raw)
            delivery.before_publish(publisher.topic_name, publisher, node, stamp_ns / NS_PER_S)
            publisher.publish(deserialize_message(raw, message_type(msgtype)))
            published += 1
        if not loop:
            return published
    return published


@contextmanager
def _private_context(prefix: str, signal_handlers: bool = True
                     ) -> Iterator[tuple[rclpy.Context, str]]:
    """
    Yield an initialized rclpy context of its own and a unique namespace; shut it down.

    ``signal_handlers``: False leaves SIGINT and SIGTERM to the caller's handlers.
    """
    context = rclpy.Context()
    if signal_handlers:
        rclpy.init(context=context)
    else:
        rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
    try:
        yield context, f'/{prefix}_{uuid.uuid4().hex[:8]}'
    finally:
        rclpy.try_shutdown(context=context)


def complete_bag_in_process(bag: Path, topics: BagTopics, parameters: dict[str, Any],
                            on_frame: Callable[[ReplayedFrame], None] | None = None,
                            outputs: tuple[str, ...] = ('depth',)
                            ) -> tuple[list[ReplayedFrame], list[tuple[float, int]]]:
    """
    Replay ``bag`` lock-step into a fresh in-process completion node with ``parameters``.

    ``outputs``: the node's Image topics to collect for each frame (the frame waits for all).

    Returns the replayed frames and, per frame, the node's own processing seconds and
    iterations. A private context and namespace keep it apart from other nodes.
    """
    from .node import CompletionNode

    with _private_context('lrda_replay') as (context, namespace), \
            RosbagSource(bag, topics) as source:
        node = CompletionNode(context=context, namespace=namespace, parameter_overrides=[
            Parameter(name, value=value) for name, value in parameters.items()])
        player = rclpy.create_node('lrda_replay_player', namespace=namespace,
                                   context=context)
        replay = LockstepReplay(player, source, outputs=outputs)
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


def _replay_and_listen(bag: Path, topics: BagTopics, namespace: str, rate: float,
                       finish: Any) -> None:
    """
    Replay ``bag`` in a loop into ``namespace`` until ``finish`` is set, taking every output.

    The second process of :func:`hold_rate`: what a robot runs beside the node (the sensor
    drivers, a recorder, rviz2), kept out of the node's process and its interpreter lock.
    ``finish``: a multiprocessing Event the node's process sets.
    """
    # A terminal's Ctrl-C reaches the whole process group: the node's process decides.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    prefer_large_sample_transport()
    with _private_context('lrda_rate_replay', signal_handlers=False) as (context, _), \
            RosbagSource(bag, topics) as source:
        listener = rclpy.create_node('lrda_rate_listener', namespace=namespace,
                                     context=context)
        for msg_type, topic in HELD_OUTPUTS:  # the node builds only what is subscribed
            listener.create_subscription(msg_type, topic, lambda _: None, 10)
        player = rclpy.create_node('lrda_rate_player', context=context)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(listener)
        # The replay paces itself on a thread; this one takes the outputs as they come, and
        # ends only after it (a thread left waiting in rclpy aborts the process at exit).
        stop = threading.Event()
        playing = threading.Thread(
            target=play_timed, args=(player, source, rate, True),
            kwargs={'prefix': namespace, 'stop': stop, 'wait_for_subscribers_s': 10.0},
            daemon=True)
        playing.start()
        while playing.is_alive():
            executor.spin_once(timeout_sec=0.05)
            if finish.is_set():
                stop.set()
        executor.shutdown()
        for member in (listener, player):
            member.destroy_node()


#: Seconds :func:`hold_rate` waits for the node's first synchronized set before it gives up.
_FIRST_SET_TIMEOUT_S = 60.0


def hold_rate(bag: Path, topics: BagTopics, parameters: dict[str, Any], seconds: float,
              rate: float = 1.0, stop: threading.Event | None = None) -> dict[str, Any]:
    """
    Replay ``bag`` in a loop at its recorded pace into a node in this process for ``seconds``.

    Shows whether the node keeps an output rate while frames arrive faster than it
    completes them (the anytime mode, ``time_budget``), with every output subscribed
    (HELD_OUTPUTS). The replay and the subscriber to the outputs run in a second process, as
    a robot's drivers and viewers do: the node's stage times are its own work, not theirs.
    The ``seconds`` count from the node's first synchronized set (the second process starts
    in seconds of its own); ``stop`` (set by a signal handler) ends it sooner, with what was
    measured. Signals are left to the caller. Returns the publish times (s since that set)
    and, per published frame, the node's frame time (synchronized set to publish),
    iterations and stage times (ms, stage_times.py), plus its counters.
    """
    from .node import CompletionNode

    prefer_large_sample_transport()  # before this process's participant, inherited below
    stop = stop or threading.Event()
    with _private_context('lrda_rate', signal_handlers=False) as (context, namespace), \
            RosbagSource(bag, topics) as source:
        remaps = [f'{name}:={namespace}{topic}' for name, topic in (
            ('image', source.topics.image), ('camera_info', source.topics.camera_info),
            ('points', source.topics.points))]
        node = CompletionNode(
            context=context, namespace=namespace,
            cli_args=['--ros-args'] + [arg for rule in remaps for arg in ('-r', rule)],
            parameter_overrides=[Parameter(k, value=v) for k, v in parameters.items()])
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        processes = multiprocessing.get_context('spawn')
        finish = processes.Event()
        replay = processes.Process(
            target=_replay_and_listen, args=(bag, topics, namespace, rate, finish),
            name='lrda-rate-replay', daemon=True)
        spawned = time.monotonic()
        replay.start()
        published, processed, start = [], 0, None
        try:
            while replay.is_alive():
                executor.spin_once(timeout_sec=0.01)
                now = time.monotonic()
                if start is None and node.stats.received:
                    start = now
                if stop.is_set() or ((now > start + seconds) if start is not None else (
                        now > spawned + _FIRST_SET_TIMEOUT_S)):
                    finish.set()
                if node.stats.processed > processed:
                    processed = node.stats.processed
                    published.append({'t': now - start,
                                      'frame_s': node.stats.last_frame_s,
                                      'iterations': node.stats.last_iterations,
                                      'stages_ms': node.stats.stages.milliseconds()})
        finally:
            finish.set()
            replay.join(timeout=10.0)
            if replay.is_alive():
                replay.kill()
        if replay.exitcode != 0 and not stop.is_set():
            raise RuntimeError(f'the replay process ended with exit code {replay.exitcode}')
        stats = node.stats
        result = {'published': published, 'received': stats.received,
                  'processed': stats.processed, 'superseded': stats.replaced,
                  'stopped_at_budget': stats.stopped_at_budget}
        executor.shutdown()
        node.destroy_node()
        return result


def held_rate(result: dict[str, Any], settle_s: float = 5.0) -> tuple[float, str]:
    """
    Return the output rate (Hz) :func:`hold_rate` measured after ``settle_s``, and a line.

    The line ends with the medians of the node's own work (``host <H> ms a frame``, the
    node's stages) and then of the engine's.
    """
    steady = [p for p in result['published'] if p['t'] > settle_s]  # after start-up
    times = [p['t'] for p in steady]
    rate = (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else float('nan')
    frame_s = [p['frame_s'] for p in steady] or [math.nan]
    iterations = [p['iterations'] for p in steady] or [math.nan]
    return rate, (f'{rate:.2f} Hz out ({result["received"]} sets in, {result["superseded"]} '
                  f'superseded), frame time median {statistics.median(frame_s):.3f} s max '
                  f'{max(frame_s):.3f} s, iterations mean {statistics.fmean(iterations):.1f}; '
                  + _stages_line([p.get('stages_ms', {}) for p in steady]))


def _stages_line(stages_ms: list[dict[str, float]]) -> str:
    """Return ``host <H> ms a frame (read ..., ...), engine <E> ms (encode ...)``: medians."""
    def median(stage: str) -> float:
        values = [stages[stage] for stages in stages_ms if stage in stages]
        return statistics.median(values) if values else math.nan

    def parts(stages: tuple[str, ...]) -> str:
        return ', '.join(f'{stage} {median(stage):.1f}' for stage in stages)

    engine_stages = tuple(stage for stage in STAGES if stage not in HOST_STAGES)
    return (f'host {median(HOST):.1f} ms a frame ({parts(HOST_STAGES)}), engine '
            f'{median(ENGINE):.1f} ms a frame ({parts(engine_stages)})')


def play_bag(bag: Path, topics: BagTopics, rate: float = 1.0, loop: bool = False,
             wait_for_subscribers_s: float = 0.0, linger_s: float = 10.0,
             clock_hz: float = 0.0, stop: threading.Event | None = None) -> DeliveryTracker:
    """
    Replay ``bag`` at the recorded pace from a node of its own (``lrda play``).

    After the last message, waits up to ``linger_s`` for every reliable subscriber to
    acknowledge everything, then logs what was published and, one warning per topic, what
    could not be confirmed delivered. ``stop`` (set by the caller's signal handler) ends the
    replay between messages; rclpy's own handlers are off, since they would shut the context
    down under the publishing loop. Returns the delivery record.
    """
    prefer_large_sample_transport()
    stop = stop or threading.Event()
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node('lrda_play')
    delivery = DeliveryTracker()
    try:
        with RosbagSource(bag, topics) as source:
            node.get_logger().info(
                f'playing {bag} at {rate:g}x the recorded pace: '
                + ', '.join([source.topics.image, source.topics.camera_info,
                             source.topics.points, *source.transform_topics()]))
            count = play_timed(node, source, rate, loop,
                               wait_for_subscribers_s=wait_for_subscribers_s,
                               clock_hz=clock_hz, stop=stop, delivery=delivery)
        if stop.is_set():  # a moment for the last messages (the caller ends 1.5 s after it)
            delivery.wait(min(linger_s, _STOPPED_LINGER_S), threading.Event())
        else:
            delivery.wait(linger_s, stop)
        _log_delivery(node.get_logger(), bag, count, delivery, stop.is_set())
        return delivery
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


def _log_delivery(logger, bag: Path, count: int, delivery: DeliveryTracker,
                  stopped: bool) -> None:
    """Say what was published, and name what could not be confirmed delivered."""
    problems = delivery.report()
    what = 'stopped after publishing' if stopped else 'published'
    confirmed = '' if problems else ', each acknowledged by every subscriber'
    logger.info(f'{what} {count} messages from {bag}{confirmed}')
    for line in problems:
        logger.warning(f'not confirmed: {line}')
