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
Several image streams (cameras) on one completer: each keeps its own warm start.

Warm start carries a frame's adapted weights, Adam's moments and the measured step times to
the next frame *of the same stream*: a front camera's adaptation is no starting point for a
side camera's image. One stream's state is live in the model at a time; the others are parked
here (a copy of the adapted weights, their own optimizer, their own step times), so many
streams share one network instead of one copy each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Hashable

import torch

from .deadline import StepTimes


@dataclass
class WarmState:
    """What one stream carries from frame to frame (see DepthCompleter)."""

    #: The adaptation's saved state (Adaptation.save_state), None when nothing to carry.
    adaptation: Any = None
    #: The stream's own Adam (its moment estimates); None until its first step.
    optimizer: torch.optim.Optimizer | None = None
    #: Network input shape of the last frame that may warm-start the next; None = cold.
    input_shape: tuple[int, ...] | None = None
    #: Step and finish durations at this stream's resolution, for its deadlines.
    step_times: StepTimes = field(default_factory=StepTimes)
    #: The last frame's unexplained loss share, for scene-cut detection (scene_cut.py).
    previous_share: float | None = None


class ParkedStreams:
    """The warm states of the streams not live in the model, by stream key."""

    def __init__(self) -> None:
        self._states: dict[Hashable, WarmState] = {}

    def park(self, stream: Hashable, state: WarmState) -> None:
        """Keep ``stream``'s state until it is live again."""
        self._states[stream] = state

    def unpark(self, stream: Hashable) -> WarmState:
        """Return (and forget) ``stream``'s parked state; a new stream starts cold."""
        return self._states.pop(stream, None) or WarmState()

    def forget(self, stream: Hashable) -> None:
        """Drop a parked stream's state: its next frame starts cold."""
        self._states.pop(stream, None)

    def __contains__(self, stream: Hashable) -> bool:
        """Return whether ``stream`` has a parked state."""
        return stream in self._states
