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
Decode ``sensor_msgs/CompressedImage`` as image_transport's plugins write it, with Pillow.

- ``compressed`` (topic ``<image>/compressed``): a JPEG or PNG file in ``data``; ``format``
  reads like ``"bgr8; jpeg compressed bgr8"``. The file itself is in standard channel order
  (image_transport converts to BGR before OpenCV writes it), so a decoder's RGB is right.
- ``compressedDepth`` (topic ``<depth>/compressedDepth``): ``format`` ``"16UC1;
  compressedDepth png"`` or ``"32FC1; compressedDepth png"``; ``data`` is a 12-byte header
  (int32 format, float32 ``depthQuantA``, ``depthQuantB``) then a 16-bit PNG: millimetres for
  16UC1, quantized inverse depth ``depth = A / (value - B)`` for 32FC1 (0 = no depth).

Like :mod:`.conversions`, readers are duck-typed (rclpy and ``rosbags`` messages alike) and
raise ``MalformedMessageError`` / ``UnsupportedEncodingError`` (both ``ValueError``).
"""

from __future__ import annotations

import io
import struct
from typing import Any

import numpy as np
from PIL import Image as PilImage

from .conversions import (
    byte_view, depth_image_to_array, image_to_rgb, MalformedMessageError,
    UnsupportedEncodingError)

_SIGNATURES = {b'\xff\xd8\xff': 'JPEG', b'\x89PNG\r\n\x1a\n': 'PNG'}
_DEPTH_HEADER = struct.Struct('<iff')
_SIXTEEN_BIT_MODES = ('I;16', 'I;16L', 'I;16B', 'I;16N', 'I')


def is_compressed(msg: Any) -> bool:
    """Return True for a ``CompressedImage`` (it has ``format``; an ``Image`` has not)."""
    return hasattr(msg, 'format') and not hasattr(msg, 'encoding')


def _decode(data: bytes, what: str) -> PilImage.Image:
    """Decode a JPEG or PNG file fully; raise a ValueError saying what is wrong."""
    kind = next((name for magic, name in _SIGNATURES.items() if data.startswith(magic)), None)
    if kind is None:
        raise UnsupportedEncodingError(
            f'{what}: data is neither JPEG nor PNG (starts with {data[:8].hex()}); only the '
            "'compressed' (jpeg, png) and 'compressedDepth' (png) transports are supported")
    try:
        image = PilImage.open(io.BytesIO(data), formats=[kind])
        image.load()  # decode now: truncated data fails here, not later
    except (OSError, SyntaxError, ValueError, PilImage.DecompressionBombError) as error:
        raise MalformedMessageError(f'{what}: cannot decode the {kind} data: {error}') from None
    return image


def compressed_image_to_rgb(msg: Any) -> np.ndarray:
    """Decode a JPEG or PNG ``CompressedImage`` (8-bit colour or mono) to ``(H, W, 3)`` RGB."""
    image = _decode(byte_view(msg.data).tobytes(), f'CompressedImage ({msg.format!r})')
    if image.mode in _SIXTEEN_BIT_MODES or image.mode == 'F':
        raise UnsupportedEncodingError(
            f'CompressedImage ({msg.format!r}) holds a {image.mode} image: 16-bit or float '
            'images are depth, not colour')
    return np.asarray(image.convert('RGB'), dtype=np.uint8).copy()


def _source_encoding(msg: Any) -> str:
    """Return the encoding before the first ';' of ``format`` (image_transport's convention)."""
    return str(msg.format).split(';', 1)[0].strip()


def compressed_depth_to_array(msg: Any) -> np.ndarray:
    """
    Decode a depth ``CompressedImage`` to ``(H, W)`` float32 metres, 0.0 = no depth.

    Takes ``compressedDepth`` (16UC1 millimetres or 32FC1 quantized inverse depth, PNG) and a
    plain 16-bit PNG from the ``compressed`` transport (``16UC1`` / ``mono16``, millimetres).
    """
    data = byte_view(msg.data).tobytes()
    encoding = _source_encoding(msg)
    what = f'CompressedImage ({msg.format!r})'
    if 'compressedDepth' in str(msg.format):
        if 'rvl' in str(msg.format):
            raise UnsupportedEncodingError(
                f'{what}: the RVL codec is not supported; record compressedDepth as png')
        if len(data) <= _DEPTH_HEADER.size:
            raise MalformedMessageError(f'{what}: {len(data)} bytes, too short for the '
                                        f'{_DEPTH_HEADER.size}-byte compressedDepth header')
        _, quant_a, quant_b = _DEPTH_HEADER.unpack_from(data)
        data = data[_DEPTH_HEADER.size:]
    elif encoding not in ('16UC1', 'mono16'):
        raise UnsupportedEncodingError(
            f'{what}: not depth; expected a compressedDepth format or a 16UC1/mono16 PNG')
    image = _decode(data, what)
    if image.mode not in _SIXTEEN_BIT_MODES:
        raise MalformedMessageError(f'{what}: expected a 16-bit PNG, got mode {image.mode}')
    raw = np.asarray(image).astype(np.float64)
    if encoding == '32FC1':
        with np.errstate(divide='ignore', invalid='ignore'):
            depth = np.where(raw > 0, quant_a / (raw - quant_b), 0.0)
    elif encoding in ('16UC1', 'mono16'):
        depth = raw * 1e-3
    else:
        raise UnsupportedEncodingError(
            f'{what}: compressedDepth of {encoding!r}; supported: 16UC1, 32FC1')
    depth = depth.astype(np.float32)
    depth[~(np.isfinite(depth) & (depth > 0))] = 0.0
    return depth


def any_image_to_rgb(msg: Any) -> np.ndarray:
    """Return the RGB pixels of an ``Image`` or a ``CompressedImage``."""
    return compressed_image_to_rgb(msg) if is_compressed(msg) else image_to_rgb(msg)


def any_depth_to_array(msg: Any) -> np.ndarray:
    """Return the depth in metres (0.0 = none) of an ``Image`` or a ``CompressedImage``."""
    return compressed_depth_to_array(msg) if is_compressed(msg) else depth_image_to_array(msg)
