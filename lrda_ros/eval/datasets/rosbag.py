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
Evaluate on rosbag2 recordings (.db3, .mcap) without ROS, synchronized as the node does.

Frames come from Image + CameraInfo + PointCloud2 topics, matched by the node's approximate time
synchronizer and projected with the node's projection. Ground truth is a depth Image topic when
the bag has one, else the LiDAR hold-out protocol: a seeded fraction of the projected LiDAR
pixels is withheld from the input and scored.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
import struct
from types import SimpleNamespace
from typing import Any, Iterator

import numpy as np

from .frame import Frame, FrameDataset
from ...geometry import lidar_to_sparse_depth, ProjectionConfig, RigidTransform, TransformTree
from ...pipeline import check_camera_matches_image, FrameMismatchError, holdout_split
from ...ros.conversions import (
    camera_info_to_camera_model, depth_image_to_array, image_to_rgb, pointcloud2_to_xyz,
    transform_to_rigid)
from ...ros.sync import ApproximateTimeSync

IMAGE = 'sensor_msgs/msg/Image'
CAMERA_INFO = 'sensor_msgs/msg/CameraInfo'
POINT_CLOUD = 'sensor_msgs/msg/PointCloud2'
TF_MESSAGE = 'tf2_msgs/msg/TFMessage'


class BagError(ValueError):
    """A bag that cannot be evaluated as asked (topics, transforms)."""


@dataclass(frozen=True)
class BagTopics:
    """Topic names; None picks the bag's only topic of that type (depth: none)."""

    image: str | None = None
    camera_info: str | None = None
    points: str | None = None
    depth: str | None = None


def cdr_header_stamp(raw: bytes) -> int:
    """Return header.stamp in ns of a CDR-serialized message whose first field is a Header."""
    # 4-byte encapsulation (its second byte: 1 = little endian), then int32 sec, uint32 nanosec.
    endian = '<' if raw[1] == 1 else '>'
    sec, nanosec = struct.unpack_from(endian + 'iI', raw, 4)
    return sec * 1_000_000_000 + nanosec


def _nearest_offsets(stamps: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Return, per stamp, the signed offset (ns) of the nearest of ``others``."""
    others = np.sort(others)
    right = np.clip(np.searchsorted(others, stamps), 0, others.size - 1)
    left = np.clip(right - 1, 0, others.size - 1)
    after, before = others[right] - stamps, others[left] - stamps
    return np.where(np.abs(before) < np.abs(after), before, after)


def _stamped(stamp_ns: int) -> SimpleNamespace:
    stamp = SimpleNamespace(sec=stamp_ns // 1_000_000_000, nanosec=stamp_ns % 1_000_000_000)
    return SimpleNamespace(header=SimpleNamespace(stamp=stamp), stamp_ns=stamp_ns)


class RosbagSource:
    """A rosbag2 opened with ``rosbags``: topics, static transforms, synchronized sets."""

    def __init__(self, path: str | Path, topics: BagTopics = BagTopics()) -> None:
        from rosbags.highlevel import AnyReader

        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(f'no rosbag2 at {self.path}')
        self._reader = AnyReader([self.path])
        self._reader.open()
        self.topics = self._resolve(topics)

    def close(self) -> None:
        """Close the bag."""
        self._reader.close()

    def __enter__(self) -> 'RosbagSource':
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def msgtype(self, topic: str) -> str:
        """Return the message type of a recorded topic."""
        for connection in self._reader.connections:
            if connection.topic == topic:
                return connection.msgtype
        raise BagError(f'{self.path}: no topic {topic!r}')

    def _topics_of(self, msgtype: str) -> list[str]:
        return sorted({c.topic for c in self._reader.connections if c.msgtype == msgtype})

    def _resolve(self, topics: BagTopics) -> BagTopics:
        def pick(given: str | None, msgtype: str, role: str, exclude: set[str]) -> str:
            available = self._topics_of(msgtype)
            if given is not None:
                if given not in available:
                    raise BagError(f'{self.path}: no {msgtype} topic {given!r} (has {available})')
                return given
            candidates = [t for t in available if t not in exclude]
            if len(candidates) != 1:
                raise BagError(f'{self.path}: cannot pick the {role} topic among {available}; '
                               f'name it')
            return candidates[0]

        depth = topics.depth
        if depth is not None and depth not in self._topics_of(IMAGE):
            raise BagError(f'{self.path}: no Image topic {depth!r} for ground truth')
        image = pick(topics.image, IMAGE, 'image', {depth} if depth else set())
        return BagTopics(image, pick(topics.camera_info, CAMERA_INFO, 'camera_info', set()),
                         pick(topics.points, POINT_CLOUD, 'points', set()), depth)

    @property
    def _synchronized_topics(self) -> list[str]:
        topics = [self.topics.image, self.topics.camera_info, self.topics.points]
        return topics + ([self.topics.depth] if self.topics.depth else [])

    def transform_tree(self) -> TransformTree:
        """Return the static transforms recorded on /tf_static."""
        connections = [c for c in self._reader.connections
                       if c.topic == '/tf_static' and c.msgtype == TF_MESSAGE]
        tree = TransformTree()
        for connection, _, raw in self._reader.messages(connections=connections):
            for stamped in self._reader.deserialize(raw, connection.msgtype).transforms:
                tree.add(stamped.header.frame_id, stamped.child_frame_id,
                         transform_to_rigid(stamped))
        return tree

    def raw_messages(self, topics: list[str] | None = None) -> Iterator[tuple[str, str, int,
                                                                              bytes]]:
        """Yield (topic, msgtype, log time ns, CDR bytes) in log-time order."""
        wanted = set(topics or self._synchronized_topics)
        connections = [c for c in self._reader.connections if c.topic in wanted]
        for connection, timestamp, raw in self._reader.messages(connections=connections):
            yield connection.topic, connection.msgtype, timestamp, raw

    def synchronized_stamps(self, queue_size: int = 10,
                            slop_s: float = 0.05) -> list[tuple[int, ...]]:
        """Match header stamps as the node would; cheap (only headers are read)."""
        topics = self._synchronized_topics
        matches: list[tuple[int, ...]] = []
        sync = ApproximateTimeSync(len(topics), queue_size, slop_s,
                                   lambda *msgs: matches.append(tuple(m.stamp_ns for m in msgs)))
        for topic, _, _, raw in self.raw_messages(topics):
            sync.add(topics.index(topic), _stamped(cdr_header_stamp(raw)))
        return matches

    def no_match_reason(self, queue_size: int, slop_s: float) -> str:
        """
        Say why no set of messages synchronized and what to change.

        Reports the smallest stamp spread of an image with the nearest message of each other
        synchronized topic (the best any synchronizer could do) against the slop.
        """
        topics = self._synchronized_topics
        stamps: dict[str, list[int]] = {topic: [] for topic in topics}
        for topic, _, _, raw in self.raw_messages(topics):
            stamps[topic].append(cdr_header_stamp(raw))
        empty = [topic for topic in topics if not stamps[topic]]
        if empty:
            return f'no messages on {", ".join(empty)}'
        images = np.array(stamps[topics[0]], dtype=np.int64)
        offsets = {topic: _nearest_offsets(images, np.array(stamps[topic], dtype=np.int64))
                   for topic in topics[1:]}
        spread = np.max([np.maximum(o, 0) for o in offsets.values()], axis=0) \
            - np.min([np.minimum(o, 0) for o in offsets.values()], axis=0)
        best = int(np.argmin(spread))
        detail = ', '.join(f'{topic} {offsets[topic][best] / 1e9:+.3f} s'
                           for topic in topics[1:])
        smallest = spread[best] / 1e9
        if smallest > slop_s:
            return (f'the smallest stamp offset seen is {smallest:.3f} s (image at '
                    f'{images[best] / 1e9:.3f} s; nearest {detail}), more than the slop '
                    f'{slop_s:.3f} s: pass --slop (slop_s) above {smallest:.3f} if the clocks '
                    'are offset, or fix the stamps')
        return (f'the smallest stamp offset seen is {smallest:.3f} s, within the slop '
                f'{slop_s:.3f} s, but those messages never met in the queues of '
                f'{queue_size}: raise --queue-size (queue_size)')

    def synchronized(self, queue_size: int = 10, slop_s: float = 0.05,
                     order: list[tuple[int, ...]] | None = None) -> Iterator[tuple[Any, ...]]:
        """
        Yield deserialized (image, camera_info, points[, depth]) sets in time order.

        ``order`` is synchronized_stamps' result when the caller already has it.
        """
        topics = self._synchronized_topics
        if order is None:
            order = self.synchronized_stamps(queue_size, slop_s)
        pending = {(topic, stamp): None for match in order for topic, stamp in zip(topics, match)}
        next_index = 0
        for topic, msgtype, _, raw in self.raw_messages(topics):
            key = (topic, cdr_header_stamp(raw))
            if key in pending:
                pending[key] = self._reader.deserialize(raw, msgtype)
            while next_index < len(order):
                keys = list(zip(topics, order[next_index]))
                if any(pending[k] is None for k in keys):
                    break
                yield tuple(pending.pop(k) for k in keys)
                next_index += 1


class RosbagDataset(FrameDataset):
    """
    Frames of a rosbag2 (``kind='rosbag'``), projected and scored as the node would be.

    ``extrinsic`` (T_camera_lidar) overrides the bag's /tf_static. Without a depth topic the
    LiDAR hold-out protocol supplies ground truth (``holdout_fraction`` of the LiDAR pixels,
    seeded per frame). Frames are read in one streaming pass; indexing re-reads the bag.
    """

    def __init__(self, root: str | Path, topics: BagTopics = BagTopics(),
                 extrinsic: RigidTransform | None = None,
                 projection: ProjectionConfig = ProjectionConfig(),
                 holdout_fraction: float = 0.2, seed: int = 0, queue_size: int = 10,
                 slop_s: float = 0.05, rectified: bool = False) -> None:
        super().__init__(None)
        self.source = RosbagSource(root, topics)
        self.extrinsic = extrinsic
        self.projection = projection
        self.holdout_fraction = holdout_fraction
        self.seed = seed
        self.queue_size, self.slop_s, self.rectified = queue_size, slop_s, rectified
        self._stamps = self.source.synchronized_stamps(queue_size, slop_s)
        if not self._stamps:
            raise BagError(f'{self.source.path}: no synchronized frames: '
                           f'{self.source.no_match_reason(queue_size, slop_s)}')
        self._tree: TransformTree | None = None

    def __len__(self) -> int:
        """Return the number of synchronized frames."""
        return len(self._stamps)

    def _T_cam_lidar(self, camera_frame: str, lidar_frame: str) -> RigidTransform:
        if self.extrinsic is not None:
            return self.extrinsic
        if self._tree is None:
            self._tree = self.source.transform_tree()
        try:
            return self._tree.lookup(camera_frame, lidar_frame)
        except KeyError as error:
            raise BagError(f'{self.source.path}: {error.args[0]}; pass the extrinsic') from error

    def _frame(self, index: int, messages: tuple[Any, ...]) -> Frame:
        image, info, cloud = messages[:3]
        camera = camera_info_to_camera_model(info, rectified=self.rectified)
        rgb = image_to_rgb(image)
        try:
            check_camera_matches_image(camera, rgb.shape[1], rgb.shape[0])
        except FrameMismatchError as error:
            raise BagError(f'{self.source.path}: frame {index} ({self.source.topics.camera_info}'
                           f' on {self.source.topics.image}): {error}') from None
        T_cam_lidar = self._T_cam_lidar(image.header.frame_id, cloud.header.frame_id)
        sparse = lidar_to_sparse_depth(pointcloud2_to_xyz(cloud), T_cam_lidar, camera,
                                       self.projection).depth
        stamp = self._stamps[index][0]
        if self.source.topics.depth:
            sparse_input, gt = sparse, depth_image_to_array(messages[3])
        else:
            rng = np.random.default_rng([self.seed, index])
            sparse_input, gt = holdout_split(sparse, self.holdout_fraction, rng)
        return Frame(name=f'{index:05d}_{stamp}', rgb=rgb,
                     sparse_depth=sparse_input, gt_depth=gt, K=camera.K,
                     sequence=self.source.path.name, stamp_ns=stamp)

    def __iter__(self) -> Iterator[Frame]:
        """Stream the frames in time order."""
        sets = self.source.synchronized(self.queue_size, self.slop_s, order=self._stamps)
        for index, messages in enumerate(sets):
            yield self._frame(index, messages)

    def _load(self, index: int) -> Frame:
        for position, frame in enumerate(self):
            if position == index:
                return frame
        raise IndexError(index)
