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
Evaluate on rosbag2 recordings: frames made from the bag exactly as the node makes them.

Frames come from Image (or CompressedImage) + CameraInfo + PointCloud2 topics, matched by the
node's approximate time synchronizer (:class:`~lrda_ros.messages.rosbag.RosbagSource`). The
LiDAR->camera transform comes from /tf_static and /tf (or an explicit extrinsic). Ground truth is
a depth topic when the bag has one (Image 16UC1/32FC1 or a compressedDepth CompressedImage), else
the LiDAR hold-out protocol: a seeded fraction of the projected LiDAR pixels is withheld from the
input and scored.
"""

from __future__ import annotations

from collections import Counter

from pathlib import Path
from typing import Any, Iterator

from .frame import Frame, FrameDataset
from .poses import align_recorded_cloud, fixed_frame_of, lidar_odometry_available, LidarOdometry
from ..geometry import CameraModel, InvalidCameraError, LidarCloud, ProjectionConfig
from ..geometry import RigidTransform, TransformTree
from ..messages.compressed import any_depth_to_array, any_image_to_rgb
from ..messages.conversions import camera_info_to_camera_model, pointcloud2_to_xyz
from ..messages.pairing import PairingRule
from ..messages.rosbag import BagError, BagTopics, RosbagSource
from ..messages.stamps import header_stamp_ns, stamp_from_ns, stamp_text
from ..messages.sweep_alignment import CloudAlignment, MotionConfig
from ..pipeline import FrameInputs, FrameMismatchError, HoldoutRule, prepare_frame

EXTRINSIC_HINT = ('give the extrinsic instead: lrda eval --lidar-to-camera-matrix (16 values) '
                  'or --lidar-to-camera-translation X,Y,Z --lidar-to-camera-rotation X,Y,Z,W '
                  '(RosbagDataset(extrinsic=...) in Python)')


class RosbagDataset(FrameDataset):
    """
    Frames of a rosbag2 (``kind='rosbag'``), projected and scored as the node would be.

    ``extrinsic`` (T_camera_lidar) overrides the bag's /tf_static and /tf; without it a bag
    that cannot link the cloud's frame to the image's fails here, naming the frames.
    ``rectified`` (the node's ``image_is_rectified``): project with P and no distortion rather
    than K and D. Without a depth topic the LiDAR hold-out protocol supplies ground truth
    (``holdout_fraction`` of the LiDAR pixels, drawn from ``seed`` and the image stamp as the
    node's ``evaluation.holdout_fraction`` draws them). Each frame is made by
    :func:`~lrda_ros.pipeline.prepare_frame`, the node's own step. Frames are read in one
    streaming pass; indexing re-reads the bag. ``projection.outlier_filter`` (e.g.
    :data:`~lrda_ros.geometry.SPARSE_INPUT_FILTER`) removes LiDAR points seen through nearer
    objects before the hold-out split; ``Frame.notes['outliers_removed']`` counts them.

    ``poses`` (``Frame.T_world_cam``, for the temporal alignment error): 'auto' takes the
    camera's pose from /tf (a ``map``, ``odom`` or ``world`` frame linked to the camera) and
    otherwise from KISS-ICP LiDAR odometry on the clouds; 'tf', 'lidar_odometry' or 'none'
    force one. :attr:`pose_source` says which is used.

    ``motion`` (the node's ``motion.*``): each cloud is moved to its image's stamp as the node
    moves it, the LiDAR's poses from /tf (``motion.fixed_frame`` linked to the LiDAR) or else
    from the LiDAR odometry (constant velocity from the last two clouds); a frame that cannot
    be aligned keeps the static extrinsic. ``Frame.notes['motion_alignment']`` says which.

    ``topics.more_points`` (the node's ``point_topics``): the clouds of further LiDARs,
    synchronized with the others, each placed by its own transform and moved by its own
    poses, merged with the first into one scan as the node merges them.
    """

    def __init__(self, root: str | Path, topics: BagTopics = BagTopics(),
                 extrinsic: RigidTransform | None = None,
                 projection: ProjectionConfig = ProjectionConfig(),
                 holdout_fraction: float = 0.2, seed: int = 0, queue_size: int = 10,
                 slop_s: float = 0.05, rectified: bool = False, poses: str = 'auto',
                 motion: MotionConfig = MotionConfig(enabled=False)) -> None:
        super().__init__(None)
        self.motion = motion
        self.source = RosbagSource(root, topics)
        self.extrinsic = extrinsic
        self.projection = projection
        self.holdout_fraction = holdout_fraction
        self.seed = seed
        self.queue_size, self.slop_s, self.rectified = queue_size, slop_s, rectified
        #: How clouds were paired with images: the node's rule (sync.*, motion.align).
        self.pairing = PairingRule(slop_s, queue_size, motion)
        self._stamps, losses = self.source.synchronize(queue_size, slop_s, motion)
        topics = self.source.topics
        roles = {'image': topics.image, 'camera_info': topics.camera_info,
                 'points': topics.points, 'depth': topics.depth,
                 **({'more_points': list(topics.more_points)} if topics.more_points else {})}
        #: The topic read for each role (depth: None without a depth topic).
        self.topic_roles = roles
        #: What the synchronizer could not pair, per reason (the report's sync_losses).
        self.sync_losses = {**losses.summary(self.source.synchronized_topics),
                            'slop_s': slop_s, 'queue_size': queue_size}
        if not self._stamps:
            raise BagError(f'{self.source.path}: no synchronized frames: '
                           f'{self.source.no_match_reason(queue_size, slop_s)}')
        #: The rule and the header stamps of every synchronized set (image, camera_info,
        #: clouds...): what the report says paired the frames.
        self.pairing_report = {'rule': self.pairing.describe(),
                               'by_sweep_middle': self.pairing.by_sweep_middle,
                               'sets_ns': [list(stamps) for stamps in self._stamps]}
        self._tree: TransformTree | None = None
        if extrinsic is None and self._stamps:
            camera_frame, lidar_frame = self.source.first_frame_ids()
            self._T_cam_lidar(camera_frame, lidar_frame, self._stamps[0][2])
        #: Why the poses asked for are not available (printed by lrda eval), or None.
        self.pose_warning: str | None = None
        self.pose_source, self._fixed_frame = self._pose_source(poses)
        self._odometry: LidarOdometry | None = None
        #: Clouds of the last pass per motion alignment outcome, with the first one's detail.
        self.motion_outcomes: Counter[str] = Counter()
        self.motion_details: dict[str, str] = {}

    def _pose_source(self, poses: str) -> tuple[str, str | None]:
        """Return (pose source, fixed frame for 'tf') as ``poses`` asks and the bag allows."""
        if poses not in ('auto', 'tf', 'lidar_odometry', 'none'):
            raise ValueError(f"poses must be 'auto', 'tf', 'lidar_odometry' or 'none', not "
                             f'{poses!r}')
        if poses in ('auto', 'tf'):
            if self._tree is None:
                self._tree = self.source.transform_tree()
            fixed = fixed_frame_of(self._tree, self.source.first_frame_ids()[0])
            if fixed is not None:
                return 'tf', fixed
            if poses == 'tf':
                raise BagError(f'{self.source.path}: no map, odom or world frame linked to the '
                               "camera in /tf: use poses='lidar_odometry'")
        if poses == 'auto' and not lidar_odometry_available():
            # KISS-ICP is an optional extra: without it the report has no TAE, not no report.
            self.pose_warning = ('no camera poses (no map, odom or world frame in /tf, and '
                                 "KISS-ICP is not installed: pip install 'lrda_ros[odometry]'): "
                                 'TAE is not computed')
            return 'none', None
        return ('none', None) if poses == 'none' else ('lidar_odometry', None)

    def _camera_pose(self, camera_frame: str, stamp_ns: int, points,
                     T_cam_lidar: RigidTransform, index: int, cloud_stamp_ns: int = 0):
        """Return the frame's T_world_cam (4x4) from /tf or the LiDAR odometry, or None."""
        if self.pose_source == 'tf':
            return self._tree.lookup(self._fixed_frame, camera_frame, stamp_ns).as_matrix()
        if self.pose_source == 'lidar_odometry':
            if index == 0 or self._odometry is None:  # a new pass starts a new trajectory
                self._odometry = LidarOdometry()
            return self._odometry.camera_pose(points, T_cam_lidar, cloud_stamp_ns)
        return None

    def _aligned(self, cloud: Any, points, image_stamp_ns: int,
                 odometry_frame: str) -> CloudAlignment:
        """Move the cloud's points to the image's stamp (the node's motion alignment)."""
        if self.motion.enabled and self._tree is None:
            self._tree = self.source.transform_tree()
        odometry = self._odometry if self.pose_source == 'lidar_odometry' else None
        return align_recorded_cloud(points, cloud, image_stamp_ns, self.motion, self._tree,
                                    odometry, odometry_frame)

    def __len__(self) -> int:
        """Return the number of synchronized frames."""
        return len(self._stamps)

    def _T_cam_lidar(self, camera_frame: str, lidar_frame: str,
                     stamp_ns: int) -> RigidTransform:
        if self.extrinsic is not None:
            return self.extrinsic
        if self._tree is None:
            self._tree = self.source.transform_tree()
        try:
            return self._tree.lookup(camera_frame, lidar_frame, stamp_ns)
        except KeyError as error:
            raise BagError(f'{self.source.path}: no LiDAR->camera transform in /tf_static or '
                           f'/tf: {error.args[0]}; {EXTRINSIC_HINT}') from None

    def _camera(self, info: Any, stamp_ns: int) -> CameraModel:
        try:
            return camera_info_to_camera_model(info, rectified=self.rectified)
        except InvalidCameraError as error:
            raise BagError(f'{self.source.path}: {self.source.topics.camera_info} at {stamp_ns} '
                           f'ns: field {error}') from None

    def _frame(self, index: int, messages: tuple[Any, ...]) -> Frame:
        image, info = messages[:2]
        clouds = messages[2:2 + len(self.source.topics.point_topics)]
        stamp = self._stamps[index][0]
        camera = self._camera(info, stamp)
        lidar, outcomes, pose = [], [], None
        for position, cloud in enumerate(clouds):
            T_cam_lidar = self._T_cam_lidar(image.header.frame_id, cloud.header.frame_id,
                                            self._stamps[index][2 + position])
            points = pointcloud2_to_xyz(cloud)
            if position == 0:  # odometry registers the first LiDAR's clouds as measured
                pose = self._camera_pose(image.header.frame_id, stamp, points, T_cam_lidar,
                                         index, header_stamp_ns(cloud) or 0)
            motion = self._aligned(cloud, points, stamp, clouds[0].header.frame_id)
            lidar.append(LidarCloud(motion.points, T_cam_lidar))
            outcomes.append(motion.outcome)
            self.motion_outcomes[motion.outcome] += 1
            self.motion_details.setdefault(motion.outcome, motion.detail or motion.times_source)
        inputs = FrameInputs.from_clouds(any_image_to_rgb(image), camera, lidar, stamp)
        with_depth_topic = bool(self.source.topics.depth)
        rule = HoldoutRule() if with_depth_topic else HoldoutRule(self.holdout_fraction,
                                                                  self.seed)
        try:
            prepared = prepare_frame(inputs, self.projection, rule)
        except FrameMismatchError as error:
            raise BagError(f'{self.source.path}: frame {index} ({self.source.topics.camera_info}'
                           f' on {self.source.topics.image}): {error}',
                           field=error.field) from None
        gt = any_depth_to_array(messages[-1]) if with_depth_topic else prepared.heldout_depth
        # Named by the image stamp, as the live evaluator names the same frame.
        return Frame(name=stamp_text(stamp_from_ns(stamp)), rgb=inputs.rgb,
                     sparse_depth=prepared.sparse_depth, gt_depth=gt, K=camera.K,
                     sequence=self.source.path.name, stamp_ns=stamp,
                     notes={'outliers_removed': prepared.projection.num_dropped_outliers,
                            'pose_source': self.pose_source,
                            'motion_alignment': ', '.join(dict.fromkeys(outcomes))},
                     T_world_cam=pose)

    def __iter__(self) -> Iterator[Frame]:
        """Stream the frames in time order."""
        sets = self.source.synchronized(self.queue_size, self.slop_s, order=self._stamps)
        self.motion_outcomes.clear()
        self.motion_details.clear()
        for index, messages in enumerate(sets):
            yield self._frame(index, messages)

    def _load(self, index: int) -> Frame:
        for position, frame in enumerate(self):
            if position == index:
                return frame
        raise IndexError(index)
