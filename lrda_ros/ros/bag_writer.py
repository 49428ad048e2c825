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

"""Write rclpy messages and static transforms to a rosbag2 (MCAP), without ros2 bag."""

from __future__ import annotations

from pathlib import Path
import shutil
from typing import Any, Iterable, Sequence

from builtin_interfaces.msg import Time
from rclpy.serialization import serialize_message
from std_msgs.msg import Header

from ..geometry import RigidTransform
from ..messages.stamps import ns_to_sec_nanosec

#: A static transform to record: (parent frame, child frame, T_parent_child).
StaticTransform = tuple[str, str, RigidTransform]


def stamped_header(frame_id: str, stamp_ns: int) -> Header:
    """Return a std_msgs/Header for ``frame_id`` at ``stamp_ns`` nanoseconds."""
    sec, nanosec = ns_to_sec_nanosec(stamp_ns)
    return Header(frame_id=frame_id, stamp=Time(sec=sec, nanosec=nanosec))


def message_type_name(message: Any) -> str:
    """Return the ROS 2 type name of an rclpy message, e.g. ``sensor_msgs/msg/Image``."""
    package = type(message).__module__.split('.')[0]
    return f'{package}/msg/{type(message).__name__}'


def _tf_message(typestore, transforms: Sequence[StaticTransform], stamp_ns: int):
    # tf2_msgs has no PyPI wheel: TFMessage is built from the rosbags type store instead.
    types = typestore.types
    sec, nanosec = ns_to_sec_nanosec(stamp_ns)
    time_msg = types['builtin_interfaces/msg/Time'](sec=sec, nanosec=nanosec)

    def stamped(parent: str, child: str, T_parent_child: RigidTransform):
        return types['geometry_msgs/msg/TransformStamped'](
            header=types['std_msgs/msg/Header'](stamp=time_msg, frame_id=parent),
            child_frame_id=child,
            transform=types['geometry_msgs/msg/Transform'](
                translation=types['geometry_msgs/msg/Vector3'](*T_parent_child.translation),
                rotation=types['geometry_msgs/msg/Quaternion'](
                    *T_parent_child.quaternion_xyzw())))

    return types['tf2_msgs/msg/TFMessage'](
        transforms=[stamped(parent, child, T) for parent, child, T in transforms])


def write_bag(path: Path, messages: Iterable[tuple[str, int, Any]],
              static_transforms: Sequence[StaticTransform] = (),
              static_stamp_ns: int = 0, transforms_topic: str = '/tf_static',
              timed_transforms: Sequence[tuple[int, Sequence[StaticTransform]]] = ()) -> None:
    """
    Write ``(topic, log time ns, rclpy message)`` records to a new MCAP rosbag2 at ``path``.

    ``static_transforms`` go first, as one TFMessage on ``/tf_static`` with transient-local
    QoS (as tf2's static broadcaster offers it), or on ``/tf`` (volatile, stamped
    ``static_stamp_ns``) with ``transforms_topic='/tf'``, as bags without /tf_static have
    them. ``timed_transforms`` ((stamp ns, transforms) pairs, e.g. odom -> base_link) go on
    ``/tf``, one TFMessage per stamp. An existing bag at ``path`` is replaced.
    """
    from rosbags.interfaces import (
        Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime)
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import get_typestore, Stores

    typestore = get_typestore(Stores.ROS2_HUMBLE)
    forever = QosTime(sec=2147483647, nsec=4294967295)
    latched = Qos(QosHistory.KEEP_LAST, 1, QosReliability.RELIABLE, QosDurability.TRANSIENT_LOCAL,
                  forever, forever, QosLiveliness.AUTOMATIC, forever, False)
    path = Path(path)
    if path.exists():
        shutil.rmtree(path)
    with Writer(path, version=8, storage_plugin=StoragePlugin.MCAP) as writer:
        if transforms_topic not in ('/tf_static', '/tf'):
            raise ValueError(f"transforms_topic must be '/tf_static' or '/tf', got "
                             f'{transforms_topic!r}')
        if static_transforms:
            qos = [latched] if transforms_topic == '/tf_static' else []
            tf = writer.add_connection(transforms_topic, 'tf2_msgs/msg/TFMessage',
                                       typestore=typestore, offered_qos_profiles=qos)
            message = _tf_message(typestore, static_transforms, static_stamp_ns)
            writer.write(tf, static_stamp_ns,
                         typestore.serialize_cdr(message, 'tf2_msgs/msg/TFMessage'))
        if timed_transforms:
            if not (static_transforms and transforms_topic == '/tf'):
                tf = writer.add_connection('/tf', 'tf2_msgs/msg/TFMessage', typestore=typestore)
            for stamp_ns, transforms in timed_transforms:
                writer.write(tf, stamp_ns, typestore.serialize_cdr(
                    _tf_message(typestore, transforms, stamp_ns), 'tf2_msgs/msg/TFMessage'))
        connections = {}
        for topic, log_ns, message in messages:
            if topic not in connections:
                connections[topic] = writer.add_connection(
                    topic, message_type_name(message), typestore=typestore)
            writer.write(connections[topic], log_ns, serialize_message(message))
