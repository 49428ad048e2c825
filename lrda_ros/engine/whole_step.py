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
A whole optimization step as one graph: forward, backward, the step rules and Adam.

``compile: true`` traces a step's loss, its gradient (``torch.autograd.grad``, which Dynamo
traces with ``trace_autograd_ops``), the step rules' decision and undo (engine/steps.py, with
the step's index a device tensor, so one graph serves every index) and Adam's update as one
``torch.compile(fullgraph=True)`` graph: on a GPU one graph is what a CUDA graph replays
(``mode='reduce-overhead'`` there), with no host work between a step's kernels.

Adam is written here as PyTorch's ``torch.optim.Adam`` computes it (its single-tensor
formulas; no weight decay, no amsgrad) over the optimizer's own state: fused Adam's kernel
has no shape function for tracing, and ``Optimizer.step`` breaks the graph on purpose. A
skipped step (a collapse, a divergence, a step after a stop) leaves weights, moments and step
counts as they were, as fused Adam's ``found_inf`` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from .compiled import mark_points_dynamic
from .config import TTOConfig
from .flat_parameters import FlatParameters
from .steps import EndRule, StepRules


@dataclass
class AdamState:
    """Adam's state of one parameter group, as tensors a traced step reads and updates."""

    #: Per parameter; None where Adam has no state (a weight no step has reached).
    exp_avgs: list[torch.Tensor | None]
    exp_avg_sqs: list[torch.Tensor | None]
    steps: list[torch.Tensor | None]
    learning_rate: torch.Tensor
    beta1: float
    beta2: float
    eps: float

    def tensors(self) -> list[torch.Tensor]:
        """Return what a step updates in place: moments, step counts, learning rate."""
        per_parameter = (*self.exp_avgs, *self.exp_avg_sqs, *self.steps)
        return [tensor for tensor in per_parameter if tensor is not None] + [self.learning_rate]

    @classmethod
    def of(cls, optimizer: torch.optim.Optimizer,
           parameters: list[torch.Tensor]) -> 'AdamState':
        """Return the state of ``optimizer`` (one group, after its first step)."""
        group = optimizer.param_groups[0]
        states = [optimizer.state.get(parameter, {}) for parameter in parameters]
        return cls([s.get('exp_avg') for s in states], [s.get('exp_avg_sq') for s in states],
                   [s.get('step') for s in states], group['lr'], *group['betas'], group['eps'])


@torch.no_grad()
def adam_update(weights: list[torch.Tensor], gradients: list[torch.Tensor | None],
                state: AdamState, skip: torch.Tensor) -> list[torch.Tensor]:
    """Return ``weights`` after Adam's step unless ``skip`` (torch.optim.Adam's formulas)."""
    beta1, beta2 = state.beta1, state.beta2
    keep = skip > 0
    updated_weights = []
    for weight, gradient, exp_avg, exp_avg_sq, step in zip(
            weights, gradients, state.exp_avgs, state.exp_avg_sqs, state.steps):
        if gradient is None or step is None:  # not reached: Adam skips it too
            updated_weights.append(weight)
            continue
        new_step = step + 1
        new_avg = exp_avg.lerp(gradient, 1 - beta1)
        new_avg_sq = exp_avg_sq * beta2 + (1 - beta2) * gradient * gradient
        step_size = state.learning_rate / (1 - beta1 ** new_step)
        denominator = new_avg_sq.sqrt() / (1 - beta2 ** new_step).sqrt() + state.eps
        updated = weight - step_size * new_avg / denominator
        updated_weights.append(torch.where(keep, weight, updated))
        exp_avg.copy_(torch.where(keep, exp_avg, new_avg))
        exp_avg_sq.copy_(torch.where(keep, exp_avg_sq, new_avg_sq))
        step.copy_(torch.where(keep, step, new_step))
    return updated_weights


def whole_step(loss_function: Callable[..., torch.Tensor], inputs: tuple,
               parameters: list[torch.Tensor], rules: StepRules, adam: AdamState,
               index: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """
    Run one step (after a frame's first, eager one, which made Adam's state): its loss.

    ``loss_function(*inputs)`` computes the step's loss from the current weights. Returns
    the loss and the new weights, which the caller writes into ``parameters``: a graph that
    differentiates its parameters and also writes them was compiled wrong by Inductor (the
    steps left eager's trajectory at their second compiled step), and the weights' flat
    buffers as inputs beside them are no static inputs (engine/steps.py, tensors).
    """
    value = loss_function(*inputs)
    gradients = torch.autograd.grad(value, parameters, allow_unused=True)
    value = value.detach()
    rules.decide(index, value, post=False, in_graph=True)
    weights = rules.undo_collapse([adam.learning_rate], in_graph=True)
    return value, adam_update(weights, list(gradients), adam, rules.skip)


class CompiledSteps:
    """:func:`whole_step` compiled whole (a CUDA graph per step on CUDA), and how it is run."""

    def __init__(self, device: torch.device, backend: str | Callable = 'inductor') -> None:
        # Dynamo traces torch.autograd.grad only with this (off by default in PyTorch).
        torch._dynamo.config.trace_autograd_ops = True
        cuda_graphs = device.type == 'cuda' and backend == 'inductor'
        mode = 'reduce-overhead' if cuda_graphs else None
        self.step = torch.compile(whole_step, fullgraph=True, dynamic=False, mode=mode,
                                  backend=backend)
        #: The steps' indices as device tensors (one graph for every index, no copy a step).
        self._indices = torch.arange(64, device=device)
        #: Adam's state of the current run of steps (made at its first compiled step).
        self._adam: AdamState | None = None
        #: Step rules per run length and end rule, restarted for each run (same addresses).
        self._rules: dict[tuple[int, EndRule], StepRules] = {}

    def rules(self, flat: FlatParameters, target: torch.Tensor, iterations: int,
              config: TTOConfig, end: EndRule) -> StepRules:
        """Return step rules for a run of ``iterations`` steps (as StepRules(...) would)."""
        key = (iterations, end)
        rules = self._rules.get(key)
        if (rules is None or rules.flat is not flat or rules.config is not config
                or rules.losses.device != target.device):
            rules = self._rules[key] = StepRules(flat, target, iterations, config, end)
        else:
            rules.restart(target)
        return rules

    def run(self, loss_function: Callable[..., torch.Tensor], inputs: tuple,
            parameters: list[torch.Tensor], rules: StepRules,
            optimizer: torch.optim.Optimizer, index: int) -> None:
        """
        Run step ``index`` > 0 of a run of steps, after its eager first one.

        ``inputs``: the completer's loss inputs (pixels, features, samples, target, sparse
        head plan). The first step has built what a frame computes once (the sparse head's
        gathers, the frozen layers' outputs) and Adam's state; at the second, the sizes that
        follow the LiDAR points (padded to buckets: engine/compiled.py) and the step count are
        marked dynamic: one graph serves every frame, a CUDA graph every frame of a bucket.
        """
        samples, target, plan = inputs[2:5]
        if index == 1:  # the run's first compiled step
            # The LiDAR-sized tensors, and the rules' records, sized by the step count.
            mark_points_dynamic(samples.rows, samples.cols, samples.weights, target,
                                rules.losses, rules.best_history,
                                *(plan.frame_tensors() if plan is not None else ()))
            # Gradients are the graph's own from here: the eager step's are let go. Adam's
            # state tensors stay the same objects for the rest of the run.
            optimizer.zero_grad(set_to_none=True)
            self._adam = AdamState.of(optimizer, parameters)
            # A CUDA graph replays fixed addresses: Inductor records one only if every tensor
            # the step updates in place is a static input (parameters are; the rules' and
            # Adam's state are marked, and keep their addresses from frame to frame: rules
            # reused per run length, Adam zeroed in place), and a step returning what the
            # next one reads would chain recordings (the rules write in place). The frame's
            # data, read only, is copied into the graph's inputs at each replay.
            for tensor in (*rules.tensors(), *self._adam.tensors()):
                torch._dynamo.mark_static_address(tensor)
        if self._indices.numel() <= index or self._indices.device != target.device:
            self._indices = torch.arange(max(64, 2 * index), device=target.device)
        _, weights = self.step(loss_function, inputs, parameters, rules, self._adam,
                               self._indices[index])
        rules.keep_best()  # from the weights the step started from
        with torch.no_grad():  # one foreach copy (the graph's outputs, before its next replay)
            torch._foreach_copy_(parameters, weights)
        rules.post()  # a copy to the host: outside the graph, which replays device work only
        rules.steps_run += 1
