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

"""Tests of lrda_ros.datasets on the shared real samples and synthetic folders."""

import os
from pathlib import Path
import sys

from lrda_ros.datasets import (
    center_crop, DATASET_KINDS, Frame, GenericFolder, IBims, KittiDepthCompletion, NYU_INTRINSICS,
    NYUv2, NYUv2Mat, open_dataset, read_depth_png, read_intrinsics_txt, resize_frame,
    sample_sparse_from_gt, SamplingProtocol, VOID)
import numpy as np
from PIL import Image
import pytest


def _shared_data() -> Path:
    default = Path(__file__).resolve().parents[2] / 'shared' / 'data'
    return Path(os.environ.get('LRDA_SHARED_DATA', default))


def _real(folder: str) -> Path:
    path = _shared_data() / folder
    if not path.is_dir():
        pytest.skip(f'shared test data {path} is absent')
    return path


def _png16(path: Path, array: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array.astype(np.uint16)).save(path)


def _rgb(path: Path, array: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array.astype(np.uint8)).save(path)


# --------------------------------------------------------------------------- real data

def test_kitti_dc_real_frame():
    root = _real('kitti_dc')
    dataset = KittiDepthCompletion(root, outlier_filter=None)  # the raw LiDAR
    assert len(dataset) == 2 and dataset.name == 'kitti_dc'
    frames = list(dataset)
    assert [f.name for f in frames] == ['0000000005', '0000000082']
    assert frames[0].sequence == frames[1].sequence
    frame = frames[0]
    assert frame.rgb.shape == (375, 1242, 3) and frame.rgb.dtype == np.uint8
    for depth, folder, fraction in ((frame.sparse_depth, 'velodyne_raw', 0.04),
                                    (frame.gt_depth, 'groundtruth', 0.19)):
        raw = np.array(Image.open(root / folder / '0000000005.png'))
        assert raw.dtype == np.uint16
        assert depth.dtype == np.float32
        np.testing.assert_array_equal(depth > 0, raw > 0)
        assert abs((depth > 0).mean() - fraction) < 0.01
        rows, cols = np.nonzero(raw)
        for i in (0, len(rows) // 3, len(rows) - 1):
            assert depth[rows[i], cols[i]] == raw[rows[i], cols[i]] / 256.0
        values = depth[depth > 0]
        assert values.min() > 0.0 and values.max() < 90.0
    np.testing.assert_allclose(frame.K, [[721.5377, 0, 609.5593], [0, 721.5377, 172.854],
                                         [0, 0, 1]])
    # By default the protocol's outlier filter takes points out of the input, and only those.
    filtered = KittiDepthCompletion(root)[0]
    removed = (frame.sparse_depth > 0) & (filtered.sparse_depth == 0)
    assert filtered.notes['outliers_removed'] == removed.sum() > 0
    assert not ((filtered.sparse_depth > 0) & (frame.sparse_depth == 0)).any()
    np.testing.assert_array_equal(filtered.gt_depth, frame.gt_depth)


def test_kitti_dc_official_crop():
    root = _real('kitti_dc')
    full = KittiDepthCompletion(root)[0]
    crop = KittiDepthCompletion(root, crop_to_official=True)[0]
    assert crop.rgb.shape == (352, 1216, 3)
    np.testing.assert_array_equal(crop.gt_depth, full.gt_depth[23:, 13:13 + 1216])
    np.testing.assert_array_equal(crop.rgb, full.rgb[23:, 13:13 + 1216])
    assert crop.K[0, 2] == pytest.approx(609.5593 - 13)
    assert crop.K[1, 2] == pytest.approx(172.854 - 23)


def test_nyuv2_real_protocol():
    root = _real('nyu')
    dataset = NYUv2(root)
    assert len(dataset) == 3
    frame = dataset[0]
    assert frame.name == '00000' and frame.sequence is None
    assert frame.rgb.shape == (228, 304, 3)
    gt, sparse = frame.gt_depth, frame.sparse_depth
    assert gt.shape == sparse.shape == (228, 304)
    values = gt[gt > 0]
    assert values.min() > 0.5 and values.max() < 10.0
    # GT is the raw millimetres, nearest-sampled at half resolution then cropped by (8, 6).
    raw = np.array(Image.open(root / 'depth' / 'sync_depth_00000.png'))
    assert raw.dtype == np.uint16
    expected = raw[1::2, 1::2][6:6 + 228, 8:8 + 304].astype(np.float32) / np.float32(1000.0)
    np.testing.assert_array_equal(gt, expected)
    # Exactly 500 sparse points, equal to the GT there.
    points = sparse > 0
    assert points.sum() == 500
    np.testing.assert_array_equal(sparse[points], gt[points])
    # Deterministic for a seed, different for another.
    np.testing.assert_array_equal(NYUv2(root)[0].sparse_depth, sparse)
    other = NYUv2(root, SamplingProtocol(num_points=500, seed=1, resolution=(320, 240),
                                         crop=(304, 228), max_depth=10.0))[0].sparse_depth
    assert not np.array_equal(other > 0, points)
    # K: halved (pixel-centre convention) then shifted by the crop.
    fx, fy, cx, cy = NYU_INTRINSICS
    np.testing.assert_allclose(frame.K, [[fx / 2, 0, (cx + 0.5) / 2 - 0.5 - 8],
                                         [0, fy / 2, (cy + 0.5) / 2 - 0.5 - 6], [0, 0, 1]])


def test_nyuv2_native_resolution():
    frame = NYUv2(_real('nyu'), protocol=None)[1]
    assert frame.rgb.shape == (480, 640, 3)
    assert not frame.sparse_depth.any()
    np.testing.assert_allclose(frame.K[0], [NYU_INTRINSICS[0], 0, NYU_INTRINSICS[2]])


def test_ibims_real_frame():
    root = _real('ibims')
    frame = IBims(root)[0]
    assert frame.rgb.shape == (480, 640, 3) and frame.K is None
    points = frame.sparse_depth > 0
    assert points.sum() == 1000
    np.testing.assert_array_equal(frame.sparse_depth[points], frame.gt_depth[points])
    sampled = IBims(root, num_points=50, seed=3)[0].sparse_depth  # no sparse_50.npy: sampled
    assert (sampled > 0).sum() == 50
    np.testing.assert_array_equal(sampled[sampled > 0], frame.gt_depth[sampled > 0])


# --------------------------------------------------------------------------- synthetic layouts

def _void_sequence(root: Path, stems, offset: int) -> dict:
    truth = {}
    for i, stem in enumerate(stems):
        rgb = np.full((6, 8, 3), 10 * i + offset, dtype=np.uint8)
        sparse = np.zeros((6, 8), dtype=np.uint16)
        sparse[1, 2] = 512 + i  # 2.0 m + i / 256
        sparse[4, 5] = 1000     # dropped by the validity map
        validity = (sparse > 0).astype(np.uint8)
        validity[4, 5] = 0
        gt = np.full((6, 8), 300 * (i + 1), dtype=np.uint16)
        _rgb(root / 'image' / f'{stem}.png', rgb)
        _png16(root / 'sparse_depth' / f'{stem}.png', sparse)
        _rgb(root / 'validity_map' / f'{stem}.png', validity)
        _png16(root / 'ground_truth' / f'{stem}.png', gt)
        truth[stem] = (rgb, (512 + i) / 256.0, 300 * (i + 1) / 256.0)
    (root / 'K.txt').write_text('500 0 320\n0 501 240\n0 0 1\n')
    return truth


def test_void_layout(tmp_path):
    data = tmp_path / 'void_1500' / 'data'
    truth = {}
    truth.update(_void_sequence(data / 'seq_b', ['1000.1', '999.9'], offset=0))
    truth.update(_void_sequence(data / 'seq_a', ['20.5'], offset=100))
    for root in (tmp_path / 'void_1500', data):
        dataset = open_dataset('void', root)
        frames = list(dataset)
        assert [f.name for f in frames] == ['seq_a/20.5', 'seq_b/999.9', 'seq_b/1000.1']
        assert [f.stamp_ns for f in frames] == [20_500_000_000, 999_900_000_000,
                                                1_000_100_000_000]
        for frame in frames:
            rgb, sparse_value, gt_value = truth[frame.name.split('/')[1]]
            np.testing.assert_array_equal(frame.rgb, rgb)
            assert frame.sparse_depth[1, 2] == np.float32(sparse_value)
            assert np.count_nonzero(frame.sparse_depth) == 1
            np.testing.assert_array_equal(frame.gt_depth, np.float32(gt_value))
            np.testing.assert_allclose(frame.K, [[500, 0, 320], [0, 501, 240], [0, 0, 1]])
    single = VOID(data / 'seq_b')
    assert len(single) == 2 and single[0].sequence == 'seq_b'


def test_generic_folder_layout(tmp_path):
    rgb0 = np.arange(4 * 5 * 3).reshape(4, 5, 3).astype(np.uint8)
    _rgb(tmp_path / 'rgb' / '000.png', rgb0)
    _rgb(tmp_path / 'rgb' / '001.png', rgb0[::-1])
    sparse_png = np.zeros((4, 5), dtype=np.uint16)
    sparse_png[2, 3] = 65535
    _png16(tmp_path / 'sparse' / '000.png', sparse_png)
    sparse_npy = np.zeros((4, 5), dtype=np.float32)
    sparse_npy[0, 0] = 3.25
    sparse_npy[0, 1] = np.nan  # sanitised to 0
    np.save(tmp_path / 'sparse' / '001.npy', sparse_npy)
    (tmp_path / 'gt').mkdir()
    np.save(tmp_path / 'gt' / '000.npy', np.full((4, 5), 2.5))
    np.save(tmp_path / 'gt' / '001.npy', np.full((4, 5), 4.0))
    (tmp_path / 'K.txt').write_text('K: 100 0 2 0 100 1.5 0 0 1\n')
    (tmp_path / 'intrinsics').mkdir()
    (tmp_path / 'intrinsics' / '001.txt').write_text('200 0 2 0 200 1.5 0 0 1\n')

    dataset = open_dataset('folder', tmp_path)
    first, second = list(dataset)
    np.testing.assert_array_equal(first.rgb, rgb0)
    assert first.sparse_depth[2, 3] == 65535 / 256.0 and np.count_nonzero(first.sparse_depth) == 1
    np.testing.assert_array_equal(first.gt_depth, 2.5)
    assert first.K[0, 0] == 100.0 and second.K[0, 0] == 200.0
    assert second.sparse_depth[0, 0] == 3.25 and np.count_nonzero(second.sparse_depth) == 1
    assert first.sequence == second.sequence == tmp_path.name
    assert GenericFolder(tmp_path, sequential=False)[0].sequence is None
    assert first.stamp_ns is None  # '000' is a frame number, not a time

    (tmp_path / 'sparse' / '001.npy').unlink()
    with pytest.raises(FileNotFoundError, match='sparse/001'):
        GenericFolder(tmp_path)


def test_registry_errors(tmp_path):
    with pytest.raises(ValueError) as info:
        open_dataset('nope', tmp_path)
    for kind in DATASET_KINDS:
        assert kind in str(info.value)
    assert set(DATASET_KINDS) == {'kitti_dc', 'kitti_object', 'nyuv2', 'nyuv2_mat', 'ibims',
                                  'void', 'ddad', 'folder', 'rosbag'}
    for kind, hint in (('kitti_dc', 'velodyne_raw'), ('nyuv2', 'sync_depth'),
                       ('ibims', 'gt.npy'), ('void', 'sparse_depth'), ('folder', 'sparse')):
        with pytest.raises(FileNotFoundError, match='the dataset root .* does not exist'):
            open_dataset(kind, tmp_path / 'missing')
        with pytest.raises(FileNotFoundError, match=hint):  # there, but not laid out so
            open_dataset(kind, tmp_path)


def test_kitti_official_names(tmp_path):
    stem = '2011_09_26_drive_0002_sync_{}_0000000005_image_02'
    _rgb(tmp_path / 'image' / f'{stem.format("image")}.png', np.zeros((4, 6, 3)))
    sparse = np.zeros((4, 6), dtype=np.uint16)
    sparse[3, 1] = 2560
    _png16(tmp_path / 'velodyne_raw' / f'{stem.format("velodyne_raw")}.png', sparse)
    _png16(tmp_path / 'groundtruth_depth' / f'{stem.format("groundtruth_depth")}.png',
           sparse * 2)
    (tmp_path / 'intrinsics').mkdir()
    (tmp_path / 'intrinsics' / f'{stem.format("image")}.txt').write_text(
        '721.5 0 600 0 721.5 170 0 0 1')
    frame = KittiDepthCompletion(tmp_path)[0]
    assert frame.sequence == '2011_09_26_drive_0002_sync_image_02'
    assert frame.sparse_depth[3, 1] == 10.0 and frame.gt_depth[3, 1] == 20.0
    assert frame.K[0, 2] == 600.0


# --------------------------------------------------------------------------- NYUv2 .mat / h5

def test_nyuv2_mat_needs_h5py(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, 'h5py', None)
    with pytest.raises(ImportError, match='pip install h5py'):
        NYUv2Mat(tmp_path / 'nyu_depth_v2_labeled.mat')


def test_nyuv2_mat_round_trip(tmp_path):
    h5py = pytest.importorskip('h5py')
    rgb = np.random.default_rng(0).integers(0, 255, (2, 480, 640, 3), dtype=np.uint8)
    depth = np.random.default_rng(1).uniform(0.5, 9.0, (2, 480, 640)).astype(np.float32)
    path = tmp_path / 'nyu_depth_v2_labeled.mat'
    with h5py.File(path, 'w') as f:
        f['images'] = np.transpose(rgb, (0, 3, 2, 1))  # MATLAB layout read by h5py: N,3,W,H
        f['depths'] = np.transpose(depth, (0, 2, 1))
    frame = NYUv2Mat(path, protocol=None, indices=[1])[0]
    assert frame.name == '0002'
    np.testing.assert_array_equal(frame.rgb, rgb[1])
    np.testing.assert_array_equal(frame.gt_depth, depth[1])


# --------------------------------------------------------------------------- helpers

def test_read_depth_png_is_exact_16_bit(tmp_path):
    raw = np.array([[0, 1, 255], [256, 40000, 65535]], dtype=np.uint16)
    _png16(tmp_path / 'd.png', raw)
    np.testing.assert_array_equal(read_depth_png(tmp_path / 'd.png'), raw / 256.0)
    _rgb(tmp_path / 'eight.png', np.zeros((2, 2)))
    with pytest.raises(ValueError, match='16-bit'):
        read_depth_png(tmp_path / 'eight.png')


def test_read_intrinsics_variants(tmp_path):
    expected = np.array([[721.5377, 0, 609.5593], [0, 721.5377, 172.854], [0, 0, 1]])
    texts = ('K: 721.5377 0 609.5593 0 721.5377 172.854 0 0 1\n',
             '# c\nP_rect_02: 721.5377 0 609.5593 44.8 0 721.5377 172.854 0.2 0 0 1 0.002\n',
             '721.5377 0 609.5593\n0 721.5377 172.854\n0 0 1\n')
    for i, text in enumerate(texts):
        (tmp_path / f'{i}.txt').write_text(text)
        np.testing.assert_allclose(read_intrinsics_txt(tmp_path / f'{i}.txt'), expected)
    (tmp_path / 'bad.txt').write_text('1 2 3\n')
    with pytest.raises(ValueError, match='bad.txt'):
        read_intrinsics_txt(tmp_path / 'bad.txt')


def test_sample_sparse_from_gt():
    gt = np.zeros((20, 30), dtype=np.float32)
    gt[5:15, 10:20] = np.arange(100, dtype=np.float32).reshape(10, 10) + 1.0
    a = sample_sparse_from_gt(gt, 40, np.random.default_rng(7))
    b = sample_sparse_from_gt(gt, 40, np.random.default_rng(7))
    c = sample_sparse_from_gt(gt, 40, np.random.default_rng(8))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert np.count_nonzero(a) == 40
    np.testing.assert_array_equal(a[a > 0], gt[a > 0])
    with pytest.raises(ValueError, match='only 100 valid'):
        sample_sparse_from_gt(gt, 101, np.random.default_rng(0))


def _frame(width=8, height=6):
    depth = np.arange(width * height, dtype=np.float32).reshape(height, width) + 1.0
    K = np.array([[10.0, 0, 3.5], [0, 12.0, 2.5], [0, 0, 1]])
    return Frame(name='f', rgb=np.zeros((height, width, 3), np.uint8), sparse_depth=depth,
                 gt_depth=depth.copy(), K=K)


def test_resize_and_crop_frame():
    frame = _frame()
    half = resize_frame(frame, (4, 3))
    assert half.rgb.shape == (3, 4, 3)
    assert set(half.gt_depth.ravel()) <= set(frame.gt_depth.ravel())  # no invented depth
    np.testing.assert_array_equal(half.gt_depth, frame.gt_depth[1::2, 1::2])
    # The principal point at the image centre stays at the centre.
    np.testing.assert_allclose(half.K, [[5.0, 0, 1.5], [0, 6.0, 1.0], [0, 0, 1]])
    crop = center_crop(frame, (4, 4))
    np.testing.assert_array_equal(crop.sparse_depth, frame.sparse_depth[1:5, 2:6])
    np.testing.assert_allclose(crop.K[:2, 2], [1.5, 1.5])
    with pytest.raises(ValueError, match='does not fit'):
        center_crop(frame, (9, 4))


def test_frame_validation():
    with pytest.raises(ValueError, match='sparse_depth'):
        Frame(name='x', rgb=np.zeros((2, 2, 3), np.uint8),
              sparse_depth=np.zeros((2, 3), np.float32))
