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
How far the host queues optimization steps ahead of the device: a bounded lookahead.

After each step its stop flag (a boolean device tensor) is copied to host memory without
blocking, and an event is recorded behind the copy. Before queueing step ``i`` the host
waits, if it must, for step ``i - LOOKAHEAD``'s event, then reads every flag that has landed.
Without the bound, a GPU replaying cheap graphs lets the host queue a whole stage before the
first flag lands, and a frame that plateaus at step 15 runs all its later steps masked: device
time spent on nothing. With it, at most ``LOOKAHEAD - 1`` masked steps run past a stop, and the
device still has a step queued while the host prepares the next.

The same events time the steps as the device ran them (engine/deadline.py plans with these
durations): a step's duration is read once its event has passed, a step or two late, never
with a synchronization of its own. On the CPU a step has finished when the host goes on: the
flags are read at once and the durations come from the host clock.
"""

from __future__ import annotations

import time

import torch

#: Steps the host may queue past the newest stop flag it has read.
LOOKAHEAD = 2


class StepPosts:
    """The steps' posted stop flags and end marks (events on CUDA, host times on the CPU)."""

    def __init__(self, device: torch.device, lookahead: int = LOOKAHEAD) -> None:
        if lookahead < 1:
            raise ValueError(f'lookahead must be >= 1, got {lookahead}')
        self.lookahead = lookahead
        self._cuda = device.type == 'cuda'
        # A slot per step that can be posted and not yet read, plus the one being posted.
        slots = lookahead + 1
        self._hosts = [torch.ones((), dtype=torch.bool, pin_memory=self._cuda)
                       for _ in range(slots)]
        self._views = [host.numpy() for host in self._hosts]
        self._marks: list = [None] * slots
        self.reset()

    def reset(self) -> None:
        """Start a new run of steps: nothing posted, the start marked now."""
        #: Steps posted, and steps whose flag and duration the host has read.
        self.posted = 0
        self.read = 0
        self._start = self._mark()
        self._durations: list[float] = []
        self._stopped = False

    def _mark(self):
        if not self._cuda:
            return time.monotonic()
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def post(self, flag: torch.Tensor) -> None:
        """Queue the copy of step ``posted``'s stop flag (True: the steps go on) and its mark."""
        slot = self.posted % len(self._hosts)
        self._hosts[slot].copy_(flag, non_blocking=self._cuda)
        self._marks[slot] = self._mark()
        self.posted += 1

    def _landed(self, step: int) -> bool:
        return not self._cuda or self._marks[step % len(self._marks)].query()

    def _wait(self, step: int) -> None:
        if self._cuda:
            self._marks[step % len(self._marks)].synchronize()

    def settle(self, next_step: int) -> bool:
        """
        Before queueing ``next_step``: bound the lookahead, read what landed; return stopped.

        Waits only for step ``next_step - lookahead`` (if it has not finished yet).
        """
        bound = next_step - self.lookahead
        if self.read <= bound < self.posted:
            self._wait(bound)
        while self.read < self.posted and self._landed(self.read):
            slot = self.read % len(self._marks)
            before = self._start if self.read == 0 else self._marks[
                (self.read - 1) % len(self._marks)]
            mark = self._marks[slot]
            self._durations.append(before.elapsed_time(mark) / 1000 if self._cuda
                                   else mark - before)
            self._stopped = self._stopped or not bool(self._views[slot][()])
            self.read += 1
        return self._stopped

    @property
    def in_flight(self) -> int:
        """Return the steps queued whose end the host has not read yet."""
        return self.posted - self.read

    def take_durations(self) -> list[float]:
        """Return the durations (seconds) of the steps read since the last call, in order."""
        durations, self._durations = self._durations, []
        return durations
