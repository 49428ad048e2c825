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
``compile: true``: one graph per function (no breaks), the eager result, start-up rejections.

The graphs are checked by Dynamo's own ``explain``; the step and the decode compiled by
Inductor (as the option runs them) are compared with eager ones from the same adapter state,
frame after frame, on a tiny decoder. The timings of a real decoder are in
doc/performance.md.
"""

from __future__ import annotations

import copy
import functools

from conftest import smooth_image, tiny_network
from lrda_ros.engine import depth_to_target, DepthCompleter, DepthModel, TTOConfig
from lrda_ros.engine import tto
from lrda_ros.engine.compiled import compiled, mark_points_dynamic
from lrda_ros.errors import ConfigError
import numpy as np
import pytest
import torch
from torch._inductor.compile_fx import compile_fx

#: Compiled against eager from one state, float32. A reordered sum of n float32 terms differs
#: by up to about n·u of their absolute sum (u = 2**-24; Higham, Accuracy and Stability of
#: Numerical Algorithms, 2nd ed., section 4.2); the decoder's widest sums are its convolutions'
#: 3·3·32 = 288 terms, 2e-5, and a decode chains about a dozen of them: 5e-4 of the decoded
#: range (and of the loss). The gradient retraces the forward pass backwards: twice that.
#: Measured on AVX512, AVX2 and default kernels with 1 and 2 threads: at most 6e-7 (loss),
#: 1e-5 (gradient), 3e-6 (decode).
FORWARD_RTOL = 5e-4
GRADIENT_RTOL = 1e-3

BASE_NETWORK = tiny_network(seed=0)


def sparse_of(shape, count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    sparse = np.zeros(shape[:2], np.float32)
    sparse.flat[rng.choice(sparse.size, count, replace=False)] = rng.uniform(1.0, 20.0, count)
    return sparse


def completer(**options) -> DepthCompleter:
    options = {'device': 'cpu', 'min_depth': 0.5, 'iterations': 4, 'sparse_head': False,
               'dtype': 'float32', **options}
    return DepthCompleter(DepthModel(copy.deepcopy(BASE_NETWORK)), TTOConfig(**options))


def test_step_and_decode_are_one_graph_each():
    engine = completer()
    image = smooth_image(1, 42, 56)
    pixel_values = engine.model.preprocess(image, None)
    encoded = engine.model.encode(pixel_values, image.shape[:2])
    samples = tto.SparseSamples.from_map(sparse_of(image.shape, 120, 0), 0.5, 250.0,
                                         engine.model.device)
    target = 1.0 / samples.depth
    step = torch._dynamo.explain(engine._loss)(pixel_values, encoded, samples, target, None)
    assert (step.graph_count, step.graph_break_count) == (1, 0), step.break_reasons
    decode = torch._dynamo.explain(engine.model.decode)(encoded)
    assert (decode.graph_count, decode.graph_break_count) == (1, 0), decode.break_reasons


def step_inputs(engine: DepthCompleter, image: np.ndarray, sparse: np.ndarray) -> tuple:
    """Return a step's inputs on one frame (pixels, features, samples, target), as complete."""
    config = engine.config
    pixel_values = engine.model.preprocess(image, None)
    encoded = engine.model.encode(pixel_values, image.shape[:2])
    samples = tto.SparseSamples.from_map(sparse, config.min_depth, config.max_depth,
                                         engine.model.device)
    target = depth_to_target(samples.depth, engine.model.prediction_space)
    mark_points_dynamic(samples.rows, samples.cols, target)  # as the steps do
    return pixel_values, encoded, samples, target


def loss_and_gradient(loss_function, inputs: tuple, parameters: list, plan=None
                      ) -> tuple[float, torch.Tensor]:
    """Return a step's loss and its gradient over the adapters (flattened)."""
    loss = loss_function(*inputs, plan)
    # Layers the loss does not reach (the head's last adapters on a cold frame) get zeros.
    gradients = torch.autograd.grad(loss, parameters, materialize_grads=True)
    return float(loss), torch.cat([gradient.flatten() for gradient in gradients])


@pytest.mark.parametrize('sparse_head', [False, True])
def test_compiled_step_and_decode_compute_the_eager_functions(monkeypatch, sparse_head):
    # Compared from one state, the adapters each frame leaves: a step's loss and gradient and
    # the dense decode, compiled against eager. (Trajectories are not compared: Adam moves a
    # weight by about the learning rate whatever the size of its gradient, so float32
    # reorderings grow step by step, differently on every CPU.)
    torch._dynamo.reset()
    compiles = []

    def counting_backend(graph, inputs):
        compiles.append(len(inputs))
        return compile_fx(graph, inputs)  # Inductor, as ``compile: true`` runs

    monkeypatch.setattr(tto, 'compiled', functools.partial(compiled, backend=counting_backend))
    engine = completer(warm_start=True, compile=True, sparse_head=sparse_head)
    parameters = engine.adaptation.parameters
    image = smooth_image(2, 42, 56)
    for seed, count in enumerate((150, 170, 130)):  # the point count changes every frame
        sparse = sparse_of(image.shape, count, seed)
        engine.complete(image, sparse)  # moves the adapters (warm start: state carried over)
        inputs = step_inputs(engine, image, sparse)
        plan = engine._sparse_plan(*inputs[:3])
        if plan is not None:
            plan.prepare(engine.model, inputs[1])
        engine._loss(*inputs, plan)  # as a frame's eager first step: its caches filled
        if plan is not None:
            mark_points_dynamic(*plan.frame_tensors())
        loss, gradient = loss_and_gradient(engine._step_loss, inputs, parameters, plan)
        expected_loss, expected = loss_and_gradient(engine._loss, inputs, parameters, plan)
        engine._frame_plans.clear()
        with torch.no_grad():
            features = engine.adaptation.features(engine.model, *inputs[:2])
            decoded, expected_decoded = engine._decode(features), engine.model.decode(features)
        assert loss == pytest.approx(expected_loss, rel=FORWARD_RTOL)
        assert float((gradient - expected).norm()) <= GRADIENT_RTOL * float(expected.norm())
        spread = float(expected_decoded.max() - expected_decoded.min())
        torch.testing.assert_close(decoded, expected_decoded, rtol=0,
                                   atol=FORWARD_RTOL * spread)
    # Once for this resolution, whatever the point count: the decode and the step (a frame's
    # first step runs eagerly and fills the cache of frozen outputs the compiled steps read).
    assert len(compiles) == 2
    engine.complete(smooth_image(3, 56, 70), sparse_of((56, 70), 150, 0))
    assert len(compiles) == 4  # a new resolution compiles both once more


@pytest.mark.parametrize('dtype', ['float32', 'bfloat16'])
def test_the_sparse_head_step_is_one_graph(dtype):
    engine = completer(compile=True, sparse_head=True, dtype=dtype)
    assert engine._uses_sparse_head and not engine.notices
    image = smooth_image(1, 42, 56)
    pixel_values = engine.model.preprocess(image, None)
    with engine._autocast():
        encoded = engine.model.encode(pixel_values, image.shape[:2])
    samples = tto.SparseSamples.from_map(sparse_of(image.shape, 120, 0), 0.5, 250.0,
                                         engine.model.device)
    target = 1.0 / samples.depth
    plan = engine._sparse_plan(pixel_values, encoded, samples)
    plan.prepare(engine.model, encoded)
    engine._loss(pixel_values, encoded, samples, target, plan)  # a frame's eager first step
    step = torch._dynamo.explain(engine._loss)(pixel_values, encoded, samples, target, plan)
    assert (step.graph_count, step.graph_break_count) == (1, 0), step.break_reasons


@pytest.mark.parametrize('options, reason', [
    ({'tail_strips': 2}, 'tail_strips: 1'),
    ({'scope': 'prompt'}, 're-encodes'),
])
def test_combinations_that_do_not_compile_are_rejected(options, reason):
    with pytest.raises(ConfigError) as error:
        completer(**{'compile': True, **options})
    assert error.value.field == 'compile' and reason in str(error.value)
