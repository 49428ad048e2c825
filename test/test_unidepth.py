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

"""UniDepthV2 in the engine: loading by parameter name, decoder-only TTO, options, confidence."""

from __future__ import annotations

import copy
import json

from conftest import smooth_image
from lrda_ros.engine import (
    DepthCompleter, InsufficientSparseDepthError, load_depth_model, ModelLoadError,
    PredictionSpace, Scope, TTOConfig)
from lrda_ros.engine.lora import adaptable_layers
from lrda_ros.engine.unidepth import UniDepthModel, UniDepthV2Config, UniDepthV2Network
from lrda_ros.engine.unidepth.config import config_from_state_dict
from lrda_ros.engine.unidepth.model import _paddings, layout_of_input, processing_layout
from lrda_ros.errors import ConfigError
import numpy as np
import pytest
import torch
from unidepth_tiny import camera_matrix, tiny_unidepth_network, write_official_checkpoint

HEIGHT, WIDTH = 60, 80


def sparse_frame(seed: int = 0, fraction: float = 0.15) -> np.ndarray:
    """Return sparse metric depth of a tilted plane (0 = no return)."""
    rng = np.random.default_rng(seed)
    rows, cols = np.mgrid[:HEIGHT, :WIDTH]
    depth = (3.0 + 0.06 * rows + 0.02 * cols).astype(np.float32)
    return np.where(rng.random(depth.shape) < fraction, depth, 0.0).astype(np.float32)


def config(**overrides) -> TTOConfig:
    return TTOConfig(**{'device': 'cpu', 'iterations': 4, 'warm_iterations': 2,
                        'min_points': 8, **overrides})


@pytest.fixture(scope='module')
def base_network():
    return tiny_unidepth_network(seed=0)


@pytest.fixture
def model(base_network):
    return UniDepthModel(copy.deepcopy(base_network))


# --------------------------------------------------------------------------- loading

def test_official_layout_loads_by_parameter_name(tmp_path, base_network):
    folder = write_official_checkpoint(tmp_path / 'unidepth-v2', base_network)
    names = set(base_network.state_dict())
    # The released checkpoints' names, verbatim.
    assert {'pixel_encoder.blocks.0.attn.qkv.weight', 'pixel_encoder.register_tokens',
            'pixel_decoder.level_embeds', 'pixel_decoder.camera_layer.latents_pos',
            'pixel_decoder.depth_layer.prompt_camera.0.layers.0.kv.weight',
            'pixel_decoder.depth_layer.ups.2.convs.0.gamma',
            'pixel_decoder.depth_layer.to_confidence_hr.2.bias'} <= names
    loaded = load_depth_model(str(folder), 'cpu')
    assert isinstance(loaded, UniDepthModel) and loaded.source == str(folder)
    assert loaded.prediction_space is PredictionSpace.DEPTH and loaded.has_confidence
    for key, value in base_network.state_dict().items():
        torch.testing.assert_close(loaded.network.state_dict()[key], value, rtol=0, atol=0)
    image, K = smooth_image(1, HEIGHT, WIDTH), camera_matrix(HEIGHT, WIDTH)
    np.testing.assert_array_equal(loaded.predict(image, intrinsics=K),
                                  UniDepthModel(base_network).predict(image, intrinsics=K))


def test_weights_file_and_pytorch_model_bin_load(tmp_path, base_network):
    folder = write_official_checkpoint(tmp_path / 'bin', base_network, 'pytorch_model.bin')
    assert isinstance(load_depth_model(str(folder), 'cpu'), UniDepthModel)
    # A bare weights file takes its shape from the config.json beside it.
    file_model = load_depth_model(str(folder / 'pytorch_model.bin'), 'cpu')
    assert file_model.config.embed_dim == 32
    # A training checkpoint ({'model': ...}, 'module.' prefixes) unwraps as UniDepth's loader.
    wrapped = {'model': {f'module.{k}': v for k, v in base_network.state_dict().items()}}
    torch.save(wrapped, tmp_path / 'bin' / 'checkpoint.pth')
    assert isinstance(load_depth_model(str(tmp_path / 'bin' / 'checkpoint.pth'), 'cpu'),
                      UniDepthModel)


def test_official_sizes_are_inferred_from_shapes_without_config():
    for variant, (width, hidden) in {'vits': (384, 256), 'vitb': (768, 384),
                                     'vitl': (1024, 512)}.items():
        with torch.device('meta'):
            network = UniDepthV2Network(UniDepthV2Config.official(variant))
        inferred = config_from_state_dict(network.state_dict())
        assert inferred == UniDepthV2Config.official(variant)
        assert (inferred.embed_dim, inferred.hidden_dim) == (width, hidden)
    assert UniDepthV2Config.official('vitl').output_blocks == (6, 12, 18, 24)


def test_official_config_json_round_trips():
    official = UniDepthV2Config.official('vitb')
    data = official.to_official()
    assert data['model']['pixel_encoder']['name'] == 'dinov2_vitb14'
    assert UniDepthV2Config.from_official(data) == official
    assert UniDepthV2Config.from_official({'config': data}) == official  # hub mixin wrapping


def test_wrong_names_are_rejected_naming_them(tmp_path, base_network):
    state = dict(base_network.state_dict())
    state['pixel_decoder.depth_layer.extra.weight'] = state.pop(
        'pixel_decoder.depth_layer.to_latents.weight')
    folder = tmp_path / 'broken'
    folder.mkdir()
    (folder / 'config.json').write_text(json.dumps(base_network.config.to_official()))
    torch.save(state, folder / 'pytorch_model.bin')
    with pytest.raises(ModelLoadError, match='to_latents.weight'):
        load_depth_model(str(folder), 'cpu')


def test_hub_ids_resolve_from_the_cache_and_fail_fast_offline(tmp_path, base_network,
                                                              monkeypatch):
    import huggingface_hub
    from huggingface_hub.errors import LocalEntryNotFoundError

    repo = write_official_checkpoint(tmp_path / 'cache', base_network)
    asked = []

    def cached_download(repo_id, filename, local_files_only=False):
        asked.append((repo_id, filename, local_files_only))
        if repo_id != 'lpiccinelli/unidepth-v2-vits14' or not (repo / filename).is_file():
            raise LocalEntryNotFoundError(f'{repo_id}/{filename} not cached')
        return str(repo / filename)

    monkeypatch.setattr(huggingface_hub, 'hf_hub_download', cached_download)
    loaded = load_depth_model('lpiccinelli/unidepth-v2-vits14', 'cpu')
    assert isinstance(loaded, UniDepthModel)
    assert asked[:2] == [('lpiccinelli/unidepth-v2-vits14', 'config.json', True),
                         ('lpiccinelli/unidepth-v2-vits14', 'model.safetensors', True)]
    monkeypatch.setenv('HF_HUB_OFFLINE', '1')
    with pytest.raises(ModelLoadError, match='not in the local Hugging Face cache and '
                       'HF_HUB_OFFLINE is set'):
        load_depth_model('lpiccinelli/unidepth-v2-vitl14', 'cpu')


# --------------------------------------------------------------------------- the model

@pytest.mark.parametrize('height, width', [(60, 80), (40, 200), (200, 60), (480, 640),
                                           (352, 1216)])
@pytest.mark.parametrize('processing_size', [None, 266])
def test_input_layout_pads_into_the_training_aspect_ratios(height, width, processing_size):
    official = UniDepthV2Config.official('vits')
    layout = processing_layout(height, width, processing_size, official)
    left, right, top, bottom = layout.paddings
    assert layout.padded == (height + top + bottom, width + left + right)
    assert 0.5 - 0.01 <= layout.padded[1] / layout.padded[0] <= 2.5 + 0.01
    assert layout.network[0] % 14 == 0 and layout.network[1] % 14 == 0
    if processing_size is None:
        assert official.pixel_bounds[0] <= layout.scale ** 2 * np.prod(layout.padded) <= \
            official.pixel_bounds[1]
    else:
        assert max(layout.network) == processing_size
    assert layout_of_input((height, width), layout.network, official) == layout


@pytest.mark.parametrize('height, width, paddings, network, scale', [
    # Hand-computed with UniDepthV2's rule (pad to the ratio range, scale into 200k..600k
    # pixels, truncate, round each side up to a multiple of 14).
    (480, 640, (0, 0, 0, 0), (490, 644), 1.0),
    (352, 1216, (0, 0, 67, 67), (490, 1218), 1.0),  # 1216 / 2.5 = 486.4 -> 486 rows
    (200, 60, (20, 20, 0, 0), (644, 322), (200_000 / (200 * 100)) ** 0.5),  # 632, 316
])
def test_input_layout_follows_the_official_rule(height, width, paddings, network, scale):
    layout = processing_layout(height, width, None, UniDepthV2Config.official('vits'))
    assert (layout.paddings, layout.network) == (paddings, network)
    assert layout.scale == pytest.approx(scale)


def _expected_padded(height: int, width: int) -> tuple[int, int]:
    """Return the padded size for the official ratio range 1/2 .. 5/2, in integers only."""
    if 2 * width > 5 * height:  # wider than 5:2: rows up to floor(width / 2.5)
        return 2 * width // 5, width
    if 2 * width < height:  # taller than 1:2: columns up to floor(height / 2)
        return height, height // 2
    return height, width


def test_every_size_from_200_to_2000_pixels_pads_exactly():
    # The official rule sizes an image within the ratio range as int(H * (W / H)), one pixel
    # short for 6 % of sizes (333x500, 303x640, 398x800): a negative padding. Every height,
    # widths in steps of 13: a quarter of these sizes are ones that rule got wrong.
    bounds = UniDepthV2Config.official('vits').ratio_bounds
    for height in range(200, 2001):
        for width in range(200, 2001, 13):
            paddings, padded = _paddings(height, width, bounds)
            assert padded == _expected_padded(height, width), (height, width)
            left, right, top, bottom = paddings
            assert min(paddings) >= 0 and abs((left - right) + (top - bottom)) <= 1
            assert padded == (height + top + bottom, width + left + right), (height, width)


@pytest.mark.parametrize('height, width', [(333, 500), (303, 640), (398, 800)])
def test_sizes_the_official_rule_cut_short_predict_a_whole_map(model, height, width):
    layout = processing_layout(height, width, None, model.config)
    assert layout.paddings == (0, 0, 0, 0) and layout.padded == (height, width)
    image = smooth_image(4, height, width)
    depth = model.predict(image, intrinsics=camera_matrix(height, width))
    assert depth.shape == (height, width) and np.isfinite(depth).all()
    # A one-column network output stretched back makes every row constant.
    assert np.all(np.ptp(depth, axis=1) > 0)


def test_wide_images_are_padded_and_the_prediction_covers_the_image(model):
    image = smooth_image(2, 20, 80)  # aspect 4: padded to 2.5, 32 rows
    pixel_values = model.preprocess(image, None)
    layout = processing_layout(20, 80, None, model.config)
    assert layout.paddings == (0, 0, 6, 6) and layout.scale == 1.0
    assert tuple(pixel_values.shape[-2:]) == layout.network == (42, 84)
    # The padding rows are zeros after normalization (before the resize: bilinear keeps
    # the top row, which samples only padding, at zero).
    assert float(pixel_values[0, :, 0].abs().max()) == 0.0
    K = camera_matrix(20, 80)
    encoded = model.encode(pixel_values, (20, 80), K)
    assert tuple(model.decode(encoded).shape) == (1, 20, 80)
    # K moves with the padding: the principal point shifts down by the top padding.
    assert float(encoded.camera.intrinsics[0, 1, 2]) == pytest.approx(K[1, 2] + 6)
    assert float(encoded.camera.intrinsics[0, 0, 2]) == pytest.approx(K[0, 2])
    assert model.predict(image).shape == (20, 80)


def test_the_camera_conditions_the_depth(model):
    image = smooth_image(3, HEIGHT, WIDTH)
    narrow = model.predict(image, intrinsics=camera_matrix(HEIGHT, WIDTH))
    wide_k = camera_matrix(HEIGHT, WIDTH)
    wide_k[0, 0] = wide_k[1, 1] = 0.3 * WIDTH
    wide = model.predict(image, intrinsics=wide_k)
    predicted = model.predict(image)  # no K: the camera head predicts it
    assert np.all(np.isfinite(narrow)) and np.all(narrow > 0)
    assert not np.allclose(narrow, wide) and not np.allclose(narrow, predicted)


def test_decoder_lora_targets_the_depth_path_only(model):
    layers = adaptable_layers(model.network, model.decoder_prefixes)
    assert len(layers) == 4 + 1 + 4 * 5 + 3 * (2 * 1 + 1) + 1 + 1 + 2
    assert any(name.startswith('pixel_decoder.input_adapter.') for name in layers)
    assert 'pixel_decoder.depth_layer.prompt_camera.3.layers.0.kv' in layers
    assert 'pixel_decoder.depth_layer.to_depth_hr.0' in layers
    assert not [name for name in layers if 'camera_layer' in name or 'confidence' in name
                or 'camera_token_adapter' in name or name.startswith('pixel_encoder')]
    # ConvTranspose2d (the level injections) matches the prefixes but is not adaptable.
    assert not [name for name in layers if 'process_features' in name]


def test_attached_adapters_start_as_identity_and_match_reflect_padding(model):
    image, K = smooth_image(4, HEIGHT, WIDTH), camera_matrix(HEIGHT, WIDTH)
    before = model.predict(image, intrinsics=K)
    completer = DepthCompleter(model, config())
    assert completer.adaptation.adapters.num_parameters > 0
    np.testing.assert_allclose(model.predict(image, intrinsics=K), before, rtol=1e-6)
    low = model.network.pixel_decoder.depth_layer.to_depth_lr
    assert low.base_layer.padding_mode == 'reflect'
    assert low.lora_A['tto'].padding_mode == 'reflect'
    # With reflect padding on both, the adapter is exactly the weight update W + scale * BA.
    with torch.no_grad():
        low.lora_B['tto'].weight.normal_()
        x = torch.randn(1, low.base_layer.in_channels, 9, 11)
        delta = (low.lora_B['tto'].weight[:, :, 0, 0] @ low.lora_A['tto'].weight.flatten(1))
        merged = low.base_layer.weight + low.scaling['tto'] * delta.view_as(
            low.base_layer.weight)
        expected = torch.nn.functional.conv2d(torch.nn.functional.pad(x, (1, 1, 1, 1),
                                                                      mode='reflect'),
                                              merged, low.base_layer.bias)
        torch.testing.assert_close(low(x), expected, rtol=1e-4, atol=1e-4)


# --------------------------------------------------------------------------- TTO

def test_tto_lowers_the_loss_and_returns_metric_depth_with_confidence(model):
    image, sparse, K = smooth_image(5, HEIGHT, WIDTH), sparse_frame(), camera_matrix(
        HEIGHT, WIDTH)
    aligned = DepthCompleter(UniDepthModel(copy.deepcopy(model.network)),
                             config(iterations=0)).complete(image, sparse, intrinsics=K)
    completer = DepthCompleter(model, config(iterations=25))
    result = completer.complete(image, sparse, intrinsics=K)
    assert result.status.value == 'optimized' and result.iterations == 25
    assert result.final_loss < 0.5 * result.losses[0]
    assert result.final_loss < 0.5 * aligned.final_loss
    assert result.depth.shape == (HEIGHT, WIDTH) and np.all(np.isfinite(result.depth))
    assert result.confidence.shape == (HEIGHT, WIDTH) and result.confidence.dtype == np.float32
    assert np.all(result.confidence > 0) and np.all(np.isfinite(result.confidence))
    assert aligned.confidence is not None
    mask = sparse > 0
    error = np.abs(result.depth[mask] - sparse[mask]).mean()
    assert error < np.abs(aligned.depth[mask] - sparse[mask]).mean()


def test_encoder_stays_fixed_and_is_run_once_per_frame(model, monkeypatch):
    calls = []
    original = model.network.encode
    monkeypatch.setattr(model.network, 'encode', lambda x: calls.append(1) or original(x))
    encoder_before = {k: v.clone() for k, v in model.network.pixel_encoder.state_dict().items()}
    DepthCompleter(model, config(iterations=5)).complete(
        smooth_image(6, HEIGHT, WIDTH), sparse_frame(), intrinsics=camera_matrix(HEIGHT, WIDTH))
    assert len(calls) == 1
    for key, value in model.network.pixel_encoder.state_dict().items():
        torch.testing.assert_close(value, encoder_before[key], rtol=0, atol=0)


@pytest.mark.parametrize('dtype', ['float32', 'bfloat16'])
@pytest.mark.parametrize('warm_start', [False, True])
# A budget that never binds (the tiny frames take well under a second on an idle machine,
# and the first can take tens on a loaded one): the deadline bookkeeping runs every step.
@pytest.mark.parametrize('time_budget', [0.0, 600.0])
def test_options_matrix(base_network, dtype, warm_start, time_budget):
    completer = DepthCompleter(UniDepthModel(copy.deepcopy(base_network)),
                               config(dtype=dtype, warm_start=warm_start,
                                      time_budget=time_budget))
    K = camera_matrix(HEIGHT, WIDTH)
    results = [completer.complete(smooth_image(7 + k, HEIGHT, WIDTH), sparse_frame(k),
                                  intrinsics=K) for k in range(2)]
    assert [r.warm_started for r in results] == [False, warm_start]
    assert [r.iterations for r in results] == [4, 2 if warm_start else 4]
    for result in results:
        assert np.all(np.isfinite(result.depth)) and np.all(np.isfinite(result.confidence))
        assert not result.stopped_at_deadline
        assert result.final_loss <= result.losses[0] * 1.0001


def test_a_tight_budget_stops_the_steps(model):
    completer = DepthCompleter(model, config(iterations=40, time_budget=1e-3))
    result = completer.complete(smooth_image(8, HEIGHT, WIDTH), sparse_frame())
    assert result.stopped_at_deadline and result.iterations < 40
    assert result.confidence is not None


@pytest.mark.parametrize('scope', [Scope.ENCODER_LORA, Scope.FULL_LORA, Scope.DECODER_FULL,
                                   Scope.PROMPT])
def test_every_scope_runs(base_network, scope):
    completer = DepthCompleter(UniDepthModel(copy.deepcopy(base_network)),
                               config(iterations=3, scope=scope))
    result = completer.complete(smooth_image(9, HEIGHT, WIDTH), sparse_frame(),
                                intrinsics=camera_matrix(HEIGHT, WIDTH))
    assert result.iterations == 3 and np.all(np.isfinite(result.depth))
    assert result.final_loss < result.losses[0]


def test_dpt_specific_options_are_rejected_or_fall_back_explicitly(base_network):
    with pytest.raises(ConfigError, match='tail_strips') as raised:
        DepthCompleter(UniDepthModel(copy.deepcopy(base_network)), config(tail_strips=4))
    assert raised.value.field == 'tail_strips'
    # The sparse head (on by default) is a speed-up only: noted, and the steps run densely.
    completer = DepthCompleter(UniDepthModel(copy.deepcopy(base_network)),
                               config(sparse_head=True))
    assert [n.split(':')[0] for n in completer.notices] == ['sparse_head']
    dense = DepthCompleter(UniDepthModel(copy.deepcopy(base_network)),
                           config(sparse_head=False))
    assert dense.notices == []
    image, sparse = smooth_image(10, HEIGHT, WIDTH), sparse_frame()
    np.testing.assert_allclose(completer.complete(image, sparse).depth,
                               dense.complete(image, sparse).depth, rtol=1e-5)


# Every engine option not exercised above, on its own or with its partners: each either runs
# with UniDepthV2 or is refused when the completer is built, naming the option.
OPTION_CASES = {
    'processing_size': ({'processing_size': 42}, None),
    'lora shape, dropout, seed, layout': ({'lora_rank': 2, 'lora_alpha': 4.0,
                                           'lora_dropout': 0.1, 'seed': 3,
                                           'channels_last': False,
                                           'tune_cpu_allocator': False}, None),
    'target_modules': ({'target_modules': (r'to_depth_lr$',)}, None),
    'target_modules matching nothing': ({'target_modules': ('no_such_layer',)},
                                        'target_modules'),
    'float16': ({'dtype': 'float16'}, 'dtype?'),  # runs, or is refused, on this CPU
    'auto precision': ({'dtype': 'auto'}, None),
    'convergence': ({'convergence_tol': 0.5, 'patience': 1}, None),
    'divergence and backtracking': ({'learning_rate': 1.0, 'divergence_factor': 1.5,
                                     'backtrack_fraction': 1.0}, None),
    'depth range': ({'min_depth': 4.0, 'max_depth': 5.0}, None),
    'few points: align': ({'min_points': 10_000}, None),
    'no steps': ({'iterations': 0}, None),
}


@pytest.mark.parametrize('case', list(OPTION_CASES))
def test_every_engine_option_runs_or_is_refused_at_start_up(base_network, case):
    overrides, refused = OPTION_CASES[case]
    model = UniDepthModel(copy.deepcopy(base_network))
    try:
        completer = DepthCompleter(model, config(iterations=2, **overrides)
                                   if 'iterations' not in overrides else
                                   config(**overrides))
    except ConfigError as error:
        assert refused is not None, f'{case} refused: {error}'
        assert error.field == refused.rstrip('?') and str(error)
        return
    assert refused is None or refused.endswith('?'), f'{case} was not refused'
    image, sparse = smooth_image(11, HEIGHT, WIDTH), sparse_frame()
    result = completer.complete(image, sparse, intrinsics=camera_matrix(HEIGHT, WIDTH))
    assert result.depth.shape == result.confidence.shape == (HEIGHT, WIDTH)
    assert np.all(np.isfinite(result.depth)) and np.all(np.isfinite(result.confidence))
    if 'processing_size' in overrides:
        assert max(model.preprocess(image, 42).shape[-2:]) == 42
    if 'target_modules' in overrides:
        adapted = [name for name, module in model.network.named_modules()
                   if hasattr(module, 'lora_A')]
        assert adapted == ['pixel_decoder.depth_layer.to_depth_lr']
    if 'max_depth' in overrides:
        assert result.depth.min() >= 4.0 and result.depth.max() <= 5.0
    if 'min_points' in overrides or overrides.get('iterations') == 0:
        assert result.status.value == 'alignment_only' and result.iterations == 0
    else:
        assert result.iterations >= 1


def test_too_few_points_with_the_error_policy_is_an_input_error(base_network):
    completer = DepthCompleter(UniDepthModel(copy.deepcopy(base_network)),
                               config(min_points=10_000, few_points='error'))
    with pytest.raises(InsufficientSparseDepthError, match='min_points'):
        completer.complete(smooth_image(12, HEIGHT, WIDTH), sparse_frame(),
                           intrinsics=camera_matrix(HEIGHT, WIDTH))
