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
Approximate time synchronization of several message streams.

``ApproximateTimeSync`` reproduces the matching rule of the Python
``message_filters.ApproximateTimeSynchronizer`` (ros2/message_filters) for machines
without message_filters; ``create_synchronized_subscriptions`` uses message_filters when
it is installed and this class otherwise, behind one interface.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import itertools
import threading
import time
from typing import Any, Callable, Sequence

_NS_PER_S = 1_000_000_000

BACKEND_MESSAGE_FILTERS = 'message_filters'
BACKEND_BUILTIN = 'builtin'


class InvalidSyncConfigError(ValueError):
    """A synchronizer setting is out of its accepted range."""


def stamp_ns(msg: Any) -> int | None:
    """Return ``msg.header.stamp`` in integer nanoseconds, or None if it has no stamp."""
    stamp = getattr(getattr(msg, 'header', None), 'stamp', None)
    if stamp is None:
        return None
    return int(stamp.sec) * _NS_PER_S + int(stamp.nanosec)


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _validate_settings(num_inputs: int, queue_size: int, slop_s: float,
                       callback: Callable[..., None]) -> None:
    """Raise ``InvalidSyncConfigError`` for settings no synchronizer can use."""
    if not _is_integer(num_inputs) or num_inputs < 2:
        raise InvalidSyncConfigError(f'need at least 2 inputs to synchronize, got {num_inputs!r}')
    if not _is_integer(queue_size) or queue_size < 1:
        raise InvalidSyncConfigError(f'queue_size must be an integer >= 1, got {queue_size!r}')
    if not isinstance(slop_s, (int, float)) or not 0 <= slop_s < float('inf'):
        raise InvalidSyncConfigError(f'slop_s must be a finite number >= 0, got {slop_s!r}')
    if not callable(callback):
        raise InvalidSyncConfigError(f'callback must be callable, got {callback!r}')


class ApproximateTimeSync:
    """
    Match messages from ``num_inputs`` streams whose stamps lie within ``slop_s``.

    Same rule as ``message_filters.ApproximateTimeSynchronizer.add``: every input keeps
    at most ``queue_size`` messages keyed by stamp (the oldest stamp is dropped first;
    a message with a stamp already queued replaces it). When a message with stamp ``t``
    arrives, each other input's candidates are its stamps with ``|s - t| <= slop``,
    nearest first; combinations are tried in that (cartesian product) order and the first
    whose spread ``max - min`` is strictly below ``slop`` is passed to ``callback`` in
    input order and removed from the queues.

    ``add`` is thread-safe; the callback runs outside the internal lock, so it may call
    back into this object. Callbacks from concurrent ``add`` calls may interleave.
    Messages without ``header.stamp`` are rejected and counted unless
    ``allow_headerless``, which stamps them with ``now_ns()`` (wall clock by default).
    """

    def __init__(self, num_inputs: int, queue_size: int, slop_s: float,
                 callback: Callable[..., None], allow_headerless: bool = False,
                 now_ns: Callable[[], int] = time.time_ns) -> None:
        _validate_settings(num_inputs, queue_size, slop_s, callback)
        self._queues: list[dict[int, Any]] = [{} for _ in range(num_inputs)]
        self._queue_size = queue_size
        self._slop_ns = round(slop_s * _NS_PER_S)
        self._callback = callback
        self._allow_headerless = allow_headerless
        self._now_ns = now_ns
        self._lock = threading.Lock()
        self._num_emitted = 0
        self._num_evicted = 0
        self._num_rejected_headerless = 0

    @property
    def num_inputs(self) -> int:
        return len(self._queues)

    @property
    def num_emitted(self) -> int:
        """Count the synchronized sets passed to the callback."""
        with self._lock:
            return self._num_emitted

    @property
    def num_evicted(self) -> int:
        """Count messages dropped unused: pushed out of a full queue, or replaced."""
        with self._lock:
            return self._num_evicted

    @property
    def num_rejected_headerless(self) -> int:
        with self._lock:
            return self._num_rejected_headerless

    def add(self, index: int, msg: Any) -> None:
        """Add ``msg`` to input ``index``; call the callback if it completes a set."""
        if not 0 <= index < len(self._queues):
            raise IndexError(f'input index {index} out of range 0..{len(self._queues) - 1}')
        stamp = stamp_ns(msg)
        with self._lock:
            if stamp is None:
                if not self._allow_headerless:
                    self._num_rejected_headerless += 1
                    return
                stamp = int(self._now_ns())
            matched = self._insert_and_match(index, stamp, msg)
            if matched is not None:
                self._num_emitted += 1
        if matched is not None:
            self._callback(*matched)

    def _insert_and_match(self, index: int, stamp: int, msg: Any) -> list[Any] | None:
        """Queue ``msg`` and return the first matching set (removed from queues), if any."""
        queue = self._queues[index]
        if stamp in queue:
            self._num_evicted += 1
        queue[stamp] = msg
        while len(queue) > self._queue_size:
            del queue[min(queue)]
            self._num_evicted += 1
        if stamp not in queue:
            return None  # older than everything in a full queue: evicted at once

        candidates = []
        for other_index, other_queue in enumerate(self._queues):
            if other_index == index:
                continue
            near = [s for s in other_queue if abs(s - stamp) <= self._slop_ns]
            if not near:
                return None
            # Stable sort: ties keep queue insertion order, as message_filters does.
            candidates.append(sorted(near, key=lambda s: abs(s - stamp)))

        for combination in itertools.product(*candidates):
            stamps = list(combination)
            stamps.insert(index, stamp)
            if max(stamps) - min(stamps) < self._slop_ns:
                return [q.pop(s) for q, s in zip(self._queues, stamps)]
        return None


def message_filters_available() -> bool:
    """Return True if the ``message_filters`` Python package can be imported."""
    try:
        import message_filters  # noqa: F401
    except ImportError:
        return False
    return True


class _SyncMonitor:
    """Messages received and latest stamp per input, and sets emitted, for either backend."""

    def __init__(self, num_inputs: int) -> None:
        self._lock = threading.Lock()
        self.received = [0] * num_inputs
        self.latest_ns: list[int | None] = [None] * num_inputs
        self.emitted = 0

    def on_message(self, index: int, msg: Any) -> None:
        stamp = stamp_ns(msg)
        with self._lock:
            self.received[index] += 1
            if stamp is not None:
                self.latest_ns[index] = stamp

    def counting(self, callback: Callable[..., None]) -> Callable[..., None]:
        """Wrap ``callback`` so each synchronized set it receives is counted."""
        def emit(*msgs: Any) -> None:
            with self._lock:
                self.emitted += 1
            callback(*msgs)
        return emit


@dataclass
class SynchronizedSubscriptions:
    """
    Handle on synchronized subscriptions; keep it alive as long as messages should flow.

    ``backend`` is ``'message_filters'`` or ``'builtin'``. Both report how many sets were
    emitted, how many messages were dropped unmatched (``num_evicted``) and how far apart the
    inputs' latest stamps are (``stamp_offsets``), so a constant offset larger than the slop
    shows up instead of frames silently never arriving.
    """

    backend: str
    subscriptions: list[Any] = field(repr=False)
    synchronizer: Any = field(repr=False)
    topics: list[str] = field(default_factory=list)
    monitor: _SyncMonitor | None = field(default=None, repr=False)

    @property
    def num_evicted(self) -> int | None:
        """
        Count input messages dropped without being part of a set (None if unknown).

        message_filters does not count them; they are the messages received, less those in
        emitted sets, less those still queued.
        """
        if isinstance(self.synchronizer, ApproximateTimeSync):
            return self.synchronizer.num_evicted
        queues = getattr(self.synchronizer, 'queues', None)
        lock = getattr(self.synchronizer, 'lock', None)
        if self.monitor is None or queues is None or lock is None:
            return None
        with lock:
            queued = sum(len(queue) for queue in queues)
        monitor = self.monitor
        return max(0, sum(monitor.received) - len(monitor.received) * monitor.emitted - queued)

    @property
    def num_emitted(self) -> int | None:
        """Count the synchronized sets passed to the callback."""
        if isinstance(self.synchronizer, ApproximateTimeSync):
            return self.synchronizer.num_emitted
        return None if self.monitor is None else self.monitor.emitted

    def stamp_offsets(self) -> dict[str, float]:
        """Return each later input's latest stamp minus the first input's, in seconds."""
        if self.monitor is None or self.monitor.latest_ns[0] is None:
            return {}
        first = self.monitor.latest_ns[0]
        return {topic: (stamp - first) / _NS_PER_S
                for topic, stamp in zip(self.topics[1:], self.monitor.latest_ns[1:])
                if stamp is not None}

    def destroy(self, node: Any) -> None:
        """Destroy the underlying subscriptions (no more messages are synchronized)."""
        for subscription in self.subscriptions:
            # message_filters.Subscriber wraps the rclpy subscription in ``sub``.
            node.destroy_subscription(getattr(subscription, 'sub', subscription))
        self.subscriptions = []


def create_synchronized_subscriptions(
        node: Any, topics: Sequence[tuple[type, str]], qos: Any, queue_size: int,
        slop_s: float, callback: Callable[..., None],
        prefer_message_filters: bool = True,
        **subscription_options: Any) -> SynchronizedSubscriptions:
    """
    Subscribe ``node`` to ``topics`` (``(msg_type, topic)`` pairs) and synchronize them.

    ``callback`` receives one message per topic, in ``topics`` order. Uses
    ``message_filters.ApproximateTimeSynchronizer`` when it is importable and
    ``prefer_message_filters`` is set, else ``ApproximateTimeSync``. ``subscription_options``
    (e.g. ``qos_overriding_options``) go to every underlying subscription.
    """
    _validate_settings(len(topics), queue_size, slop_s, callback)
    monitor = _SyncMonitor(len(topics))
    names = [topic for _, topic in topics]
    if prefer_message_filters and message_filters_available():
        import message_filters

        subscribers = [message_filters.Subscriber(node, msg_type, topic, qos_profile=qos,
                                                  **subscription_options)
                       for msg_type, topic in topics]
        synchronizer = message_filters.ApproximateTimeSynchronizer(
            subscribers, queue_size, slop_s)
        synchronizer.registerCallback(monitor.counting(callback))
        for index, subscriber in enumerate(subscribers):
            # Registered after the synchronizer's own input: counts what it has already seen.
            subscriber.registerCallback(lambda msg, index=index: monitor.on_message(index, msg))
        return SynchronizedSubscriptions(BACKEND_MESSAGE_FILTERS, subscribers, synchronizer,
                                         names, monitor)

    synchronizer = ApproximateTimeSync(len(topics), queue_size, slop_s, callback)

    def add(index: int, msg: Any) -> None:
        monitor.on_message(index, msg)
        synchronizer.add(index, msg)

    subscriptions = [
        node.create_subscription(msg_type, topic, lambda msg, index=index: add(index, msg), qos,
                                 **subscription_options)
        for index, (msg_type, topic) in enumerate(topics)]
    return SynchronizedSubscriptions(BACKEND_BUILTIN, subscriptions, synchronizer, names,
                                     monitor)
