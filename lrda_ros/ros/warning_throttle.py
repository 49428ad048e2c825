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

"""Warnings rate-limited per cause: the first at once, then at most one a minute with a count."""

from __future__ import annotations

from collections import Counter
import threading
import time
from typing import Callable

#: Seconds between two warnings of one cause: a looped replay repeats its causes every loop.
WARNING_INTERVAL_S = 60.0


class WarningThrottle:
    """
    Log the first warning of each cause at once, then at most one per ``interval_s``.

    A warning logged after others of its cause were held back says how many, per subject (the
    input a cause counted per input was about), so a count never covers more than the line
    names; the counters on /diagnostics have every one. Thread-safe: subscriber callbacks and
    the worker warn.
    """

    def __init__(self, log: Callable[[str], None], interval_s: float = WARNING_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._log = log
        self._interval_s = interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._logged_at: dict[str, float] = {}
        self._held: dict[str, Counter[str]] = {}

    def warn(self, cause: str, message: str, subject: str = '') -> bool:
        """
        Log ``message`` unless ``cause`` was logged within the interval; return if it was.

        ``subject``: what the message is about within its cause (an input topic), by which the
        held-back warnings are counted.
        """
        now = self._clock()
        with self._lock:
            last = self._logged_at.get(cause)
            if last is not None and now - last < self._interval_s:
                self._held.setdefault(cause, Counter())[subject] += 1
                return False
            self._logged_at[cause] = now
            held = self._held.pop(cause, Counter())
        if held:
            message += f' ({held_back_text(held)}; /diagnostics counts each)'
        self._log(message)
        return True


def held_back_text(held: Counter[str]) -> str:
    """Say how many warnings were held back, per subject when they have one."""
    total = sum(held.values())
    plural = 's' if total != 1 else ''
    text = f'{total} more warning{plural} of this cause held back since the last one'
    if set(held) == {''}:
        return text
    return text + ': ' + ', '.join(f'{n} on {subject or "others"}'
                                   for subject, n in sorted(held.items()))
