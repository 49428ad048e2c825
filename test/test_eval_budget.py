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

"""The anytime curve: accuracy against the time budget, with its table and figure."""

from __future__ import annotations

from conftest import smooth_image, tiny_network
from lrda_ros.datasets import Frame
from lrda_ros.engine import DepthModel, TTOConfig
from lrda_ros.eval.budget import budget_curve, curve_plot, curve_table
import matplotlib.image
import numpy as np


def test_budget_curve_rows_table_and_plot(tmp_path):
    rng = np.random.default_rng(0)
    frames = []
    for k in range(2):
        truth = rng.uniform(2, 6, (60, 80)).astype(np.float32)
        sparse = np.where(rng.random(truth.shape) < 0.05, truth, 0).astype(np.float32)
        frames.append(Frame(f'f{k}', smooth_image(k), sparse, truth, sequence='s'))
    config = TTOConfig(device='cpu', iterations=5, warm_iterations=3, min_points=8,
                       schedule='paper')  # fixed step counts
    # 1e-4 s is below a single encoder pass: no step fits; 0 is unlimited.
    rows = budget_curve(frames, DepthModel(tiny_network()), config, (1e-4, 0.0),
                        progress=False)
    by_key = {(r['method'], r['budget_s']): r for r in rows}
    assert set(by_key) == {(m, b) for m in ('lrda', 'lrda-warm') for b in (1e-4, 0.0)}
    assert by_key[('lrda', 1e-4)]['iterations'] == 0
    assert by_key[('lrda', 0.0)]['iterations'] == 5
    assert by_key[('lrda-warm', 0.0)]['iterations'] == (5 + 3) / 2
    assert all(np.isfinite(r['mae']) for r in rows)
    assert '| lrda | unlimited |' in curve_table(rows)
    curve_plot(rows, tmp_path / 'curve.png', 'test', baseline_mae=1.0)
    assert matplotlib.image.imread(tmp_path / 'curve.png').shape[2] in (3, 4)
