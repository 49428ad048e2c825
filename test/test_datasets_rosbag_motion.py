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

"""Motion alignment on a bag's frames (``lrda eval --bag``): KITTI with azimuth times."""

from __future__ import annotations

from conftest import SHARED_DATA
from lrda_ros.datasets.rosbag import RosbagDataset
from lrda_ros.eval.run import motion_alignment_lines
from lrda_ros.messages.point_times import AzimuthSweep
from lrda_ros.messages.sweep_alignment import MotionConfig
import numpy as np
import pytest

# /tf_static only (no odom): poses come from LiDAR odometry or nowhere. Camera and LiDAR are
# stamped alike, and KITTI's HDL-64 faces forward at the stamp.
BAG = SHARED_DATA / 'bags' / 'kitti_2011_09_26_10frames_mcap'
KITTI = MotionConfig(azimuth=AzimuthSweep())


@pytest.fixture
def bag():
    if not BAG.is_dir():
        pytest.skip(f'KITTI bag not found at {BAG}')
    return BAG


def test_without_poses_the_frames_keep_the_static_extrinsic_bit_for_bit(bag):
    plain = list(RosbagDataset(bag, poses='none'))[:3]
    unaligned = list(RosbagDataset(bag, poses='none', motion=KITTI))[:3]
    for off, fallback in zip(plain, unaligned):
        assert off.notes['motion_alignment'] == 'off'
        assert fallback.notes['motion_alignment'] == 'no_fixed_frame_pose'
        np.testing.assert_array_equal(off.sparse_depth, fallback.sparse_depth)


def test_kitti_stamps_without_point_times_leave_nothing_to_move_and_say_so(bag):
    # No odom in the bag, no time field, camera and LiDAR stamped alike: no pose is needed,
    # so no frame is 'aligned' and none is a fallback either. The summary lrda eval prints
    # says so once, in words true for this bag.
    dataset = RosbagDataset(bag, poses='none', motion=MotionConfig())
    frames = list(dataset)
    assert {frame.notes['motion_alignment'] for frame in frames} == {'nothing_to_move'}
    assert motion_alignment_lines(dataset.motion_outcomes, dataset.motion_details) == [
        f'motion alignment: {len(frames)} of {len(frames)} clouds nothing_to_move: nothing to '
        "move (no point times, and the cloud stamped at the image's instant)"]
    kitti = RosbagDataset(bag, poses='none', motion=KITTI)
    list(kitti)
    (line,) = motion_alignment_lines(kitti.motion_outcomes, kitti.motion_details)
    assert line.startswith(f'motion alignment: {len(frames)} of {len(frames)} clouds '
                           'no_fixed_frame_pose: projected with the static extrinsic')
    assert 'no odom frame linked to velo_link in /tf, no odometry' in line


def test_odometry_poses_move_the_sides_of_the_sweep_not_its_middle(bag):
    pytest.importorskip('kiss_icp', reason='KISS-ICP (the odometry extra) is not installed')
    aligned = list(RosbagDataset(bag, poses='lidar_odometry', motion=KITTI))
    plain = list(RosbagDataset(bag, poses='lidar_odometry'))
    # The first cloud has no velocity yet (one registered pose): the static extrinsic.
    assert [f.notes['motion_alignment'] for f in aligned] == (
        ['no_fixed_frame_pose'] + ['moved'] * (len(aligned) - 1))
    middle, sides = [], []
    for moved, still in zip(aligned[1:], plain[1:]):
        both = (moved.sparse_depth > 0) & (still.sparse_depth > 0)
        change = np.where(both, np.abs(moved.sparse_depth - still.sparse_depth), np.nan)
        width = change.shape[1]
        # Columns near the centre look where the head is at the stamp (time ~0): they stay;
        # the image's edges, ~40 deg off, were swept ~11 ms away and move with the car.
        middle.append(np.nanmedian(change[:, width // 2 - 20:width // 2 + 20]))
        sides.append(np.nanmedian(np.concatenate([change[:, :100], change[:, -100:]], axis=1)))
    assert np.median(middle) < 1e-3 < np.median(sides)
