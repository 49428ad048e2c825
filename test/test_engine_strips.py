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

"""Decoding the high-resolution tail in strips of rows gives the full decode's numbers."""

from __future__ import annotations

import copy

from conftest import smooth_image, tiny_network
from lrda_ros.engine import DepthCompleter, DepthModel, TTOConfig
from lrda_ros.engine.resampling import BandResizes
from lrda_ros.engine.strips import decode_in_strips, row_bands, source_rows, upsample_rows
import numpy as np
import pytest
import torch
import torch.nn.functional as F


def test_row_bands_partition_the_rows():
    assert row_bands(10, 3) == [(0, 3), (3, 7), (7, 10)]
    assert row_bands(4, 9) == [(0, 1), (1, 2), (2, 3), (3, 4)]  # never empty
    assert row_bands(5, 1) == [(0, 5)]


@pytest.mark.parametrize('size_in,size_out', [(7, 14), (9, 31), (20, 13)])
def test_upsampling_a_band_matches_the_whole_image(size_in, size_out):
    image = torch.randn(1, 3, size_in, 6)
    full = F.interpolate(image, size=(size_out, 11), mode='bilinear', align_corners=True)
    for rows in [(0, 3), (4, size_out - 2), (size_out - 1, size_out)]:
        first, stop = source_rows(*rows, size_in, size_out)
        band = upsample_rows(image[:, :, first:stop], first, size_in, rows, (size_out, 11))
        torch.testing.assert_close(band, full[:, :, rows[0]:rows[1]], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize('dtype', [torch.float32, torch.bfloat16])
@pytest.mark.parametrize('size_in,size_out', [(7, 14), (9, 31), (20, 13)])
def test_a_band_resized_by_gathers_is_pytorchs_resize_and_its_gradient(dtype, size_in, size_out):
    generator = torch.Generator().manual_seed(size_in)
    image = torch.randn(1, 4, size_in, 6, generator=generator)
    resizes = BandResizes()
    for rows in [(0, 3), (4, size_out - 2), (size_out - 1, size_out), (4, size_out - 2)]:
        first, stop = source_rows(*rows, size_in, size_out)
        band = image[:, :, first:stop].to(dtype).contiguous(memory_format=torch.channels_last)
        band.requires_grad_()
        resized = resizes.upsample_rows(band, first, size_in, rows, (size_out, 11))
        assert resized.dtype == dtype
        assert resized.is_contiguous(memory_format=torch.channels_last)
        # the reference: PyTorch's resize of the whole image in float32 (its source coordinates
        # in float32 too), and its gradient
        whole = band.detach().float().requires_grad_()
        padded = F.pad(whole, (0, 0, first, size_in - stop))
        expected = F.interpolate(padded, size=(size_out, 11), mode='bilinear',
                                 align_corners=True)[:, :, rows[0]:rows[1]]
        weights = torch.randn(expected.shape, generator=generator)
        (expected_grad,) = torch.autograd.grad((weights * expected).sum(), whole)
        (grad,) = torch.autograd.grad((weights.to(dtype) * resized).sum(), band)
        # float32: rounding of the bilinear weights; bfloat16: the weights and the output
        # rounded to 8 bits (relative 2**-8 each), on values of order 1
        tolerance = 1e-6 if dtype == torch.float32 else 2e-2
        torch.testing.assert_close(resized.float(), expected, rtol=tolerance, atol=tolerance)
        torch.testing.assert_close(grad.float(), expected_grad, rtol=tolerance,
                                   atol=tolerance * float(expected_grad.abs().max()))
        if dtype == torch.float32:  # PyTorch's kernels, to the last digit
            assert torch.equal(resized, upsample_rows(band, first, size_in, rows, (size_out, 11)))
    # bfloat16: gathers, the repeated band reusing its matrices; float32: none built
    assert len(resizes._matrices) == (3 if dtype == torch.bfloat16 else 0)


def _adapted_model(seed: int, levels: int = 4) -> tuple[DepthModel, list[torch.Tensor]]:
    model = DepthModel(tiny_network(seed=seed, levels=levels))
    completer = DepthCompleter(model, TTOConfig(device='cpu'))
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():  # non-trivial adapters
        for parameter in completer.adaptation.parameters:
            parameter.add_(0.05 * torch.randn(parameter.shape, generator=generator))
    return model, completer.adaptation.parameters


@pytest.mark.parametrize('processing_size, levels', [(None, 4), (40, 4), (40, 2)])
@pytest.mark.parametrize('strips', [2, 5, 1000])
def test_strip_decoding_matches_the_full_decode(processing_size, levels, strips):
    # Two levels: the tail's fusion layer is the decoder's first (nothing fused before it).
    model, _ = _adapted_model(4, levels)
    image = smooth_image(2, 61, 83)
    encoded = model.encode(model.preprocess(image, processing_size), image.shape[:2])
    with torch.no_grad():
        full = model.decode(encoded)
        banded = decode_in_strips(model, encoded, strips)
    assert banded.shape == full.shape
    torch.testing.assert_close(banded, full, rtol=1e-5, atol=1e-5)


def test_tto_in_strips_follows_the_same_trajectory():
    network = tiny_network(seed=5)
    image = smooth_image(6, 70, 90)
    rng = np.random.default_rng(1)
    sparse = np.zeros(image.shape[:2], np.float32)
    index = rng.choice(sparse.size, 300, replace=False)
    sparse.flat[index] = rng.uniform(2, 6, 300)
    results = {}
    for strips in (1, 4):
        completer = DepthCompleter(DepthModel(copy.deepcopy(network)),
                                   TTOConfig(device='cpu', iterations=5, tail_strips=strips))
        results[strips] = completer.complete(image, sparse)
    # Same numbers up to rounding. (Adam's normalized steps amplify rounding differences over
    # many steps on this tiny random network, so a few steps are compared.)
    np.testing.assert_allclose(results[4].losses, results[1].losses, rtol=1e-4)
    np.testing.assert_allclose(results[4].depth, results[1].depth, rtol=1e-4, atol=1e-4)


def test_tail_strips_must_be_positive():
    with pytest.raises(ValueError, match='tail_strips'):
        TTOConfig(tail_strips=0)
