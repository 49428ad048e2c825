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
The instant a cloud is paired with an image by: the middle of its sweep.

Drivers stamp a sweep at its start (ouster-ros, Autoware's nebula) or at its end (the Velodyne
driver's default), and an untriggered camera can fall anywhere in the sweep. Paired by header
stamps, a camera 60 ms into a scan-start-stamped sweep is 60 ms from its cloud and 40 ms from
the next one; paired by the sweep's middle, every camera instant is within half a sweep of the
sweep that spans it (50 ms at 10 Hz), so one slop serves every driver and camera phase. The
middle comes from the cloud's own point times (its driver's time field) or, without one, from
the azimuth sweep the node is configured with; a cloud that says neither is paired by its
header stamp. The synchronizer sees a :class:`SweepStamped` view; :func:`unwrap` gives the
message back.
"""

from __future__ import annotations

from dataclasses import dataclass
import math
from types import SimpleNamespace
from typing import Any

import numpy as np

from .conversions import MalformedMessageError
from .point_times import AzimuthSweep, find_time_layout, point_times
from .stamps import header_stamp_ns, ns_to_sec_nanosec, stamp_from_ns
from .sweep_alignment import MotionConfig


@dataclass(frozen=True, eq=False)
class SweepStamped:
    """A cloud as the synchronizer sees it: ``header.stamp`` is its sweep's middle."""

    message: Any
    header: Any
    #: The sweep's middle minus the cloud's header stamp (ns).
    offset_ns: int


def azimuth_middle_s(sweep: AzimuthSweep) -> float:
    """Return the middle of an azimuth sweep, seconds from the cloud's stamp."""
    sense = -1.0 if sweep.clockwise else 1.0
    # Turned from the sweep's start to the stamp's azimuth, as point_times.azimuth_times does.
    stamp_turned = math.fmod(sense * math.radians(sweep.stamp_azimuth_deg
                                                  - sweep.start_azimuth_deg),
                             2.0 * math.pi) % (2.0 * math.pi)
    return (math.pi - stamp_turned) * sweep.period_s / (2.0 * math.pi)


def sweep_middle_offset_ns(cloud: Any, config: MotionConfig) -> int | None:
    """
    Return the middle of a cloud's sweep in ns from its stamp, or None when it cannot say.

    From its point times (those within ``config.max_point_offset_s`` of the stamp), else from
    ``config.azimuth``; None for a cloud with neither or with an unreadable time field (the
    alignment then counts it).
    """
    try:
        layout = find_time_layout(cloud, config.time_field)
        if layout is None:
            if config.azimuth is None:
                return None
            return int(round(azimuth_middle_s(config.azimuth) * 1e9))
        times = point_times(cloud, layout)
    except MalformedMessageError:
        return None
    with np.errstate(invalid='ignore'):
        good = times[np.isfinite(times) & (np.abs(times) <= config.max_point_offset_s)]
    if good.size == 0:
        return None
    return int(round((float(good.min()) + float(good.max())) * 0.5e9))


def at_sweep_middle(cloud: Any, config: MotionConfig) -> Any:
    """Return what the synchronizer pairs ``cloud`` by: stamped at its sweep's middle."""
    stamp = header_stamp_ns(cloud)
    offset = sweep_middle_offset_ns(cloud, config) if stamp is not None else None
    if not offset or stamp + offset < 0:
        return cloud
    header = SimpleNamespace(stamp=_stamp_like(cloud.header.stamp, stamp + offset),
                             frame_id=getattr(cloud.header, 'frame_id', ''))
    return SweepStamped(cloud, header, offset)


def _stamp_like(original: Any, stamp_ns: int) -> Any:
    """Return a stamp of ``original``'s type (builtin_interfaces/Time for rclpy's readers)."""
    sec, nanosec = ns_to_sec_nanosec(stamp_ns)
    try:
        return type(original)(sec=sec, nanosec=nanosec)
    except TypeError:  # a type that is not built from its fields
        return stamp_from_ns(stamp_ns)


def unwrap(msg: Any) -> Any:
    """Return the message behind a synchronizer's view (the message itself otherwise)."""
    return msg.message if isinstance(msg, SweepStamped) else msg
