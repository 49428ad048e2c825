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
Depth Anything 3 against the official code: the same weights, the same outputs; its loading.

The official networks (``DepthAnything3Net`` from ``depth_anything_3`` 0.1.1) and ours hold the
same random weights; both see the image as the official input processor prepares it (its
own resize, then ImageNet normalization). Tolerance: 1e-5 of each output's largest value,
float32 (the measured differences are about 1e-6: the same operations in another order).
The metric model's ViT-L has 8 of its 24 blocks here (out_layers 1, 3, 5, 7 instead of 4,
11, 17, 23), which CI's time allows; the blocks are the same modules whatever the depth.
"""

from __future__ import annotations

from dataclasses import replace
import json

from da3_official import official_api, official_network, official_resize
from lrda_ros.engine import load_depth_model
from lrda_ros.engine.da3 import da3_processing_shape, DA3Model, DA3Network, preset
from lrda_ros.engine.da3.loading import build_network, official_names
from lrda_ros.engine.loading import ModelLoadError
from lrda_ros.engine.model import IMAGENET_MEAN, IMAGENET_STD
import numpy as np
import pytest
import torch

TOLERANCE = 1e-5
#: Two images: one whose sides are no multiple of 14 (KITTI's), one that is already 504 wide.
IMAGE_SIZES = ((375, 1242), (378, 504))
SHALLOW_LAYERS = (1, 3, 5, 7)


def _image(height: int, width: int, seed: int) -> np.ndarray:
    """Return a smooth random image (a coarse random grid, bilinearly enlarged)."""
    rng = np.random.default_rng(seed)
    coarse = torch.from_numpy(rng.random((1, 3, height // 16 + 2, width // 16 + 2)))
    image = torch.nn.functional.interpolate(coarse, size=(height, width), mode='bilinear')
    return (image[0].permute(1, 2, 0).numpy() * 255).round().astype(np.uint8)


def _official_input(rgb: np.ndarray) -> torch.Tensor:
    """Return the official input: its resize, ToTensor (/255), ImageNet normalization."""
    resized = official_resize(rgb, 504).astype(np.float32) / 255.0
    mean, std = np.array(IMAGENET_MEAN, np.float32), np.array(IMAGENET_STD, np.float32)
    normalized = (resized - mean) / std
    return torch.from_numpy(normalized).permute(2, 0, 1)[None].contiguous()


def _randomized(network: torch.nn.Module) -> torch.nn.Module:
    """Give the zero-initialized tokens random values (PyTorch's init for the rest)."""
    generator = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for name, parameter in network.named_parameters():
            if name.endswith(('cls_token', 'pos_embed', 'camera_token')):
                parameter.copy_(0.02 * torch.randn(parameter.shape, generator=generator))
    return network


def _close(ours: torch.Tensor, theirs: torch.Tensor) -> float:
    return float((ours - theirs).abs().max() / theirs.abs().max())


@pytest.fixture(scope='module')
def small_pair(tmp_path_factory):
    """Return the official DA3-Small, saved by the official code, and ours loaded from it."""
    torch.manual_seed(0)
    official = official_api().DepthAnything3(model_name='da3-small')
    _randomized(official)
    folder = tmp_path_factory.mktemp('da3-small')
    official.save_pretrained(str(folder))
    return official.model.eval(), load_depth_model(str(folder)), folder


@pytest.fixture(scope='module')
def metric_pair():
    """Return a shallow DA3METRIC-LARGE, official and ours, holding one random state dict."""
    def shallow(config):
        config.net.out_layers = list(SHALLOW_LAYERS)

    torch.manual_seed(0)
    official = official_network('da3metric-large', shallow)
    official.backbone.pretrained.blocks = official.backbone.pretrained.blocks[:8]
    _randomized(official)
    config = replace(preset('da3metric-large'), depth=8, out_layers=SHALLOW_LAYERS)
    ours = DA3Model(build_network(config, official.state_dict(), 'the official network'))
    return official, ours


def _ours(model: DA3Model, pixels: torch.Tensor, intrinsics=None) -> dict:
    with torch.no_grad():
        encoded = model.encode(pixels, tuple(pixels.shape[-2:]), intrinsics)
        outputs = {'depth': model.decode(encoded)}
        if model.has_confidence:
            outputs['depth'], outputs['depth_conf'] = model.decode_with_confidence(encoded)
        if model.has_sky:
            outputs['sky'] = model.sky(encoded)
    return outputs


@pytest.mark.parametrize('size', IMAGE_SIZES)
def test_da3_small_depth_and_confidence_match_the_official_network(small_pair, size):
    official, ours, _ = small_pair
    pixels = _official_input(_image(*size, seed=1))
    with torch.no_grad():
        expected = official(pixels[:, None])
    outputs = _ours(ours, pixels)
    assert _close(outputs['depth'], expected.depth[0]) < TOLERANCE
    # The engine's confidence output grows where depth is less reliable: 1 / (exp(c) + 1).
    assert _close(outputs['depth_conf'], 1.0 / expected.depth_conf[0]) < TOLERANCE
    assert outputs['depth'].shape[-2:] == pixels.shape[-2:]


@pytest.mark.parametrize('size', IMAGE_SIZES)
def test_da3_metric_depth_and_sky_match_the_official_network(metric_pair, size):
    from depth_anything_3.utils.alignment import apply_metric_scaling

    official, ours = metric_pair
    rgb = _image(*size, seed=2)
    pixels = _official_input(rgb)
    intrinsics = np.array([[721.5, 0.0, 609.6], [0.0, 721.5, 172.9], [0.0, 0.0, 1.0]])
    # The official conversion takes K of the network input: the image's, resized with it.
    network_k = intrinsics.copy()
    network_k[0] *= pixels.shape[-1] / size[1]
    network_k[1] *= pixels.shape[-2] / size[0]
    with torch.no_grad():
        expected = official(pixels[:, None])
        metres = apply_metric_scaling(expected.depth, torch.from_numpy(network_k)[None, None])
    # input_size is the image's: our encode scales its K to the network input.
    with torch.no_grad():
        encoded = ours.encode(pixels, size, intrinsics)
        depth, sky = ours.decode(encoded), ours.sky(encoded)
    # The official forward paints its sky (sky >= 0.3) with the rest's 99th percentile; this
    # package leaves the sky's depth unused (far_depth), so depth is compared off the sky.
    ground = expected.sky[0] < 0.3
    assert ground.float().mean() > 0.5
    assert _close(depth[ground], metres[0].float()[ground]) < TOLERANCE
    assert _close(sky, expected.sky[0]) < TOLERANCE


def test_metric_depth_without_the_camera_is_one_clear_error(metric_pair):
    _, ours = metric_pair
    with pytest.raises(ValueError, match='camera matrix K'):
        ours.encode(torch.zeros(1, 3, 56, 56), (56, 56), None)


@pytest.mark.parametrize('size', IMAGE_SIZES + ((480, 640), (720, 1280), (333, 500)))
def test_preprocessing_gives_the_official_sizes_and_close_pixels(size):
    rgb = _image(*size, seed=4)
    official = _official_input(rgb)
    assert da3_processing_shape(*size, 504) == tuple(official.shape[-2:])
    ours = DA3Model(DA3Network(preset('da3-small'))).preprocess(rgb, 504)
    # One antialiased bicubic resize against OpenCV's area (or cubic) and the official
    # rounding to uint8: close, not equal. Normalized units: one grey level is about 0.017.
    assert float((ours - official).abs().mean()) < 2 * 0.0175


def test_official_renames_are_the_official_functions():
    from depth_anything_3.utils.model_loading import (
        convert_general_state_dict, convert_metric_state_dict)

    names = ['module.net.pretrained.blocks.0.attn.qkv.weight',
             'module.net.pretrained.camera_token', 'module.net.pretrained.camera_token_extra',
             'module.all_heads.head.scratch.refinenet1.out_conv.weight',
             'module.all_heads.head.scratch.output_conv2_additional.sky_mask.0.weight',
             'module.all_heads.head.scratch.refinenet2_ray.out_conv.bias',
             'module.all_heads.camera_cond_head.more_mlps.0.weight',
             'module.all_heads.camera_head.fc_rot.weight', 'module.gaussian_param_head.x']
    state = {name: torch.zeros(1) for name in names}
    general = {key.removeprefix('model.') for key in convert_general_state_dict(state)}
    # Our file reader strips a data-parallel 'module.' first, as the metric files lack it.
    assert set(official_names({k.removeprefix('module.'): v for k, v in state.items()})) \
        == general
    bare = {name.removeprefix('module.'): torch.zeros(1) for name in names}
    metric = {key.removeprefix('model.') for key in convert_metric_state_dict(bare)}
    assert set(official_names(bare)) == metric


def test_a_training_layout_checkpoint_loads_with_the_official_renames(small_pair, tmp_path):
    official, ours, _ = small_pair
    # Undo the official renames: the layout the training checkpoints (.pth) have.
    state = {}
    for key, value in official.state_dict().items():
        key = key.replace('backbone.', 'net.', 1).replace('.camera_token', '.camera_token_extra')
        key = key.replace('head.', 'all_heads.head.', 1) if key.startswith('head.') else key
        key = key.replace('cam_enc.', 'all_heads.camera_cond_head.', 1)
        key = key.replace('cam_dec.', 'all_heads.camera_head.', 1)
        state['module.' + key.replace('_aux.', '_ray.')] = value
    torch.save(state, tmp_path / 'da3_small_train.pth')
    (tmp_path / 'config.json').write_text(json.dumps({'model_name': 'da3-small'}))
    loaded = load_depth_model(str(tmp_path / 'da3_small_train.pth'))
    for mine, theirs in zip(loaded.network.state_dict().values(),
                            ours.network.state_dict().values()):
        assert torch.equal(mine, theirs)


def test_a_saved_folder_loads_every_tensor_and_names_its_model(small_pair):
    _, ours, folder = small_pair
    assert isinstance(ours, DA3Model) and ours.config.name == 'da3-small'
    assert ours.source == str(folder) and ours.has_confidence and not ours.has_sky
    # The weights file alone: the model from the config.json beside it.
    alone = load_depth_model(str(folder / 'model.safetensors'))
    assert all(torch.equal(a, b) for a, b in zip(alone.network.state_dict().values(),
                                                 ours.network.state_dict().values()))


def _one_line(error: ModelLoadError) -> str:
    text = str(error.value)
    assert '\n' not in text and 'Pass the model as' in text
    return text


def test_foreign_and_truncated_checkpoints_stop_with_one_line(small_pair, tmp_path):
    from lrda_ros.engine.loading import demo_prior_dir

    _, _, folder = small_pair
    v2 = demo_prior_dir()
    # DA3 weights under a Depth Anything V2 config.json
    da3_as_v2 = tmp_path / 'da3_as_v2'
    da3_as_v2.mkdir()
    (da3_as_v2 / 'config.json').write_bytes((v2 / 'config.json').read_bytes())
    (da3_as_v2 / 'model.safetensors').symlink_to(folder / 'model.safetensors')
    with pytest.raises(ModelLoadError) as error:
        load_depth_model(str(da3_as_v2))
    assert 'missing' in _one_line(error) and 'unexpected' in _one_line(error)
    # Depth Anything V2 weights under a DA3 config.json
    v2_as_da3 = tmp_path / 'v2_as_da3'
    v2_as_da3.mkdir()
    (v2_as_da3 / 'config.json').write_bytes((folder / 'config.json').read_bytes())
    (v2_as_da3 / 'model.safetensors').symlink_to(v2 / 'model.safetensors')
    with pytest.raises(ModelLoadError) as error:
        load_depth_model(str(v2_as_da3))
    assert 'not a complete da3-small checkpoint' in _one_line(error)
    # Truncated weights, of each backbone's folder
    for source in (folder, v2):
        truncated = tmp_path / f'truncated_{source.name}'
        truncated.mkdir()
        (truncated / 'config.json').write_bytes((source / 'config.json').read_bytes())
        data = (source / 'model.safetensors').read_bytes()
        (truncated / 'model.safetensors').write_bytes(data[:len(data) // 2])
        with pytest.raises(ModelLoadError) as error:
            load_depth_model(str(truncated))
        text = str(error.value)  # named as such, not as a foreign model
        assert '\n' not in text and 'truncated or corrupt' in text, text


def test_model_names_resolve_from_the_cache_only_and_say_so(monkeypatch):
    monkeypatch.setenv('HF_HUB_OFFLINE', '1')
    with pytest.raises(ModelLoadError) as error:
        load_depth_model('da3-small')
    assert 'depth-anything/DA3-SMALL' in _one_line(error) and 'HF_HUB_OFFLINE' in str(error.value)


def test_model_names_and_hub_ids_load_from_the_hugging_face_cache(small_pair, tmp_path,
                                                                  monkeypatch):
    from huggingface_hub import constants

    _, ours, folder = small_pair
    # The cache's layout (huggingface_hub): models--<owner>--<name>/refs/main names a snapshot.
    repo = tmp_path / 'models--depth-anything--DA3-SMALL'
    snapshot = repo / 'snapshots' / ('0' * 40)
    snapshot.mkdir(parents=True)
    (repo / 'refs').mkdir()
    (repo / 'refs' / 'main').write_text('0' * 40)
    for name in ('config.json', 'model.safetensors'):
        (snapshot / name).symlink_to(folder / name)
    monkeypatch.setattr(constants, 'HF_HUB_CACHE', str(tmp_path))
    monkeypatch.setenv('HF_HUB_OFFLINE', '1')
    for spec in ('da3-small', 'depth-anything/DA3-SMALL', 'depth-anything/da3-small'):
        loaded = load_depth_model(spec)
        assert isinstance(loaded, DA3Model) and loaded.source == spec
        assert all(torch.equal(a, b) for a, b in zip(loaded.network.state_dict().values(),
                                                     ours.network.state_dict().values()))
