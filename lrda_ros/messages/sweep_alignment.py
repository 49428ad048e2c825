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
offline) go to :func:`lrda_ros.geometry.align_sweep`. Each cloud has one ``outcome``: moved
(with its points' own times, or as a whole from its stamp when it has none), nothing to move
(no look-up needed, or the LiDAR stood still), or a fallback that keeps the points as measured
(the static extrinsic, as without alignment), one of :data:`FALLBACK_CAUSES`. /diagnostics
and the offline commands count these names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .conversions import MalformedMessageError
from .point_times import (
    AUTO, azimuth_times, AzimuthSweep, CloudRead, find_time_layout, finite_xyz_mask, point_times)
from .stamps import header_stamp_ns
from ..geometry import align_sweep, RigidTransform

#: Why a frame went out with the static extrinsic: no pose of the LiDAR in the fixed frame at
#: an instant of the window (no chain, or beyond the tf buffer), no tf2 at all, or a time field
#: that cannot be read.
NO_FIXED_FRAME_POSE, NO_TF2, UNREADABLE_TIME_FIELD = (
    'no_fixed_frame_pose', 'no_tf2', 'unreadable_time_field')
FALLBACK_CAUSES = (NO_FIXED_FRAME_POSE, NO_TF2, UNREADABLE_TIME_FIELD)
#: What alignment did to a cloud it could align: moved each point from its own time; moved the
#: whole cloud from its stamp (no per-point times: right only for a cloud stamped mid-sweep);
#: nothing (no point times and the cloud stamped at the image's instant, or no motion).
MOVED, MOVED_WITHOUT_POINT_TIMES, NOTHING_TO_MOVE = (
    'moved', 'moved_without_point_times', 'nothing_to_move')
MOVED_OUTCOMES = (MOVED, MOVED_WITHOUT_POINT_TIMES, NOTHING_TO_MOVE)
#: Every outcome, each cloud exactly one of them.
OUTCOMES = MOVED_OUTCOMES + FALLBACK_CAUSES
#: ``times_source`` of a cloud without per-point times.
CLOUD_STAMP = 'cloud stamp'
#: Points whose time was replaced by the cloud's stamp, by problem.
POINT_TIME_PROBLEMS = ('not_finite', 'outside_sweep')


@dataclass(frozen=True)
class MotionConfig:
    """
    How clouds are moved to the image's stamp (the node's ``motion.*`` parameters).

    ``time_field``: ``'auto'`` (a known driver layout), ``''`` (none) or a field name.
    ``azimuth``: times from azimuths for clouds without a time field (None: all points at
    the cloud's stamp: right for a cloud stamped mid-sweep, off by up to half a sweep for one
    stamped at its start or end).
    """

    enabled: bool = True
    fixed_frame: str = 'odom'
    time_field: str = AUTO
    max_point_offset_s: float = 0.25
    azimuth: AzimuthSweep | None = None


@dataclass(frozen=True, eq=False)
class CloudAlignment:
    """The points to project, what alignment did to them, and what the checks counted."""

    points: np.ndarray
    #: One of OUTCOMES (offline commands also say 'off'); ``detail`` says why for a fallback
    #: and for nothing_to_move.
    outcome: str
    detail: str = ''
    times_source: str = ''
    num_not_finite: int = 0
    num_outside_sweep: int = 0

    @property
    def fallback(self) -> str | None:
        """Return the cause when the points went out with the static extrinsic, else None."""
        return self.outcome if self.outcome in FALLBACK_CAUSES else None


def cloud_times(cloud: Any, points: np.ndarray, config: MotionConfig,
                read: CloudRead | None = None) -> tuple[np.ndarray, str]:
    """
    Return each point's time (s from the cloud's stamp) and where the times came from.

    ``points`` are the cloud's finite points in order (what the readers return); ``read``:
    the cloud as :func:`~lrda_ros.messages.point_times.read_cloud` read it with
    ``config.time_field``, so it is not parsed again. Raises MalformedMessageError when the
    time field cannot be read or does not match the points.
    """
    if read is not None and read.time_error:
        raise MalformedMessageError(read.time_error)
    layout = find_time_layout(cloud, config.time_field) if read is None else read.layout
    if layout is not None:
        times = (point_times(cloud, layout)[finite_xyz_mask(cloud)] if read is None
                 else read.seconds)
        if times.shape[0] != points.shape[0]:
            raise MalformedMessageError(
                f'{times.shape[0]} point times for {points.shape[0]} points: the reader kept '
                'other points than the finite ones')
        return times, f'{layout.driver} field {layout.name!r}'
    if config.azimuth is not None:
        return azimuth_times(points, config.azimuth), 'azimuth'
    return np.zeros(points.shape[0]), CLOUD_STAMP


def align_cloud(points: np.ndarray, cloud: Any, image_stamp_ns: int,
                pose_at_ns: Callable[[int], RigidTransform] | None,
                config: MotionConfig, read: CloudRead | None = None) -> CloudAlignment:
    """
    Move a cloud's ``points`` to where they were at ``image_stamp_ns``.

    ``pose_at_ns(ns)`` returns ``T_fixed_lidar`` at that stamp or raises LookupError (then the
    points come back as they are, outcome ``no_fixed_frame_pose``); None means no tf2
    (``no_tf2``). Poses are looked up only where alignment can change something: a cloud
    without point times stamped at the image's instant is ``nothing_to_move`` with or without
    them. Never raises for bad input: bad point times are counted and moved as if taken at the
    cloud's stamp.
    """
    cloud_ns = header_stamp_ns(cloud) or 0
    try:
        times, source = cloud_times(cloud, points, config, read)
    except MalformedMessageError as error:
        return CloudAlignment(points, UNREADABLE_TIME_FIELD, str(error))

    def pose_at(seconds: float) -> RigidTransform:
        if pose_at_ns is None:  # asked for only where a pose can change something
            raise LookupError('tf2_ros is not installed')
        return pose_at_ns(cloud_ns + int(round(seconds * 1e9)))

    image_offset_s = (image_stamp_ns - cloud_ns) * 1e-9
    try:
        aligned = align_sweep(points, times, image_offset_s, pose_at, config.max_point_offset_s)
    except LookupError as error:
        cause = NO_TF2 if pose_at_ns is None else NO_FIXED_FRAME_POSE
        return CloudAlignment(points, cause, str(error), source)
    counts = (aligned.times.num_not_finite, aligned.times.num_outside_sweep)
    if aligned.points is points:
        window = aligned.window_s
        if window[1] > window[0]:
            detail = 'the LiDAR stood still over the sweep'
        elif source == CLOUD_STAMP:
            detail = "no point times, and the cloud stamped at the image's instant"
        else:
            detail = "every usable point time and the image at the cloud's stamp"
        return CloudAlignment(points, NOTHING_TO_MOVE, detail, source, *counts)
    outcome = MOVED_WITHOUT_POINT_TIMES if source == CLOUD_STAMP else MOVED
    return CloudAlignment(aligned.points, outcome, '', source, *counts)
