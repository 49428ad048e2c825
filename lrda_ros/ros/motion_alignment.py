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
this part fetches the two poses and reports: each cloud is counted as aligned or as gone out
with the static extrinsic (per cause), and each cause and bad-time problem is warned about
once per camera and point topic.
"""

from __future__ import annotations

from collections.abc import Callable
import threading
from typing import Any

import numpy as np

from .cameras import Camera
from .tf_lookup import TransformLookup
from ..messages.stamps import stamp_to_ns
from ..messages.sweep_alignment import align_cloud, CloudAlignment, NO_TF2
from ..settings import NodeSettings


class MotionAligner:
    """Moves each camera's clouds to its images' stamps; ``warn`` logs a warning line."""

    def __init__(self, warn: Callable[[str], Any], stats_lock: threading.Lock) -> None:
        self._warn = warn
        self._stats_lock = stats_lock
        self._warned: set[tuple[str, str, str]] = set()

    def align(self, camera: Camera, settings: NodeSettings, tf: TransformLookup | None,
              cloud: Any, image: Any, points: np.ndarray, topic: str = '') -> np.ndarray:
        """
        Return the points to project: moved to the image's stamp, or as measured.

        ``topic`` names the cloud's point topic in warnings (a camera with several LiDARs).
        """
        config = settings.motion
        if not config.enabled:
            return points
        if tf is None:
            result = CloudAlignment(points, NO_TF2, 'tf2_ros is not installed')
        else:
            poses = tf.poses(config.fixed_frame, cloud.header.frame_id, settings.tf_timeout)
            result = align_cloud(points, cloud, stamp_to_ns(image.header.stamp), poses, config)
        self._count(camera, result, config.fixed_frame, topic)
        return result.points

    def _count(self, camera: Camera, result: CloudAlignment, fixed_frame: str,
               topic: str) -> None:
        problems = {'not_finite': result.num_not_finite,
                    'outside_sweep': result.num_outside_sweep}
        with self._stats_lock:
            stats = camera.stats
            if result.fallback is None:
                stats.motion_aligned += 1
            else:
                stats.motion_fallbacks[result.fallback] += 1
            for problem, count in problems.items():
                stats.bad_point_times[problem] += count
        cloud = f'{topic}: ' if topic else ''
        if result.fallback is not None:
            self._warn_once(camera, topic, result.fallback, (
                f'motion alignment: {cloud}{result.fallback}: {result.detail}; frames go out '
                f"with the static extrinsic (no {fixed_frame} pose at the points' times), "
                'counted on /diagnostics; warned once'))
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
