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
The frames of a recording, as the node's synchronizer matches them, split into chunks.

A recording is read twice before any completion: once for the header stamps (the
synchronizer's matches) and once for the log times of those messages, which place each output
in the written bag and bound the part of the bag a chunk's reader has to scan. Chunks are then
read on their own, as raw CDR bytes, so workers decode the messages, not the driver. With
motion alignment each frame carries the part of the recording's /tf its clouds' poses are looked
up in (:meth:`~lrda_ros.geometry.TransformTree.window`), and a recording without a fixed-frame
chain to its LiDAR has its chunks run KISS-ICP odometry on the clouds instead, as
``lrda eval --bag`` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from ..datasets.poses import lidar_odometry_available
from ..geometry import RigidTransform, TransformTree
from ..messages.rosbag import BagError, BagTopics, cdr_header_frame_id, cdr_header_stamp
from ..messages.rosbag import RosbagSource
from ..messages.stamps import NS_PER_S
from ..messages.sweep_alignment import MotionConfig

TRANSFORM_HINT = ('give it with -p lidar_to_camera.matrix:=[16 values] (or '
                  'lidar_to_camera.translation and .rotation)')


@dataclass(frozen=True)
class FrameRef:
    """One synchronized set of a recording, by its place, header stamps and log times."""

    index: int
    #: Header stamps (ns) of the image, the camera_info and each point topic's cloud.
    stamps: tuple[int, ...]
    #: Earliest and latest log time (ns) of its messages: the latest is when the set was
    #: complete, the output's log time.
    log_span_ns: tuple[int, int]

    @property
    def log_ns(self) -> int:
        """Return the output's log time: when the set was complete."""
        return self.log_span_ns[1]


@dataclass(frozen=True)
class Chunk:
    """Consecutive frames of one recording, completed in order by one worker."""

    recording: int
    number: int
    frames: tuple[FrameRef, ...]


@dataclass(frozen=True)
class RawFrame:
    """What a worker needs for one frame: the messages as CDR, transforms and poses."""

    index: int
    #: (msgtype, CDR bytes) of the image, the camera_info and each point topic's cloud.
    messages: tuple[tuple[str, bytes], ...]
    #: 4x4 T_camera_lidar per cloud, or None when the recording has no transform for one.
    T_cam_lidar: tuple[np.ndarray, ...] | None
    #: Why T_cam_lidar is None.
    missing_transform: str = ''
    #: The recording's /tf around the frame's instants, for motion alignment (None: off).
    poses: TransformTree | None = None
    #: The bag topic of each cloud, for messages.
    point_topics: tuple[str, ...] = ('points',)


@dataclass
class Recording:
    """A recording's synchronized frames and what is needed to read them back."""

    path: Path
    topics: BagTopics
    frames: list[FrameRef]
    tree: TransformTree | None
    extrinsic: RigidTransform | None
    queue_size: int
    slop_s: float
    motion: MotionConfig = MotionConfig(enabled=False)
    #: Whether chunks run LiDAR odometry for motion alignment (no fixed-frame chain in /tf).
    odometry: bool = False

    @property
    def name(self) -> str:
        """Return the folder name: the output recording is written under it."""
        return self.path.name

    def chunks(self, recording: int, chunk_frames: int) -> list[Chunk]:
        """Split the frames into chunks of ``chunk_frames`` (0: one chunk)."""
        size = chunk_frames or max(len(self.frames), 1)
        return [Chunk(recording, number, tuple(self.frames[start:start + size]))
                for number, start in enumerate(range(0, len(self.frames), size))]

    def transform(self, camera_frame: str, lidar_frame: str, stamp_ns: int) -> RigidTransform:
        """Return T_camera_lidar (the override, else /tf_static and /tf); raise BagError."""
        if self.extrinsic is not None:
            return self.extrinsic
        try:
            return self.tree.lookup(camera_frame, lidar_frame, stamp_ns)
        except KeyError as error:
            raise BagError(f'{self.path}: no LiDAR->camera transform in /tf_static or /tf: '
                           f'{error.args[0]}; {TRANSFORM_HINT}') from None

    def read(self, chunk: Chunk, start_index: int = 0) -> Iterator[RawFrame]:
        """Yield the chunk's frames from ``start_index`` (a frame index) on, in order."""
        frames = [frame for frame in chunk.frames if frame.index >= start_index]
        if not frames:
            return
        with RosbagSource(self.path, self.topics) as source:
            sets = source.synchronized(
                self.queue_size, self.slop_s, order=[frame.stamps for frame in frames], raw=True,
                start_ns=min(frame.log_span_ns[0] for frame in frames),
                stop_ns=max(frame.log_ns for frame in frames) + 1)
            for frame, messages in zip(frames, sets):
                yield self._raw_frame(frame, messages)

    def _raw_frame(self, frame: FrameRef, messages: tuple[tuple[str, bytes], ...]) -> RawFrame:
        camera_frame = cdr_header_frame_id(messages[0][1])
        cloud_frames = [cdr_header_frame_id(raw) for _, raw in messages[2:]]
        poses = frame_poses(self.tree, frame.stamps, self.motion) if self.motion.enabled \
            else None
        try:
            transforms = tuple(self._cloud_transform(camera_frame, cloud_frames, position,
                                                     frame.stamps[2 + position]).as_matrix()
                               for position in range(len(cloud_frames)))
        except BagError as error:  # the node drops such a frame (no_transform) and goes on
            return RawFrame(frame.index, messages, None, str(error), poses,
                            self.topics.point_topics)
        return RawFrame(frame.index, messages, transforms, '', poses, self.topics.point_topics)

    def _cloud_transform(self, camera_frame: str, cloud_frames: list[str], position: int,
                         stamp_ns: int) -> RigidTransform:
        """Return one cloud's T_camera_lidar; raise BagError as the node drops the frame."""
        topics = self.topics.point_topics
        if self.extrinsic is not None and cloud_frames[position] != cloud_frames[0]:
            raise BagError(f'{topics[position]} is in frame {cloud_frames[position]!r}, '
                           f'{topics[0]} in {cloud_frames[0]!r}: the lidar_to_camera override '
                           "is one transform for every cloud; give the LiDARs' transforms on "
                           '/tf_static instead')
        return self.transform(camera_frame, cloud_frames[position], stamp_ns)


def frame_poses(tree: TransformTree, stamps: tuple[int, ...],
                motion: MotionConfig) -> TransformTree:
    """
    Return the part of ``tree`` a frame's motion alignment looks up, lookups bit for bit.

    ``stamps``: the image's, the camera_info's, each cloud's (ns). Poses are looked up between
    a sweep's point times, at most ``motion.max_point_offset_s`` from its cloud's stamp (later
    ones count as the stamp), and the image's stamp.
    """
    reach = int(np.ceil(motion.max_point_offset_s * NS_PER_S))
    clouds, image = stamps[2:], stamps[0]
    return tree.window(min(min(clouds) - reach, image), max(max(clouds) + reach, image))


def open_recording(path: Path, topics: BagTopics, queue_size: int, slop_s: float,
                   extrinsic: RigidTransform | None,
                   motion: MotionConfig = MotionConfig(enabled=False)) -> Recording:
    """
    Synchronize a recording as the node would and check its first transform.

    The node's pairing rule: with ``motion`` on, clouds are paired by their sweep's middle.

    Raise BagError when no set synchronizes or the first frame's LiDAR cannot be placed in the
    camera (every frame would be dropped). With ``motion`` on, LiDAR poses come from /tf where
    ``motion.fixed_frame`` links to the first LiDAR, else from odometry where KISS-ICP is
    installed, else nowhere (every frame then keeps the static extrinsic, counted).
    """
    with RosbagSource(path, topics) as source:
        stamps = source.synchronized_stamps(queue_size, slop_s, motion)
        if not stamps:
            raise BagError(f'{path}: no synchronized frames: '
                           f'{source.no_match_reason(queue_size, slop_s)}')
        synchronized = source.synchronized_topics
        log_times: dict[tuple[str, int], int] = {}
        for topic, _, log_ns, raw in source.raw_messages(synchronized):
            log_times.setdefault((topic, cdr_header_stamp(raw)), log_ns)
        frames = []
        for index, match in enumerate(stamps):
            logged = [log_times[key] for key in zip(synchronized, match)]
            frames.append(FrameRef(index, tuple(match), (min(logged), max(logged))))
        tree = source.transform_tree() if extrinsic is None or motion.enabled else None
        camera_frame, lidar_frame = source.first_frame_ids()
        chained = tree is not None and lidar_frame in tree.frames \
            and motion.fixed_frame in tree.connected(lidar_frame)
        recording = Recording(Path(path), source.topics, frames, tree, extrinsic, queue_size,
                              slop_s, motion, motion.enabled and not chained
                              and lidar_odometry_available())
    recording.transform(camera_frame, lidar_frame, frames[0].stamps[2])
    return recording
