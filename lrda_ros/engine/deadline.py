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
Anytime optimization: stop the steps in time for a frame's deadline.

A frame's deadline is a ``time.monotonic()`` value. Before each optimizer step the completer
asks whether one more step plus the frame's finish (the final dense decode and its
alignment) still fits, using the durations last measured on this completer; when it does not,
the steps stop and the best iterate so far is returned, so a frame takes about its budget
whatever the hardware, and more steps fit as the hardware gets faster.
"""

from __future__ import annotations

from dataclasses import dataclass
import time


def deadline_in(seconds: float) -> float:
    """Return the deadline ``seconds`` from now (a ``time.monotonic()`` value)."""
    return time.monotonic() + seconds


@dataclass
class StepTimes:
    """The most recent durations (seconds) of one step and of a frame's finish."""

    step: float | None = None
    finish: float | None = None

    def finish_estimate(self) -> float:
        """Return the finish's duration; before it was ever measured, a step's (as long)."""
        if self.finish is not None:
            return self.finish
        return self.step or 0.0


class FrameDeadline:
    """One frame's deadline (or none) and the checks against it."""

    def __init__(self, deadline: float | None, times: StepTimes) -> None:
        self.deadline = deadline
        self.times = times
        #: Whether the deadline stopped the steps.
        self.reached = False
        self._step_started: float | None = None
        self._finish_started: float | None = None

    def another_step_fits(self) -> bool:
        """
        Record the step that just ended (if any); return whether one more and the finish fit.

        Called at the top of every iteration: the time since the previous call is one step.
        """
        now = time.monotonic()
        if self._step_started is not None:
            self.times.step = now - self._step_started
        self._step_started = now
        if self.deadline is None:
            return True
        if now + (self.times.step or 0.0) + self.times.finish_estimate() > self.deadline:
            self.reached = True
            return False
        return True

    def begin_finish(self) -> None:
        """Mark the start of the final decode."""
        self._finish_started = time.monotonic()

    def end_finish(self) -> None:
        """Record the duration of the final decode and alignment, for the next frames."""
        if self._finish_started is not None:
            self.times.finish = time.monotonic() - self._finish_started

    def second_decode_fits(self) -> bool:
        """Return whether one more dense decode (falling back to the best weights) fits."""
        if self.deadline is None:
            return True
        return time.monotonic() + self.times.finish_estimate() <= self.deadline
