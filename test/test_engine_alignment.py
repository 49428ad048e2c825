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

"""Closed-form scale/shift alignment."""

from __future__ import annotations

from lrda_ros.engine import (
    aligned_to_depth, alignment_loss, depth_to_target, fit_scale_shift, PredictionSpace)
import numpy as np
import pytest
import torch


def test_recovers_known_scale_and_shift_exactly():
    prediction = torch.linspace(0.1, 3.0, 200) ** 1.5
    fit = fit_scale_shift(prediction, 2.5 * prediction - 0.7)
    assert float(fit.scale) == pytest.approx(2.5, rel=1e-5)
    assert float(fit.shift) == pytest.approx(-0.7, abs=1e-5)


def test_matches_numpy_least_squares_with_noise():
    rng = np.random.default_rng(0)
    prediction = rng.uniform(0, 5, 500)
    target = 0.3 * prediction + 4.0 + rng.normal(0, 0.2, 500)
    design = np.stack([prediction, np.ones_like(prediction)], axis=1)
    (scale, shift), *_ = np.linalg.lstsq(design, target, rcond=None)
    fit = fit_scale_shift(torch.tensor(prediction), torch.tensor(target))
    assert float(fit.scale) == pytest.approx(scale, rel=1e-4)
    assert float(fit.shift) == pytest.approx(shift, rel=1e-4)


def test_zero_weight_padding_changes_neither_fit_nor_loss_nor_gradient():
    # Compiled steps pad the samples to a bucket with weight 0 (engine/compiled.py).
    rng = np.random.default_rng(1)
    prediction = rng.uniform(0, 5, 300)
    target = 0.3 * prediction + 4.0 + rng.normal(0, 0.2, 300)
    design = np.stack([prediction, np.ones_like(prediction)], axis=1)
    (scale, shift), residual, *_ = np.linalg.lstsq(design, target, rcond=None)
    padding = rng.uniform(-50, 50, 20)  # values the fit must not see
    padded = torch.tensor(np.concatenate([prediction, padding]), dtype=torch.float32,
                          requires_grad=True)
    weights = torch.cat([torch.ones(300), torch.zeros(20)])
    loss, fit = alignment_loss(padded, torch.tensor(np.concatenate([target, -padding]),
                                                    dtype=torch.float32), weights)
    # float32 sums of 300 terms: ~1e-6 relative; the scale's conditioning costs a little more.
    assert float(fit.scale) == pytest.approx(scale, rel=1e-4)
    assert float(fit.shift) == pytest.approx(shift, rel=1e-4)
    assert float(loss) == pytest.approx(float(residual[0]), rel=1e-4)
    loss.backward()
    assert not padded.grad[300:].any()
    plain = torch.tensor(prediction, dtype=torch.float32, requires_grad=True)
    alignment_loss(plain, torch.tensor(target, dtype=torch.float32))[0].backward()
    torch.testing.assert_close(padded.grad[:300], plain.grad, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize('weights', [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0]])
def test_padding_counts_no_sample_towards_an_affine_fit(weights):
    # One real sample (or two with equal predictions) with padding: the scale-only fallback,
    # as without the padding, not an affine fit through the padding.
    count = len(weights)
    prediction = torch.tensor([0.5, 0.5, 3.0, 9.0][:count])
    target = torch.tensor([2.0, 2.0, 1.0, 7.0][:count])
    fit = fit_scale_shift(prediction, target, torch.tensor(weights))
    assert float(fit.scale) == pytest.approx(4.0)
    assert float(fit.shift) == 0.0


def test_the_fit_held_fixed_gives_the_full_gradient():
    # The envelope theorem: (a, b) minimize the loss, so the terms through them vanish. The
    # reference: autograd through the fit's every operation.
    rng = np.random.default_rng(2)
    prediction = rng.uniform(0.1, 5, 400)
    target = 0.3 * prediction + 4.0 + rng.normal(0, 0.2, 400)
    full = torch.tensor(prediction, dtype=torch.float32, requires_grad=True)
    alignment_loss(full, torch.tensor(target, dtype=torch.float32))[0].backward()
    held = torch.tensor(prediction, dtype=torch.float32, requires_grad=True)
    loss, _ = alignment_loss(held, torch.tensor(target, dtype=torch.float32),
                             fit_gradient=False)
    loss.backward()
    # The dropped terms are the fit's optimality conditions, zero but for float32 rounding.
    torch.testing.assert_close(held.grad, full.grad, rtol=1e-4,
                               atol=1e-5 * float(full.grad.abs().max()))


def test_disparity_space_alignment_returns_metres():
    depth = torch.tensor([2.0, 5.0, 10.0, 40.0])
    relative_disparity = (1.0 / depth - 0.01) / 3.0  # what an affine-invariant model might say
    target = depth_to_target(depth, PredictionSpace.DISPARITY)
    loss, fit = alignment_loss(relative_disparity, target)
    metres = aligned_to_depth(fit.apply(relative_disparity), PredictionSpace.DISPARITY, 0.1, 250)
    torch.testing.assert_close(metres, depth, rtol=1e-4, atol=0)
    assert float(loss) < 1e-10


def test_depth_space_is_used_as_is():
    depth = torch.tensor([1.0, 2.0, 3.0])
    assert torch.equal(depth_to_target(depth, PredictionSpace.DEPTH), depth)
    torch.testing.assert_close(aligned_to_depth(depth, PredictionSpace.DEPTH, 0.1, 250), depth)


def test_far_and_negative_disparity_clamp_to_the_far_limit():
    aligned = torch.tensor([-0.5, 0.0, 1e-9, 0.5, 100.0])
    metres = aligned_to_depth(aligned, PredictionSpace.DISPARITY, 0.1, 80.0)
    assert torch.isfinite(metres).all()
    assert metres[:3].tolist() == pytest.approx([80.0] * 3)
    assert float(metres[3]) == pytest.approx(2.0)
    assert float(metres[4]) == pytest.approx(0.1)


@pytest.mark.parametrize('prediction, target', [
    ([0.2, 0.5, 0.9, 1.4], [7.0, 7.0, 7.0, 7.0]),   # all sparse depths equal
    ([0.5, 0.5, 0.5], [1.0, 2.0, 3.0]),             # constant prediction
    ([0.4], [2.0]),                                  # a single point
])
def test_degenerate_fits_are_scale_only_and_finite(prediction, target):
    pred = torch.tensor(prediction, requires_grad=True)
    tgt = torch.tensor(target)
    loss, fit = alignment_loss(pred, tgt)
    expected_scale = float((pred.detach() * tgt).sum() / (pred.detach() ** 2).sum())
    assert float(fit.scale.detach()) == pytest.approx(expected_scale, rel=1e-5)
    assert float(fit.shift.detach()) == 0.0
    loss.backward()
    assert torch.isfinite(pred.grad).all()


def test_all_zero_prediction_falls_back_to_the_mean():
    fit = fit_scale_shift(torch.zeros(5), torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0]))
    assert float(fit.scale) == 0.0
    assert float(fit.shift) == pytest.approx(3.0)
