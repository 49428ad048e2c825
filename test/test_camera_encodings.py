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
Camera image encodings read against OpenCV's conversions (what cv_bridge runs).

cv_bridge's ``imgmsg_to_cv2(msg, 'rgb8')`` maps ROS's ``bayer_rggb`` to OpenCV's
``COLOR_BayerBG2RGB`` (OpenCV names a pattern by its second row), ``yuv422``/``uyvy`` to
``COLOR_YUV2RGB_UYVY``, ``yuv422_yuy2``/``yuyv`` to ``COLOR_YUV2RGB_YUY2``, and scales 16 bits
to 8 with ``convertTo(..., 255 / 65535)``; the references below are those OpenCV calls.
Every value is compared exactly: both sides are integer arithmetic with the same rounding.
"""

from __future__ import annotations

from types import SimpleNamespace

from lrda_ros.messages.conversions import (
    CAMERA_ENCODINGS, image_to_rgb, MalformedMessageError, UnsupportedEncodingError)
import numpy as np
import pytest

cv2 = pytest.importorskip('cv2', reason='OpenCV (opencv-python-headless) is not installed')

#: ROS Bayer pattern -> OpenCV's code, as cv_bridge maps them.
BAYER_CODES = {'rggb': 'COLOR_BayerBG2RGB', 'bggr': 'COLOR_BayerRG2RGB',
               'gbrg': 'COLOR_BayerGR2RGB', 'grbg': 'COLOR_BayerGB2RGB'}
YUV_CODES = {'uyvy': 'COLOR_YUV2RGB_UYVY', 'yuv422': 'COLOR_YUV2RGB_UYVY',
             'yuyv': 'COLOR_YUV2RGB_YUY2', 'yuv422_yuy2': 'COLOR_YUV2RGB_YUY2'}
#: 16-bit encoding -> OpenCV's code to RGB (None: already RGB) and channels.
RGB16 = {'rgb16': (None, 3), 'bgr16': ('COLOR_BGR2RGB', 3), 'rgba16': ('COLOR_RGBA2RGB', 4),
         'bgra16': ('COLOR_BGRA2RGB', 4), 'mono16': ('COLOR_GRAY2RGB', 1)}
HEIGHT, WIDTH = 12, 18


def message(encoding: str, pixels: np.ndarray, padding: int = 0, big_endian: bool = False):
    """Return an Image-like message of ``pixels`` (H, W[, C]) with ``padding`` bytes a row."""
    values = pixels.astype(pixels.dtype.newbyteorder('>' if big_endian else '<'))
    rows = values.reshape(pixels.shape[0], -1).view(np.uint8)
    rows = np.concatenate([rows, np.full((rows.shape[0], padding), 7, np.uint8)], axis=1)
    return SimpleNamespace(encoding=encoding, height=pixels.shape[0], width=pixels.shape[1],
                           step=rows.shape[1], is_bigendian=int(big_endian), data=rows.tobytes())


def to_8_bits(values: np.ndarray) -> np.ndarray:
    """Scale 16 bits to 8 as OpenCV's convertTo with 255 / 65535 (all values are positive)."""
    return cv2.convertScaleAbs(values, alpha=255.0 / 65535.0)


@pytest.fixture
def rng():
    return np.random.default_rng(5)


@pytest.mark.parametrize('padding', [0, 6])
@pytest.mark.parametrize('bits', [8, 16])
@pytest.mark.parametrize('pattern', list(BAYER_CODES))
def test_bayer_mosaics_are_demosaiced_as_opencv_does(pattern, bits, padding, rng):
    dtype = np.uint8 if bits == 8 else np.uint16
    raw = rng.integers(0, np.iinfo(dtype).max + 1, (HEIGHT, WIDTH)).astype(dtype)
    expected = cv2.cvtColor(raw, getattr(cv2, BAYER_CODES[pattern]))
    if bits == 16:
        expected = to_8_bits(expected)
    rgb = image_to_rgb(message(f'bayer_{pattern}{bits}', raw, padding))
    np.testing.assert_array_equal(rgb, expected)


def test_a_bayer_pattern_puts_each_colour_where_it_was_sampled():
    # A flat scene: red 200, green 100, blue 50 sampled through an RGGB mosaic.
    raw = np.empty((HEIGHT, WIDTH), np.uint8)
    raw[0::2, 0::2], raw[0::2, 1::2], raw[1::2, 0::2], raw[1::2, 1::2] = 200, 100, 100, 50
    rgb = image_to_rgb(message('bayer_rggb8', raw))
    assert (rgb == [200, 100, 50]).all()


@pytest.mark.parametrize('encoding', list(YUV_CODES))
def test_packed_yuv422_is_converted_as_opencv_does(encoding, rng):
    packed = rng.integers(0, 256, (HEIGHT, WIDTH, 2)).astype(np.uint8)
    expected = cv2.cvtColor(packed, getattr(cv2, YUV_CODES[encoding]))
    np.testing.assert_array_equal(image_to_rgb(message(encoding, packed, padding=4)), expected)


def test_uyvy_and_yuyv_order_the_same_bytes_differently():
    # Mid grey with a strong V (red) in UYVY order: read as YUYV it would be another colour.
    pixels = np.tile(np.array([[[128, 126], [240, 126]]], np.uint8), (HEIGHT, WIDTH // 2, 1))
    uyvy = image_to_rgb(message('uyvy', pixels))
    assert (uyvy[..., 0] > uyvy[..., 2] + 100).all()  # red far above blue
    assert not np.array_equal(uyvy, image_to_rgb(message('yuyv', pixels)))


@pytest.mark.parametrize('big_endian', [False, True])
@pytest.mark.parametrize('encoding', list(RGB16))
def test_16_bit_colour_and_mono_are_scaled_as_cv_bridge_does(encoding, big_endian, rng):
    code, channels = RGB16[encoding]
    shape = (HEIGHT, WIDTH) if channels == 1 else (HEIGHT, WIDTH, channels)
    pixels = rng.integers(0, 65536, shape).astype(np.uint16)
    expected = to_8_bits(pixels if code is None else cv2.cvtColor(pixels, getattr(cv2, code)))
    rgb = image_to_rgb(message(encoding, pixels, padding=2, big_endian=big_endian))
    np.testing.assert_array_equal(rgb, expected)


@pytest.mark.parametrize('encoding', ['nv21', '16UC1', '32FC1', 'bayer_rggb12'])
def test_what_is_still_unsupported_names_the_fix(encoding):
    msg = message(encoding, np.zeros((HEIGHT, WIDTH), np.uint8))
    with pytest.raises(UnsupportedEncodingError) as raised:
        image_to_rgb(msg)
    text = str(raised.value)
    assert repr(encoding) in text and 'rgb8' in text and 'debayer' in text
    assert all(name in text for name in CAMERA_ENCODINGS)


def test_an_odd_width_yuv422_image_is_malformed():
    with pytest.raises(MalformedMessageError, match='even width'):
        image_to_rgb(message('uyvy', np.zeros((4, 5, 2), np.uint8)))


# uyvy and yuyv are the Jazzy-era names: cv_bridge builds before 2024 do not know them.
@pytest.mark.parametrize('encoding', ['bayer_grbg8', 'bayer_bggr16', 'yuv422', 'yuv422_yuy2',
                                      'rgb16', 'bgr16', 'mono16'])
def test_cv_bridge_gives_the_same_rgb(encoding, rng):
    cv_bridge = pytest.importorskip('cv_bridge', reason='cv_bridge is not installed (ROS 2)')
    from sensor_msgs.msg import Image

    if encoding in YUV_CODES:
        pixels = rng.integers(0, 256, (HEIGHT, WIDTH, 2)).astype(np.uint8)
    elif encoding.endswith('8'):
        pixels = rng.integers(0, 256, (HEIGHT, WIDTH)).astype(np.uint8)
    else:
        channels = RGB16.get(encoding, (None, 1))[1]
        shape = (HEIGHT, WIDTH) if channels == 1 else (HEIGHT, WIDTH, channels)
        pixels = rng.integers(0, 65536, shape).astype(np.uint16)
    fake = message(encoding, pixels)
    msg = Image(encoding=encoding, height=fake.height, width=fake.width, step=fake.step,
                is_bigendian=0, data=fake.data)
    expected = cv_bridge.CvBridge().imgmsg_to_cv2(msg, desired_encoding='rgb8')
    np.testing.assert_array_equal(image_to_rgb(msg), expected)
