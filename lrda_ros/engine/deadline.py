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
asks whether one more step, the steps still in flight on the device and the frame's finish
(the final dense decode and its alignment) still fit, using the durations last measured on
this completer (read from the device a step or two late, never by waiting for a step:
engine/lookahead.py); when they do not,
the steps stop and the best iterate so far is returned, so a frame takes about its budget
whatever the hardware, and more steps fit as the hardware gets faster.
"""

from __future__ import annotations

from dataclasses import dataclass
import time
from typing import Sequence

#: Factor applied to the step estimates on each frame where no step fits.
STALE_ESTIMATE_DECAY = 0.8


def deadline_in(seconds: float) -> float:
    """Return the deadline ``seconds`` from now (a ``time.monotonic()`` value)."""
    return time.monotonic() + seconds


@dataclass
class StepTimes:
    """
    The most recent durations (seconds) of a frame's first step, a later step and its finish.

    A frame's first step also builds the frame's caches (sampling matrices, kernel choices
    for a new shape), so it is planned with its own duration, not taken for every step's.
    """

    first_step: float | None = None
    step: float | None = None
    finish: float | None = None

    def decay(self, factor: float, first_step: bool, step: bool) -> None:
        """Scale step estimates down (they are measured again when a step runs)."""
        if first_step and self.first_step is not None:
            self.first_step *= factor
        if step and self.step is not None:
            self.step *= factor

    def step_estimate(self, first: bool) -> float:
        """Return the duration to plan for the frame's first or a later step (0 unknown)."""
        known = [t for t in ((self.first_step, self.step) if first else
                             (self.step, self.first_step)) if t is not None]
        return known[0] if known else 0.0

    def finish_estimate(self) -> float:
        """Return the finish's duration; before it was ever measured, a step's (as long)."""
        if self.finish is not None:
            return self.finish
        return self.step_estimate(first=False)


class FrameDeadline:
    """One frame's deadline (or none) and the checks against it."""

    def __init__(self, deadline: float | None, times: StepTimes) -> None:
        self.deadline = deadline
        self.times = times
        #: Whether the deadline stopped the steps.
        self.reached = False
        #: Steps started in this frame (including the one a True answer starts).
        self._steps = 0
        #: Steps whose duration has been recorded.
        self._timed = 0
        self._finish_started: float | None = None

    def another_step_fits(self, ended: Sequence[float] = (), in_flight: int = 0) -> bool:
        """
        Record the steps that ended; return whether one more, those in flight and the finish fit.

        Called before every step. ``ended``: the durations of the steps whose end the host has
        read since the last call (engine/lookahead.py: at once on the CPU, a step or two late
        on CUDA, read without waiting); ``in_flight``: the steps queued whose end it has not.
        """
        for seconds in ended:
            if self._timed == 0:
                self.times.first_step = seconds
            else:
                self.times.step = seconds
            self._timed += 1
        now = time.monotonic()
        self._steps += 1
        if self.deadline is None:
            return True
        # The steps in flight and the next one, each planned as the first or a later step.
        queued = range(self._steps - 1 - in_flight, self._steps)
        steps = sum(self.times.step_estimate(first=index == 0) for index in queued)
        if now + steps + self.times.finish_estimate() > self.deadline:
            self.reached = True
            if self._steps <= 2:
                # The estimate that refused was not measured in this frame and, with the
                # step not run, will not be: let a stale one (a slow step on a busy
                # machine) decay, or it would stop every later frame at the same point.
                self.times.decay(STALE_ESTIMATE_DECAY, first_step=self._steps == 1, step=True)
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
