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
Header stamps (``builtin_interfaces/Time``) as integer nanoseconds: the one conversion.

Duck-typed: any object with integer ``sec`` and ``nanosec`` (rclpy messages, the dataclasses
``rosbags`` deserializes, ``SimpleNamespace``) is a stamp.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

NS_PER_S = 1_000_000_000


def sec_nanosec_to_ns(sec: int, nanosec: int) -> int:
    """Return the nanoseconds of a stamp's (``sec``, ``nanosec``) fields."""
    return int(sec) * NS_PER_S + int(nanosec)


def stamp_to_ns(stamp: Any) -> int:
    """Return a stamp (``sec``, ``nanosec``) as integer nanoseconds."""
    return sec_nanosec_to_ns(stamp.sec, stamp.nanosec)


def header_stamp_ns(msg: Any) -> int | None:
    """Return ``msg.header.stamp`` in nanoseconds, or None when the message has no header."""
    stamp = getattr(getattr(msg, 'header', None), 'stamp', None)
    return None if stamp is None else stamp_to_ns(stamp)


def ns_to_sec_nanosec(stamp_ns: int) -> tuple[int, int]:
    """Split nanoseconds into the (``sec``, ``nanosec``) fields of a stamp."""
    return int(stamp_ns) // NS_PER_S, int(stamp_ns) % NS_PER_S


def stamp_from_ns(stamp_ns: int) -> SimpleNamespace:
    """Return a duck-typed stamp for nanoseconds (build a message's own Time with the fields)."""
    sec, nanosec = ns_to_sec_nanosec(stamp_ns)
    return SimpleNamespace(sec=sec, nanosec=nanosec)


def stamp_text(stamp: Any) -> str:
    """Return a stamp as 'sec.nanosec', nine fraction digits (frame names in reports)."""
    return f'{int(stamp.sec)}.{int(stamp.nanosec):09d}'


def stamp_error(stamp: Any) -> str | None:
    """Return why a stamp is unusable (``builtin_interfaces/Time`` rules), or None."""
    if stamp.sec < 0:
        return f'negative stamp {stamp_text(stamp)}'
    if not 0 <= stamp.nanosec < NS_PER_S:
        return f'stamp nanosec {stamp.nanosec} is not in [0, 1e9)'
    return None


#: The most a frame's latency (s) can plausibly be, either way: a stamp further from the
#: node's clock is from another clock (a recording replayed without its /clock).
PLAUSIBLE_LATENCY_S = 60.0
#: How far (s) a stamp may lie ahead of the node's clock and still be of the same clock: hosts
#: synchronized over a network (NTP on a LAN keeps them within about 1 ms, PTP much closer)
#: stamp on one machine and read the clock on another. 5 ms covers that offset with a
#: margin and is still far below a frame period (100 ms at 10 Hz), so a replay's clock that
#: went back by a frame or more never passes as an offset.
CLOCK_OFFSET_TOLERANCE_S = 0.005


def latency_or_reason(now_ns: int, stamp_ns: int) -> tuple[float | None, str]:
    """
    Return (the latency now - stamp in seconds, '') or (None, why there is none).

    A latency is only told where the stamp is from the node's clock: the same wall clock, or
    the simulated clock a replay publishes (``lrda play --clock`` with ``use_sim_time``).
    It is never negative: a stamp within ``CLOCK_OFFSET_TOLERANCE_S`` ahead of the clock
    is the clocks' offset (latency 0); further ahead it has none (a looped replay's /clock
    went back to the bag's start while the frame of the loop's end was processed).
    """
    latency = (int(now_ns) - int(stamp_ns)) / NS_PER_S
    if abs(latency) > PLAUSIBLE_LATENCY_S:
        return None, (f'none: the stamps are {latency:+.3g} s from the node clock, from '
                      'another clock (a replay needs lrda play --clock and use_sim_time:=true)')
    if latency < -CLOCK_OFFSET_TOLERANCE_S:
        return None, (f'none: the stamp is {-latency:.3f} s ahead of the node clock (clocks '
                      "not synchronized, or a replay's clock jumped back)")
    return max(latency, 0.0), ''
