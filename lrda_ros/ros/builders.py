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

import cv2
import numpy as np
from sensor_msgs.msg import CameraInfo, Image, PointCloud2, PointField

from ..geometry import backproject_depth, CameraModel, colours_at
from ..geometry.projection import backproject_depth_grid
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
    msg = _pointcloud2(names, count, header)
    msg.is_dense = bool(np.all(np.isfinite(xyz)))
    msg.data = to_byte_array(cloud)
    return msg


def _pointcloud2(names: list[str], count: int, header: Any) -> Any:
    """Return an unorganized little-endian PointCloud2 of ``count`` points, 4-byte ``names``."""
    msg = PointCloud2()
    msg.header = header
    msg.height = 1
    msg.width = count
    msg.fields = [PointField(name=name, offset=4 * index, datatype=FLOAT32_DATATYPE, count=1)
                  for index, name in enumerate(names)]
    msg.is_bigendian = False
    msg.point_step = 4 * len(names)
    msg.row_step = msg.point_step * count
    return msg


def _rgb_words(rgb: np.ndarray, stride: int) -> np.ndarray:
    """
    Return each sampled pixel's colour as 4 bytes b, g, r, 0: the little-endian ``0x00RRGGBB``.

    OpenCV's nearest-neighbour resize picks exactly every ``stride``-th pixel when the sizes
    divide (the pixels as one small image, with no strided copy); otherwise the whole image is
    converted and sampled.
    """
    height, width = rgb.shape[:2]
    if height % stride == 0 and width % stride == 0 and stride > 1:
        rgb = cv2.resize(rgb, (width // stride, height // stride),
                         interpolation=cv2.INTER_NEAREST)
        stride = 1
    words = cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2BGRA)
    words[..., 3] = 0
    return words.view(np.uint32)[::stride, ::stride, 0]


def depth_to_pointcloud2(depth: np.ndarray, camera: CameraModel, rgb: np.ndarray,
                         stride: int, header: Any) -> Any:
    """
    Build the coloured ``PointCloud2`` of ``depth`` back-projected at ``stride``.

    The message of ``xyz_to_pointcloud2(points, header, rgb=colours_at(rgb, rows, cols))`` with
    ``points, rows, cols = backproject_depth(depth, camera, stride)``, byte for byte. For a
    pinhole camera without skew each sampled pixel's x, y, z and colour are written into one
    16-byte record of a grid and the valid records are gathered at once into the message's
    bytes: no index arrays, per-field copies or structured array.
    """
    pixels = np.asarray(rgb)
    lifted = (backproject_depth_grid(depth, camera, stride, fields=4)
              if pixels.dtype == np.uint8 and pixels.shape == (*np.shape(depth), 3) else None)
    if lifted is None:  # another camera model, or an image that is not the depth's
        points, rows, cols = backproject_depth(depth, camera, stride)
        return xyz_to_pointcloud2(points, header, rgb=colours_at(pixels, rows, cols))
    records, valid, finite = lifted
    records.view(np.uint32)[..., 3] = _rgb_words(pixels, stride)
    # Each record as one 16-byte item: the gather moves records, not single values.
    gathered = records.view(np.dtype((np.void, 16))).reshape(-1)[valid.reshape(-1)]
    msg = _pointcloud2(['x', 'y', 'z', 'rgb'], gathered.size, header)
    msg.is_dense = finite
    msg.data = to_byte_array(gathered)
    return msg
