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

"""Model loading: local Hugging Face directories, official checkpoints, and clear failures."""

from __future__ import annotations

import re

from conftest import smooth_image, tiny_config, tiny_network
import huggingface_hub
from lrda_ros.engine import (
    DepthCompleter, DepthModel, load_depth_model, ModelLoadError, PredictionSpace, TTOConfig)
from lrda_ros.engine.checkpoint import (
    build_config, official_to_transformers, transformers_to_official)
from lrda_ros.engine.da3 import HUB_IDS as DA3_HUB_IDS, PRESETS as DA3_PRESETS
from lrda_ros.engine.model import resolve_device
from lrda_ros.engine.names import (
    check_model_path, DEFAULT_MODEL, looks_like_path, TORCH_DEVICE_TYPES, unknown_device)
from lrda_ros.engine.unidepth import HUB_IDS as UNIDEPTH_HUB_IDS
import numpy as np
import pytest
import torch
from transformers import DepthAnythingForDepthEstimation


def _forward(network, pixel_values: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return network(pixel_values).predicted_depth


def test_save_pretrained_directory_round_trips(tmp_path):
    network = tiny_network(seed=3)
    network.save_pretrained(tmp_path / 'tiny')
    loaded = load_depth_model(tmp_path / 'tiny')
    image = smooth_image(0, 56, 84)
    expected = DepthModel(network).predict(image)
    np.testing.assert_array_equal(loaded.predict(image), expected)
    assert loaded.prediction_space is PredictionSpace.DISPARITY


@pytest.mark.parametrize('options', [
    {},
    {'swiglu': True},
    {'depth_estimation_type': 'metric', 'max_depth': 20},
])
def test_official_layout_converts_onto_transformers_exactly(options):
    source = tiny_network(seed=1, **options)
    official = transformers_to_official(source.state_dict(), source.config)
    # The inverted dict really is in the official layout.
    assert 'pretrained.blocks.0.attn.qkv.weight' in official
    assert 'depth_head.scratch.refinenet4.out_conv.weight' in official
    assert 'depth_head.scratch.output_conv2.2.bias' in official
    assert not any(k.startswith(('backbone.', 'neck.', 'head.')) for k in official)

    target = DepthAnythingForDepthEstimation(tiny_config(**options)).eval()
    converted = official_to_transformers(official, target.config, set(target.state_dict()))
    result = target.load_state_dict(converted, strict=True)
    assert not result.missing_keys and not result.unexpected_keys
    pixels = torch.randn(1, 3, 56, 70, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(_forward(target, pixels), _forward(source, pixels),
                               rtol=0, atol=0)


def test_refinenet_order_matters():
    """Swapping two fusion stages must change the output, so the order mapping is tested."""
    source = tiny_network(seed=2)
    official = transformers_to_official(source.state_dict(), source.config)
    prefix = 'depth_head.scratch.refinenet'
    swapped = dict(official)
    for key in [k for k in official if k.startswith(prefix + '1.')]:
        other = key.replace(prefix + '1.', prefix + '2.')
        swapped[key], swapped[other] = official[other], official[key]
    target = DepthAnythingForDepthEstimation(tiny_config()).eval()
    target.load_state_dict(official_to_transformers(swapped, target.config,
                                                    set(target.state_dict())))
    pixels = torch.randn(1, 3, 56, 56, generator=torch.Generator().manual_seed(0))
    assert not torch.allclose(_forward(target, pixels), _forward(source, pixels))


@pytest.fixture(scope='module')
def official_vits_file(tmp_path_factory):
    """Write a randomly initialized ViT-S model as an official checkpoint (about 100 MB)."""
    torch.manual_seed(0)
    network = DepthAnythingForDepthEstimation(build_config('vits')).eval()
    folder = tmp_path_factory.mktemp('official')
    state = transformers_to_official(network.state_dict(), network.config)
    torch.save(state, folder / 'depth_anything_v2_vits.pth')
    # Training scripts often save {'model': state} from DataParallel ('module.' keys).
    torch.save({'model': {'module.' + k: v for k, v in state.items()}},
               folder / 'depth_anything_v2_metric_hypersim_vits.pth')
    return folder, network


@pytest.mark.slow
def test_official_checkpoint_file_loads_and_predicts_identically(official_vits_file):
    folder, network = official_vits_file
    model = load_depth_model(folder / 'depth_anything_v2_vits.pth')
    assert model.network.config.backbone_config.hidden_size == 384
    assert model.prediction_space is PredictionSpace.DISPARITY
    pixels = torch.randn(1, 3, 56, 70, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(_forward(model.network, pixels), _forward(network, pixels),
                               rtol=0, atol=0)


@pytest.mark.slow
def test_metric_checkpoint_is_recognized_by_name(official_vits_file):
    folder, _ = official_vits_file
    model = load_depth_model(folder / 'depth_anything_v2_metric_hypersim_vits.pth')
    assert model.network.config.depth_estimation_type == 'metric'
    assert model.network.config.max_depth == 20.0
    assert model.prediction_space is PredictionSpace.DEPTH


def test_missing_path_says_what_to_pass(tmp_path):
    with pytest.raises(ModelLoadError, match='does not exist.*local Hugging Face directory'):
        load_depth_model(tmp_path / 'nowhere' / 'depth_anything_v2_vits.pth')


def test_a_missing_path_is_refused_before_torch_as_the_loader_refuses_it(tmp_path):
    # Nodes and commands check a model path before torch loads (engine/names.py).
    missing = str(tmp_path / 'nowhere' / 'depth_anything_v2_vits.pth')
    with pytest.raises(ModelLoadError) as loader:
        load_depth_model(missing)
    with pytest.raises(ModelLoadError) as early:
        check_model_path(missing, 'auto')
    assert str(early.value) == str(loader.value)
    check_model_path(missing, 'cuda')  # the loader checks a device first: it decides
    check_model_path(tmp_path, 'cpu')  # a folder: the loader reads it
    # A spec that looks like a path names no model of any family: missing, it is no model.
    names = [*UNIDEPTH_HUB_IDS, *DA3_HUB_IDS, *DA3_PRESETS, DEFAULT_MODEL, 'demo', 'auto']
    assert not [name for name in names if looks_like_path(name)]


def test_auto_offline_without_the_model_cached_is_refused_before_torch_as_the_loader_does(
        tmp_path, monkeypatch):
    # Both read the cache huggingface_hub names (constants.HF_HUB_CACHE, read at each call).
    monkeypatch.setattr(huggingface_hub.constants, 'HF_HUB_CACHE', str(tmp_path))
    monkeypatch.setenv('HF_HUB_OFFLINE', '1')
    with pytest.raises(ModelLoadError) as loader:
        load_depth_model('auto', 'cpu')
    with pytest.raises(ModelLoadError) as early:
        check_model_path('auto', 'cpu')
    assert str(early.value) == str(loader.value)
    assert 'not in the local Hugging Face cache and HF_HUB_OFFLINE is set' in str(early.value)
    check_model_path('auto', 'cuda')  # the loader checks a device first: it decides
    # The cache's layout (huggingface_hub's documented one: refs/main names the snapshot):
    # with the model's config there, the loader may find it, and nothing is refused early.
    model = tmp_path / ('models--' + DEFAULT_MODEL.replace('/', '--'))
    (model / 'refs').mkdir(parents=True)
    (model / 'refs' / 'main').write_text('0123abcd')
    (model / 'snapshots' / '0123abcd').mkdir(parents=True)
    (model / 'snapshots' / '0123abcd' / 'config.json').write_text('{}')
    check_model_path('auto', 'cpu')


@pytest.mark.parametrize('name', ['tpu', 'Cuda', 'cuda:01', 'cuda:', '', ' cpu', 'cpu:0',
                                  'cuda', 'cuda:3', 'mps', 'meta', 'auto', 'cpu'])
def test_device_names_refused_without_torch_are_those_torch_cannot_parse(name):
    try:
        resolve_device(name)
        refused = None
    except ValueError as error:
        refused = str(error)
    unknown = unknown_device(name)
    if unknown is not None:
        assert unknown == refused
    else:
        assert refused is None or not refused.startswith('unknown device'), refused


def test_every_device_type_torch_parses_is_known_without_torch():
    with pytest.raises(RuntimeError) as error:
        torch.device('no_such_type')
    listed = re.search(r'Expected one of (.*) device type', str(error.value))
    assert listed, str(error.value)
    assert set(listed.group(1).split(', ')) <= TORCH_DEVICE_TYPES


def test_directory_without_config_is_rejected(tmp_path):
    with pytest.raises(ModelLoadError, match='no config.json'):
        load_depth_model(tmp_path)


def test_foreign_checkpoint_is_rejected(tmp_path):
    path = tmp_path / 'depth_anything_v2_vits.pth'
    torch.save({'conv.weight': torch.zeros(2, 2)}, path)
    with pytest.raises(ModelLoadError, match='not an official Depth Anything V2 checkpoint'):
        load_depth_model(path)
    path.write_bytes(b'not a checkpoint')
    with pytest.raises(ModelLoadError, match='cannot be read'):
        load_depth_model(path)


def test_unreachable_hub_id_fails_at_load_time(monkeypatch):
    monkeypatch.setenv('HF_HUB_OFFLINE', '1')
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, 'HF_HUB_OFFLINE', True)
    with pytest.raises(ModelLoadError, match='hub id that is reachable or already cached'):
        load_depth_model('lrda-ros-tests/no-such-model')


def test_decoder_neck_matches_transformers_with_adapters():
    """Our fusion order (projection before upsampling) gives transformers' numbers and grads."""
    model = DepthModel(tiny_network(seed=3))
    completer = DepthCompleter(model, TTOConfig(device='cpu'))
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():  # non-trivial adapters, so the LoRA branches are exercised too
        for parameter in completer.adaptation.parameters:
            parameter.add_(0.05 * torch.randn(parameter.shape, generator=generator))
    image = smooth_image(1, 61, 83)
    encoded = model.encode(model.preprocess(image, None), image.shape[:2])
    ours = model.decode_features(encoded)
    reference = model.network.neck(list(encoded.hidden_states), *encoded.patch_grid)
    assert len(ours) == len(reference) == 4
    for mine, theirs in zip(ours, reference):
        torch.testing.assert_close(mine, theirs, rtol=1e-5, atol=1e-6)
    parameters = completer.adaptation.parameters
    weights = [torch.randn(t.shape, generator=generator) for t in reference]
    our_grads = torch.autograd.grad(sum((w * t).sum() for w, t in zip(weights, ours)),
                                    parameters, allow_unused=True)
    their_grads = torch.autograd.grad(sum((w * t).sum() for w, t in zip(weights, reference)),
                                      parameters, allow_unused=True)
    compared = 0
    for mine, theirs in zip(our_grads, their_grads):
        if theirs is not None:
            torch.testing.assert_close(mine, theirs, rtol=1e-4, atol=1e-6)
            compared += 1
    assert compared > 10
