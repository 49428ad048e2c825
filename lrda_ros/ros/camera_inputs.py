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
A camera's image and camera_info of one frame read into an RGB array and a camera model.

What cannot be read is a :class:`Drop`: the node counts it under its reason, naming the
input at fault, and goes on with the next frame.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np

from .bridges import MessageReader
from ..errors import InputError
from ..geometry import CameraModel, InvalidCameraError
from ..messages.compressed import compressed_image_to_rgb
from ..messages.conversions import camera_info_to_camera_model, UnsupportedEncodingError
from ..messages.stamps import stamp_error
from ..settings import NodeSettings


class Drop(NamedTuple):
    """Why a frame is dropped: the counted reason, the message, the input at fault."""

    reason: str
    message: str
    topic: str


def read_camera_inputs(reader: MessageReader, settings: NodeSettings, image: Any, info: Any,
                       clouds: Sequence[Any]) -> tuple[np.ndarray, CameraModel] | Drop:
    """Return the frame's RGB image and camera model, or why the frame is dropped."""
    topics = ('image', 'camera_info', *settings.point_topics)
    for topic, message in zip(topics, (image, info, *clouds)):
        problem = stamp_error(message.header.stamp)
        if problem:
            return Drop('malformed', f'{topic}: {problem}', topic)
    try:
        model = camera_info_to_camera_model(info, rectified=settings.image_is_rectified)
    except InvalidCameraError as error:
        return Drop('bad_camera_info', f'camera_info field {error}', 'camera_info')
    try:
        rgb = (compressed_image_to_rgb(image) if settings.image_transport == 'compressed'
               else reader.image_to_rgb(image))
    except UnsupportedEncodingError as error:
        return Drop('unsupported_encoding', f'image: {error}', 'image')
    except InputError as error:
        return Drop('malformed', f'image: {error}', 'image')
    return rgb, model
