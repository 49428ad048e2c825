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

"""The demo prior and the demo job (issue: self-contained demo on a synthetic world)."""

from __future__ import annotations

import json

from lrda_ros import world
from lrda_ros.datasets.synthetic import synthetic_frames
from lrda_ros.demo.prior import PriorTrainingConfig, train_prior
from lrda_ros.engine import TTOConfig
from lrda_ros.engine.loading import demo_prior_dir, load_depth_model
from lrda_ros.eval.harness import evaluate
from lrda_ros.eval.methods import build_method
import pytest


def test_demo_prior_ships_in_the_package():
    folder = demo_prior_dir()
    assert (folder / 'config.json').is_file() and (folder / 'model.safetensors').is_file()
    assert (folder / 'model.safetensors').stat().st_size < 10 * 2**20  # "a few MB"
    choice = load_depth_model('demo', 'cpu')
    assert choice.is_demo_prior and choice.network.config.model_type == 'depth_anything'
    assert sum(p.numel() for p in choice.network.parameters()) < 3_000_000


@pytest.mark.slow
def test_tto_with_the_prior_beats_scale_shift_on_held_out_scenes():
    # Scenes of seeds never used in training (training draws views from seed 0's stream).
    choice = load_depth_model('demo', 'cpu')
    config = TTOConfig(device='cpu', min_points=8)
    methods = [build_method(name, choice, config) for name in ('scale-shift', 'lrda')]
    frames = []
    for seed in (9001, 9002):
        sequence = world.SequenceConfig('indoor', 1, width=224, height=168, seed=seed)
        frames += list(synthetic_frames(sequence))
    summary = evaluate(frames, methods, progress=False).summary()
    assert summary['lrda']['mae'] < 0.6 * summary['scale-shift']['mae'], summary
    assert summary['lrda']['delta1'] > summary['scale-shift']['delta1']


def test_training_command_writes_a_loadable_prior(tmp_path):
    report = train_prior(PriorTrainingConfig(output=tmp_path / 'prior', num_views=6, steps=2,
                                             width=56, height=42, batch_size=2,
                                             warmup_steps=1))
    assert report['parameters'] > 1_000_000 and report['final_loss'] > 0
    choice = load_depth_model(str(tmp_path / 'prior'), 'cpu')
    assert choice.predict(world.random_view(1, 'indoor', 56, 42)[0]).shape == (42, 56)
    assert json.loads((tmp_path / 'prior' / 'training.json').read_text())['config']['steps'] == 2


@pytest.mark.slow
def test_demo_runs_end_to_end_on_a_tiny_setting(tmp_path, capfd):
    from lrda_ros.demo.job import DemoOptions, run_demo

    summary = run_demo(DemoOptions(output=tmp_path, frames=2, width=112, height=84, beams=16,
                                   iterations=3, warm_iterations=2, device='cpu',
                                   progress=False))
    assert set(summary) == {'scale-shift', 'lrda', 'lrda-warm'}
    assert all(entry['frames'] == 2 and entry['failures'] == 0 for entry in summary.values())
    assert summary['lrda']['iterations'] == 3 and summary['scale-shift']['iterations'] == 0
    # The bag's /tf gives the camera poses: one TAE per method (one frame pair), and the
    # confidence is scored.
    for entry in summary.values():
        assert entry['tae_frames'] == 1 and 0 <= entry['tae'] < 1
        assert 0 <= entry['ause'] < 1 and 0 <= entry['ause_lidar_distance'] < 1
    for name in ('summary.md', 'summary.json', 'frames.csv', 'contact_sheet.png', 'depth.gif'):
        assert (tmp_path / name).stat().st_size > 0, name
    assert len(list((tmp_path / 'frames').glob('*.png'))) == 2
    assert (tmp_path / 'bag' / 'metadata.yaml').is_file()
    # The main job on a fresh machine warns of nothing that does not apply to it: its sensors
    # share stamps, so motion alignment has nothing to move, with or without tf2.
    logged = capfd.readouterr()
    warnings = [line for line in (logged.out + logged.err).splitlines()
                if '[WARN]' in line or '[ERROR]' in line]
    assert not warnings, warnings
