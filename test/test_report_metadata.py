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

"""A report says what ran: model, weights, device, resolved precision, schedule, options."""

import json

from lrda_ros.eval.report import report_title, weights_origin
from lrda_ros.eval.run import EvalOptions, run_evaluation
from test_eval_foreign import _lidar_folder


def test_eval_summary_names_the_engine_and_keeps_options_typed(tmp_path, tiny_model_dir):
    root = _lidar_folder(tmp_path / 'frames', frames=2, gt=True)
    output = tmp_path / 'report'
    run_evaluation(EvalOptions(kind='folder', root=root, output=output, methods=('lrda',),
                               model=str(tiny_model_dir), device='cpu', iterations=2,
                               schedule='paper', dtype='auto', figures=0, progress=False))
    metadata = json.loads((output / 'summary.json').read_text())['metadata']
    engine = metadata['engine']
    assert engine['model'] == str(tiny_model_dir)
    assert engine['weights'] == f'local folder {tiny_model_dir.resolve()}'
    assert engine['device'] == 'cpu' and engine['dtype'] == 'auto'
    assert engine['precision'] in ('float32', 'bfloat16')  # what 'auto' became here
    assert (engine['schedule'], engine['iterations']) == ('paper', 2)
    options = metadata['options']
    # Typed JSON values, not Python reprs: numbers, null, lists and nested objects.
    assert options['iterations'] == 2 and options['warm_iterations'] is None
    assert options['methods'] == ['lrda'] and options['independent'] is False
    assert options['topics'] == {'image': None, 'camera_info': None, 'points': None,
                                 'depth': None, 'more_points': []}
    markdown = (output / 'summary.md').read_text()
    assert f'Model `{tiny_model_dir}` (local folder ' in markdown
    assert f"device cpu, precision {engine['precision']} (dtype auto), schedule 'paper'" \
        in markdown


def test_weights_origin_names_the_prior_a_file_a_folder_or_the_hub(tmp_path):
    checkpoint = tmp_path / 'depth_anything_v2_vits.pth'
    checkpoint.write_bytes(b'')
    assert weights_origin('demo').startswith('the embedded demo prior')
    assert weights_origin(str(checkpoint)) == f'checkpoint file {checkpoint}'
    assert weights_origin(str(tmp_path)) == f'local folder {tmp_path}'
    assert weights_origin('depth-anything/Depth-Anything-V2-Small-hf').startswith(
        'Hugging Face hub id')


def test_a_report_title_names_a_dataset_once():
    assert report_title('kitti_dc', '/data/kitti_dc') == 'kitti_dc'
    assert report_title('kitti_dc', '/data/val_selection') == 'kitti_dc: val_selection'


def test_paper_report_names_the_engine(tmp_path, tiny_model_dir):
    from lrda_ros.paper.run import run_paper
    from test_paper import _ibims_samples, _options

    _ibims_samples(tmp_path / 'ibims')
    options = _options(tmp_path, tiny_model_dir, roots={'ibims': tmp_path / 'ibims'},
                       methods=('lrda',), max_frames=1)
    run_paper(options)
    engine = json.loads((options.output / 'paper.json').read_text())['engine']
    assert engine['model'] == str(tiny_model_dir)
    assert engine['weights'] == f'local folder {tiny_model_dir.resolve()}'
    assert (engine['device'], engine['dtype'], engine['precision']) == ('cpu', 'float32',
                                                                        'float32')
    assert (engine['schedule'], engine['iterations'], engine['processing_size']) == (
        'paper', 2, 56)
    markdown = (options.output / 'paper.md').read_text()
    assert f'Model `{tiny_model_dir}` (local folder' in markdown
    assert "precision float32 (dtype float32), schedule 'paper'" in markdown


def test_speed_report_names_the_engine_and_keeps_options_typed(monkeypatch, tmp_path):
    from lrda_ros.speed import run as speed_run
    from test_speed import speed_rows

    monkeypatch.setattr(speed_run, 'measure_speed', lambda options: speed_rows())
    speed_run.run_speed(speed_run.SpeedOptions(output=tmp_path, ablations=False, dtype='auto',
                                               iterations=7))
    saved = json.loads((tmp_path / 'speed.json').read_text())
    engine = saved['engine']
    assert engine['model'] == 'vits' and engine['weights'].startswith('random weights')
    assert engine['device'] == 'cpu' and engine['precision'] == saved['dtype']
    assert (engine['schedule'], engine['iterations']) == ('adaptive', 7)
    assert saved['options']['iterations'] == 7 and saved['options']['compile'] is False
    assert saved['options']['backbones'] == ['vits']
    assert 'Model `vits` (random weights' in (tmp_path / 'speed.md').read_text()


def test_densify_workers_name_the_engine(tiny_model_dir):
    from lrda_ros.densify.worker import FrameWorker

    engine = FrameWorker({'model': str(tiny_model_dir), 'device': 'cpu', 'dtype': 'float32',
                          'schedule': 'paper', 'iterations': 4}).describe()['engine']
    assert engine == {'model': str(tiny_model_dir),
                      'weights': f'local folder {tiny_model_dir.resolve()}', 'device': 'cpu',
                      'dtype': 'float32', 'precision': 'float32', 'schedule': 'paper',
                      'iterations': 4, 'warm_iterations': 10, 'learning_rate': 0.01,
                      'processing_size': None}


def test_demo_summary_names_the_engine_and_keeps_options_typed(tmp_path):
    from lrda_ros.demo.job import DemoOptions, run_demo

    run_demo(DemoOptions(output=tmp_path, frames=2, width=64, height=48, beams=8,
                         iterations=2, warm_iterations=1, device='cpu', progress=False))
    metadata = json.loads((tmp_path / 'summary.json').read_text())['metadata']
    engine = metadata['engine']
    assert engine['model'] == 'demo' and engine['weights'].startswith('the embedded demo prior')
    assert engine['device'] == 'cpu' and engine['precision'] in ('float32', 'bfloat16')
    assert (engine['iterations'], engine['warm_iterations']) == (2, 1)
    assert metadata['options']['frames'] == 2 and metadata['options']['progress'] is False
    assert 'Model `demo` (the embedded demo prior' in (tmp_path / 'summary.md').read_text()
