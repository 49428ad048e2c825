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
The node at its default parameters pairs each image with the sweep that spans it, over DDS.

Clouds in the drivers' own layouts: ouster-ros (``t`` UINT32 ns from the scan's start, the
stamp; point_step 48) and velodyne_pointcloud (``time`` FLOAT32 s, stamped at the sweep's
end, the driver's default; point_step 22), a 10 Hz sweep, the camera stamped 0, 30, 60 and
90 ms after the sweep's start and published before the cloud (which arrives after its sweep).
message_filters synchronizes where installed (the ros-env), the built-in synchronizer
otherwise. With tf2_ros the LiDAR's odom poses come over /tf at 100 Hz and every frame is
moved; without it every frame is counted ``no_tf2``: one outcome per frame either way.
"""

from __future__ import annotations

import uuid

from conftest import spin_until
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from builtin_interfaces.msg import Time  # noqa: E402, I100
from lrda_ros.geometry import CameraModel  # noqa: E402
from lrda_ros.ros.builders import camera_model_to_camera_info, rgb_to_image_msg  # noqa: E402
from lrda_ros.ros.node import CompletionNode  # noqa: E402
from lrda_ros.ros.subscriptions import message_filters_available  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image, PointCloud2, PointField  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

PERIOD_NS = 100_000_000
START_NS = 1_700_000_000 * 10**9
COLUMNS, RINGS = 1000, 4
PHASES_MS = (0, 30, 60, 90)
# The drivers' layouts: (name, offset, datatype) and point_step.
LAYOUTS = {
    'ouster': ([('x', 0, PointField.FLOAT32), ('y', 4, PointField.FLOAT32),
                ('z', 8, PointField.FLOAT32), ('intensity', 16, PointField.FLOAT32),
                ('t', 20, PointField.UINT32), ('reflectivity', 24, PointField.UINT16),
                ('ring', 26, PointField.UINT16), ('ambient', 28, PointField.UINT16),
                ('range', 32, PointField.UINT32)], 48),
    'velodyne': ([('x', 0, PointField.FLOAT32), ('y', 4, PointField.FLOAT32),
                  ('z', 8, PointField.FLOAT32), ('intensity', 12, PointField.FLOAT32),
                  ('ring', 16, PointField.UINT16), ('time', 18, PointField.FLOAT32)], 22),
}
_NUMPY = {PointField.FLOAT32: '<f4', PointField.UINT32: '<u4', PointField.UINT16: '<u2'}


def stamp(ns: int) -> Time:
    return Time(sec=ns // 10**9, nanosec=ns % 10**9)


def driver_cloud(driver: str, sweep_start_ns: int, frame_id: str) -> PointCloud2:
    """Return one 10 Hz sweep as the driver publishes it: its layout, stamp and times."""
    layout, point_step = LAYOUTS[driver]
    column_s = np.arange(COLUMNS) * (PERIOD_NS * 1e-9 / COLUMNS)
    azimuth = np.pi + 2 * np.pi * np.arange(COLUMNS) / COLUMNS  # starts behind, as KITTI's
    elevation = np.radians(np.linspace(-10, 10, RINGS))
    ring, column = np.divmod(np.arange(RINGS * COLUMNS), COLUMNS)
    distance = 12.0
    dtype = np.dtype({'names': [n for n, _, _ in layout],
                      'formats': [_NUMPY[d] for _, _, d in layout],
                      'offsets': [o for _, o, _ in layout], 'itemsize': point_step})
    points = np.zeros(RINGS * COLUMNS, dtype)
    points['x'] = distance * np.cos(elevation[ring]) * np.cos(azimuth[column])
    points['y'] = distance * np.cos(elevation[ring]) * np.sin(azimuth[column])
    points['z'] = distance * np.sin(elevation[ring])
    points['ring'] = ring
    if driver == 'ouster':  # ouster-ros: stamped at the scan's start, t in ns after it
        header_ns = sweep_start_ns
        points['t'] = np.round(column_s[column] * 1e9).astype(np.uint32)
    else:  # velodyne_pointcloud: stamped at the sweep's last packet, times before it
        header_ns = sweep_start_ns + PERIOD_NS
        points['time'] = (column_s[column] - PERIOD_NS * 1e-9).astype(np.float32)
    return PointCloud2(
        header=Header(frame_id=frame_id, stamp=stamp(header_ns)), height=1,
        width=points.size, fields=[PointField(name=n, offset=o, datatype=d, count=1)
                                   for n, o, d in layout],
        is_bigendian=False, point_step=point_step, row_step=point_step * points.size,
        data=points.tobytes(), is_dense=True)


def odom_message(lidar_frame: str, from_ns: int, to_ns: int):
    """Return odom -> lidar at 100 Hz over an interval, the rig driving at 10 m/s."""
    from geometry_msgs.msg import TransformStamped
    from tf2_msgs.msg import TFMessage
    message = TFMessage()
    for ns in range(from_ns, to_ns, 10_000_000):
        transform = TransformStamped()
        transform.header = Header(frame_id='odom', stamp=stamp(ns))
        transform.child_frame_id = lidar_frame
        transform.transform.translation.x = 10.0 * (ns - START_NS) * 1e-9
        transform.transform.rotation.w = 1.0
        message.transforms.append(transform)
    return message


def tf2_available() -> bool:
    try:
        import tf2_msgs.msg  # noqa: F401
        import tf2_ros  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.parametrize('driver', sorted(LAYOUTS))
def test_default_sync_pairs_each_camera_phase_with_the_sweep_that_spans_it(
        ros_context, namespace, tiny_model_dir, driver):
    lidar_frame = 'lidar_' + uuid.uuid4().hex[:8]  # /tf is shared by concurrent tests
    # Only what is not synchronization or alignment: the defaults of those are under test.
    node = CompletionNode(context=ros_context, namespace=namespace, parameter_overrides=[
        Parameter('model', value=str(tiny_model_dir)), Parameter('device', value='cpu'),
        Parameter('lidar_to_camera.matrix', value=[0.0, -1.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0,
                                                   1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])])
    pairs = []
    process = node._on_synchronized

    def record(camera, image, info, clouds):
        pairs.append((image.header.stamp, clouds[0].header.stamp))
        process(camera, image, info, clouds)

    node._on_synchronized = record
    peer = rclpy.create_node('rig', namespace=namespace, context=ros_context)
    publishers = {name: peer.create_publisher(kind, name, 10) for name, kind in
                  (('image', Image), ('camera_info', CameraInfo), ('points', PointCloud2))}
    with_tf2 = tf2_available()
    if with_tf2:
        from tf2_msgs.msg import TFMessage
        tf = peer.create_publisher(TFMessage, '/tf', 100)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    executor.add_node(peer)
    stats = node.cameras[0].stats
    try:
        assert spin_until(executor, lambda: all(
            p.get_subscription_count() > 0 for p in publishers.values()), 20)
        camera = CameraModel(np.array([[40.0, 0, 32], [0, 40.0, 24], [0, 0, 1]]), 64, 48)
        rgb = np.full((48, 64, 3), 128, np.uint8)
        sweeps = [phase for phase in PHASES_MS for _ in range(2)]
        if with_tf2:
            tf.publish(odom_message(lidar_frame, START_NS - 3 * PERIOD_NS,
                                    START_NS + (len(sweeps) + 3) * PERIOD_NS))
        # The sweep before the first: a camera at a sweep's start may pair with it.
        publishers['points'].publish(driver_cloud(driver, START_NS - PERIOD_NS, lidar_frame))
        expected = []
        for k, phase_ms in enumerate(sweeps):
            sweep_ns = START_NS + k * PERIOD_NS
            image_ns = sweep_ns + phase_ms * 1_000_000
            header = Header(frame_id='camera', stamp=stamp(image_ns))
            publishers['image'].publish(rgb_to_image_msg(rgb, header))
            publishers['camera_info'].publish(camera_model_to_camera_info(camera, header))
            publishers['points'].publish(driver_cloud(driver, sweep_ns, lidar_frame))
            expected.append(image_ns)
            assert spin_until(executor, lambda: len(pairs) == len(expected), 30), (
                f'{driver}, camera {phase_ms} ms into sweep {k}: not paired')
            # Each frame is read (and aligned) before the next is sent: none superseded.
            assert spin_until(executor, lambda: node.cameras[0].last_frame_ns == image_ns, 30)
        assert [s.sec * 10**9 + s.nanosec for s, _ in pairs] == expected
        for image_stamp, cloud_stamp in pairs:
            image_ns = image_stamp.sec * 10**9 + image_stamp.nanosec
            cloud_ns = cloud_stamp.sec * 10**9 + cloud_stamp.nanosec
            sweep_start = cloud_ns - (PERIOD_NS if driver == 'velodyne' else 0)
            assert sweep_start <= image_ns <= sweep_start + PERIOD_NS  # the spanning sweep
        if with_tf2:
            assert dict(stats.motion_outcomes) == {'moved': len(expected)}
        else:
            assert dict(stats.motion_fallbacks) == {'no_tf2': len(expected)}
        backend = node.cameras[0].subscriptions_handle.backend
        assert backend == ('message_filters' if message_filters_available() else 'builtin')
    finally:
        executor.shutdown()
        node.destroy_node()
        peer.destroy_node()
