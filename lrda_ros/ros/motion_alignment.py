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
The node's motion alignment: tf2 look-ups of the LiDAR in the fixed frame, counters, warnings.

The geometry and the message reading are ROS-free (:mod:`lrda_ros.messages.sweep_alignment`);
this part fetches the two poses and reports: each cloud is counted under its one outcome
(moved, moved without point times, nothing to move, or gone out with the static extrinsic per
cause), and each outcome that needs the user and each bad-time problem is warned about once
per camera and point topic, with the parameter or input to change.
"""

from __future__ import annotations

from collections.abc import Callable
import threading
from typing import Any

import numpy as np

from .cameras import Camera
from .tf_lookup import TransformLookup
from ..messages.point_times import CloudRead
from ..messages.stamps import stamp_to_ns
from ..messages.sweep_alignment import (
    align_cloud, CloudAlignment, MotionConfig, MOVED_WITHOUT_POINT_TIMES, NO_FIXED_FRAME_POSE,
    NO_TF2, UNREADABLE_TIME_FIELD)
from ..settings import NodeSettings


def outcome_advice(outcome: str, config: MotionConfig, cloud_frame: str) -> str:
    """Return what an outcome that needs the user means and what to change ('' if none)."""
    fixed = config.fixed_frame
    if outcome == NO_FIXED_FRAME_POSE:
        return (f'frames go out with the static extrinsic: publish {fixed} -> {cloud_frame} '
                f'on /tf (odometry), set motion.fixed_frame, or motion.align: false')
    if outcome == NO_TF2:
        return ('frames go out with the static extrinsic: install tf2_ros (ROS 2), or set '
                'motion.align: false')
    if outcome == UNREADABLE_TIME_FIELD:
        return ('frames go out with the static extrinsic: set motion.time_field to the '
                "driver's time field, 'auto', or '' for none")
    if outcome == MOVED_WITHOUT_POINT_TIMES:
        return ('the clouds have no per-point time field, so each is moved as if all its '
                'points were taken at its stamp: right for clouds stamped mid-sweep, off by up '
                'to half a sweep for clouds stamped at its start (ouster-ros) or end (Velodyne):'
                " set motion.time_field to the driver's time field, or motion.azimuth_times: "
                'true with motion.sweep_start_azimuth and motion.stamp_azimuth')
    return ''


class MotionAligner:
    """Moves each camera's clouds to its images' stamps; ``warn`` logs a warning line."""

    def __init__(self, warn: Callable[[str], Any], stats_lock: threading.Lock) -> None:
        self._warn = warn
        self._stats_lock = stats_lock
        self._warned: set[tuple[str, str, str]] = set()

    def align(self, camera: Camera, settings: NodeSettings, tf: TransformLookup | None,
              cloud: Any, image: Any, points: np.ndarray, topic: str = '',
              read: CloudRead | None = None) -> np.ndarray:
        """
        Return the points to project: moved to the image's stamp, or as measured.

        ``topic`` names the cloud's point topic in warnings (a camera with several LiDARs);
        ``read``: the cloud read once with ``motion.time_field`` (its points and times).
        Poses are looked up only where the cloud needs them.
        """
        config = settings.motion
        if not config.enabled:
            return points
        poses = None if tf is None else tf.poses(config.fixed_frame, cloud.header.frame_id,
                                                 settings.tf_timeout)
        result = align_cloud(points, cloud, stamp_to_ns(image.header.stamp), poses, config,
                             read)
        self._count(camera, result, config, cloud.header.frame_id, topic)
        return result.points

    def _count(self, camera: Camera, result: CloudAlignment, config: MotionConfig,
               cloud_frame: str, topic: str) -> None:
        problems = {'not_finite': result.num_not_finite,
                    'outside_sweep': result.num_outside_sweep}
        with self._stats_lock:
            stats = camera.stats
            if result.fallback is None:
                stats.motion_outcomes[result.outcome] += 1
            else:
                stats.motion_fallbacks[result.fallback] += 1
            for problem, count in problems.items():
                stats.bad_point_times[problem] += count
        cloud = f'{topic}: ' if topic else ''
        advice = outcome_advice(result.outcome, config, cloud_frame)
        if advice:
            detail = f'{result.detail}; ' if result.detail else ''
            self._warn_once(camera, topic, result.outcome, (
                f'motion alignment: {cloud}{result.outcome}: {detail}{advice}; counted on '
                '/diagnostics; warned once'))
        for problem, count in problems.items():
            if count:
                self._warn_once(camera, topic, problem, (
                    f'motion alignment: {cloud}{count} point times {problem} '
                    f"({result.times_source}) taken as their cloud's stamp; counted on "
                    '/diagnostics; warned once'))

    def _warn_once(self, camera: Camera, topic: str, cause: str, message: str) -> None:
        key = (camera.name, topic, cause)
        if key not in self._warned:
            self._warned.add(key)
            self._warn(camera.label + message)
