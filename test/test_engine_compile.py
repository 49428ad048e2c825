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

The graphs are checked by Dynamo's own ``explain``; compiled steps (Inductor, as the option
runs them) are compared with eager ones frame after frame on a tiny decoder.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from functools import partial

from conftest import smooth_image, tiny_network
from lrda_ros.engine import DepthCompleter, DepthModel, TTOConfig
from lrda_ros.engine import tto
from lrda_ros.engine.compiled import bucket_size, compiled, padded_samples
from lrda_ros.engine.steps import EndRule, new_adam, StepRules
from lrda_ros.engine.warm_up import WarmUp
from lrda_ros.engine.whole_step import AdamState, CompiledSteps, whole_step
from lrda_ros.errors import ConfigError
import numpy as np
import pytest
import torch
from torch._dynamo.backends.common import aot_autograd
from torch._inductor.cudagraph_utils import check_for_mutation_ignore_cuda_graph_managed_tensor
from torch.utils._ordered_set import OrderedSet

BASE_NETWORK = tiny_network(seed=0)
#: For the tests Inductor compiles: two levels, transposed convolutions included.
COMPACT_NETWORK = tiny_network(seed=0, levels=2)


def sparse_of(shape, count: int, seed: int, first_row: int = 0) -> np.ndarray:
    """Return ``count`` LiDAR depths on rows from ``first_row`` down (KITTI: the lower part)."""
    rng = np.random.default_rng(seed)
    sparse = np.zeros(shape[:2], np.float32)
    band = sparse[first_row:]
    band.flat[rng.choice(band.size, count, replace=False)] = rng.uniform(1.0, 20.0, count)
    return sparse


def completer(network=BASE_NETWORK, **options) -> DepthCompleter:
    options = {'device': 'cpu', 'min_depth': 0.5, 'iterations': 4, 'sparse_head': False,
               'dtype': 'float32', **options}
    return DepthCompleter(DepthModel(copy.deepcopy(network)), TTOConfig(**options))


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


#: Compiled against eager, float32 losses of cold frames of 6 steps: the steps amplify
#: rounding differences (Adam moves each weight by about the learning rate whatever its
#: gradient's size), so trajectories are compared from a cold start each frame (chained warm
#: frames reached 1e-3 by their 17th step under AVX2 kernels on one thread).
TRAJECTORY_RTOL = 1e-4


@pytest.mark.slow
def test_compiled_whole_steps_follow_the_eager_ones_with_one_graph_per_size():
    # Inductor, as the option runs it, on the compact decoder (every layer kind of the DPT
    # decoder; the four-level one takes half as long again to compile on a 2-core CPU).
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    image = smooth_image(2, 42, 56)
    # A new point count and first LiDAR row every frame (a rig's top beams hit whatever
    # stands there): the graphs are reused, not specialized to the rows or the count.
    frames = [(image, sparse_of(image.shape, count, seed, first_row))
              for seed, (count, first_row) in enumerate(((150, 9), (170, 14), (130, 20)))]
    losses = {}
    for compile_steps in (False, True):
        engine = completer(COMPACT_NETWORK, compile=compile_steps, sparse_head=True,
                           iterations=6)
        results = [engine.complete(*frame) for frame in frames]
        losses[compile_steps] = [result.losses for result in results]
        assert all(result.iterations == 6 for result in results)
    for compiled_losses, eager_losses in zip(losses[True], losses[False]):
        assert compiled_losses == pytest.approx(eager_losses, rel=TRAJECTORY_RTOL)
    # The whole step and the decode, once for the size whatever the point count and the
    # step count.
    assert torch._dynamo.utils.counters['stats']['unique_graphs'] == 2
    engine.config = replace(engine.config, iterations=3)
    engine.complete(*frames[0])
    assert torch._dynamo.utils.counters['stats']['unique_graphs'] == 2


@pytest.mark.slow
def test_a_new_image_size_compiles_the_step_and_the_decode_once_more(monkeypatch):
    # Which graphs Dynamo makes (and when it makes new ones) is decided before the backend
    # sees them: counted here with its eager backend, the compiling being the test above's.
    monkeypatch.setattr(tto, 'CompiledSteps', partial(CompiledSteps, backend='eager'))
    monkeypatch.setattr(tto, 'compiled', partial(compiled, backend='eager'))
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    engine = completer(COMPACT_NETWORK, compile=True, sparse_head=True, iterations=6)
    image = smooth_image(2, 42, 56)
    for count, first_row in ((150, 9), (170, 14)):
        assert engine.complete(image, sparse_of(image.shape, count, 0, first_row)).iterations == 6
    assert torch._dynamo.utils.counters['stats']['unique_graphs'] == 2
    engine.complete(smooth_image(3, 56, 70), sparse_of((56, 70), 150, 0))
    assert torch._dynamo.utils.counters['stats']['unique_graphs'] == 4


def test_a_compiled_step_is_what_a_cuda_graph_replays():
    # Inductor records a CUDA graph for a step only if every input the step updates in place
    # is a static one (torch/_inductor/cudagraph_utils.py, the check called below as
    # torch/_inductor/output_code.py calls it); it reads the static inputs from AOTAutograd's
    # metadata (compile_fx.get_static_input_idxs), which AOTAutograd empties when it merges
    # inputs that share memory and are written into one synthetic base. Checked there, after
    # that merge, not on Dynamo's graph before it. A replay copies the other inputs in, and a
    # step that returned what the next one reads would chain recordings (its new weights
    # are copied into the parameters after it).
    records = []

    def inspect(graph, example_inputs):
        metadata = torch._guards.TracingContext.get().fw_metadata
        mutated = OrderedSet(index for index, info in enumerate(metadata.input_info)
                             if info.mutates_data)
        skip = check_for_mutation_ignore_cuda_graph_managed_tensor(
            graph, OrderedSet(), mutated, metadata.static_input_indices)
        records.append((mutated, metadata.static_input_indices, skip, metadata.output_info))
        return graph.forward

    engine = completer(COMPACT_NETWORK, compile=True, sparse_head=True, iterations=4,
                       warm_start=False)
    engine._whole_step = CompiledSteps(engine.model.device, backend=aot_autograd(
        fw_compiler=inspect, inference_compiler=inspect))
    image = smooth_image(2, 42, 56)
    for seed, (count, first_row) in enumerate(((150, 9), (170, 14))):
        engine.complete(image, sparse_of(image.shape, count, seed, first_row))
    ((mutated, static, skip, outputs),) = records  # both frames' steps
    assert skip is None
    # The weights, their best copies, Adam's state and the rules' records, each its own input.
    assert len(mutated) > 100 and mutated <= OrderedSet(static)
    # The loss and the new weights (written after the graph): no output is an input's alias.
    assert len(outputs) == 1 + len(engine.adaptation.parameters)
    assert all(output.base_idx is None for output in outputs)
    # The state keeps its addresses from frame to frame (no new recording): one set of rules
    # per run length, Adam's state zeroed in place for a cold frame.
    (rules,) = engine._whole_step._rules.values()

    def addresses() -> list[int]:
        state = (*rules.tensors(), *engine._whole_step._adam.tensors())
        return [tensor.data_ptr() for tensor in state]

    before = addresses()
    engine.complete(image, sparse_of(image.shape, 160, 2, 11))
    assert addresses() == before


def test_point_counts_pad_to_few_buckets_of_at_most_an_eighth_more():
    sizes = {count: bucket_size(count) for count in range(1, 70_000)}
    assert all(count <= size <= max(8, count * 9 / 8) for count, size in sizes.items())
    assert all(bucket_size(size) == size for size in sizes.values())
    # A KITTI frame's count at VGA (about 18,000) moves by a few hundred between frames.
    assert len({sizes[count] for count in range(17_000, 19_000)}) == 2
    assert len(set(sizes.values())) < 8 * 17  # 8 per doubling up to 2^17


@pytest.mark.parametrize('dtype', ['float32', 'bfloat16'])
def test_a_whole_step_with_the_sparse_head_is_one_graph(dtype):
    # Forward, gradient, step rules and Adam: a graph break fails here.
    engine = completer(compile=True, sparse_head=True, dtype=dtype)
    assert engine._uses_sparse_head and not engine.notices
    image = smooth_image(1, 42, 56)
    pixel_values = engine.model.preprocess(image, None)
    with engine._autocast():
        encoded = engine.model.encode(pixel_values, image.shape[:2])
    samples = tto.SparseSamples.from_map(sparse_of(image.shape, 120, 0), 0.5, 250.0,
                                         engine.model.device)
    rules = StepRules(engine.adaptation.flat_parameters, 1.0 / samples.depth, 4, engine.config,
                      EndRule(plateau_tol=0.01))
    samples, target = padded_samples(samples, 1.0 / samples.depth)  # as the steps run
    plan = engine._sparse_plan(pixel_values, encoded, samples)
    plan.prepare(engine.model, encoded)
    parameters = engine.adaptation.parameters
    engine._optimizer = new_adam(parameters, 1e-2)
    engine._step(pixel_values, encoded, samples, target, plan, rules, 0)  # the eager first
    inputs = (pixel_values, encoded, samples, target, plan)
    step = torch._dynamo.explain(whole_step)(engine._loss, inputs, parameters, rules,
                                             AdamState.of(engine._optimizer, parameters),
                                             torch.tensor(1))
    assert (step.graph_count, step.graph_break_count) == (1, 0), step.break_reasons


@pytest.mark.slow
def test_a_warm_up_compiles_the_bfloat16_step_before_the_first_frame_of_a_size():
    # The start-up probe runs eagerly (it compiled the decode for its tiny image before); the
    # warm-up compiles the whole step and the decode with Inductor, so the size's frames,
    # whatever their point count, compile nothing.
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    engine = completer(COMPACT_NETWORK, compile=True, sparse_head=True, dtype='bfloat16',
                       iterations=3)
    compiled_graphs = torch._dynamo.utils.counters['stats']
    assert compiled_graphs['unique_graphs'] == 0
    warm_up = WarmUp(engine)
    assert warm_up.needed(42, 56) and not WarmUp(completer()).needed(42, 56)
    lines = []
    assert warm_up.run(42, 56, log=lines.append) > 0 and not warm_up.needed(42, 56)
    assert lines == ['compile: compiling the steps and the decode for 56x42 images (once per '
                     'size) ...']
    assert compiled_graphs['unique_graphs'] == 2  # the whole step and the decode
    image = smooth_image(4, 42, 56)
    results = [engine.complete(image, sparse_of(image.shape, count, count, 12))
               for count in (150, 175)]
    assert compiled_graphs['unique_graphs'] == 2
    assert results[0].iterations > 1  # compiled steps ran (a frame's first is eager)
    assert all(np.isfinite(result.depth).all() for result in results)


@pytest.mark.parametrize('options, reason', [
    ({'tail_strips': 2}, 'tail_strips: 1'),
    ({'scope': 'prompt'}, 're-encodes'),
])
def test_combinations_that_do_not_compile_are_rejected(options, reason):
    with pytest.raises(ConfigError) as error:
        completer(**{'compile': True, **options})
    assert error.value.field == 'compile' and reason in str(error.value)
