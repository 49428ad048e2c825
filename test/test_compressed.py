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
CompressedImage decoding against data encoded by OpenCV, as image_transport's plugins do.

The encoders here follow image_transport's ``compressed`` (BGR to ``cv2.imencode``) and
``compressed_depth_image_transport`` (12-byte header + 16-bit PNG; 32FC1 as quantized inverse
depth) publishers, so the package's Pillow decoder is checked against an independent writer.
"""

from __future__ import annotations

import struct
from types import SimpleNamespace

import numpy as np
import pytest

cv2 = pytest.importorskip('cv2', reason='opencv-python-headless is not installed '
                                        '(pip install -r requirements-dev.txt)')

from conftest import smooth_image  # noqa: E402, I100
from lrda_ros.messages.compressed import (  # noqa: E402
    any_depth_to_array, any_image_to_rgb, compressed_depth_to_array, compressed_image_to_rgb)
from lrda_ros.messages.conversions import (  # noqa: E402
    MalformedMessageError, UnsupportedEncodingError)


def compressed(fmt: str, data: bytes) -> SimpleNamespace:
    """Return a CompressedImage-like message (readers are duck-typed)."""
    return SimpleNamespace(header=None, format=fmt, data=np.frombuffer(data, np.uint8))


def image_transport_jpeg(rgb: np.ndarray, quality: int = 95) -> SimpleNamespace:
    ok, data = cv2.imencode('.jpg', rgb[..., ::-1], [cv2.IMWRITE_JPEG_QUALITY, quality])
    assert ok
    return compressed('rgb8; jpeg compressed bgr8', data.tobytes())


def image_transport_png(rgb: np.ndarray) -> SimpleNamespace:
    ok, data = cv2.imencode('.png', rgb[..., ::-1])
    assert ok
    return compressed('bgr8; png compressed bgr8', data.tobytes())


def compressed_depth_32fc1(depth: np.ndarray, depth_max: float = 10.0,
                           quantization: float = 100.0) -> SimpleNamespace:
    """Encode like compressed_depth_image_transport's publisher (format png)."""
    quant_a = np.float32(quantization * (quantization + 1.0))
    quant_b = np.float32(1.0 - quant_a / np.float32(depth_max))
    with np.errstate(divide='ignore', invalid='ignore'):
        inverse = np.where(depth < depth_max, quant_a / depth + quant_b, 0)
    ok, png = cv2.imencode('.png', inverse.astype(np.uint16))
    assert ok
    header = struct.pack('<iff', 0, quant_a, quant_b)
    return compressed('32FC1; compressedDepth png', header + png.tobytes())


def compressed_depth_16uc1(depth_mm: np.ndarray) -> SimpleNamespace:
    ok, png = cv2.imencode('.png', depth_mm.astype(np.uint16))
    assert ok
    return compressed('16UC1; compressedDepth png', struct.pack('<iff', 0, 0.0, 0.0)
                      + png.tobytes())


def test_png_decodes_exactly_and_jpeg_closely():
    rgb = smooth_image(3, 48, 64)
    np.testing.assert_array_equal(compressed_image_to_rgb(image_transport_png(rgb)), rgb)
    decoded = compressed_image_to_rgb(image_transport_jpeg(rgb))
    assert decoded.shape == rgb.shape and decoded.dtype == np.uint8
    # Colour order survives: each channel matches its own, not a swapped one.
    error = np.abs(decoded.astype(int) - rgb.astype(int))
    assert error.mean() < 4.0  # JPEG at quality 95, 4:2:0 chroma
    swapped = np.abs(decoded[..., ::-1].astype(int) - rgb.astype(int))
    assert swapped.mean() > 10 * error.mean()


def test_mono_jpeg_becomes_grey_rgb():
    grey = smooth_image(4, 32, 40)[..., 0]
    ok, data = cv2.imencode('.jpg', grey, [cv2.IMWRITE_JPEG_QUALITY, 100])
    rgb = compressed_image_to_rgb(compressed('mono8; jpeg compressed mono8', data.tobytes()))
    assert rgb.shape == (32, 40, 3)
    np.testing.assert_array_equal(rgb[..., 0], rgb[..., 2])
    assert np.abs(rgb[..., 0].astype(int) - grey).max() <= 2


def test_bad_compressed_images_raise_clear_errors():
    data = image_transport_jpeg(smooth_image(5, 40, 40)).data.tobytes()
    with pytest.raises(MalformedMessageError, match='cannot decode the JPEG'):
        compressed_image_to_rgb(compressed('bgr8; jpeg compressed bgr8', data[:len(data) // 2]))
    with pytest.raises(UnsupportedEncodingError, match='neither JPEG nor PNG'):
        compressed_image_to_rgb(compressed('bgr8; webp compressed bgr8', b'RIFF0000WEBP'))
    with pytest.raises(UnsupportedEncodingError, match='neither JPEG nor PNG'):
        compressed_image_to_rgb(compressed('jpeg', b''))
    ok, png16 = cv2.imencode('.png', np.full((4, 4), 1000, np.uint16))
    with pytest.raises(UnsupportedEncodingError, match='depth, not colour'):
        compressed_image_to_rgb(compressed('16UC1; png compressed mono16', png16.tobytes()))


def test_compressed_depth_32fc1_matches_the_codec():
    rng = np.random.default_rng(0)
    depth = rng.uniform(0.3, 9.5, (30, 40)).astype(np.float32)
    depth[0, :5] = np.nan
    depth[1, :5] = 12.0  # beyond depth_max: no depth
    decoded = compressed_depth_to_array(compressed_depth_32fc1(depth))
    valid = np.isfinite(depth) & (depth < 10.0)
    assert np.all(decoded[~valid] == 0.0)
    # Inverse-depth quantization: error grows with depth^2 / A (A = 10100).
    np.testing.assert_allclose(decoded[valid], depth[valid],
                               atol=0, rtol=float(np.nanmax(depth[valid])) / 10100 * 1.01)


def test_compressed_depth_16uc1_is_millimetres():
    depth_mm = np.array([[0, 1, 1500], [65535, 42, 7]], np.uint16)
    decoded = any_depth_to_array(compressed_depth_16uc1(depth_mm))
    np.testing.assert_allclose(decoded, depth_mm.astype(np.float32) / 1000.0, rtol=1e-6)
    plain = compressed('16UC1; png compressed mono16',
                       cv2.imencode('.png', depth_mm)[1].tobytes())
    np.testing.assert_allclose(compressed_depth_to_array(plain), decoded)


def test_bad_compressed_depth_raises_clear_errors():
    with pytest.raises(MalformedMessageError, match='too short'):
        compressed_depth_to_array(compressed('16UC1; compressedDepth png', b'\0' * 12))
    with pytest.raises(UnsupportedEncodingError, match='RVL'):
        compressed_depth_to_array(compressed('16UC1; compressedDepth rvl', b'\0' * 40))
    colour = image_transport_png(smooth_image(6, 8, 8))
    with pytest.raises(UnsupportedEncodingError, match='not depth'):
        compressed_depth_to_array(colour)


def test_dispatch_between_image_and_compressed_image():
    rgb = smooth_image(7, 10, 12)
    raw = SimpleNamespace(encoding='rgb8', height=10, width=12, step=36, is_bigendian=0,
                          data=rgb.tobytes())
    np.testing.assert_array_equal(any_image_to_rgb(raw), rgb)
    np.testing.assert_array_equal(any_image_to_rgb(image_transport_png(rgb)), rgb)


def test_on_real_frames_jpeg_moves_the_depth_no_more_than_equal_pixel_noise(shared_data):
    """
    After TTO, a JPEG's depth differs from the raw image's as much as any such perturbation.

    Adam steps amplify small input changes (the demo prior explains little of a KITTI scene),
    so raw and JPEG depth are not equal; the control is Gaussian noise of the JPEG's RMS error
    on the raw image. Cold frames of 20 steps at the README's CPU processing size (266).
    """
    from pathlib import Path

    from lrda_ros.engine import DepthCompleter, load_depth_model, TTOConfig
    from lrda_ros.eval.run import EvalOptions, open_source

    bag = shared_data / 'bags' / 'kitti_2011_09_26_3frames_db3'
    frames = list(open_source(EvalOptions(kind='rosbag', root=bag, output=Path('unused'))))
    rng = np.random.default_rng(0)

    # Without warm start every frame starts from the same weights: one completer serves all.
    completer = DepthCompleter(load_depth_model('demo', 'cpu'),
                               TTOConfig(device='cpu', dtype='float32', processing_size=266,
                                         iterations=20))

    def depth(rgb: np.ndarray, sparse: np.ndarray) -> np.ndarray:
        return completer.complete(rgb, sparse).depth

    def median_change(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.median(np.abs(a - b) / a))

    jpeg_changes, noise_changes, errors = [], [], {'raw': [], 'jpeg': [], 'noise': []}
    for frame in frames:
        jpeg = compressed_image_to_rgb(image_transport_jpeg(frame.rgb))
        rms = np.sqrt(np.mean((jpeg.astype(np.float64) - frame.rgb) ** 2))
        noisy = np.clip(frame.rgb + rng.normal(0, rms, frame.rgb.shape), 0, 255)
        raw_depth, jpeg_depth, noisy_depth = (
            depth(rgb, frame.sparse_depth) for rgb in (frame.rgb, jpeg,
                                                       noisy.round().astype(np.uint8)))
        jpeg_changes.append(median_change(raw_depth, jpeg_depth))
        noise_changes.append(median_change(raw_depth, noisy_depth))
        truth = frame.gt_depth > 0
        for name, value in (('raw', raw_depth), ('jpeg', jpeg_depth), ('noise', noisy_depth)):
            errors[name].append(np.abs(value[truth] - frame.gt_depth[truth]).mean())
    assert np.mean(jpeg_changes) < 2 * np.mean(noise_changes), (jpeg_changes, noise_changes)
    # The error moves by 10-30 % with any such perturbation (and with the thread count), so
    # the JPEG's is compared with the raw and the noisy images' together.
    assert np.mean(errors['jpeg']) < 1.25 * np.mean(errors['raw'] + errors['noise']), errors
