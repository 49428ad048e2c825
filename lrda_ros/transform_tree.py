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
A tree of static transforms (as in /tf_static) that chains lookups between any two frames.

The node uses tf2 for this; evaluation reads bags without ROS, so it needs the same lookup over
the recorded static transforms.
"""

from __future__ import annotations

from collections import deque
from typing import Iterable

from .geometry import RigidTransform


class TransformTree:
    """Static transforms keyed by (parent, child); lookups chain through the tree."""

    def __init__(self) -> None:
        self._edges: dict[str, dict[str, RigidTransform]] = {}

    def add(self, parent: str, child: str, T_parent_child: RigidTransform) -> None:
        """Add T_parent_child (maps points in ``child`` into ``parent``) and its inverse."""
        self._edges.setdefault(parent, {})[child] = T_parent_child
        self._edges.setdefault(child, {})[parent] = T_parent_child.inverse()

    @property
    def frames(self) -> set[str]:
        """Return every frame named by a transform."""
        return set(self._edges)

    def lookup(self, target: str, source: str) -> RigidTransform:
        """Return T_target_source; raise KeyError naming the frames when they are not linked."""
        if target == source:
            return RigidTransform.identity()
        # Breadth-first search from the target: each hop composes T_target_next.
        found = {target: RigidTransform.identity()}
        queue = deque([target])
        while queue:
            frame = queue.popleft()
            for neighbour, T_frame_neighbour in self._edges.get(frame, {}).items():
                if neighbour in found:
                    continue
                found[neighbour] = found[frame] @ T_frame_neighbour
                if neighbour == source:
                    return found[neighbour]
                queue.append(neighbour)
        raise KeyError(f'no static transform chain from {source!r} to {target!r}; known frames: '
                       f'{sorted(self.frames)}')

    @classmethod
    def from_messages(cls, messages: Iterable) -> 'TransformTree':
        """Build from TFMessage-like objects (``.transforms`` of TransformStamped)."""
        from .conversions import transform_to_rigid

        tree = cls()
        for message in messages:
            for stamped in message.transforms:
                tree.add(stamped.header.frame_id, stamped.child_frame_id,
                         transform_to_rigid(stamped))
        return tree
