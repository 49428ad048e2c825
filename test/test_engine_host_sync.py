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
No optimization step makes the host wait for the device.

On CPU tensors nothing waits, so the operations that would make a GPU's host wait are counted
instead (lrda_ros/speed/host_sync.py: HostReads, HostCopies).
"""

from __future__ import annotations

import copy
import itertools

from conftest import smooth_image, tiny_network
from lrda_ros.engine import DepthCompleter, DepthModel, TTOConfig, UniDepthModel
from lrda_ros.engine.precision import native_bfloat16
from lrda_ros.speed.host_sync import host_synchronizations
import numpy as np
import pytest
import torch
from unidepth_tiny import camera_matrix, tiny_unidepth_network


def counted_steps(monkeypatch, device: str = 'cpu') -> list[list[str]]:
    """Record, for every optimization step from now on, its host reads (on CUDA: waits)."""
    per_step: list[list[str]] = []
    step = DepthCompleter._step

    def counting_step(self, *args, **kwargs):
        with host_synchronizations(device) as found:
            step(self, *args, **kwargs)
        per_step.append(found)

    monkeypatch.setattr(DepthCompleter, '_step', counting_step)
    return per_step


def frame_reads(completer: DepthCompleter, image, sparse, intrinsics) -> int:
    """Count a whole frame's host reads."""
    with host_synchronizations('cpu') as found:
        completer.complete(image, sparse, intrinsics=intrinsics)
    return len(found)


def sparse_of(image_shape, count: int = 150, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    sparse = np.zeros(image_shape[:2], np.float32)
    index = rng.choice(sparse.size, count, replace=False)
    sparse.flat[index] = rng.uniform(1.0, 20.0, count)
    sparse[:10] = 0  # no returns in the top rows, like KITTI: the sparse head crops the tail
    return sparse


BASE_NETWORK = tiny_network(seed=0)
SCOPES = ('decoder_lora', 'encoder_lora', 'full_lora', 'decoder_full', 'prompt')
HEADS = ({'sparse_head': True}, {'sparse_head': False},
         {'sparse_head': True, 'tail_strips': 3})
#: Every flag that changes what a step does, all off and all on.
FLAGS_OFF: dict = {}
FLAGS_ON = {'warm_start': True, 'convergence_tol': 0.05, 'patience': 1, 'lora_dropout': 0.1,
            'time_budget': 3600.0, 'learning_rate': 0.3, 'channels_last': False,
            'backtrack_fraction': 0.2,
            'dtype': 'bfloat16' if native_bfloat16(torch.device('cpu')) else 'float32'}
#: Every scope with every head under all flags on, every scope with all off, and the flags
#: whose path all-on can skip (its learning rate may diverge the first frame: no warm second
#: frame, no convergence) on their own.
CASES = [(scope, head, FLAGS_ON) for scope, head in itertools.product(SCOPES, HEADS)]
CASES += [(scope, HEADS[0], FLAGS_OFF) for scope in SCOPES]
CASES += [('decoder_lora', HEADS[0], {name: FLAGS_ON[name]})
          for name in ('warm_start', 'convergence_tol', 'time_budget')]


def case_id(case) -> str:
    scope, head, flags = case
    flag_id = 'all-on' if flags is FLAGS_ON else ('-'.join(flags) or 'all-off')
    return f'{scope}-{"-".join(f"{k}{v}" for k, v in head.items())}-{flag_id}'


def two_frames(case, monkeypatch, device: str = 'cpu'):
    """Complete two frames (the second warm where warm_start is on), counting step by step."""
    scope, head, flags = case
    config = TTOConfig(scope=scope, device=device, min_depth=0.5, iterations=3,
                       warm_iterations=2, **head, **flags)
    completer = DepthCompleter(DepthModel(copy.deepcopy(BASE_NETWORK)), config)
    image = smooth_image(1, 42, 56)
    per_step = counted_steps(monkeypatch, device)
    results = [completer.complete(image, sparse_of(image.shape, seed=seed)) for seed in range(2)]
    # A diverged first frame (learning rate 0.3) is no warm start for the second.
    assert results[1].warm_started <= config.warm_start
    # The loop ends once the host sees the stop flag (end rules, divergence): on the CPU
    # right after the step that set it, on CUDA a step or two later (those steps are masked).
    ran = sum(result.iterations for result in results)
    assert ran <= len(per_step) <= (ran + 4 if device == 'cuda' else ran)
    assert len(per_step) <= 3 + 3  # at most ``iterations`` each (warm frames may go on)
    return per_step


@pytest.mark.parametrize('case', CASES, ids=[case_id(c) for c in CASES])
def test_no_step_reads_the_device(case, monkeypatch):
    per_step = two_frames(case, monkeypatch)
    assert per_step == [[]] * len(per_step)


#: The node's configurations on a GPU: bfloat16 there (FLAGS_ON's dtype follows the CPU).
CUDA_CASES = [('decoder_lora', head, {**FLAGS_ON, 'dtype': 'bfloat16'}) for head in HEADS]
CUDA_CASES += [('decoder_lora', HEADS[0], FLAGS_OFF), ('prompt', HEADS[0], FLAGS_OFF)]


@pytest.mark.cuda
@pytest.mark.parametrize('case', CUDA_CASES, ids=[case_id(c) for c in CUDA_CASES])
def test_no_step_synchronizes_a_cuda_device(case, monkeypatch):
    """What the counted reads stand for: no step waits for the GPU (its sync debug mode)."""
    per_step = two_frames(case, monkeypatch, 'cuda')
    assert per_step == [[]] * len(per_step)


@pytest.mark.parametrize('flags', [FLAGS_OFF, FLAGS_ON], ids=['all-off', 'all-on'])
def test_unidepth_steps_read_nothing(flags, monkeypatch):
    flags = {k: v for k, v in flags.items() if k != 'dtype'}  # bf16: test_unidepth covers it
    config = TTOConfig(device='cpu', min_depth=0.5, iterations=3, warm_iterations=2,
                       sparse_head=False, **flags)
    completer = DepthCompleter(UniDepthModel(tiny_unidepth_network()), config)
    image = smooth_image(1, 42, 56)
    per_step = counted_steps(monkeypatch)
    result = completer.complete(image, sparse_of(image.shape), intrinsics=camera_matrix(42, 56))
    assert len(per_step) == result.iterations <= 3
    assert per_step == [[]] * len(per_step)


@pytest.mark.parametrize('scope', ['decoder_lora', 'prompt'])
def test_host_reads_do_not_grow_with_the_steps(scope):
    """A frame's host reads (all at its start and end) are the same for 2 and 8 steps."""
    image = smooth_image(2, 42, 56)
    sparse = sparse_of(image.shape)
    counts = []
    for iterations in (2, 8):
        completer = DepthCompleter(DepthModel(copy.deepcopy(BASE_NETWORK)), TTOConfig(
            scope=scope, device='cpu', min_depth=0.5, iterations=iterations,
            convergence_tol=0.01, patience=1))
        counts.append(frame_reads(completer, image, sparse, None))
    assert counts[0] == counts[1] > 0


def test_stop_check_every_reads_the_stop_flag_that_often(monkeypatch):
    """``stop_check_every`` = 3 over 9 steps: waits for the flag at steps 3 and 6."""
    image = smooth_image(2, 42, 56)
    sparse = sparse_of(image.shape)
    counts = {}
    for every in (0, 3):
        completer = DepthCompleter(DepthModel(copy.deepcopy(BASE_NETWORK)), TTOConfig(
            device='cpu', min_depth=0.5, iterations=9, stop_check_every=every))
        counts[every] = frame_reads(completer, image, sparse, None)
    assert counts[3] == counts[0] + 2
    # A frame that converges at once ends right after that step either way (on the CPU the
    # flag posted without waiting has landed by the next step), with the same result.
    results = {}
    for every in (0, 3):
        completer = DepthCompleter(DepthModel(copy.deepcopy(BASE_NETWORK)), TTOConfig(
            device='cpu', min_depth=0.5, iterations=9, convergence_tol=10.0, patience=1,
            stop_check_every=every))
        per_step = counted_steps(monkeypatch)
        results[every] = completer.complete(image, sparse), len(per_step)
    (masked, masked_steps), (ended, ended_steps) = results[0], results[3]
    assert masked.iterations == ended.iterations == 2  # stopped at the second step
    assert (masked_steps, ended_steps) == (2, 2)
    np.testing.assert_array_equal(masked.depth, ended.depth)
    assert masked.losses == ended.losses
