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
Per-point times read from clouds laid out exactly as each LiDAR driver publishes them.

Each layout (field names, datatypes, offsets, point_step, unit, reference) is copied from the
driver's own source, named in the case; the bytes are packed point by point with ``struct``,
an oracle independent of the numpy views under test.
"""

import math
import struct
from types import SimpleNamespace

from lrda_ros.messages.conversions import MalformedMessageError, pointcloud2_to_xyz
from lrda_ros.messages.point_times import (
    azimuth_times, AzimuthSweep, find_time_layout, pointcloud2_to_xyz_times)
import numpy as np
import pytest

INT8, UINT8, INT16, UINT16, INT32, UINT32, FLOAT32, FLOAT64 = range(1, 9)
CODES = {INT8: 'b', UINT8: 'B', INT16: 'h', UINT16: 'H', INT32: 'i', UINT32: 'I',
         FLOAT32: 'f', FLOAT64: 'd'}
STAMP_SEC, STAMP_NANOSEC = 1700000000, 250000000
STAMP_S = STAMP_SEC + STAMP_NANOSEC * 1e-9


def pack_cloud(layout, point_step, columns, height=1, big_endian=False):
    """Pack ``columns`` (name -> values) into a duck-typed PointCloud2 of ``layout``."""
    order = '>' if big_endian else '<'
    count = len(columns['x'])
    width = count // height
    buffer = bytearray(b'\xcd' * (point_step * count))  # junk in the padding
    for index in range(count):
        for name, offset, datatype in layout:
            value = columns.get(name, [0] * count)[index]
            if datatype not in (FLOAT32, FLOAT64):
                value = int(value)
            struct.pack_into(order + CODES[datatype], buffer, index * point_step + offset, value)
    fields = [SimpleNamespace(name=name, offset=offset, datatype=datatype, count=1)
              for name, offset, datatype in layout]
    header = SimpleNamespace(frame_id='lidar',
                             stamp=SimpleNamespace(sec=STAMP_SEC, nanosec=STAMP_NANOSEC))
    return SimpleNamespace(header=header, height=height, width=width, fields=fields,
                           is_bigendian=big_endian, point_step=point_step,
                           row_step=width * point_step, data=bytes(buffer), is_dense=False)


RNG = np.random.default_rng(11)
N = 64
XYZ = RNG.uniform(-40, 40, (N, 3)).astype(np.float32)
# True times over a 100 ms sweep that starts at the header stamp (unsigned fields need that).
OFFSETS_S = np.sort(RNG.uniform(0.0, 0.1, N))
OFFSETS_NS = np.round(OFFSETS_S * 1e9)

# (driver, layout, point_step, time values as the driver writes them, tolerance in s, why).
DRIVERS = {
    # ouster-ros os_point.h (Point, EIGEN_ALIGN16): t uint32 ns from the header stamp.
    'ouster': ([('x', 0, FLOAT32), ('y', 4, FLOAT32), ('z', 8, FLOAT32),
                ('intensity', 16, FLOAT32), ('t', 20, UINT32), ('reflectivity', 24, UINT16),
                ('ring', 26, UINT16), ('ambient', 28, UINT16), ('range', 32, UINT32)], 48,
               't', None, 5e-10),
    # Older ouster-ros releases: ring was uint8 (same t).
    'ouster_uint8_ring': ([('x', 0, FLOAT32), ('y', 4, FLOAT32), ('z', 8, FLOAT32),
                           ('intensity', 16, FLOAT32), ('t', 20, UINT32),
                           ('reflectivity', 24, UINT16), ('ring', 26, UINT8),
                           ('ambient', 28, UINT16), ('range', 32, UINT32)], 48, 't', None,
                          5e-10),
    # velodyne_pointcloud PointcloudXYZIRT (ROS 2): time float32 s from the scan stamp.
    'velodyne': ([('x', 0, FLOAT32), ('y', 4, FLOAT32), ('z', 8, FLOAT32),
                  ('intensity', 12, FLOAT32), ('ring', 16, UINT16), ('time', 18, FLOAT32)], 22,
                 'time', None, 1e-8),
    # Autoware PointXYZIRCAEDT (nebula): time_stamp uint32 ns from the header stamp.
    'autoware': ([('x', 0, FLOAT32), ('y', 4, FLOAT32), ('z', 8, FLOAT32),
                  ('intensity', 12, UINT8), ('return_type', 13, UINT8), ('channel', 14, UINT16),
                  ('azimuth', 16, FLOAT32), ('elevation', 20, FLOAT32),
                  ('distance', 24, FLOAT32), ('time_stamp', 28, UINT32)], 32, 'time_stamp',
                 None, 5e-10),
    # livox_ros_driver2 LivoxPointXyzrtlt (pack(1)): timestamp float64 absolute ns.
    'livox': ([('x', 0, FLOAT32), ('y', 4, FLOAT32), ('z', 8, FLOAT32),
               ('intensity', 12, FLOAT32), ('tag', 16, UINT8), ('line', 17, UINT8),
               ('timestamp', 18, FLOAT64)], 26, 'timestamp', 'ns', 1e-6),
    # HesaiLidar_ROS_2.0 ToRosMsg: timestamp float64 absolute s.
    'hesai': ([('x', 0, FLOAT32), ('y', 4, FLOAT32), ('z', 8, FLOAT32),
               ('intensity', 12, FLOAT32), ('ring', 16, UINT16), ('timestamp', 18, FLOAT64)],
              26, 'timestamp', 's', 1e-6),
    # rslidar_sdk toRosMsg, POINT_TYPE_XYZIRTF: as Hesai plus a feature byte.
    'robosense_xyzirtf': ([('x', 0, FLOAT32), ('y', 4, FLOAT32), ('z', 8, FLOAT32),
                           ('intensity', 12, FLOAT32), ('ring', 16, UINT16),
                           ('timestamp', 18, FLOAT64), ('feature', 26, UINT8)], 27,
                          'timestamp', 's', 1e-6),
}


def driver_cloud(layout, point_step, time_name, absolute, height=1):
    if absolute == 'ns':  # absolute ns in a float64 (ulp 256 ns at this epoch)
        times = STAMP_SEC * 1e9 + STAMP_NANOSEC + OFFSETS_NS
    elif absolute == 's':  # absolute s in a float64 (ulp 0.24 us at this epoch)
        times = STAMP_S + OFFSETS_S
    elif {n: d for n, _, d in layout}[time_name] == UINT32:
        times = OFFSETS_NS
    else:
        times = OFFSETS_S
    columns = {'x': XYZ[:, 0], 'y': XYZ[:, 1], 'z': XYZ[:, 2], time_name: times}
    return pack_cloud(layout, point_step, columns, height=height)


@pytest.mark.parametrize('driver', sorted(DRIVERS))
def test_each_driver_layout_gives_the_times_it_wrote(driver):
    layout, point_step, time_name, absolute, tolerance = DRIVERS[driver]
    msg = driver_cloud(layout, point_step, time_name, absolute)
    xyz, times = pointcloud2_to_xyz_times(msg)
    np.testing.assert_array_equal(xyz, XYZ)
    assert times is not None and time_name in times.source
    # float32 seconds keep 1e-8 s at 0.1 s; uint32 ns round to 0.5 ns; absolute float64 lose
    # at most an ulp of the epoch (0.24 us in s, 256 ns in ns): the table says which.
    np.testing.assert_allclose(times.seconds, OFFSETS_S, rtol=0, atol=tolerance)


def test_robosense_organized_cloud_keeps_row_major_order():
    layout, point_step, time_name, absolute, _ = DRIVERS['robosense_xyzirtf']
    msg = driver_cloud(layout, point_step, time_name, absolute, height=4)
    _, times = pointcloud2_to_xyz_times(msg)
    np.testing.assert_allclose(times.seconds, OFFSETS_S, rtol=0, atol=1e-6)


def test_livox_and_hesai_share_a_field_and_differ_in_unit():
    livox = driver_cloud(*DRIVERS['livox'][:4])
    hesai = driver_cloud(*DRIVERS['hesai'][:4])
    assert find_time_layout(livox).seconds_per_unit == 1e-9
    assert find_time_layout(hesai).seconds_per_unit == 1.0


def test_non_finite_points_are_dropped_with_their_times():
    layout, point_step, time_name, absolute, _ = DRIVERS['ouster']
    msg = driver_cloud(layout, point_step, time_name, absolute)
    xyz = XYZ.copy()
    xyz[[3, 10], 1] = np.nan
    columns = {'x': xyz[:, 0], 'y': xyz[:, 1], 'z': xyz[:, 2], 't': OFFSETS_NS}
    msg = pack_cloud(layout, point_step, columns)
    points, times = pointcloud2_to_xyz_times(msg)
    np.testing.assert_array_equal(points, pointcloud2_to_xyz(msg))
    keep = np.ones(N, bool)
    keep[[3, 10]] = False
    np.testing.assert_allclose(times.seconds, OFFSETS_S[keep], rtol=0, atol=5e-10)


def test_big_endian_velodyne_cloud_stamped_at_its_last_packet():
    # velodyne_driver can stamp a scan with its last packet: times are then negative.
    layout, point_step, _, _, _ = DRIVERS['velodyne']
    before = OFFSETS_S - 0.1
    columns = {'x': XYZ[:, 0], 'y': XYZ[:, 1], 'z': XYZ[:, 2], 'time': before}
    _, times = pointcloud2_to_xyz_times(pack_cloud(layout, point_step, columns,
                                                   big_endian=True))
    np.testing.assert_allclose(times.seconds, before, rtol=0, atol=1e-8)


def test_time_field_parameter_none_named_and_unknown():
    msg = driver_cloud(*DRIVERS['ouster'][:4])
    assert pointcloud2_to_xyz_times(msg, '')[1] is None
    assert find_time_layout(msg, 't').name == 't'
    with pytest.raises(MalformedMessageError, match='not in the cloud'):
        find_time_layout(msg, 'time')
    with pytest.raises(MalformedMessageError, match='unit is unknown'):
        find_time_layout(msg, 'range')  # a uint32 no driver uses for time
    plain = pack_cloud([('x', 0, FLOAT32), ('y', 4, FLOAT32), ('z', 8, FLOAT32),
                        ('intensity', 12, FLOAT32)], 16,
                       {'x': XYZ[:, 0], 'y': XYZ[:, 1], 'z': XYZ[:, 2]})
    assert pointcloud2_to_xyz_times(plain)[1] is None  # KITTI's layout: no time field


def test_a_time_field_of_another_type_is_not_taken_for_a_known_one():
    # A float64 't' is not Ouster's uint32 ns: auto must not read it in the wrong unit.
    msg = pack_cloud([('x', 0, FLOAT32), ('y', 4, FLOAT32), ('z', 8, FLOAT32),
                      ('t', 16, FLOAT64)], 24,
                     {'x': XYZ[:, 0], 'y': XYZ[:, 1], 'z': XYZ[:, 2], 't': OFFSETS_S})
    assert find_time_layout(msg) is None


def test_azimuth_times_hand_computed_for_a_kitti_sweep():
    # Clockwise from above, cut behind (180 deg), stamped facing forward (0 deg), 10 Hz.
    sweep = AzimuthSweep(period_s=0.1, clockwise=True, start_azimuth_deg=180.0,
                         stamp_azimuth_deg=0.0)
    degrees = np.array([0.0, 90.0, -90.0, 179.0, -179.0, 45.0])
    points = np.stack([np.cos(np.radians(degrees)), np.sin(np.radians(degrees)),
                       np.zeros(degrees.size)], axis=1) * 10.0
    # Left (+90) is passed a quarter turn before forward, right (-90) a quarter turn after;
    # just left of the cut (179) starts the sweep, just right of it (-179) ends it.
    expected = np.array([0.0, -0.025, 0.025, -0.05 + 0.1 / 360, 0.05 - 0.1 / 360, -0.0125])
    np.testing.assert_allclose(azimuth_times(points, sweep), expected, rtol=0, atol=1e-12)


def test_azimuth_times_counter_clockwise_stamped_at_the_start():
    sweep = AzimuthSweep(period_s=0.05, clockwise=False, start_azimuth_deg=0.0,
                         stamp_azimuth_deg=0.0)
    degrees = np.array([0.0, 90.0, 180.0, 270.0])
    points = np.stack([np.cos(np.radians(degrees)), np.sin(np.radians(degrees)),
                       np.zeros(4)], axis=1)
    np.testing.assert_allclose(azimuth_times(points, sweep),
                               [0.0, 0.0125, 0.025, 0.0375], rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match='period_s'):
        AzimuthSweep(period_s=0.0)
    assert math.isfinite(AzimuthSweep().period_s)
