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
A window of frames under warm start: the steps keep fitting the previous frames' LiDAR.

Warm start carries the adapted weights (and Adam's moments) from frame to frame, but each
frame's steps fit only that frame's LiDAR pixels, so the weights chase every frame's own
sampling of the scene, and the depth between the LiDAR rows changes with them. With a window of
N frames (``TTOConfig.temporal_window``), a warm frame's step loss is its own alignment loss
plus that of the N - 1 frames before it, each with its own scale and shift, through the same
weights: the weights fit what the frames share. The earlier frames' encoder features are kept
(the decoder-only scopes never change them), so a step costs N decoder passes at LiDAR pixels
and no encoder pass; memory grows by N - 1 frames' features.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

import torch

from .model import EncodedImage


@dataclass
class FittedFrame:
    """What the steps need of an earlier frame: its input, features and LiDAR target."""

    pixel_values: torch.Tensor
    encoded: EncodedImage
    #: Its LiDAR pixels (tto.SparseSamples) and their depths in the prediction's space.
    samples: Any
    target: torch.Tensor


class FrameWindow:
    """The up to ``size - 1`` frames before the current one, oldest first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._frames: deque[FittedFrame] = deque(maxlen=max(size - 1, 0))

    @property
    def earlier(self) -> list[FittedFrame]:
        """Return the frames the next warm frame's steps also fit."""
        return list(self._frames)

    def push(self, frame: FittedFrame) -> None:
        """Add a finished frame (the oldest leaves a full window); no-op for a window of 1."""
        if self.size > 1:
            self._frames.append(frame)

    def clear(self) -> None:
        """Forget every frame (a cold start, a reset, a scene cut)."""
        self._frames.clear()

    def __len__(self) -> int:
        """Return how many earlier frames are kept."""
        return len(self._frames)
