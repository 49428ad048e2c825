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
Write a densified recording: every message of the input, and the node's outputs per frame.

The input's messages are copied byte for byte with their connections (type definitions and
QoS). Per completed frame the node's outputs follow, built without ROS through ``rosbags``'s
type store: ``depth`` (the layout of the node's depth messages,
:func:`~lrda_ros.messages.conversions.depth_image_fields`) and ``depth/confidence`` with the
image's header, and ``depth/camera_info``, the input camera_info with the image's header, as
the node republishes it. Each output is logged when its last input was: where a live node would
have had the set.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from pathlib import Path
import shutil
from typing import Any, Callable

from .options import CONFIDENCE, DEPTH, DEPTH_INFO
from .recordings import Recording
from ..messages.conversions import depth_image_fields
from ..messages.rosbag import cdr_header_frame_id, cdr_header_stamp, open_reader
from ..messages.stamps import ns_to_sec_nanosec

IMAGE, CAMERA_INFO = 'sensor_msgs/msg/Image', 'sensor_msgs/msg/CameraInfo'


def _copy_connection(writer, connection):
    ext = connection.ext
    return writer.add_connection(
        connection.topic, connection.msgtype, msgdef=connection.msgdef.data,
        rihs01=connection.digest, serialization_format=ext.serialization_format,
        offered_qos_profiles=ext.offered_qos_profiles)


def write_densified(path: Path, recording: Recording, topics: dict[str, str], storage: str,
                    load: Callable[[int], dict[str, Any]]) -> int:
    """
    Write ``recording`` with the outputs ``load(frame index)`` gives into a new bag at ``path``.

    ``topics`` maps depth, depth/camera_info and depth/confidence to the topics written.
    Returns how many frames have a depth message (the others were dropped).
    """
    from contextlib import closing

    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import get_typestore, Stores

    typestore = get_typestore(Stores.ROS2_KILTED)
    types = typestore.types
    frames = deque(sorted(recording.frames, key=lambda frame: (frame.log_ns, frame.index)))
    wanted = {}  # (topic, header stamp) -> (frame index, role)
    for frame in frames:
        for role, topic, stamp in zip(('image', 'camera_info'), (recording.topics.image,
                                                                 recording.topics.camera_info),
                                      frame.stamps):
            wanted[(topic, stamp)] = (frame.index, role)
    seen: dict[int, dict[str, bytes]] = {}
    path = Path(path)
    if path.exists():
        shutil.rmtree(path)
    plugin = StoragePlugin.MCAP if storage == 'mcap' else StoragePlugin.SQLITE3
    written = 0
    with closing(open_reader(recording.path)) as reader, \
            Writer(path, version=8, storage_plugin=plugin) as writer:
        copies = {connection.id: _copy_connection(writer, connection)
                  for connection in reader.connections}
        connections: dict[str, Any] = {}

        def write(name: str, log_ns: int, message) -> None:
            # Created at first use: a recording without a completed frame gets no empty topic.
            msgtype = CAMERA_INFO if name == DEPTH_INFO else IMAGE
            if name not in connections:
                connections[name] = writer.add_connection(topics[name], msgtype,
                                                          typestore=typestore)
            writer.write(connections[name], log_ns, typestore.serialize_cdr(message, msgtype))

        def header(image: bytes):
            sec, nanosec = ns_to_sec_nanosec(cdr_header_stamp(image))
            return types['std_msgs/msg/Header'](
                stamp=types['builtin_interfaces/msg/Time'](sec=sec, nanosec=nanosec),
                frame_id=cdr_header_frame_id(image))

        def flush(before_ns: int | None) -> None:
            nonlocal written
            while frames and (before_ns is None or frames[0].log_ns < before_ns):
                frame = frames.popleft()
                inputs = seen.pop(frame.index)
                stored = load(frame.index)
                if 'depth' not in stored:
                    continue  # dropped, as the node drops it: nothing published
                image_header = header(inputs['image'])
                # The node's order: depth, confidence, camera_info.
                write(DEPTH, frame.log_ns, types[IMAGE](
                    header=image_header, **depth_image_fields(stored['depth'])))
                if 'confidence' in stored:
                    write(CONFIDENCE, frame.log_ns, types[IMAGE](
                        header=image_header, **depth_image_fields(stored['confidence'])))
                info = typestore.deserialize_cdr(inputs['camera_info'], CAMERA_INFO)
                write(DEPTH_INFO, frame.log_ns, replace(info, header=image_header))
                written += 1

        for connection, log_ns, raw in reader.messages():
            flush(log_ns)
            writer.write(copies[connection.id], log_ns, raw)
            key = (connection.topic, cdr_header_stamp(raw)) if connection.topic in (
                recording.topics.image, recording.topics.camera_info) else None
            if key in wanted:
                index, role = wanted[key]
                seen.setdefault(index, {}).setdefault(role, raw)
        flush(None)
    return written
