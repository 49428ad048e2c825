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
Build ROS 2 sensor messages from numpy arrays (the node's outputs).

The counterpart of :mod:`lrda_ros.messages.conversions`, which reads them without ROS.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sensor_msgs.msg import CameraInfo, Image, PointCloud2, PointField

from ..geometry import CameraModel
from ..messages.conversions import (
    depth_image_fields, FLOAT32_DATATYPE, to_byte_array, UnsupportedEncodingError)


def _checked_image(values: np.ndarray, ndim: int, what: str) -> np.ndarray:
    array_in = np.asarray(values)
    if array_in.ndim != ndim or (ndim == 3 and array_in.shape[2] != 3):
        expected = '(H, W)' if ndim == 2 else '(H, W, 3)'
        raise ValueError(f'{what} must have shape {expected}, got {array_in.shape}')
    return array_in


def depth_to_image_msg(depth: np.ndarray, header: Any) -> Any:
    """
    Build a little-endian ``32FC1`` ``sensor_msgs/Image`` from an ``(H, W)`` depth map.

    Values are written as given: per REP 118 the caller puts NaN on pixels without depth
    (not 0.0, which is this package's internal sparse convention).
    """
    fields = depth_image_fields(depth)
    msg = Image()
    msg.header = header
    msg.height, msg.width = fields['height'], fields['width']
    msg.encoding = fields['encoding']
    msg.is_bigendian = fields['is_bigendian']
    msg.step = fields['step']
    msg.data = to_byte_array(fields['data'])
    return msg


def rgb_to_image_msg(rgb: np.ndarray, header: Any, encoding: str = 'rgb8') -> Any:
    """Build an ``rgb8`` or ``bgr8`` ``sensor_msgs/Image`` from an ``(H, W, 3)`` uint8 array."""
    pixels = _checked_image(rgb, 3, 'rgb')
    if pixels.dtype != np.uint8:
        raise ValueError(f'rgb must be uint8, got dtype {pixels.dtype}')
    if encoding not in ('rgb8', 'bgr8'):
        raise UnsupportedEncodingError(
            f"cannot build an image with encoding {encoding!r}; supported: ['bgr8', 'rgb8']")
    if encoding == 'bgr8':
        pixels = pixels[..., ::-1]
    msg = Image()
    msg.header = header
    msg.height, msg.width = pixels.shape[:2]
    msg.encoding = encoding
    msg.is_bigendian = 0
    msg.step = 3 * pixels.shape[1]
    msg.data = to_byte_array(pixels)
    return msg


def camera_model_to_camera_info(camera: CameraModel, header: Any) -> Any:
    """Build a ``sensor_msgs/CameraInfo`` (``R`` = identity, ``P`` = ``[K | 0]``)."""
    msg = CameraInfo()
    msg.header = header
    msg.width = camera.width
    msg.height = camera.height
    msg.distortion_model = camera.distortion_model
    msg.d = [float(value) for value in camera.D]
    msg.k = camera.K.reshape(-1)
    msg.r = np.eye(3).reshape(-1)
    msg.p = np.hstack([camera.K, np.zeros((3, 1))]).reshape(-1)
    return msg


def _pack_rgb(rgb: np.ndarray) -> np.ndarray:
    """
    Pack uint8 colours as uint32 ``0x00RRGGBB``.

    The field is declared FLOAT32, so readers reinterpret these bytes as a float
    (rviz2 / PCL convention). The bits stay integer here: float denormal flushing
    could otherwise zero them.
    """
    colours = rgb.astype(np.uint32)
    return (colours[:, 0] << 16) | (colours[:, 1] << 8) | colours[:, 2]


def xyz_to_pointcloud2(points: np.ndarray, header: Any, rgb: np.ndarray | None = None,
                       extra_fields: dict[str, np.ndarray] | None = None) -> Any:
    """
    Build an unorganized (height 1) little-endian ``sensor_msgs/PointCloud2``.

    Fields are float32 ``x, y, z``, then ``rgb`` when colours are given (uint8 ``(N, 3)``
    packed as rviz2 and PCL expect), then each ``extra_fields`` entry as float32 (e.g.
    ``intensity``). ``is_dense`` is False when any coordinate is non-finite.
    """
    xyz = np.asarray(points)
    if xyz.ndim != 2 or xyz.shape[1] != 3:
        raise ValueError(f'points must have shape (N, 3), got {xyz.shape}')
    count = xyz.shape[0]
    columns = {'x': xyz[:, 0], 'y': xyz[:, 1], 'z': xyz[:, 2]}
    if rgb is not None:
        colours = np.asarray(rgb)
        if colours.shape != (count, 3) or colours.dtype != np.uint8:
            raise ValueError(
                f'rgb must be a uint8 array of shape ({count}, 3), got {colours.dtype} '
                f'{colours.shape}')
        columns['rgb'] = _pack_rgb(colours)
    for name, values in (extra_fields or {}).items():
        column = np.asarray(values)
        if not isinstance(name, str) or not name or name in columns:
            raise ValueError(
                f'extra field name {name!r} must be a non-empty string other than '
                f'{sorted(columns)}')
        if column.shape != (count,):
            raise ValueError(f'extra field {name!r} must have shape ({count},), '
                             f'got {column.shape}')
        columns[name] = column

    names = list(columns)
    cloud = np.empty(count, dtype=np.dtype(
        [(name, '<u4' if name == 'rgb' else '<f4') for name in names]))
    for name, values in columns.items():
        cloud[name] = values
    msg = PointCloud2()
    msg.header = header
    msg.height = 1
    msg.width = count
    msg.fields = [PointField(name=name, offset=4 * index, datatype=FLOAT32_DATATYPE, count=1)
                  for index, name in enumerate(names)]
    msg.is_bigendian = False
    msg.point_step = 4 * len(names)
    msg.row_step = msg.point_step * count
    msg.is_dense = bool(np.all(np.isfinite(xyz)))
    msg.data = to_byte_array(cloud)
    return msg
