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
A whole cloud message moved to the image's stamp, with poses from a /tf store.

The cloud is an Ouster-layout message of a skewed sweep from the moving rig; the poses come
from a :class:`TransformTree` filled with odom -> lidar samples of the rig's trajectory, as
the offline commands fill it from a bag's /tf. The reference is the rig's own geometry: where
each point was in the LiDAR frame at the image's instant.
"""

import math

from lrda_ros.geometry import RigidTransform, TransformTree
from lrda_ros.messages.conversions import pointcloud2_to_xyz
from lrda_ros.messages.point_times import AzimuthSweep
from lrda_ros.messages.sweep_alignment import (
    align_cloud, MotionConfig, MOVED, MOVED_WITHOUT_POINT_TIMES, NO_FIXED_FRAME_POSE, NO_TF2,
    NOTHING_TO_MOVE, UNREADABLE_TIME_FIELD)
import numpy as np
import pytest
from test_messages_point_times import (
    DRIVERS, FLOAT32, pack_cloud, STAMP_NANOSEC, STAMP_SEC)

CLOUD_NS = STAMP_SEC * 1_000_000_000 + STAMP_NANOSEC
MOTION = (10.0, math.radians(30.0))  # m/s along x, rad/s about z
RNG = np.random.default_rng(5)


def rig_pose(seconds):
    """T_odom_lidar of a rig at 10 m/s turning at 30 deg/s, at the origin at the cloud stamp."""
    speed, yaw_rate = MOTION
    yaw = yaw_rate * seconds
    radius = speed / yaw_rate
    return RigidTransform.from_translation_quaternion(
        [radius * math.sin(yaw), radius * (1 - math.cos(yaw)), 0.0],
        [0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)])


def odom_tree(seconds=np.arange(-0.2, 0.3, 0.01)):
    tree = TransformTree()
    for s in seconds:
        tree.add('odom', 'lidar', rig_pose(s), CLOUD_NS + int(round(s * 1e9)))
    return tree


def skewed_cloud(count=300):
    """Return an Ouster cloud of world points seen over a sweep, and the world points."""
    world = RNG.uniform(-30, 30, (count, 3))
    times = np.sort(RNG.uniform(0.0, 0.1, count))
    times_ns = np.round(times * 1e9)
    measured = np.stack([rig_pose(t * 1e-9).inverse().apply(p[None])[0]
                         for t, p in zip(times_ns, world)])
    layout, point_step = DRIVERS['ouster'][:2]
    columns = {'x': measured[:, 0], 'y': measured[:, 1], 'z': measured[:, 2], 't': times_ns}
    return pack_cloud(layout, point_step, columns), world


def tree_pose(tree):
    return lambda ns: tree.lookup('odom', 'lidar', ns)


def test_cloud_moved_through_the_odom_chain_lands_where_it_was_at_the_image():
    cloud, world = skewed_cloud()
    image_ns = CLOUD_NS + 80_000_000
    points = pointcloud2_to_xyz(cloud)
    result = align_cloud(points, cloud, image_ns, tree_pose(odom_tree()), MotionConfig())
    assert result.fallback is None and 'Ouster' in result.times_source
    expected = rig_pose(0.08).inverse().apply(world)
    # float32 points (6 um at 30 m) and the tree's 10 ms samples, interpolated linearly in
    # translation where the rig goes round an arc: 1 mm covers both.
    np.testing.assert_allclose(result.points, expected, rtol=0, atol=1e-3)
    unaligned = np.abs(points - expected).max()
    assert unaligned > 0.3  # the test would not see a missing alignment otherwise


def test_missing_chain_keeps_the_points_and_says_why():
    cloud, _ = skewed_cloud()
    points = pointcloud2_to_xyz(cloud)
    result = align_cloud(points, cloud, CLOUD_NS + 50_000_000, tree_pose(TransformTree()),
                         MotionConfig())
    assert result.fallback == NO_FIXED_FRAME_POSE and 'odom' in result.detail
    assert result.points is points


def test_unreadable_time_field_keeps_the_points():
    cloud, _ = skewed_cloud()
    points = pointcloud2_to_xyz(cloud)
    result = align_cloud(points, cloud, CLOUD_NS, tree_pose(odom_tree()),
                         MotionConfig(time_field='ring'))
    assert result.fallback == UNREADABLE_TIME_FIELD and result.points is points


def test_bad_point_times_are_counted_and_the_frame_still_aligned():
    layout, point_step = DRIVERS['velodyne'][:2]
    xyz = RNG.uniform(-20, 20, (50, 3)).astype(np.float32)
    times = np.linspace(0.0, 0.1, 50)
    times[[1, 2]] = np.nan
    times[3] = 7.0  # seconds away from its cloud's stamp
    cloud = pack_cloud(layout, point_step,
                       {'x': xyz[:, 0], 'y': xyz[:, 1], 'z': xyz[:, 2], 'time': times})
    result = align_cloud(pointcloud2_to_xyz(cloud), cloud, CLOUD_NS + 50_000_000,
                         tree_pose(odom_tree()), MotionConfig())
    assert result.fallback is None
    assert (result.num_not_finite, result.num_outside_sweep) == (2, 1)
    assert result.points.shape == (50, 3)


def test_cloud_without_a_time_field_uses_the_stamp_or_azimuths():
    xyz = RNG.uniform(-20, 20, (40, 3)).astype(np.float32)
    cloud = pack_cloud([('x', 0, FLOAT32), ('y', 4, FLOAT32), ('z', 8, FLOAT32)], 12,
                       {'x': xyz[:, 0], 'y': xyz[:, 1], 'z': xyz[:, 2]})
    tree = odom_tree()
    at_stamp = align_cloud(xyz, cloud, CLOUD_NS + 30_000_000, tree_pose(tree), MotionConfig())
    assert at_stamp.times_source == 'cloud stamp'
    # All points taken at the stamp: one rigid motion, the rig's from the stamp to the image.
    expected = (rig_pose(0.03).inverse() @ rig_pose(0.0)).apply(xyz)
    np.testing.assert_allclose(at_stamp.points, expected, rtol=0, atol=2e-3)
    kitti = align_cloud(xyz, cloud, CLOUD_NS, tree_pose(tree),
                        MotionConfig(azimuth=AzimuthSweep()))
    assert kitti.times_source == 'azimuth' and kitti.fallback is None


@pytest.mark.parametrize('image_offset_ns', [0, 20_000_000])
def test_a_still_rig_leaves_the_points_bit_identical(image_offset_ns):
    cloud, _ = skewed_cloud()
    points = pointcloud2_to_xyz(cloud)
    still = TransformTree()
    for s in np.arange(-0.2, 0.3, 0.01):
        still.add('odom', 'lidar', rig_pose(0.0), CLOUD_NS + int(round(s * 1e9)))
    result = align_cloud(points, cloud, CLOUD_NS + image_offset_ns, tree_pose(still),
                         MotionConfig())
    assert result.outcome == NOTHING_TO_MOVE and result.points is points
    assert result.detail == 'the LiDAR stood still over the sweep'


def xyz_only_cloud(points):
    """Return a cloud of x, y, z alone (KITTI's layout: no per-point time)."""
    return pack_cloud([('x', 0, FLOAT32), ('y', 4, FLOAT32), ('z', 8, FLOAT32)], 12,
                      {'x': points[:, 0], 'y': points[:, 1], 'z': points[:, 2]})


def never_looked_up(stamp_ns):
    raise AssertionError(f'a pose was looked up at {stamp_ns} with nothing to move')


@pytest.mark.parametrize('pose_at', [never_looked_up, None], ids=['tf2', 'no_tf2'])
def test_no_point_times_at_the_image_stamp_is_nothing_to_move_without_a_look_up(pose_at):
    # KITTI and the demo: camera and cloud stamped alike, no time field. Nothing can move, so
    # no pose is needed: neither an aligned frame nor a fallback (with or without tf2).
    xyz = RNG.uniform(-20, 20, (40, 3)).astype(np.float32)
    result = align_cloud(xyz, xyz_only_cloud(xyz), CLOUD_NS, pose_at, MotionConfig())
    assert result.outcome == NOTHING_TO_MOVE and result.fallback is None
    assert result.points is xyz and 'no point times' in result.detail


def test_outcomes_name_what_happened_to_each_cloud():
    cloud, _ = skewed_cloud()
    points = pointcloud2_to_xyz(cloud)
    xyz = RNG.uniform(-20, 20, (40, 3)).astype(np.float32)
    image_ns = CLOUD_NS + 60_000_000
    outcomes = [
        align_cloud(points, cloud, image_ns, tree_pose(odom_tree()), MotionConfig()),
        align_cloud(xyz, xyz_only_cloud(xyz), image_ns, tree_pose(odom_tree()), MotionConfig()),
        align_cloud(points, cloud, image_ns, None, MotionConfig()),
        align_cloud(points, cloud, image_ns, tree_pose(TransformTree()), MotionConfig()),
        align_cloud(points, cloud, image_ns, None, MotionConfig(time_field='ring'))]
    assert [result.outcome for result in outcomes] == [
        MOVED, MOVED_WITHOUT_POINT_TIMES, NO_TF2, NO_FIXED_FRAME_POSE, UNREADABLE_TIME_FIELD]
    assert [result.fallback for result in outcomes] == [
        None, None, NO_TF2, NO_FIXED_FRAME_POSE, UNREADABLE_TIME_FIELD]


def test_a_scan_start_stamp_without_point_times_moves_the_cloud_the_wrong_way():
    # What doc/ros.md says of such clouds: taken as measured all at the stamp, an Ouster sweep
    # (stamped at its start) with its time field stripped lands further from the truth than
    # unaligned; with its times, or azimuth times of the right sweep, it lands on it.
    cloud, world = skewed_cloud()
    points = pointcloud2_to_xyz(cloud)
    image_ns = CLOUD_NS + 90_000_000
    truth = rig_pose(0.09).inverse().apply(world)
    stripped = align_cloud(points, xyz_only_cloud(points), image_ns, tree_pose(odom_tree()),
                           MotionConfig())
    timed = align_cloud(points, cloud, image_ns, tree_pose(odom_tree()), MotionConfig())

    def error(moved):
        return float(np.median(np.linalg.norm(moved - truth, axis=1)))

    assert stripped.outcome == MOVED_WITHOUT_POINT_TIMES and timed.outcome == MOVED
    assert error(timed.points) < 2e-3 < error(stripped.points)


def test_a_window_of_the_tree_looks_up_its_instants_bit_for_bit():
    tree = odom_tree()
    tree.add('lidar', 'camera', RigidTransform(np.eye(3), np.array([0.1, 0.0, -0.2])))
    start, stop = CLOUD_NS - 37_000_000, CLOUD_NS + 60_000_000  # odom every 10 ms
    part = tree.window(start, stop)
    instants = [start, stop, CLOUD_NS, CLOUD_NS + 10_000_000, *RNG.integers(start, stop, 50)]
    for stamp in instants:
        for target, source in (('odom', 'lidar'), ('odom', 'camera'), ('camera', 'odom')):
            expected = tree.lookup(target, source, stamp)
            got = part.lookup(target, source, stamp)
            assert got.rotation.tobytes() == expected.rotation.tobytes()
            assert got.translation.tobytes() == expected.translation.tobytes()
    # Only what those lookups read: 10 samples inside, one before, one after.
    assert len(part._edges['odom']['lidar'][0].stamps) == 12
    # A window past the end holds the last samples, as the whole tree does.
    late = tree.window(CLOUD_NS + 10**9, CLOUD_NS + 2 * 10**9)
    assert late.lookup('odom', 'lidar', CLOUD_NS + 10**9).translation.tobytes() == \
        tree.lookup('odom', 'lidar', CLOUD_NS + 10**9).translation.tobytes()
