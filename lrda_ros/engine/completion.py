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

"""What one completion takes from a sparse depth map and gives back."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
import math

import numpy as np
import torch

from .model import EncodedImage


class CompletionStatus(str, Enum):
    """How a frame's optimization ended."""

    #: Ran its iterations (or stopped early on convergence).
    OPTIMIZED = 'optimized'
    #: No optimizer step ran (fewer than min_points, or zero iterations configured): the prior
    #: aligned by scale and shift only.
    ALIGNMENT_ONLY = 'alignment_only'
    #: The loss diverged; the best weights seen were kept.
    DIVERGED = 'diverged'


@dataclass
class SparseSamples:
    """The valid pixels of a sparse depth map."""

    rows: torch.Tensor
    cols: torch.Tensor
    depth: torch.Tensor

    @property
    def count(self) -> int:
        """Return the number of valid pixels."""
        return int(self.rows.numel())

    @classmethod
    def from_map(cls, sparse_depth: np.ndarray, min_depth: float, max_depth: float,
                 device: torch.device) -> 'SparseSamples':
        """Select finite depths in [min_depth, max_depth]; 0, NaN and inf mean no measurement."""
        with np.errstate(invalid='ignore'):
            valid = np.isfinite(sparse_depth) & (sparse_depth >= min_depth) & (
                sparse_depth <= max_depth)
        rows, cols = np.nonzero(valid)
        depth = sparse_depth[rows, cols].astype(np.float32)
        return cls(torch.from_numpy(rows).to(device), torch.from_numpy(cols).to(device),
                   torch.from_numpy(depth).to(device))


@dataclass
class CompletionResult:
    """Dense metric depth for one frame and what the optimization did."""

    depth: np.ndarray
    status: CompletionStatus
    scale: float
    shift: float
    num_points: int
    iterations: int
    warm_started: bool
    #: Loss before each optimizer step.
    losses: list[float] = field(default_factory=list)
    #: Loss of the returned prediction.
    final_loss: float = math.nan
    #: Steps that collapsed the prediction and were undone (TTOConfig.backtrack_fraction).
    backtracks: int = 0
    #: The frame's deadline (time budget) stopped the steps before ``iterations`` ran out.
    stopped_at_deadline: bool = False
    encode_seconds: float = 0.0
    optimize_seconds: float = 0.0
    total_seconds: float = 0.0
    #: (H, W) float32 confidence output of models that have one (UniDepthV2: a per-image
    #: ranking of the network's own expected error, larger = less reliable, no unit), from
    #: the pass that gave ``depth``; None for models without one.
    confidence: np.ndarray | None = None
    #: Warm start was due but the frame followed a scene cut, so it ran cold (scene_cut.py).
    scene_cut: bool = False


@dataclass
class EncodedFrame:
    """An image's network input and encoder features, computed ahead (see encode_frames)."""

    pixel_values: torch.Tensor
    encoded: EncodedImage
    #: This image's share of the encoding time (a batch's time split evenly).
    seconds: float
