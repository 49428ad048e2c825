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

"""``lrda speed``'s building blocks: inputs, a measured frame, tables, plots, the machine."""

from __future__ import annotations

import importlib.util
import json
import math
import os
from pathlib import Path
import sys

from lrda_ros.cli import main
from lrda_ros.engine import Scope, TTOConfig
from lrda_ros.speed import run as speed_run
from lrda_ros.speed.against import measure_in_checkout
from lrda_ros.speed.inputs import panning_frames
from lrda_ros.speed.machine import machine_description, machine_line
from lrda_ros.speed.options import LidarPattern, RESOLUTIONS
from lrda_ros.speed.report import speed_plot, speed_table
from lrda_ros.speed.run import _summarize, measure_configuration, SpeedOptions
import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / 'benchmarks'


def test_panning_frames_pan_and_carry_lidar_at_the_requested_density():
    frames = panning_frames(48, 64, 3, LidarPattern(0.05, top=0.0), seed=0)
    assert len(frames) == 3
    for rgb, sparse in frames:
        assert rgb.shape == (48, 64, 3) and rgb.dtype == np.uint8
        assert 0.02 < np.count_nonzero(sparse) / sparse.size < 0.08
        assert np.count_nonzero(sparse[:12]) > 0
    assert not np.array_equal(frames[0][0], frames[1][0])  # the camera pans
    np.testing.assert_array_equal(frames[0][1] > 0, frames[1][1] > 0)  # the LiDAR pattern stays
    assert RESOLUTIONS['vga'] == (480, 640) and RESOLUTIONS['fhd'] == (1080, 1920)


def test_the_default_pattern_leaves_the_rows_above_the_lidar_empty_as_kitti_does():
    # KITTI's HDL-64 in the colour camera: no return above row ~122 of 375, ~4 % overall.
    rgb, sparse = panning_frames(375, 1242, 1, SpeedOptions().lidar, seed=0)[0]
    rows = np.nonzero((sparse > 0).any(axis=1))[0]
    assert 120 <= rows.min() <= 126 and rows.max() == 374
    assert 0.035 < np.count_nonzero(sparse) / sparse.size < 0.045
    with pytest.raises(ValueError, match='--lidar-top'):
        SpeedOptions(lidar_top=1.0)
    with pytest.raises(ValueError, match='--lidar-fraction'):
        SpeedOptions(lidar_fraction=0.8, lidar_top=0.3)


def test_a_method_that_needs_camera_poses_is_refused_by_lrda_speed():
    with pytest.raises(ValueError, match='lrda-warm-fused fuses frames by the camera pose'):
        SpeedOptions(methods=('lrda', 'lrda-warm-fused'))


@pytest.mark.slow
@pytest.mark.parametrize('scope, warm', [(Scope.DECODER_LORA, False), (Scope.DECODER_LORA, True),
                                         (Scope.PROMPT, False)])
def test_one_configuration_is_measured(scope, warm):
    config = TTOConfig(iterations=3, warm_iterations=2, device='cpu', scope=scope)
    sample = measure_configuration('vits', '56', config, warm, LidarPattern(), seed=0,
                                   frame_index=1)
    assert sample['seconds'] > 0 and sample['peak_mb'] >= 0
    assert sample['iterations'] == (2 if warm else 3)
    assert np.isfinite(sample['final_loss'])
    # The final dense decode; a warm frame's start check (carried against unadapted) adds two;
    # a frame whose last iterate decodes worse than its best decodes the best again
    # (tto._final_prediction), which the kernels' rounding decides on these random weights.
    expected = 3 if warm and scope is Scope.DECODER_LORA else 1
    assert sample['decodes'] - expected in (0, 1), sample['decodes']


def speed_rows() -> list[dict]:
    """Return two rows of the speed table, as run_speed measures them."""
    row = {'backbone': 'vits', 'resolution': 'vga', 'seconds': 2.0, 'peak_mb': 100.0,
           'iterations': 40, 'encoder_s': 0.7, 'decoder_step_dense_s': 0.5,
           'decoder_step_sparse_s': 0.4}
    return [{**row, 'method': 'lrda', 'time_vs_lrda': 1.0, 'memory_vs_lrda': 1.0},
            {**row, 'method': 'prompt', 'seconds': 10.0, 'time_vs_lrda': 5.0,
             'memory_vs_lrda': 2.0}]


def test_tables_and_plot(tmp_path):
    rows = speed_rows()
    table = speed_table(rows)
    assert '| vits | vga | prompt | 10.00 | 100 | 5.00x | 2.00x | 40 | 0 |' in table
    assert '| vits | vga | 700 | 500 | 400 |' in table
    unstructured = [{**row, 'encoder_s': math.nan} for row in rows]  # --no-structure
    assert 'encoder pass' not in speed_table(unstructured)
    speed_plot(rows, tmp_path / 'speed.png')
    assert (tmp_path / 'speed.png').stat().st_size > 5_000


def test_command_line_options_reach_the_engine_configuration(monkeypatch):
    given = []
    monkeypatch.setattr(speed_run, 'run_speed', lambda options, accuracy: given.append(options))
    assert main(['speed', '--compile', '--no-structure', '--iterations', '5', '--device',
                 'cpu', '--dtype', 'float32', '--schedule', 'paper']) == 0
    options, = given
    assert options.compile and not options.structure
    config = options.tto_config()
    assert config.compile and config.iterations == 5 and config.device == 'cpu'
    assert config.schedule == 'paper' and SpeedOptions().tto_config().schedule == 'adaptive'
    # Random weights: nothing may stop a frame's steps early or undo one.
    assert config.divergence_factor == math.inf and config.backtrack_fraction == 1.0
    assert not SpeedOptions().tto_config().compile and SpeedOptions().structure


@pytest.mark.slow
def test_a_frame_is_timed_by_another_checkout_in_its_own_interpreter():
    # This checkout stands for the other one: its own measure_configuration, run from there.
    config = TTOConfig(iterations=2, device='cpu', dtype='float32')
    sample = measure_in_checkout(ROOT, 'vits', '56', config, False, LidarPattern(), 0, 1)
    assert sample['seconds'] > 0 and sample['iterations'] == 2


def test_against_a_folder_without_the_package_is_refused_with_what_to_do(tmp_path):
    with pytest.raises(ValueError, match='not a checkout of lrda_ros.*git worktree add'):
        SpeedOptions(against=tmp_path)
    assert SpeedOptions(against=ROOT).against == ROOT


def test_the_table_gives_the_other_checkouts_time_and_the_ratio():
    rows = [{**row, 'seconds_against': 2 * row['seconds'], 'speedup_vs_against': 2.0,
             'iterations_against': 38} for row in speed_rows()]
    table = speed_table(rows)
    assert '| vits | vga | prompt | 10.00 | 20.00 | 2.00x | 40 / 38 |' in table
    assert 'speed-up over it' not in speed_table(speed_rows())


def test_a_failed_configuration_keeps_its_error_in_the_row():
    ok = {'seconds': 1.0, 'peak_mb': 10.0, 'iterations': 40, 'final_loss': 0.5}
    failed = {'seconds': math.nan, 'peak_mb': math.nan, 'iterations': 0,
              'final_loss': math.nan, 'error': 'OutOfMemoryError: CUDA out of memory'}
    assert 'error' not in _summarize([ok, ok])
    row = _summarize([failed, failed])
    assert row['error'] == 'OutOfMemoryError: CUDA out of memory'
    assert math.isnan(row['seconds'])


@pytest.mark.parametrize('native', [True, False])
def test_the_machine_names_precision_kernels_threads_and_cpu(monkeypatch, native):
    from lrda_ros.engine import precision

    monkeypatch.setattr(precision, 'native_bfloat16', lambda device: native)
    described = machine_description('cpu', 'auto')
    assert described['dtype'] == ('bfloat16' if native else 'float32')  # 'auto' resolved
    assert machine_description('cpu', 'float32')['dtype'] == 'float32'
    assert described['cpu_capability'] == torch.backends.cpu.get_cpu_capability()
    assert described['threads'] == torch.get_num_threads()
    assert described['device'] == 'cpu' and described['cpu']
    cpuinfo = Path('/proc/cpuinfo')
    if cpuinfo.is_file():  # Linux: the model name the kernel reports
        assert f': {described["cpu"]}' in cpuinfo.read_text()


def test_speed_reports_name_the_machine(monkeypatch, tmp_path):
    monkeypatch.setattr(speed_run, 'measure_speed', lambda options: speed_rows())
    options = SpeedOptions(output=str(tmp_path), ablations=False)
    speed_run.run_speed(options)
    machine = machine_description('cpu', 'auto')
    saved = json.loads((tmp_path / 'speed.json').read_text())
    assert {key: saved[key] for key in machine} == machine
    assert (tmp_path / 'speed.md').read_text().startswith(machine_line(machine))


class _Stop(Exception):
    """Ends a benchmark script once it has printed its head."""


def _script(name: str):
    spec = importlib.util.spec_from_file_location(f'benchmark_{name}', BENCHMARKS / f'{name}.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize('name, first_work, dtype', [
    ('compute_floor', 'panning_frames', 'auto'), ('backends', 'random_model', 'float32')])
def test_benchmark_scripts_open_with_the_machine(monkeypatch, capsys, name, first_work, dtype):
    module = _script(name)

    def stop(*args, **kwargs):
        raise _Stop

    monkeypatch.setattr(module, first_work, stop)
    monkeypatch.setattr(sys, 'argv', [f'{name}.py', '--dtype', dtype])
    with pytest.raises(_Stop):
        module.main()
    assert capsys.readouterr().out.startswith(machine_line(machine_description('cpu', dtype)))


def test_a_compiled_run_gets_an_empty_inductor_cache_of_its_own(monkeypatch):
    from lrda_ros.speed.compilation import compilation_cache

    monkeypatch.delenv('TORCHINDUCTOR_CACHE_DIR', raising=False)
    with compilation_cache(True):
        folder = os.environ['TORCHINDUCTOR_CACHE_DIR']
        assert os.path.isdir(folder) and not os.listdir(folder)
    assert 'TORCHINDUCTOR_CACHE_DIR' not in os.environ and not os.path.exists(folder)
    with compilation_cache(False):
        assert 'TORCHINDUCTOR_CACHE_DIR' not in os.environ
    monkeypatch.setenv('TORCHINDUCTOR_CACHE_DIR', '/users/own/cache')
    with compilation_cache(True):  # a cache the user named is kept
        assert os.environ['TORCHINDUCTOR_CACHE_DIR'] == '/users/own/cache'


def test_compile_times_name_the_first_and_the_cached_warm_up():
    from lrda_ros.speed.compilation import compile_times

    rows = [{'backbone': 'vits', 'resolution': '224', 'method': 'lrda', 'seconds': 0.5,
             'warm_up_first_s': 80.0, 'warm_up_cached_s': 20.0},
            {'backbone': 'vits', 'resolution': '224', 'method': 'ip-basic', 'seconds': 0.1,
             'warm_up_first_s': float('nan'), 'warm_up_cached_s': float('nan')}]
    text = compile_times(rows, frames=2)
    assert 'lrda: warm-up frame 80.0 s compiling, 20.0 s from the cache' in text
    assert 'ip-basic' not in text
    assert 'needs --frames 2' in compile_times(rows, frames=1)
