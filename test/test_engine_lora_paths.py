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

"""The steps' arithmetic: LoRA forms, weights held in the compute precision, casts per step."""

from __future__ import annotations

from collections import Counter
from contextlib import nullcontext

from conftest import smooth_image, tiny_network
from lrda_ros.engine import DepthCompleter, DepthModel, TTOConfig
from lrda_ros.engine.lora import LoraAdapters
from lrda_ros.engine.lora_paths import delta_weight, weights_for_one_step
import numpy as np
import pytest
import torch
from torch import nn
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode


def frames(count: int = 2):
    """Return frames of a panning smooth image with 250 sparse depths each."""
    rng = np.random.default_rng(4)
    result = []
    for k in range(count):
        image = smooth_image(5, 60, 88)[:, 4 * k:4 * k + 80].copy()
        sparse = np.zeros(image.shape[:2], np.float32)
        sparse.flat[rng.choice(sparse.size, 250, replace=False)] = rng.uniform(2, 6, 250)
        result.append((image, sparse))
    return result


def completer(**options) -> DepthCompleter:
    config = {'device': 'cpu', 'iterations': 4, 'warm_iterations': 2, 'learning_rate': 3e-2,
              'schedule': 'paper'}
    config.update(options)
    return DepthCompleter(DepthModel(tiny_network(seed=2)), TTOConfig(**config))


def adapted_layers():
    """Return a float64 network of each adaptable kind, LoRA on every layer, adapters random."""
    torch.manual_seed(0)
    network = nn.Sequential(nn.Conv2d(4, 6, 3, padding=1), nn.ReLU(),
                            nn.Conv2d(6, 6, 3, padding=1, padding_mode='reflect'),
                            nn.Conv2d(6, 5, 1), nn.Linear(7, 3)).double()
    adapters = LoraAdapters(network, ['0', '2', '3', '4'], rank=2, alpha=3.0)
    with torch.no_grad():
        for parameter in adapters.parameters:
            parameter.normal_()
    return network, adapters


def test_merged_and_separate_forms_give_the_same_output_and_gradients_in_float64():
    network, adapters = adapted_layers()
    x = torch.randn(1, 4, 5, 7, dtype=torch.float64, requires_grad=True)
    results = {}
    for path in ('separate', 'merged'):
        adapters.set_paths(path)
        output = network(x)
        results[path] = (output, torch.autograd.grad(output.square().sum(),
                                                     adapters.parameters + [x]))
    assert adapters.paths() == dict.fromkeys(['0', '2', '3', '4'], 'merged')
    torch.testing.assert_close(results['merged'][0], results['separate'][0],
                               rtol=1e-12, atol=1e-12)
    for merged, separate in zip(results['merged'][1], results['separate'][1]):
        torch.testing.assert_close(merged, separate, rtol=1e-10, atol=1e-10)


def test_the_merged_form_is_the_layer_with_w_plus_s_b_a_computed_by_hand():
    network, adapters = adapted_layers()
    adapters.set_paths('merged')
    layer = network[0]
    down = layer.lora_A['tto'].weight          # (r, in, 3, 3)
    up = layer.lora_B['tto'].weight[:, :, 0, 0]  # (out, r)
    weight = layer.base_layer.weight + 1.5 * torch.einsum('or,rikl->oikl', up, down)  # 3 / 2
    x = torch.randn(1, 4, 5, 7, dtype=torch.float64)
    expected = F.conv2d(x, weight, layer.base_layer.bias, padding=1)
    torch.testing.assert_close(layer(x), expected, rtol=1e-12, atol=1e-12)


def test_each_adapters_delta_weight_is_pefts_and_differentiable_alike():
    network, adapters = adapted_layers()
    for name in ('0', '2', '3', '4'):  # 3x3 (zero and reflect padding), 1x1, linear
        layer = network[int(name)]
        ours = delta_weight(layer, 'tto')
        pefts = layer.get_delta_weight('tto')
        torch.testing.assert_close(ours, pefts, rtol=1e-12, atol=1e-12)
        probe = torch.randn_like(pefts)
        parameters = [layer.lora_A['tto'].weight, layer.lora_B['tto'].weight]
        for got, expected in zip(torch.autograd.grad((ours * probe).sum(), parameters),
                                 torch.autograd.grad((pefts * probe).sum(), parameters)):
            torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)


class _Operators(TorchDispatchMode):
    """Count the operators run, by name."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.counts[func.__name__.split('.')[0]] += 1
        return func(*args, **(kwargs or {}))


def same_shape_layers():
    """Return a float64 network with three 6->6 3x3 convolutions and two of other shapes."""
    torch.manual_seed(1)
    network = nn.Sequential(nn.Conv2d(4, 6, 3, padding=1), nn.Conv2d(6, 6, 3, padding=1),
                            nn.ReLU(), nn.Conv2d(6, 6, 3, padding=1),
                            nn.Conv2d(6, 6, 3, padding=1, padding_mode='reflect'),
                            nn.Conv2d(6, 5, 1)).double()
    adapters = LoraAdapters(network, ['0', '1', '3', '4', '5'], rank=2, alpha=3.0)
    with torch.no_grad():
        for parameter in adapters.parameters:
            parameter.normal_()
    adapters.set_paths('merged')
    return network, adapters


def test_weights_for_one_step_are_each_layers_own_with_their_gradients():
    network, adapters = same_shape_layers()
    x = torch.randn(1, 4, 5, 7, dtype=torch.float64, requires_grad=True)
    results = []
    for together in (False, True):
        with weights_for_one_step(adapters.forwards.values()) if together else nullcontext():
            grouped = {name for name, forward in adapters.forwards.items()
                       if forward.step_weight is not None}
            output = network(x)
        results.append((output, torch.autograd.grad(output.square().sum(),
                                                    adapters.parameters + [x])))
    # The three 6->6 3x3 convolutions (padding apart) share a shape; the others are alone.
    assert grouped == {'1', '3', '4'}
    assert all(f.step_weight is None for f in adapters.forwards.values())  # for one step only
    torch.testing.assert_close(results[1][0], results[0][0], rtol=1e-12, atol=1e-12)
    for together, alone in zip(results[1][1], results[0][1]):
        torch.testing.assert_close(together, alone, rtol=1e-12, atol=1e-12)


def test_weights_for_one_step_take_one_batched_product_per_shape():
    network, adapters = same_shape_layers()
    x = torch.randn(1, 4, 5, 7, dtype=torch.float64)
    for together, products in ((False, {'mm': 5}), (True, {'mm': 2, 'bmm': 1})):
        with _Operators() as operators:
            with weights_for_one_step(adapters.forwards.values()) if together else \
                    nullcontext():
                network(x)
        assert {k: operators.counts[k] for k in products} == products


@pytest.mark.parametrize('dtype', ['float32', 'bfloat16'])
def test_the_engine_reports_each_adapted_layers_form(dtype):
    tto = completer(dtype=dtype)  # lora_path 'auto'
    for frame in frames():
        tto.complete(*frame)
    paths = tto.path_choice.paths()
    assert set(paths) == set(tto.adaptation.adapters.layer_names)
    assert set(paths.values()) <= {'separate', 'merged'}
    if dtype == 'float32':  # peft's own form, measured nowhere
        assert set(paths.values()) == {'separate'} and not tto.path_choice.timings
    else:  # measured once per network input shape, on the layers a step runs
        (shape, timings), = tto.path_choice.timings.items()
        assert shape[-2:] == (56, 84)
        assert {t.name for t in timings} <= set(paths)
        assert all(t.separate > 0 and t.merged > 0 for t in timings)
        assert all(paths[t.name] == t.choice for t in timings)


def test_auto_in_float32_keeps_the_losses_of_the_separate_form_exactly():
    auto = [r.losses for r in (completer(lora_path='auto').complete(*f) for f in frames(1))]
    separate = [r.losses for r in (completer(lora_path='separate').complete(*f)
                                   for f in frames(1))]
    assert auto == separate


@pytest.mark.parametrize('dtype', ['float32', 'bfloat16'])
def test_a_frame_in_either_form_fits_its_lidar(dtype):
    for path in ('separate', 'merged'):
        result = completer(dtype=dtype, lora_path=path).complete(*frames(1)[0])
        assert result.final_loss < result.losses[0]


def test_frozen_weights_are_held_in_the_compute_precision_and_adapters_stay_float32():
    tto = completer(dtype='bfloat16')
    tto.complete(*frames(1)[0])
    network = tto.model.network
    for name, parameter in network.named_parameters():
        if parameter.requires_grad:  # what Adam updates: float32 masters
            assert parameter.dtype == torch.float32, name
        elif name.startswith(('head.conv2', 'head.conv3')):  # the float32 output layers
            assert parameter.dtype == torch.float32, name
        elif name.endswith('weight') and parameter.dim() >= 2:  # conv and linear weights
            assert parameter.dtype == torch.bfloat16, name
    for state in tto._optimizer.state.values():
        assert state['exp_avg'].dtype == torch.float32


class CastCounter(TorchDispatchMode):
    """Count ``aten._to_copy`` calls by what is cast: frozen weight, adapter, activation."""

    def __init__(self, frozen: set[int], adapters: set[int], largest_weight: int) -> None:
        super().__init__()
        self.frozen, self.adapters, self.largest_weight = frozen, adapters, largest_weight
        #: Shapes of the adapters stacked for layers merged together, or concatenated to be
        #: cast together (lora_paths).
        self.adapter_stacks: set[tuple[int, ...]] = set()
        self.casts = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._to_copy.default and args[0].is_floating_point():
            source = args[0]
            pointer = source.untyped_storage().data_ptr()
            # Larger than any decoder weight: an activation (or its gradient), not a weight,
            # an adapter (alone or stacked), a merged weight W + BA built at a step, or their
            # gradients.
            kind = ('frozen weight' if pointer in self.frozen else
                    'adapter' if pointer in self.adapters
                    or tuple(source.shape) in self.adapter_stacks else
                    'activation' if source.numel() > self.largest_weight else 'weight-sized')
            self.casts[kind] += 1
        output = func(*args, **(kwargs or {}))
        if func in (torch.ops.aten.stack.default, torch.ops.aten.cat.default) and all(
                t.untyped_storage().data_ptr() in self.adapters for t in args[0]):
            self.adapter_stacks.add(tuple(output.shape))
        return output


def casts_per_step(tto: DepthCompleter) -> tuple[Counter, int]:
    """Return the casts of one frame's steps by kind, and the step count."""
    network = tto.model.network
    frozen = {p.untyped_storage().data_ptr() for p in network.parameters()
              if not p.requires_grad}
    adapters = {p.untyped_storage().data_ptr() for p in tto.adaptation.parameters}
    largest = max(p.numel() for n, p in network.named_parameters()
                  if n.startswith(tto.model.decoder_prefixes))
    counter = CastCounter(frozen, adapters, largest)
    step, steps = tto._step, []

    def counted_step(*args):
        steps.append(1)
        with counter:
            step(*args)

    tto._step = counted_step
    tto.complete(*frames(1)[0])
    return counter.casts, len(steps)


@pytest.mark.parametrize('path', ['separate', 'merged'])
@pytest.mark.parametrize('sparse_head', [True, False])
def test_a_bfloat16_step_casts_no_frozen_weight_and_few_activations(path, sparse_head):
    tto = completer(dtype='bfloat16', lora_path=path, sparse_head=sparse_head)
    casts, steps = casts_per_step(tto)
    assert steps == 4
    assert casts['frozen weight'] == 0
    # The activation stream is bfloat16 from the encoder's features on; it turns float32
    # once, for the head's output layers, and its gradient turns back there: at most 4 per
    # step (the dense head: its input and gradient; the sparse head: its windows' products).
    assert casts['activation'] <= 4 * steps, casts


def test_a_float32_step_casts_nothing():
    casts, steps = casts_per_step(completer(dtype='float32'))
    assert steps == 4, steps
    assert casts['frozen weight'] == casts['adapter'] == casts['activation'] == 0, casts


def test_channels_last_gives_the_same_prediction_and_gradients():
    # Adam amplifies rounding along a trajectory (kernels for either layout sum in other
    # orders), so the forward pass and one step's gradients are compared, not trajectories.
    depths, grads = {}, {}
    for layout in (True, False):
        tto = completer(channels_last=layout, iterations=1)
        generator = torch.Generator().manual_seed(0)
        with torch.no_grad():  # away from the identity init, where many gradients are zero
            for parameter in tto.adaptation.parameters:
                parameter.add_(0.05 * torch.randn(parameter.shape, generator=generator))
        image, sparse = frames(1)[0]
        tto.complete(image, sparse)  # one step: its gradient is left in .grad
        grads[layout] = torch.cat([p.grad.flatten() for p in tto.adaptation.parameters
                                   if p.grad is not None])
        depths[layout] = tto.model.predict(image)
    # float32 sums of at most 9 * 32 products reordered: a few units of 2**-24 each.
    np.testing.assert_allclose(depths[True], depths[False], rtol=1e-5)
    scale = grads[False].abs().max()
    torch.testing.assert_close(grads[True], grads[False], rtol=0, atol=1e-4 * float(scale))


@pytest.mark.parametrize('dtype', ['float32', 'bfloat16'])
def test_decodes_compute_each_merged_weight_once_per_change_of_the_adapters(
        monkeypatch, dtype):
    from lrda_ros.engine import lora_paths

    completer = DepthCompleter(DepthModel(tiny_network(seed=1)),
                               TTOConfig(device='cpu', lora_path='merged', dtype=dtype))
    image = smooth_image(1, 42, 56)
    pixel_values = completer.model.preprocess(image, None)
    with completer._autocast():  # the encoder's weights are held in the compute precision
        encoded = completer.model.encode(pixel_values, image.shape[:2], None)
    adaptation = completer.adaptation
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():  # adapters away from peft's start (B = 0: no change to W)
        for parameter in adaptation.parameters:
            parameter.add_(0.05 * torch.randn(parameter.shape, generator=generator))
    merges = []
    merged_weight = lora_paths.merged_weight
    monkeypatch.setattr(lora_paths, 'merged_weight',
                        lambda layer, *args: merges.append(layer) or merged_weight(layer, *args))

    def decode():
        return completer._dense_prediction(pixel_values, encoded)[0]

    first = decode()
    per_decode = len(merges)
    assert 0 < per_decode <= len(adaptation.adapters.forwards)  # each layer the decode runs
    second = decode()
    assert len(merges) == per_decode and torch.equal(first, second)
    # Written through the flat buffer, as the steps write: the layers cannot see it.
    with torch.no_grad():
        adaptation.flat_parameters.buffers[0].mul_(1.5)
    changed = decode()
    assert len(merges) == 2 * per_decode and not torch.equal(changed, first)
    # The numbers of a merge at every decode.
    adaptation._merge_together = False
    assert torch.equal(decode(), changed) and len(merges) == 3 * per_decode
