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
Test-time optimization on Depth Anything 3, with the Depth Anything V2 path's options.

On small DA3 networks (random weights, PyTorch's default init): the any-view DualDPT (with its UV
embedding and confidence) and the metric DPT (with its focal term and sky head).
"""

from __future__ import annotations

from dataclasses import replace

from conftest import smooth_image
from lrda_ros.engine import DepthCompleter, TTOConfig
from lrda_ros.engine import tto
from lrda_ros.engine.compiled import padded_samples
from lrda_ros.engine.da3 import DA3Model, DA3Network, preset
from lrda_ros.engine.steps import EndRule, new_adam, StepRules
from lrda_ros.engine.whole_step import AdamState, whole_step
from lrda_ros.errors import ConfigError
import numpy as np
import pytest
import torch

#: DA3-Small's layout with 6 blocks (alternating attention, RoPE and QK-norm from block 2).
ANY_VIEW = replace(preset('da3-small'), depth=6, out_layers=(1, 3, 4, 5), alt_start=2,
                   qknorm_start=2, rope_start=2)
#: DA3METRIC's DPT head on a 4-block ViT-S, narrower.
METRIC = replace(preset('da3metric-large'), vit='vits', depth=4, out_layers=(0, 1, 2, 3),
                 features=32, out_channels=(16, 32, 64, 64))
SIZE = (42, 56)
K = np.array([[50.0, 0.0, 28.0], [0.0, 50.0, 21.0], [0.0, 0.0, 1.0]])


def _model(config) -> DA3Model:
    torch.manual_seed(0)
    return DA3Model(DA3Network(config))


def _sparse(count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    sparse = np.zeros(SIZE, np.float32)
    band = sparse[10:]
    band.flat[rng.choice(band.size, count, replace=False)] = rng.uniform(1.0, 20.0, count)
    return sparse


def _completer(config, **options) -> DepthCompleter:
    options = {'device': 'cpu', 'min_depth': 0.5, 'iterations': 3, 'dtype': 'float32',
               **options}
    return DepthCompleter(_model(config), TTOConfig(**options))


@pytest.mark.parametrize('config', [ANY_VIEW, METRIC], ids=['dualdpt', 'metric'])
def test_sparse_head_and_strips_give_the_dense_decode_s_loss(config):
    image, sparse = smooth_image(1, *SIZE), _sparse(150, 0)
    first = {}
    for name, options in (('dense', {'sparse_head': False}), ('sparse', {'sparse_head': True}),
                          ('strips', {'sparse_head': True, 'tail_strips': 2}),
                          ('dense strips', {'sparse_head': False, 'tail_strips': 2})):
        result = _completer(config, **options).complete(image, sparse, intrinsics=K)
        first[name] = result.losses[0]
        assert result.status is tto.CompletionStatus.OPTIMIZED
    # The same weights before the first update: the same loss up to float32 rounding.
    for name, loss in first.items():
        assert loss == pytest.approx(first['dense'], rel=1e-5), name


@pytest.mark.parametrize('config', [ANY_VIEW, METRIC], ids=['dualdpt', 'metric'])
def test_only_the_depth_branch_adapts_and_bfloat16_runs(config):
    engine = _completer(config, dtype='bfloat16', warm_start=True, scene_cut_factor=0.0)
    network = engine.model.network
    trained = [name for name, p in network.named_parameters() if p.requires_grad]
    assert trained and all('lora_' in name and name.startswith(('neck.', 'head.'))
                           for name in trained)
    image = smooth_image(2, *SIZE)
    cold = engine.complete(image, _sparse(150, 1), intrinsics=K)
    warm = engine.complete(image, _sparse(150, 2), intrinsics=K)
    assert np.isfinite(cold.losses).all() and not cold.warm_started and warm.warm_started
    assert np.isfinite(warm.depth).all() and warm.depth.shape == SIZE


def test_confidence_comes_from_the_dualdpt_head():
    result = _completer(ANY_VIEW).complete(smooth_image(3, *SIZE), _sparse(150, 3))
    assert result.confidence.shape == SIZE
    assert ((result.confidence > 0) & (result.confidence <= 1)).all()


def test_metric_model_takes_metres_from_k_and_needs_it():
    engine = _completer(METRIC, iterations=0)
    image = smooth_image(4, *SIZE)
    prediction = engine.model.predict(image, intrinsics=K)
    doubled = engine.model.predict(image, intrinsics=K * [[2], [2], [1]])
    assert doubled == pytest.approx(2 * prediction, rel=1e-5)  # metres scale with the focal
    with pytest.raises(ValueError, match='camera matrix K'):
        engine.complete(image, _sparse(150, 4))


@pytest.mark.parametrize('dtype', ['float32', 'bfloat16'])
def test_a_whole_da3_step_with_the_sparse_head_is_one_graph(dtype):
    engine = _completer(ANY_VIEW, compile=True, sparse_head=True, dtype=dtype)
    assert engine._uses_sparse_head and not engine.notices
    image = smooth_image(5, *SIZE)
    pixel_values = engine.model.preprocess(image, None)
    with engine._autocast():
        encoded = engine.model.encode(pixel_values, image.shape[:2])
    samples = tto.SparseSamples.from_map(_sparse(120, 5), 0.5, 250.0, engine.model.device)
    rules = StepRules(engine.adaptation.flat_parameters, samples.depth, 4, engine.config,
                      EndRule(plateau_tol=0.01))
    samples, target = padded_samples(samples, samples.depth)
    plan = engine._sparse_plan(pixel_values, encoded, samples)
    plan.prepare(engine.model, encoded)
    parameters = engine.adaptation.parameters
    engine._optimizer = new_adam(parameters, 1e-2)
    engine._step(pixel_values, encoded, samples, target, plan, rules, 0)
    step = torch._dynamo.explain(whole_step)(engine._loss, (pixel_values, encoded, samples,
                                                            target, plan),
                                             parameters, rules,
                                             AdamState.of(engine._optimizer, parameters),
                                             torch.tensor(1))
    assert (step.graph_count, step.graph_break_count) == (1, 0), step.break_reasons


def _after_a_first_step(engine: DepthCompleter, seed: int) -> tuple[tuple, StepRules]:
    """Return a frame's loss inputs and its step rules after its first (eager) step."""
    image = smooth_image(seed, *SIZE)
    pixel_values = engine.model.preprocess(image, None)
    with engine._autocast():
        encoded = engine.model.encode(pixel_values, image.shape[:2])
    samples = tto.SparseSamples.from_map(_sparse(120, seed), 0.5, 250.0, engine.model.device)
    rules = StepRules(engine.adaptation.flat_parameters, samples.depth, 4, engine.config,
                      EndRule(plateau_tol=0.01))
    samples, target = padded_samples(samples, samples.depth)
    plan = engine._sparse_plan(pixel_values, encoded, samples)
    plan.prepare(engine.model, encoded)
    engine._optimizer = new_adam(engine.adaptation.parameters, engine.config.learning_rate)
    engine._step(pixel_values, encoded, samples, target, plan, rules, 0)
    return (pixel_values, encoded, samples, target, plan), rules


@pytest.mark.slow
def test_a_compiled_da3_step_is_the_eager_step():
    """
    Inductor's whole step against the same step run eagerly, from one state.

    Adam moves each weight by about the learning rate whatever its gradient's size, so where
    its first moment is near zero (a gradient of rounding size, or one that cancels the
    previous step's) the step's sign is rounding too, and a trajectory of several steps
    drifts from there: one step is compared. All but a few weights agree to 1e-4 of a step
    (3 of 198,416 under AVX512 kernels on two threads, 36 under AVX2 on one: at most 0.1 % is
    allowed); the graph that wrote the best weights' channels-last views missed whole tensors'
    updates, nearly every weight.
    """
    torch._dynamo.reset()
    torch._dynamo.config.trace_autograd_ops = True
    engine = _completer(ANY_VIEW, sparse_head=True)
    inputs, rules = _after_a_first_step(engine, 6)
    parameters = engine.adaptation.parameters
    adam = AdamState.of(engine._optimizer, parameters)
    state = [tensor.clone() for tensor in (*adam.tensors(), *rules.tensors())]
    results = {}
    for name, step in (('eager', whole_step),
                       ('inductor', torch.compile(whole_step, fullgraph=True, dynamic=False))):
        torch._foreach_copy_([*adam.tensors(), *rules.tensors()], state)
        results[name] = step(engine._loss, inputs, parameters, rules, adam, torch.tensor(1))
    (eager_loss, eager), (compiled_loss, compiled) = results['eager'], results['inductor']
    assert float(compiled_loss) == pytest.approx(float(eager_loss), rel=1e-5)
    step_size = engine.config.learning_rate
    differences = torch.cat([(mine - theirs).abs().flatten()
                             for mine, theirs in zip(compiled, eager)])
    assert int((differences > 1e-4 * step_size).sum()) <= 1e-3 * differences.numel()
    assert float(differences.max()) <= 2 * step_size


def test_an_encoder_backend_that_cannot_export_da3_is_refused_at_start():
    with pytest.raises(ConfigError) as error:
        _completer(ANY_VIEW, encoder_backend='onnxruntime')
    assert error.value.field == 'encoder_backend' and 'DA3Model' in str(error.value)


def test_sky_is_left_out_of_the_loss_and_returned():
    engine = _completer(METRIC, iterations=2)
    image, sparse = smooth_image(7, *SIZE), _sparse(150, 7)

    def top_rows_are_sky(encoded):  # the sky head's output where it says 'sky' above row 20
        size = (encoded.patch_grid[0] * 14, encoded.patch_grid[1] * 14)
        probability = torch.zeros(1, *size)
        probability[:, :size[0] * 20 // SIZE[0]] = 1.0
        return probability

    engine.model.sky = top_rows_are_sky
    result = engine.complete(image, sparse, intrinsics=K)
    assert result.sky[:19].all() and not result.sky[21:].any()
    # The same frame without the LiDAR on the sky: the same losses.
    below = sparse.copy()
    below[result.sky] = 0
    plain = _completer(METRIC, iterations=2)
    plain.model.sky = lambda encoded: torch.zeros_like(top_rows_are_sky(encoded))
    expected = plain.complete(image, below, intrinsics=K)
    assert result.num_points == expected.num_points < int((sparse > 0).sum())
    assert result.losses == pytest.approx(expected.losses, rel=1e-6)
