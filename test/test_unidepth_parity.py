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
Parity with the official UniDepth code (ViT-S): the same random weights, the same outputs.

Needs the ``unidepth`` package of the UniDepth repository importable, with its ``configs/``
folder beside it (a source checkout on PYTHONPATH, with the imports it needs: einops, timm,
torchvision, scipy, wandb); skipped otherwise. Random weights are enough: loading by name and
computing the same function is what is checked, for the network and for the whole inference
(padding, resizing, camera scaling, resizing back) at sizes that need each step.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

unidepth = pytest.importorskip(
    'unidepth.models.unidepthv2.unidepthv2',
    reason='the official UniDepth code (lpiccinelli-eth/UniDepth) is not importable')

from lrda_ros.engine.unidepth import (  # noqa: E402, I100
    UniDepthModel, UniDepthV2Config, UniDepthV2Network)


@pytest.fixture(scope='module')
def official_and_ours():
    """Return the official ViT-S model and ours, holding one random state dict."""
    root = Path(unidepth.__file__).resolve().parents[3]
    config_file = root / 'configs' / 'config_v2_vits14.json'
    if not config_file.is_file():
        pytest.skip(f'{config_file} not found: put a UniDepth source checkout on PYTHONPATH')
    config = json.loads(config_file.read_text())
    config['model']['pixel_encoder']['pretrained'] = None  # no download
    torch.manual_seed(0)
    official = unidepth.UniDepthV2(config).eval()
    # The official init leaves layer scales at 1 and several biases at 0: perturb every
    # tensor so each weight matters to the comparison.
    generator = torch.Generator().manual_seed(1)
    state = {key: value + 0.02 * torch.randn(value.shape, generator=generator)
             for key, value in official.state_dict().items()}
    official.load_state_dict(state)
    ours = UniDepthV2Network(UniDepthV2Config.from_official(config)).eval()
    ours.load_state_dict(state, strict=True)
    return official, ours


def _camera(intrinsics: torch.Tensor):
    from unidepth.utils.camera import BatchCamera, Pinhole

    return BatchCamera.from_camera(Pinhole(K=intrinsics.clone()))


@pytest.mark.parametrize('given_camera', [False, True])
def test_network_outputs_agree(official_and_ours, given_camera):
    official, ours = official_and_ours
    torch.manual_seed(2)
    pixels = torch.randn(1, 3, 266, 378)
    intrinsics = torch.tensor([[[310.0, 0.0, 190.0], [0.0, 300.0, 130.0], [0.0, 0.0, 1.0]]])
    inputs = {'image': pixels.clone()}
    if given_camera:
        inputs['camera'] = _camera(intrinsics)
    with torch.no_grad():
        _, expected = official.encode_decode(inputs, image_metas=[])
        actual = ours(pixels, intrinsics if given_camera else None)
    for key in ('depth', 'confidence', 'rays'):
        torch.testing.assert_close(actual[key], expected[key], rtol=1e-4, atol=1e-5)
    if not given_camera:  # with a camera, the official code still reports its own guess
        torch.testing.assert_close(actual['intrinsics'], expected['intrinsics'], rtol=1e-5,
                                   atol=1e-4)


@pytest.mark.parametrize('height, width, given_camera', [
    (476, 644, True),    # a size both keep as it is (multiples of 14, in the pixel range)
    (480, 640, True),    # VGA: stretched to multiples of 14, K scaled
    (480, 640, False),   # the camera head's own K
    (375, 1242, True),   # KITTI: wider than the training ratios, padded; above the pixel range
    (300, 120, True),    # taller than the training ratios, padded; below the pixel range
])
def test_engine_prediction_agrees_with_official_infer(official_and_ours, height, width,
                                                      given_camera):
    official, ours = official_and_ours
    rng = np.random.default_rng(3)
    image = rng.integers(0, 255, (height, width, 3), dtype=np.uint8)
    intrinsics = np.array([[0.8 * width, 0.0, width / 2 + 3.0],
                           [0.0, 0.8 * width, height / 2 - 2.0], [0.0, 0.0, 1.0]])
    camera = torch.from_numpy(intrinsics).float()[None] if given_camera else None
    expected = official.infer(torch.from_numpy(image).permute(2, 0, 1), camera)
    model = UniDepthModel(ours)
    K = intrinsics if given_camera else None
    np.testing.assert_allclose(model.predict(image, intrinsics=K),
                               expected['depth'][0, 0].numpy(), rtol=1e-4, atol=1e-5)
    # The confidence the node publishes: the same resize back and crop as the depth.
    encoded = model.encode(model.preprocess(image, None), image.shape[:2], K)
    _, confidence = model.decode_with_confidence(encoded)
    np.testing.assert_allclose(confidence[0].numpy(), expected['confidence'][0, 0].numpy(),
                               rtol=1e-4, atol=1e-5)
