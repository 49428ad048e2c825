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
Closed-form scale and shift alignment of an affine-invariant prediction to sparse metres.

Relative Depth Anything V2 models predict disparity up to an unknown scale and shift, so the
LiDAR depths S are compared as 1/S; metric models predict metres and are compared directly.
Everything here is differentiable and free of host synchronization, so it can sit inside the
optimization loop on any device.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import torch

# Relative spread below which a fit is treated as degenerate (constant input).
_DEGENERATE_SPREAD = 1e-8
_TINY = 1e-12


class PredictionSpace(str, Enum):
    """The quantity a network predicts: disparity (relative models) or metres (metric)."""

    DISPARITY = 'disparity'
    DEPTH = 'depth'


@dataclass(frozen=True)
class ScaleShift:
    """Least-squares scale and shift, as 0-d tensors (so they stay on the device)."""

    scale: torch.Tensor
    shift: torch.Tensor

    def apply(self, prediction: torch.Tensor) -> torch.Tensor:
        """Return scale * prediction + shift."""
        return self.scale * prediction + self.shift


def _total(values: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
    return (values if weights is None else values * weights).sum()


def _mean(values: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
    return values.mean() if weights is None else _total(values, weights) / weights.sum()


def fit_scale_shift(prediction: torch.Tensor, target: torch.Tensor,
                    weights: torch.Tensor | None = None) -> ScaleShift:
    """
    Fit target ≈ scale * prediction + shift by least squares over paired 1-D samples.

    Degenerate cases fall back instead of dividing by zero: a constant target or constant
    prediction (e.g. all LiDAR depths equal) gives the scale-only fit through the origin, which
    keeps the prediction's structure; an all-zero prediction gives the constant mean target.
    ``weights`` (0 or 1 per sample) leave out the samples of weight 0: the padding that keeps
    a compiled step's shapes from frame to frame (engine/compiled.py).
    """
    pred = prediction.to(torch.float32)
    tgt = target.to(torch.float32)
    count = pred.numel() if weights is None else weights.sum()
    pred_mean, tgt_mean = _mean(pred, weights), _mean(tgt, weights)
    pred_c, tgt_c = pred - pred_mean, tgt - tgt_mean
    var_pred = _mean(pred_c * pred_c, weights)
    var_tgt = _mean(tgt_c * tgt_c, weights)
    affine_ok = ((var_pred > _DEGENERATE_SPREAD * (pred_mean * pred_mean + _TINY))
                 & (var_tgt > _DEGENERATE_SPREAD * (tgt_mean * tgt_mean + _TINY))
                 & (count >= 2))
    affine_scale = _mean(pred_c * tgt_c, weights) / var_pred.clamp_min(_TINY)
    power = _total(pred * pred, weights)
    through_origin = _total(pred * tgt, weights) / power.clamp_min(_TINY)
    has_signal = power > _TINY
    scale = torch.where(affine_ok, affine_scale,
                        torch.where(has_signal, through_origin, torch.zeros_like(power)))
    shift = torch.where(affine_ok, tgt_mean - affine_scale * pred_mean,
                        torch.where(has_signal, torch.zeros_like(power), tgt_mean))
    return ScaleShift(scale, shift)


def alignment_loss(prediction: torch.Tensor, target: torch.Tensor,
                   weights: torch.Tensor | None = None,
                   fit_gradient: bool = True) -> tuple[torch.Tensor, ScaleShift]:
    """
    Return the paper's loss, sum of (a * D + b - S)^2 with (a, b) fitted, and the fit.

    Since (a, b) minimize the loss, its gradient with respect to the prediction is the same
    with them held fixed (the envelope theorem): the terms through the fit are zero but for
    rounding. ``fit_gradient`` keeps the fit in the graph all the same (float32, where those
    roundings steer Adam's first steps); False holds it fixed, some 25 fewer kernels a step
    (a reduced precision, whose own rounding is far larger). ``weights``: as
    :func:`fit_scale_shift`.
    """
    fit = fit_scale_shift(prediction if fit_gradient else prediction.detach(), target, weights)
    residual = fit.apply(prediction.to(torch.float32)) - target.to(torch.float32)
    return _total(residual * residual, weights), fit


def depth_to_target(depth: torch.Tensor, space: PredictionSpace) -> torch.Tensor:
    """Express metric depths (all > 0) in the space the network predicts."""
    return 1.0 / depth if space is PredictionSpace.DISPARITY else depth


def aligned_to_depth(aligned: torch.Tensor, space: PredictionSpace, min_depth: float,
                     max_depth: float) -> torch.Tensor:
    """
    Turn an aligned prediction into metres clamped to [min_depth, max_depth].

    Aligned disparity can reach zero or below far from the LiDAR points (the sky); clamping it to
    1/max_depth maps those pixels to the far limit instead of infinity or a negative depth.
    """
    if space is PredictionSpace.DISPARITY:
        aligned = aligned.clamp(min=1.0 / max_depth, max=1.0 / min_depth)
        return 1.0 / aligned
    return aligned.clamp(min=min_depth, max=max_depth)
