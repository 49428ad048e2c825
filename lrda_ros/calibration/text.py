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

"""The calibration check's result in words and numbers a user acts on (and JSON stores)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .score import correction_transform, PARAMETER_NAMES, SHOWN_SCALES, SHOWN_UNITS
from .search import CalibrationCheck, CONSISTENT, SUSPECT
from ..geometry.transforms import RigidTransform

#: Each camera axis and the motion it is the axis of (optical frame: x right, y down,
#: z forward).
AXIS_NAMES = {'x': 'pitch', 'y': 'yaw', 'z': 'roll'}


def describe(check: CalibrationCheck) -> str:
    """
    Return the check in one sentence a user can act on.

    E.g. 'the LiDAR->camera rotation looks off by 0.9 deg about the camera's y axis (yaw);
    time offset +35 ms (score +4.2 %, 10 frames)'.
    """
    if check.verdict == CONSISTENT:
        text = (f'{check.verdict}: {check.reason} (best rotation vector '
                + ', '.join(f'{value:+.2f}' for value in np.degrees(check.theta[:3])) + ' deg)')
    elif check.verdict != SUSPECT:
        text = f'{check.verdict}: {check.reason}'
    else:
        parts = []
        rotation = np.degrees(check.theta[:3])
        if np.any(rotation):
            axis = 'xyz'[int(np.argmax(np.abs(rotation)))]
            angle = np.degrees(np.linalg.norm(check.theta[:3]))
            parts.append(f'the LiDAR->camera rotation looks off by {angle:.2f} deg, mostly '
                         f"about the camera's {axis} axis ({AXIS_NAMES[axis]}; rotation vector "
                         + ', '.join(f'{value:+.2f}' for value in rotation) + ' deg)')
            translation = check.parameters[3:6]
            if not any(p.observable for p in translation):
                how = ('not observable in this window' if any(p.searched for p in translation)
                       else 'not searched')
                parts.append(f'a translation error of the mount ({how}) can look like such a '
                             'rotation')
        if np.any(check.theta[3:6]):
            parts.append('translation off by ' + ', '.join(
                f'{value:+.3f}' for value in check.theta[3:6]) + ' m (camera x, y, z)')
        if check.theta[6]:
            parts.append(f'time offset {1e3 * check.theta[6]:+.0f} ms (the image was taken that '
                         'long after its stamp)')
        text = '; '.join(parts)
    unobservable = [name for name, p in zip(PARAMETER_NAMES, check.parameters)
                    if p.searched and not p.observable]
    if unobservable:
        text += f'; not observable here: {", ".join(unobservable)}'
    return (f'{text} (score {100 * check.gain:+.1f} %, {check.frames} frames, '
            f'{check.points} outline points)')


def check_to_dict(check: CalibrationCheck, given: RigidTransform | None = None
                  ) -> dict[str, Any]:
    """
    Return the check as calibration.json holds it.

    ``rotation_deg`` is a rotation vector and ``translation_m`` a translation, both in the
    camera's optical frame, such that ``T_cam_lidar' = C T_cam_lidar``; ``time_offset_ms`` is
    null unless the window observes it. ``given`` adds the given and corrected extrinsics.
    """
    shown = check.theta * SHOWN_SCALES
    time_offset = check.parameter('time_offset')
    confidence = {}
    for index, (name, p) in enumerate(zip(PARAMETER_NAMES, check.parameters)):
        confidence[name] = {
            'value': None if p.value is None else round(float(p.value * SHOWN_SCALES[index]), 6),
            'standard_error': None if p.standard_error is None or not p.observable
            else round(float(p.standard_error * SHOWN_SCALES[index]), 6),
            'unit': SHOWN_UNITS[index], 'observable': p.observable, 'searched': p.searched,
            **({'note': p.note} if p.note else {})}
    result = {
        'verdict': check.verdict, 'reason': check.reason, 'message': describe(check),
        'rotation_deg': [round(float(v), 6) for v in shown[:3]],
        'translation_m': [round(float(v), 6) for v in shown[3:6]],
        'time_offset_ms': round(float(shown[6]), 3) if time_offset.observable else None,
        'convention': "T_cam_lidar' = C * T_cam_lidar; C's rotation vector and translation "
                      'are in the camera optical frame (x right, y down, z forward)',
        'confidence': confidence,
        'score': {'given': check.score_given, 'corrected': check.score_corrected,
                  'gain': check.gain},
        'frames': check.frames, 'outline_points': check.points,
        'score_evaluations': check.evaluations,
    }
    if given is not None:
        corrected = correction_transform(check.theta) @ given
        result['given_T_cam_lidar'] = given.as_matrix().round(9).tolist()
        result['corrected_T_cam_lidar'] = corrected.as_matrix().round(9).tolist()
    return result
