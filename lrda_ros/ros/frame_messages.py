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
A completed frame's output messages, built on the pipeline's two threads.

The colored image and the dense cloud are built on the pipeline's second thread while the
caller's thread builds the depth's and the confidence's messages. The confidence is then
computed on the caller's thread alone: its own split over the two threads would queue behind
the other outputs. Without the confidence, the caller's thread builds the dense cloud itself.
``benchmarks/host_path.py`` measures this against building the messages one after another
(its two ``outputs`` rows).
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Collection

from sensor_msgs.msg import CameraInfo

from .builders import depth_to_image_msg, depth_to_pointcloud2, rgb_to_image_msg
from ..colormap import colorize_depth
from ..geometry.second_thread import SameThread
from ..pipeline import FrameOutputs

#: The outputs by name, in publishing order.
OUTPUTS = ('depth', 'confidence', 'camera_info', 'colored', 'points_dense')


def frame_messages(outputs: FrameOutputs, header: Any, info: CameraInfo,
                   wanted: Collection[str], colormap_range: tuple[float | None, float | None],
                   points_stride: int) -> dict[str, Any]:
    """
    Return the messages of the ``wanted`` outputs (names in OUTPUTS), in OUTPUTS' order.

    ``header`` stamps every message (``info`` takes it too); ``colormap_range`` is the
    colored image's (near, far) in metres (None: this frame's own), ``points_stride`` the
    dense cloud's pixel step.
    """
    unknown = set(wanted) - set(OUTPUTS)
    if unknown:
        raise ValueError(f'unknown outputs {sorted(unknown)}: the outputs are {OUTPUTS}')
    beside = outputs.beside if outputs.beside is not None else SameThread()
    ahead: dict[str, Future] = {}
    if 'colored' in wanted:
        ahead['colored'] = beside.submit(_colored, outputs, header, colormap_range)
    if 'points_dense' in wanted and 'confidence' in wanted:
        ahead['points_dense'] = beside.submit(_points_dense, outputs, header, points_stride)
    built: dict[str, Any] = {}
    if 'depth' in wanted:
        built['depth'] = depth_to_image_msg(outputs.depth, header)
    if 'confidence' in wanted:
        built['confidence'] = depth_to_image_msg(outputs.confidence_on(SameThread()), header)
    elif 'points_dense' in wanted:
        built['points_dense'] = _points_dense(outputs, header, points_stride)
    if 'camera_info' in wanted:
        info.header = header
        built['camera_info'] = info
    built.update((name, future.result()) for name, future in ahead.items())
    return {name: built[name] for name in OUTPUTS if name in built}


def _colored(outputs: FrameOutputs, header: Any,
             colormap_range: tuple[float | None, float | None]) -> Any:
    return rgb_to_image_msg(colorize_depth(outputs.depth, *colormap_range), header)


def _points_dense(outputs: FrameOutputs, header: Any, stride: int) -> Any:
    inputs = outputs.prepared.inputs
    return depth_to_pointcloud2(outputs.depth, inputs.camera, inputs.rgb, stride, header)
