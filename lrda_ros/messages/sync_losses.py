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
Why messages left a synchronizer without a set: counted per reason, with the stamp offsets.

A message is lost when its synchronizer drops it (pushed out of a full queue, replaced by one
with the same stamp, discarded at a time jump, still queued when a recording ends, or queued
where it can no longer pair: :meth:`SyncLossTracker.unpairable`). It is classified against the
other inputs' recent messages that no set used:

- ``beyond_slop``: every other input had an unused message within :data:`PARTNER_RANGE_S`,
  but their stamps were too far apart for the slop: the sensors' stamps are offset, and a
  larger slop (:func:`suggested_slop_s`) pairs them.
- ``no_partner``: some other input had no unused message in range (silent, slower, or its
  nearby messages went to other sets), or the partners were within the slop but never met in
  the queues (raise the queue size).
- ``image_lost``: a message stamped as its image (a camera_info) whose image never reached the
  synchronizer, or was forgotten at a time jump, and the other inputs' messages of that frame
  (its cloud, within the slop of such a camera_info): the image was lost upstream
  (transport, a replay), not paired beyond the slop; no slop advice
  (:attr:`SyncLossTracker.with_image`).
- ``time_jump``: a stamp went back (a bag loop, a restarted recording, a clock reset): the
  message belonged to the old timeline, or was lost while the inputs were on different
  timelines. Its offsets are the jump, not an offset between sensors: no slop advice.

A ``no_partner`` loss of the first input (the image: what makes a frame) is also counted
against each input that had no message in range (:attr:`SyncLossTracker.missing`): with
several point clouds, which cloud the lost frame waited for.

The node adds ``superseded`` itself: a synchronized set replaced by a newer one before it was
processed (its worker was busy).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
import math
from typing import Any, Mapping, Sequence

from .stamps import NS_PER_S

BEYOND_SLOP = 'beyond_slop'
NO_PARTNER = 'no_partner'
IMAGE_LOST = 'image_lost'
TIME_JUMP = 'time_jump'
SUPERSEDED = 'superseded'
#: Every reason a message or a set is lost, in the order reports list them.
LOSS_REASONS = (BEYOND_SLOP, NO_PARTNER, IMAGE_LOST, TIME_JUMP, SUPERSEDED)
#: How close (ns) a message's stamp must be to an image's to be that image's (a camera_info).
SAME_STAMP_NS = 1_000_000
#: How far (s) another input's message may be from a lost one and still count as its partner;
#: at least ten slops.
PARTNER_RANGE_S = 1.0
#: Recent stamps remembered per input for classifying.
HISTORY_LENGTH = 64


@dataclass(frozen=True)
class SyncLoss:
    """One message a synchronizer dropped, why, and where the other inputs' stamps were."""

    reason: str
    index: int
    stamp_ns: int
    #: Per input, the nearest unused message's stamp minus this one's (ns); 0 for this input,
    #: None where that input had none in range.
    offsets_ns: tuple[int | None, ...]

    @property
    def spread_ns(self) -> int | None:
        """Return the stamp spread of the nearest partners (None when one is missing)."""
        if any(offset is None for offset in self.offsets_ns):
            return None
        return max(self.offsets_ns) - min(self.offsets_ns)


def suggested_slop_s(spread_ns: int) -> float:
    """Return a slop that pairs stamps ``spread_ns`` apart, with a fifth more for jitter."""
    # Rounded up to 10 ms: a value a user types; the matching rule wants spread < slop.
    return max(0.01, math.ceil(spread_ns * 1.2 / (NS_PER_S / 100)) / 100)


def describe_loss(loss: SyncLoss, topics: Sequence[str]) -> str:
    """Describe a lost message: its topic and stamp, and each other input's nearest offset."""
    others = ', '.join(
        f'{topic} ' + ('none in range' if offset is None else f'{offset / NS_PER_S:+.3f} s')
        for index, (topic, offset) in enumerate(zip(topics, loss.offsets_ns))
        if index != loss.index)
    return f'{topics[loss.index]} at {loss.stamp_ns / NS_PER_S:.3f} s: nearest {others}'


class SyncLossTracker:
    """
    Remember recent stamps per input and classify the ones a synchronizer drops.

    Not thread-safe: the synchronizer calls it under its own lock. ``seen`` also notices a
    stamp going backwards on an input (a bag loop, a clock reset): the caller then discards
    what it queued from the old timeline (:meth:`old_timeline`, :meth:`forget_after`). Until
    every input ahead of the jump has jumped too, or the new timeline has caught up with it,
    the inputs straddle two timelines: their stamps pass nothing on the new one, and every
    loss is ``time_jump``, never an offset beyond the slop.
    """

    def __init__(self, num_inputs: int, slop_ns: int) -> None:
        self.slop_ns = int(slop_ns)
        self.partner_range_ns = max(int(PARTNER_RANGE_S * NS_PER_S), 10 * self.slop_ns)
        #: Per input: stamp -> whether a set used it, oldest first.
        self._recent: list[dict[int, bool]] = [{} for _ in range(num_inputs)]
        self._newest: list[int | None] = [None] * num_inputs
        #: Per input, the newest stamp since the last time jump on any input (None: none yet):
        #: what :meth:`unpairable` compares with, never a stamp of an older timeline.
        self._reach: list[int | None] = [None] * num_inputs
        #: Inputs still on the old timeline after another one's time jump -> their newest
        #: stamp there; while any is left, losses are the jump's (``time_jump``).
        self._stale: dict[int, int] = {}
        #: Inputs that jumped while others were still on the old timeline: on the new one.
        self._jumped: set[int] = set()
        self.counts: Counter[str] = Counter()
        #: Times a stamp went backwards, per input index.
        self.time_jumps: Counter[int] = Counter()
        #: The latest loss of each reason.
        self.last: dict[str, SyncLoss] = {}
        #: The largest spread among ``beyond_slop`` losses (ns): what the slop must exceed.
        self.largest_spread_ns = 0
        #: Per input index, first-input messages lost without a message of that input in range,
        #: and the latest such loss.
        self.missing: Counter[int] = Counter()
        self.last_missing: dict[int, SyncLoss] = {}
        #: Inputs stamped as the first input's message they go with (a camera_info with its
        #: image): lost without that image, they are ``image_lost``.
        self.with_image: tuple[int, ...] = ()

    def seen(self, index: int, stamp_ns: int) -> int | None:
        """Note a message; return the input's newest earlier stamp when this one is older."""
        newest = self._newest[index]
        recent = self._recent[index]
        recent.pop(stamp_ns, None)  # a repeated stamp is a new, unused message
        recent[stamp_ns] = False
        while len(recent) > HISTORY_LENGTH:
            del recent[next(iter(recent))]
        if newest is not None and stamp_ns < newest:
            self.time_jumps[index] += 1
            self._newest[index] = stamp_ns
            if not self._stale:  # the first input to jump: the others are behind it
                self._jumped = set()
            self._stale.pop(index, None)
            self._jumped.add(index)
            # Ahead of the new stamp and not jumped yet: still on the old timeline.
            self._stale.update({other: stamp for other, stamp in enumerate(self._newest)
                                if stamp is not None and other not in self._jumped
                                and stamp > stamp_ns + self.slop_ns})
            # The other inputs are still on the old timeline: until they send on the new
            # one, nothing on it may look unpairable for being behind them.
            self._reach = [None] * len(self._reach)
            self._reach[index] = stamp_ns
            return newest
        self._newest[index] = stamp_ns
        if index in self._stale:
            self._stale[index] = stamp_ns
        self._end_stale()
        if index not in self._stale:  # an old timeline's stamps pass nothing on the new one
            self._reach[index] = stamp_ns
        return None

    def _end_stale(self) -> None:
        """Take back an input whose old timeline the others caught up with (it never jumped)."""
        live = [stamp for index, stamp in enumerate(self._newest)
                if stamp is not None and index not in self._stale]
        self._stale = {index: end for index, end in self._stale.items()
                       if not any(stamp >= end - self.slop_ns for stamp in live)}

    def used(self, stamps_ns: Sequence[int]) -> None:
        """Note a synchronized set (one stamp per input, in input order)."""
        for recent, stamp in zip(self._recent, stamps_ns):
            recent[stamp] = True

    def lost(self, index: int, stamp_ns: int, reason: str | None = None) -> SyncLoss:
        """Classify (unless ``reason`` is given), count and return a dropped message."""
        offsets = tuple(0 if other == index else self._nearest_unused(other, stamp_ns)
                        for other in range(len(self._recent)))
        if reason is None and self._stale:
            reason = TIME_JUMP  # the inputs are on two timelines: no offset between sensors
        if reason is None and self._lost_image(index, stamp_ns):
            reason = IMAGE_LOST
        loss = SyncLoss(reason or NO_PARTNER, index, stamp_ns, offsets)
        spread = loss.spread_ns
        if reason is None and spread is not None and spread >= self.slop_ns:
            loss = SyncLoss(BEYOND_SLOP, index, stamp_ns, offsets)
            self.largest_spread_ns = max(self.largest_spread_ns, spread)
        self.counts[loss.reason] += 1
        self.last[loss.reason] = loss
        if loss.reason == NO_PARTNER and index == 0:
            for other, offset in enumerate(offsets):
                if offset is None:
                    self.missing[other] += 1
                    self.last_missing[other] = loss
        return loss

    def unpairable(self, queues: Sequence[Mapping[int, Any]]) -> list[tuple[int, int]]:
        """
        Return the queued (input, stamp) pairs that can no longer be part of a set.

        ``queues``: each input's queued stamps (a synchronizer's queues, keyed by stamp). A
        message pairs only with a message of every other input within the slop, and an
        input's stamps only grow (a stamp going back is a time jump, after which only stamps
        of the new timeline count). Once every other input's newest stamp is past it by more
        than the slop, a message that lacks a queued partner on one of them never pairs. Left
        queued, such a message (a cloud stamped late, say) is counted only if its queue
        overflows, which it need not ever do. Waiting for every other input, not only the one
        without a partner, keeps a stray stamp on one input (a cloud stamped ahead, then back)
        from dropping good messages. In input order, oldest first, as the synchronizers drop
        them.
        """
        found = []
        for index, queue in enumerate(queues):
            others = [other for other in range(len(queues)) if other != index]
            for stamp in sorted(queue):
                if (all(self._passed(other, stamp) for other in others)
                        and not all(self._partner_queued(queues[other], stamp)
                                    for other in others)):
                    found.append((index, stamp))
        return found

    def _passed(self, index: int, stamp_ns: int) -> bool:
        """Return whether input ``index``'s newest stamp is past ``stamp_ns`` beyond the slop."""
        newest = self._reach[index]
        return newest is not None and newest - stamp_ns > self.slop_ns

    def _partner_queued(self, queue: Mapping[int, Any], stamp_ns: int) -> bool:
        """Return whether ``queue`` holds a stamp within the slop of ``stamp_ns``."""
        return any(abs(queued - stamp_ns) <= self.slop_ns for queued in queue)

    def old_timeline(self, index: int, queues: Sequence[Mapping[int, Any]],
                     limit_ns: int) -> list[tuple[int, int]]:
        """
        Return the queued (input, stamp) pairs of the old timeline at input ``index``'s jump.

        Stamps after ``limit_ns`` on ``index`` and on the inputs still on the old timeline;
        an input that jumped before is on the new timeline already and keeps its queue.
        """
        return [(other, stamp) for other in sorted({index, *self._stale})
                for stamp in sorted(queues[other]) if stamp > limit_ns]

    def forget_after(self, index: int, limit_ns: int) -> None:
        """Forget stamps after ``limit_ns`` of the old timeline at input ``index``'s jump."""
        for other in {index, *self._stale}:
            recent = self._recent[other]
            for stamp in [s for s in recent if s > limit_ns]:
                del recent[stamp]

    def summary(self, topics: Sequence[str]) -> dict:
        """
        Return the counts as a report records them (JSON-ready), naming ``topics``.

        ``suggested_slop_s`` is set when messages were lost beyond the slop; ``missing``
        counts per topic the frames (first-input messages) lost without a message of that
        topic in range; ``examples`` has the latest loss of each reason, described by
        :func:`describe_loss`.
        """
        spread = self.largest_spread_ns
        return {
            **{reason: self.counts[reason] for reason in LOSS_REASONS},
            'stamp_backwards': {topics[i]: n for i, n in sorted(self.time_jumps.items())},
            'missing': {topics[i]: n for i, n in sorted(self.missing.items())},
            'largest_offset_s': spread / NS_PER_S if spread else None,
            'suggested_slop_s': suggested_slop_s(spread) if spread else None,
            'examples': {reason: describe_loss(loss, topics)
                         for reason, loss in self.last.items()},
        }

    def _lost_image(self, index: int, stamp_ns: int) -> bool:
        """Return whether a lost message's frame lacks only its image (see ``image_lost``)."""
        if index == 0 or not self.with_image:
            return False
        if index in self.with_image:
            return not self._image_seen(stamp_ns)
        return any(not used and abs(stamp - stamp_ns) <= self.slop_ns
                   and not self._image_seen(stamp)
                   for other in self.with_image for stamp, used in self._recent[other].items())

    def _image_seen(self, stamp_ns: int) -> bool:
        """Return whether the first input (the image) had a message at ``stamp_ns``."""
        return any(abs(stamp - stamp_ns) <= SAME_STAMP_NS for stamp in self._recent[0])

    def _nearest_unused(self, index: int, stamp_ns: int) -> int | None:
        offsets = [s - stamp_ns for s, used in self._recent[index].items()
                   if not used and abs(s - stamp_ns) <= self.partner_range_ns]
        return min(offsets, key=abs) if offsets else None
