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
A recorded frame's messages into the pipeline's inputs, as the node reads live ones.

The checks come in the node's order and a frame the node would drop raises
:class:`FrameDropped` with the node's reason. Each cloud is read, placed by its own
T_camera_lidar and moved to the image's stamp by
:func:`~lrda_ros.datasets.poses.align_recorded_cloud` (``lrda eval --bag``'s code): poses from
the part of the recording's /tf the frame carries, or from KISS-ICP odometry registered on the
first LiDAR's clouds in order, anew with each chunk.
"""

from __future__ import annotations

from typing import Any

from .recordings import RawFrame
from ..datasets.poses import align_recorded_cloud, LidarOdometry
from ..errors import InputError
from ..geometry import InvalidCameraError, LidarCloud, RigidTransform
from ..messages.compressed import any_image_to_rgb
from ..messages.conversions import camera_info_to_camera_model, pointcloud2_to_xyz
from ..messages.stamps import header_stamp_ns, stamp_error, stamp_to_ns
from ..pipeline import FrameInputs
from ..settings import NodeSettings


class FrameDropped(Exception):
    """A frame the node would drop, with its reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason, self.message = reason, message


class FrameReader:
    """Reads a chunk's raw frames, in order, with the node's ``settings``."""

    def __init__(self, settings: NodeSettings) -> None:
        from rosbags.typesys import get_typestore, Stores

        self.settings = settings
        self._typestore = get_typestore(Stores.ROS2_KILTED)
        self._odometry: LidarOdometry | None = None
        #: The last frame's motion alignment outcome (the node's names) or 'off'.
        self.motion = 'off'

    def start(self, odometry: bool = False) -> None:
        """Begin a chunk; ``odometry``: LiDAR poses from KISS-ICP on its clouds (none before)."""
        self._odometry = LidarOdometry() if odometry else None

    def inputs(self, frame: RawFrame) -> FrameInputs:
        """Read the messages into arrays in the node's order of checks; raise FrameDropped."""
        self.motion = 'off'
        image, info, *clouds = (self._typestore.deserialize_cdr(raw, msgtype)
                                for msgtype, raw in frame.messages)
        for topic, message in zip(('image', 'camera_info', *frame.point_topics),
                                  (image, info, *clouds)):
            problem = stamp_error(message.header.stamp)
            if problem:
                raise FrameDropped('malformed', f'{topic}: {problem}')
        try:
            camera = camera_info_to_camera_model(info, rectified=self.settings.image_is_rectified)
        except InvalidCameraError as error:
            raise FrameDropped('bad_camera_info', f'camera_info field {error}') from None
        try:
            rgb = any_image_to_rgb(image)
        except InputError as error:
            raise FrameDropped('malformed', f'image: {error}') from None
        stamp_ns = stamp_to_ns(image.header.stamp)
        return FrameInputs.from_clouds(rgb, camera, self._clouds(frame, clouds, stamp_ns),
                                       stamp_ns)

    def _clouds(self, frame: RawFrame, clouds: list[Any], image_ns: int) -> list[LidarCloud]:
        """Return each cloud read, placed and moved to the image's stamp, as the node does."""
        read = []
        for topic, cloud in zip(frame.point_topics, clouds):
            try:
                read.append(pointcloud2_to_xyz(cloud))
            except InputError as error:
                raise FrameDropped('malformed', f'{topic}: {error}') from None
        if frame.T_cam_lidar is None:
            raise FrameDropped('no_transform', frame.missing_transform)
        if self._odometry is not None:  # registered as measured; its poses then align it
            self._odometry.register(read[0], header_stamp_ns(clouds[0]) or 0)
        lidar, motion = [], []
        for points, cloud, T in zip(read, clouds, frame.T_cam_lidar):
            aligned = align_recorded_cloud(points, cloud, image_ns, self.settings.motion,
                                           frame.poses, self._odometry,
                                           clouds[0].header.frame_id)
            motion.append(aligned.outcome)
            lidar.append(LidarCloud(aligned.points, RigidTransform.from_matrix(T)))
        self.motion = ', '.join(dict.fromkeys(motion))
        return lidar
