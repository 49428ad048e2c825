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

"""The calibration check's figures: LiDAR outlines on the image before and after, profiles."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..score import (
    CalibrationFrame, correction_transform, PARAMETER_NAMES, SHOWN_SCALES, WindowScore)
from ..search import CalibrationCheck
from ...geometry.camera import project_points

#: Offsets of the score profiles, in the units shown (deg, m, ms).
PROFILE_SPANS = (1.5,) * 3 + (0.15,) * 3 + (60.0,)
_TO_THETA = 1.0 / SHOWN_SCALES
_LABELS = ('rotation about x, pitch (deg)', 'rotation about y, yaw (deg)',
           'rotation about z, roll (deg)', 'translation x (m)', 'translation y (m)',
           'translation z (m)', 'time offset (ms)')


def _outline_pixels(frame: CalibrationFrame, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return the frame's outline points' pixels at correction ``theta`` and their depth."""
    points = WindowScore([frame])._points_in_camera(float(theta[6]))[0]
    uv, depth = project_points(correction_transform(theta).apply(points), frame.camera)
    inside = (depth > 0) & np.isfinite(uv).all(axis=1)
    return uv[inside], depth[inside]


def overlay_figure(rgb: np.ndarray, frame: CalibrationFrame, check: CalibrationCheck,
                   path: Path) -> None:
    """
    Write the image twice, the LiDAR outline points over it: given and corrected extrinsic.

    Points are coloured by depth (metres, colour bar at the right); the title says the
    verdict and the correction.
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    height, width = rgb.shape[:2]
    figure, axes = plt.subplots(2, 1, figsize=(12, 2 * 12 * height / width + 1.2),
                                constrained_layout=True)
    far = 40.0
    scatter = None
    for axis, theta, title in ((axes[0], np.zeros(7), 'given extrinsic'),
                               (axes[1], check.theta, 'corrected extrinsic')):
        uv, depth = _outline_pixels(frame, theta)
        axis.imshow(rgb)
        scatter = axis.scatter(uv[:, 0], uv[:, 1], c=depth, s=5, cmap='turbo_r', vmin=0,
                               vmax=far, linewidths=0)
        axis.set_xlim(0, width)
        axis.set_ylim(height, 0)
        axis.set_axis_off()
        axis.set_title(f'LiDAR depth discontinuities on image edges: {title}', fontsize=10)
    bar = figure.colorbar(scatter, ax=axes, fraction=0.03, pad=0.01)
    bar.set_label('LiDAR point depth (m)')
    figure.suptitle(f'verdict: {check.verdict}; correction: rotation vector '
                    + ', '.join(f'{v:+.2f}' for v in np.degrees(check.theta[:3])) + ' deg',
                    fontsize=10)
    figure.savefig(path, dpi=110)
    plt.close(figure)


def score_profiles(frames: list[CalibrationFrame], theta: np.ndarray, steps: int = 13
                   ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Return per parameter the offsets (shown units) around ``theta`` and the window score."""
    score = WindowScore(frames)
    moving = any(frame.moving for frame in frames)
    profiles = {}
    for index, name in enumerate(PARAMETER_NAMES):
        if index == 6 and not moving:
            continue
        offsets = np.linspace(-PROFILE_SPANS[index], PROFILE_SPANS[index], steps)
        values = []
        for offset in offsets:
            trial = np.array(theta, np.float64)
            trial[index] += offset * _TO_THETA[index]
            values.append(score(trial))
        profiles[name] = (offsets, np.array(values))
    return profiles


def profile_figure(profiles: dict[str, tuple[np.ndarray, np.ndarray]],
                   check: CalibrationCheck, path: Path) -> None:
    """Write the window score around the estimate, one panel per parameter."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(profiles), figsize=(2.6 * len(profiles), 2.8),
                                constrained_layout=True, squeeze=False)
    for axis, (name, (offsets, values)) in zip(axes[0], profiles.items()):
        index = PARAMETER_NAMES.index(name)
        estimate = check.parameters[index]
        axis.plot(offsets, values, '-o', markersize=3)
        axis.axvline(0.0, color='k', linewidth=0.8, label='estimate')
        base = -check.theta[index] / _TO_THETA[index]
        axis.axvline(base, color='tab:red', linestyle='--', linewidth=0.8, label='given')
        axis.set_xlabel('offset from the estimate:\n' + _LABELS[index], fontsize=8)
        note = ('' if estimate.observable else ' (not searched)' if not estimate.searched
                else ' (not observable)')
        axis.set_title(name + note, fontsize=9)
        axis.tick_params(labelsize=7)
    axes[0][0].set_ylabel('window score (mean edge value\nunder the outline points)',
                          fontsize=8)
    axes[0][0].legend(fontsize=7)
    figure.savefig(path, dpi=110)
    plt.close(figure)
