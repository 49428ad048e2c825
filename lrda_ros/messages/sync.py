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
``message_filters.ApproximateTimeSynchronizer`` (ros2/message_filters) without ROS: rosbag
evaluation matches recorded messages with it, and the node uses it where message_filters is
not installed (:mod:`lrda_ros.ros.subscriptions`).
"""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any, Callable

from .stamps import header_stamp_ns, NS_PER_S
from .sync_losses import SyncLossTracker, TIME_JUMP
from ..errors import ConfigError


class InvalidSyncConfigError(ConfigError):
    """A synchronizer setting is out of its accepted range."""


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_sync_settings(num_inputs: int, queue_size: int, slop_s: float,
                           callback: Callable[..., None]) -> None:
    """Raise ``InvalidSyncConfigError`` for settings no synchronizer can use."""
    if not _is_integer(num_inputs) or num_inputs < 2:
        raise InvalidSyncConfigError(f'need at least 2 inputs to synchronize, got {num_inputs!r}',
                                     field='num_inputs')
    if not _is_integer(queue_size) or queue_size < 1:
        raise InvalidSyncConfigError(f'queue_size must be an integer >= 1, got {queue_size!r}',
                                     field='queue_size')
    if not isinstance(slop_s, (int, float)) or not 0 <= slop_s < float('inf'):
        raise InvalidSyncConfigError(f'slop_s must be a finite number >= 0, got {slop_s!r}',
                                     field='slop_s')
    if not callable(callback):
        raise InvalidSyncConfigError(f'callback must be callable, got {callback!r}',
                                     field='callback')


#: Called with (input index, previous newest stamp, new stamp) when an input's stamp goes back.
TimeJumpCallback = Callable[[int, int, int], None]


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

    Every dropped message is counted by reason (:mod:`~lrda_ros.messages.sync_losses`):
    ``losses`` holds the counts and offsets; :meth:`flush` drops (and counts) what is still
    queued when a stream ends. Unlike message_filters, a queued message that can no longer
    pair (every other input moved past it, one without a partner for it:
    :meth:`~lrda_ros.messages.sync_losses.SyncLossTracker.unpairable`) is dropped and counted
    at once instead of staying queued until pushed out; the sets emitted are the same. A
    stamp older than its input's previous one is counted in ``losses.time_jumps``; with
    ``on_time_jump`` it is a time jump (a bag loop, a clock reset), unlike in message_filters:
    queued messages after the new stamp (plus the slop) belong to the old timeline and are
    dropped, so they cannot crowd out the new one, and ``on_time_jump(index, previous_ns,
    stamp_ns)`` is called outside the lock.

    ``add`` is thread-safe; the callback runs outside the internal lock, so it may call
    back into this object. Callbacks from concurrent ``add`` calls may interleave.
    Messages without ``header.stamp`` are rejected and counted unless
    ``allow_headerless``, which stamps them with ``now_ns()`` (wall clock by default).
    """

    def __init__(self, num_inputs: int, queue_size: int, slop_s: float,
                 callback: Callable[..., None], allow_headerless: bool = False,
                 now_ns: Callable[[], int] = time.time_ns,
                 on_time_jump: TimeJumpCallback | None = None) -> None:
        validate_sync_settings(num_inputs, queue_size, slop_s, callback)
        self._queues: list[dict[int, Any]] = [{} for _ in range(num_inputs)]
        self._queue_size = queue_size
        self._slop_ns = round(slop_s * NS_PER_S)
        self._callback = callback
        self._allow_headerless = allow_headerless
        self._now_ns = now_ns
        self._on_time_jump = on_time_jump
        self._lock = threading.Lock()
        self._num_emitted = 0
        self._num_rejected_headerless = 0
        #: Dropped messages by reason, with their offsets (read under ``lock``).
        self.losses = SyncLossTracker(num_inputs, self._slop_ns)

    @property
    def num_inputs(self) -> int:
        return len(self._queues)

    @property
    def lock(self) -> threading.Lock:
        """Return the lock guarding the queues and ``losses``."""
        return self._lock

    @property
    def num_emitted(self) -> int:
        """Count the synchronized sets passed to the callback."""
        with self._lock:
            return self._num_emitted

    @property
    def num_evicted(self) -> int:
        """Count messages dropped unused, for any reason."""
        with self._lock:
            return sum(self.losses.counts.values())

    @property
    def num_rejected_headerless(self) -> int:
        with self._lock:
            return self._num_rejected_headerless

    def add(self, index: int, msg: Any) -> None:
        """Add ``msg`` to input ``index``; call the callback if it completes a set."""
        if not 0 <= index < len(self._queues):
            raise IndexError(f'input index {index} out of range 0..{len(self._queues) - 1}')
        stamp = header_stamp_ns(msg)
        jumped_from = None
        with self._lock:
            if stamp is None:
                if not self._allow_headerless:
                    self._num_rejected_headerless += 1
                    return
                stamp = int(self._now_ns())
            previous = self.losses.seen(index, stamp)
            if previous is not None and self._on_time_jump is not None:
                jumped_from = previous
                self._drop_after(index, stamp + self._slop_ns)
            matched = self._insert_and_match(index, stamp, msg)
            if matched is not None:
                self._num_emitted += 1
            self._drop_unpairable()
        if jumped_from is not None:
            self._on_time_jump(index, jumped_from, stamp)
        if matched is not None:
            self._callback(*matched)

    def flush(self) -> None:
        """Drop and count every queued message (the streams ended: none can pair any more)."""
        with self._lock:
            for index, queue in enumerate(self._queues):
                for stamp in sorted(queue):
                    self.losses.lost(index, stamp)
                queue.clear()

    def _drop_unpairable(self) -> None:
        """Drop and count queued messages that can no longer pair (a late cloud, say)."""
        for index, stamp in self.losses.unpairable(self._queues):
            del self._queues[index][stamp]
            self.losses.lost(index, stamp)

    def _drop_after(self, index: int, limit_ns: int) -> None:
        """Drop the queued messages of the old timeline at ``index``'s time jump."""
        for other, stamp in self.losses.old_timeline(index, self._queues, limit_ns):
            del self._queues[other][stamp]
            self.losses.lost(other, stamp, TIME_JUMP)
        self.losses.forget_after(index, limit_ns)

    def _insert_and_match(self, index: int, stamp: int, msg: Any) -> list[Any] | None:
        """Queue ``msg`` and return the first matching set (removed from queues), if any."""
        queue = self._queues[index]
        if stamp in queue:
            self.losses.lost(index, stamp)
        queue[stamp] = msg
        while len(queue) > self._queue_size:
            oldest = min(queue)
            del queue[oldest]
            self.losses.lost(index, oldest)
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
                self.losses.used(stamps)
                return [q.pop(s) for q, s in zip(self._queues, stamps)]
        return None
