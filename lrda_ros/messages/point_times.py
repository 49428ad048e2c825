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
When each point of a PointCloud2 was measured, in seconds relative to the cloud's stamp.

LiDAR drivers put a per-point time in a field of their own naming, type, unit and reference.
:data:`DRIVER_TIME_LAYOUTS` lists them as each driver's source defines them; a field is read
by its name and its ``PointField`` datatype, never by offset or ``point_step``, since layouts
change between driver releases. Clouds without a time field (KITTI's) get times from each
point's azimuth: :func:`azimuth_times`.
"""

from __future__ import annotations

from dataclasses import dataclass
import math
from typing import Any

import numpy as np

from .conversions import byte_view, finite_xyz, MalformedMessageError, pointcloud2_view
from .stamps import header_stamp_ns

UINT32, FLOAT32, FLOAT64 = 6, 7, 8  # sensor_msgs/PointField datatypes
_KINDS = {1: 'i1', 2: 'u1', 3: 'i2', 4: 'u2', 5: 'i4', 6: 'u4', 7: 'f4', 8: 'f8'}
#: ``time_field`` values with a meaning of their own: recognize a driver layout, or read none.
AUTO, NO_TIME_FIELD = 'auto', ''


@dataclass(frozen=True)
class TimeLayout:
    """
    One driver's per-point time: field ``name`` of ``datatype``, ``seconds_per_unit``.

    ``absolute`` times count from the clock's epoch (as the header stamp does); the others count
    from the header stamp. ``markers`` are other fields the layout has, which tell it from a
    layout with the same time field and another unit.
    """

    driver: str
    name: str
    datatype: int
    seconds_per_unit: float
    absolute: bool
    markers: tuple[str, ...] = ()


#: The layouts ``time_field: auto`` recognizes, first match wins.
DRIVER_TIME_LAYOUTS = (
    # ouster-ros os_point.h: uint32 t, ns from the scan's first column (the header stamp).
    TimeLayout('Ouster (ouster-ros)', 't', UINT32, 1e-9, False),
    # velodyne_pointcloud PointXYZIRT: float32 time, s from the scan's stamp.
    TimeLayout('Velodyne (velodyne_pointcloud)', 'time', FLOAT32, 1.0, False),
    # Autoware PointXYZIRCAEDT (nebula): uint32 time_stamp, ns from the header stamp.
    TimeLayout('Autoware (nebula)', 'time_stamp', UINT32, 1e-9, False),
    # livox_ros_driver2 LivoxPointXyzrtlt: float64 timestamp, absolute ns; has tag and line.
    TimeLayout('Livox (livox_ros_driver2)', 'timestamp', FLOAT64, 1e-9, True, ('tag', 'line')),
    # HesaiLidar_ROS_2.0 and rslidar_sdk LidarPointXYZIRT: float64 timestamp, absolute s.
    TimeLayout('Hesai (HesaiLidar_ROS_2.0) or RoboSense (rslidar_sdk)', 'timestamp', FLOAT64,
               1.0, True, ('ring',)),
)


@dataclass(frozen=True, eq=False)
class PointTimes:
    """Per-point ``seconds`` relative to the cloud's stamp (float64), and where they came from."""

    seconds: np.ndarray
    source: str


def _fields(msg: Any) -> dict[str, Any]:
    return {field.name: field for field in msg.fields}


def find_time_layout(msg: Any, time_field: str = AUTO) -> TimeLayout | None:
    """
    Return the time layout of a PointCloud2, or None when it has no time field to read.

    ``time_field`` ``'auto'`` recognizes :data:`DRIVER_TIME_LAYOUTS`; ``''`` reads none; any
    other name must be a field of one of those layouts' name and datatype (the unit comes
    from the layout). Raises MalformedMessageError for a named field the cloud lacks or whose
    datatype no known layout has.
    """
    if time_field == NO_TIME_FIELD:
        return None
    fields = _fields(msg)
    if time_field == AUTO:
        for layout in DRIVER_TIME_LAYOUTS:
            field = fields.get(layout.name)
            if (field is not None and int(field.datatype) == layout.datatype
                    and all(marker in fields for marker in layout.markers)):
                return layout
        return None
    if time_field not in fields:
        raise MalformedMessageError(
            f'time field {time_field!r} is not in the cloud; it has {sorted(fields)}')
    datatype = int(fields[time_field].datatype)
    for layout in DRIVER_TIME_LAYOUTS:
        if layout.name == time_field and layout.datatype == datatype and all(
                marker in fields for marker in layout.markers):
            return layout
    known = sorted({(layout.name, layout.datatype) for layout in DRIVER_TIME_LAYOUTS})
    raise MalformedMessageError(
        f'time field {time_field!r} has datatype {datatype}, which no known driver layout has '
        f'(known name, datatype: {known}); its unit is unknown')


def field_values(msg: Any, name: str, cloud: np.ndarray | None = None) -> np.ndarray:
    """
    Return one scalar field of every point, flattened row-major, as float64.

    ``cloud``: the message's :func:`pointcloud2_view`, when the caller holds it already.
    """
    field = _fields(msg)[name]
    kind = _KINDS.get(int(field.datatype))
    if kind is None or int(field.count) != 1:
        raise MalformedMessageError(
            f'field {name!r} has datatype {field.datatype} and count {field.count}; expected a '
            'scalar of a sensor_msgs/PointField datatype (1..8)')
    point_step, offset = int(msg.point_step), int(field.offset)
    if offset < 0 or offset + np.dtype(kind).itemsize > point_step:
        raise MalformedMessageError(
            f'field {name!r} at offset {offset} ({kind}) does not fit in point_step {point_step}')
    if cloud is None:
        cloud = pointcloud2_view(msg)  # validates sizes and byte order
    if cloud.size == 0:
        return np.zeros(0)
    order = '>' if msg.is_bigendian else '<'
    dtype = np.dtype({'names': [name], 'formats': [order + kind], 'offsets': [offset],
                      'itemsize': point_step})
    view = np.ndarray(shape=cloud.shape, dtype=dtype, buffer=byte_view(msg.data),
                      strides=cloud.strides)
    return view[name].reshape(-1).astype(np.float64)


def point_times(msg: Any, layout: TimeLayout, cloud: np.ndarray | None = None) -> np.ndarray:
    """
    Return every point's time (s) relative to the cloud's stamp, flattened row-major.

    ``cloud``: the message's :func:`pointcloud2_view`, when the caller holds it already.
    """
    values = field_values(msg, layout.name, cloud) * layout.seconds_per_unit
    if layout.absolute:
        stamp_ns = header_stamp_ns(msg) or 0
        # Whole seconds first: float64 keeps sub-microsecond steps near today's epoch.
        values = (values - stamp_ns // 1_000_000_000) - (stamp_ns % 1_000_000_000) * 1e-9
    return values


def finite_xyz_mask(msg: Any, dtype: np.dtype = np.float32) -> np.ndarray:
    """Return which points :func:`pointcloud2_to_xyz` keeps (all coordinates finite)."""
    return finite_xyz(pointcloud2_view(msg), dtype)[1]


def pointcloud2_to_xyz_times(msg: Any, time_field: str = AUTO, dtype: np.dtype = np.float32
                             ) -> tuple[np.ndarray, PointTimes | None]:
    """
    Read a cloud's finite points (exactly as :func:`pointcloud2_to_xyz`) and their times.

    The times are None when the cloud has no time field to read (see
    :func:`find_time_layout`); otherwise one per returned point, seconds from the stamp.
    Raises MalformedMessageError for a time field that cannot be read.
    """
    read = read_cloud(msg, time_field, dtype)
    if read.time_error:
        raise MalformedMessageError(read.time_error)
    if read.layout is None:
        return read.points, None
    return read.points, PointTimes(read.seconds, f'{read.layout.driver}: field '
                                                 f'{read.layout.name!r}')


@dataclass(frozen=True, eq=False)
class CloudRead:
    """A PointCloud2 read through one structured view: finite points, their times, and why not."""

    #: (N, 3) the finite points, in message order (:func:`pointcloud2_to_xyz`'s).
    points: np.ndarray
    #: The time field's layout and each point's time (s from the stamp); None without a time
    #: field to read, or when ``time_error`` says why not.
    layout: TimeLayout | None = None
    seconds: np.ndarray | None = None
    #: Why the time field could not be read ('' when it was, or when there is none).
    time_error: str = ''


def read_cloud(msg: Any, time_field: str = AUTO, dtype: np.dtype = np.float32) -> CloudRead:
    """
    Read a cloud once: one validated view gives the points, their validity and their times.

    The points are :func:`pointcloud2_to_xyz`'s and the times :func:`point_times` of those
    points. Raises MalformedMessageError for a cloud whose points cannot be read; a time field
    that cannot be read is ``time_error`` (the points stay usable).
    """
    cloud = pointcloud2_view(msg)
    points, finite = finite_xyz(cloud, dtype)
    try:
        layout = find_time_layout(msg, time_field)
        if layout is None:
            return CloudRead(points)
        seconds = point_times(msg, layout, cloud)[finite]
    except MalformedMessageError as error:
        return CloudRead(points, time_error=str(error))
    return CloudRead(points, layout, seconds)


@dataclass(frozen=True)
class AzimuthSweep:
    """
    A spinning LiDAR's sweep, for clouds without a time field: times come from azimuths.

    The head turns once per ``period_s``, ``clockwise`` seen from above (Velodyne's sense) or
    not; each sweep starts at ``start_azimuth_deg`` and the cloud's stamp is the instant the
    head points at ``stamp_azimuth_deg`` (azimuth 0 = the LiDAR's +x, counter-clockwise
    positive). KITTI: a clockwise 10 Hz sweep cut behind the car, stamped facing forward.
    """

    period_s: float = 0.1
    clockwise: bool = True
    start_azimuth_deg: float = 180.0
    stamp_azimuth_deg: float = 0.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.period_s) and self.period_s > 0):
            raise ValueError(f'period_s must be a finite number > 0 s, got {self.period_s}')
        for name in ('start_azimuth_deg', 'stamp_azimuth_deg'):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f'{name} must be finite, got {getattr(self, name)}')


def azimuth_times(points: np.ndarray, sweep: AzimuthSweep) -> np.ndarray:
    """Return each point's time (s, relative to the stamp) from its azimuth in the sweep."""
    xyz = np.asarray(points, dtype=np.float64)
    azimuth = np.arctan2(xyz[:, 1], xyz[:, 0])
    sense = -1.0 if sweep.clockwise else 1.0
    start = math.radians(sweep.start_azimuth_deg)
    # Angle turned since the sweep started, in [0, 2 pi), for each point and for the stamp.
    turned = np.mod(sense * (azimuth - start), 2.0 * math.pi)
    stamp_turned = math.fmod(sense * (math.radians(sweep.stamp_azimuth_deg) - start),
                             2.0 * math.pi) % (2.0 * math.pi)
    return (turned - stamp_turned) * (sweep.period_s / (2.0 * math.pi))
