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
Poses of a recorded sequence: the camera's, and the LiDAR's for motion alignment.

The camera's serve the temporal alignment error (eval/temporal.py), the LiDAR's move clouds to
their images' stamps (``lrda eval --bag``, ``lrda densify``).

In order of preference: the bag's ``/tf`` chain from a fixed frame (``map``, ``odom`` or
``world``, REP 105) to the sensor; otherwise LiDAR odometry with KISS-ICP (the ``odometry``
extra) run on the bag's clouds, the camera following the LiDAR through the extrinsic. Datasets
that carry poses (the synthetic world) set ``Frame.T_world_cam`` themselves.
"""

from __future__ import annotations

from collections.abc import Callable
import importlib.util
from typing import Any

import numpy as np

from ..geometry import RigidTransform, se3_exp, se3_log, TransformTree
from ..messages.sweep_alignment import align_cloud, CloudAlignment, MotionConfig

#: Fixed frames whose transform to the camera is a camera pose, in order of preference.
FIXED_FRAMES = ('map', 'odom', 'world')
#: Where a sequence's poses come from, as reports name it.
POSE_SOURCES = ('dataset', 'tf', 'lidar_odometry', 'none')


def fixed_frame_of(tree: TransformTree, camera_frame: str) -> str | None:
    """Return the first of :data:`FIXED_FRAMES` linked to ``camera_frame``, or None."""
    linked = tree.connected(camera_frame) if camera_frame in tree.frames else set()
    return next((frame for frame in FIXED_FRAMES if frame in linked), None)


def lidar_odometry_available() -> bool:
    """Return whether KISS-ICP (the optional ``odometry`` extra) is installed."""
    return importlib.util.find_spec('kiss_icp') is not None


class LidarOdometry:
    """
    KISS-ICP on successive clouds: the camera pose of each frame in the first LiDAR frame.

    ``max_range`` bounds the points used (metres); the voxel size is a hundredth of it, as
    KISS-ICP's own configuration loader chooses it. Clouds carry no per-point time here, so
    they are registered without deskewing.
    """

    def __init__(self, max_range: float = 100.0) -> None:
        try:
            from kiss_icp.config import KISSConfig
            from kiss_icp.kiss_icp import KissICP
        except ImportError as error:
            raise ImportError('LiDAR odometry needs KISS-ICP: pip install '
                              "'lrda_ros[odometry]' (kiss-icp)") from error
        config = KISSConfig()
        config.data.max_range = max_range
        config.data.deskew = False
        config.mapping.voxel_size = max_range / 100.0
        self._odometry = KissICP(config)

        #: (cloud stamp ns, T_world_lidar) of the last two registered clouds.
        self.recent: list[tuple[int, np.ndarray]] = []

    def register(self, points_lidar: np.ndarray, stamp_ns: int = 0) -> np.ndarray:
        """Register one cloud (N x 3, LiDAR frame, as measured); return its T_world_lidar."""
        points = np.ascontiguousarray(points_lidar[:, :3], dtype=np.float64)
        self._odometry.register_frame(points, np.zeros(0))
        self.recent = (self.recent + [(stamp_ns, np.array(self._odometry.last_pose))])[-2:]
        return self._odometry.last_pose

    def camera_pose(self, points_lidar: np.ndarray, T_cam_lidar: RigidTransform,
                    stamp_ns: int = 0) -> np.ndarray:
        """Register one cloud (N x 3, LiDAR frame); return that frame's T_world_cam (4x4)."""
        return self.register(points_lidar, stamp_ns) @ T_cam_lidar.inverse().as_matrix()

    def lidar_poses(self) -> Callable[[int], RigidTransform]:
        """
        Return ``stamp_ns -> T_world_lidar`` at constant velocity from the last two clouds.

        For motion alignment: the motion between the last two registered clouds, carried on
        from the last one (KISS-ICP's own constant-velocity model). Raises LookupError until
        two clouds are registered.
        """
        if len(self.recent) < 2 or self.recent[1][0] <= self.recent[0][0]:
            raise LookupError('LiDAR odometry has no velocity before its second cloud')
        (t0, T0), (t1, T1) = self.recent
        last = RigidTransform.from_matrix(T1, atol=1e-4)
        twist = se3_log(RigidTransform.from_matrix(T0, atol=1e-4).inverse() @ last)

        def pose_at(stamp_ns: int) -> RigidTransform:
            return last @ se3_exp(twist * ((stamp_ns - t1) / (t1 - t0)))

        return pose_at


def align_recorded_cloud(points: np.ndarray, cloud: Any, image_stamp_ns: int,
                         config: MotionConfig, tree: TransformTree | None,
                         odometry: LidarOdometry | None = None,
                         odometry_frame: str = '') -> CloudAlignment:
    """
    Move a recorded cloud's ``points`` to its image's stamp, as the node moves a live one.

    The LiDAR's poses come from the recording's /tf (``config.fixed_frame`` linked to the
    cloud's frame in ``tree``), else from ``odometry`` registered on the clouds of
    ``odometry_frame`` (constant velocity from its last two; another LiDAR follows it through
    the static transform between the two), else nowhere: where a pose is needed the points
    stay as measured and the outcome says why (``no_fixed_frame_pose``), as the node's missing
    odom chain does. The outcome is ``'off'`` when alignment is off.
    """
    if not config.enabled:
        return CloudAlignment(points, 'off')
    fixed, frame = config.fixed_frame, cloud.header.frame_id
    if tree is not None and frame in tree.frames and fixed in tree.connected(frame):
        return align_cloud(points, cloud, image_stamp_ns,
                           lambda ns: tree.lookup(fixed, frame, ns), config)
    try:
        if odometry is None:
            raise LookupError(f'no {fixed} frame linked to {frame} in /tf, no odometry')
        poses = odometry.lidar_poses()
        mount = _mount(tree, odometry_frame, frame)
    except LookupError as error:  # no velocity yet, or the LiDARs are not linked
        # Raised only if the cloud needs a pose: one with nothing to move is not a fallback.
        return align_cloud(points, cloud, image_stamp_ns, _unavailable(str(error)), config)
    return align_cloud(points, cloud, image_stamp_ns, lambda ns: poses(ns) @ mount, config)


def _unavailable(reason: str) -> Callable[[int], RigidTransform]:
    """Return a pose look-up that always raises LookupError(``reason``)."""
    def pose_at(stamp_ns: int) -> RigidTransform:
        raise LookupError(reason)
    return pose_at


def _mount(tree: TransformTree | None, odometry_frame: str, frame: str) -> RigidTransform:
    """Return T_odometry-LiDAR_frame (static), identity for the odometry's own LiDAR."""
    if frame == odometry_frame:
        return RigidTransform.identity()
    if tree is None:
        raise LookupError(f'odometry follows {odometry_frame}, and no /tf links {frame} to it')
    return tree.lookup(odometry_frame, frame)
