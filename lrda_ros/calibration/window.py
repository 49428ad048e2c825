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
A window of frames as the node and ``lrda calibrate`` hold it, and the one check of it.

Both hand a window of :class:`WindowFrame` (the image, the cloud in the LiDAR frame in scan
order, the camera and the extrinsic to judge) to :func:`check_window`: the same frames and
extrinsic give the same verdict and correction whichever runs it. Frames are checked in the
order of their image stamps, so a window gathered out of order (a bag replayed in a loop)
is the window a recording of the same frames gives.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .score import calibration_frame, CalibrationFrame, FrameSelection
from .search import CalibrationCheck, check_calibration, CheckConfig
from ..geometry.camera import CameraModel
from ..geometry.transforms import RigidTransform


@dataclass(frozen=True, eq=False)
class WindowFrame:
    """One synchronized frame as arrays: RGB image, cloud (LiDAR frame, scan order), camera."""

    rgb: np.ndarray
    points: np.ndarray
    camera: CameraModel
    #: The LiDAR->camera extrinsic the frame was given (the one judged).
    T_cam_lidar: RigidTransform
    #: The image's header stamp (0: unknown).
    stamp_ns: int = 0


def frame_problem(frame: WindowFrame) -> str:
    """Return why the check cannot read a frame ('' if it can): what calibration_frame rejects."""
    points = np.asarray(frame.points)
    if points.ndim != 2 or points.shape[1] != 3:
        return f'points must have shape (N, 3), got {points.shape}'
    height, width = np.shape(frame.rgb)[:2]
    if (height, width) != (frame.camera.height, frame.camera.width):
        return (f'image is {width}x{height}, the camera {frame.camera.width}x'
                f'{frame.camera.height}')
    return ''


def in_stamp_order(frames: list[WindowFrame]) -> list[WindowFrame]:
    """Return the frames by image stamp (a stable sort: unknown stamps keep their order)."""
    return sorted(frames, key=lambda frame: frame.stamp_ns)


def window_frames(frames: list[WindowFrame], selection: FrameSelection = FrameSelection(),
                  T_cam_lidar: RigidTransform | None = None) -> list[CalibrationFrame]:
    """
    Return the check's frames of a window, in stamp order.

    ``T_cam_lidar``: the extrinsic to judge instead of each frame's own. A frame the check
    cannot read raises (InvalidPointsError: its image and camera disagree in size).
    """
    return [calibration_frame(frame.rgb, frame.points,
                              frame.T_cam_lidar if T_cam_lidar is None else T_cam_lidar,
                              frame.camera, selection=selection)
            for frame in in_stamp_order(frames)]


def check_window(frames: list[WindowFrame], config: CheckConfig = CheckConfig(),
                 selection: FrameSelection = FrameSelection(),
                 T_cam_lidar: RigidTransform | None = None
                 ) -> tuple[CalibrationCheck, list[CalibrationFrame]]:
    """Return the check of a window (see :func:`window_frames`) and the frames it scored."""
    scored = window_frames(frames, selection, T_cam_lidar)
    return check_calibration(scored, config), scored
