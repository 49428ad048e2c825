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

"""Warm start over a window of frames (TTOConfig.temporal_window, engine/window.py)."""

from __future__ import annotations

import copy

from conftest import smooth_image, tiny_network
from lrda_ros.engine import DepthCompleter, DepthModel, TTOConfig
from lrda_ros.errors import ConfigError
import numpy as np
import pytest


def config(**overrides) -> TTOConfig:
    return TTOConfig(**{'min_depth': 0.01, 'device': 'cpu', 'iterations': 6,
                        'warm_iterations': 4, 'warm_start': True, 'scene_cut_factor': 0.0,
                        **overrides})


def frame(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Return an image and a metric sparse map that follows its brightness."""
    rgb = smooth_image(seed, 42, 56)
    rng = np.random.default_rng(seed)
    depth = 2.0 + 8.0 * rgb.mean(axis=2).astype(np.float32) / 255.0
    sparse = np.zeros(rgb.shape[:2], np.float32)
    index = rng.choice(sparse.size, 150, replace=False)
    sparse.flat[index] = depth.flat[index]
    return rgb, sparse


def test_options_are_checked():
    with pytest.raises(ConfigError) as error:
        TTOConfig(temporal_window=0, warm_start=True)
    assert error.value.field == 'temporal_window'
    with pytest.raises(ConfigError) as error:  # nothing to carry the window across
        TTOConfig(temporal_window=3, warm_start=False)
    assert error.value.field == 'temporal_window' and 'warm_start' in str(error.value)


def test_window_keeps_the_earlier_frames_and_forgets_them_with_the_warm_start():
    completer = DepthCompleter(DepthModel(tiny_network(seed=0)), config(temporal_window=3))
    counts = []
    for seed in range(4):
        completer.complete(*frame(seed))
        counts.append(len(completer._window))
    assert counts == [1, 2, 2, 2]  # at most temporal_window - 1 earlier frames
    completer.reset()
    assert len(completer._window) == 0
    result = completer.complete(*frame(5))
    assert not result.warm_started and len(completer._window) == 1


def test_the_steps_keep_fitting_the_earlier_frame():
    """With a window of 2, the second frame's weights still fit the first frame's LiDAR."""
    network = tiny_network(seed=0)
    first, second = frame(1), frame(2)
    earlier_loss = {}
    for window in (1, 2):
        completer = DepthCompleter(DepthModel(copy.deepcopy(network)),
                                   config(temporal_window=window, warm_iterations=6))
        completer.complete(*first)
        result = completer.complete(*second)
        assert result.warm_started and result.iterations == 6
        # The first frame again with no step: the loss its LiDAR leaves under these weights.
        completer.config.warm_iterations = 0
        earlier_loss[window] = completer.complete(*first).final_loss
    assert earlier_loss[2] < earlier_loss[1]


def test_interleaved_streams_keep_a_window_each():
    network = tiny_network(seed=0)
    settings = config(temporal_window=2, iterations=2, warm_iterations=2)
    shared = DepthCompleter(DepthModel(copy.deepcopy(network)), settings)
    alone = {name: DepthCompleter(DepthModel(copy.deepcopy(network)), settings)
             for name in ('front', 'side')}
    seeds = {'front': (1, 2), 'side': (4, 5)}
    for index in range(2):  # the second frames fit the first ones, parked in between
        for name in ('front', 'side'):
            rgb, sparse = frame(seeds[name][index])
            together = shared.complete(rgb, sparse, stream=name)
            separate = alone[name].complete(rgb, sparse)
            np.testing.assert_allclose(together.depth, separate.depth, rtol=1e-5, atol=1e-5)
