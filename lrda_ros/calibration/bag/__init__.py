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
The offline calibration check: a bag's LiDAR->camera extrinsic judged from its own frames.

``calibrate_bag(CalibrateOptions(bag))`` reads a window of frames, runs the check the node
runs (:func:`lrda_ros.calibration.check_window`) and writes ``calibration.json``, the
overlay of LiDAR outlines on the image before and after, and the score around the estimate.
"""

from .reading import bag_window, BagWindow
from .run import (
    calibrate_bag, calibrate_frames, calibrate_window, CalibrateOptions, CALIBRATION_JSON,
    CalibrationResult, OVERLAY_PNG, PROFILES_PNG)

__all__ = [
    'bag_window', 'BagWindow', 'CALIBRATION_JSON', 'calibrate_bag',
    'calibrate_frames', 'calibrate_window', 'CalibrateOptions', 'CalibrationResult',
    'OVERLAY_PNG', 'PROFILES_PNG',
]
