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
Where a frame's time goes: the node's stages around the engine and the engine's own.

The node times reading the messages (``read``), projecting the LiDAR (``project``) and
building and publishing the outputs, the LiDAR maps included (``publish``); the engine reports
its encoding, its steps and its final dense decode (``CompletionResult``). ``host`` is
everything the node did for the frame outside the engine: its whole processing time less the
engine's; ``engine`` is the engine's whole time. The confidence's support factor, which needs
only the LiDAR map, is computed on the node's second thread while the engine runs
(``CompletionPipeline.start_support``): on a GPU beside it, on the CPU sharing the cores.
/diagnostics carries the last frame's stages, the debug log each frame's, and ``lrda
hold-rate`` their medians.
"""

from __future__ import annotations

from dataclasses import dataclass
import math
from typing import Any

#: The stages of a frame, in order; ``host`` (the node's work outside the engine) follows.
STAGES = ('read', 'project', 'encode', 'steps', 'final decode', 'publish')
#: The stages the node does itself (the rest are the engine's).
HOST_STAGES = ('read', 'project', 'publish')
HOST, ENGINE = 'host', 'engine'


@dataclass(frozen=True)
class FrameStages:
    """One frame's seconds per stage (STAGES), and ``host`` and ``engine`` totals."""

    read: float = math.nan
    project: float = math.nan
    encode: float = math.nan
    steps: float = math.nan
    final_decode: float = math.nan
    publish: float = math.nan
    host: float = math.nan
    engine: float = math.nan

    @classmethod
    def of_frame(cls, read: float, project: float, result: Any, publish: float,
                 total: float) -> 'FrameStages':
        """
        Return a frame's stages: the node's, and the engine's from ``result``.

        ``result`` is the engine's ``CompletionResult``; ``total`` the node's whole processing
        time of the frame, the engine's included.
        """
        steps = result.optimize_seconds - result.final_decode_seconds
        return cls(read, project, result.encode_seconds, steps, result.final_decode_seconds,
                   publish, total - result.total_seconds, result.total_seconds)

    def milliseconds(self) -> dict[str, float]:
        """Return each stage's milliseconds by its name in STAGES, then ``host`` and ``engine``."""
        return {name: getattr(self, name.replace(' ', '_')) * 1e3
                for name in (*STAGES, HOST, ENGINE)}

    def text(self) -> str:
        """Return the stages as a log line's part: ``read 2.1 ms, project 1.0 ms, ...``."""
        return ', '.join(f'{name} {ms:.1f} ms' for name, ms in self.milliseconds().items())
