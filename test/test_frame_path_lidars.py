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
The node's frame path and ``lrda densify``'s on the same messages: two LiDARs on a moving rig.

One frame: an image, its camera_info and two Velodyne-layout clouds (per-point ``time``) of a
rig driving at 10 m/s and turning at 30 deg/s, each LiDAR sweeping from its own stamp. The node
reads the messages (:class:`~lrda_ros.ros.lidar_inputs.CloudInputs`: extrinsics and odom poses
from tf2) and densify reads their CDR bytes (:class:`~lrda_ros.densify.frames.FrameReader`:
poses from the window of the recording's /tf a frame carries); both merge the clouds into one
sparse map, which must be the same. Without tf2_ros the node's look-ups come from a stand-in
over the same :class:`TransformTree`; with tf2_ros (a ROS 2 install) a real ``tf2_ros.Buffer``
holds the chain. Without odom, both fall back to the static extrinsic, counted.
"""

import threading

from lrda_ros.densify.frames import FrameReader
from lrda_ros.densify.recordings import frame_poses, RawFrame
from lrda_ros.geometry import (
    CameraModel, clouds_to_sparse_depth, LidarCloud, RigidTransform, TransformTree)
from lrda_ros.messages.stamps import stamp_to_ns
from lrda_ros.pipeline import FrameInputs, prepare_frame
from lrda_ros.settings import NodeSettings
import numpy as np
import pytest
from test_messages_sweep_alignment import CLOUD_NS, rig_pose

rclpy = pytest.importorskip('rclpy', reason="rclpy is not installed (the messages are rclpy's)")

from lrda_ros.ros.bridges import MessageReader  # noqa: E402, I100
from lrda_ros.ros.builders import (  # noqa: E402
    camera_model_to_camera_info, rgb_to_image_msg, xyz_to_pointcloud2)
from lrda_ros.ros.cameras import Camera  # noqa: E402
from lrda_ros.ros.lidar_inputs import CloudInputs  # noqa: E402
from lrda_ros.ros.motion_alignment import MotionAligner  # noqa: E402
from rclpy.serialization import serialize_message  # noqa: E402
from test_node import header  # noqa: E402
from test_ros_motion_alignment import tf2_lookup, transform_message  # noqa: E402, F401

MS = 1_000_000
WIDTH, HEIGHT = 160, 120
CAMERA = CameraModel(np.array([[120.0, 0.0, 79.5], [0.0, 120.0, 59.5], [0.0, 0.0, 1.0]]),
                     WIDTH, HEIGHT)
R_CAM_LIDAR = np.array([[0.0, -1.0, 0.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0]])
T_LIDAR_CAMERA = RigidTransform(R_CAM_LIDAR, np.array([0.0, 0.2, -0.1])).inverse()
#: The second LiDAR: 1.2 m behind the first, 0.3 m higher, turned 150 degrees.
T_LIDAR_REAR = RigidTransform.from_translation_quaternion(
    [-1.2, 0.0, 0.3], [0.0, 0.0, np.sin(np.radians(75.0)), np.cos(np.radians(75.0))])
#: Cloud stamps (each LiDAR's sweep start) and the image's.
STAMPS = {'lidar': CLOUD_NS, 'lidar_rear': CLOUD_NS + 20 * MS}
IMAGE_NS = CLOUD_NS + 60 * MS
ODOM_SAMPLES = [CLOUD_NS + int(round(s * 1e9)) for s in np.arange(-0.2, 0.4, 0.01)]
#: Without the occlusion test, which thins scattered points (test_geometry_clouds.py tests it).
SETTINGS = NodeSettings.from_values({'point_topics': ['points', 'points_rear'],
                                     'tf_timeout': 0.0, 'projection.min_range': 0.1,
                                     'projection.remove_occluded': False})


def static_tree(with_odom: bool) -> TransformTree:
    tree = TransformTree()
    tree.add('lidar', 'camera', T_LIDAR_CAMERA)
    tree.add('lidar', 'lidar_rear', T_LIDAR_REAR)
    if with_odom:
        for stamp in ODOM_SAMPLES:
            tree.add('odom', 'lidar', rig_pose((stamp - CLOUD_NS) * 1e-9), stamp)
    return tree


def world_points(rng, count):
    """Return odom points the camera sees at the image's instant, 5 to 30 m away."""
    cols, rows = rng.uniform(0, WIDTH - 1, count), rng.uniform(0, HEIGHT - 1, count)
    z = rng.uniform(5.0, 30.0, count)
    K = CAMERA.K
    in_camera = np.stack([(cols - K[0, 2]) / K[0, 0] * z, (rows - K[1, 2]) / K[1, 1] * z, z],
                         axis=1)
    return (rig_pose((IMAGE_NS - CLOUD_NS) * 1e-9) @ T_LIDAR_CAMERA).apply(in_camera)


def sweep(world, frame, rng):
    """Return a cloud of ``frame`` measuring ``world`` over a 100 ms sweep, and the times."""
    mount = T_LIDAR_REAR if frame == 'lidar_rear' else RigidTransform.identity()
    times = np.sort(rng.uniform(0.0, 0.1, world.shape[0]))
    measured = np.stack([(rig_pose((STAMPS[frame] - CLOUD_NS) * 1e-9 + t) @ mount)
                         .inverse().apply(point[None])[0] for t, point in zip(times, world)])
    cloud = xyz_to_pointcloud2(measured, header(frame, STAMPS[frame]),
                               extra_fields={'time': times.astype(np.float32)})
    return cloud


@pytest.fixture(scope='module')
def messages():
    rng = np.random.default_rng(21)
    image_header = header('camera', IMAGE_NS)
    image = rgb_to_image_msg(np.zeros((HEIGHT, WIDTH, 3), np.uint8), image_header)
    info = camera_model_to_camera_info(CAMERA, image_header)
    world = world_points(rng, 3000)
    clouds = (sweep(world[:1500], 'lidar', rng), sweep(world[1500:], 'lidar_rear', rng))
    return image, info, clouds, world


class TreeLookup:
    """Stand-in for TransformLookup over a TransformTree (LookupError where it has none)."""

    def __init__(self, tree):
        self.tree = tree

    def lookup(self, target, source, stamp, timeout_s=0.0):
        return self.tree.lookup(target, source, stamp_to_ns(stamp))

    def poses(self, fixed_frame, frame, timeout_s):
        return lambda stamp_ns: self.tree.lookup(fixed_frame, frame, stamp_ns)


def node_sparse(messages, lookup):
    """Return the node's sparse map of the frame and its camera (counters)."""
    image, info, clouds, _ = messages
    warnings, drops = [], []
    reader = CloudInputs(MessageReader(), MotionAligner(warnings.append, threading.Lock()),
                         lambda *drop: drops.append(drop))
    camera = Camera()
    lidar = reader.read(camera, SETTINGS, lookup, image, clouds)
    assert not drops, drops
    inputs = FrameInputs.from_clouds(np.zeros((HEIGHT, WIDTH, 3), np.uint8), CAMERA, lidar,
                                     IMAGE_NS)
    return prepare_frame(inputs, SETTINGS.projection).sparse_depth, camera, warnings


def densify_sparse(messages, tree):
    """Return densify's sparse map of the same messages, as CDR, and its motion note."""
    image, info, clouds, _ = messages
    stamps = (IMAGE_NS, IMAGE_NS, *(STAMPS[c.header.frame_id] for c in clouds))
    raw = RawFrame(0, (('sensor_msgs/msg/Image', serialize_message(image)),
                       ('sensor_msgs/msg/CameraInfo', serialize_message(info)),
                       *(('sensor_msgs/msg/PointCloud2', serialize_message(c)) for c in clouds)),
                   tuple(tree.lookup('camera', c.header.frame_id, STAMPS[c.header.frame_id])
                         .as_matrix() for c in clouds),
                   poses=frame_poses(tree, stamps, SETTINGS.motion),
                   point_topics=('points', 'points_rear'))
    reader = FrameReader(SETTINGS)
    reader.start(odometry=False)
    return prepare_frame(reader.inputs(raw), SETTINGS.projection).sparse_depth, reader.motion


def truth_sparse(world):
    """Return the world points projected from where the rig was at the image's instant."""
    T_cam_odom = (rig_pose((IMAGE_NS - CLOUD_NS) * 1e-9) @ T_LIDAR_CAMERA).inverse()
    cloud = LidarCloud(T_cam_odom.apply(world), RigidTransform.identity())
    return clouds_to_sparse_depth([cloud], CAMERA, SETTINGS.projection).depth


def test_the_node_and_densify_give_one_sparse_map_for_two_moving_lidars(messages):
    tree = static_tree(with_odom=True)
    node, camera, warnings = node_sparse(messages, TreeLookup(tree))
    offline, motion = densify_sparse(messages, tree)
    assert motion == 'moved' and camera.stats.motion_outcomes['moved'] == 2 and not warnings
    np.testing.assert_array_equal(node, offline)
    # Both LiDARs aligned: the map is where the camera saw the points (constant twist, so
    # the constant-velocity model is exact up to the odom samples' interpolation).
    truth = truth_sparse(messages[3])
    both = (node > 0) & (truth > 0)
    assert both.sum() >= 0.99 * (truth > 0).sum() > 2000
    assert np.max(np.abs(node[both] - truth[both])) < 1e-3


def test_without_odom_both_paths_keep_the_static_extrinsic_counted(messages):
    tree = static_tree(with_odom=False)
    node, camera, warnings = node_sparse(messages, TreeLookup(tree))
    offline, motion = densify_sparse(messages, tree)
    assert motion == 'no_fixed_frame_pose'
    assert camera.stats.motion_fallbacks['no_fixed_frame_pose'] == 2
    # Warned once per point topic, each naming it.
    assert [w.split(':')[1].strip() for w in warnings] == ['points', 'points_rear']
    np.testing.assert_array_equal(node, offline)
    truth = truth_sparse(messages[3])
    both = (node > 0) & (truth > 0)
    assert both.sum() < 0.5 * (truth > 0).sum()  # unaligned: most points on other pixels
    assert np.median(np.abs(node[both] - truth[both])) > 0.05


# --- real tf2 ---------------------------------------------------------------------------------


def fill(lookup, tree, with_odom):
    """Put the tree's transforms in a tf2 buffer: the mounts static, odom -> lidar timed."""
    lookup.buffer.set_transform_static(transform_message('lidar', 'camera', T_LIDAR_CAMERA, 0),
                                       'test')
    lookup.buffer.set_transform_static(transform_message('lidar', 'lidar_rear', T_LIDAR_REAR, 0),
                                       'test')
    if with_odom:
        for stamp in ODOM_SAMPLES:
            lookup.buffer.set_transform(transform_message(
                'odom', 'lidar', tree.lookup('odom', 'lidar', stamp), stamp), 'test')


@pytest.mark.parametrize('with_odom', [True, False], ids=['odom', 'no_odom'])
def test_a_tf2_buffer_gives_the_offline_sparse_map_aligned_or_the_counted_fallback(
        messages, tf2_lookup, with_odom):  # noqa: F811
    tree = static_tree(with_odom)
    fill(tf2_lookup, tree, with_odom)
    node, camera, warnings = node_sparse(messages, tf2_lookup)
    offline, motion = densify_sparse(messages, tree)
    if with_odom:
        assert motion == 'moved' and camera.stats.motion_outcomes['moved'] == 2 and not warnings
    else:  # the static extrinsic, counted per cloud and warned once per topic
        assert motion == 'no_fixed_frame_pose' and len(warnings) == 2
        assert camera.stats.motion_fallbacks['no_fixed_frame_pose'] == 2
    # tf2 and the tree interpolate the same samples in their own arithmetic (float64 rounding,
    # far below a pixel): the same pixels, the same depths to float32 rounding.
    np.testing.assert_array_equal(node > 0, offline > 0)
    np.testing.assert_allclose(node, offline, rtol=1e-6, atol=0)
