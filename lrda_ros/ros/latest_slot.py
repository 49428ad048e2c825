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
One-item mailboxes between subscriber callbacks and the worker thread: newest frame wins.

When frames arrive faster than they are processed, older unprocessed frames are replaced (put
says so; the caller counts them), so latency and memory stay bounded instead of a queue growing
without limit.
"""

from __future__ import annotations

import threading
from typing import Generic, Sequence, TypeVar

K = TypeVar('K')
T = TypeVar('T')


class LatestSlot(Generic[T]):
    """Hold at most one pending item; ``put`` replaces an unconsumed one."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._item: T | None = None
        self._has_item = False
        self._closed = False

    def put(self, item: T) -> bool:
        """Offer an item; return True when it replaced one that was never taken."""
        with self._condition:
            replaced = self._has_item
            self._item, self._has_item = item, True
            self._condition.notify()
            return replaced

    def take(self, timeout: float | None = None) -> T | None:
        """Wait for and remove the pending item; None on timeout or after close."""
        with self._condition:
            self._condition.wait_for(lambda: self._has_item or self._closed, timeout)
            if not self._has_item:
                return None
            item, self._item, self._has_item = self._item, None, False
            return item

    def close(self) -> None:
        """Wake every waiter; later takes return None."""
        with self._condition:
            self._closed = True
            self._condition.notify_all()

    @property
    def closed(self) -> bool:
        """Return whether close was called."""
        return self._closed


class LatestSlots(Generic[K, T]):
    """
    One newest-wins slot per key (camera), taken together and served in turn.

    ``take_all`` returns every key's pending item at once, so one round serves each camera
    that has a frame exactly once: a fast or busy camera cannot starve a slower one. The key
    served first rotates from round to round, so no camera always waits behind the others.
    """

    def __init__(self, keys: Sequence[K]) -> None:
        self._condition = threading.Condition()
        self._order = list(keys)
        self._items: dict[K, T] = {}
        self._closed = False

    def put(self, key: K, item: T) -> bool:
        """Offer ``key``'s newest item; return True when it replaced one never taken."""
        with self._condition:
            replaced = key in self._items
            self._items[key] = item
            self._condition.notify()
            return replaced

    def take_all(self, timeout: float | None = None) -> list[tuple[K, T]]:
        """Wait for any item; remove and return all pending ones in serving order."""
        with self._condition:
            self._condition.wait_for(lambda: self._items or self._closed, timeout)
            taken = [(key, self._items.pop(key)) for key in self._order if key in self._items]
            if taken:
                self._order.append(self._order.pop(0))
            return taken

    def discard(self, key: K) -> None:
        """Drop ``key``'s pending item (stale once processing resumes)."""
        with self._condition:
            self._items.pop(key, None)

    def close(self) -> None:
        """Wake every waiter; later takes return nothing."""
        with self._condition:
            self._closed = True
            self._items.clear()
            self._condition.notify_all()
