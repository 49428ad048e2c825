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

"""The benchmark protocols on files laid out as each dataset distributes them, and real samples."""

from pathlib import Path
import subprocess
import sys

from lrda_ros.datasets import (
    IBims, KittiDepthCompletion, marigold_dc_points, MatFileError, NYUv2, NYUv2Mat,
    open_dataset, read_mat, split_indices, VOID)
from lrda_ros.errors import InputError
from lrda_ros.eval.run import EvalOptions, open_source
from lrda_ros.geometry import filter_outliers
from matv5 import write_mat
import numpy as np
from PIL import Image
import pytest

REPO = Path(__file__).resolve().parents[1]


def _png(path: Path, array: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array).save(path)


# --------------------------------------------------------------------------- MAT files

@pytest.mark.parametrize('compress', [False, True])
def test_mat_reader_reads_structs_logicals_and_narrow_storage(tmp_path, compress):
    rng = np.random.default_rng(0)
    data = {'rgb': rng.integers(0, 255, (5, 7, 3), dtype=np.uint8),
            'depth': rng.uniform(0.5, 9.0, (5, 7)), 'mask_invalid': rng.random((5, 7)) > 0.3,
            'calib': np.array([[500.0, 0, 0], [0, 501, 0], [320, 240, 1]]), 'name': 'office_01'}
    write_mat(tmp_path / 'a.mat', {'data': data, 'testNdxs': np.array([[1.0], [300.0]])},
              compress=compress, stored_as={'testNdxs': 'u2'})
    variables = read_mat(tmp_path / 'a.mat')
    got = variables['data']
    for key in ('rgb', 'depth', 'calib'):
        np.testing.assert_array_equal(got[key], data[key])
    assert got['mask_invalid'].dtype == bool
    np.testing.assert_array_equal(got['mask_invalid'], data['mask_invalid'])
    assert got['name'] == 'office_01'
    assert variables['testNdxs'].dtype == np.float64
    np.testing.assert_array_equal(variables['testNdxs'], [[1.0], [300.0]])


def test_mat_reader_agrees_with_scipy_when_installed(tmp_path):
    scipy_io = pytest.importorskip('scipy.io')
    values = {'trainNdxs': np.arange(1, 8, dtype=float)[:, None],
              'data': {'depth': np.linspace(0, 1, 12).reshape(3, 4), 'label': 'x'}}
    for compress in (False, True):
        scipy_io.savemat(tmp_path / 's.mat', values, do_compression=compress)
        got = read_mat(tmp_path / 's.mat')
        np.testing.assert_array_equal(got['trainNdxs'], values['trainNdxs'])
        np.testing.assert_array_equal(got['data']['depth'], values['data']['depth'])


def test_mat_reader_names_the_file_it_cannot_read(tmp_path):
    write_mat(tmp_path / 'cut.mat', {'x': np.ones((30, 30))})
    (tmp_path / 'cut.mat').write_bytes((tmp_path / 'cut.mat').read_bytes()[:400])
    with pytest.raises(MatFileError, match='cut.mat: truncated'):
        read_mat(tmp_path / 'cut.mat')
    (tmp_path / 'v73.mat').write_bytes(b'\0' * 512 + b'\x89HDF\r\n\x1a\n' + b'\0' * 64)
    with pytest.raises(InputError, match='v73.mat: a MATLAB 7.3'):
        read_mat(tmp_path / 'v73.mat')


# --------------------------------------------------------------------------- iBims-1

def _ibims_image(seed: int, height: int = 30, width: int = 40) -> dict:
    rng = np.random.default_rng(seed)
    depth = np.round(rng.uniform(1.0, 8.0, (height, width)) * 1310.7) / 1310.7
    depth[rng.random(depth.shape) < 0.05] = 0.0
    return {'rgb': rng.integers(0, 255, (height, width, 3), dtype=np.uint8), 'depth': depth,
            'mask_invalid': rng.random(depth.shape) > 0.1,
            'mask_transp': rng.random(depth.shape) > 0.1,
            'calib': np.array([[560.0, 0, 0], [0, 561.0, 0], [319.5, 239.5, 1]])}


def _expected_ibims(image: dict, points: int = 100):
    valid = image['mask_invalid'] & image['mask_transp'] & (image['depth'] != 0)
    gt = np.where(valid, image['depth'], 0).astype(np.float32)
    rows = np.argwhere(valid)
    np.random.RandomState(2024).shuffle(rows)  # Marigold-DC's deterministic_select_k_true
    sparse = np.zeros_like(gt)
    sparse[tuple(rows[:points].T)] = gt[tuple(rows[:points].T)]
    return gt, sparse


def test_ibims_official_mat_layout(tmp_path):
    images = {'corridor_01': _ibims_image(0), 'office_02': _ibims_image(1)}
    folder = tmp_path / 'ibims1_core_mat'
    folder.mkdir()
    for name, image in images.items():
        write_mat(folder / f'{name}.mat', {'data': image}, compress=True)
    (tmp_path / 'imagelist.txt').write_text('office_02\ncorridor_01\n')
    dataset = IBims(tmp_path, num_points=100)
    assert dataset.layout == 'mat' and [f.name for f in dataset] == ['office_02', 'corridor_01']
    frame = dataset[1]
    gt, sparse = _expected_ibims(images['corridor_01'])
    np.testing.assert_array_equal(frame.rgb, images['corridor_01']['rgb'])
    np.testing.assert_array_equal(frame.gt_depth, gt)
    np.testing.assert_array_equal(frame.sparse_depth, sparse)
    np.testing.assert_allclose(frame.K, [[560, 0, 319.5], [0, 561, 239.5], [0, 0, 1]])
    assert (IBims(folder, num_points=100)[0].sparse_depth > 0).sum() == 100


def test_ibims_official_raw_layout(tmp_path):
    image = _ibims_image(2)
    raw = tmp_path / 'ibims1_core_raw'
    _png(raw / 'rgb' / 'kitchen_01.png', image['rgb'])
    _png(raw / 'depth' / 'kitchen_01.png',
         np.round(image['depth'] * 65535 / 50).astype(np.uint16))
    _png(raw / 'mask_invalid' / 'kitchen_01.png', image['mask_invalid'])
    _png(raw / 'mask_transp' / 'kitchen_01.png', image['mask_transp'])
    (raw / 'calib').mkdir()
    (raw / 'calib' / 'kitchen_01.txt').write_text('560.0,561.0,319.5,239.5\n')
    frame = IBims(tmp_path, num_points=100)[0]
    gt, sparse = _expected_ibims(image)
    np.testing.assert_allclose(frame.gt_depth, gt, atol=1e-5)
    np.testing.assert_array_equal(frame.sparse_depth > 0, sparse > 0)
    np.testing.assert_allclose(frame.K, [[560, 0, 319.5], [0, 561, 239.5], [0, 0, 1]])
    (raw / 'mask_transp' / 'kitchen_01.png').unlink()
    with pytest.raises(FileNotFoundError, match='mask_transp/kitchen_01.png'):
        IBims(tmp_path)


def test_ibims_draw_reproduces_the_marigold_dc_sample(shared_data):
    root = shared_data / 'ibims'
    gt = np.load(root / 'gt.npy')
    shipped = np.load(root / 'sparse_1000.npy')
    np.testing.assert_array_equal(marigold_dc_points(gt > 0), shipped > 0)
    frame = IBims(root)[0]
    assert frame.rgb.shape == (480, 640, 3) and (frame.sparse_depth > 0).sum() == 1000
    np.testing.assert_array_equal(frame.sparse_depth, shipped.astype(np.float32))


# --------------------------------------------------------------------------- VOID

def _void_release(tmp_path: Path) -> dict:
    """Write void_release/void_1500 with two sequences and the test lists (release paths)."""
    base = tmp_path / 'void_release' / 'void_1500'
    lists = {role: [] for role in ('image', 'sparse_depth', 'validity_map', 'ground_truth',
                                   'intrinsics')}
    truth = {}
    for s, sequence in enumerate(('birthplace_of_internet', 'classroom')):
        seq = base / 'data' / sequence
        seq.mkdir(parents=True)
        (seq / 'K.txt').write_text(f'{500 + s} 0 320\n0 501 240\n0 0 1\n')
        for i, stamp in enumerate(('1552097915.4047', '1552097916.1052', '1552097917.0001')):
            rgb = np.full((6, 8, 3), 40 * s + i, np.uint8)
            sparse = np.zeros((6, 8), np.uint16)
            sparse[2, 3] = 256 * (s + 1) + i
            gt = np.full((6, 8), 300 + i, np.uint16)
            _png(seq / 'image' / f'{stamp}.png', rgb)
            _png(seq / 'sparse_depth' / f'{stamp}.png', sparse)
            _png(seq / 'validity_map' / f'{stamp}.png', (sparse > 0).astype(np.uint16) * 256)
            _png(seq / 'ground_truth' / f'{stamp}.png', gt)
            if i == 1:
                continue  # a frame of the sequence that the test split does not use
            for role in ('image', 'sparse_depth', 'validity_map', 'ground_truth'):
                lists[role].append(f'void_1500/data/{sequence}/{role}/{stamp}.png')
            lists['intrinsics'].append(f'void_1500/data/{sequence}/K.txt')
            truth[f'{sequence}/{stamp}'] = (rgb, sparse / 256.0, gt / 256.0, 500 + s)
    for role, lines in lists.items():
        (base / f'test_{role}.txt').write_text('\n'.join(lines) + '\n')
    return truth


def test_void_release_test_lists(tmp_path):
    truth = _void_release(tmp_path)
    for root in (tmp_path / 'void_release', tmp_path / 'void_release' / 'void_1500'):
        dataset = VOID(root)
        assert [f.name for f in dataset] == list(truth)
        for frame in dataset:
            rgb, sparse, gt, fx = truth[frame.name]
            np.testing.assert_array_equal(frame.rgb, rgb)
            np.testing.assert_array_equal(frame.sparse_depth, sparse.astype(np.float32))
            np.testing.assert_array_equal(frame.gt_depth, gt.astype(np.float32))
            assert frame.K[0, 0] == fx and frame.sequence == frame.name.split('/')[0]
    # split=None ignores the lists: every frame of every sequence.
    assert len(VOID(tmp_path / 'void_release' / 'void_1500', split=None)) == 6
    lines = tmp_path / 'void_release' / 'void_1500' / 'test_ground_truth.txt'
    lines.write_text('\n'.join(lines.read_text().split()[:-1]) + '\n')
    with pytest.raises(FileNotFoundError, match='test_ground_truth.txt has 3 lines'):
        VOID(tmp_path / 'void_release')


# --------------------------------------------------------------------------- NYUv2

def test_nyu_official_split_file(tmp_path):
    write_mat(tmp_path / 'splits.mat', {'trainNdxs': np.array([[1.0], [3.0]]),
                                        'testNdxs': np.array([[2.0], [4.0], [5.0]])},
              stored_as={'trainNdxs': 'u1', 'testNdxs': 'u2'})
    assert split_indices(tmp_path / 'splits.mat', 'test') == [1, 3, 4]
    assert split_indices(tmp_path / 'splits.mat', 'train') == [0, 2]
    with pytest.raises(FileNotFoundError, match='splits.mat'):
        split_indices(tmp_path / 'missing' / 'splits.mat', 'test')


def test_nyu_labelled_mat_takes_the_test_split(tmp_path):
    h5py = pytest.importorskip('h5py')
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 255, (5, 480, 640, 3), dtype=np.uint8)
    depth = rng.uniform(0.5, 12.0, (5, 480, 640)).astype(np.float32)
    with h5py.File(tmp_path / 'nyu_depth_v2_labeled.mat', 'w') as f:
        f['images'] = np.transpose(rgb, (0, 3, 2, 1))
        f['depths'] = np.transpose(depth, (0, 2, 1))
    write_mat(tmp_path / 'splits.mat', {'trainNdxs': np.array([[1.0], [3.0]]),
                                        'testNdxs': np.array([[2.0], [4.0], [5.0]])})
    dataset = NYUv2Mat(tmp_path / 'nyu_depth_v2_labeled.mat')
    assert [f.name for f in dataset] == ['0002', '0004', '0005']
    frame = dataset[0]
    assert frame.rgb.shape == (228, 304, 3) and (frame.sparse_depth > 0).sum() == 500
    assert frame.gt_depth.max() <= 10.0
    np.testing.assert_array_equal(frame.gt_depth[frame.gt_depth > 0],
                                  depth[1][1::2, 1::2][6:234, 8:312][frame.gt_depth > 0])


def test_nyu_bts_official_splits_layout(tmp_path):
    rng = np.random.default_rng(1)
    for scene, index in (('bathroom', 45), ('kitchen', 12)):
        folder = tmp_path / 'official_splits' / 'test' / scene
        _png(folder / f'rgb_{index:05d}.jpg', rng.integers(0, 255, (480, 640, 3), np.uint8))
        _png(folder / f'sync_depth_{index:05d}.png',
             rng.integers(500, 12000, (480, 640)).astype(np.uint16))
    (tmp_path / 'official_splits' / 'train').mkdir()
    dataset = NYUv2(tmp_path / 'official_splits')
    assert [f.name for f in dataset] == ['bathroom/00045', 'kitchen/00012']
    assert dataset[0].gt_depth.shape == (228, 304) and dataset[0].gt_depth.max() <= 10.0


def _nyu_options(root: Path, output: Path, **extra) -> EvalOptions:
    return EvalOptions(kind='nyuv2', root=root, output=output, methods=('classical',),
                       progress=False, **extra)


def _nyu_beyond_cap(shared_data: Path, root: Path) -> np.ndarray:
    """Copy a real NYUv2 frame with a wall 12 m away in its centre (beyond the 10 m cap)."""
    depth = np.array(Image.open(shared_data / 'nyu' / 'depth' / 'sync_depth_00000.png'))
    depth[200:280, 280:360] = 12000
    _png(root / 'depth' / 'sync_depth_00000.png', depth)
    _png(root / 'rgb' / 'rgb_00000.jpg',
         np.array(Image.open(shared_data / 'nyu' / 'rgb' / 'rgb_00000.jpg')))
    return depth


@pytest.mark.parametrize('num_points', [None, 500, 64])
def test_nyu_num_points_changes_only_the_count(shared_data, tmp_path, num_points):
    _nyu_beyond_cap(shared_data, tmp_path / 'nyu')
    frame = open_source(_nyu_options(tmp_path / 'nyu', tmp_path, num_points=num_points))[0]
    assert frame.rgb.shape == (228, 304, 3) and frame.gt_depth.shape == (228, 304)
    # The wall (rows 100..139, cols 140..179 at half size, minus the 6/8 crop) is capped away.
    assert 0 < frame.gt_depth.max() <= 10.0
    assert not frame.gt_depth[94:134, 132:172].any() and frame.gt_depth[:90].any()
    assert (frame.sparse_depth > 0).sum() == (num_points or 500)


def test_nyu_cli_evaluates_304x228_with_num_points(shared_data, tmp_path):
    _nyu_beyond_cap(shared_data, tmp_path / 'nyu')
    for extra in ([], ['--num-points', '500']):
        output = tmp_path / f'out{len(extra)}'
        result = subprocess.run(
            [sys.executable, '-m', 'lrda_ros.cli', 'eval', '--dataset', 'nyuv2', '--root',
             str(tmp_path / 'nyu'), '--methods', 'classical', '--max-frames', '1',
             '--figures', '0', '--save-depth', '--output', str(output), *extra],
            cwd=REPO, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        depth = np.load(output / 'depth' / 'classical' / '00000.npy')
        assert depth.shape == (228, 304)
        # Scored on the capped ground truth: fewer valid pixels than the frame has.
        rows = (output / 'frames.csv').read_text().splitlines()
        valid = int(dict(zip(rows[0].split(','), rows[1].split(',')))['num_valid'])
        assert 0 < valid < 228 * 304 - 40 * 40


# --------------------------------------------------------------------------- KITTI DC

def test_kitti_selection_layout_filters_the_lidar(tmp_path):
    root = tmp_path / 'depth_selection' / 'val_selection_cropped'
    stem = '2011_09_26_drive_0002_sync_image_0000000005_image_02'
    rng = np.random.default_rng(3)
    sparse = np.zeros((352, 1216), np.uint16)
    sparse[100:140:2, 300:340:2] = 5 * 256      # an object at 5 m
    sparse[121, 321] = 40 * 256                 # a return seen through it
    _png(root / 'image' / f'{stem}.png', rng.integers(0, 255, (352, 1216, 3), np.uint8))
    for folder in ('velodyne_raw', 'groundtruth_depth'):  # the selection's per-folder names
        _png(root / folder / f"{stem.replace('_image_', f'_{folder}_', 1)}.png", sparse)
    (root / 'intrinsics').mkdir()
    (root / 'intrinsics' / f'{stem}.txt').write_text('721.5 0 596.5 0 721.5 149.8 0 0 1\n')
    frame = KittiDepthCompletion(tmp_path / 'depth_selection')[0]
    assert frame.sparse_depth[121, 321] == 0 and frame.notes['outliers_removed'] == 1
    assert frame.gt_depth[121, 321] == 40.0
    raw = KittiDepthCompletion(root, outlier_filter=None)[0]
    assert raw.sparse_depth[121, 321] == 40.0


def test_kitti_real_frames_filter_effect(shared_data):
    root = shared_data / 'kitti_dc'
    unfiltered = KittiDepthCompletion(root, crop_to_official=True, outlier_filter=None)
    for frame, raw in zip(KittiDepthCompletion(root, crop_to_official=True), unfiltered):
        assert (frame.width, frame.height) == (1216, 352) and frame.name == raw.name
        removed = (raw.sparse_depth > 0) & (frame.sparse_depth == 0)
        # A few per cent of the points go, and those disagree with the ground truth.
        assert 0.03 < removed.sum() / (raw.sparse_depth > 0).sum() < 0.2
        both = removed & (frame.gt_depth > 0)
        kept = (frame.sparse_depth > 0) & (frame.gt_depth > 0)
        error = np.abs(raw.sparse_depth - frame.gt_depth)
        assert error[both].mean() > 5 * error[kept].mean()
        np.testing.assert_array_equal(filter_outliers(raw.sparse_depth)[0], frame.sparse_depth)


def test_open_dataset_knows_ddad():
    with pytest.raises(FileNotFoundError, match='no ddad.json'):
        open_dataset('ddad', REPO / 'test')
