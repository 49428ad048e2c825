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
Read ROS 2 sensor messages into numpy arrays, without ROS, cv_bridge or sensor_msgs_py.

Readers are duck-typed: they take rclpy message objects and the dataclasses that
``rosbags`` deserializes alike, touching only the message fields by name. ``data`` may be
``bytes``, ``array.array('B')``, a list of ints or a numpy uint8 array. Readers return new
C-contiguous arrays that do not alias the message. Building messages (which needs the
message classes) is :mod:`lrda_ros.ros.builders`.
"""

from __future__ import annotations

import array
from typing import Any

import cv2
import numpy as np

from ..errors import InputError
from ..geometry import camera_for_image, CameraModel, InvalidCameraError, RigidTransform


class MessageError(InputError):
    """A message that cannot be read; ``field`` names the message field at fault."""


class UnsupportedEncodingError(MessageError):
    """An image encoding this module cannot convert."""


class MalformedMessageError(MessageError):
    """A message whose fields contradict each other (sizes, steps, missing fields)."""


# encoding -> its channels' layout and their number (8 bits each).
RGB_ENCODINGS = {
    'rgb8': ('rgb', 3),
    'bgr8': ('bgr', 3),
    'rgba8': ('rgba', 4),
    'bgra8': ('bgra', 4),
    'mono8': ('mono', 1),
}
#: The OpenCV conversion to RGB of each of them but rgb8 (8 or 16 bits a channel alike).
_TO_RGB_CONVERSIONS = {'bgr': cv2.COLOR_BGR2RGB, 'rgba': cv2.COLOR_RGBA2RGB,
                       'bgra': cv2.COLOR_BGRA2RGB, 'mono': cv2.COLOR_GRAY2RGB}
# Their 16-bit forms (rgb16, ..., mono16): the same channels of two bytes each.
RGB16_ENCODINGS = {name.replace('8', '16'): layout for name, layout in RGB_ENCODINGS.items()}
# Bayer encoding -> OpenCV's bilinear demosaicing to RGB (cv_bridge's mapping: OpenCV names a
# pattern by the second row's first two pixels), and bit depth.
_BAYER_TO_RGB = {'rggb': cv2.COLOR_BayerBG2RGB, 'bggr': cv2.COLOR_BayerRG2RGB,
                 'gbrg': cv2.COLOR_BayerGR2RGB, 'grbg': cv2.COLOR_BayerGB2RGB}
BAYER_ENCODINGS = {f'bayer_{pattern}{bits}': (code, bits)
                   for pattern, code in _BAYER_TO_RGB.items() for bits in (8, 16)}
# Packed YUV 4:2:2 encoding -> OpenCV's BT.601 conversion to RGB. ROS names UYVY 'uyvy' (before
# Jazzy 'yuv422') and YUYV 'yuyv' (before Jazzy 'yuv422_yuy2').
YUV422_ENCODINGS = {
    'uyvy': cv2.COLOR_YUV2RGB_UYVY, 'yuv422': cv2.COLOR_YUV2RGB_UYVY,
    'yuyv': cv2.COLOR_YUV2RGB_YUY2, 'yuv422_yuy2': cv2.COLOR_YUV2RGB_YUY2,
}
#: Every encoding :func:`image_to_rgb` reads.
CAMERA_ENCODINGS = (*RGB_ENCODINGS, *RGB16_ENCODINGS, *BAYER_ENCODINGS, *YUV422_ENCODINGS)
# encoding -> (numpy kind and size, factor to metres).
_DEPTH_ENCODINGS = {
    '32FC1': ('f4', 1.0),
    '64FC1': ('f8', 1.0),
    '16UC1': ('u2', 1e-3),
    'mono16': ('u2', 1e-3),
}
# sensor_msgs/PointField datatype -> numpy kind and size.
_POINT_FIELD_TYPES = {
    1: 'i1', 2: 'u1', 3: 'i2', 4: 'u2', 5: 'i4', 6: 'u4', 7: 'f4', 8: 'f8',
}
FLOAT32_DATATYPE = 7
# x, y, z are metres as FLOAT32 or FLOAT64 (sensor_msgs/PointCloud2 conventions, what PCL and
# rviz2 read): integer coordinates carry a driver-specific scale and would be garbage here.
_COORDINATE_DATATYPES = {7: 'FLOAT32', 8: 'FLOAT64'}
# Coordinates in metres a real cloud has (1 mm .. 100 km): read with the wrong byte order,
# floats mostly fall outside (their exponent comes from a mantissa byte).
_PLAUSIBLE_METRES = (1e-3, 1e5)
_BYTE_ORDER_SAMPLE = 4096


def byte_view(data: Any) -> np.ndarray:
    """View message ``data`` as a flat uint8 array, copying only lists and tuples."""
    if isinstance(data, np.ndarray):
        if data.dtype != np.uint8:
            raise MalformedMessageError(f'data must hold uint8 values, got dtype {data.dtype}')
        return data.reshape(-1)
    if isinstance(data, array.array) and data.itemsize != 1:
        raise MalformedMessageError(
            f"data array must have typecode 'B', got {data.typecode!r}")
    if isinstance(data, (bytes, bytearray, memoryview, array.array)):
        return np.frombuffer(data, dtype=np.uint8)
    try:
        return np.asarray(data, dtype=np.uint8).reshape(-1)
    except (TypeError, ValueError, OverflowError) as error:
        raise MalformedMessageError(
            f'data must be bytes, array.array, a list of 0..255 or a uint8 array: {error}'
        ) from error


def to_byte_array(values: np.ndarray) -> array.array:
    """
    Copy a numpy array's bytes into ``array.array('B')`` for a message ``data`` field.

    rclpy stores ``array.array('B')`` as it is; ``bytes`` are checked element by element
    when ``ROS_PYTHON_CHECK_FIELDS=1`` (about 90 ms for a 1242x375 RGB image, against
    under 1.5 ms this way).
    """
    buffer = array.array('B')
    buffer.frombytes(np.ascontiguousarray(values).reshape(-1).view(np.uint8))
    return buffer


def depth_image_fields(depth: np.ndarray) -> dict[str, Any]:
    """
    Return the fields, all but the header, of a little-endian ``32FC1`` ``sensor_msgs/Image``.

    ``depth`` is ``(H, W)`` float metres, written as given (REP 118: NaN where there is no
    depth). ``data`` is a uint8 array: rclpy messages take :func:`to_byte_array` of it. The one
    layout of the node's depth messages and of those ``lrda densify`` writes without ROS.
    """
    depth_map = np.asarray(depth)
    if depth_map.ndim != 2:
        raise ValueError(f'depth must have shape (H, W), got {depth_map.shape}')
    if not np.issubdtype(depth_map.dtype, np.floating):
        raise ValueError(f'depth must be a float array in metres, got dtype {depth_map.dtype}')
    height, width = depth_map.shape
    data = np.ascontiguousarray(depth_map, dtype='<f4').reshape(-1).view(np.uint8)
    return {'height': height, 'width': width, 'encoding': '32FC1', 'is_bigendian': 0,
            'step': 4 * width, 'data': data}


def pixel_rows(msg: Any, bytes_per_pixel: int, channels: int, dtype: str) -> np.ndarray:
    """Return an ``(H, W, channels)`` strided view of an image message's pixels."""
    height, width, step = int(msg.height), int(msg.width), int(msg.step)
    data = byte_view(msg.data)
    if step < width * bytes_per_pixel:
        raise MalformedMessageError(
            f'step {step} is shorter than width {width} x {bytes_per_pixel} bytes per pixel '
            f'for encoding {msg.encoding!r}')
    if data.size != height * step:
        raise MalformedMessageError(
            f'data has {data.size} bytes, expected height {height} x step {step} = '
            f'{height * step}')
    item = bytes_per_pixel // channels
    return np.ndarray(shape=(height, width, channels), dtype=np.dtype(dtype), buffer=data,
                      strides=(step, bytes_per_pixel, item))


def image_to_rgb(msg: Any) -> np.ndarray:
    """
    Convert a camera ``sensor_msgs/Image`` to an ``(H, W, 3)`` uint8 RGB array.

    Reads ``rgb8``, ``bgr8``, ``rgba8``, ``bgra8`` (alpha dropped), ``mono8`` (replicated to
    three channels); their 16-bit forms (``rgb16`` ... ``mono16``, either byte order, scaled
    to 8 bits); Bayer mosaics ``bayer_{rggb,bggr,gbrg,grbg}{8,16}`` (bilinear demosaicing);
    and packed YUV 4:2:2, ``uyvy``/``yuv422`` and ``yuyv``/``yuv422_yuy2`` (BT.601). Each
    gives what cv_bridge's ``imgmsg_to_cv2(msg, 'rgb8')`` gives, through OpenCV's conversions.
    Rows may be padded (``step > width * bytes per pixel``).
    """
    encoding = msg.encoding
    if encoding in RGB_ENCODINGS:
        layout, channels = RGB_ENCODINGS[encoding]
        return _channels_to_rgb(pixel_rows(msg, channels, channels, 'u1'), layout)
    if encoding in RGB16_ENCODINGS:
        layout, channels = RGB16_ENCODINGS[encoding]
        pixels = _native(pixel_rows(msg, 2 * channels, channels, _uint16(msg)))
        return _to_8_bits(_channels_to_rgb(pixels, layout))
    if encoding in BAYER_ENCODINGS:
        code, bits = BAYER_ENCODINGS[encoding]
        raw = pixel_rows(msg, bits // 8, 1, 'u1' if bits == 8 else _uint16(msg))[..., 0]
        if min(raw.shape) < 3:
            raise MalformedMessageError(f'a Bayer image needs at least 3x3 pixels, got '
                                        f'{raw.shape[1]}x{raw.shape[0]}')
        rgb = cv2.cvtColor(_native(raw), code)
        return rgb if bits == 8 else _to_8_bits(rgb)
    if encoding in YUV422_ENCODINGS:
        if int(msg.width) % 2:
            raise MalformedMessageError(
                f'a YUV 4:2:2 image needs an even width, got {int(msg.width)}')
        return cv2.cvtColor(pixel_rows(msg, 2, 2, 'u1'), YUV422_ENCODINGS[encoding])
    hint = ' (a 16UC1 image is depth: use depth_image_to_array)' if encoding == '16UC1' else ''
    raise UnsupportedEncodingError(
        f'cannot convert image encoding {encoding!r} to RGB{hint}; supported: '
        f'{", ".join(CAMERA_ENCODINGS)}. Publish one of those (e.g. image_proc\'s debayer '
        'or a format converter republishing as rgb8)', field='image')


def _uint16(msg: Any) -> str:
    return '>u2' if msg.is_bigendian else '<u2'


def _native(pixels: np.ndarray) -> np.ndarray:
    """Return ``pixels`` in the machine's byte order, which OpenCV reads (copied only then)."""
    return pixels if pixels.dtype.isnative else pixels.astype(pixels.dtype.newbyteorder('='))


def _channels_to_rgb(pixels: np.ndarray, layout: str) -> np.ndarray:
    """
    Return (H, W, C) pixels of ``layout`` (rgb, bgr, rgba, bgra, mono) as contiguous RGB.

    OpenCV's channel moves: a pass over the pixels (numpy's fancy index is 50x slower).
    """
    if layout == 'rgb':
        return np.ascontiguousarray(pixels)
    return cv2.cvtColor(pixels if layout != 'mono' else pixels[..., 0],
                        _TO_RGB_CONVERSIONS[layout])


def _to_8_bits(values: np.ndarray) -> np.ndarray:
    """Scale 16-bit values to 8 bits as cv_bridge does (OpenCV convertTo, 255 / 65535)."""
    return np.ascontiguousarray(np.rint(values / 257.0).astype(np.uint8))


def depth_image_to_array(msg: Any) -> np.ndarray:
    """
    Convert a depth ``sensor_msgs/Image`` to an ``(H, W)`` float32 array in metres.

    ``32FC1`` / ``64FC1`` hold metres; ``16UC1`` / ``mono16`` hold millimetres.
    ``is_bigendian`` and padded rows are honoured. Invalid pixels (NaN, +-inf, <= 0, and
    0 in integer encodings) become 0.0, the package's "no depth" value.
    """
    encoding = msg.encoding
    if encoding not in _DEPTH_ENCODINGS:
        raise UnsupportedEncodingError(
            f'cannot read depth from image encoding {encoding!r}; supported: '
            f'{sorted(_DEPTH_ENCODINGS)}')
    kind, to_metres = _DEPTH_ENCODINGS[encoding]
    dtype = ('>' if msg.is_bigendian else '<') + kind
    raw = pixel_rows(msg, np.dtype(dtype).itemsize, 1, dtype)[..., 0]
    depth = raw.astype(np.float32)
    if to_metres != 1.0:
        depth *= np.float32(to_metres)
    with np.errstate(invalid='ignore'):
        depth[~(np.isfinite(depth) & (depth > 0))] = 0.0
    return depth


def float_image_to_array(msg: Any) -> np.ndarray:
    """
    Convert a ``32FC1`` ``sensor_msgs/Image`` to an ``(H, W)`` float32 array, values as they are.

    For maps whose NaN means something (the completed depth, its confidence), unlike
    :func:`depth_image_to_array`. ``is_bigendian`` and padded rows are honoured.
    """
    if msg.encoding != '32FC1':
        raise UnsupportedEncodingError(f'expected a 32FC1 image, got encoding {msg.encoding!r}')
    dtype = '>f4' if msg.is_bigendian else '<f4'
    return pixel_rows(msg, 4, 1, dtype)[..., 0].astype(np.float32)


def camera_info_to_camera_model(msg: Any, rectified: bool = False) -> CameraModel:
    """
    Convert a ``sensor_msgs/CameraInfo`` to the ``CameraModel`` of its image.

    ``rectified`` says whether the image is ``image_rect``; :func:`camera_for_image` decides
    what follows (``K`` and ``D`` for a raw image, ``P`` without distortion for a rectified
    one). Binning and a partial region of interest are not supported. Raises
    ``InvalidCameraError`` naming the field at fault (``K``, ``P``, ``D``,
    ``distortion_model``, ``width``, ``height``, ``binning``, ``roi``).
    """
    binning = (int(getattr(msg, 'binning_x', 0)), int(getattr(msg, 'binning_y', 0)))
    if max(binning) > 1:
        raise InvalidCameraError(f'binning {binning} is not supported (use 0 or 1)')
    roi = getattr(msg, 'roi', None)
    if roi is not None and int(roi.width) not in (0, int(msg.width)):
        raise InvalidCameraError(
            'roi: a partial region of interest is not supported '
            f'(roi width {roi.width}, image width {msg.width})')
    return camera_for_image(int(msg.width), int(msg.height), msg.k, msg.d,
                            msg.distortion_model, msg.p, image_is_rectified=rectified)


def transform_to_rigid(msg: Any) -> RigidTransform:
    """
    Convert a ``geometry_msgs/Transform`` or ``TransformStamped`` to a ``RigidTransform``.

    A ``TransformStamped`` with ``header.frame_id = A`` and ``child_frame_id = B`` gives
    ``T_A_B`` (maps points in B into A).
    """
    transform = getattr(msg, 'transform', msg)
    translation = transform.translation
    rotation = transform.rotation
    return RigidTransform.from_translation_quaternion(
        [translation.x, translation.y, translation.z],
        [rotation.x, rotation.y, rotation.z, rotation.w])


def _xyz_dtype(msg: Any, swapped: bool = False) -> np.dtype:
    """Build a structured dtype exposing the x, y, z fields of a PointCloud2 point."""
    point_step = int(msg.point_step)
    byte_order = '>' if bool(msg.is_bigendian) != swapped else '<'
    fields = {f.name: f for f in msg.fields}
    missing = [name for name in ('x', 'y', 'z') if name not in fields]
    if missing:
        raise MalformedMessageError(
            f'PointCloud2 lacks field(s) {missing}; it has {sorted(fields)}')
    formats, offsets = [], []
    for name in ('x', 'y', 'z'):
        point_field = fields[name]
        kind = _POINT_FIELD_TYPES.get(int(point_field.datatype))
        if int(point_field.datatype) not in _COORDINATE_DATATYPES:
            raise MalformedMessageError(
                f'field {name!r} has datatype {point_field.datatype}; x, y, z must be FLOAT32 '
                '(7) or FLOAT64 (8) metres (sensor_msgs/PointField)')
        if int(point_field.count) != 1:
            raise MalformedMessageError(
                f'field {name!r} has count {point_field.count}; expected 1')
        offset = int(point_field.offset)
        if offset < 0 or offset + np.dtype(kind).itemsize > point_step:
            raise MalformedMessageError(
                f'field {name!r} at offset {offset} ({kind}) does not fit in point_step '
                f'{point_step}')
        formats.append(byte_order + kind)
        offsets.append(offset)
    return np.dtype({'names': ['x', 'y', 'z'], 'formats': formats, 'offsets': offsets,
                     'itemsize': point_step})


def pointcloud2_view(msg: Any) -> np.ndarray:
    """
    Return a validated ``(height, width)`` structured view of a PointCloud2's x, y, z.

    Raises MalformedMessageError for missing or integer coordinates, sizes that contradict
    each other and an ``is_bigendian`` that contradicts the data.
    """
    height, width = int(msg.height), int(msg.width)
    point_step, row_step = int(msg.point_step), int(msg.row_step)
    point_dtype = _xyz_dtype(msg)
    if height * width == 0:
        return np.zeros((0, 0), dtype=point_dtype)
    if row_step < width * point_step:
        raise MalformedMessageError(
            f'row_step {row_step} is shorter than width {width} x point_step {point_step}')
    data = byte_view(msg.data)
    if data.size < height * row_step:
        raise MalformedMessageError(
            f'data has {data.size} bytes, fewer than height {height} x row_step {row_step}'
            f' = {height * row_step}')
    cloud = np.ndarray(shape=(height, width), dtype=point_dtype, buffer=data,
                       strides=(row_step, point_step))
    _check_byte_order(msg, cloud, data)
    return cloud


def pointcloud2_to_xyz(msg: Any, dtype: np.dtype = np.float32) -> np.ndarray:
    """
    Read the finite x, y, z coordinates of a ``sensor_msgs/PointCloud2`` as ``(N, 3)``.

    Handles any field order and offsets, FLOAT32/FLOAT64 coordinates, padding inside points
    and at row ends, organized clouds and big-endian data. Points with a non-finite coordinate
    are dropped; an empty cloud gives a ``(0, 3)`` array. Integer coordinates and an
    ``is_bigendian`` that contradicts the data raise MalformedMessageError.
    """
    return finite_xyz(pointcloud2_view(msg), dtype)[0]


def finite_xyz(cloud: np.ndarray, dtype: np.dtype = np.float32) -> tuple[np.ndarray, np.ndarray]:
    """
    Return the finite x, y, z of a :func:`pointcloud2_view` as ``(N, 3)``, and which they are.

    The second array is the ``(height * width,)`` mask of the points kept (all coordinates
    finite in ``dtype``), row-major: what aligns a per-point field with the points.
    """
    xyz = np.empty((cloud.size, 3), dtype=dtype)
    with np.errstate(over='ignore'):  # float64 beyond float32's range: inf, dropped
        for column, name in enumerate(('x', 'y', 'z')):
            xyz[:, column] = cloud[name].reshape(-1)
    # Per column, not np.all(axis=1): a reduction over rows of three is several times slower.
    finite = np.isfinite(xyz[:, 0])
    finite &= np.isfinite(xyz[:, 1])
    finite &= np.isfinite(xyz[:, 2])
    return (xyz if finite.all() else xyz[finite]), finite


def _plausible_fraction(points: np.ndarray) -> float:
    """Return the fraction of finite non-zero coordinates within _PLAUSIBLE_METRES."""
    values = np.stack([points[name].astype(np.float64) for name in ('x', 'y', 'z')])
    with np.errstate(invalid='ignore', over='ignore'):
        magnitude = np.abs(values[np.isfinite(values) & (values != 0)])
    if magnitude.size == 0:
        return 1.0  # nothing to judge by (all zero or NaN): either order reads the same
    low, high = _PLAUSIBLE_METRES
    return float(np.mean((magnitude >= low) & (magnitude <= high)))


def _check_byte_order(msg: Any, cloud: np.ndarray, data: np.ndarray) -> None:
    """
    Raise MalformedMessageError when ``is_bigendian`` contradicts the data's byte order.

    Judged on a sample of points: read as declared, few coordinates are plausible metres,
    while read the other way nearly all are. Correctly declared data of either order pass.
    """
    sample = cloud.reshape(-1)[:_BYTE_ORDER_SAMPLE]
    declared = _plausible_fraction(sample)
    if declared >= 0.5:
        return
    other = np.ndarray(shape=cloud.shape, dtype=_xyz_dtype(msg, swapped=True), buffer=data,
                       strides=cloud.strides).reshape(-1)[:_BYTE_ORDER_SAMPLE]
    swapped = _plausible_fraction(other)
    if swapped > 0.9:
        declared_order = 'big' if msg.is_bigendian else 'little'
        actual_order = 'little' if msg.is_bigendian else 'big'
        raise MalformedMessageError(
            f'PointCloud2 is_bigendian={bool(msg.is_bigendian)} but its x, y, z read as '
            f'{declared_order}-endian are implausible ({declared:.0%} within 1 mm .. 100 km) '
            f'and as {actual_order}-endian plausible ({swapped:.0%}): fix is_bigendian')
