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

"""Camera encodings over DDS: a Bayer and a YUV camera give depth; an unknown one is a drop."""

from __future__ import annotations

from conftest import spin_until
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from lrda_ros.ros.builders import rgb_to_image_msg  # noqa: E402, I100
from test_node import CAMERA_FRAME, frames, header, system  # noqa: E402, F401

cv2 = pytest.importorskip('cv2', reason='OpenCV (opencv-python-headless) is not installed')


def encoded(rgb: np.ndarray, stamp_ns: int, encoding: str):
    """Return the frame's image as a camera of ``encoding`` would send it (made with OpenCV)."""
    msg = rgb_to_image_msg(rgb, header(CAMERA_FRAME, stamp_ns))
    if encoding == 'bayer_rggb8':
        # Sample the RGGB mosaic: R at even rows and columns, B at odd ones, G elsewhere.
        raw = rgb[..., 1].copy()
        raw[0::2, 0::2], raw[1::2, 1::2] = rgb[0::2, 0::2, 0], rgb[1::2, 1::2, 2]
        data, step = raw, rgb.shape[1]
    elif encoding == 'yuv422_yuy2':
        yuv = cv2.cvtColor(rgb, cv2.COLOR_RGB2YUV)  # BT.601, then 4:2:2 YUYV by hand
        packed = np.empty(rgb.shape[:2] + (2,), np.uint8)
        packed[..., 0] = yuv[..., 0]
        packed[:, 0::2, 1], packed[:, 1::2, 1] = yuv[:, 0::2, 1], yuv[:, 0::2, 2]
        data, step = packed, 2 * rgb.shape[1]
    else:  # an encoding the node does not read; its bytes do not matter
        data, step = rgb[..., :1].copy(), rgb.shape[1]
    msg.encoding, msg.step, msg.data = encoding, step, data.tobytes()
    return msg


@pytest.mark.parametrize('encoding', ['bayer_rggb8', 'yuv422_yuy2'])
def test_a_bayer_or_yuv_camera_gives_depth(system, frames, encoding):  # noqa: F811
    node, harness, executor = system()
    stamp = 5_000_000_000
    harness.publish(frames[0], stamp, image=encoded(frames[0].rgb, stamp, encoding))
    assert spin_until(executor, lambda: harness.received['depth']
                      and node.stats.processed == 1, 60), node.stats
    assert node.stats.dropped == {}
    depth = np.frombuffer(bytes(harness.received['depth'][0].data), np.float32)
    assert np.isfinite(depth).mean() > 0.99


def test_an_unsupported_encoding_is_one_counted_drop_naming_the_fix(system, frames):  # noqa: F811
    node, harness, executor = system()
    stamp = 6_000_000_000
    harness.publish(frames[0], stamp, image=encoded(frames[0].rgb, stamp, 'nv21'))
    assert spin_until(executor, lambda: node.stats.dropped, 30)
    assert node.stats.dropped == {'unsupported_encoding': 1}
    harness.publish(frames[1], stamp + 10**8)  # the node runs on
    assert spin_until(executor, lambda: harness.received['depth'], 60)

    def reported():
        mine = node.get_fully_qualified_name()  # /diagnostics is shared
        statuses = [s for d in harness.diagnostics for s in d.status if s.name.startswith(mine)]
        values = {kv.key: kv.value for kv in statuses[-1].values} if statuses else {}
        return values.get('dropped (unsupported_encoding)') == '1'

    assert spin_until(executor, reported, 10)
