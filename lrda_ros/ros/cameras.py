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
The completion node's cameras: each one's topics, counters, timing and subscriptions.

Without the ``cameras`` parameter the node has one unnamed camera on the unprefixed topics
(``image`` ... ``depth``). With ``cameras: [front, left]`` every camera reads and publishes the
same topics under its name (``front/image`` ... ``front/depth``), synchronizes its own inputs,
continues its own warm start (the engine's stream of that name), reserves its own publishing
time in the time budget and reports its own /diagnostics status; the model is loaded once.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Hashable

from .diagnostics import NodeStatistics
from .subscriptions import SynchronizedSubscriptions


@dataclass
class Camera:
    """One camera of the completion node: everything that is not shared between cameras."""

    #: '' for the single unnamed camera.
    name: str = ''
    stats: NodeStatistics = field(default_factory=NodeStatistics)
    #: Synchronizer losses already warned about, per reason.
    reported_losses: Counter = field(default_factory=Counter)
    #: The last processed frame's image stamp: an older one means time went back.
    last_frame_ns: int | None = None
    #: Seconds the last publishing took: the time budget reserves it.
    publish_seconds: float = 0.0
    subscriptions_handle: SynchronizedSubscriptions | None = None
    #: Output publishers by attribute (CompletionCore's pub_depth, ...); see node.py.
    publishers: dict[str, Any] = field(default_factory=dict)

    def topic(self, relative: str) -> str:
        """Return this camera's name of a node topic: ``front/depth`` for ``depth``."""
        return f'{self.name}/{relative}' if self.name else relative

    @property
    def stream(self) -> Hashable:
        """Return the engine stream whose warm start this camera's frames continue."""
        return self.name or None

    @property
    def label(self) -> str:
        """Return the prefix of this camera's log lines ('' for the single camera)."""
        return f'camera {self.name}: ' if self.name else ''

    def status_name(self, node_name: str) -> str:
        """Return the name of this camera's /diagnostics status for the node ``node_name``."""
        return f'{node_name}/{self.name}' if self.name else node_name

    def publisher(self, attribute: str) -> Any:
        """Return the output publisher ``attribute`` (pub_depth, ...), None when absent."""
        return self.publishers.get(attribute)


def node_cameras(names: tuple[str, ...]) -> list[Camera]:
    """Return the node's cameras: one per name, or the single unnamed one."""
    return [Camera(name) for name in names] or [Camera()]
