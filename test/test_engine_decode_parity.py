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
DepthModel's split encode + decode against transformers' own DepthAnything forward.

The package runs the backbone once and re-implements the DPT neck and head so the decoder can
be re-run alone (and with the fusion projection moved before its upsampling). Its output must
be transformers' ``predicted_depth`` for the same network input. Tolerance: fp32, eval mode,
``rtol = 1e-5`` and ``atol = 1e-5`` times the largest value (observed: below 1e-6 of it, the
rounding of the reordered 1x1 projection).
"""

from __future__ import annotations

import copy

from conftest import smooth_image, tiny_network
from lrda_ros.engine import DepthCompleter, DepthModel, TTOConfig
from lrda_ros.engine.model import IMAGENET_MEAN, IMAGENET_STD
import numpy as np
import pytest
import torch

RELATIVE_TOLERANCE = 1e-5
NETWORKS = [{}, {'depth_estimation_type': 'metric', 'max_depth': 20}, {'swiglu': True}]
# (image height, width, processing_size) -> network input (height, width).
SIZES = [((56, 70, None), (56, 70)),     # multiples of the patch: no resize
         ((60, 80, None), (56, 84)),     # rounded to the patch: one side down, one up
         ((100, 150, 126), (84, 126))]   # longer side capped: downscaled


def _varied_network(seed: int, **options) -> torch.nn.Module:
    """
    Return a tiny network whose prediction varies by tens of percent across an image.

    With PyTorch's default init the head's output is nearly its bias everywhere, so a wrong
    decoder would still agree to within the tolerance; larger output weights expose it.
    """
    network = tiny_network(seed=seed, **options)
    with torch.no_grad():
        network.head.conv3.weight.mul_(30.0)
    return network


def _assert_equal_to_rounding(depth: torch.Tensor, expected: torch.Tensor) -> None:
    assert float(expected.std()) > 0.05 * float(expected.mean())  # a map, not a constant
    torch.testing.assert_close(depth, expected, rtol=RELATIVE_TOLERANCE,
                               atol=RELATIVE_TOLERANCE * float(expected.abs().max()))


def _transformers_depth(network: torch.nn.Module, pixel_values: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return network(pixel_values).predicted_depth


def _package_depth(model: DepthModel, pixel_values: torch.Tensor,
                   image_size: tuple[int, int]) -> torch.Tensor:
    with torch.no_grad():
        return model.decode(model.encode(pixel_values, image_size))


@pytest.mark.parametrize('options', NETWORKS)
@pytest.mark.parametrize('size, network_input', SIZES)
def test_encode_and_decode_equal_the_transformers_forward(options, size, network_input):
    height, width, processing_size = size
    network = _varied_network(seed=3, **options)
    model = DepthModel(network)
    assert not network.training
    rgb = smooth_image(1, height, width)
    pixel_values = model.preprocess(rgb, processing_size)
    assert tuple(pixel_values.shape) == (1, 3, *network_input)
    expected = _transformers_depth(network, pixel_values)
    depth = _package_depth(model, pixel_values, (height, width))
    assert depth.shape == expected.shape == (1, *network_input)
    _assert_equal_to_rounding(depth, expected)


def test_adapters_attached_for_optimization_leave_the_decode_unchanged():
    reference = _varied_network(seed=3)
    model = DepthModel(copy.deepcopy(reference))
    # Channels-last layout and freshly injected LoRA (B = 0), as every frame starts.
    DepthCompleter(model, TTOConfig(device='cpu', dtype='float32', channels_last=True))
    pixel_values = model.preprocess(smooth_image(2, 70, 98), None)
    _assert_equal_to_rounding(_package_depth(model, pixel_values, (70, 98)),
                              _transformers_depth(reference, pixel_values))


def test_input_without_resize_matches_the_transformers_image_processor():
    try:  # transformers 5 names the PIL implementation apart from the torchvision one
        from transformers import DPTImageProcessorPil as Processor
    except ImportError:
        from transformers import DPTImageProcessor as Processor

    rgb = smooth_image(4, 56, 70)
    processor = Processor(do_resize=False, do_pad=False, image_mean=list(IMAGENET_MEAN),
                          image_std=list(IMAGENET_STD))
    expected = processor(images=rgb, return_tensors='pt').pixel_values
    pixel_values = DepthModel(tiny_network()).preprocess(rgb, None)
    np.testing.assert_allclose(pixel_values.numpy(), expected.numpy(), rtol=0, atol=1e-6)
