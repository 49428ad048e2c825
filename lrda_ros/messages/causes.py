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
The one name of every counted cause of a lost message or frame, in log lines and /diagnostics.

A cause is shown as ``<counter> (<cause>)``: ``unsynchronized (beyond_slop)`` for what the
synchronizer dropped, ``dropped (superseded)`` or ``dropped (malformed)`` for frames,
``stamp_backwards (<input>)`` for time jumps per input topic, ``missing (<input>)`` for frames
the synchronizer dropped because that input had no message (which of several point clouds).
The /diagnostics key is that name, and each warning starts with it (:func:`cause_line`), so a
log line leads to its counter.
"""

from __future__ import annotations

from .sync_losses import BEYOND_SLOP, IMAGE_LOST, NO_PARTNER, SUPERSEDED, TIME_JUMP

UNSYNCHRONIZED = 'unsynchronized'
DROPPED = 'dropped'
STAMP_BACKWARDS = 'stamp_backwards'
MISSING = 'missing'
#: Causes counted per input topic, the subject: ``<cause> (<input>)``.
PER_INPUT = (STAMP_BACKWARDS, MISSING)
#: The synchronizer's losses, each counted per input message (not per frame).
SYNC_LOSS_REASONS = (BEYOND_SLOP, NO_PARTNER, IMAGE_LOST, TIME_JUMP)
#: The counter each cause is shown under; any other cause is a dropped frame's.
COUNTERS = {**dict.fromkeys(SYNC_LOSS_REASONS, UNSYNCHRONIZED), SUPERSEDED: DROPPED}


def cause_name(cause: str, subject: str = '') -> str:
    """
    Return the name of ``cause``: its /diagnostics key and the start of its warnings.

    ``subject`` is the input topic of the causes counted per input (:data:`PER_INPUT`).
    """
    if cause in PER_INPUT:
        return f'{cause} ({subject})'
    return f'{COUNTERS.get(cause, DROPPED)} ({cause})'


def cause_line(cause: str, count: int, text: str, subject: str = '') -> str:
    """Return a warning about ``cause``: its name, the count so far, then ``text``."""
    return f'{cause_name(cause, subject)}, {count} so far: {text}'
