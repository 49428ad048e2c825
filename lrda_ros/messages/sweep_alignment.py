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
A PointCloud2's points moved to the image's stamp, as the node and the offline commands do it.

The cloud's per-point times (its driver's time field, else azimuths, else its stamp) and two
poses of the LiDAR in a fixed frame (looked up by the caller: tf2 in the node, the bag's /tf
offline) go to :func:`lrda_ros.geometry.align_sweep`. What cannot be aligned keeps the points
as measured (the static extrinsic, as without alignment) and says why: ``fallback`` is one of
:data:`FALLBACK_CAUSES`, the keys /diagnostics counts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .conversions import MalformedMessageError
from .point_times import (
    AUTO, azimuth_times, AzimuthSweep, find_time_layout, finite_xyz_mask, point_times)
from .stamps import header_stamp_ns
from ..geometry import align_sweep, RigidTransform

#: Why a frame went out with the static extrinsic: no pose of the LiDAR in the fixed frame at
#: an instant of the window (no chain, or beyond the tf buffer), no tf2 at all, or a time field
#: that cannot be read.
NO_FIXED_FRAME_POSE, NO_TF2, UNREADABLE_TIME_FIELD = (
    'no_fixed_frame_pose', 'no_tf2', 'unreadable_time_field')
FALLBACK_CAUSES = (NO_FIXED_FRAME_POSE, NO_TF2, UNREADABLE_TIME_FIELD)
#: Points whose time was replaced by the cloud's stamp, by problem.
POINT_TIME_PROBLEMS = ('not_finite', 'outside_sweep')


@dataclass(frozen=True)
class MotionConfig:
    """
    How clouds are moved to the image's stamp (the node's ``motion.*`` parameters).

    ``time_field``: ``'auto'`` (a known driver layout), ``''`` (none) or a field name.
    ``azimuth``: times from azimuths for clouds without a time field (None: all points at
    the cloud's stamp, which still corrects the offset between cloud and image).
    """

    enabled: bool = True
    fixed_frame: str = 'odom'
    time_field: str = AUTO
    max_point_offset_s: float = 0.25
    azimuth: AzimuthSweep | None = None


@dataclass(frozen=True, eq=False)
class CloudAlignment:
    """The points to project, whether they were aligned, and what the checks counted."""

    points: np.ndarray
    #: None when aligned; else a FALLBACK_CAUSES entry and ``detail`` saying why.
    fallback: str | None = None
    detail: str = ''
    times_source: str = ''
    num_not_finite: int = 0
    num_outside_sweep: int = 0


def cloud_times(cloud: Any, points: np.ndarray, config: MotionConfig) -> tuple[np.ndarray, str]:
    """
    Return each point's time (s from the cloud's stamp) and where the times came from.

    ``points`` are the cloud's finite points in order (what the readers return). Raises
    MalformedMessageError when the time field cannot be read or does not match the points.
    """
    layout = find_time_layout(cloud, config.time_field)
    if layout is not None:
        times = point_times(cloud, layout)[finite_xyz_mask(cloud)]
        if times.shape[0] != points.shape[0]:
            raise MalformedMessageError(
                f'{times.shape[0]} point times for {points.shape[0]} points: the reader kept '
                'other points than the finite ones')
        return times, f'{layout.driver} field {layout.name!r}'
    if config.azimuth is not None:
        return azimuth_times(points, config.azimuth), 'azimuth'
    return np.zeros(points.shape[0]), 'cloud stamp'


def align_cloud(points: np.ndarray, cloud: Any, image_stamp_ns: int,
                pose_at_ns: Callable[[int], RigidTransform],
                config: MotionConfig) -> CloudAlignment:
    """
    Move a cloud's ``points`` to where they were at ``image_stamp_ns``.

    ``pose_at_ns(ns)`` returns ``T_fixed_lidar`` at that stamp or raises LookupError (then the
    points come back as they are, ``fallback`` ``no_fixed_frame_pose``). Never raises for bad
    input: bad point times are counted and moved as if taken at the cloud's stamp.
    """
    cloud_ns = header_stamp_ns(cloud) or 0
    try:
        times, source = cloud_times(cloud, points, config)
    except MalformedMessageError as error:
        return CloudAlignment(points, UNREADABLE_TIME_FIELD, str(error))

    def pose_at(seconds: float) -> RigidTransform:
        return pose_at_ns(cloud_ns + int(round(seconds * 1e9)))

    try:
        aligned = align_sweep(points, times, (image_stamp_ns - cloud_ns) * 1e-9, pose_at,
                              config.max_point_offset_s)
    except LookupError as error:
        return CloudAlignment(points, NO_FIXED_FRAME_POSE, str(error), source)
    return CloudAlignment(aligned.points, None, '', source, aligned.times.num_not_finite,
                          aligned.times.num_outside_sweep)
