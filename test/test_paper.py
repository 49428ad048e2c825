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

"""lrda paper: tiny layouts end to end (skips, resume), and the shared real samples."""

import json
from pathlib import Path
import re
import signal
import subprocess
import sys
import time

from lrda_ros.errors import ConfigError
from lrda_ros.paper import PaperOptions
from lrda_ros.paper.published import backbone_of, paper_row
from lrda_ros.paper.run import run_paper
import numpy as np
from PIL import Image
import pytest
from test_eval_ddad import _dataset as _ddad_dataset

REPO = Path(__file__).resolve().parents[1]


def _png(path: Path, array: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array).save(path)


def _smooth(rng, height: int, width: int) -> np.ndarray:
    rows, cols = np.mgrid[0:height, 0:width]
    base = np.stack([rows * 3, cols * 4, (rows + cols) * 2], axis=2) % 255
    return (base + rng.integers(0, 20, base.shape)).clip(0, 255).astype(np.uint8)


def _ibims_samples(root: Path) -> None:
    """Marigold-DC's sample layout, two frames of 48x36 (enough pixels for 1,000 points)."""
    rng = np.random.default_rng(0)
    for name in ('corridor_01', 'office_02'):
        folder = root / name
        _png(folder / 'image.png', _smooth(rng, 36, 48))
        rows, cols = np.mgrid[0:36, 0:48]
        np.save(folder / 'gt.npy', (2.0 + 0.05 * rows + 0.02 * cols).astype(np.float64))


def _void_release(root: Path) -> None:
    """Write the release layout with its test lists: 4 frames, the 2nd corrupt, the 4th lost."""
    base = root / 'void_1500'
    rng = np.random.default_rng(1)
    lines = {role: [] for role in ('image', 'sparse_depth', 'validity_map', 'ground_truth',
                                   'intrinsics')}
    seq = base / 'data' / 'office'
    seq.mkdir(parents=True)
    (seq / 'K.txt').write_text('30 0 16\n0 30 12\n0 0 1\n')
    for i, stamp in enumerate(('100.0', '100.1', '100.2', '100.3')):
        rows, cols = np.mgrid[0:24, 0:32]
        gt = ((1.5 + 0.04 * rows + 0.01 * cols) * 256).astype(np.uint16)
        sparse = np.where(rng.random(gt.shape) < 0.1, gt, 0).astype(np.uint16)
        _png(seq / 'image' / f'{stamp}.png', _smooth(rng, 24, 32))
        _png(seq / 'sparse_depth' / f'{stamp}.png', sparse)
        _png(seq / 'validity_map' / f'{stamp}.png', (sparse > 0).astype(np.uint16) * 256)
        _png(seq / 'ground_truth' / f'{stamp}.png', gt)
        for role in ('image', 'sparse_depth', 'validity_map', 'ground_truth'):
            lines[role].append(f'void_1500/data/office/{role}/{stamp}.png')
        lines['intrinsics'].append('void_1500/data/office/K.txt')
    (seq / 'image' / '100.1.png').write_bytes(b'not a PNG')  # a damaged file
    (seq / 'ground_truth' / '100.3.png').unlink()  # a listed file that is not there
    for role, entries in lines.items():
        (base / f'test_{role}.txt').write_text('\n'.join(entries) + '\n')


def _options(tmp_path: Path, model: Path, **extra) -> PaperOptions:
    roots = {'ibims': tmp_path / 'ibims', 'void': tmp_path / 'void_release',
             'ddad': tmp_path / 'ddad'}
    values = {'roots': roots, 'output': tmp_path / 'out',
              'methods': ('scale-shift', 'lrda', 'classical'), 'model': str(model),
              'device': 'cpu', 'iterations': 2, 'processing_size': 56, 'progress': False}
    values.update(extra)
    return PaperOptions(**values)


def test_tiny_layouts_end_to_end_with_a_skip_and_a_resume(tmp_path, tiny_model_dir):
    _ibims_samples(tmp_path / 'ibims')
    _void_release(tmp_path / 'void_release')
    (tmp_path / 'ddad').mkdir()
    _ddad_dataset(tmp_path / 'ddad')
    options = _options(tmp_path, tiny_model_dir)
    data = run_paper(options)
    out = options.output
    void = data['datasets']['void']
    assert void['frames_evaluated'] == 2 and void['frames_skipped'] == 2
    assert void['skipped'][0]['index'] == 1 and '100.1.png' in void['skipped'][0]['error']
    assert void['skipped'][1]['index'] == 3 and 'FileNotFoundError' in void['skipped'][1]['error']
    assert 'ground_truth/100.3.png' in void['skipped'][1]['error']
    for key in ('ibims', 'void', 'ddad'):
        for method in ('scale-shift', 'lrda', 'classical'):
            entry = data['datasets'][key]['methods'][method]
            assert entry['frames'] == data['datasets'][key]['frames_evaluated'] > 0
            assert np.isfinite(entry['mae']) and entry['rmse'] >= entry['mae']
    assert data['datasets']['ibims']['input_points_mean'] == 1000
    assert data['datasets']['ddad']['outliers_removed_mean'] is not None
    assert [d['key'] for d in data['skipped_datasets']] == ['nyuv2', 'kitti_dc']
    markdown = (out / 'paper.md').read_text()
    assert 'DAv2-L + ours (paper)' in markdown and 'Marigold-DC' in markdown
    assert 'NYUv2 (`--nyuv2`)' in markdown and 'VOID frame 1' in markdown
    assert 'VOID frame 3: FileNotFoundError' in markdown
    saved = json.loads((out / 'paper.json').read_text())
    lrda_ibims = next(r for r in saved['comparison']
                      if r['dataset'] == 'ibims' and r['method'] == 'lrda')
    assert lrda_ibims['paper_mae'] == 0.046
    assert lrda_ibims['delta_mae'] == pytest.approx(lrda_ibims['mae'] - 0.046)
    assert (out / 'paper.png').stat().st_size > 10000

    # Interrupted in the middle of a frame: the last records are lost, the last line is cut.
    store = out / 'frames' / 'ddad.jsonl'
    lines = store.read_text().splitlines()
    store.write_text('\n'.join(lines[:-2]) + '\n' + lines[-1][:20])
    with pytest.raises(ConfigError, match='--resume to continue'):
        run_paper(options)
    with pytest.raises(ConfigError, match='iterations=2'):
        run_paper(_options(tmp_path, tiny_model_dir, iterations=3, resume=True))
    resumed = run_paper(_options(tmp_path, tiny_model_dir, resume=True))
    for key in ('ibims', 'void', 'ddad'):
        for method, entry in resumed['datasets'][key]['methods'].items():
            before = data['datasets'][key]['methods'][method]
            assert entry['frames'] == before['frames']
            assert entry['mae'] == pytest.approx(before['mae'], rel=1e-5)
    # Only the two lost results were computed again.
    records = []
    for line in store.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            pass  # the cut line stays in the file, ignored
    assert len(records) == len(store.read_text().splitlines()) - 1  # all but the cut line
    methods = [(r['index'], r['method']) for r in records if r.get('kind') == 'method']
    assert sorted(methods) == sorted((i, m) for i in (0, 1)
                                     for m in ('scale-shift', 'lrda', 'classical'))


def test_paper_rows_and_backbones():
    assert backbone_of('depth-anything/Depth-Anything-V2-Large-hf') == 'DAv2-L'
    assert backbone_of('depth-anything/Depth-Anything-V2-Small-hf') == 'DAv2-S'
    assert backbone_of('lpiccinelli/unidepth-v2-vitl14') == 'UniDepthV2-L'
    assert backbone_of('demo') is None
    # Depth Anything 3 is no Depth Anything V2 row, whatever its size.
    assert backbone_of('depth-anything/DA3-SMALL') is None and backbone_of('da3-large') is None
    assert paper_row('DAv2-L', 'lrda').get('kitti_dc') == (0.433, 1.389)
    assert paper_row('DAv2-L', 'lrda-warm').label == 'DAv2-L + ours (paper)'
    assert paper_row('DAv2-L', 'prompt').get('ddad') is None
    assert paper_row('UniDepthV2-L', 'scale-shift') is None
    assert paper_row('DAv2-S', 'lrda').get('nyuv2') == (0.067, 0.133)


def _lrda(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'lrda_ros.cli', *args], cwd=REPO,
                          capture_output=True, text=True, timeout=900)


def test_cli_errors_are_one_line(tmp_path):
    result = _lrda('paper', '--output', str(tmp_path / 'out'))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        'lrda paper: error: no dataset given: pass at least one of --ibims, --void, '
        '--nyuv2, --kitti-dc, --ddad']
    result = _lrda('paper', '--void', str(tmp_path / 'absent'))
    assert result.returncode == 1 and 'absent: no such file or folder' in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_ctrl_c_then_resume_computes_only_what_was_missing(tmp_path, tiny_model_dir):
    _ibims_samples(tmp_path / 'ibims')
    output = tmp_path / 'out'
    command = [sys.executable, '-m', 'lrda_ros.cli', 'paper', '--ibims',
               str(tmp_path / 'ibims'), '--model', str(tiny_model_dir), '--device', 'cpu',
               '--methods', 'classical,lrda', '--iterations', '100', '--processing-size', '56',
               '--output', str(output)]
    store = output / 'frames' / 'ibims.jsonl'
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    # Ctrl-C once the first frame is complete, while the second is being computed.
    while not (store.is_file() and '"lrda"' in store.read_text()):
        assert process.poll() is None and time.monotonic() < deadline, process.stderr.read()
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert 'interrupted' in stderr and '--resume' in stderr.strip().splitlines()[-1]
    assert not (output / 'paper.json').exists()
    before = [json.loads(line) for line in store.read_text().splitlines()]
    finished = [(r.get('method'), r['index']) for r in before]
    assert ('lrda', 0) in finished and ('lrda', 1) not in finished

    resumed = subprocess.run(command + ['--resume'], cwd=REPO, capture_output=True, text=True,
                             timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    records = [json.loads(line) for line in store.read_text().splitlines()]
    assert records[:len(before)] == before  # what was done stays, untouched
    done = sorted((r['index'], r['method']) for r in records if r['kind'] == 'method')
    assert done == [(0, 'classical'), (0, 'lrda'), (1, 'classical'), (1, 'lrda')]
    data = json.loads((output / 'paper.json').read_text())
    assert data['datasets']['ibims']['methods']['lrda']['frames'] == 2


@pytest.mark.slow
def test_shared_data_with_the_demo_prior(shared_data, tmp_path):
    output = tmp_path / 'paper'
    result = _lrda('paper', '--kitti-dc', str(shared_data / 'kitti_dc'), '--nyuv2',
                   str(shared_data / 'nyu'), '--ibims', str(shared_data / 'ibims'),
                   '--model', 'demo', '--methods', 'scale-shift,lrda', '--max-frames', '1',
                   '--iterations', '1', '--processing-size', '112', '--output', str(output))
    assert result.returncode == 0, result.stderr
    data = json.loads((output / 'paper.json').read_text())
    assert data['demo_prior'] and data['paper_backbone'] == 'DAv2-L'
    assert set(data['datasets']) == {'ibims', 'nyuv2', 'kitti_dc'}
    for key, points in (('ibims', 1000), ('nyuv2', 500)):
        assert data['datasets'][key]['input_points_mean'] == points
    kitti = data['datasets']['kitti_dc']
    assert kitti['frames_evaluated'] == 1 and kitti['outliers_removed_mean'] > 100
    for result_ in data['datasets'].values():
        assert result_['methods']['lrda']['frames'] == 1
    assert 'VOID (`--void`), DDAD (`--ddad`)' in (output / 'paper.md').read_text()
    # The progress bar counts frames over all datasets and estimates the time left.
    assert re.search(r'paper: +\d+%\|.*\| 1/3 \[\d\d:\d\d<\d\d:\d\d', result.stderr)
