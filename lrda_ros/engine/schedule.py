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
Step schedules: how many optimization steps a frame runs, on which network input, until when.

- ``paper``: exactly ``iterations`` steps at full size (``warm_iterations`` on a warm frame),
  as published; a warm frame runs cold after a scene cut (engine/scene_cut.py).
- ``adaptive``: a frame ends when its loss has stopped improving (the plateau rule,
  engine/steps.py), at most ``iterations`` steps. A warm frame starts from the carried or the
  unadapted weights, whichever fits its LiDAR pixels better (unadapted: it runs as a cold
  frame). After ``warm_iterations`` steps its loss is held against the one the previous frame
  ended with (both as a share of a constant prediction's, so frames of any depth range
  compare): caught up, it ends; far behind (another scene the first comparison missed), it
  restarts cold; in between, it goes on to the cold budget.
- ``fast``: the adaptive rules, but a cold frame's steps run on the encoder's features pooled
  to a coarser grid (a quarter of the decoder's arithmetic), the last few at full size, and a
  warm frame's steps all coarse: about a third of the adaptive schedule's arithmetic, for a
  looser fit (doc/performance.md measures both).
"""

from __future__ import annotations

from dataclasses import dataclass
import enum
import math

import torch

from .config import TTOConfig
from .model import DepthModel, EncodedImage
from .scene_cut import SceneCutRule
from .steps import EndRule, StepTrace

#: Plateau tolerance of 'adaptive' and 'fast' when ``convergence_tol`` is None: the best loss
#: improving by at most 0.1 % over ``patience`` steps. Looser tolerances (1 %) ended frames of
#: the demo room and of iBims that were still gaining (doc/design.md, step schedules).
PLATEAU_TOL = 0.001
#: A warm frame has caught up when its best loss share is at most this multiple of the share
#: the previous frame ended with: continuing frames of the KITTI bag ended their warm steps at
#: 0.84 to 1.27 times it, from new points and motion alone.
CATCH_UP_MARGIN = 1.5
#: A warm frame restarts cold when its best loss share after its warm steps is above this
#: multiple of the previous frame's, counted as at least the paper rule's floor (0.02):
#: continuing frames of the demo ended their warm steps at most at 0.018, real cuts (NYUv2 to
#: iBims, KITTI to iBims) at 0.71 and 0.60.
RESTART_RULE = SceneCutRule(factor=3.0)
#: 'fast': the coarse steps' patch grid as a share of the full one's sides.
COARSE_SCALE = 0.5
#: 'fast': the full-size steps that end a cold frame.
FINE_STEPS = 4


@dataclass
class Stage:
    """Consecutive optimization steps on one network input."""

    pixel_values: torch.Tensor
    encoded: EncodedImage
    max_steps: int
    end: EndRule
    #: Whether the stage runs on the frame's full-size network input (its losses are the
    #: final prediction's).
    full_size: bool
    #: A warm frame's first stage: after it, :func:`warm_verdict` decides what follows.
    catch_up: bool = False


class Verdict(enum.Enum):
    """What follows a warm frame's first stage."""

    DONE = 'done'
    CONTINUE = 'continue'
    RESTART_COLD = 'restart_cold'


def plateau_tol(config: TTOConfig) -> float:
    """Return the plateau rule's tolerance: ``convergence_tol``, else the schedule's."""
    if config.convergence_tol is not None:
        return config.convergence_tol
    return 0.0 if config.schedule == 'paper' else PLATEAU_TOL


def plan_stages(config: TTOConfig, warm: bool, full: tuple[torch.Tensor, EncodedImage],
                coarse: tuple[torch.Tensor, EncodedImage] | None,
                previous_share: float | None) -> list[Stage]:
    """
    Return a frame's stages under ``config.schedule``.

    ``coarse``: the coarse network input and features ('fast' only); ``previous_share``: the
    share of a constant prediction's loss the stream's previous frame ended with (warm frames).
    A ``catch_up`` stage's successors run only on :attr:`Verdict.CONTINUE`.
    """
    plateau = EndRule(plateau_tol(config), config.patience)
    if config.schedule == 'paper':
        steps = config.warm_iterations if warm else config.iterations
        return [Stage(*full, steps, plateau, True)]
    if config.schedule == 'fast' and coarse is None:
        raise ValueError("schedule 'fast' needs the coarse input")
    if warm:
        pixel_values, encoded = coarse if config.schedule == 'fast' else full
        full_size = config.schedule != 'fast'
        if previous_share is None or not math.isfinite(previous_share):
            return [Stage(pixel_values, encoded, config.iterations, plateau, full_size)]
        first = min(config.warm_iterations, config.iterations)
        return [Stage(pixel_values, encoded, first, plateau, full_size, catch_up=True),
                Stage(pixel_values, encoded, config.iterations - first, plateau, full_size)]
    if config.schedule == 'adaptive':
        return [Stage(*full, config.iterations, plateau, True)]
    fine = min(FINE_STEPS, config.iterations)
    return [Stage(*coarse, config.iterations - fine, plateau, False),
            Stage(*full, fine, EndRule(), True)]


def coarse_input(model: DepthModel, pixel_values: torch.Tensor, features: EncodedImage
                 ) -> tuple[torch.Tensor, EncodedImage]:
    """Return the 'fast' schedule's coarse steps' network input and features."""
    encoded = model.pooled(features, COARSE_SCALE)
    patch = model.patch_size
    grid = encoded.patch_grid
    # Only its shape is read: the decoder's scope keeps the encoder frozen.
    return pixel_values.new_empty((1, 3, grid[0] * patch, grid[1] * patch)), encoded


def warm_verdict(best_share: float, previous_share: float, ended_early: bool,
                 may_restart: bool = True) -> Verdict:
    """
    Decide what follows a warm frame's first stage from its LiDAR pixels' losses alone.

    ``best_share``: the stage's best loss as a share of a constant prediction's;
    ``ended_early``: its plateau rule ended it before its step count; ``may_restart``: False
    when scene-cut detection is off (``scene_cut_factor: 0``): a frame far behind goes on.
    """
    far_behind = RESTART_RULE.is_cut(best_share, previous_share)
    if far_behind and may_restart:
        return Verdict.RESTART_COLD
    if ended_early or (not far_behind and best_share <= CATCH_UP_MARGIN * previous_share):
        return Verdict.DONE
    return Verdict.CONTINUE


def combined_trace(traces: list[StepTrace]) -> StepTrace:
    """Return a frame's trace from its stages' (best iterate: the last stage run's)."""
    if not traces:
        return StepTrace([], False, math.inf, None)
    last = traces[-1]
    losses = [loss for trace in traces for loss in trace.losses]
    return StepTrace(losses, any(trace.diverged for trace in traces), last.best_loss,
                     last.best_state, sum(trace.backtracks for trace in traces),
                     full_size=last.full_size)
