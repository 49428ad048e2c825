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
The LiDAR->camera calibration check, in pure numpy: no ROS, no files.

``edges`` (image edges, LiDAR depth discontinuities), ``score`` (Levinson & Thrun's score of a
window), ``optimize`` (the derivative-free search steps), ``confidence`` (observability,
standard errors, the halves' agreement), ``search`` (the check: :func:`check_calibration`),
``window`` (a window of frames and :func:`check_window`, which the node's monitor and
``lrda calibrate`` both call) and ``text`` (the result in words and as JSON). Reading a bag
and writing the report: :mod:`lrda_ros.calibration.bag`.
"""

from .score import calibration_frame, CalibrationFrame, FrameSelection
from .search import (
    CalibrationCheck, check_calibration, CheckConfig, CONSISTENT, NOT_ENOUGH_EVIDENCE, SUSPECT)
from .text import check_to_dict, describe
from .window import check_window, window_frames, WindowFrame

__all__ = [
    'calibration_frame', 'CalibrationCheck', 'CalibrationFrame', 'check_calibration',
    'check_to_dict', 'check_window', 'CheckConfig', 'CONSISTENT', 'describe', 'FrameSelection',
    'NOT_ENOUGH_EVIDENCE', 'SUSPECT', 'window_frames', 'WindowFrame',
]
