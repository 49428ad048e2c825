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

"""The sparse head evaluation is exact: same values and adapter gradients as decoding densely."""

from __future__ import annotations

import copy

from conftest import smooth_image, tiny_network
from lrda_ros.engine import DepthCompleter, DepthModel, TTOConfig
from lrda_ros.engine import sparse_head
from lrda_ros.engine.compiled import bucket_size, padded_samples
from lrda_ros.engine.completion import SparseSamples
from lrda_ros.engine.model import sample_prediction
from lrda_ros.engine.resampling import bilinear_gather, bilinear_matrix, transpose_csr
from lrda_ros.engine.sparse_head import (
    _conv2_bfloat16, effective_conv, REDUCTION_BLOCK_ROWS, SparseHeadPlan, tall_transpose_product)
from lrda_ros.engine.strips import conv1_size, tail_inputs, tail_runs_in_bands
import numpy as np
import pytest
import torch
import torch.nn.functional as F


def _adapted(metric: bool, processing_size: int | None):
    options = {'depth_estimation_type': 'metric', 'max_depth': 20} if metric else {}
    model = DepthModel(tiny_network(seed=1, **options))
    completer = DepthCompleter(model, TTOConfig(device='cpu', processing_size=processing_size))
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():  # make the adapters non-trivial
        for parameter in completer.adaptation.parameters:
            parameter.add_(0.05 * torch.randn(parameter.shape, generator=generator))
    return model, completer.adaptation.parameters


def _frame(model, image_seed: int, processing_size: int | None, seed: int,
           lidar_rows: tuple[int, int] | None):
    """Return a 61x83 image, its network input and features, and 300 LiDAR pixels on rows."""
    image = smooth_image(image_seed, 61, 83)
    pixel_values = model.preprocess(image, processing_size)
    encoded = model.encode(pixel_values, image.shape[:2])
    generator = torch.Generator().manual_seed(seed)
    first, stop = lidar_rows or (0, 61)
    rows = torch.randint(first, stop, (300,), generator=generator)
    cols = torch.randint(0, 83, (300,), generator=generator)
    return image, pixel_values, encoded, rows, cols


@pytest.mark.parametrize('metric,processing_size,strips,lidar_rows', [
    (False, None, 1, None), (False, 40, 1, None), (False, 120, 1, None), (True, None, 1, None),
    (True, 40, 1, None), (True, 120, 1, None), (False, None, 3, None), (True, 120, 4, None),
    (False, 40, 50, None),
    # LiDAR on a band of rows (KITTI: the lower two thirds): the tail runs on that band only.
    (False, None, 1, (25, 61)), (True, 120, 1, (10, 40)), (False, 40, 1, (30, 61))])
def test_values_and_gradients_match_dense_decoding(metric, processing_size, strips, lidar_rows):
    model, parameters = _adapted(metric, processing_size)
    image, pixel_values, encoded, rows, cols = _frame(model, 0, processing_size, 1, lidar_rows)
    first, stop = lidar_rows or (0, 61)
    # borders
    rows[:4] = torch.tensor([first, stop - 1, (first + stop) // 2, stop - 1])
    cols[:4] = torch.tensor([0, 82, 0, 0])
    plan = SparseHeadPlan.build(rows, cols, image.shape[:2], tuple(pixel_values.shape[-2:]))
    if lidar_rows is not None:  # the band path runs (on fewer rows than the whole tail)
        grid = conv1_size(model, encoded)
        assert grid == tail_inputs(model, encoded).conv1_size
        assert plan._grid_rows(grid)[1] - plan._grid_rows(grid)[0] < 0.9 * grid[0]

    dense = sample_prediction(model.decode(encoded), rows, cols, image.shape[:2])
    sparse = plan.evaluate(model, encoded, strips)
    torch.testing.assert_close(sparse, dense, rtol=1e-5, atol=1e-5)

    weights = torch.linspace(0.5, 1.5, 300)
    dense_grads = torch.autograd.grad((weights * dense).sum(), parameters, allow_unused=True,
                                      retain_graph=True)
    sparse_grads = torch.autograd.grad((weights * sparse).sum(), parameters, allow_unused=True)
    checked = 0
    for dense_grad, sparse_grad in zip(dense_grads, sparse_grads):
        if dense_grad is None:
            assert sparse_grad is None or not sparse_grad.any()
            continue
        torch.testing.assert_close(sparse_grad, dense_grad, rtol=1e-4,
                                   atol=1e-5 * float(dense_grad.abs().max()) + 1e-9)
        checked += 1
    assert checked > 10


def test_tail_strips_build_their_sampling_matrices_once_per_frame(monkeypatch):
    # Every step evaluates the plan again (and checkpointing recomputes each band in the
    # backward pass): the bands' matrices are the frame's, built at its first step.
    model, parameters = _adapted(False, None)
    image, pixel_values, encoded, rows, cols = _frame(model, 0, None, 1, None)
    plan = SparseHeadPlan.build(rows, cols, image.shape[:2], tuple(pixel_values.shape[-2:]))
    builds = []

    def counted(*args, **kwargs):
        builds.append(args[2])  # the conv1 size
        return bilinear_matrix(*args, **kwargs)

    monkeypatch.setattr(sparse_head, 'bilinear_matrix', counted)
    first = plan.evaluate(model, encoded, strips=3)
    torch.autograd.grad(first.sum(), parameters, allow_unused=True)
    bands = len(builds)
    assert bands == len(plan._bands(3)) > 1
    for _ in range(2):  # two more steps
        values = plan.evaluate(model, encoded, strips=3)
        torch.autograd.grad(values.sum(), parameters, allow_unused=True)
    assert len(builds) == bands
    torch.testing.assert_close(values, first)  # the same weights: the same values


@pytest.mark.parametrize('lidar_rows', [None, (25, 61)])
def test_fixed_shape_plans_match_dense_decoding_at_the_real_pixels(lidar_rows):
    # Compiled steps' plans: samples and needed pixels padded to buckets, all conv1 rows read.
    model, parameters = _adapted(False, None)
    image, pixel_values, encoded, rows, cols = _frame(model, 5, None, 5, lidar_rows)
    samples, _ = padded_samples(SparseSamples(rows, cols, torch.ones(300)), torch.ones(300))
    assert samples.rows.numel() == 320 and not samples.weights[300:].any()
    plan = SparseHeadPlan.build(samples.rows, samples.cols, image.shape[:2],
                                tuple(pixel_values.shape[-2:]), fixed_shapes=True)
    unpadded = SparseHeadPlan.build(rows, cols, image.shape[:2], tuple(pixel_values.shape[-2:]))
    needed = unpadded.window_positions.shape[0]
    assert plan.window_positions.shape[0] == bucket_size(needed) > needed
    grid = conv1_size(model, encoded)
    assert plan._grid_rows(grid) == (0, grid[0])

    dense = sample_prediction(model.decode(encoded), rows, cols, image.shape[:2])
    sparse = plan.evaluate(model, encoded)
    torch.testing.assert_close(sparse[:300], dense, rtol=1e-5, atol=1e-5)
    dense_grads = torch.autograd.grad(dense.sum(), parameters, allow_unused=True)
    sparse_grads = torch.autograd.grad((samples.weights * sparse).sum(), parameters,
                                       allow_unused=True)
    checked = 0
    for dense_grad, sparse_grad in zip(dense_grads, sparse_grads):
        if dense_grad is not None and dense_grad.any():
            torch.testing.assert_close(sparse_grad, dense_grad, rtol=1e-4,
                                       atol=1e-5 * float(dense_grad.abs().max()) + 1e-9)
            checked += 1
    assert checked > 10


@pytest.mark.parametrize('dtype', [torch.float32, torch.bfloat16])
def test_a_lidar_on_every_row_runs_the_band_path_in_bfloat16_only(dtype):
    # bfloat16 runs the tail on the LiDAR's rows even when they are all of them (its resizes
    # are gathers); float32 decodes the neck whole there, as it always did.
    model, _ = _adapted(False, None)
    image = smooth_image(4, 61, 83)
    pixel_values = model.preprocess(image, None)
    generator = torch.Generator().manual_seed(4)
    rows = torch.randint(0, 61, (300,), generator=generator)
    cols = torch.randint(0, 83, (300,), generator=generator)
    rows[:2] = torch.tensor([0, 60])
    plan = SparseHeadPlan.build(rows, cols, image.shape[:2], tuple(pixel_values.shape[-2:]))
    with torch.autocast('cpu', dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
        encoded = model.encode(pixel_values, image.shape[:2])
        dense = sample_prediction(model.decode(encoded), rows, cols, image.shape[:2])
        sparse = plan.evaluate(model, encoded)
    assert bool(plan._band_resizes._matrices) == (dtype == torch.bfloat16)
    # bfloat16: the two paths round differently (8-bit mantissas, relative 2**-8 per rounding)
    tolerance = 1e-5 if dtype == torch.float32 else 3e-2
    torch.testing.assert_close(sparse, dense.float(), rtol=tolerance,
                               atol=tolerance * float(dense.detach().abs().max()))


def test_a_tail_that_cannot_run_in_bands_is_decoded_whole():
    # A head that reads a coarser fusion level (transformers' head_in_index): no band rule
    # holds, the steps decode the neck whole and gather only the head's windows.
    network = tiny_network(seed=2)
    network.head.head_in_index = 2
    assert not tail_runs_in_bands(DepthModel(network))
    assert tail_runs_in_bands(DepthModel(tiny_network(seed=2)))
    model = DepthModel(network)
    DepthCompleter(model, TTOConfig(device='cpu'))  # the adapters
    image = smooth_image(3, 61, 83)
    pixel_values = model.preprocess(image, None)
    encoded = model.encode(pixel_values, image.shape[:2])
    generator = torch.Generator().manual_seed(2)
    rows = torch.randint(0, 61, (200,), generator=generator)
    cols = torch.randint(0, 83, (200,), generator=generator)
    plan = SparseHeadPlan.build(rows, cols, image.shape[:2], tuple(pixel_values.shape[-2:]))
    dense = sample_prediction(model.decode(encoded), rows, cols, image.shape[:2])
    torch.testing.assert_close(plan.evaluate(model, encoded), dense, rtol=1e-5, atol=1e-5)


def test_the_window_gather_is_the_bilinear_upsampling():
    # The gather of a bilinear matrix against F.interpolate itself, at positions with
    # partial and zero-padded rows.
    features = torch.randn(1, 5, 7, 9, dtype=torch.bfloat16)
    size = (20, 27)
    reference = F.interpolate(features.float(), size=size, mode='bilinear', align_corners=True)
    positions = torch.tensor([0, 13, 26, 27 * 7 + 5, 27 * 19 + 26, 300])
    valid = torch.tensor([True, True, True, False, True, True])
    rows = features[0].permute(1, 2, 0).reshape(-1, 5)
    matrix = bilinear_matrix(positions, size, (7, 9), valid)
    expected = reference[0].permute(1, 2, 0).reshape(-1, 5)[positions] * valid[:, None]
    sampled = bilinear_gather(matrix, rows.float())
    assert sampled.dtype == torch.float32
    torch.testing.assert_close(sampled, expected, rtol=1e-5, atol=1e-6)
    # bfloat16 features are sampled in bfloat16 (as F.interpolate does them), half stays float32
    sampled = bilinear_gather(matrix, rows)
    assert sampled.dtype == torch.bfloat16
    torch.testing.assert_close(sampled.float(), expected, rtol=1e-2, atol=1e-2)
    assert bilinear_gather(matrix, rows.half()).dtype == torch.float32
    # the transpose (the backward) against the dense transpose
    grad = torch.randn(len(positions), 5)
    torch.testing.assert_close(bilinear_gather(matrix.t().to_sparse_csr(), grad),
                               matrix.to_dense().t() @ grad, rtol=1e-5, atol=1e-6)


def test_the_transpose_is_pytorchs_conversion():
    generator = torch.Generator().manual_seed(5)
    positions = torch.randint(4 * 27, 20 * 27, (500,), generator=generator)  # rows 1-6 read
    valid = torch.rand(500, generator=generator) > 0.1
    matrix = bilinear_matrix(positions, (20, 27), (7, 9), valid, input_rows=(1, 7))
    ours, pytorchs = transpose_csr(matrix), matrix.t().to_sparse_csr()
    assert ours.shape == pytorchs.shape == (6 * 9, 500)
    assert torch.equal(ours.crow_indices(), pytorchs.crow_indices())
    assert torch.equal(ours.col_indices(), pytorchs.col_indices())
    assert ours.col_indices().dtype == pytorchs.col_indices().dtype == torch.int64
    # the same matrix (entries repeated within a row, e.g. an edge pixel's two equal corners,
    # may come in another order; to_dense sums them)
    assert torch.equal(ours.to_dense(), pytorchs.to_dense())
    assert torch.equal(ours.to_dense(), matrix.to_dense().t())
    # any CSR: empty rows (first, inner, last) and empty columns
    dense = torch.randn(7, 5, generator=generator) * (torch.rand(7, 5, generator=generator) > 0.5)
    dense[[0, 3, 6]] = 0
    dense[:, 2] = 0
    torch.testing.assert_close(transpose_csr(dense.to_sparse_csr()).to_dense(), dense.t(),
                               rtol=0, atol=0)


def test_effective_conv_folds_lora_into_the_weight():
    model, _ = _adapted(False, None)
    conv = model.network.head.conv2
    assert hasattr(conv, 'base_layer'), 'conv2 should carry a LoRA adapter'
    weight, bias = effective_conv(conv)
    x = torch.randn(1, conv.base_layer.in_channels, 9, 11)
    torch.testing.assert_close(F.conv2d(x, weight, bias, padding=1), conv(x), rtol=1e-5,
                               atol=1e-5)
    plain = torch.nn.Conv2d(3, 4, 3)
    assert effective_conv(plain)[0] is plain.weight


def _window_weight(weight: torch.Tensor) -> torch.Tensor:
    return weight.permute(0, 2, 3, 1).reshape(weight.shape[0], -1).double()


@pytest.mark.parametrize('trained_base', [False, True])
def test_conv2_over_bfloat16_windows_is_the_float64_product_and_its_gradients(trained_base):
    model, _ = _adapted(False, None)
    conv = model.network.head.conv2
    down, up, base = conv.lora_A['tto'].weight, conv.lora_B['tto'].weight, conv.base_layer
    base.weight.requires_grad_(trained_base)  # full decoder fine-tuning trains it
    generator = torch.Generator().manual_seed(3)
    patches = torch.randn(50, 9 * base.in_channels, generator=generator)
    patches = patches.to(torch.bfloat16).requires_grad_()
    output = _conv2_bfloat16(conv, patches)
    probe = torch.randn(output.shape, generator=generator)
    trained = [patches, down, up] + ([base.weight] if trained_base else [])
    grads = torch.autograd.grad((output * probe).sum(), trained)
    # The output against float64 from the same windows and float32 weights: the weights are
    # rounded to bfloat16 (relative 2**-9), products accumulate in float32, so each output is
    # within 2**-8 of the sum of its terms' magnitudes.
    x = patches.detach().double()
    frozen, low = _window_weight(base.weight.detach()), _window_weight(down.detach())
    high = conv.scaling['tto'] * up.detach().flatten(1).double()
    expected = x @ frozen.t() + base.bias.double() + (x @ low.t()) @ high.t()
    bound = 2 ** -8 * (x.abs() @ frozen.abs().t() + (x.abs() @ low.abs().t()) @ high.abs().t())
    assert ((output.double() - expected).abs() <= bound + 1e-6).all()
    # The gradients against autograd through the one product of the concatenated weight (what
    # the custom backward replaces): the same bfloat16 products, up to the rounding of a
    # bfloat16 result (2**-8 relative).
    weight = torch.cat([_window_weight(base.weight).float(),
                        _window_weight(down).float()]).to(torch.bfloat16)
    products = F.linear(patches, weight).float()
    reference = (products[:, :base.out_channels] + base.bias
                 + products[:, base.out_channels:] @ (conv.scaling['tto'] * up.flatten(1)).t())
    reference_grads = torch.autograd.grad((reference * probe).sum(), trained)
    for got, wanted in zip(grads, reference_grads):
        assert got.dtype == wanted.dtype
        torch.testing.assert_close(got.float(), wanted.float(), rtol=2 ** -8,
                                   atol=2 ** -8 * float(wanted.abs().max()))


def test_tto_with_the_sparse_head_follows_the_dense_trajectory():
    network = tiny_network(seed=2)
    image = smooth_image(4)
    rng = np.random.default_rng(0)
    sparse = np.zeros(image.shape[:2], np.float32)
    index = rng.choice(sparse.size, 200, replace=False)
    sparse.flat[index] = rng.uniform(2, 6, 200)
    results = {}
    for flag in (False, True):
        completer = DepthCompleter(DepthModel(copy.deepcopy(network)),
                                   TTOConfig(device='cpu', iterations=10, sparse_head=flag))
        results[flag] = completer.complete(image, sparse)
    np.testing.assert_allclose(results[True].losses, results[False].losses, rtol=2e-3)
    np.testing.assert_allclose(results[True].depth, results[False].depth, rtol=2e-3)


@pytest.mark.parametrize('rows', [100, REDUCTION_BLOCK_ROWS * 2, REDUCTION_BLOCK_ROWS * 3 + 17])
@pytest.mark.parametrize('dtype', [torch.float32, torch.bfloat16])
def test_the_tall_product_by_row_blocks_is_the_product(rows, dtype):
    generator = torch.Generator().manual_seed(rows)
    left = torch.randn(rows, 40, generator=generator).to(dtype)[:, 32:]  # a column slice
    right = torch.randn(rows, 288, generator=generator).to(dtype)
    expected = left.double().t() @ right.double()
    got = tall_transpose_product(left, right)
    assert got.dtype == torch.float32 and got.shape == (8, 288)
    # Sums in float32 in another order, bfloat16 inputs too (their products are exact in
    # float32): a block's partial sums rounded to bfloat16 (8 bits) would miss by about 2^-9.
    scale = expected.abs().max().item()
    torch.testing.assert_close(got.double(), expected, rtol=0, atol=1e-5 * scale)
