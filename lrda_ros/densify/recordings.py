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
read on their own, as raw CDR bytes, so workers decode the messages, not the driver.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from ..geometry import RigidTransform, TransformTree
from ..messages.rosbag import BagError, BagTopics, cdr_header_frame_id, cdr_header_stamp
from ..messages.rosbag import RosbagSource

TRANSFORM_HINT = ('give it with -p lidar_to_camera.matrix:=[16 values] (or '
                  'lidar_to_camera.translation and .rotation)')


@dataclass(frozen=True)
class FrameRef:
    """One synchronized set of a recording, by its place, header stamps and log times."""

    index: int
    #: Header stamps (ns) of the image, camera_info and points messages.
    stamps: tuple[int, int, int]
    #: Earliest log time (ns) of the three messages.
    first_log_ns: int
    #: Latest log time (ns): when the set was complete, the output's log time.
    log_ns: int


@dataclass(frozen=True)
class Chunk:
    """Consecutive frames of one recording, completed in order by one worker."""

    recording: int
    number: int
    frames: tuple[FrameRef, ...]


@dataclass(frozen=True)
class RawFrame:
    """What a worker needs for one frame: the messages as CDR, and T_camera_lidar."""

    index: int
    #: (msgtype, CDR bytes) of the image, camera_info and points.
    messages: tuple[tuple[str, bytes], ...]
    #: 4x4 T_camera_lidar, or None when the recording has no transform for this frame.
    T_cam_lidar: np.ndarray | None
    #: Why T_cam_lidar is None.
    missing_transform: str = ''


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
                start_ns=min(frame.first_log_ns for frame in frames),
                stop_ns=max(frame.log_ns for frame in frames) + 1)
            for frame, messages in zip(frames, sets):
                yield self._raw_frame(frame, messages)

    def _raw_frame(self, frame: FrameRef, messages: tuple[tuple[str, bytes], ...]) -> RawFrame:
        (_, image), _, (_, cloud) = messages
        try:
            T = self.transform(cdr_header_frame_id(image), cdr_header_frame_id(cloud),
                               frame.stamps[2])
        except BagError as error:  # the node drops such a frame (no_transform) and goes on
            return RawFrame(frame.index, messages, None, str(error))
        return RawFrame(frame.index, messages, T.as_matrix())


def open_recording(path: Path, topics: BagTopics, queue_size: int, slop_s: float,
                   extrinsic: RigidTransform | None) -> Recording:
    """
    Synchronize a recording's headers as the node would and check its first transform.

    Raise BagError when no set synchronizes or the first frame's LiDAR cannot be placed in the
    camera (every frame would be dropped).
    """
    with RosbagSource(path, topics) as source:
        stamps = source.synchronized_stamps(queue_size, slop_s)
        if not stamps:
            raise BagError(f'{path}: no synchronized frames: '
                           f'{source.no_match_reason(queue_size, slop_s)}')
        synchronized = [source.topics.image, source.topics.camera_info, source.topics.points]
        log_times: dict[tuple[str, int], int] = {}
        for topic, _, log_ns, raw in source.raw_messages(synchronized):
            log_times.setdefault((topic, cdr_header_stamp(raw)), log_ns)
        frames = []
        for index, match in enumerate(stamps):
            logged = [log_times[key] for key in zip(synchronized, match)]
            frames.append(FrameRef(index, tuple(match), min(logged), max(logged)))
        tree = source.transform_tree() if extrinsic is None else None
        camera_frame, lidar_frame = source.first_frame_ids()
        recording = Recording(Path(path), source.topics, frames, tree, extrinsic, queue_size,
                              slop_s)
    recording.transform(camera_frame, lidar_frame, frames[0].stamps[2])
    return recording
