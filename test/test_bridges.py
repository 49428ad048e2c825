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
cv_bridge / sensor_msgs_py conversion agrees with the numpy code (parity), and falls back.

The parity tests need a ROS 2 install with cv_bridge and sensor_msgs_py (PyPI has neither);
the fallback test runs everywhere.
"""

from __future__ import annotations

from lrda_ros.messages.conversions import image_to_rgb, MalformedMessageError, pointcloud2_to_xyz
from lrda_ros.ros.bridges import BACKEND_NATIVE, BACKEND_NUMPY, MessageReader
from lrda_ros.ros.builders import rgb_to_image_msg, xyz_to_pointcloud2
import numpy as np
import pytest

pytest.importorskip('sensor_msgs', reason='sensor_msgs is not installed')

from sensor_msgs.msg import Image, PointField  # noqa: E402, I100
from std_msgs.msg import Header  # noqa: E402
from test_conversions import build_cloud, F32, F64  # noqa: E402

RNG = np.random.default_rng(7)


def native_reader(needs: str) -> MessageReader:
    pytest.importorskip(needs, reason=f'{needs} is not installed (ROS 2 install; not on PyPI)')
    reader = MessageReader()
    assert getattr(reader, 'image_backend' if needs == 'cv_bridge' else 'cloud_backend') \
        == BACKEND_NATIVE
    return reader


@pytest.mark.parametrize('encoding', ['rgb8', 'bgr8', 'rgba8', 'bgra8', 'mono8'])
@pytest.mark.parametrize('padding', [0, 5])
def test_cv_bridge_images_match_numpy(encoding, padding):
    reader = native_reader('cv_bridge')
    channels = {'mono8': 1, 'rgba8': 4, 'bgra8': 4}.get(encoding, 3)
    height, width = 9, 13
    pixels = RNG.integers(0, 256, (height, width * channels + padding), dtype=np.uint8)
    msg = Image(height=height, width=width, encoding=encoding, step=width * channels + padding,
                data=pixels.tobytes())
    np.testing.assert_array_equal(reader.image_to_rgb(msg), image_to_rgb(msg))


def test_cv_bridge_rejects_what_numpy_rejects():
    reader = native_reader('cv_bridge')
    msg = rgb_to_image_msg(RNG.integers(0, 256, (4, 5, 3), dtype=np.uint8), Header())
    msg.data = bytes(msg.data)[:-3]
    with pytest.raises(MalformedMessageError):
        reader.image_to_rgb(msg)


@pytest.mark.parametrize('layout, point_step, big_endian, row_padding, height', [
    ([('x', 0, F32), ('y', 4, F32), ('z', 8, F32), ('intensity', 12, F32)], 16, False, 0, 1),
    ([('x', 0, F64), ('y', 8, F64), ('z', 16, F64)], 24, False, 0, 1),
    ([('z', 0, F32), ('intensity', 4, F32), ('y', 8, F32), ('x', 12, F32)], 16, False, 0, 2),
    ([('x', 0, F32), ('y', 4, F32), ('z', 8, F32)], 12, True, 0, 1),      # numpy fallback
    ([('x', 0, F32), ('y', 4, F32), ('z', 8, F32)], 12, False, 7, 2),     # numpy fallback
    ([('x', 0, F64), ('y', 8, F32), ('z', 12, F64)], 20, False, 0, 1),    # numpy fallback
])
def test_sensor_msgs_py_clouds_match_numpy(layout, point_step, big_endian, row_padding, height):
    reader = native_reader('sensor_msgs_py')
    points = RNG.uniform(-40, 40, (24, 3))
    points[[3, 10]] = [[np.nan, 1, 1], [2, np.inf, 2]]
    msg = build_cloud(points, layout, point_step, height=height, row_padding=row_padding,
                      big_endian=big_endian, extra={'intensity': np.arange(24.0)})
    np.testing.assert_array_equal(reader.pointcloud2_to_xyz(msg), pointcloud2_to_xyz(msg))
    assert reader.pointcloud2_to_xyz(msg).shape == (22, 3)


def test_sensor_msgs_py_reads_a_large_cloud_like_numpy():
    reader = native_reader('sensor_msgs_py')
    points = RNG.uniform(-80, 80, (120_000, 3)).astype(np.float32)
    msg = xyz_to_pointcloud2(points, Header(), extra_fields={'intensity': points[:, 0]})
    np.testing.assert_array_equal(reader.pointcloud2_to_xyz(msg), points)


def test_integer_coordinates_are_rejected_on_both_paths():
    for reader in (MessageReader(prefer_native=False), MessageReader()):
        layout = [('x', 0, F32), ('y', 4, F32), ('z', 8, F32)]
        msg = build_cloud(RNG.uniform(1, 5, (4, 3)), layout, 12)
        msg.fields[2].datatype = PointField.UINT8
        with pytest.raises(MalformedMessageError, match='FLOAT32'):
            reader.pointcloud2_to_xyz(msg)


def test_without_the_ros_packages_the_numpy_path_is_used():
    reader = MessageReader(prefer_native=False)
    assert reader.image_backend == reader.cloud_backend == BACKEND_NUMPY
    image = rgb_to_image_msg(RNG.integers(0, 256, (3, 4, 3), dtype=np.uint8), Header())
    np.testing.assert_array_equal(reader.image_to_rgb(image), image_to_rgb(image))
