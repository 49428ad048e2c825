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

"""Every combination of dtype, sparse head, tail strips, warm start and device runs."""

from __future__ import annotations

import itertools

from conftest import smooth_image, tiny_network
from lrda_ros.engine import (
    CompletionStatus, DepthCompleter, DepthModel, TTOConfig, UnsupportedPrecisionError)
from lrda_ros.engine import resampling
from lrda_ros.engine.precision import check_precision, lacks_precision
import numpy as np
import pytest
import torch

DEVICES = ['cpu', pytest.param('cuda', marks=pytest.mark.cuda)]
MATRIX = list(itertools.product(('float32', 'bfloat16', 'float16'), (True, False), (1, 3),
                                (False, True)))


def sequence(count: int = 2):
    """Return frames of a panning smooth image with 250 sparse depths each."""
    rng = np.random.default_rng(4)
    frames = []
    for k in range(count):
        image = smooth_image(5, 60, 80 + 4 * count)[:, 4 * k:4 * k + 80].copy()
        sparse = np.zeros(image.shape[:2], np.float32)
        sparse.flat[rng.choice(sparse.size, 250, replace=False)] = rng.uniform(2, 6, 250)
        frames.append((image, sparse))
    return frames


def run(device: str, iterations: int = 6, **options):
    completer = DepthCompleter(DepthModel(tiny_network(seed=2)),
                               TTOConfig(device=device, iterations=iterations,
                                         warm_iterations=3, learning_rate=3e-2,
                                         schedule='paper', **options))  # fixed counts
    return [completer.complete(*frame) for frame in sequence()]


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('dtype,sparse,strips,warm', MATRIX)
def test_every_combination_gives_finite_depth(device, dtype, sparse, strips, warm):
    results = run(device, dtype=dtype, sparse_head=sparse, tail_strips=strips, warm_start=warm)
    for index, result in enumerate(results):
        assert np.isfinite(result.depth).all() and (result.depth > 0).all()
        assert result.status is CompletionStatus.OPTIMIZED
        assert result.warm_started == (warm and index > 0)
        assert result.iterations == (3 if warm and index > 0 else 6)
        # Adam amplifies rounding differences along a trajectory on this tiny random network,
        # so trajectories are not compared across precisions; the forward pass and the
        # gradients are (below). A cold frame's steps must gain; 'paper' returns the last
        # iterate, which may overshoot the best, and a warm frame starts near the previous
        # frame's optimum, where 3 reduced-precision steps may all overshoot.
        assert np.isfinite(result.final_loss)
        if not result.warm_started:
            assert min(result.losses[1:]) < result.losses[0]


@pytest.mark.parametrize('dtype', ['bfloat16', 'float16'])
@pytest.mark.parametrize('sparse', [True, False])
def test_reduced_precision_predicts_what_float32_does(dtype, sparse):
    # This network's disparity varies by 4 % across the image: 8 bits of mantissa in the
    # output layers would quantize it to a few levels (and flipped the sign of the adapter
    # gradients), so the head's output layers compute in float32.
    low, = run('cpu', iterations=0, dtype=dtype, sparse_head=sparse)[:1]
    reference, = run('cpu', iterations=0, sparse_head=sparse)[:1]
    assert np.median(np.abs(low.depth - reference.depth) / reference.depth) < 1e-3
    assert low.final_loss == pytest.approx(reference.final_loss, rel=1e-3)


def test_reduced_precision_gradients_point_where_float32_ones_do():
    grads = {}
    for dtype in ('float32', 'bfloat16'):
        completer = DepthCompleter(DepthModel(tiny_network(seed=2)),
                                   TTOConfig(device='cpu', dtype=dtype, iterations=1))
        generator = torch.Generator().manual_seed(0)
        with torch.no_grad():  # leave the identity init, where many gradients are zero
            for parameter in completer.adaptation.parameters:
                parameter.add_(0.05 * torch.randn(parameter.shape, generator=generator))
        image, sparse = sequence()[0]
        completer.complete(image, sparse)  # one step: its gradient is left in .grad
        # An adapter that a step does not reach has no gradient, or a zero one where the
        # adapters are cast together (lora_paths): the same direction.
        grads[dtype] = torch.cat([torch.zeros(p.numel()) if p.grad is None else p.grad.flatten()
                                  for p in completer.adaptation.parameters])
    cosine = torch.nn.functional.cosine_similarity(grads['float32'], grads['bfloat16'], dim=0)
    assert cosine > 0.99


def test_a_precision_kernel_the_device_lacks_is_rejected_at_start_up(monkeypatch):
    # Before the fix the sparse head multiplied in the autocast dtype, which CPU sparse
    # kernels lack: the first frame crashed. Such a gap must now stop the constructor.
    def low_precision_product(indices, offsets, weights, dense):
        rows = torch.cat([offsets, torch.tensor([len(indices)])])
        matrix = torch.sparse_csr_tensor(rows, indices, weights.to(dense.dtype),
                                         size=(len(offsets), dense.shape[0]))
        return torch.sparse.mm(matrix, dense)

    monkeypatch.setattr(resampling, 'gather_rows', low_precision_product)
    with pytest.raises(UnsupportedPrecisionError, match="dtype 'bfloat16'.*addmm"):
        DepthCompleter(DepthModel(tiny_network()), TTOConfig(device='cpu', dtype='bfloat16'))
    DepthCompleter(DepthModel(tiny_network()),
                   TTOConfig(device='cpu', dtype='bfloat16', sparse_head=False))


def test_a_probe_error_that_is_no_missing_kernel_is_reported_as_itself(monkeypatch):
    # A bug in the sparse head (here a shape mismatch torch itself reports) is no verdict on
    # the dtype: it must reach the user as the error it is, not as "use float32".
    def mismatched_product(indices, offsets, weights, dense):
        return dense[:1] + dense[:2].T

    monkeypatch.setattr(resampling, 'gather_rows', mismatched_product)
    with pytest.raises(RuntimeError, match='must match the size') as raised:
        DepthCompleter(DepthModel(tiny_network()), TTOConfig(device='cpu', dtype='bfloat16'))
    assert not isinstance(raised.value, UnsupportedPrecisionError)
    assert "in the start-up probe of dtype 'bfloat16'" in ''.join(raised.value.__notes__)


def test_only_errors_naming_a_missing_kernel_of_the_dtype_are_precision_errors():
    def error_of(function):
        try:
            function()
        except Exception as error:  # noqa: B902 (any error torch raises is the subject)
            return error
        raise AssertionError('no error')

    unconvertible = error_of(lambda: torch.zeros(2, dtype=torch.bfloat16).numpy())
    mismatch = error_of(lambda: torch.zeros(2) + torch.zeros(3))
    assert lacks_precision(unconvertible, torch.bfloat16)
    assert not lacks_precision(unconvertible, torch.float16)  # another dtype's gap
    assert not lacks_precision(mismatch, torch.bfloat16)
    assert not lacks_precision(ValueError("not implemented for 'BFloat16'"), torch.bfloat16)


def test_bfloat16_on_a_gpu_without_it_is_rejected_with_the_reason(monkeypatch):
    monkeypatch.setattr(torch.cuda, 'is_bf16_supported', lambda including_emulation=True: False)
    monkeypatch.setattr(torch.cuda, 'get_device_name', lambda device=None: 'Tesla T4')
    with pytest.raises(UnsupportedPrecisionError, match='Tesla T4 has no bfloat16'):
        check_precision(torch.device('cuda'), 'bfloat16')
    assert check_precision(torch.device('cuda'), 'float16') == torch.float16
    with pytest.raises(UnsupportedPrecisionError, match='no autocast for meta'):
        check_precision(torch.device('meta'), 'float16')


def test_auto_is_bfloat16_only_where_the_hardware_computes_it(monkeypatch):
    from lrda_ros.engine import precision

    monkeypatch.setattr(torch.cpu, '_is_avx512_bf16_supported', lambda: True)
    assert precision.resolve_precision(torch.device('cpu'), 'auto') == 'bfloat16'
    monkeypatch.setattr(torch.cpu, '_is_avx512_bf16_supported', lambda: False)
    monkeypatch.setattr(torch.cpu, '_is_amx_tile_supported', lambda: False)
    assert precision.resolve_precision(torch.device('cpu'), 'auto') == 'float32'
    assert precision.resolve_precision(torch.device('cpu'), 'float16') == 'float16'
    completer = DepthCompleter(DepthModel(tiny_network()), TTOConfig(device='cpu', dtype='auto'))
    assert completer._autocast_dtype == torch.float32
