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
The instant a cloud is paired by: its sweep's middle, from the drivers' own layouts.

Clouds are packed with ``struct`` in each driver's layout (test_messages_point_times.py);
azimuth sweeps are checked against the times :func:`azimuth_times` gives a full ring.
"""

from lrda_ros.messages.point_times import azimuth_times, AzimuthSweep
from lrda_ros.messages.stamps import header_stamp_ns
from lrda_ros.messages.sweep_alignment import MotionConfig
from lrda_ros.messages.sweep_stamp import (
    at_sweep_middle, azimuth_middle_s, sweep_middle_offset_ns, SweepStamped, unwrap)
from lrda_ros.messages.sync import ApproximateTimeSync
import numpy as np
import pytest
from test_messages_point_times import DRIVERS, FLOAT32, pack_cloud

CLOUD_NS = 1700000000 * 10**9 + 250000000
COLUMNS = np.arange(1000) * 1e-4  # a 10 Hz sweep, one column every 0.1 ms


def cloud_with_times(driver, times_s):
    layout, point_step, name = DRIVERS[driver][:3]
    xyz = np.ones((len(times_s), 3))
    values = np.round(np.asarray(times_s) * 1e9) if name in ('t', 'time_stamp') else times_s
    return pack_cloud(layout, point_step, {'x': xyz[:, 0], 'y': xyz[:, 1], 'z': xyz[:, 2],
                                           name: values})


@pytest.mark.parametrize('driver, times, middle_ms', [
    ('ouster', COLUMNS, 49.95),  # ouster-ros: stamped at the scan's start
    ('autoware', COLUMNS, 49.95),  # nebula: the same convention
    ('velodyne', COLUMNS - 0.0999, -49.95),  # velodyne_pointcloud: stamped at its end
])
def test_the_middle_comes_from_the_drivers_point_times(driver, times, middle_ms):
    cloud = cloud_with_times(driver, times)
    assert sweep_middle_offset_ns(cloud, MotionConfig()) == pytest.approx(
        middle_ms * 1e6, abs=1e3)
    seen = at_sweep_middle(cloud, MotionConfig())
    assert isinstance(seen, SweepStamped) and unwrap(seen) is cloud
    assert header_stamp_ns(seen) == header_stamp_ns(cloud) + seen.offset_ns
    # A stamp of the cloud's own stamp type: rclpy's Time.from_msg takes no other.
    assert type(seen.header.stamp) is type(cloud.header.stamp)


@pytest.mark.parametrize('sweep', [
    AzimuthSweep(),  # KITTI: cut behind, stamped facing forward: the stamp is the middle
    AzimuthSweep(clockwise=False, start_azimuth_deg=0.0, stamp_azimuth_deg=0.0),
    AzimuthSweep(period_s=0.05, start_azimuth_deg=90.0, stamp_azimuth_deg=-30.0),
])
def test_an_azimuth_sweep_middle_is_the_middle_of_its_times(sweep):
    ring = np.radians(np.arange(0.0, 360.0, 0.01))
    times = azimuth_times(np.stack([np.cos(ring), np.sin(ring), 0 * ring], axis=1), sweep)
    step_s = 0.01 / 360 * sweep.period_s  # the ring's last point is one step short
    assert azimuth_middle_s(sweep) == pytest.approx((times.min() + times.max() + step_s) / 2,
                                                    abs=1e-9)


def test_a_cloud_that_cannot_say_is_paired_by_its_stamp():
    xyz_only = pack_cloud([('x', 0, FLOAT32), ('y', 4, FLOAT32), ('z', 8, FLOAT32)], 12,
                          {'x': [1.0], 'y': [2.0], 'z': [3.0]})
    assert at_sweep_middle(xyz_only, MotionConfig()) is xyz_only
    ouster = cloud_with_times('ouster', COLUMNS)
    assert at_sweep_middle(ouster, MotionConfig(time_field='')) is ouster
    assert at_sweep_middle(ouster, MotionConfig(time_field='ring')) is ouster  # unreadable
    assert unwrap(ouster) is ouster


@pytest.mark.parametrize('driver, cloud_offset_ms', [('ouster', 0), ('velodyne', 100)])
@pytest.mark.parametrize('phase_ms', [0, 30, 60, 90])
def test_the_default_slop_pairs_any_camera_phase_with_its_sweep(driver, cloud_offset_ms,
                                                                phase_ms):
    # Sweeps 0..5 start every 100 ms; ouster-ros stamps each at its start, velodyne at its
    # end. The camera is stamped phase_ms into each sweep; clouds arrive after their sweep.
    times = COLUMNS if driver == 'ouster' else COLUMNS - 0.0999
    pairs = []
    sync = ApproximateTimeSync(2, 10, 0.05, lambda image, cloud: pairs.append(
        (header_stamp_ns(image), header_stamp_ns(unwrap(cloud)))))
    for k in range(-1, 6):
        sweep_ns = CLOUD_NS + k * 100_000_000
        if k >= 0:
            image = cloud_with_times('ouster', [0.0])  # any message with a header
            image.header.stamp.sec, image.header.stamp.nanosec = divmod(
                sweep_ns + phase_ms * 1_000_000, 10**9)
            sync.add(0, image)
        cloud = cloud_with_times(driver, times)
        cloud.header.stamp.sec, cloud.header.stamp.nanosec = divmod(
            sweep_ns + cloud_offset_ms * 1_000_000, 10**9)
        sync.add(1, at_sweep_middle(cloud, MotionConfig()))
    assert len(pairs) == 6
    for image_ns, cloud_ns in pairs:
        start = cloud_ns - cloud_offset_ms * 1_000_000
        assert start <= image_ns <= start + 100_000_000  # the sweep that spans the image
