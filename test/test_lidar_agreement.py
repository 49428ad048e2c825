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

"""The LiDAR agreement stage: residuals propagated along the prediction, exact at returns."""

from conftest import smooth_image
from lrda_ros.engine import TTOConfig
from lrda_ros.errors import ConfigError
from lrda_ros.eval.methods import build_method, build_methods, METHODS
from lrda_ros.geometry import agree_with_lidar, LidarAgreement
import lrda_ros.geometry.agreement as agreement_module
import numpy as np
import pytest


def _scene(height=120, width=400, seed=0):
    rng = np.random.default_rng(seed)
    rows, cols = np.mgrid[0:height, 0:width]
    truth = np.where(cols < width // 2, 8.0 + 0.01 * rows, 30.0 + 0.02 * cols)
    prediction = truth * np.exp(0.15 * np.sin(rows / 25.0) * np.cos(cols / 40.0))
    sparse = np.where(rng.random(truth.shape) < 0.04, truth, 0.0)
    return truth.astype(np.float32), prediction.astype(np.float32), sparse.astype(np.float32)


def test_smooth_errors_are_corrected_and_returns_kept_exactly():
    truth, prediction, sparse = _scene()
    out = agree_with_lidar(prediction, sparse)
    between = sparse == 0
    before = np.abs(prediction - truth)[between].mean()
    after = np.abs(out - truth)[between].mean()
    assert after < 0.25 * before
    np.testing.assert_array_equal(out[sparse > 0], sparse[sparse > 0])
    kept = agree_with_lidar(prediction, sparse, LidarAgreement(exact_at_lidar=False))
    assert not np.array_equal(kept[sparse > 0], sparse[sparse > 0])


def test_a_correction_does_not_cross_an_edge_of_the_prediction():
    height, width = 80, 200
    cols = np.mgrid[0:height, 0:width][1]
    near = cols < 100
    truth = np.where(near, 5.0, 22.0).astype(np.float32)
    prediction = np.where(near, 5.0, 20.0).astype(np.float32)  # right surface 10 % short
    sparse = np.zeros_like(truth)
    sparse[::4, 104::4] = truth[::4, 104::4]       # returns on the far surface only
    sparse[::8, 0:60:8] = truth[::8, 0:60:8]       # and a few far from the edge on the near one
    out = agree_with_lidar(prediction, sparse)
    assert np.abs(out[:, 90:100] - 5.0).max() < 0.05          # the near side of the edge
    assert np.abs(out[:, 110:190] - 22.0).mean() < 0.2        # the far surface is corrected


def test_nan_stays_no_depth_and_no_returns_change_nothing():
    truth, prediction, sparse = _scene(seed=1)
    prediction[:5] = np.nan
    out = agree_with_lidar(prediction, sparse)
    assert np.isnan(out[:5]).all() and np.isfinite(out[5:]).all()
    np.testing.assert_array_equal(agree_with_lidar(prediction, np.zeros_like(sparse)),
                                  prediction)
    with pytest.raises(ConfigError):
        LidarAgreement(range_sigma=0.0)
    with pytest.raises(ValueError, match='same HxW'):
        agree_with_lidar(prediction, sparse[:, :-1])


def test_method_lrda_lidar_runs_lrda_then_the_stage(tiny_model):
    assert METHODS['lrda-lidar'].lidar_agreement
    rgb = smooth_image(0, 56, 84)
    rng = np.random.default_rng(2)
    sparse = np.where(rng.random((56, 84)) < 0.1, rng.uniform(2.0, 6.0, (56, 84)), 0.0)
    sparse = sparse.astype(np.float32)
    config = TTOConfig(iterations=2, device='cpu', min_points=8)
    K = np.array([[60.0, 0, 42], [0, 60, 28], [0, 0, 1]])  # lrda eval passes each frame's K
    plain = build_method('lrda', tiny_model, config).complete(rgb, sparse, K)
    agreed = build_method('lrda-lidar', tiny_model, config).complete(rgb, sparse, K)
    assert agreed.iterations == plain.iterations
    np.testing.assert_array_equal(agreed.depth[sparse > 0], sparse[sparse > 0])
    np.testing.assert_allclose(agreed.depth, agree_with_lidar(plain.depth, sparse), rtol=1e-5)

    # Selected together, the two run the network once per frame, with the same results.
    methods = build_methods(['lrda-lidar', 'lrda'], tiny_model, config)
    calls = []
    network = methods['lrda'].inner
    original = network.complete
    network.complete = lambda *args: calls.append(1) or original(*args)
    for method in methods.values():
        method.reset()
    shared = {name: m.complete(rgb, sparse, K) for name, m in methods.items()}
    assert len(calls) == 1  # the second to run gets the first's time as reused_seconds
    assert sorted(o.reused_seconds > 0 for o in shared.values()) == [False, True]
    np.testing.assert_array_equal(shared['lrda'].depth, plain.depth)
    np.testing.assert_array_equal(shared['lrda-lidar'].depth, agreed.depth)


def test_window_and_grid_sums_agree_and_scales_fill_a_gap():
    truth, prediction, sparse = _scene(seed=3)
    # A short reach is summed exactly over offsets, a long one on the grid: the same rule.
    one_scale = {'levels': 1, 'spatial_scale': 0.7}
    short = agree_with_lidar(prediction, sparse, LidarAgreement(**one_scale))
    with_grid = agreement_module.WINDOW_REACH
    try:
        agreement_module.WINDOW_REACH = 0.0
        gridded = agree_with_lidar(prediction, sparse, LidarAgreement(**one_scale))
    finally:
        agreement_module.WINDOW_REACH = with_grid
    between = sparse == 0
    assert np.abs(np.log(short / gridded))[between].mean() < 0.01
    # A band without returns: one short scale fades back to the prediction inside it, the
    # coarser scales carry the surrounding correction into it.
    sparse[40:80] = 0
    gap = (slice(50, 70), slice(None))
    single = agree_with_lidar(prediction, sparse, LidarAgreement(levels=1))
    scales = agree_with_lidar(prediction, sparse)
    error = {name: np.abs(out[gap] - truth[gap]).mean() for name, out in
             (('prediction', prediction), ('single', single), ('scales', scales))}
    assert error['scales'] < 0.5 * error['single'] and error['single'] > 0.8 * error['prediction']
    with pytest.raises(ConfigError, match='levels'):
        LidarAgreement(levels=0)
