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
Read rosbag2 recordings (.db3, .mcap) without ROS: topics, transforms, synchronized sets.

``RosbagSource`` opens a bag with ``rosbags``, picks the camera, camera_info, LiDAR (and
optional depth) topics, collects /tf_static and /tf into a transform tree, and yields the
message sets the node's approximate time synchronizer would match.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
import struct
from types import SimpleNamespace
from typing import Any, Iterator

import numpy as np

from .conversions import transform_to_rigid
from .pairing import PairingRule
from .stamps import header_stamp_ns, sec_nanosec_to_ns, stamp_from_ns
from .sweep_alignment import MotionConfig
from .sync import ApproximateTimeSync
from .sync_losses import SyncLossTracker
from ..errors import InputError
from ..geometry import TransformTree

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


class BagError(InputError):
    """A bag that cannot be evaluated as asked (topics, transforms)."""


@dataclass(frozen=True)
class BagTopics:
    """
    Topic names; None picks the bag's only topic of that type (depth: none).

    ``more_points``: the point topics of further LiDARs, synchronized with the others and
    merged with ``points`` into one scan per frame, as the node's ``point_topics``.
    """

    image: str | None = None
    camera_info: str | None = None
    points: str | None = None
    depth: str | None = None
    more_points: tuple[str, ...] = ()

    @property
    def point_topics(self) -> tuple[str, ...]:
        """Return every point topic, ``points`` first."""
        return (self.points, *self.more_points)


def cdr_header_stamp(raw: bytes) -> int:
    """Return header.stamp in ns of a CDR-serialized message whose first field is a Header."""
    # 4-byte encapsulation (its second byte: 1 = little endian), then int32 sec, uint32 nanosec.
    endian = '<' if raw[1] == 1 else '>'
    return sec_nanosec_to_ns(*struct.unpack_from(endian + 'iI', raw, 4))


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


def _stamped(stamp_ns: int, paired_ns: int | None = None) -> SimpleNamespace:
    """
    Return a header-only stand-in message (synchronizing by stamps reads nothing else).

    ``paired_ns``: the stamp it is paired by (a cloud's sweep middle), where not its own.
    """
    paired = stamp_ns if paired_ns is None else paired_ns
    return SimpleNamespace(header=SimpleNamespace(stamp=stamp_from_ns(paired)),
                           stamp_ns=stamp_ns)


def open_reader(path: str | Path) -> Any:
    """
    Return an open ``rosbags`` AnyReader of the recording at ``path``.

    Raises FileNotFoundError when nothing is there, and BagError naming the file when it is
    not a recording or cannot be read (truncated, corrupt): bad input, not a bug.
    """
    from rosbags.highlevel import AnyReader, AnyReaderError

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f'no rosbag2 at {path}')
    if path.is_dir() and not (path / 'metadata.yaml').exists():
        raise BagError(f'{path}: not a rosbag2 folder (it has no metadata.yaml)', field='bag')
    reader = AnyReader([path])
    try:
        reader.open()
    except AnyReaderError as error:
        storage = sorted(path.glob('*.db3')) + sorted(path.glob('*.mcap')) if path.is_dir() \
            else [path]
        named = storage[0] if len(storage) == 1 else path  # the file at fault, where one
        reason = str(error).replace(f' {named}', '').rstrip('.')
        raise BagError(f'{named}: cannot read this recording ({reason}): is it truncated or '
                       'corrupt?', field='bag') from error
    return reader


class RosbagSource:
    """A rosbag2 opened with ``rosbags``: topics, static transforms, synchronized sets."""

    def __init__(self, path: str | Path, topics: BagTopics = BagTopics()) -> None:
        self.path = Path(path)
        self._reader = open_reader(self.path)
        try:
            self.topics = self._resolve(topics)
        except BagError:
            self._reader.close()
            raise

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

    def _topics_of_any(self) -> str:
        """Return the recorded topics with their types, for messages."""
        return ', '.join(sorted(f'{c.topic} ({c.msgtype})' for c in self._reader.connections)
                         ) or 'none'

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
            if not available:
                raise BagError(f'{self.path}: the bag has no {" or ".join(msgtypes)} topic '
                               f'for the {role} (its topics: {self._topics_of_any()})',
                               field=role)
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
        more = tuple(pick(topic, (POINT_CLOUD,), 'points', set()) for topic in topics.more_points)
        points = pick(topics.points, (POINT_CLOUD,), 'points', set(more))
        if len({points, *more}) != 1 + len(more):
            raise BagError(f'{self.path}: a point topic is given twice ({points}, '
                           f'{", ".join(more)}): each LiDAR needs its own', field='points')
        return BagTopics(image, pick(topics.camera_info, (CAMERA_INFO,), 'camera_info', set()),
                         points, depth, more)

    @property
    def synchronized_topics(self) -> list[str]:
        """Return the topics of a synchronized set: image, camera_info, points..., [depth]."""
        topics = [self.topics.image, self.topics.camera_info, *self.topics.point_topics]
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
        """Return the header frame_id of the first image and the first cloud (of ``points``)."""
        ids = {}
        for topic, _, _, raw in self.raw_messages([self.topics.image, self.topics.points]):
            ids.setdefault(topic, cdr_header_frame_id(raw))
            if len(ids) == 2:
                break
        return ids.get(self.topics.image, ''), ids.get(self.topics.points, '')

    def raw_messages(self, topics: list[str] | None = None, start_ns: int | None = None,
                     stop_ns: int | None = None) -> Iterator[tuple[str, str, int, bytes]]:
        """Yield (topic, msgtype, log time ns, CDR bytes) in log-time order, [start, stop)."""
        wanted = set(topics or self.synchronized_topics)
        connections = [c for c in self._reader.connections if c.topic in wanted]
        for connection, timestamp, raw in self._reader.messages(connections=connections,
                                                                start=start_ns, stop=stop_ns):
            yield connection.topic, connection.msgtype, timestamp, raw

    def synchronized_stamps(self, queue_size: int = 10, slop_s: float = 0.05,
                            motion: MotionConfig | None = None) -> list[tuple[int, ...]]:
        """Match stamps as the node would (see :meth:`synchronize`)."""
        return self.synchronize(queue_size, slop_s, motion)[0]

    def synchronize(self, queue_size: int = 10, slop_s: float = 0.05,
                    motion: MotionConfig | None = None
                    ) -> tuple[list[tuple[int, ...]], SyncLossTracker]:
        """
        Match stamps as the node would; return the sets (header stamps) and what could not pair.

        The node's pairing rule (:class:`~lrda_ros.messages.pairing.PairingRule`): with
        ``motion`` enabled a cloud is paired by its sweep's middle (its point times: clouds
        are read, not only their headers), else by its header stamp. A stamp going back on a
        topic is a time jump, as in the node. Messages still queued at the end of the bag are
        lost too (classified like the rest).
        """
        rule = PairingRule(slop_s, queue_size, motion or MotionConfig(enabled=False))
        topics = self.synchronized_topics
        clouds = set(self.topics.point_topics) if rule.by_sweep_middle else set()
        matches: list[tuple[int, ...]] = []
        sync = ApproximateTimeSync(len(topics), queue_size, slop_s,
                                   lambda *msgs: matches.append(tuple(m.stamp_ns for m in msgs)),
                                   on_time_jump=lambda *jump: None)
        sync.losses.with_image = (1,)  # the camera_info, stamped as its image
        for topic, msgtype, _, raw in self.raw_messages(topics):
            stamp = cdr_header_stamp(raw)
            paired = None
            if topic in clouds:
                paired = header_stamp_ns(rule.view(self._reader.deserialize(raw, msgtype)))
            sync.add(topics.index(topic), _stamped(stamp, paired))
        sync.flush()
        return matches, sync.losses

    def no_match_reason(self, queue_size: int, slop_s: float) -> str:
        """
        Say why no set of messages synchronized and what to change.

        Reports the smallest stamp spread of an image with the nearest message of each other
        synchronized topic (the best any synchronizer could do) against the slop.
        """
        topics = self.synchronized_topics
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
                     order: list[tuple[int, ...]] | None = None, raw: bool = False,
                     start_ns: int | None = None, stop_ns: int | None = None
                     ) -> Iterator[tuple[Any, ...]]:
        """
        Yield deserialized (image, camera_info, points, *more_points[, depth]) sets in order.

        ``order`` is synchronized_stamps' result when the caller already has it (or a run of
        it, read from the log times [``start_ns``, ``stop_ns``) that hold its messages).
        ``raw``: yield (msgtype, CDR bytes) pairs instead of messages.
        """
        topics = self.synchronized_topics
        if order is None:
            order = self.synchronized_stamps(queue_size, slop_s)
        pending = {(topic, stamp): None for match in order for topic, stamp in zip(topics, match)}
        next_index = 0
        for topic, msgtype, _, data in self.raw_messages(topics, start_ns, stop_ns):
            key = (topic, cdr_header_stamp(data))
            if key in pending:
                pending[key] = (msgtype, data) if raw else self._reader.deserialize(data, msgtype)
            while next_index < len(order):
                keys = list(zip(topics, order[next_index]))
                if any(pending[k] is None for k in keys):
                    break
                yield tuple(pending.pop(k) for k in keys)
                next_index += 1
