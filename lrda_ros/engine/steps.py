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
  for LoRA), over the flat buffers the weights live in (engine/flat_parameters.py): one
  operation per buffer, not per adapted tensor;
- a collapsed step writes the best weights back with ``torch.where`` and halves the learning
  rate, a 0-d tensor Adam reads on the device;
- a step that must not run (collapse, divergence, or any step after a stop) is
  skipped by fused Adam's ``found_inf`` input, the mechanism ``torch.amp.GradScaler`` uses to
  skip steps with non-finite gradients: weights, moments and step count stay as they were.

A frame's end rule (:class:`EndRule`) stops the steps after the one that meets it: the
plateau rule (the best loss improved by less than a share of itself over the last few steps;
engine/schedule.py decides between stages, on the host). The loop ends once the
host sees the stop flag (:meth:`StepRules.settle`: at once on the CPU, a step or two late on
CUDA, the host never more than two steps ahead: engine/lookahead.py); steps queued after a
stop compute and change nothing, so the frame's result is the same as ending the loop exactly
there.

Under ``schedule: paper`` only the record and the end rule act (the paper runs its T steps
whatever the loss does and returns the last iterate): no divergence stop, no undone collapse,
no best weights kept.
"""

from __future__ import annotations

from dataclasses import dataclass
import math
from typing import Sequence

import torch

from .config import TTOConfig
from .flat_parameters import FlatParameters
from .lookahead import StepPosts

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
    #: Whether the losses (``best_loss``) are of the full-size network input.
    full_size: bool = True


@dataclass(frozen=True)
class EndRule:
    """When a run of steps ends before its step count (off by default)."""

    #: Plateau: end once the best loss improved by at most this share of itself over the last
    #: ``patience`` steps (0 = off).
    plateau_tol: float = 0.0
    patience: int = 3


def _write(history: torch.Tensor, index: int | torch.Tensor, value: torch.Tensor) -> None:
    """Write a 0-d ``value`` at ``index``: a traced index tensor is never read by the host."""
    if isinstance(index, torch.Tensor):
        history.index_put_((index.view(1),), value.view(1))
    else:
        history[index] = value


def _select_into(out: torch.Tensor, condition: torch.Tensor, chosen: torch.Tensor,
                 other: torch.Tensor) -> None:
    """Write ``torch.where(condition, chosen, other)`` into ``out`` (channels-last too)."""
    if out.is_contiguous():
        torch.where(condition, chosen, other, out=out)
    else:  # Dynamo traces no out= of another layout; Inductor fuses the copy
        out.copy_(torch.where(condition, chosen, other))


def new_adam(parameters: list[torch.Tensor], learning_rate: float) -> torch.optim.Adam:
    """
    Return Adam with a tensor learning rate and the fused kernel (skips steps on the device).

    The fused kernel exists for CPU and CUDA tensors; its ``found_inf`` input skips a step
    without the host reading anything.
    """
    device = parameters[0].device
    return torch.optim.Adam(parameters, lr=torch.tensor(learning_rate, device=device),
                            fused=True)


def fresh_adam(optimizer: torch.optim.Optimizer | None, parameters: list[torch.Tensor],
               learning_rate: float) -> torch.optim.Optimizer:
    """
    Return Adam as new for ``parameters``: ``optimizer`` with its state zeroed, if theirs.

    The numbers of :func:`new_adam`'s (whose first step makes zero moments and step counts),
    with the state's addresses kept, which a CUDA graph of compiled steps replays
    (engine/whole_step.py). The caller sets the learning rate back (:func:`reset_learning_rate`).
    """
    if optimizer is None or len(optimizer.param_groups) != 1 or len(
            optimizer.param_groups[0]['params']) != len(parameters) or any(
            mine is not theirs
            for mine, theirs in zip(optimizer.param_groups[0]['params'], parameters)):
        return new_adam(parameters, learning_rate)
    state = [value for entries in optimizer.state.values()
             for value in entries.values() if isinstance(value, torch.Tensor)]
    if state:  # none before a first step
        torch._foreach_zero_(state)
    return optimizer


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

    def __init__(self, parameters: FlatParameters | Sequence[torch.Tensor], target: torch.Tensor,
                 iterations: int, config: TTOConfig, end: EndRule = EndRule()) -> None:
        # A plain list is bound to buffers of its own here (an adaptation passes its own).
        self.flat = (parameters if isinstance(parameters, FlatParameters)
                     else FlatParameters(parameters))
        self.config = config
        #: Whether the divergence stop, the collapse rule and the best weights act.
        self.guards = config.schedule != 'paper'
        self.end = end
        device = target.device
        self.losses = torch.zeros(iterations, device=device)
        #: The best loss after each step's decision (the plateau rule looks back on it).
        self.best_history = torch.zeros(iterations, device=device)
        #: Any prediction, once aligned, does at least as well as this constant one.
        self.constant_loss = torch.zeros((), device=device)
        self.best_loss = torch.zeros((), device=device)
        self._best = self.flat.clone_buffers() if self.guards else []
        #: Per weight, its slice of ``_best``: what a compiled step updates (see :meth:`tensors`).
        self._best_views = self.flat.views(self._best) if self.guards else []
        self.active = torch.ones((), dtype=torch.bool, device=device)
        self.diverged = torch.zeros((), dtype=torch.bool, device=device)
        self.backtracks = torch.zeros((), dtype=torch.int64, device=device)
        self.recorded = torch.zeros((), dtype=torch.int64, device=device)
        self._skip = torch.zeros((), device=device)
        self._collapsed = torch.zeros((), dtype=torch.bool, device=device)
        #: Whether a compiled step's loss is the best yet (:meth:`keep_best` after its graph).
        self._improved = torch.zeros((), dtype=torch.bool, device=device)
        self._material_gain = torch.zeros((), device=device)
        self._divergence_bound = torch.zeros((), device=device)
        self._half = torch.tensor(0.5, device=device)
        self._one = torch.tensor(1.0, device=device)
        #: The stop flags posted to the host, and the steps' end marks (engine/lookahead.py).
        self.posts = StepPosts(device)
        self.restart(target)

    def restart(self, target: torch.Tensor) -> None:
        """
        Start a new run of steps on ``target``: every record as new, written in place.

        The tensors keep their addresses from run to run, which a CUDA graph replaying
        compiled steps needs (engine/whole_step.py reuses the rules of a run length).
        """
        #: The weights' buffers, checked bound once here: nothing rebinds them within a stage.
        self._current = self.flat.buffers
        if self._best:
            torch._foreach_copy_(self._best, self._current)
        centred = target.float() - target.float().mean()
        self.constant_loss.copy_((centred * centred).sum())
        torch.mul(self.constant_loss, MATERIAL_GAIN, out=self._material_gain)
        for record in (self.losses, self.best_history, self.backtracks, self.recorded,
                       self._skip, self.diverged, self._collapsed, self._improved):
            record.zero_()
        for record in (self.best_loss, self._divergence_bound):
            record.fill_(math.inf)
        self.active.fill_(True)
        self.steps_run = 0
        self.posts.reset()

    def tensors(self) -> list[torch.Tensor]:
        """
        Return the tensors a compiled step reads or updates in place, the weights' aside.

        A compiled step (``in_graph``) works on each weight and its best copy, never on the
        flat buffers holding them: AOTAutograd merges graph inputs that share memory and are
        written into one synthetic base, which drops them from the static inputs a CUDA graph
        needs (torch/_functorch/_aot_autograd/input_output_analysis.py), whereas separate
        views of one buffer that do not overlap stay separate inputs. The graph only reads the
        best copies (:meth:`keep_best` writes them after it): Inductor (torch 2.13) compiled a
        graph that wrote channels-last views of them and read them back wrong (DA3's decoder
        weights missed whole updates; test_da3_engine.py).
        """
        return [self.losses, self.best_history, self.best_loss, self.active, self.diverged,
                self.backtracks, self.recorded, self._skip, self._collapsed, self._improved,
                self._divergence_bound, self.constant_loss, self._material_gain, self._half,
                self._one, *self._best_views]

    @torch.no_grad()
    def keep_best(self) -> None:
        """After a compiled step's graph, before its weights are written: the best copies."""
        for best, current in zip(self._best, self._current):
            _select_into(best, self._improved, current, best)

    @torch.no_grad()
    def decide(self, index: int | torch.Tensor, loss: torch.Tensor, post: bool = True,
               in_graph: bool = False) -> None:
        """
        Record step ``index``'s loss (before its update) and decide what the step does.

        A few dozen scalar operations: each is a kernel launch on a GPU, so what does not
        change from step to step is computed once (the material gain, the divergence bound
        once the first loss is known) and each mask once. ``index`` may be a 0-d device
        tensor (a compiled step: one graph for every index); ``post``: copy the stop flag to
        the host now (a compiled step posts it after its graph); ``in_graph``: a compiled
        step's (:meth:`tensors`): the best copies are left to :meth:`keep_best`.
        """
        loss = loss.detach().float()
        active = self.active
        _write(self.losses, index, loss)
        self.recorded.add_(active)  # methods, not +=: no attribute is set in a traced step
        # Every record is written in place: a compiled step's state keeps its addresses, as a
        # CUDA graph replaying it needs (engine/whole_step.py).
        if self.guards:
            going, stops = self._guard(index, loss)
        else:  # 'paper': every step runs until the count (or an end rule asked for)
            going, stops = active, None
        improved = torch.bitwise_and(going, loss < self.best_loss, out=self._improved)
        if not in_graph:  # a compiled step's are written after its graph (keep_best)
            for best, current in zip(self._best, self._current):
                _select_into(best, improved, current, best)
        torch.where(improved, loss, self.best_loss, out=self.best_loss)
        _write(self.best_history, index, self.best_loss)
        ends = self._ends(index)
        if ends is not None:  # this step still runs: the frame ends after it
            stops = going & ends if stops is None else stops | (going & ends)
        if stops is not None:
            torch.bitwise_and(active, ~stops, out=self.active)
        torch.logical_not(going, out=self._skip)  # 1.0 where the step must not change weights
        if post:
            self.post()

    def _guard(self, index: int | torch.Tensor, loss: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """Apply the collapse and divergence rules to step ``index``: (going, stops)."""
        config = self.config
        active = self.active
        if isinstance(index, torch.Tensor):
            torch.where(index == 0, config.divergence_factor * loss, self._divergence_bound,
                        out=self._divergence_bound)
        elif index == 0:
            torch.mul(loss, config.divergence_factor, out=self._divergence_bound)
        finite = loss.abs() < math.inf  # False for inf and NaN
        # A step that gave back ``backtrack_fraction`` of the best iterate's material gain
        # over a constant prediction has collapsed it: undone, and the steps go on.
        gain = self.constant_loss - self.best_loss
        collapsed = torch.bitwise_and(
            active & finite & (gain > self._material_gain),
            loss > self.best_loss + config.backtrack_fraction * gain, out=self._collapsed)
        # A rise that is no collapse (or a non-finite loss) beyond divergence_factor ends them.
        kept = active & ~collapsed
        diverged = kept & (~finite | (loss > self._divergence_bound))
        self.backtracks.add_(collapsed)
        self.diverged.bitwise_or_(diverged)
        return kept & ~diverged, diverged

    def post(self) -> None:
        """Queue the stop flag's copy to the host (:meth:`settle` reads it): a step ended."""
        self.posts.post(self.active)

    def _ends(self, index: int | torch.Tensor) -> torch.Tensor | None:
        """Whether the end rules stop the steps after step ``index`` (None: no rule is on)."""
        end = self.end
        if end.plateau_tol <= 0:
            return None
        if isinstance(index, torch.Tensor):
            # A gather, not indexing: no host read of the index where it is traced.
            before = self.best_history.index_select(
                0, (index - end.patience).clamp(min=0).view(1))[0]
            return (index >= end.patience) & (before - self.best_loss <= end.plateau_tol * before)
        if index >= end.patience:
            before = self.best_history[index - end.patience]
            return before - self.best_loss <= end.plateau_tol * before
        return None

    @torch.no_grad()
    def undo_collapse(self, learning_rates: list[torch.Tensor],
                      in_graph: bool = False) -> list[torch.Tensor] | None:
        """
        Write the best weights back and halve the (tensor) learning rates if collapsed.

        ``in_graph``: return the weights to go on from instead of writing them (a compiled
        step writes its parameters after its graph: engine/whole_step.py).
        """
        if not self.guards:  # 'paper': nothing collapses
            return list(self.flat.parameters) if in_graph else None
        collapsed = self._collapsed
        factor = torch.where(collapsed, self._half, self._one)
        for learning_rate in learning_rates:
            learning_rate.mul_(factor)
        if in_graph:
            return [torch.where(collapsed, best, current)
                    for best, current in zip(self._best_views, self.flat.parameters)]
        for best, current in zip(self._best, self._current):
            _select_into(current, collapsed, best, current)
        return None

    @property
    def skip(self) -> torch.Tensor:
        """Return 1.0 when this step must not change the weights (0-d float), else 0.0."""
        return self._skip

    @torch.no_grad()
    def apply(self, optimizer: torch.optim.Optimizer) -> None:
        """Undo a collapsed step (best weights, half the step size), then step or skip."""
        self.undo_collapse([group['lr'] for group in optimizer.param_groups])
        optimizer.found_inf = self._skip
        optimizer.step()
        optimizer.found_inf = None
        self.steps_run += 1

    def stopped(self) -> bool:
        """Read the stop flag (one host synchronization)."""
        return not bool(self.active)

    def settle(self, index: int) -> bool:
        """
        Before queueing step ``index``: return whether the steps have stopped, as far as known.

        The flag is copied to the host after each step without blocking; the host waits only
        for the step ``LOOKAHEAD`` before this one (engine/lookahead.py), so on CUDA a stop is
        seen a step or two late (the steps in between are masked, not wrong) and at once on
        the CPU. ``stop_check_every`` N > 0 also reads the flag itself every N steps, waiting
        for the device.
        """
        stopped = self.posts.settle(index)
        every = self.config.stop_check_every
        if every and index % every == 0:
            return self.stopped()
        return stopped

    def trace(self) -> StepTrace:
        """Read the steps' record (the frame's end: one host synchronization)."""
        if self.steps_run == 0:
            return StepTrace([], False, float('inf'), None)
        count = int(self.recorded)
        # The best weights copied: the next run of these rules overwrites its own. None
        # under 'paper', whose result is the last iterate.
        best = self.flat.views([buffer.clone() for buffer in self._best]) if self.guards else None
        return StepTrace(self.losses[:count].tolist(), bool(self.diverged),
                         float(self.best_loss), best, int(self.backtracks))
