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

"""Tests for the message readers and builders with the real sensor_msgs message types."""

import array
import math
import os
from pathlib import Path
import struct
from types import SimpleNamespace

from geometry_msgs.msg import TransformStamped
from lrda_ros.geometry import (
    CameraModel, InvalidCameraError, lidar_to_sparse_depth, ProjectionConfig)
from lrda_ros.messages.conversions import (
    camera_info_to_camera_model, depth_image_to_array, float_image_to_array, image_to_rgb,
    MalformedMessageError, pointcloud2_to_xyz, transform_to_rigid, UnsupportedEncodingError)
from lrda_ros.ros.builders import (
    camera_model_to_camera_info, depth_to_image_msg, rgb_to_image_msg, xyz_to_pointcloud2)
import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import CameraInfo, Image, PointCloud2, PointField
from std_msgs.msg import Header

# Same lookup as conftest.SHARED_DATA: the checkout's sibling shared/data, or an override.
SHARED_DATA = Path(os.environ.get('LRDA_SHARED_DATA',
                                  Path(__file__).resolve().parents[2] / 'shared' / 'data'))
KITTI_BAG = SHARED_DATA / 'bags' / 'kitti_2011_09_26_3frames_db3'
STRUCT_CODES = {PointField.FLOAT32: 'f', PointField.FLOAT64: 'd'}


def make_header(frame_id='camera'):
    header = Header(frame_id=frame_id)
    header.stamp.sec, header.stamp.nanosec = 1317027000, 123456789
    return header


def build_cloud(points, layout, point_step, height=1, row_padding=0, big_endian=False,
                extra=None):
    """
    Pack points one by one with struct (an oracle independent of numpy views).

    ``layout`` lists ``(name, offset, datatype)``; ``extra`` maps a name to per-point values.
    """
    order = '>' if big_endian else '<'
    width = len(points) // height
    row_step = width * point_step + row_padding
    buffer = bytearray(b'\xab' * (row_step * height))  # junk in padding bytes
    for index, point in enumerate(points):
        row, column = divmod(index, width)
        base = row * row_step + column * point_step
        values = dict(zip('xyz', point))
        values.update({name: column_values[index]
                       for name, column_values in (extra or {}).items()})
        for name, offset, datatype in layout:
            struct.pack_into(order + STRUCT_CODES[datatype], buffer, base + offset,
                             values[name])
    msg = PointCloud2()
    msg.header = make_header('lidar')
    msg.height, msg.width = height, width
    msg.fields = [PointField(name=name, offset=offset, datatype=datatype, count=1)
                  for name, offset, datatype in layout]
    msg.is_bigendian = big_endian
    msg.point_step, msg.row_step = point_step, row_step
    msg.data = bytes(buffer)
    return msg


RNG = np.random.default_rng(3)
POINTS = RNG.uniform(-50, 50, (12, 3)).astype(np.float32)
F32, F64 = PointField.FLOAT32, PointField.FLOAT64


@pytest.mark.parametrize('layout, point_step, big_endian', [
    ([('x', 0, F32), ('y', 8, F32), ('z', 12, F32), ('intensity', 16, F32)], 32, False),
    ([('x', 0, F64), ('y', 8, F64), ('z', 16, F64)], 24, False),
    ([('x', 1, F64), ('y', 9, F64), ('z', 17, F64)], 27, False),  # unaligned
    ([('z', 0, F32), ('intensity', 4, F32), ('y', 8, F32), ('x', 12, F32)], 16, False),
    ([('x', 0, F32), ('y', 4, F32), ('z', 8, F32), ('intensity', 12, F32)], 16, True),
    ([('z', 2, F64), ('x', 10, F32), ('y', 14, F64)], 24, True),
])
def test_pointcloud2_layouts(layout, point_step, big_endian):
    msg = build_cloud(POINTS, layout, point_step, big_endian=big_endian,
                      extra={'intensity': np.arange(12.0)})
    xyz = pointcloud2_to_xyz(msg)
    assert xyz.dtype == np.float32
    np.testing.assert_array_equal(xyz, POINTS)
    np.testing.assert_array_equal(pointcloud2_to_xyz(msg, dtype=np.float64), POINTS)


def test_pointcloud2_organized_with_nan_and_row_padding():
    points = RNG.uniform(-5, 5, (4 * 6, 3))
    points[[1, 7, 22]] = [[np.nan, 0, 0], [0, np.inf, 0], [np.nan] * 3]
    layout = [('x', 0, F64), ('y', 8, F64), ('z', 16, F64)]
    msg = build_cloud(points, layout, point_step=28, height=4, row_padding=11)
    assert (msg.height, msg.width, msg.row_step) == (4, 6, 6 * 28 + 11)
    xyz = pointcloud2_to_xyz(msg, dtype=np.float64)
    np.testing.assert_array_equal(xyz, np.delete(points, [1, 7, 22], axis=0))


def test_pointcloud2_duck_typed_data():
    msg = build_cloud(POINTS, [('x', 0, F32), ('y', 4, F32), ('z', 8, F32)], 12,
                      big_endian=True)
    raw = bytes(msg.data)
    for data in (raw, array.array('B', raw), list(raw), np.frombuffer(raw, np.uint8)):
        duck = SimpleNamespace(height=msg.height, width=msg.width, fields=msg.fields,
                               is_bigendian=True, point_step=12, row_step=12 * 12, data=data)
        np.testing.assert_array_equal(pointcloud2_to_xyz(duck), POINTS)


@pytest.mark.parametrize('datatype', [PointField.UINT8, PointField.INT16, PointField.INT32])
def test_pointcloud2_integer_coordinates_are_malformed(datatype):
    msg = build_cloud(POINTS, [('x', 0, F32), ('y', 4, F32), ('z', 8, F32)], 12)
    msg.fields[1].datatype = datatype
    with pytest.raises(MalformedMessageError, match="'y' has datatype.*FLOAT32"):
        pointcloud2_to_xyz(msg)


@pytest.mark.parametrize('datatype', [F32, F64])
def test_pointcloud2_is_bigendian_contradicting_the_data_is_malformed(datatype):
    # struct packs the oracle in the given order; the header then claims the other one.
    size = 4 if datatype == F32 else 8
    layout = [('x', 0, datatype), ('y', size, datatype), ('z', 2 * size, datatype)]
    for data_big_endian in (False, True):
        msg = build_cloud(POINTS, layout, 3 * size, big_endian=data_big_endian)
        np.testing.assert_allclose(pointcloud2_to_xyz(msg), POINTS)  # declared right: fine
        msg.is_bigendian = not data_big_endian
        with pytest.raises(MalformedMessageError, match='fix is_bigendian'):
            pointcloud2_to_xyz(msg)


def test_pointcloud2_errors_and_empty_cloud():
    layout = [('x', 0, F32), ('y', 4, F32)]
    with pytest.raises(MalformedMessageError, match=r"\['z'\]"):
        pointcloud2_to_xyz(build_cloud(POINTS, layout, 8))
    msg = build_cloud(POINTS, [('x', 0, F32), ('y', 4, F32), ('z', 8, F32)], 12)
    msg.data = bytes(msg.data)[:-1]
    with pytest.raises(MalformedMessageError, match='fewer than'):
        pointcloud2_to_xyz(msg)
    msg.point_step = 10
    with pytest.raises(MalformedMessageError, match='does not fit'):
        pointcloud2_to_xyz(msg)
    empty = build_cloud(np.zeros((0, 3)), [('x', 0, F32), ('y', 4, F32), ('z', 8, F32)], 12)
    assert pointcloud2_to_xyz(empty).shape == (0, 3)


def image_msg(pixels, encoding, padding=0, big_endian=False):
    """Build an Image with ``padding`` junk bytes at the end of every row."""
    height, width = pixels.shape[:2]
    row_bytes = pixels.reshape(height, -1).view(np.uint8).reshape(height, -1)
    padded = np.full((height, row_bytes.shape[1] + padding), 0x5A, dtype=np.uint8)
    padded[:, :row_bytes.shape[1]] = row_bytes
    msg = Image(height=height, width=width, encoding=encoding,
                is_bigendian=big_endian, step=padded.shape[1])
    msg.data = padded.tobytes()
    return msg


RGB = RNG.integers(0, 256, (5, 7, 3), dtype=np.uint8)
ALPHA = RNG.integers(0, 256, (5, 7, 1), dtype=np.uint8)


@pytest.mark.parametrize('encoding, pixels, expected', [
    ('rgb8', RGB, RGB),
    ('bgr8', RGB[..., ::-1], RGB),
    ('rgba8', np.concatenate([RGB, ALPHA], axis=2), RGB),
    ('bgra8', np.concatenate([RGB[..., ::-1], ALPHA], axis=2), RGB),
    ('mono8', RGB[..., :1], np.repeat(RGB[..., :1], 3, axis=2)),
])
@pytest.mark.parametrize('padding', [0, 5])
def test_image_to_rgb_encodings(encoding, pixels, expected, padding):
    rgb = image_to_rgb(image_msg(np.ascontiguousarray(pixels), encoding, padding))
    assert rgb.dtype == np.uint8 and rgb.flags.c_contiguous and rgb.flags.writeable
    np.testing.assert_array_equal(rgb, expected)


def test_image_errors():
    with pytest.raises(UnsupportedEncodingError, match="'16UC1'.*depth_image_to_array"):
        image_to_rgb(image_msg(np.zeros((2, 2), np.uint16), '16UC1'))
    with pytest.raises(UnsupportedEncodingError, match=r"'nv21'.*supported: rgb8, bgr8"):
        image_to_rgb(Image(height=1, width=1, encoding='nv21', step=2))
    truncated = image_msg(RGB, 'rgb8', padding=2)
    truncated.data = bytes(truncated.data)[:-1]
    with pytest.raises(MalformedMessageError, match='expected height 5 x step 23'):
        image_to_rgb(truncated)
    short_step = image_msg(RGB, 'rgb8')
    short_step.step = 20
    with pytest.raises(MalformedMessageError, match='step 20 is shorter'):
        image_to_rgb(short_step)


def test_depth_image_encodings():
    metres = np.array([[1.5, np.nan, -2.0], [np.inf, 0.0, 80.25]], dtype=np.float32)
    expected = np.array([[1.5, 0.0, 0.0], [0.0, 0.0, 80.25]], dtype=np.float32)
    for big_endian in (False, True):
        pixels = metres.astype('>f4' if big_endian else '<f4')
        depth = depth_image_to_array(image_msg(pixels, '32FC1', 3, big_endian))
        assert depth.dtype == np.float32
        np.testing.assert_array_equal(depth, expected)
    millimetres = np.array([[0, 1500], [65535, 1]], dtype='>u2')
    for encoding in ('16UC1', 'mono16'):
        depth = depth_image_to_array(image_msg(millimetres, encoding, 2, big_endian=True))
        np.testing.assert_allclose(depth, [[0.0, 1.5], [65.535, 0.001]], rtol=1e-6)
    with pytest.raises(UnsupportedEncodingError, match='rgb8'):
        depth_image_to_array(image_msg(RGB, 'rgb8'))


def test_float_images_keep_every_value():
    values = np.array([[0.25, np.nan, -2.0], [np.inf, 0.0, 1.0]], dtype=np.float32)
    for big_endian in (False, True):
        pixels = values.astype('>f4' if big_endian else '<f4')
        read = float_image_to_array(image_msg(pixels, '32FC1', 3, big_endian))
        assert read.dtype == np.float32
        np.testing.assert_array_equal(read, values)  # NaN, inf and 0 as they were
    with pytest.raises(UnsupportedEncodingError, match='16UC1'):
        float_image_to_array(image_msg(np.zeros((2, 2), np.uint16), '16UC1'))


def test_depth_to_image_msg_round_trip():
    depth = RNG.uniform(0.5, 90.0, (6, 9)).astype(np.float32)
    depth[2, 3] = np.nan
    msg = depth_to_image_msg(depth, make_header())
    assert (msg.encoding, msg.step, msg.is_bigendian, msg.height, msg.width) == (
        '32FC1', 36, 0, 6, 9)
    wire = np.frombuffer(bytes(msg.data), '<f4').reshape(6, 9)
    assert math.isnan(wire[2, 3])  # NaN on the wire (REP 118) ...
    round_trip = depth_image_to_array(deserialize_message(serialize_message(msg), Image))
    expected = depth.copy()
    expected[2, 3] = 0.0  # ... 0.0 once read back
    np.testing.assert_array_equal(round_trip, expected)


def test_rgb_to_image_msg_round_trip():
    for encoding in ('rgb8', 'bgr8'):
        msg = rgb_to_image_msg(RGB, make_header(), encoding)
        assert msg.encoding == encoding and msg.step == 21
        np.testing.assert_array_equal(image_to_rgb(msg), RGB)
    bgr = rgb_to_image_msg(RGB, make_header(), 'bgr8')
    np.testing.assert_array_equal(np.frombuffer(bytes(bgr.data), np.uint8)[:3], RGB[0, 0, ::-1])
    with pytest.raises(UnsupportedEncodingError):
        rgb_to_image_msg(RGB, make_header(), 'mono8')


def test_camera_info_round_trip():
    K = np.array([[721.5, 0.0, 609.6], [0.0, 720.0, 172.9], [0.0, 0.0, 1.0]])
    camera = CameraModel(K, 1242, 375, 'rational_polynomial', np.arange(1, 9) * 0.01)
    msg = camera_model_to_camera_info(camera, make_header())
    np.testing.assert_array_equal(np.asarray(msg.r).reshape(3, 3), np.eye(3))
    np.testing.assert_array_equal(np.asarray(msg.p).reshape(3, 4)[:, :3], K)
    back = camera_info_to_camera_model(deserialize_message(serialize_message(msg), CameraInfo))
    np.testing.assert_array_equal(back.K, K)
    np.testing.assert_array_equal(back.D, camera.D)
    assert (back.width, back.height) == (1242, 375)
    assert back.distortion_model == 'rational_polynomial'
    msg.p = np.zeros(12)
    msg.p[[0, 2, 5, 6, 10]] = [700.0, 600.0, 700.0, 170.0, 1.0]
    rectified = camera_info_to_camera_model(msg, rectified=True)
    assert (rectified.fx, rectified.cx, rectified.has_distortion) == (700.0, 600.0, False)


def test_camera_info_rejects_uncalibrated():
    with pytest.raises(InvalidCameraError, match='uncalibrated'):
        camera_info_to_camera_model(CameraInfo(width=640, height=480))
    msg = CameraInfo(width=0, height=480, k=[500.0, 0, 320, 0, 500, 240, 0, 0, 1])
    with pytest.raises(InvalidCameraError, match='width'):
        camera_info_to_camera_model(msg)
    msg.width, msg.binning_x = 640, 2
    with pytest.raises(InvalidCameraError, match='binning'):
        camera_info_to_camera_model(msg)


def test_xyz_to_pointcloud2_round_trip_with_colours():
    points = RNG.uniform(-10, 10, (50, 3)).astype(np.float32)
    colours = RNG.integers(0, 256, (50, 3), dtype=np.uint8)
    colours[0] = [255, 255, 255]  # 0x00FFFFFF: a float32 denormal, must survive as bits
    intensity = RNG.uniform(0, 1, 50).astype(np.float32)
    msg = xyz_to_pointcloud2(points, make_header(), rgb=colours,
                             extra_fields={'intensity': intensity})
    msg = deserialize_message(serialize_message(msg), PointCloud2)
    assert [(f.name, f.offset, f.datatype, f.count) for f in msg.fields] == [
        ('x', 0, F32, 1), ('y', 4, F32, 1), ('z', 8, F32, 1), ('rgb', 12, F32, 1),
        ('intensity', 16, F32, 1)]
    assert (msg.height, msg.width, msg.point_step, msg.row_step) == (1, 50, 20, 1000)
    assert msg.is_dense and not msg.is_bigendian
    np.testing.assert_array_equal(pointcloud2_to_xyz(msg), points)
    record = np.frombuffer(bytes(msg.data), dtype=np.dtype(
        {'names': ['rgb', 'intensity'], 'formats': ['<f4', '<f4'], 'offsets': [12, 16],
         'itemsize': 20}))
    packed = record['rgb'].view('<u4')  # rviz2 reinterprets the float's bits
    decoded = np.stack([(packed >> 16) & 0xFF, (packed >> 8) & 0xFF, packed & 0xFF], axis=1)
    np.testing.assert_array_equal(decoded, colours)
    np.testing.assert_array_equal(record['intensity'], intensity)


def test_xyz_to_pointcloud2_nan_and_validation():
    points = np.array([[1.0, 2.0, 3.0], [np.nan, np.nan, np.nan]])
    msg = xyz_to_pointcloud2(points, make_header())
    assert not msg.is_dense and msg.point_step == 12
    np.testing.assert_array_equal(pointcloud2_to_xyz(msg), [[1.0, 2.0, 3.0]])
    assert xyz_to_pointcloud2(np.zeros((0, 3)), make_header()).width == 0
    with pytest.raises(ValueError, match=r'\(2, 3\)'):
        xyz_to_pointcloud2(points, make_header(), rgb=np.zeros((2, 3)))
    with pytest.raises(ValueError, match='extra field'):
        xyz_to_pointcloud2(points, make_header(), extra_fields={'x': np.zeros(2)})


def test_transform_to_rigid_follows_tf_convention():
    msg = TransformStamped()
    msg.header.frame_id, msg.child_frame_id = 'base_link', 'lidar'
    msg.transform.translation.x = 1.0
    msg.transform.rotation.z = math.sin(math.pi / 4)
    msg.transform.rotation.w = math.cos(math.pi / 4)
    t_base_lidar = transform_to_rigid(msg)
    # A point 2 m ahead of the LiDAR (which faces +y of base_link) is at (1, 2, 0) in base.
    np.testing.assert_allclose(t_base_lidar.apply(np.array([[2.0, 0.0, 0.0]])), [[1, 2, 0]],
                               atol=1e-12)


def read_first_messages(bag_dir):
    from rosbags.highlevel import AnyReader

    messages = {}
    with AnyReader([bag_dir]) as reader:
        for connection, _, raw in reader.messages():
            if connection.topic not in messages:
                messages[connection.topic] = reader.deserialize(raw, connection.msgtype)
    return messages


def test_kitti_bag_messages_through_rosbags():
    if not KITTI_BAG.is_dir():
        pytest.skip(f'{KITTI_BAG} is not available')
    messages = read_first_messages(KITTI_BAG)
    cloud = messages['/kitti/velo/pointcloud']
    xyz = pointcloud2_to_xyz(cloud)
    assert xyz.shape[1] == 3 and 100_000 < xyz.shape[0] <= cloud.width * cloud.height
    assert np.all(np.isfinite(xyz))
    assert np.abs(xyz).max() < 200.0  # a Velodyne HDL-64E reaches ~120 m
    rgb = image_to_rgb(messages['/kitti/camera_color_left/image_raw'])
    assert rgb.shape == (375, 1242, 3) and rgb.dtype == np.uint8 and rgb.std() > 10
    camera = camera_info_to_camera_model(messages['/kitti/camera_color_left/camera_info'])
    assert camera.fx == pytest.approx(721.5377) and not camera.has_distortion
    transforms = messages['/tf_static'].transforms
    t_velo_cam = transform_to_rigid(
        next(t for t in transforms if t.child_frame_id == 'camera_color_left'))
    # The camera looks along the LiDAR's +x axis: its optical z maps to about +x.
    np.testing.assert_allclose(t_velo_cam.rotation[:, 2], [1, 0, 0], atol=0.05)
    # Projected like KITTI's velodyne_raw, which fills ~4 % of the 1242x375 pixels.
    projection = lidar_to_sparse_depth(xyz, t_velo_cam.inverse(), camera, ProjectionConfig())
    assert 10_000 < projection.num_projected < 25_000
    valid = projection.depth[projection.depth > 0]
    assert valid.min() >= 0.5 and valid.max() <= 120.0
