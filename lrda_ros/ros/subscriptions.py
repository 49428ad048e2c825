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

from collections import Counter
from dataclasses import dataclass, field
import threading
from typing import Any, Callable, Sequence, TypeVar

from .input_rates import InputRates
from ..messages.causes import cause_line, MISSING
from ..messages.stamps import header_stamp_ns, NS_PER_S
from ..messages.sweep_stamp import unwrap
from ..messages.sync import ApproximateTimeSync, TimeJumpCallback, validate_sync_settings
from ..messages.sync_losses import (
    BEYOND_SLOP, describe_loss, IMAGE_LOST, suggested_slop_s, SyncLoss, SyncLossTracker,
    TIME_JUMP)

_T = TypeVar('_T')
#: Maps an input's message to what the synchronizer pairs it by.
SyncView = Callable[[Any], Any]
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
    """Messages received, latest stamp and arrivals per input, and sets emitted."""

    def __init__(self, topics: Sequence[str]) -> None:
        self._lock = threading.Lock()
        self.received = [0] * len(topics)
        self.latest_ns: list[int | None] = [None] * len(topics)
        self.emitted = 0
        #: Each input's rate and the age of its last message (the inputs status).
        self.rates = InputRates(topics)

    def on_message(self, index: int, msg: Any) -> None:
        self.rates.tick(index)
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


class _MessageFiltersLosses:
    """
    Classify what message_filters' synchronizer drops: it counts nothing itself.

    Every message is noted before the synchronizer sees it and the queues are compared after:
    a noted message neither emitted in a set nor still queued was dropped. A stamp going
    backwards is a time jump, and a queued message that can no longer pair is taken out of
    the synchronizer's queue and counted, both as :class:`ApproximateTimeSync` does. Locks are
    always taken synchronizer first, as its own callback (``emitted``) runs under its lock.
    """

    def __init__(self, num_inputs: int, slop_ns: int,
                 on_time_jump: TimeJumpCallback | None) -> None:
        self.lock = threading.Lock()
        self.losses = SyncLossTracker(num_inputs, slop_ns)
        self._slop_ns = slop_ns
        self._pending: list[Counter[int]] = [Counter() for _ in range(num_inputs)]
        self._on_time_jump = on_time_jump
        self.synchronizer: Any = None

    def before(self, index: int, msg: Any) -> None:
        """Note a message the synchronizer is about to get; handle a time jump first."""
        stamp = header_stamp_ns(msg)
        if stamp is None or self.synchronizer is None:
            return
        with self.synchronizer.lock, self.lock:
            previous = self.losses.seen(index, stamp)
            if previous is not None and self._on_time_jump is not None:
                self._drop_after(index, stamp + self._slop_ns)
            self._pending[index][stamp] += 1
        if previous is not None and self._on_time_jump is not None:
            self._on_time_jump(index, previous, stamp)

    def emitted(self, msgs: Sequence[Any]) -> None:
        """Note a synchronized set (called under the synchronizer's lock, still queued)."""
        stamps = [header_stamp_ns(msg) for msg in msgs]
        with self.lock:
            # What this message pushed out was dropped before the match: classified while
            # the set's messages were still unused partners, as ApproximateTimeSync does.
            self._count_dropped()
            self.losses.used(stamps)
            for pending, stamp in zip(self._pending, stamps):
                pending[stamp] -= 1
                if pending[stamp] <= 0:
                    del pending[stamp]

    def after(self, index: int, msg: Any) -> None:
        """Drop what can no longer pair; count the noted messages neither in a set nor queued."""
        if self.synchronizer is None:
            return
        with self.synchronizer.lock, self.lock:
            queues = self.synchronizer.queues
            for queue_index, stamp in self.losses.unpairable(queues):
                del queues[queue_index][stamp]
            self._count_dropped()

    def _count_dropped(self) -> None:
        for index, (pending, queue) in enumerate(zip(self._pending, self.synchronizer.queues)):
            for stamp, count in list(pending.items()):
                queued = int(stamp in queue)
                for _ in range(count - queued):
                    self.losses.lost(index, stamp)
                if queued:
                    pending[stamp] = 1
                else:
                    del pending[stamp]

    def _drop_after(self, index: int, limit_ns: int) -> None:
        queues = self.synchronizer.queues
        for other, stamp in self.losses.old_timeline(index, queues, limit_ns):
            del queues[other][stamp]
            self.losses.lost(other, stamp, TIME_JUMP)
            self._pending[other].pop(stamp, None)
        self.losses.forget_after(index, limit_ns)


@dataclass
class SynchronizedSubscriptions:
    """
    Handle on synchronized subscriptions; keep it alive as long as messages should flow.

    ``backend`` is ``'message_filters'`` or ``'builtin'``. Both report how many sets were
    emitted, how many messages were dropped unmatched and why (``loss_counts``,
    ``last_losses``: see :mod:`~lrda_ros.messages.sync_losses`), and how far apart the
    inputs' latest stamps are (``stamp_offsets``), so a constant offset larger than the slop
    shows up instead of frames silently never arriving.
    """

    backend: str
    subscriptions: list[Any] = field(repr=False)
    synchronizer: Any = field(repr=False)
    topics: list[str] = field(default_factory=list)
    monitor: _SyncMonitor | None = field(default=None, repr=False)
    #: message_filters only: what its synchronizer dropped (None where it cannot be told).
    dropped: _MessageFiltersLosses | None = field(default=None, repr=False)

    def _read(self, read: Callable[[SyncLossTracker], _T], unknown: _T) -> _T:
        """Return ``read(losses)`` under the backend's loss tracker's lock, else ``unknown``."""
        if isinstance(self.synchronizer, ApproximateTimeSync):
            lock, losses = self.synchronizer.lock, self.synchronizer.losses
        elif self.dropped is not None:
            lock, losses = self.dropped.lock, self.dropped.losses
        else:
            return unknown  # a message_filters that cannot tell its losses
        with lock:
            return read(losses)

    @property
    def num_evicted(self) -> int | None:
        """Count input messages dropped without being part of a set (None if unknown)."""
        counts = self.loss_counts()
        return None if counts is None else sum(counts.values())

    def loss_counts(self) -> dict[str, int] | None:
        """Return the dropped messages per reason (None if unknown)."""
        return self._read(lambda losses: dict(losses.counts), None)

    def last_losses(self) -> dict[str, SyncLoss]:
        """Return the latest dropped message of each reason."""
        return self._read(lambda losses: dict(losses.last), {})

    def missing_counts(self) -> dict[str, int] | None:
        """Return per input topic the frames lost for want of its message (None if unknown)."""
        return self._read(lambda losses: {self.topics[index]: n for index, n
                                          in sorted(losses.missing.items())}, None)

    def missing_message(self, topic: str, count: int, slop_s: float) -> str:
        """Describe the frames lost for want of ``topic``'s message, the latest one first."""
        index = self.topics.index(topic)
        loss = self._read(lambda losses: losses.last_missing.get(index), None)
        latest = f'{self.backend} dropped {self.offsets_text(loss)}; ' if loss else ''
        return cause_line(MISSING, count, (
            f'{latest}a frame needs a message of every input within sync.slop {slop_s:g} s, '
            f'and {topic} had none near it: is it published (ros2 topic hz) and remapped?'),
            subject=topic)

    def largest_spread_s(self) -> float:
        """Return the largest stamp spread of the messages dropped beyond the slop (s)."""
        return self._read(lambda losses: losses.largest_spread_ns / NS_PER_S, 0.0)

    def offsets_text(self, loss: SyncLoss) -> str:
        """Describe a dropped message: its topic and stamp, and each other input's offset."""
        return describe_loss(loss, self.topics)

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

    def loss_message(self, reason: str, count: int, loss: SyncLoss, slop_s: float,
                     queue_size: int) -> str:
        """Describe a dropped message and what the settings would need to keep it."""
        text = cause_line(reason, count, f'{self.backend} dropped {self.offsets_text(loss)}')
        if reason == BEYOND_SLOP:
            spread = self.largest_spread_s()
            needed = suggested_slop_s(round(spread * NS_PER_S))
            return (f'{text}; stamps up to {spread:.3f} s apart are beyond sync.slop '
                    f'{slop_s:g} s: {slop_advice(needed)}, or stamps fixed at the source')
        if reason == IMAGE_LOST:
            return (f'{text}; its image never reached the synchronizer (lost in transport or '
                    'by the publisher): not an offset between the inputs, no slop to change')
        if reason == TIME_JUMP:
            return (f'{text}; stamps went back (a bag loop, a clock reset): the old timeline '
                    'was dropped, not an offset between the inputs: no setting to change')
        return (f'{text}; no unused message of every input within the slop {slop_s:g} s: an '
                f'input is silent or slower, or sync.queue_size {queue_size} is too small for '
                'the delays between inputs')

    def first_sets_problem(self, slop_s: float) -> str | None:
        """Return why the first messages cannot pair (latest stamps beyond the slop), or None."""
        monitor = self.monitor
        if monitor is None or self.num_emitted or min(monitor.received) < 3:
            return None
        offsets = self.stamp_offsets()
        spread = max([0.0, *offsets.values()]) - min([0.0, *offsets.values()])
        if len(offsets) < len(self.topics) - 1 or spread < slop_s:
            return None
        described = ', '.join(f'{topic} {offset:+.3f} s' for topic, offset in offsets.items())
        needed = suggested_slop_s(round(spread * NS_PER_S))
        return (f'no synchronized set yet: latest stamps relative to {self.topics[0]}: '
                f'{described}; beyond sync.slop {slop_s:g} s: {slop_advice(needed)}')

    def destroy(self, node: Any) -> None:
        """Destroy the underlying subscriptions (no more messages are synchronized)."""
        for subscription in self.subscriptions:
            _destroy(node, subscription)
        self.subscriptions = []


def slop_advice(needed_s: float) -> str:
    """Say how to give the node the slop this data needs, as the launch file takes it."""
    return (f'this data needs sync.slop {needed_s:g}: put "sync.slop: {needed_s:g}" under '
            'ros__parameters in a copy of config/completion.yaml and launch with '
            'params_file:=<that copy> (a read-only parameter: a restart takes it)')


def create_synchronized_subscriptions(
        node: Any, topics: Sequence[tuple[type, str]], qos: Any, queue_size: int,
        slop_s: float, callback: Callable[..., None],
        prefer_message_filters: bool = True,
        on_time_jump: Callable[[str, int, int], None] | None = None,
        sync_views: Sequence[SyncView | None] = (),
        with_image: Sequence[int] = (),
        **subscription_options: Any) -> SynchronizedSubscriptions:
    """
    Subscribe ``node`` to ``topics`` (``(msg_type, topic)`` pairs) and synchronize them.

    ``callback`` receives one message per topic, in ``topics`` order. Uses
    ``message_filters.ApproximateTimeSynchronizer`` when it is importable and
    ``prefer_message_filters`` is set, else ``ApproximateTimeSync``. ``subscription_options``
    (e.g. ``qos_overriding_options``) go to every underlying subscription. With
    ``on_time_jump(topic, previous_ns, stamp_ns)``, a stamp going backwards on a topic is a
    time jump: the queued messages of the old timeline are dropped (counted as
    ``time_jump``) and the callback is told. ``sync_views[i]``, where given, maps input
    ``i``'s message to what the synchronizer pairs it by (a cloud at its sweep's middle:
    :func:`~lrda_ros.messages.sweep_stamp.at_sweep_middle`); ``callback`` gets the messages.
    ``with_image``: the inputs stamped as the first input's message (a camera_info as its
    image), whose loss without that image is counted as ``image_lost``.
    """
    validate_sync_settings(len(topics), queue_size, slop_s, callback)
    views = [*sync_views, *[None] * (len(topics) - len(sync_views))]
    callback = _unwrapping(callback)
    names = [topic for _, topic in topics]
    # The inputs status names each input as it is subscribed: remapped, in the namespace.
    monitor = _SyncMonitor([node.resolve_topic_name(topic) for topic in names])
    jump = None if on_time_jump is None else (
        lambda index, previous, stamp: on_time_jump(names[index], previous, stamp))
    if prefer_message_filters and message_filters_available():
        handle = _message_filters_subscriptions(node, topics, qos, queue_size, slop_s, callback,
                                                monitor, jump, views, subscription_options)
        if handle.dropped is not None:
            handle.dropped.losses.with_image = tuple(with_image)
        return handle

    synchronizer = ApproximateTimeSync(len(topics), queue_size, slop_s, callback,
                                       on_time_jump=jump)
    synchronizer.losses.with_image = tuple(with_image)

    def add(index: int, msg: Any) -> None:
        view = views[index]
        seen = msg if view is None else view(msg)
        monitor.on_message(index, seen)
        synchronizer.add(index, seen)

    subscriptions = _create_all(node, lambda index, msg_type, topic: node.create_subscription(
        msg_type, topic, lambda msg: add(index, msg), qos, **subscription_options), topics)
    return SynchronizedSubscriptions(BACKEND_BUILTIN, subscriptions, synchronizer, names,
                                     monitor)


def _message_filters_subscriptions(
        node: Any, topics: Sequence[tuple[type, str]], qos: Any, queue_size: int,
        slop_s: float, callback: Callable[..., None], monitor: _SyncMonitor,
        on_time_jump: TimeJumpCallback | None, views: Sequence[SyncView | None],
        subscription_options: dict[str, Any]) -> SynchronizedSubscriptions:
    import message_filters

    subscribers = _create_all(node, lambda _, msg_type, topic: message_filters.Subscriber(
        node, msg_type, topic, qos_profile=qos, **subscription_options), topics)
    # What the synchronizer and the loss tracking see: each input through its view, if any.
    inputs = [subscriber if view is None else _viewed(message_filters, subscriber, view)
              for subscriber, view in zip(subscribers, views)]
    dropped = _MessageFiltersLosses(len(topics), round(slop_s * NS_PER_S), on_time_jump)
    for index, source in enumerate(inputs):
        # Registered before the synchronizer's input, so this runs first on each message.
        source.registerCallback(lambda msg, index=index: dropped.before(index, msg))
    synchronizer = message_filters.ApproximateTimeSynchronizer(inputs, queue_size, slop_s)
    emit = monitor.counting(callback)

    def emit_and_note(*msgs: Any) -> None:
        dropped.emitted(msgs)
        emit(*msgs)

    synchronizer.registerCallback(emit_and_note)
    # A message_filters without queues and lock by stamp cannot tell its losses: left unknown.
    inspectable = all(getattr(synchronizer, name, None) is not None
                      for name in ('queues', 'lock'))
    if inspectable:
        dropped.synchronizer = synchronizer
    tracked = dropped if inspectable else None
    for index, source in enumerate(inputs):
        # Registered after the synchronizer's own input: sees what it has already done.
        source.registerCallback(lambda msg, index=index: _after(monitor, tracked, index, msg))
    return SynchronizedSubscriptions(BACKEND_MESSAGE_FILTERS, subscribers, synchronizer,
                                     [topic for _, topic in topics], monitor, tracked)


def _create_all(node: Any, create: Callable[[int, type, str], Any],
                topics: Sequence[tuple[type, str]]) -> list[Any]:
    """
    Return ``create(index, msg_type, topic)`` of every input, or none of them.

    A subscription that fails (a bad ``qos_overrides`` value) destroys those made before it:
    a failed start leaves no input subscribed.
    """
    made: list[Any] = []
    try:
        for index, (msg_type, topic) in enumerate(topics):
            made.append(create(index, msg_type, topic))
    except BaseException:
        for subscription in made:
            _destroy(node, subscription)
        raise
    return made


def _destroy(node: Any, subscription: Any) -> None:
    """Destroy an rclpy subscription (message_filters.Subscriber wraps one in ``sub``)."""
    node.destroy_subscription(getattr(subscription, 'sub', subscription))


def _after(monitor: _SyncMonitor, dropped: _MessageFiltersLosses | None, index: int,
           msg: Any) -> None:
    monitor.on_message(index, msg)
    if dropped is not None:
        dropped.after(index, msg)


def _unwrapping(callback: Callable[..., None]) -> Callable[..., None]:
    """Wrap ``callback`` to get the messages behind the synchronizer's views."""
    def call(*msgs: Any) -> None:
        callback(*[unwrap(msg) for msg in msgs])
    return call


def _viewed(message_filters: Any, source: Any, view: SyncView) -> Any:
    """Return a message_filters filter that passes ``source``'s messages on through ``view``."""
    viewed = message_filters.SimpleFilter()
    source.registerCallback(lambda msg: viewed.signalMessage(view(msg)))
    return viewed
