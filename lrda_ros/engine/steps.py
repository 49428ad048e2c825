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
The optimization steps' decisions, kept on the device: no host synchronization per step.

Every step's rules (record the loss, keep the best iterate, undo a collapsed step at half the
step size, stop on divergence or convergence) are evaluated as 0-d device tensors, never read
by the host inside the loop: on a GPU the host then queues step after step without waiting for
one to finish, which is what CUDA graphs and a compiled step need. A decision takes effect by
masking:

- the best iterate is kept with ``torch.where`` (a copy of the adapted weights per step, small
  for LoRA);
- a collapsed step writes the best weights back with ``torch.where`` and halves the learning
  rate, a 0-d tensor Adam reads on the device;
- a step that must not run (collapse, divergence, convergence, or any step after a stop) is
  skipped by fused Adam's ``found_inf`` input, the mechanism ``torch.amp.GradScaler`` uses to
  skip steps with non-finite gradients: weights, moments and step count stay as they were.

After a stop the remaining steps still compute (and change nothing); the frame's result is the
same as ending the loop there. ``TTOConfig.stop_check_every`` reads the stop flag every that
many steps (one synchronization each) to end the loop early instead; by default it is read at
the frame's end only, with the losses.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .config import TTOConfig

#: Share of a constant prediction's loss an iterate must gain before a step can collapse it.
MATERIAL_GAIN = 0.01


@dataclass
class StepTrace:
    """What the steps did, read by the host once, at the frame's end."""

    #: Loss before each recorded step (steps after a stop are not recorded).
    losses: list[float]
    diverged: bool
    best_loss: float
    #: The best weights seen (None when no step ran).
    best_state: list[torch.Tensor] | None
    #: Collapsed steps undone (back to the best weights at half the step size).
    backtracks: int = 0


def new_adam(parameters: list[torch.Tensor], learning_rate: float) -> torch.optim.Adam:
    """
    Return Adam with a tensor learning rate and the fused kernel (skips steps on the device).

    The fused kernel exists for CPU and CUDA tensors; its ``found_inf`` input skips a step
    without the host reading anything.
    """
    device = parameters[0].device
    return torch.optim.Adam(parameters, lr=torch.tensor(learning_rate, device=device),
                            fused=True)


def reset_learning_rate(optimizer: torch.optim.Optimizer, learning_rate: float) -> None:
    """Set the (tensor) learning rate back to ``learning_rate`` (a backtrack lowered it)."""
    for group in optimizer.param_groups:
        group['lr'].fill_(learning_rate)


class StepRules:
    """
    One frame's step decisions as device tensors (see the module docstring).

    Call :meth:`decide` after each step's backward pass, then :meth:`apply` (which runs or
    skips the optimizer step), and :meth:`trace` once at the frame's end.
    """

    def __init__(self, parameters: list[torch.Tensor], target: torch.Tensor, iterations: int,
                 config: TTOConfig) -> None:
        self.parameters = parameters
        self.config = config
        device = target.device
        self.losses = torch.zeros(iterations, device=device)
        # Any prediction, once aligned, does at least as well as this constant one.
        centred = target.float() - target.float().mean()
        self.constant_loss = (centred * centred).sum()
        self.best_loss = torch.tensor(float('inf'), device=device)
        self.best_state = [p.detach().clone() for p in parameters]
        self.active = torch.tensor(True, device=device)
        self.diverged = torch.tensor(False, device=device)
        self.backtracks = torch.zeros((), dtype=torch.int64, device=device)
        self.recorded = torch.zeros((), dtype=torch.int64, device=device)
        self._skip = torch.zeros((), device=device)
        self._collapsed = torch.tensor(False, device=device)
        self.steps_run = 0

    @torch.no_grad()
    def decide(self, index: int, loss: torch.Tensor) -> None:
        """Record step ``index``'s loss (before its update) and decide what the step does."""
        config = self.config
        loss = loss.detach().float()
        active = self.active
        self.losses[index] = loss
        self.recorded += active.long()
        finite = torch.isfinite(loss)
        # A step that gave back ``backtrack_fraction`` of the best iterate's material gain
        # over a constant prediction has collapsed it: undone, and the steps go on.
        gain = self.constant_loss - self.best_loss
        collapsed = (active & finite & (gain > MATERIAL_GAIN * self.constant_loss)
                     & (loss > self.best_loss + config.backtrack_fraction * gain))
        # A rise that is no collapse (or a non-finite loss) beyond divergence_factor ends them.
        diverged = active & ~collapsed & (
            ~finite | (loss > config.divergence_factor * self.losses[0]))
        going = active & ~collapsed & ~diverged
        improved = going & (loss < self.best_loss)
        for best, parameter in zip(self.best_state, self.parameters):
            best.copy_(torch.where(improved, parameter.detach(), best))
        self.best_loss = torch.where(improved, loss, self.best_loss)
        converged = going & self._converged(index, loss)
        self.backtracks += collapsed.long()
        self.diverged |= diverged
        self.active = active & ~(diverged | converged)
        self._collapsed = collapsed
        self._skip = (~(going & ~converged)).float()

    def _converged(self, index: int, loss: torch.Tensor) -> torch.Tensor:
        """Whether the loss improved by less than ``convergence_tol`` over ``patience`` steps."""
        tol, patience = self.config.convergence_tol, self.config.patience
        if tol <= 0 or index < patience:
            return torch.zeros((), dtype=torch.bool, device=loss.device)
        before = self.losses[index - patience]
        return before - loss < tol * before

    @torch.no_grad()
    def apply(self, optimizer: torch.optim.Optimizer) -> None:
        """Undo a collapsed step (best weights, half the step size), then step or skip."""
        collapsed = self._collapsed
        for best, parameter in zip(self.best_state, self.parameters):
            parameter.copy_(torch.where(collapsed, best, parameter))
        for group in optimizer.param_groups:
            group['lr'].mul_(torch.where(collapsed, 0.5, 1.0))
        optimizer.found_inf = self._skip
        optimizer.step()
        optimizer.found_inf = None
        self.steps_run += 1

    def stopped(self) -> bool:
        """Read the stop flag (one host synchronization)."""
        return not bool(self.active)

    def trace(self) -> StepTrace:
        """Read the steps' record (the frame's end: one host synchronization)."""
        if self.steps_run == 0:
            return StepTrace([], False, float('inf'), None)
        count = int(self.recorded)
        return StepTrace(self.losses[:count].tolist(), bool(self.diverged),
                         float(self.best_loss), self.best_state, int(self.backtracks))
