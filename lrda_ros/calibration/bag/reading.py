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

"""A window of a rosbag2's frames for the calibration check: image, cloud, camera, extrinsic."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


from ..score import CalibrationFrame, FrameSelection
from ..window import window_frames, WindowFrame
from ...datasets.poses import align_recorded_cloud
from ...datasets.rosbag import EXTRINSIC_HINT
from ...geometry import InvalidCameraError, RigidTransform
from ...messages.compressed import any_image_to_rgb
from ...messages.conversions import camera_info_to_camera_model, pointcloud2_to_xyz
from ...messages.pairing import PairingRule
from ...messages.rosbag import BagError, BagTopics, RosbagSource


@dataclass(frozen=True, eq=False)
class BagWindow:
    """The frames of a bag and its LiDAR->camera extrinsic (the bag's or the one given)."""

    path: Path
    raw: tuple[WindowFrame, ...]
    extrinsic: RigidTransform
    camera_frame: str
    lidar_frame: str
    #: How its clouds were paired with its images (the node's rule).
    pairing: PairingRule = PairingRule()

    def frames(self, T_cam_lidar: RigidTransform | None = None,
               selection: FrameSelection = FrameSelection()) -> list[CalibrationFrame]:
        """Return the check's frames with ``T_cam_lidar`` (default: the window's extrinsic)."""
        return window_frames(list(self.raw), selection, T_cam_lidar)


def bag_window(path: str | Path, topics: BagTopics = BagTopics(),
               extrinsic: RigidTransform | None = None, rectified: bool = False,
               pairing: PairingRule = PairingRule(), max_frames: int = 10) -> BagWindow:
    """
    Read up to ``max_frames`` synchronized frames of a bag, paired as the node pairs them.

    The extrinsic is ``extrinsic`` or else the bag's /tf_static and /tf at the first cloud's
    stamp; a bag without one fails naming the frames. With ``pairing.motion`` on, each cloud
    is moved to its image's stamp as the node moves it (the LiDAR's poses from the bag's /tf;
    without them it stays as measured, as in the node): the node's monitor checks such clouds.
    """
    source = RosbagSource(path, topics)
    queue_size, slop_s = pairing.queue_size, pairing.slop_s
    stamps, _ = source.synchronize(queue_size, slop_s, pairing.motion)
    if not stamps:
        raise BagError(f'{source.path}: no synchronized frames: '
                       f'{source.no_match_reason(queue_size, slop_s)}')
    camera_frame, lidar_frame = source.first_frame_ids()
    tree = source.transform_tree()
    if extrinsic is None:
        try:
            extrinsic = tree.lookup(camera_frame, lidar_frame, stamps[0][2])
        except KeyError as error:
            raise BagError(f'{source.path}: no LiDAR->camera transform in /tf_static or /tf: '
                           f'{error.args[0]}; {EXTRINSIC_HINT}') from None
    raw = []
    for messages in source.synchronized(queue_size, slop_s, order=stamps[:max_frames]):
        image, info, cloud = messages[:3]
        try:
            camera = camera_info_to_camera_model(info, rectified=rectified)
        except InvalidCameraError as error:
            raise BagError(f'{source.path}: {source.topics.camera_info}: field {error}') from None
        stamp = stamps[len(raw)][0]
        points = align_recorded_cloud(pointcloud2_to_xyz(cloud), cloud, stamp, pairing.motion,
                                      tree).points
        raw.append(WindowFrame(any_image_to_rgb(image), points, camera, extrinsic, stamp))
    return BagWindow(source.path, tuple(raw), extrinsic, camera_frame, lidar_frame, pairing)
