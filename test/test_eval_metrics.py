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

"""Tests of lrda_ros.eval.metrics on hand-computed tiny arrays."""

import math

from lrda_ros.eval.metrics import aggregate, compute_metrics, DepthMetrics
import numpy as np
import pytest

# 2x2 case: GT 1, 2, 4 m valid (0 invalid); predictions 2, 2, 2 m (and 5 m at the invalid pixel).
GT = np.array([[1.0, 2.0], [4.0, 0.0]], dtype=np.float32)
PRED = np.array([[2.0, 2.0], [2.0, 5.0]], dtype=np.float32)


def test_hand_computed_values():
    m = compute_metrics(PRED, GT)
    assert m.num_valid == 3
    assert m.num_invalid_pred == 0
    # Errors 1, 0, -2 m.
    assert m.mae == pytest.approx(1.0)
    assert m.rmse == pytest.approx(math.sqrt(5.0 / 3.0))
    # Inverse-depth errors 1/2 - 1/1, 0, 1/2 - 1/4 in 1/m = -500, 0, 250 in 1/km.
    assert m.imae == pytest.approx(250.0)
    assert m.irmse == pytest.approx(math.sqrt((500.0 ** 2 + 250.0 ** 2) / 3.0))
    # |err| / gt = 1, 0, 0.5.
    assert m.absrel == pytest.approx(0.5)
    # max(p/g, g/p) = 2, 1, 2: only the exact pixel is under 1.25, 1.25^2 and 1.25^3 (1.95).
    assert m.delta1 == pytest.approx(1.0 / 3.0)
    assert m.delta2 == pytest.approx(1.0 / 3.0)
    assert m.delta3 == pytest.approx(1.0 / 3.0)


def test_perfect_prediction():
    m = compute_metrics(GT, GT)
    assert (m.mae, m.rmse, m.imae, m.irmse, m.absrel) == (0.0, 0.0, 0.0, 0.0, 0.0)
    assert m.delta1 == 1.0


def test_invalid_gt_is_masked():
    gt = np.array([[1.0, np.nan], [np.inf, -3.0]], dtype=np.float32)
    pred = np.array([[1.5, 100.0], [100.0, 100.0]], dtype=np.float32)
    m = compute_metrics(pred, gt)
    assert m.num_valid == 1
    assert m.mae == pytest.approx(0.5)


def test_depth_range_masks_gt_and_clamps_pred():
    gt = np.array([[1.0, 50.0, 0.0005]], dtype=np.float32)
    pred = np.array([[20.0, 50.0, 1.0]], dtype=np.float32)
    m = compute_metrics(pred, gt, max_depth=10.0)
    assert m.num_valid == 1  # 50 m is beyond max_depth, 0.5 mm below min_depth
    assert m.mae == pytest.approx(9.0)  # the 20 m prediction is clamped to 10 m


def test_mask_argument():
    m = compute_metrics(PRED, GT, mask=np.array([[True, False], [False, False]]))
    assert m.num_valid == 1
    assert m.mae == pytest.approx(1.0)


@pytest.mark.parametrize('bad', [0.0, -2.0])
def test_invalid_prediction_is_counted_not_nan(bad):
    pred = PRED.copy()
    pred[0, 0] = bad
    m = compute_metrics(pred, GT)
    assert m.num_invalid_pred == 1
    assert all(math.isfinite(v) for v in m.to_dict().values())
    assert m.mae > 0.0


def test_too_far_is_an_answer_scored_at_the_upper_clamp():
    pred = PRED.copy()
    pred[0, 0] = np.inf  # REP 118: too far (the node's far limit, far_depth: too_far)
    clamped = PRED.copy()
    clamped[0, 0] = 80.0
    m = compute_metrics(pred, GT, max_depth=80.0)
    assert m.num_invalid_pred == 0 and m.num_no_depth == 0 and m.coverage == 1.0
    assert m.mae == pytest.approx(compute_metrics(clamped, GT, max_depth=80.0).mae)


def test_too_close_is_an_answer_scored_at_the_lower_clamp():
    pred = PRED.copy()
    pred[0, 0] = -np.inf  # REP 118: too close (the node's near limit, min_depth)
    clamped = PRED.copy()
    clamped[0, 0] = 0.5
    m = compute_metrics(pred, GT, min_depth=0.5)
    assert m.num_invalid_pred == 0 and m.num_no_depth == 0 and m.coverage == 1.0
    assert m.mae == pytest.approx(compute_metrics(clamped, GT, min_depth=0.5).mae)


def test_nan_prediction_is_no_depth_left_out_and_counted():
    pred = PRED.copy()
    pred[0, 0] = np.nan  # REP 118: no depth here (far_depth: no_depth at the node's far limit)
    m = compute_metrics(pred, GT)
    kept = np.ones(GT.shape, bool)
    kept[0, 0] = False
    assert m.num_no_depth == 1 and m.num_invalid_pred == 0
    assert m.coverage == pytest.approx(2 / 3)  # of the three valid ground-truth pixels
    assert m.mae == pytest.approx(compute_metrics(PRED, GT, mask=kept).mae)


def test_no_valid_gt_raises():
    with pytest.raises(ValueError, match='no valid ground-truth'):
        compute_metrics(PRED, np.zeros_like(GT))


def test_shape_mismatch_raises():
    with pytest.raises(ValueError, match='shape'):
        compute_metrics(PRED[:1], GT)


def test_aggregate_is_mean_over_frames():
    a = compute_metrics(PRED, GT)  # 3 valid pixels
    b = compute_metrics(np.full((1, 1), 3.0), np.full((1, 1), 2.0))  # 1 pixel, error 1 m
    c = aggregate([a, b])
    assert c.mae == pytest.approx((a.mae + b.mae) / 2)
    assert c.rmse == pytest.approx((a.rmse + b.rmse) / 2)  # mean of per-frame RMSE
    assert c.irmse == pytest.approx((a.irmse + b.irmse) / 2)
    assert c.delta1 == pytest.approx((a.delta1 + 0.0) / 2)
    assert c.num_valid == 4
    assert aggregate([a]) == a


def test_aggregate_empty_raises():
    with pytest.raises(ValueError):
        aggregate([])


def test_to_dict():
    d = compute_metrics(PRED, GT).to_dict()
    assert set(d) == {'mae', 'rmse', 'imae', 'irmse', 'absrel', 'delta1', 'delta2', 'delta3',
                      'num_valid', 'num_invalid_pred', 'num_no_depth', 'coverage'}
    assert isinstance(d['num_valid'], int) and isinstance(d['mae'], float)
    assert DepthMetrics(**d) == compute_metrics(PRED, GT)


def test_nan_prediction_is_no_depth_not_a_guess():
    gt = np.array([[2.0, 4.0], [8.0, 0.0]], dtype=np.float32)
    pred = np.array([[2.5, np.nan], [8.0, 5.0]], dtype=np.float32)
    metrics = compute_metrics(pred, gt)
    # Two of the three valid pixels have depth: errors 0.5 and 0 (hand-computed).
    assert metrics.num_valid == 3 and metrics.num_no_depth == 1
    assert metrics.coverage == pytest.approx(2 / 3)
    assert metrics.mae == pytest.approx(0.25)
    assert metrics.imae == pytest.approx((1000 / 2.0 - 1000 / 2.5) / 2)
    assert metrics.num_invalid_pred == 0


def test_a_frame_without_any_depth_has_nan_errors_and_zero_coverage():
    gt = np.full((2, 2), 3.0, dtype=np.float32)
    metrics = compute_metrics(np.full((2, 2), np.nan, dtype=np.float32), gt)
    assert np.isnan(metrics.mae) and metrics.coverage == 0.0 and metrics.num_no_depth == 4
    both = aggregate([metrics, compute_metrics(np.full((2, 2), 4.0, np.float32), gt)])
    assert both.mae == pytest.approx(1.0) and both.coverage == pytest.approx(0.5)
