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

"""Several cameras on one completer: a warm start each, and frames encoded ahead in batches."""

from __future__ import annotations

import copy

from conftest import smooth_image, tiny_network
from lrda_ros.engine import DepthCompleter, DepthModel, Scope, TTOConfig
import numpy as np
import pytest
import torch


def config(**overrides) -> TTOConfig:
    # The paper's fixed steps: after 4 steps on this tiny network the adaptive schedule may
    # rightly start a frame cold (its carried weights fit it worse than none), and these tests
    # follow each stream's warm state step by step.
    return TTOConfig(**{'min_depth': 0.01, 'device': 'cpu', 'iterations': 4,
                        'warm_iterations': 2, 'warm_start': True, 'schedule': 'paper',
                        **overrides})


def sparse_of(image: np.ndarray, count: int, seed: int) -> np.ndarray:
    """Return a metric sparse map that follows the image's brightness (something to fit)."""
    rng = np.random.default_rng(seed)
    depth = 2.0 + 8.0 * image.mean(axis=2).astype(np.float32) / 255.0
    sparse = np.zeros(image.shape[:2], np.float32)
    index = rng.choice(sparse.size, count, replace=False)
    sparse.flat[index] = depth.flat[index]
    return sparse


@pytest.fixture(scope='module')
def frames():
    """Two frames of each of two cameras with different resolutions."""
    front = [smooth_image(seed, 42, 56) for seed in (1, 2)]
    side = [smooth_image(seed, 28, 70) for seed in (3, 4)]
    return {'front': [(rgb, sparse_of(rgb, 120, i)) for i, rgb in enumerate(front)],
            'side': [(rgb, sparse_of(rgb, 100, 9 + i)) for i, rgb in enumerate(side)]}


@pytest.mark.parametrize('scope', [Scope.DECODER_LORA, Scope.PROMPT])
def test_interleaved_streams_match_one_completer_per_stream(frames, scope):
    network = tiny_network(seed=0)
    shared = DepthCompleter(DepthModel(copy.deepcopy(network)), config(scope=scope))
    alone = {name: DepthCompleter(DepthModel(copy.deepcopy(network)), config(scope=scope))
             for name in frames}
    for index in range(2):
        for name, sequence in frames.items():
            rgb, sparse = sequence[index]
            together = shared.complete(rgb, sparse, stream=name)
            separate = alone[name].complete(rgb, sparse)
            # The second frame of each camera continues that camera's own adaptation.
            assert together.warm_started == separate.warm_started == (index == 1)
            assert together.iterations == separate.iterations
            np.testing.assert_allclose(together.depth, separate.depth, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(together.losses, separate.losses, rtol=1e-5)


def test_reset_of_one_stream_leaves_the_other_warm(frames):
    completer = DepthCompleter(DepthModel(tiny_network(seed=0)), config())
    for name, sequence in frames.items():
        completer.complete(*sequence[0], stream=name)
    completer.reset('front')  # parked: forgotten
    assert not completer.complete(*frames['front'][1], stream='front').warm_started
    assert completer.complete(*frames['side'][1], stream='side').warm_started
    completer.reset('side')  # live: forgotten too
    assert not completer.complete(*frames['side'][0], stream='side').warm_started


def test_batched_encoding_matches_one_image_at_a_time(frames):
    network = tiny_network(seed=0)
    completer = DepthCompleter(DepthModel(network), config(iterations=0))
    images = [frames['front'][0][0], frames['side'][0][0], frames['front'][1][0]]
    encoded = completer.encode_frames(images, [None] * 3)
    for rgb, frame in zip(images, encoded):
        alone = completer.model.encode(completer.model.preprocess(rgb, None), rgb.shape[:2])
        assert frame.encoded.input_size == rgb.shape[:2]
        for batched, single in zip(frame.encoded.hidden_states, alone.hidden_states):
            assert batched.shape == single.shape and batched.is_contiguous()
            torch.testing.assert_close(batched, single, rtol=1e-4, atol=1e-5)
    # The two 42x56 front frames went through the encoder as one batch of two.
    assert encoded[0].seconds == encoded[2].seconds


def test_completion_from_features_encoded_ahead_matches(frames):
    network = tiny_network(seed=0)
    ahead = DepthCompleter(DepthModel(copy.deepcopy(network)), config())
    inline = DepthCompleter(DepthModel(copy.deepcopy(network)), config())
    (rgb0, sparse0), (rgb1, sparse1) = frames['front']
    encoded = ahead.encode_frames([rgb0, rgb1], [None, None])
    for (rgb, sparse), frame in zip(frames['front'], encoded):
        result = ahead.complete(rgb, sparse, stream='front', encoded=frame)
        expected = inline.complete(rgb, sparse, stream='front')
        assert result.encode_seconds >= frame.seconds
        np.testing.assert_allclose(result.depth, expected.depth, rtol=1e-3, atol=1e-3)
    with pytest.raises(ValueError, match='encoded ahead'):
        ahead.complete(frames['side'][0][0], frames['side'][0][1], encoded=encoded[0])


def test_scopes_that_reencode_refuse_encoding_ahead(frames):
    completer = DepthCompleter(DepthModel(tiny_network(seed=0)), config(scope=Scope.PROMPT))
    assert not completer.shares_encodings
    with pytest.raises(ValueError, match='re-encodes'):
        completer.encode_frames([frames['front'][0][0]], [None])


def _tensors(value):
    """Every tensor inside nested dicts, lists and tuples."""
    if torch.is_tensor(value):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [tensor for item in value for tensor in _tensors(item)]
    return []


def test_a_portable_warm_state_holds_no_device_tensor_and_resumes_exactly(frames):
    from lrda_ros.densify.worker import pack_warm_state, unpack_warm_state

    first, second = frames['front']
    network = tiny_network(seed=0)
    running = DepthCompleter(DepthModel(copy.deepcopy(network)), config())
    running.complete(*first)
    state = running.warm_state()
    # The learning rate too: Adam's is a tensor on the device while it runs.
    assert torch.is_tensor(running._optimizer.param_groups[0]['lr'])
    assert all(tensor.device.type == 'cpu' for tensor in _tensors(state))
    assert not _tensors(state['optimizer']['param_groups'])
    resumed = DepthCompleter(DepthModel(copy.deepcopy(network)), config())
    # Through the bytes a densify chunk is checkpointed as (loaded onto the CPU).
    resumed.load_warm_state(unpack_warm_state(pack_warm_state(state)))
    optimizer = resumed._optimizer
    device = resumed.adaptation.parameters[0].device
    learning_rate = optimizer.param_groups[0]['lr']
    assert torch.is_tensor(learning_rate) and learning_rate.device == device
    assert float(learning_rate) == pytest.approx(config().learning_rate)
    for parameter in resumed.adaptation.parameters:
        for value in optimizer.state[parameter].values():
            assert value.device == device
    expected, got = running.complete(*second), resumed.complete(*second)
    assert got.warm_started and got.losses == expected.losses
    np.testing.assert_array_equal(got.depth, expected.depth)


def test_a_restored_adam_takes_its_parameters_dtype():
    from lrda_ros.engine.steps import new_adam
    from lrda_ros.engine.streams import portable_state, restored_adam

    parameter = torch.nn.Parameter(torch.ones(3, 4))
    optimizer = new_adam([parameter], 0.01)
    parameter.grad = torch.full((3, 4), 0.5)
    optimizer.step()
    state = portable_state((1, 3, 14, 14), optimizer, [parameter.detach()], None)
    wider = torch.nn.Parameter(torch.ones(3, 4, dtype=torch.float64))
    restored = restored_adam(state['optimizer'], [wider], 0.01)
    moments = restored.state[wider]
    assert moments['exp_avg'].dtype == torch.float64
    # Adam's first moment after one step is (1 - beta1) times the gradient.
    torch.testing.assert_close(moments['exp_avg'], torch.full((3, 4), 0.05, dtype=torch.float64))
