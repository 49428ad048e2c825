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

Frames come from Image (or CompressedImage) + CameraInfo + PointCloud2 topics, matched by the
node's approximate time synchronizer and projected with the node's projection. The LiDAR->camera
transform comes from /tf_static and /tf (or an explicit extrinsic). Ground truth is a depth topic
when the bag has one (Image 16UC1/32FC1 or a compressedDepth CompressedImage), else the LiDAR
hold-out protocol: a seeded fraction of the projected LiDAR pixels is withheld from the input
and scored.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
import struct
from types import SimpleNamespace
from typing import Any, Iterator

import numpy as np

from .frame import Frame, FrameDataset
from ...geometry import (
    CameraModel, InvalidCameraError, lidar_to_sparse_depth, ProjectionConfig, RigidTransform,
    TransformTree)
from ...pipeline import check_camera_matches_image, FrameMismatchError, holdout_split
from ...ros.compressed import any_depth_to_array, any_image_to_rgb
from ...ros.conversions import camera_info_to_camera_model, pointcloud2_to_xyz, transform_to_rigid
from ...ros.sync import ApproximateTimeSync, stamp_ns as header_stamp_ns

IMAGE = 'sensor_msgs/msg/Image'
COMPRESSED_IMAGE = 'sensor_msgs/msg/CompressedImage'
IMAGE_TYPES = (IMAGE, COMPRESSED_IMAGE)
CAMERA_INFO = 'sensor_msgs/msg/CameraInfo'
POINT_CLOUD = 'sensor_msgs/msg/PointCloud2'
TF_MESSAGE = 'tf2_msgs/msg/TFMessage'
TF_TOPICS = ('/tf_static', '/tf')
EXTRINSIC_HINT = ('give the extrinsic instead: lrda eval --lidar-to-camera-matrix (16 values) '
                  'or --lidar-to-camera-translation X,Y,Z --lidar-to-camera-rotation X,Y,Z,W '
                  '(RosbagDataset(extrinsic=...) in Python)')


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


def cdr_header_frame_id(raw: bytes) -> str:
    """Return header.frame_id of a CDR-serialized message whose first field is a Header."""
    endian = '<' if raw[1] == 1 else '>'
    (length,) = struct.unpack_from(endian + 'I', raw, 12)  # after encapsulation, sec, nanosec
    return raw[16:16 + length].rstrip(b'\0').decode()


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

    def _topics_of(self, *msgtypes: str) -> list[str]:
        return sorted({c.topic for c in self._reader.connections if c.msgtype in msgtypes})

    def _resolve(self, topics: BagTopics) -> BagTopics:
        def pick(given: str | None, msgtypes: tuple[str, ...], role: str,
                 exclude: set[str]) -> str:
            available = self._topics_of(*msgtypes)
            if given is not None:
                if given not in available:
                    raise BagError(f'{self.path}: no {" or ".join(msgtypes)} topic {given!r} '
                                   f'(has {available})')
                return given
            candidates = [t for t in available if t not in exclude]
            if len(candidates) != 1:
                raise BagError(f'{self.path}: cannot pick the {role} topic among {available}; '
                               f'name it with --{role.replace("_", "-")}-topic')
            return candidates[0]

        depth = topics.depth
        if depth is not None and depth not in self._topics_of(*IMAGE_TYPES):
            raise BagError(f'{self.path}: no Image or CompressedImage topic {depth!r} for ground '
                           f'truth (has {self._topics_of(*IMAGE_TYPES)})')
        images = set(self._topics_of(*IMAGE_TYPES))
        # Never the depth topic; a compressedDepth topic is depth too; and a raw image wins over
        # its own image_transport republication (<image>/compressed).
        skip = {t for t in images if t == depth or t.endswith('/compressedDepth')
                or (t.endswith('/compressed') and t[:-len('/compressed')] in images)}
        image = pick(topics.image, IMAGE_TYPES, 'image', skip)
        return BagTopics(image, pick(topics.camera_info, (CAMERA_INFO,), 'camera_info', set()),
                         pick(topics.points, (POINT_CLOUD,), 'points', set()), depth)

    @property
    def _synchronized_topics(self) -> list[str]:
        topics = [self.topics.image, self.topics.camera_info, self.topics.points]
        return topics + ([self.topics.depth] if self.topics.depth else [])

    def transform_tree(self) -> TransformTree:
        """Return the transforms recorded on /tf_static (static) and /tf (timed)."""
        connections = [c for c in self._reader.connections
                       if c.topic in self.transform_topics() and c.msgtype == TF_MESSAGE]
        tree = TransformTree()
        if not connections:  # AnyReader.messages(connections=[]) would read every topic
            return tree
        for connection, _, raw in self._reader.messages(connections=connections):
            static = connection.topic == '/tf_static'
            for stamped in self._reader.deserialize(raw, connection.msgtype).transforms:
                tree.add(stamped.header.frame_id, stamped.child_frame_id,
                         transform_to_rigid(stamped), None if static else header_stamp_ns(stamped))
        return tree

    def transform_topics(self) -> list[str]:
        """Return which of /tf_static and /tf the bag records (as TFMessage)."""
        recorded = self._topics_of(TF_MESSAGE)
        return [topic for topic in TF_TOPICS if topic in recorded]

    def first_frame_ids(self) -> tuple[str, str]:
        """Return the header frame_id of the first image and the first cloud."""
        ids = {}
        for topic, _, _, raw in self.raw_messages([self.topics.image, self.topics.points]):
            ids.setdefault(topic, cdr_header_frame_id(raw))
            if len(ids) == 2:
                break
        return ids.get(self.topics.image, ''), ids.get(self.topics.points, '')

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

    ``extrinsic`` (T_camera_lidar) overrides the bag's /tf_static and /tf; without it a bag
    that cannot link the cloud's frame to the image's fails here, naming the frames.
    ``rectified`` (the node's ``image_is_rectified``): project with P and no distortion rather
    than K and D. Without a depth topic the LiDAR hold-out protocol supplies ground truth
    (``holdout_fraction`` of the LiDAR pixels, seeded per frame). Frames are read in one
    streaming pass; indexing re-reads the bag.
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
        if extrinsic is None and self._stamps:
            camera_frame, lidar_frame = self.source.first_frame_ids()
            self._T_cam_lidar(camera_frame, lidar_frame, self._stamps[0][2])

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
        image, info, cloud = messages[:3]
        stamp = self._stamps[index][0]
        camera = self._camera(info, stamp)
        rgb = any_image_to_rgb(image)
        try:
            check_camera_matches_image(camera, rgb.shape[1], rgb.shape[0])
        except FrameMismatchError as error:
            raise BagError(f'{self.source.path}: frame {index} ({self.source.topics.camera_info}'
                           f' on {self.source.topics.image}): {error}') from None
        T_cam_lidar = self._T_cam_lidar(image.header.frame_id, cloud.header.frame_id,
                                        self._stamps[index][2])
        sparse = lidar_to_sparse_depth(pointcloud2_to_xyz(cloud), T_cam_lidar, camera,
                                       self.projection).depth
        if self.source.topics.depth:
            sparse_input, gt = sparse, any_depth_to_array(messages[3])
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
