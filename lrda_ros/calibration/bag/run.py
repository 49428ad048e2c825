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

"""``lrda calibrate``: check a bag's LiDAR->camera calibration and write what was found."""

from __future__ import annotations

from dataclasses import dataclass, field
import json
from pathlib import Path

from .figures import overlay_figure, profile_figure, score_profiles
from .reading import bag_window, BagWindow
from ..score import CalibrationFrame, FrameSelection
from ..search import CalibrationCheck, check_calibration, CheckConfig
from ..text import check_to_dict, describe
from ..window import check_window
from ...geometry import RigidTransform
from ...messages.pairing import PairingRule
from ...messages.rosbag import BagTopics

CALIBRATION_JSON = 'calibration.json'
OVERLAY_PNG = 'overlay.png'
PROFILES_PNG = 'score_profiles.png'


@dataclass(frozen=True)
class CalibrateOptions:
    """What ``lrda calibrate`` reads, how it checks and where it writes."""

    bag: Path
    output: Path = Path('out/calibrate')
    topics: BagTopics = BagTopics()
    #: T_camera_lidar instead of the bag's /tf_static and /tf.
    extrinsic: RigidTransform | None = None
    image_is_rectified: bool = False
    #: How clouds are paired with images: the node's (sync.*, motion.align).
    pairing: PairingRule = PairingRule()
    max_frames: int = 10
    check: CheckConfig = field(default_factory=CheckConfig)
    selection: FrameSelection = field(default_factory=FrameSelection)


@dataclass(frozen=True, eq=False)
class CalibrationResult:
    """A check and the frames it was made on."""

    check: CalibrationCheck
    frames: list[CalibrationFrame]

    @property
    def message(self) -> str:
        """Return the check in one sentence (text.describe)."""
        return describe(self.check)


def calibrate_frames(frames: list[CalibrationFrame],
                     config: CheckConfig = CheckConfig()) -> CalibrationResult:
    """Check a window of frames (the Python API's entry without a bag)."""
    return CalibrationResult(check_calibration(frames, config), list(frames))


def calibrate_window(window: BagWindow, options: CalibrateOptions) -> CalibrationResult:
    """Check a bag window with its extrinsic and write the report into ``options.output``."""
    check, frames = check_window(list(window.raw), options.check, options.selection)
    result = CalibrationResult(check, frames)
    output = Path(options.output)
    output.mkdir(parents=True, exist_ok=True)
    report = check_to_dict(result.check, window.extrinsic)
    report.update(bag=str(window.path), camera_frame=window.camera_frame,
                  lidar_frame=window.lidar_frame, paired_by=window.pairing.describe(),
                  frame_stamps_ns=[frame.stamp_ns for frame in window.raw])
    (output / CALIBRATION_JSON).write_text(json.dumps(report, indent=2) + '\n')
    if frames:
        # The frame with the most outline points shows the most.
        best = max(range(len(frames)), key=lambda index: len(frames[index].points))
        overlay_figure(window.raw[best].rgb, frames[best], result.check, output / OVERLAY_PNG)
        if result.check.frames >= 1:
            profile_figure(score_profiles(frames, result.check.theta), result.check,
                           output / PROFILES_PNG)
    return result


def calibrate_bag(options: CalibrateOptions) -> CalibrationResult:
    """
    Check a bag's LiDAR->camera calibration; write calibration.json and the figures.

    The Python API of ``lrda calibrate``: ``calibrate_bag(CalibrateOptions(Path(bag)))``.
    """
    window = bag_window(options.bag, options.topics, options.extrinsic,
                        options.image_is_rectified, options.pairing, options.max_frames)
    return calibrate_window(window, options)
