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
A camera's LiDAR clouds of one frame: read, placed in the camera, moved to the image's stamp.

A synchronized frame holds one cloud per point topic (``point_topics``). Each is read, given
its own LiDAR -> camera transform (the ``lidar_to_camera`` override, else tf2 from the cloud's
frame at its stamp) and moved to the image's stamp through its own frame and point times
(:class:`~lrda_ros.ros.motion_alignment.MotionAligner`); the pipeline then merges them into one
scan. A cloud that cannot be used drops the frame, counted under the node's reason with the
topic named, as a single cloud's always was.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from .bridges import MessageReader
from .cameras import Camera
from .motion_alignment import MotionAligner
from .tf_lookup import TransformLookup, TransformUnavailable
from ..errors import InputError
from ..geometry import LidarCloud, RigidTransform
from ..messages.point_times import NO_TIME_FIELD
from ..settings import NodeSettings

#: Counts a dropped frame and warns: (camera, reason, message, kind of input at fault).
DropFrame = Callable[[Camera, str, str, str], None]


class CloudInputs:
    """Turns a frame's point cloud messages into the clouds the pipeline projects."""

    def __init__(self, reader: MessageReader, motion: MotionAligner, drop: DropFrame) -> None:
        self._reader = reader
        self._motion = motion
        self._drop = drop

    def read(self, camera: Camera, settings: NodeSettings, tf: TransformLookup | None,
             image: Any, clouds: Sequence[Any]) -> list[LidarCloud] | None:
        """Return each point topic's cloud ready to project, or None (a counted drop)."""
        several = len(clouds) > 1
        # Each cloud is parsed once: its points, and its point times where alignment reads them.
        time_field = settings.motion.time_field if settings.motion.enabled else NO_TIME_FIELD
        read = []
        for topic, cloud in zip(settings.point_topics, clouds):
            try:
                cloud_read = self._reader.read_cloud(cloud, time_field)
            except InputError as error:
                self._drop(camera, 'malformed', f'{topic}: {error}', topic)
                return None
            transform = self._extrinsic(camera, settings, tf, image, cloud, topic, clouds[0],
                                        topic if several else '')
            if transform is None:
                return None
            points = self._motion.align(camera, settings, tf, cloud, image, cloud_read.points,
                                        topic if several else '', cloud_read)
            read.append(LidarCloud(points, transform))
        return read

    def _extrinsic(self, camera: Camera, settings: NodeSettings, tf: TransformLookup | None,
                   image: Any, cloud: Any, topic: str, first: Any,
                   kind: str) -> RigidTransform | None:
        """
        Return the cloud's T_camera_lidar, or None (a counted ``no_transform`` drop).

        ``kind`` keeps each LiDAR's drops apart in the throttled warnings ('' for one LiDAR).
        """
        cloud_frame, camera_frame = cloud.header.frame_id, image.header.frame_id
        if settings.extrinsic is not None:
            if cloud_frame != first.header.frame_id:
                # One override cannot place LiDARs in different frames: a wrong map otherwise.
                self._drop(camera, 'no_transform', (
                    f'{topic} is in frame {cloud_frame!r}, {settings.point_topics[0]} in '
                    f'{first.header.frame_id!r}: the lidar_to_camera override is one transform '
                    "for every cloud; give the LiDARs' transforms on tf2 instead"), kind)
                return None
            return settings.extrinsic
        if tf is None or not settings.use_tf:
            self._drop(camera, 'no_transform', 'no LiDAR->camera transform: tf2 unavailable '
                       'and no lidar_to_camera override', kind)
            return None
        try:
            return tf.lookup(camera_frame, cloud_frame, cloud.header.stamp, settings.tf_timeout)
        except TransformUnavailable as error:
            self._drop(camera, 'no_transform', f'{cloud_frame} -> {camera_frame}: {error}', kind)
            return None
