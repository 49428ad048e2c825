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

"""Evaluation on foreign data: bag synchronization errors, folder hold-out, KITTI object, CLI."""

from __future__ import annotations

import csv
from pathlib import Path
import subprocess
import sys

import cv2
from lrda_ros.datasets import Frame, open_dataset
from lrda_ros.datasets.kitti_object import kitti_object_geometry, read_kitti_calib
from lrda_ros.datasets.rosbag import RosbagDataset
from lrda_ros.eval.run import EvalOptions, open_source, run_evaluation
from lrda_ros.geometry import CameraModel, RigidTransform
from lrda_ros.messages.rosbag import BagError
import numpy as np
from PIL import Image
import pytest

ROOT = Path(__file__).resolve().parents[1]
K_TEST = np.array([[50.0, 0.0, 31.5], [0.0, 50.0, 23.5], [0.0, 0.0, 1.0]])


# --------------------------------------------------------------------------- rosbag inputs

def _wall_points() -> np.ndarray:
    """Points of a wall 5 m ahead in the camera (= LiDAR) frame, inside a 64x48 image."""
    xs, ys = np.meshgrid(np.linspace(-2.5, 2.5, 40), np.linspace(-1.8, 1.8, 30))
    return np.stack([xs.ravel(), ys.ravel(), np.full(xs.size, 5.0)], axis=1)


def _write_bag(path: Path, lidar_offset_s: float = 0.0, info_size=(64, 48),
               frames: int = 3) -> Path:
    from lrda_ros.ros.bag_writer import stamped_header, write_bag
    from lrda_ros.ros.builders import (
        camera_model_to_camera_info, rgb_to_image_msg, xyz_to_pointcloud2)

    camera = CameraModel(K_TEST, *info_size)
    rgb = np.random.default_rng(0).integers(0, 255, (48, 64, 3), dtype=np.uint8)
    base = 1_700_000_000 * 10**9
    offset = int(round(lidar_offset_s * 1e9))

    def messages():
        for index in range(frames):
            stamp = base + index * 100_000_000
            header = stamped_header('camera', stamp)
            yield '/cam/image', stamp, rgb_to_image_msg(rgb, header)
            yield '/cam/info', stamp, camera_model_to_camera_info(camera, header)
            yield '/lidar', stamp + offset, xyz_to_pointcloud2(
                _wall_points(), stamped_header('lidar', stamp + offset))

    write_bag(path, messages(), [('camera', 'lidar', RigidTransform.identity())], base)
    return path


def test_zero_synchronized_frames_fail_with_the_smallest_offset_and_the_slop(tmp_path):
    bag = _write_bag(tmp_path / 'offset', lidar_offset_s=5.0)
    with pytest.raises(BagError) as raised:
        RosbagDataset(bag)
    message = str(raised.value)
    assert 'no synchronized frames' in message
    # Images at 0.0-0.2 s, LiDAR at 5.0-5.2 s: the closest pair is 4.8 s apart.
    assert 'smallest stamp offset seen is 4.800 s' in message and '/lidar +4.800 s' in message
    assert 'slop 0.050 s' in message and '--slop' in message
    # Widening the slop past the offset synchronizes every frame, as the node's sync.slop would.
    assert len(RosbagDataset(bag, slop_s=5.5)) == 3


def test_slop_and_queue_size_reach_the_bag_synchronizer_and_are_bag_only(tmp_path):
    bag = _write_bag(tmp_path / 'offset', lidar_offset_s=5.0)
    options = EvalOptions(kind='rosbag', root=bag, output=tmp_path / 'out', slop_s=5.5,
                          queue_size=4)
    dataset = open_source(options)
    assert (dataset.slop_s, dataset.queue_size, len(dataset)) == (5.5, 4, 3)
    for bad in ({'slop_s': 0.1}, {'queue_size': 3}):
        with pytest.raises(ValueError, match='--slop and --queue-size synchronize bag topics'):
            open_source(EvalOptions(kind='folder', root=tmp_path, output=tmp_path, **bad))
    with pytest.raises(ValueError, match='--queue-size must be at least 1'):
        open_source(EvalOptions(kind='rosbag', root=bag, output=tmp_path, queue_size=0))


def test_camera_info_of_another_size_is_named_in_the_error(tmp_path):
    bag = _write_bag(tmp_path / 'info', info_size=(128, 96))
    with pytest.raises(BagError, match=r'/cam/info.*camera_info is 128x96 but the image is '
                                       r'64x48'):
        next(iter(RosbagDataset(bag)))


# --------------------------------------------------------------------------- folder

def _png16(path: Path, metres: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.round(metres * 256).astype(np.uint16)).save(path)


def _lidar_folder(root: Path, frames: int = 3, gt: bool = False) -> Path:
    rng = np.random.default_rng(1)
    for index in range(frames):
        rows = (np.arange(48)[:, None] + np.arange(56)[None]) / 20.0
        depth = (2.0 + rows + index * 0.1).astype(np.float32)
        sparse = np.where(rng.random(depth.shape) < 0.3, depth, 0.0)
        (root / 'rgb').mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 255, (48, 56, 3), dtype=np.uint8)).save(
            root / 'rgb' / f'{index:04d}.png')
        _png16(root / 'sparse' / f'{index:04d}.png', sparse)
        if gt:
            _png16(root / 'gt' / f'{index:04d}.png', depth)
    return root


def test_folder_holdout_withholds_lidar_pixels_as_ground_truth(tmp_path):
    root = _lidar_folder(tmp_path / 'lidar')
    plain = open_dataset('folder', root)
    held = open_source(EvalOptions(kind='folder', root=root, output=tmp_path, seed=3,
                                   holdout_fraction=0.25))
    for index, frame in enumerate(held):
        original = plain[index].sparse_depth
        given, truth = frame.sparse_depth > 0, frame.gt_depth > 0
        assert not np.any(given & truth)  # never in both
        np.testing.assert_array_equal(frame.sparse_depth + frame.gt_depth, original)
        assert truth.sum() == round(0.25 * np.count_nonzero(original))
    again = open_dataset('folder', root, holdout_fraction=0.25, seed=3)
    np.testing.assert_array_equal(again[1].gt_depth, held[1].gt_depth)
    with pytest.raises(ValueError, match='has gt/'):
        open_dataset('folder', _lidar_folder(tmp_path / 'with_gt', gt=True),
                     holdout_fraction=0.2)
    with pytest.raises(ValueError, match='--holdout applies to --bag and --dataset folder'):
        open_source(EvalOptions(kind='nyuv2', root=root, output=tmp_path, holdout_fraction=0.2))


def _iterations(output: Path) -> list[int]:
    return [int(row['iterations']) for row in csv.DictReader(open(output / 'frames.csv'))]


def test_independent_frames_keep_lrda_warm_from_carrying_adapters(tmp_path, tiny_model_dir):
    root = _lidar_folder(tmp_path / 'frames', gt=True)
    common = {'kind': 'folder', 'root': root, 'methods': ('lrda-warm',),
              'model': str(tiny_model_dir), 'device': 'cpu', 'iterations': 3,
              'warm_iterations': 1, 'schedule': 'paper', 'figures': 0, 'progress': False}
    run_evaluation(EvalOptions(output=tmp_path / 'sequence', **common))
    run_evaluation(EvalOptions(output=tmp_path / 'independent', independent=True, **common))
    assert _iterations(tmp_path / 'sequence') == [3, 1, 1]  # warm after the first frame
    assert _iterations(tmp_path / 'independent') == [3, 3, 3]  # every frame cold


# --------------------------------------------------------------------------- KITTI object

def _rotation(rx: float, ry: float, rz: float) -> np.ndarray:
    return cv2.Rodrigues(np.array([rx, ry, rz], dtype=np.float64))[0]


def _kitti_object_sample(root: Path) -> dict:
    """Write one KITTI object frame from a known geometry; return that geometry."""
    K = np.array([[700.0, 0.0, 300.5], [0.0, 710.0, 100.25], [0.0, 0.0, 1.0]])
    t_cam2 = np.array([0.06, -0.002, 0.003])  # camera 2 from the rectified camera 0
    P2 = np.hstack([K, (K @ t_cam2)[:, None]])
    R0 = _rotation(0.01, -0.008, 0.004)
    # Velodyne x forward, y left, z up -> camera x right, y down, z forward; slightly tilted.
    axes = np.array([[0.0, -1.0, 0.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0]])
    R_velo = _rotation(0.02, 0.01, -0.015) @ axes
    t_velo = np.array([-0.004, -0.076, -0.27])
    Tr = np.hstack([R_velo, t_velo[:, None]])
    lines = [f'P{i}: ' + ' '.join(f'{v:.12e}' for v in (P2 if i == 2 else np.hstack(
        [K, np.zeros((3, 1))])).ravel()) for i in range(4)]
    lines += ['R0_rect: ' + ' '.join(f'{v:.12e}' for v in R0.ravel()),
              'Tr_velo_to_cam: ' + ' '.join(f'{v:.12e}' for v in Tr.ravel()),
              'Tr_imu_to_velo: ' + ' '.join(['1', '0', '0', '0'] * 3)]
    for folder in ('image_2', 'velodyne', 'calib'):
        (root / 'training' / folder).mkdir(parents=True)
    (root / 'training' / 'calib' / '000007.txt').write_text('\n'.join(lines) + '\n\n')
    width, height = 600, 200
    Image.fromarray(np.full((height, width, 3), 90, np.uint8)).save(
        root / 'training' / 'image_2' / '000007.png')
    # Points ahead of the car, spread so that each lands on its own pixel.
    grid = np.stack(np.meshgrid(np.linspace(-6, 6, 25), np.linspace(-1.2, 1.2, 7)), -1)
    forward = np.linspace(6.0, 30.0, grid.shape[0] * grid.shape[1])
    points = np.column_stack([forward, grid.reshape(-1, 2), np.ones(forward.size)])
    points.astype('<f4').tofile(root / 'training' / 'velodyne' / '000007.bin')
    return {'K': K, 'P2': P2, 'R0': R0, 'Tr': Tr, 't_cam2': t_cam2, 'R_velo': R_velo,
            't_velo': t_velo, 'points': points[:, :3].astype(np.float32).astype(np.float64),
            'size': (width, height)}


def test_kitti_object_applies_the_camera_2_offset_of_p2(tmp_path):
    sample = _kitti_object_sample(tmp_path)
    # Independent reference 1: the devkit's formula, x = P2 R0_rect Tr_velo_to_cam X.
    homogeneous = np.column_stack([sample['points'], np.ones(len(sample['points']))])
    R0 = np.eye(4)
    R0[:3, :3] = sample['R0']
    Tr = np.vstack([sample['Tr'], [0, 0, 0, 1]])
    projected = (sample['P2'] @ R0 @ Tr @ homogeneous.T).T
    devkit_uv, devkit_depth = projected[:, :2] / projected[:, 2:], projected[:, 2]
    # Independent reference 2: OpenCV with the camera-2 pose composed by hand.
    rotation = sample['R0'] @ sample['R_velo']
    translation = sample['R0'] @ sample['t_velo'] + sample['t_cam2']
    cv_uv = cv2.projectPoints(sample['points'], cv2.Rodrigues(rotation)[0], translation,
                              sample['K'], None)[0][:, 0]
    np.testing.assert_allclose(cv_uv, devkit_uv, atol=1e-6)

    dataset = open_dataset('kitti_object', tmp_path, holdout_fraction=0.2)
    frame = dataset[0]
    assert frame.name == '000007' and frame.sequence is None
    np.testing.assert_allclose(frame.K, sample['K'])
    lidar = frame.sparse_depth + frame.gt_depth  # hold-out splits, never duplicates
    width, height = sample['size']
    cols, rows = np.floor(devkit_uv + 0.5).astype(int).T
    inside = (cols >= 0) & (cols < width) & (rows >= 0) & (rows < height)
    assert inside.sum() > 100
    assert np.count_nonzero(lidar) == inside.sum()
    np.testing.assert_allclose(lidar[rows[inside], cols[inside]], devkit_depth[inside],
                               rtol=1e-6)
    # Ignoring P2's fourth column would move the points by fx * 0.06 / z: 1.4 to 7 px here.
    without_offset = projected[:, 0] / projected[:, 2] - 700.0 * 0.06 / devkit_depth
    assert np.all(np.abs(without_offset - devkit_uv[:, 0]) > 1.0)
    held = frame.gt_depth > 0
    assert held.sum() == round(0.2 * inside.sum()) and not np.any(held & (frame.sparse_depth > 0))


def test_kitti_object_geometry_checks_its_calibration(tmp_path):
    sample = _kitti_object_sample(tmp_path)
    calib = read_kitti_calib(tmp_path / 'training' / 'calib' / '000007.txt')
    K, T = kitti_object_geometry(calib)
    np.testing.assert_allclose(T.translation, sample['R0'] @ sample['t_velo']
                               + sample['t_cam2'], atol=1e-9)
    del calib['R0_rect']
    with pytest.raises(ValueError, match="'R0_rect' needs 9 numbers"):
        kitti_object_geometry(calib)
    with pytest.raises(FileNotFoundError, match='no folder velodyne/'):
        (tmp_path / 'other' / 'image_2').mkdir(parents=True)
        open_dataset('kitti_object', tmp_path / 'other')


# --------------------------------------------------------------------------- figures

def test_frame_figure_draws_sparse_truth_visibly_with_colour_bars(tmp_path, monkeypatch):
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib.figure import Figure
    from lrda_ros.colormap import colorize_depth
    from lrda_ros.eval import figures

    saved = []
    monkeypatch.setattr(Figure, 'savefig', lambda self, *a, **k: saved.append(self))
    height, width = 1024, 2048
    depth = np.full((height, width), 12.0, np.float32)
    gt = np.zeros_like(depth)
    gt[100::200, 100::200] = np.linspace(3.0, 40.0, gt[100::200, 100::200].size).reshape(
        gt[100::200, 100::200].shape)
    gt[0, width - 1] = 7.0  # a corner point must not wrap around to the left border
    sparse = np.zeros_like(depth)
    sparse[500, 300] = 20.0
    frame = Frame('wide', np.zeros((height, width, 3), np.uint8), sparse, gt)
    figures.frame_figure(frame, {'method': depth}, tmp_path / 'figure.png')
    figure = saved[0]
    labels = {axis.get_ylabel() for axis in figure.axes}
    assert {'depth (m), on a 1/depth scale', 'absolute error (m)'} <= labels
    radius = figures.marker_radius(width)
    assert radius >= 5 and figures.marker_radius(320) == 1  # marker grows with the width
    # The error panel covers the same squares as the ground truth panel, not single pixels.
    error_panel = next(image for axis in figure.axes for image in axis.get_images()
                       if image.get_cmap().name.startswith('magma'))
    error = np.ma.filled(error_panel.get_array(), np.nan)
    points = np.count_nonzero(gt)
    assert np.isfinite(error).sum() >= (points - 1) * (2 * radius + 1) ** 2
    assert np.isnan(error[0, :radius + 1]).all()  # no wrap-around from the right border
    np.testing.assert_allclose(error[100 - radius:100 + radius + 1, 100], 9.0)
    # The depth colour bar maps metres exactly as the depth panels are coloured.
    bar = next(axis for axis in figure.axes
               if axis.get_ylabel() == 'depth (m), on a 1/depth scale')
    depth_bar = bar._colorbar
    probe = np.array([[3.5, 6.0, 12.0, 25.0, 39.0]], np.float32)
    near, far = depth_bar.norm.vmin, depth_bar.norm.vmax
    expected = colorize_depth(probe, near, far)[0]
    got = (depth_bar.cmap(depth_bar.norm(probe[0]))[:, :3] * 255).round()
    np.testing.assert_allclose(got, expected, atol=3)


# --------------------------------------------------------------------------- the real command

def _lrda(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'lrda_ros.cli', *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def _one_line_error(result: subprocess.CompletedProcess, *expected: str) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode != 0, result
    assert len(lines) == 1 and 'Traceback' not in result.stderr, result.stderr
    assert all(text in lines[0] for text in expected), lines[0]
    return lines[0]


def test_cli_errors_are_one_line_without_a_traceback(tmp_path, tiny_model_dir):
    out = str(tmp_path / 'out')
    _one_line_error(_lrda('eval', '--bag', str(tmp_path / 'missing'), '--output', out),
                    'lrda eval: error:', 'no rosbag2 at')
    _one_line_error(_lrda('eval', '--dataset', 'kitti_dc', '--root', str(tmp_path),
                          '--output', out), 'no folder image/')
    folder = str(_lidar_folder(tmp_path / 'data', gt=True))
    _one_line_error(_lrda('eval', '--dataset', 'folder', '--root', folder, '--output', out,
                          '--methods', 'lrda', '--model', str(tmp_path / 'none.pth')),
                    'does not exist', 'local Hugging Face directory')
    _one_line_error(_lrda('eval', '--dataset', 'folder', '--root', folder, '--output', out,
                          '--methods', 'lrda,magic'), '--methods: unknown magic')
    bag = _write_bag(tmp_path / 'offset', lidar_offset_s=5.0)
    _one_line_error(_lrda('eval', '--bag', str(bag), '--output', out, '--methods',
                          'classical'), 'no synchronized frames', '4.800 s', 'slop 0.050 s')
    assert not (tmp_path / 'out' / 'frames.csv').exists()
    _one_line_error(_lrda('speed', '--resolutions', '4k'), 'lrda speed: error:',
                    '--resolutions: unknown 4k')
    _one_line_error(_lrda('play', str(tmp_path / 'missing')), 'lrda play: error:',
                    'no rosbag2 at')
    _one_line_error(_lrda('demo', '--model', str(tmp_path / 'none.pth'), '--output', out),
                    'lrda demo: error:', 'does not exist')
    debug = _lrda('eval', '--bag', str(tmp_path / 'missing'), '--output', out, '--debug')
    assert debug.returncode != 0 and 'Traceback' in debug.stderr
