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
The node's motion alignment: counters, warn-once per cause, settings; real tf2 where installed.

Without tf2_ros the look-ups come from a stand-in with :class:`TransformLookup`'s ``poses``
signature backed by a :class:`TransformTree`. With tf2_ros (a ROS 2 install; not on PyPI) a
real ``tf2_ros.Buffer`` holds the same odom chain and must give the same points as the
offline path (the tree), and a missing chain or an instant beyond its buffer falls back.
"""

import threading
from types import SimpleNamespace

from lrda_ros.geometry import TransformTree
from lrda_ros.messages.conversions import pointcloud2_to_xyz
from lrda_ros.messages.stamps import stamp_from_ns
from lrda_ros.messages.sweep_alignment import align_cloud, MotionConfig
from lrda_ros.ros.cameras import Camera
from lrda_ros.ros.motion_alignment import MotionAligner
from lrda_ros.settings import InvalidParameterError, NodeSettings
import numpy as np
import pytest
from test_messages_sweep_alignment import (
    CLOUD_NS, odom_tree, rig_pose, skewed_cloud, xyz_only_cloud)


class TreeLookup:
    """Stand-in for TransformLookup: ``poses`` over a TransformTree, LookupError if absent."""

    def __init__(self, tree):
        self.tree = tree

    def poses(self, fixed_frame, frame, timeout_s):
        return lambda stamp_ns: self.tree.lookup(fixed_frame, frame, stamp_ns)


def image_at(stamp_ns):
    return SimpleNamespace(header=SimpleNamespace(stamp=stamp_from_ns(stamp_ns),
                                                  frame_id='camera'))


def aligner():
    warnings = []
    return MotionAligner(warnings.append, threading.Lock()), warnings


def test_aligned_frames_are_counted_and_give_the_offline_points():
    cloud, _ = skewed_cloud()
    cloud.header.frame_id = 'lidar'
    points = pointcloud2_to_xyz(cloud)
    motion, warnings = aligner()
    camera = Camera()
    settings = NodeSettings.from_values({})
    tree = odom_tree()
    moved = motion.align(camera, settings, TreeLookup(tree), cloud,
                         image_at(CLOUD_NS + 60_000_000), points)
    offline = align_cloud(points, cloud, CLOUD_NS + 60_000_000,
                          lambda ns: tree.lookup('odom', 'lidar', ns), MotionConfig())
    np.testing.assert_array_equal(moved, offline.points)
    assert camera.stats.motion_outcomes == {'moved': 1} and not warnings


def test_fallbacks_are_counted_per_cause_and_warned_once():
    cloud, _ = skewed_cloud()
    cloud.header.frame_id = 'lidar'
    points = pointcloud2_to_xyz(cloud)
    motion, warnings = aligner()
    camera = Camera(name='front')
    settings = NodeSettings.from_values({})
    for _ in range(3):
        out = motion.align(camera, settings, TreeLookup(TransformTree()), cloud,
                           image_at(CLOUD_NS + 50_000_000), points)
        assert out is points  # the static extrinsic's projection, as with alignment off
    motion.align(camera, settings, None, cloud, image_at(CLOUD_NS), points)
    assert camera.stats.motion_fallbacks == {'no_fixed_frame_pose': 3, 'no_tf2': 1}
    assert len(warnings) == 2 and all(w.startswith('camera front: motion alignment: ')
                                      for w in warnings)
    assert 'no_fixed_frame_pose' in warnings[0] and 'odom' in warnings[0]


def test_clouds_without_point_times_are_counted_and_warned_once_naming_the_parameters():
    cloud, _ = skewed_cloud()
    points = pointcloud2_to_xyz(cloud)
    stripped = xyz_only_cloud(points)  # the same sweep without its time field
    stripped.header.frame_id = 'lidar'
    motion, warnings = aligner()
    camera = Camera()
    for _ in range(3):
        motion.align(camera, NodeSettings.from_values({}), TreeLookup(odom_tree()), stripped,
                     image_at(CLOUD_NS + 60_000_000), points)
    assert camera.stats.motion_outcomes == {'moved_without_point_times': 3}
    assert len(warnings) == 1
    assert warnings[0].startswith('motion alignment: moved_without_point_times: ')
    assert 'motion.azimuth_times' in warnings[0] and 'motion.time_field' in warnings[0]


def test_nothing_to_move_needs_no_tf2_and_warns_nothing():
    # The demo: no tf2_ros, sensors stamped alike, no time field: alignment changes nothing.
    xyz = np.random.default_rng(2).uniform(-9, 9, (30, 3)).astype(np.float32)
    cloud = xyz_only_cloud(xyz)
    motion, warnings = aligner()
    camera = Camera()
    out = motion.align(camera, NodeSettings.from_values({}), None, cloud, image_at(CLOUD_NS),
                       xyz)
    assert out is xyz and camera.stats.motion_outcomes == {'nothing_to_move': 1}
    assert not camera.stats.motion_fallbacks and not warnings


@pytest.mark.parametrize('values, lookup, cause, says, never', [
    ({'motion.time_field': 'ring'}, 'tree', 'unreadable_time_field', 'motion.time_field',
     'pose'),
    ({}, 'empty', 'no_fixed_frame_pose', 'odom -> lidar', 'motion.time_field'),
    ({}, None, 'no_tf2', 'install tf2_ros', 'odom pose'),
])
def test_each_fallback_warning_gives_its_own_cause(values, lookup, cause, says, never):
    cloud, _ = skewed_cloud()
    cloud.header.frame_id = 'lidar'
    points = pointcloud2_to_xyz(cloud)
    motion, warnings = aligner()
    camera = Camera()
    tf = {'tree': TreeLookup(odom_tree()), 'empty': TreeLookup(TransformTree()),
          None: None}[lookup]
    motion.align(camera, NodeSettings.from_values(values), tf, cloud,
                 image_at(CLOUD_NS + 50_000_000), points)
    assert camera.stats.motion_fallbacks == {cause: 1} and len(warnings) == 1
    assert warnings[0].startswith(f'motion alignment: {cause}: ')
    assert says in warnings[0] and never not in warnings[0]


def test_alignment_off_returns_the_points_and_counts_nothing():
    cloud, _ = skewed_cloud()
    points = pointcloud2_to_xyz(cloud)
    motion, warnings = aligner()
    camera = Camera()
    settings = NodeSettings.from_values({'motion.align': False})
    assert motion.align(camera, settings, None, cloud, image_at(CLOUD_NS), points) is points
    assert not camera.stats.motion_outcomes and not camera.stats.motion_fallbacks


@pytest.mark.parametrize('values, culprit', [
    ({'motion.fixed_frame': '/odom'}, 'motion.fixed_frame'),
    ({'motion.rotation_direction': 'left'}, 'motion.rotation_direction'),
    ({'motion.max_point_offset': 0.0}, 'motion.max_point_offset'),
    ({'motion.rotation_period': -0.1}, 'motion.rotation_period'),
])
def test_bad_motion_settings_name_the_parameter(values, culprit):
    with pytest.raises(InvalidParameterError) as caught:
        NodeSettings.from_values(values)
    assert caught.value.name == culprit


def test_azimuth_settings_make_the_kitti_sweep():
    motion = NodeSettings.from_values({'motion.azimuth_times': True,
                                       'motion.rotation_direction': 'counterclockwise'}).motion
    assert motion.azimuth.period_s == 0.1 and not motion.azimuth.clockwise
    assert NodeSettings.from_values({}).motion.azimuth is None


# --- real tf2 ---------------------------------------------------------------------------------


@pytest.fixture
def tf2_lookup():
    pytest.importorskip('tf2_ros', reason='tf2_ros is not installed (ROS 2 install; not on PyPI)')
    import rclpy
    from lrda_ros.ros.tf_lookup import TransformLookup

    rclpy.init()
    node = rclpy.create_node('motion_alignment_test')
    try:
        yield TransformLookup(node)
    finally:
        node.destroy_node()
        rclpy.shutdown()


def transform_message(parent, child, transform, stamp_ns):
    """Return ``transform`` (T_parent_child) as a tf2 TransformStamped at ``stamp_ns``."""
    from geometry_msgs.msg import TransformStamped

    message = TransformStamped()
    message.header.frame_id, message.child_frame_id = parent, child
    message.header.stamp.sec, message.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
    (message.transform.translation.x, message.transform.translation.y,
     message.transform.translation.z) = transform.translation
    (message.transform.rotation.x, message.transform.rotation.y,
     message.transform.rotation.z, message.transform.rotation.w) = transform.quaternion_xyzw()
    return message


def fill_buffer(lookup, tree_samples):
    for stamp_ns, pose in tree_samples:
        lookup.buffer.set_transform(transform_message('odom', 'lidar', pose, stamp_ns), 'test')


def test_a_tf2_buffer_with_an_odom_chain_gives_the_offline_points(tf2_lookup):
    samples = [(CLOUD_NS + int(round(s * 1e9)), rig_pose(s)) for s in np.arange(-0.2, 0.3, 0.01)]
    fill_buffer(tf2_lookup, samples)
    tree = TransformTree()
    for stamp_ns, pose in samples:
        tree.add('odom', 'lidar', pose, stamp_ns)
    cloud, _ = skewed_cloud()
    cloud.header.frame_id = 'lidar'
    points = pointcloud2_to_xyz(cloud)
    motion, warnings = aligner()
    camera = Camera()
    settings = NodeSettings.from_values({'tf_timeout': 0.0})
    image_ns = CLOUD_NS + 70_000_000
    node_points = motion.align(camera, settings, tf2_lookup, cloud, image_at(image_ns), points)
    offline = align_cloud(points, cloud, image_ns, lambda ns: tree.lookup('odom', 'lidar', ns),
                          MotionConfig())
    # tf2 and the tree interpolate the same samples (lerp + slerp) in their own arithmetic:
    # they agree to float64 rounding, far below a pixel: relative to the points' 30 m reach
    # (the cloud is drawn from a shared generator, so which cloud depends on the tests run).
    np.testing.assert_allclose(node_points, offline.points, rtol=0, atol=30 * 1e-9)
    assert camera.stats.motion_outcomes == {'moved': 1} and not warnings
    # An image past the newest odom sample: beyond the buffer, the counted fallback.
    late = motion.align(camera, settings, tf2_lookup, cloud, image_at(CLOUD_NS + 400_000_000),
                        points)
    assert late is points and camera.stats.motion_fallbacks['no_fixed_frame_pose'] == 1


def test_a_tf2_buffer_without_odom_falls_back_to_the_static_extrinsic(tf2_lookup):
    cloud, _ = skewed_cloud()
    cloud.header.frame_id = 'lidar'
    points = pointcloud2_to_xyz(cloud)
    motion, warnings = aligner()
    camera = Camera()
    out = motion.align(camera, NodeSettings.from_values({}), tf2_lookup, cloud,
                       image_at(CLOUD_NS + 30_000_000), points)
    assert out is points
    assert camera.stats.motion_fallbacks['no_fixed_frame_pose'] == 1 and len(warnings) == 1


def test_a_still_odom_chain_in_tf2_leaves_the_points_bit_identical(tf2_lookup):
    still = rig_pose(0.0)
    fill_buffer(tf2_lookup, [(CLOUD_NS + int(round(s * 1e9)), still)
                             for s in np.arange(-0.2, 0.3, 0.01)])
    cloud, _ = skewed_cloud()
    cloud.header.frame_id = 'lidar'
    points = pointcloud2_to_xyz(cloud)
    motion, warnings = aligner()
    camera = Camera()
    out = motion.align(camera, NodeSettings.from_values({'tf_timeout': 0.0}), tf2_lookup, cloud,
                       image_at(CLOUD_NS + 40_000_000), points)
    assert out is points and camera.stats.motion_outcomes == {'nothing_to_move': 1}
    assert not warnings
