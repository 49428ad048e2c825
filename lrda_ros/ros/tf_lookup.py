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
A node's tf2 lookups: the LiDAR -> camera extrinsic, a camera's pose in a fixed frame.

tf2_ros comes with a ROS 2 install and has no PyPI wheel: :func:`listen_to_tf` returns None
where it is missing, and each caller says what that costs.

The buffer is cleared when the node's clock jumps back (a replayed bag loops under
use_sim_time): tf2 would otherwise reject the new loop's /tf as older than what it holds. Jazzy's
tf2_ros does that itself for ``Buffer(node=...)``, Humble's does not; one handler on the node's
clock here does it on every distro (and ``Buffer(node=...)`` would also add a tf2_frames
service the node does not need).
"""

from __future__ import annotations

from collections.abc import Callable
import importlib.util
from typing import Any

from builtin_interfaces.msg import Time as TimeMsg
from rclpy.clock import JumpThreshold
from rclpy.duration import Duration
from rclpy.time import Time

from ..geometry import RigidTransform
from ..messages.conversions import transform_to_rigid
from ..messages.stamps import ns_to_sec_nanosec


class TransformUnavailable(LookupError):
    """No transform between two frames at a stamp; the message is tf2's reason."""


#: A jump the buffer is cleared on: back by more than tf2's own threshold (a second), or a
#: change of clock (use_sim_time switched).
_CLEARING_JUMP = JumpThreshold(min_forward=None, min_backward=Duration(seconds=-1),
                               on_clock_change=True)


def on_clock_jump_back(clock: Any, callback: Callable[[], None]) -> Any:
    """
    Call ``callback()`` after ``clock`` jumps back by more than a second, or changes type.

    Return the rclpy JumpHandle: ``unregister()`` ends it.
    """
    return clock.create_jump_callback(_CLEARING_JUMP, post_callback=lambda _: callback())


class TransformLookup:
    """
    A tf2 buffer filled by a listener on ``node``'s /tf and /tf_static.

    What it creates on the node (two subscriptions, a clock jump callback) stays until
    :meth:`close`.
    """

    def __init__(self, node: Any) -> None:
        from tf2_ros import Buffer, TransformListener

        self.buffer = Buffer()
        #: Times the buffer was cleared for a jump of the node's clock.
        self.clears = 0
        self._jump = on_clock_jump_back(node.get_clock(), self._on_jump)
        self._listener = TransformListener(self.buffer, node)

    def _on_jump(self) -> None:
        """Forget every transform: after a jump back they belong to another timeline."""
        self.buffer.clear()
        self.clears += 1

    def close(self) -> None:
        """Unsubscribe /tf and /tf_static and drop the clock callback (idempotent)."""
        if self._listener is not None:
            self._listener.unregister()
            self._listener = None
        if self._jump is not None:
            self._jump.unregister()
            self._jump = None

    def lookup(self, target_frame: str, source_frame: str, stamp: Any,
               timeout_s: float = 0.0) -> RigidTransform:
        """Return ``T_target_source`` at the message ``stamp``, waiting up to ``timeout_s``."""
        try:
            transform = self.buffer.lookup_transform(target_frame, source_frame,
                                                     Time.from_msg(stamp),
                                                     timeout=Duration(seconds=timeout_s))
        except Exception as error:  # tf2 raises several TransformException subclasses
            raise TransformUnavailable(str(error)) from None
        return transform_to_rigid(transform)

    def poses(self, fixed_frame: str, frame: str,
              timeout_s: float) -> Callable[[int], RigidTransform]:
        """
        Return ``stamp_ns -> T_fixed_frame`` for motion alignment (raises TransformUnavailable).

        The first pose asked for (the window's older instant) is looked up without waiting, so a
        missing chain costs no wait; later ones wait up to ``timeout_s`` for odometry to reach
        the newest instant.
        """
        asked = []

        def pose_at(stamp_ns: int) -> RigidTransform:
            asked.append(stamp_ns)
            sec, nanosec = ns_to_sec_nanosec(stamp_ns)  # Time.from_msg takes the message only
            return self.lookup(fixed_frame, frame, TimeMsg(sec=sec, nanosec=nanosec),
                               timeout_s if len(asked) > 1 else 0.0)

        return pose_at


def tf2_installed() -> bool:
    """Return whether tf2_ros is installed (looked up, not imported)."""
    return importlib.util.find_spec('tf2_ros') is not None


def listen_to_tf(node: Any) -> TransformLookup | None:
    """Return ``node``'s tf2 lookup, or None where tf2_ros is not installed."""
    try:
        return TransformLookup(node)
    except ImportError:
        return None
