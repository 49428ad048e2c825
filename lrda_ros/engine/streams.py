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
from .steps import new_adam, reset_learning_rate


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


def _on_cpu(value: Any) -> Any:
    """Return a CPU copy of a tensor (the live one goes on changing), other values as they are."""
    return value.detach().to('cpu', copy=True) if torch.is_tensor(value) else value


def portable_state(input_shape: tuple[int, ...], optimizer: torch.optim.Optimizer | None,
                   adaptation: list[torch.Tensor], previous_share: float | None) -> dict:
    """
    Return a stream's warm start as plain CPU values (DepthCompleter.warm_state).

    No tensor of it is on a device: Adam's moments and steps are CPU copies, and its tensor
    learning rate is a number (a CPU tensor there would be mixed with the device's at the
    first step after a restore).
    """
    optimizer_state = optimizer.state_dict() if optimizer is not None else None
    if optimizer_state is not None:
        optimizer_state['state'] = {
            key: {name: _on_cpu(value) for name, value in entry.items()}
            for key, entry in optimizer_state['state'].items()}
        optimizer_state['param_groups'] = [
            {name: float(value) if torch.is_tensor(value) else value
             for name, value in group.items()}
            for group in optimizer_state['param_groups']]
    return {'input_shape': input_shape, 'optimizer': optimizer_state,
            'adaptation': [_on_cpu(value) for value in adaptation],
            'previous_share': previous_share}


def restored_adam(state: dict | None, parameters: list[torch.Tensor],
                  learning_rate: float) -> torch.optim.Optimizer | None:
    """
    Return the Adam of a portable state, all of it on the parameters' device.

    ``load_state_dict`` moves the moments to the parameters' device and dtype; the groups'
    learning rates it takes as stored (a number), so each becomes a tensor on that device
    again, as :func:`new_adam` makes it.
    """
    if state is None:
        return None
    optimizer = new_adam(parameters, learning_rate)
    optimizer.load_state_dict(state)
    for group in optimizer.param_groups:
        group['lr'] = torch.tensor(learning_rate, device=parameters[0].device)
    reset_learning_rate(optimizer, learning_rate)
    return optimizer
