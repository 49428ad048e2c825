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

"""``lrda eval`` and ``lrda speed`` on UniDepthV2."""

from __future__ import annotations

import csv
from pathlib import Path

from lrda_ros.engine import TTOConfig
from lrda_ros.engine.unidepth import UniDepthModel
from lrda_ros.eval.run import EvalOptions, run_evaluation
from lrda_ros.speed import inputs as speed_inputs, run as speed_run
from lrda_ros.speed.options import LidarPattern
from lrda_ros.speed.run import measure_configuration, SpeedOptions
import numpy as np
from PIL import Image
import pytest
from unidepth_tiny import camera_matrix, tiny_unidepth_network, write_official_checkpoint


def _folder(root: Path, frames: int = 2) -> Path:
    """Write rgb/, sparse/, gt/ (uint16 PNG, metres * 256) and K.txt."""
    rng = np.random.default_rng(2)
    for index in range(frames):
        rows = (np.arange(48)[:, None] + np.arange(56)[None]) / 20.0
        depth = (2.0 + rows + index * 0.1).astype(np.float32)
        sparse = np.where(rng.random(depth.shape) < 0.3, depth, 0.0)
        for folder, values in (('sparse', sparse), ('gt', depth)):
            (root / folder).mkdir(parents=True, exist_ok=True)
            Image.fromarray(np.round(values * 256).astype(np.uint16)).save(
                root / folder / f'{index:04d}.png')
        (root / 'rgb').mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 255, (48, 56, 3), dtype=np.uint8)).save(
            root / 'rgb' / f'{index:04d}.png')
    np.savetxt(root / 'K.txt', camera_matrix(48, 56))
    return root


def test_lrda_eval_runs_unidepth_with_the_frames_camera(tmp_path, monkeypatch):
    model = write_official_checkpoint(tmp_path / 'unidepth', tiny_unidepth_network())
    given = []
    original = UniDepthModel.encode

    def spy(self, pixel_values, input_size, intrinsics=None):
        given.append(intrinsics)
        return original(self, pixel_values, input_size, intrinsics)

    monkeypatch.setattr(UniDepthModel, 'encode', spy)
    output = tmp_path / 'out'
    _, summary = run_evaluation(EvalOptions(
        kind='folder', root=_folder(tmp_path / 'frames'), output=output, model=str(model),
        methods=('scale-shift', 'lrda', 'lrda-warm'), device='cpu', iterations=3,
        warm_iterations=1, figures=0, progress=False))
    rows = list(csv.DictReader(open(output / 'frames.csv')))
    assert {row['method'] for row in rows} == {'scale-shift', 'lrda', 'lrda-warm'}
    assert all(row['status'] in ('optimized', 'alignment_only') for row in rows)
    for name in ('scale-shift', 'lrda', 'lrda-warm'):
        assert np.isfinite(summary[name]['mae'])
    assert given and all(np.allclose(k, camera_matrix(48, 56)) for k in given)


def test_speed_names_unidepth_backbones_and_skips_what_does_not_apply():
    options = SpeedOptions(backbones=('vits', 'unidepth-vits'), resolutions=('vga',))
    config = TTOConfig(device='cpu', dtype='float32')
    dpt = [run.label for run in speed_run._plan(options, config, 'vits')]
    unidepth = [run.label for run in speed_run._plan(options, config, 'unidepth-vits')]
    assert 'lrda-strips' in dpt and 'lrda, dense head' in dpt
    assert unidepth == ['lrda', 'lrda-warm', 'encoder-lora', 'prompt', 'lrda, contiguous']
    with pytest.raises(ValueError, match='unidepth-vitb'):
        SpeedOptions(backbones=('unidepth-vitx',))
    model = speed_inputs.random_model('unidepth-vits', seed=0)
    assert isinstance(model, UniDepthModel) and model.config.embed_dim == 384


@pytest.mark.slow
def test_one_unidepth_configuration_is_measured():
    config = TTOConfig(iterations=2, warm_iterations=1, device='cpu')
    sample = measure_configuration('unidepth-vits', '56', config, False, LidarPattern(),
                                   seed=0, frame_index=1)
    assert sample['seconds'] > 0 and sample['iterations'] == 2
    assert np.isfinite(sample['final_loss'])
