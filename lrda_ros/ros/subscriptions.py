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
Synchronized subscriptions: message_filters where installed, the package's own matcher otherwise.

Both backends behind one handle that counts what was emitted and what found no partner.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import threading
from typing import Any, Callable, Sequence

from ..messages.stamps import header_stamp_ns, NS_PER_S
from ..messages.sync import ApproximateTimeSync, validate_sync_settings

BACKEND_MESSAGE_FILTERS = 'message_filters'
BACKEND_BUILTIN = 'builtin'


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
        stamp = header_stamp_ns(msg)
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
        return {topic: (stamp - first) / NS_PER_S
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
    validate_sync_settings(len(topics), queue_size, slop_s, callback)
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
