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

The graphs are checked by Dynamo's own ``explain``; frames compiled by Inductor (as the option
runs them) are compared with eager ones on a tiny decoder. The timings of a real decoder are in
doc/performance.md.
"""

from __future__ import annotations

import copy
import functools

from conftest import smooth_image, tiny_network
from lrda_ros.engine import DepthCompleter, DepthModel, TTOConfig
from lrda_ros.engine import tto
from lrda_ros.engine.compiled import compiled
from lrda_ros.errors import ConfigError
import numpy as np
import pytest
import torch
from torch._inductor.compile_fx import compile_fx

#: Depth after 4 steps, traced graphs against eager (float32: reordered sums only).
#: Of the frame's inverse-depth range. Compiled kernels sum in another order, and Adam scales
#: each gradient by its own magnitude, so a weight whose gradient is all rounding still moves
#: by up to the learning rate: after a few steps the maps differ by a few tenths of a percent.
INVERSE_DEPTH_SHARE = 5e-3
DEPTH_RTOL = 1e-4

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


def test_compiled_frames_match_eager_and_compile_once_per_resolution(monkeypatch):
    torch._dynamo.reset()
    compiles = []

    def counting_backend(graph, inputs):
        compiles.append(len(inputs))
        return compile_fx(graph, inputs)  # Inductor, as ``compile: true`` runs

    monkeypatch.setattr(tto, 'compiled', functools.partial(compiled, backend=counting_backend))
    eager, traced = completer(warm_start=True), completer(warm_start=True, compile=True)
    image = smooth_image(2, 42, 56)
    for seed, count in enumerate((150, 170, 130)):  # the point count changes every frame
        sparse = sparse_of(image.shape, count, seed)
        expected, result = eager.complete(image, sparse), traced.complete(image, sparse)
        np.testing.assert_allclose(result.losses, expected.losses, rtol=DEPTH_RTOL)
        # Compared as the aligned prediction (inverse depth): this toy's far depths are
        # 1 / (a·d + b) with a·d close to -b, which magnifies float rounding a hundredfold.
        inverse, expected_inverse = 1.0 / result.depth, 1.0 / expected.depth
        spread = float(np.ptp(expected_inverse))
        np.testing.assert_allclose(inverse, expected_inverse, rtol=0,
                                   atol=INVERSE_DEPTH_SHARE * spread)
    assert len(compiles) == 2  # the step and the decode, once for this resolution
    traced.complete(smooth_image(3, 56, 70), sparse_of((56, 70), 150, 0))
    assert len(compiles) == 4  # a new resolution compiles both once more


def test_compile_steps_decode_the_full_map_with_a_notice():
    engine = completer(compile=True, sparse_head=True)
    assert not engine._uses_sparse_head
    assert any('compiled steps decode the full depth map' in n for n in engine.notices)


@pytest.mark.parametrize('options, reason', [
    ({'tail_strips': 2}, 'tail_strips: 1'),
    ({'scope': 'prompt'}, 're-encodes'),
])
def test_combinations_that_do_not_compile_are_rejected(options, reason):
    with pytest.raises(ConfigError) as error:
        completer(**{'compile': True, **options})
    assert error.value.field == 'compile' and reason in str(error.value)
