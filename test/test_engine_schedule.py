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

"""The step schedules: end rules, cached frozen outputs, coarse steps, warm frames' effort."""

import copy
from dataclasses import replace

from conftest import counted_steps, smooth_image
from lrda_ros import world
from lrda_ros.datasets.synthetic import synthetic_frames
from lrda_ros.engine import DepthCompleter, DepthModel, NonFiniteDepthError, Scope, TTOConfig
from lrda_ros.engine import model as model_module
from lrda_ros.engine import schedule as schedule_module
from lrda_ros.engine.loading import load_depth_model
from lrda_ros.engine.schedule import (COARSE_SCALE, FINE_STEPS, plan_stages, PLATEAU_TOL,
                                      Verdict, warm_verdict)
from lrda_ros.engine.steps import EndRule, StepRules
from lrda_ros.errors import ConfigError
import numpy as np
import pytest
import torch

TARGET = torch.tensor([1.0, 2.0, 4.0])
#: A constant prediction's loss on TARGET, by hand: mean 7/3, (16 + 1 + 25) / 9.
CONSTANT_LOSS = 14 / 3


def run_rules(losses: list[float], end: EndRule) -> tuple[list[bool], list[bool]]:
    """Feed a loss sequence to StepRules; return (active after, step skipped) per step."""
    weight = torch.zeros(1, requires_grad=True)
    config = TTOConfig(backtrack_fraction=1.0, divergence_factor=1e6)
    rules = StepRules([weight], TARGET, len(losses), config, end)
    active, skipped = [], []
    for index, loss in enumerate(losses):
        rules.decide(index, torch.tensor(loss))
        active.append(bool(rules.active))
        skipped.append(bool(rules._skip))
    return active, skipped


def test_plateau_rule_ends_after_the_step_that_meets_it():
    # The best loss improves by 2 % per step for 12 steps, then stays: over any 10 steps the
    # improvement is far above 1 % until step 12 + 10 = 22 looks back on step 12's best.
    losses = [1.0 * 0.98 ** k for k in range(13)] + [0.98 ** 12] * 15
    active, skipped = run_rules(losses, EndRule(plateau_tol=0.01, patience=10))
    first_stop = active.index(False)
    assert first_stop == 22
    assert not skipped[first_stop]  # the step that met the rule still runs
    assert all(skipped[first_stop + 1:]) and not any(active[first_stop:])


def test_plateau_rule_is_not_fooled_by_a_rise():
    # The loss jumps up and back down; the best of the last 10 steps keeps improving by 5 %.
    losses = [0.95 ** k * (3.0 if k % 4 == 1 else 1.0) for k in range(30)]
    active, _ = run_rules(losses, EndRule(plateau_tol=0.01, patience=10))
    assert all(active)


def test_warm_verdict_ends_goes_on_or_restarts_by_the_share_of_the_previous_frame():
    previous = 0.1  # the previous frame ended at a tenth of a constant prediction's loss
    assert warm_verdict(0.14, previous, False) is Verdict.DONE  # within CATCH_UP_MARGIN (1.5)
    assert warm_verdict(0.2, previous, False) is Verdict.CONTINUE
    assert warm_verdict(0.2, previous, True) is Verdict.DONE  # its plateau rule ended it
    assert warm_verdict(0.31, previous, True) is Verdict.RESTART_COLD  # beyond 3x
    assert warm_verdict(float('nan'), previous, False) is Verdict.RESTART_COLD
    # A previous frame fitted almost perfectly counts as 0.02: 10x its share is no cut.
    assert warm_verdict(0.01, 0.001, False) is Verdict.CONTINUE
    assert warm_verdict(0.061, 0.001, False) is Verdict.RESTART_COLD
    # Scene-cut detection off (scene_cut_factor: 0): far behind, it goes on instead.
    assert warm_verdict(0.31, previous, False, may_restart=False) is Verdict.CONTINUE


def test_paper_schedule_runs_exact_counts_and_adaptive_the_same_steps_until_a_rule(
        tiny_model):
    image = smooth_image(3)
    sparse = np.zeros(image.shape[:2], np.float32)
    sparse[::4, ::5] = np.linspace(2.0, 9.0, sparse[::4, ::5].size).reshape(
        sparse[::4, ::5].shape)
    results = {}
    for schedule in ('paper', 'adaptive'):
        network = copy.deepcopy(tiny_model.network)
        completer = DepthCompleter(DepthModel(network, 'cpu'), TTOConfig(
            device='cpu', min_depth=0.01, schedule=schedule, iterations=14, warm_iterations=3,
            warm_start=True))
        results[schedule] = [completer.complete(image, sparse) for _ in range(2)]
    paper = results['paper']
    assert [r.iterations for r in paper] == [14, 3]
    adaptive = results['adaptive']
    # Same steps, one Adam: the losses agree while both run (the plateau rule looks back 10).
    count = adaptive[0].iterations
    assert 10 <= count <= 14
    np.testing.assert_allclose(adaptive[0].losses, paper[0].losses[:count], rtol=1e-5)


@pytest.mark.parametrize('dtype', ['float32', 'bfloat16'])
def test_cached_frozen_outputs_give_the_losses_of_recomputing(tiny_model, monkeypatch, dtype):
    image = smooth_image(5)
    sparse = np.zeros(image.shape[:2], np.float32)
    sparse[1::3, ::4] = 5.0 + np.arange(sparse[1::3, ::4].size).reshape(
        sparse[1::3, ::4].shape) % 7
    losses = {}
    calls = []
    cached = model_module.frozen_base_output

    def counting(layer, inputs, cache, key):
        calls.append(key not in [k for k, _ in cache])
        return cached(layer, inputs, cache, key)

    for use_cache in (True, False):
        if use_cache:
            monkeypatch.setattr(model_module, 'frozen_base_output', counting)
        else:
            monkeypatch.setattr(model_module, 'frozen_base_output',
                                lambda layer, inputs, cache, key: layer(inputs))
        completer = DepthCompleter(DepthModel(copy.deepcopy(tiny_model.network), 'cpu'),
                                   TTOConfig(device='cpu', min_depth=0.01, dtype=dtype,
                                             schedule='paper', iterations=6,
                                             lora_path='separate'))  # the cached form
        calls.clear()
        losses[use_cache] = completer.complete(image, sparse).losses
        if use_cache:
            levels = len(tiny_model.network.neck.reassemble_stage.layers)
            # Each level's base output is computed on the frame's first decoder pass only.
            assert sum(calls) == levels and len(calls) > levels
    # The same operations on the same inputs: equal to float32 rounding of the sums.
    np.testing.assert_allclose(losses[True], losses[False], rtol=1e-5)


def test_pooled_features_are_the_mean_of_each_two_by_two_block(tiny_model):
    image = smooth_image(1, height=56, width=112)  # a 4 x 8 patch grid
    pixel_values = tiny_model.preprocess(image, None)
    encoded = tiny_model.encode(pixel_values, image.shape[:2])
    pooled = tiny_model.pooled(encoded, 0.5)
    assert pooled.patch_grid == (2, 4) and pooled.input_size == encoded.input_size
    for full, coarse in zip(encoded.hidden_states, pooled.hidden_states):
        grid = full[0, 1:].reshape(4, 8, -1)
        by_hand = (grid[0::2, 0::2] + grid[1::2, 0::2] + grid[0::2, 1::2]
                   + grid[1::2, 1::2]) / 4
        torch.testing.assert_close(coarse[0, 1:], by_hand.reshape(8, -1))
        torch.testing.assert_close(coarse[0, 0], full[0, 0])  # the class token stays


def test_fast_schedule_carries_the_coarse_weights_into_the_full_size_steps(
        tiny_model, monkeypatch):
    image = smooth_image(2, height=84, width=112)
    sparse = np.zeros(image.shape[:2], np.float32)
    sparse[2::3, 1::3] = np.linspace(3.0, 12.0, sparse[2::3, 1::3].size).reshape(
        sparse[2::3, 1::3].shape)
    completer = DepthCompleter(tiny_model, TTOConfig(device='cpu', min_depth=0.01,
                                                     schedule='fast', iterations=12,
                                                     convergence_tol=0))
    stages = []
    run_stage = completer._run_stage

    def recording(stage, *args):
        entry = completer.adaptation.capture()
        trace = run_stage(stage, *args)
        stages.append((stage, entry, completer.adaptation.capture(), len(trace.losses)))
        return trace

    monkeypatch.setattr(completer, '_run_stage', recording)
    result = completer.complete(image, sparse)
    (coarse, coarse_in, coarse_out, coarse_steps), (fine, fine_in, _, fine_steps) = stages
    full_grid = (84 // 14, 112 // 14)
    assert coarse.encoded.patch_grid == tuple(round(s * COARSE_SCALE) for s in full_grid)
    assert fine.encoded.patch_grid == full_grid and fine.full_size and not coarse.full_size
    assert (coarse_steps, fine_steps) == (12 - FINE_STEPS, FINE_STEPS)
    assert result.iterations == 12
    # The LoRA weights are size-independent: the full-size steps start where the coarse
    # ones ended, and those had moved away from the identity adapters.
    for before, after, handed_over in zip(coarse_in, coarse_out, fine_in):
        torch.testing.assert_close(handed_over, after, rtol=0, atol=0)
    assert any(not torch.equal(b, a) for b, a in zip(coarse_in, coarse_out))


def test_fast_schedule_is_rejected_where_it_cannot_run():
    with pytest.raises(ConfigError) as error:
        TTOConfig(schedule='fast', scope=Scope.PROMPT)
    assert error.value.field == 'schedule' and 're-encodes' in str(error.value)
    with pytest.raises(ConfigError) as error:
        TTOConfig(schedule='slow')
    assert error.value.field == 'schedule'


def test_warm_stage_plans():
    config = TTOConfig(iterations=40, warm_iterations=10)
    full = (torch.zeros(1, 3, 28, 28), None)
    first, rest = plan_stages(config, True, full, None, 0.2)
    # The warm steps, then what the verdict lets run: up to the cold budget.
    assert (first.max_steps, first.catch_up) == (10, True)
    assert (rest.max_steps, rest.catch_up) == (30, False)
    assert first.end == rest.end == EndRule(PLATEAU_TOL, config.patience)
    [unknown] = plan_stages(config, True, full, None, None)  # no previous share to hold against
    assert unknown.max_steps == 40 and not unknown.catch_up
    [paper] = plan_stages(TTOConfig(schedule='paper'), True, full, None, 0.2)
    assert paper.max_steps == 10 and paper.end == EndRule(0.0, config.patience)


@pytest.fixture(scope='module')
def room_then_street():
    size = {'width': 84, 'height': 56}
    indoor = synthetic_frames(world.SequenceConfig('indoor', 2, seed=7, **size))
    street = synthetic_frames(world.SequenceConfig('outdoor', 1, seed=3, **size))
    return list(indoor) + list(street)


def test_a_warm_frame_after_a_cut_runs_as_a_cold_one(room_then_street):
    # The demo prior, two frames of a room, then a street of the same size.
    model = load_depth_model('demo', 'cpu')
    config = TTOConfig(iterations=12, warm_iterations=4, warm_start=True, min_points=8,
                       device='cpu', convergence_tol=0)
    warm = DepthCompleter(model, config)
    results = [warm.complete(f.rgb, f.sparse_depth) for f in room_then_street]
    assert [r.warm_started for r in results] == [False, True, False]
    assert [r.scene_cut for r in results] == [False, False, True]
    street = room_then_street[-1]
    cold = DepthCompleter(load_depth_model('demo', 'cpu'),
                          TTOConfig(**{**config.to_dict(), 'warm_start': False}))
    alone = cold.complete(street.rgb, street.sparse_depth)
    # The cold budget, fresh adapters and a fresh Adam: the very steps of a cold start.
    assert results[-1].iterations == alone.iterations == 12
    np.testing.assert_allclose(results[-1].losses, alone.losses, rtol=1e-6)
    np.testing.assert_allclose(results[-1].depth, alone.depth, rtol=1e-6)


def test_carried_weights_that_start_worse_than_none_are_dropped(tiny_model):
    # Warm state from one image, then a very different one: the start is compared directly.
    image, other = smooth_image(3), smooth_image(11)[::-1].copy()
    sparse = np.zeros(image.shape[:2], np.float32)
    sparse[::3, ::3] = 4.0
    sparse[::6, ::3] = 9.0
    completer = DepthCompleter(tiny_model, TTOConfig(device='cpu', min_depth=0.01,
                                                     warm_start=True, iterations=20,
                                                     convergence_tol=0))
    completer.complete(image, sparse)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():  # make the carried adapters fit nothing
        for parameter in completer.adaptation.parameters:
            parameter.add_(3 * torch.randn(parameter.shape, generator=generator))
    result = completer.complete(other, np.flipud(sparse).copy())
    assert result.scene_cut and not result.warm_started
    assert result.iterations == 20  # the cold budget


def test_a_warm_frame_ends_goes_on_or_restarts_cold_after_its_warm_steps(room_then_street,
                                                                         monkeypatch):
    # Two frames of a room; the second frame's verdict is steered by the previous share, with
    # the restart rule's floor off (this room's shares are below it).
    monkeypatch.setattr(schedule_module, 'RESTART_RULE',
                        replace(schedule_module.RESTART_RULE, floor=0.0))
    config = TTOConfig(iterations=12, warm_iterations=4, warm_start=True, min_points=8,
                       device='cpu', convergence_tol=0)
    first, second = room_then_street[:2]
    completer = DepthCompleter(load_depth_model('demo', 'cpu'), config)
    completer.complete(first.rgb, first.sparse_depth)

    def second_frame(previous_share: float) -> tuple[DepthCompleter, object]:
        warm = copy.deepcopy(completer)
        warm._previous_share = previous_share
        return warm, warm.complete(second.rgb, second.sparse_depth)

    probe, caught_up = second_frame(1.0)  # any fit is as good as a constant prediction's
    assert caught_up.iterations == 4 and caught_up.warm_started
    share = probe._previous_share  # what its warm steps reached (its best weights' loss)
    _, behind = second_frame(share / 2)
    assert behind.iterations == 12 and behind.warm_started and not behind.scene_cut
    np.testing.assert_allclose(behind.losses[:4], caught_up.losses, rtol=1e-6)
    _, far_behind = second_frame(share / 10)
    assert far_behind.scene_cut and not far_behind.warm_started
    assert far_behind.iterations == 4 + 12  # the warm steps, then the cold budget
    cold = DepthCompleter(load_depth_model('demo', 'cpu'),
                          TTOConfig(**{**config.to_dict(), 'warm_start': False}))
    alone = cold.complete(second.rgb, second.sparse_depth)
    # After the restart: fresh adapters and a fresh Adam, the very steps of a cold start.
    np.testing.assert_allclose(far_behind.losses[4:], alone.losses, rtol=1e-5)
    np.testing.assert_allclose(far_behind.depth, alone.depth, rtol=1e-5, atol=1e-6)


def _kitti_frame(shared_data):
    from lrda_ros.datasets import KittiDepthCompletion

    folder = shared_data / 'kitti_dc'
    if not folder.is_dir():
        pytest.skip(f'{folder} is absent')
    return next(iter(KittiDepthCompletion(folder, outlier_filter=None)))


@pytest.fixture(scope='module')
def demo_prior():
    return load_depth_model('demo', 'cpu')


@pytest.mark.parametrize('learning_rate, steps', [(1.0, 4), (0.2, 6)])
def test_paper_schedule_runs_every_step_of_a_diverging_frame_and_returns_the_last(
        shared_data, demo_prior, learning_rate, steps):
    # A real KITTI DC frame, the demo prior at 126 px: 1.0 drives the activations past
    # float32's range after 2 steps; 0.2 collapses the prediction (the head's last ReLU off
    # at the LiDAR pixels) at step 3, where the divergence and collapse rules would act.
    frame = _kitti_frame(shared_data)

    def completer(schedule: str, iterations: int = steps) -> DepthCompleter:
        return DepthCompleter(copy.deepcopy(demo_prior), TTOConfig(
            device='cpu', schedule=schedule, iterations=iterations,
            learning_rate=learning_rate, processing_size=126))

    paper = completer('paper')
    computed = counted_steps(paper)
    if learning_rate == 1.0:
        with pytest.raises(NonFiniteDepthError, match=f"last iterate of schedule 'paper' "
                                                      f'[(]{steps} steps'):
            paper.complete(frame.rgb, frame.sparse_depth)
        assert computed[0] == steps
        return
    result = paper.complete(frame.rgb, frame.sparse_depth)
    assert computed[0] == steps and result.iterations == steps
    assert result.backtracks == 0 and result.status.value == 'optimized'
    # The last iterate: the loss one more step would start from (a run of steps + 1 goes
    # through the same iterates), not the best one seen.
    longer = completer('paper', steps + 1).complete(frame.rgb, frame.sparse_depth)
    assert longer.losses[:steps] == result.losses
    # The dense decode against the steps' sparse head: float32 rounding of reordered sums.
    assert result.final_loss == pytest.approx(longer.losses[steps], rel=2e-5)
    assert result.final_loss > 2 * min(result.losses)
    # The adaptive schedule's rules do act on this frame, and it returns its best iterate.
    adaptive = completer('adaptive').complete(frame.rgb, frame.sparse_depth)
    assert adaptive.backtracks > 0
    assert adaptive.final_loss == pytest.approx(min(adaptive.losses), rel=2e-5)
