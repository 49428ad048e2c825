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

"""DDAD from a tiny dataset in the exact dgp layout, projected LiDAR checked against OpenCV."""

import json
from pathlib import Path
import subprocess
import sys

from lrda_ros.datasets import DDAD, open_dataset
from lrda_ros.geometry import DDAD_GROUND_TRUTH_FILTER, filter_outliers
import numpy as np
from PIL import Image
import pytest

cv2 = pytest.importorskip('cv2')

WIDTH, HEIGHT = 96, 64
K = np.array([[70.0, 0.0, 47.3], [0.0, 71.0, 31.6], [0.0, 0.0, 1.0]])


def _rotation(qw, qx, qy, qz) -> np.ndarray:
    """Rotation matrix of a unit quaternion (Hamilton convention, as dgp's pyquaternion)."""
    q = np.array([qw, qx, qy, qz]) / np.linalg.norm([qw, qx, qy, qz])
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _matrix(pose: dict) -> np.ndarray:
    out = np.eye(4)
    r, t = pose['rotation'], pose['translation']
    out[:3, :3] = _rotation(r['qw'], r['qx'], r['qy'], r['qz'])
    out[:3, 3] = [t['x'], t['y'], t['z']]
    return out


def _pose(quaternion, translation) -> dict:
    return {'rotation': dict(zip(('qw', 'qx', 'qy', 'qz'), quaternion)),
            'translation': dict(zip('xyz', translation))}


def _as_pose(matrix: np.ndarray) -> dict:
    """Return a dgp Pose message (qw, qx, qy, qz with qw >= 0) of a 4x4 rigid matrix."""
    R = matrix[:3, :3]
    qw = np.sqrt(max(0.0, 1 + R[0, 0] + R[1, 1] + R[2, 2])) / 2
    magnitudes = [np.sqrt(max(0.0, 1 + s0 * R[0, 0] + s1 * R[1, 1] + s2 * R[2, 2])) / 2
                  for s0, s1, s2 in ((1, -1, -1), (-1, 1, -1), (-1, -1, 1))]
    signs = (R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1])
    qx, qy, qz = (np.copysign(m, sign) for m, sign in zip(magnitudes, signs))
    return _pose((qw, qx, qy, qz), matrix[:3, 3])


# The camera looks along the vehicle's x axis (optical z forward, x right = -y_vehicle).
CAMERA_IN_VEHICLE = _pose((0.5, -0.5, 0.5, -0.5), (1.6, 0.05, 1.4))
LIDAR_IN_VEHICLE = _pose((0.999, 0.01, -0.02, 0.03), (0.8, 0.0, 1.9))


def _write_scene(root: Path, scene: str, with_poses: bool, seed: int) -> dict:
    """Write one dgp scene of two samples; return the world points of each LiDAR datum."""
    rng = np.random.default_rng(seed)
    folder = root / scene
    calibration_key = f'{seed:040x}'
    (folder / 'calibration').mkdir(parents=True)
    (folder / 'calibration' / f'{calibration_key}.json').write_text(json.dumps({
        'names': ['CAMERA_01', 'LIDAR'],
        'intrinsics': [{'fx': K[0, 0], 'fy': K[1, 1], 'cx': K[0, 2], 'cy': K[1, 2],
                        'skew': 0.0, 'fisheye': False},
                       {'fx': 0.0, 'fy': 0.0, 'cx': 0.0, 'cy': 0.0, 'skew': 0.0}],
        'extrinsics': [CAMERA_IN_VEHICLE, LIDAR_IN_VEHICLE]}))
    samples, data, points, cameras = [], [], {}, {}
    for i in range(2):
        stamp = 15616458249936530 + i * 1000000
        turn = (np.cos(0.05 * i), 0.0, 0.0, np.sin(0.05 * i))
        ego = _pose(turn, (100.0 + 1.5 * i, -20.0, 0.3))
        # The LiDAR datum is 0.09 s later than the camera's: the vehicle moved 1 m in between.
        ego_lidar = _pose(turn, (101.0 + 1.5 * i, -20.0, 0.3))
        pose_camera = _matrix(ego) @ _matrix(CAMERA_IN_VEHICLE)
        pose_lidar = _matrix(ego_lidar) @ _matrix(LIDAR_IN_VEHICLE)
        if not with_poses:  # then the extrinsics alone relate the sensors
            pose_lidar = pose_camera @ np.linalg.inv(_matrix(CAMERA_IN_VEHICLE)) @ _matrix(
                LIDAR_IN_VEHICLE)
        # Points in the camera's view (a wall and a box in front of it), in the LiDAR frame.
        cam = np.column_stack([rng.uniform(-12, 12, 4000), rng.uniform(-6, 6, 4000),
                               np.full(4000, 25.0)])
        box = np.column_stack([rng.uniform(-1, 1, 800), rng.uniform(-1, 1, 800),
                               np.full(800, 8.0)])
        behind = np.column_stack([rng.uniform(-5, 5, 50), rng.uniform(-5, 5, 50),
                                  np.full(50, -4.0)])
        in_camera = np.vstack([cam, box, behind])
        to_lidar = np.linalg.inv(pose_lidar) @ pose_camera
        in_lidar = in_camera @ to_lidar[:3, :3].T + to_lidar[:3, 3]
        cloud = np.column_stack([in_lidar, rng.uniform(0, 1, len(in_lidar))])
        image_name, cloud_name = f'rgb/CAMERA_01/{stamp}.png', f'point_cloud/LIDAR/{stamp}.npz'
        (folder / 'rgb' / 'CAMERA_01').mkdir(parents=True, exist_ok=True)
        (folder / 'point_cloud' / 'LIDAR').mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 255, (HEIGHT, WIDTH, 3), np.uint8)).save(
            folder / image_name)
        np.savez_compressed(folder / cloud_name, data=cloud)
        points[i], cameras[i] = cloud[:, :3], pose_camera
        keys = (f'{seed}{i}a'.ljust(40, '0'), f'{seed}{i}b'.ljust(40, '0'))
        zero = _pose((0.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0))

        data += [
            {'id': {'log': 'log', 'name': 'CAMERA_01', 'index': '0',
                    'timestamp': f'2019-06-27T14:00:{10 + i}.936530Z'},
             'key': keys[0], 'next_key': '', 'prev_key': '',
             'datum': {'image': {'filename': image_name, 'height': HEIGHT, 'width': WIDTH,
                                 'channels': 3, 'annotations': {}, 'metadata': {},
                                 'pose': _as_pose(pose_camera) if with_poses else zero}}},
            {'id': {'log': 'log', 'name': 'LIDAR', 'index': '0',
                    'timestamp': f'2019-06-27T14:00:{11 + i}.027900Z'},
             'key': keys[1], 'next_key': '', 'prev_key': '',
             'datum': {'point_cloud': {'filename': cloud_name, 'annotations': {},
                                       'point_format': ['X', 'Y', 'Z', 'INTENSITY'],
                                       'point_fields': [], 'metadata': {},
                                       'pose': _as_pose(pose_lidar) if with_poses else zero}}}]
        samples.append({'id': {'log': 'log', 'index': str(i), 'name': '',
                               'timestamp': f'2019-06-27T14:00:{11 + i}.027900Z'},
                        'datum_keys': list(keys), 'calibration_key': calibration_key,
                        'metadata': {}})
    scene_file = folder / f'scene_{seed:040x}.json'
    scene_file.write_text(json.dumps({'name': scene, 'log': 'log', 'description': '',
                                      'samples': samples, 'data': data, 'ontologies': {},
                                      'metadata': {}}))
    return {'file': f'{scene}/{scene_file.name}', 'points': points, 'cameras': cameras}


def _dataset(root: Path, with_poses: bool = True) -> dict:
    val = _write_scene(root, '000150', with_poses, seed=1)
    train = _write_scene(root, '000000', with_poses, seed=2)
    (root / 'ddad.json').write_text(json.dumps({
        'metadata': {'name': 'DDAD', 'version': '', 'description': ''},
        'scene_splits': {'0': {'filenames': [train['file']]},
                         '1': {'filenames': [val['file']]}}}))
    return val


def _opencv_depth(points_lidar: np.ndarray, T_cam_lidar: np.ndarray) -> np.ndarray:
    """Project with cv2.projectPoints, nearest point per pixel (pixel centres at integers)."""
    in_camera = points_lidar @ T_cam_lidar[:3, :3].T + T_cam_lidar[:3, 3]
    rvec, _ = cv2.Rodrigues(T_cam_lidar[:3, :3])
    uv, _ = cv2.projectPoints(points_lidar.reshape(-1, 1, 3), rvec, T_cam_lidar[:3, 3], K, None)
    uv = uv.reshape(-1, 2)
    depth = np.zeros((HEIGHT, WIDTH), np.float32)
    cols, rows = np.floor(uv[:, 0] + 0.5).astype(int), np.floor(uv[:, 1] + 0.5).astype(int)
    inside = (in_camera[:, 2] > 0) & (cols >= 0) & (cols < WIDTH) & (rows >= 0) & (rows < HEIGHT)
    for r, c, z in sorted(zip(rows[inside], cols[inside], in_camera[inside, 2]),
                          key=lambda item: -item[2]):
        depth[r, c] = z  # nearer points written last win
    return depth


@pytest.mark.parametrize('with_poses', [True, False])
def test_projection_matches_opencv(tmp_path, with_poses):
    truth = _dataset(tmp_path, with_poses)
    dataset = DDAD(tmp_path)
    assert len(dataset) == 2
    for index in range(2):
        K_read, T, source = dataset.geometry(index)
        assert source == ('poses' if with_poses else 'extrinsics')
        np.testing.assert_allclose(K_read, K)
        # Independently: the camera's world pose inverted times the LiDAR's (dgp's rule).
        ego = _matrix(_pose((np.cos(0.05 * index), 0, 0, np.sin(0.05 * index)),
                            (100.0 + 1.5 * index + (1.0 if with_poses else 0.0), -20.0, 0.3)))
        camera_pose = _matrix(_pose((np.cos(0.05 * index), 0, 0, np.sin(0.05 * index)),
                                    (100.0 + 1.5 * index, -20.0, 0.3))) @ _matrix(
                                        CAMERA_IN_VEHICLE)
        expected_T = np.linalg.inv(camera_pose) @ ego @ _matrix(LIDAR_IN_VEHICLE)
        np.testing.assert_allclose(T.as_matrix(), expected_T, atol=1e-9)
        _, depth, _, _ = dataset.projected_lidar(index)
        expected = _opencv_depth(truth['points'][index], expected_T)
        np.testing.assert_array_equal(depth > 0, expected > 0)
        np.testing.assert_allclose(depth, expected, rtol=1e-6)


@pytest.mark.parametrize('with_poses', [True, False])
def test_frames_carry_the_camera_datums_pose(tmp_path, with_poses):
    truth = _dataset(tmp_path, with_poses)
    for index, frame in enumerate(DDAD(tmp_path)):
        if not with_poses:  # the extrinsics place the camera on the vehicle, not in the world
            assert frame.T_world_cam is None
            continue
        # dgp's T_world_sensor of the camera datum, as written (quaternion and translation
        # round-tripped through JSON in float64: 1e-9 is a million times their rounding).
        np.testing.assert_allclose(frame.T_world_cam, truth['cameras'][index], atol=1e-9)


def test_frames_follow_the_protocol(tmp_path):
    _dataset(tmp_path)
    dataset = open_dataset('ddad', tmp_path)
    frames = list(dataset)
    assert [f.name for f in frames] == ['000150/15616458249936530', '000150/15616458250936530']
    assert {f.sequence for f in frames} == {'000150'} and frames[0].stamp_ns < frames[1].stamp_ns
    for index, frame in enumerate(frames):
        _, raw, _, _ = dataset.projected_lidar(index)
        assert frame.rgb.shape == (HEIGHT, WIDTH, 3)
        # Ground truth: the map after the 3 m filter, in 1/256 m steps.
        expected_gt, removed = filter_outliers(raw, DDAD_GROUND_TRUTH_FILTER)
        np.testing.assert_allclose(frame.gt_depth, expected_gt, atol=1 / 256)
        assert np.all(np.mod(frame.gt_depth * 256, 1) == 0)
        assert removed > 0 and frame.notes['gt_outliers_removed'] == removed
        # Input: about 20 % of the LiDAR pixels, each a measured one, the box's shadow filtered.
        points = frame.sparse_depth > 0
        share = points.sum() / (raw > 0).sum()
        assert 0.1 < share < 0.3
        assert np.all(np.abs(frame.sparse_depth[points] - raw[points]) < 1 / 256)
        assert frame.notes['pose_source'] == 'poses'
    train = DDAD(tmp_path, split='train')
    assert [f.name.split('/')[0] for f in train] == ['000000', '000000']
    other_seed = DDAD(tmp_path, seed=1)[0].sparse_depth
    assert not np.array_equal(other_seed > 0, frames[0].sparse_depth > 0)
    unfiltered = DDAD(tmp_path, input_filter=None, gt_filter=None)[0]
    assert unfiltered.gt_depth.astype(bool).sum() > frames[0].gt_depth.astype(bool).sum()


def test_layout_errors_name_the_missing_file(tmp_path):
    truth = _dataset(tmp_path)
    (tmp_path / truth['file']).unlink()
    with pytest.raises(FileNotFoundError, match='000150/scene_'):
        DDAD(tmp_path)
    with pytest.raises(ValueError, match='split must be one of'):
        DDAD(tmp_path, split='validation')


def test_lrda_eval_writes_figures_and_depth_of_frames_named_by_scene(tmp_path):
    _dataset(tmp_path / 'ddad')
    output = tmp_path / 'out'
    result = subprocess.run(
        [sys.executable, '-m', 'lrda_ros.cli', 'eval', '--dataset', 'ddad', '--root',
         str(tmp_path / 'ddad'), '--methods', 'classical', '--figures', '1', '--save-depth',
         '--output', str(output)], cwd=Path(__file__).resolve().parents[1],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert (output / 'frames' / '000150' / '15616458249936530.png').is_file()
    depth = np.load(output / 'depth' / 'classical' / '000150' / '15616458250936530.npy')
    assert depth.shape == (HEIGHT, WIDTH)
    # The scene's camera poses give the temporal alignment error, as other posed sequences.
    summary = json.loads((output / 'summary.json').read_text())
    assert np.isfinite(summary['methods']['classical']['tae']), summary['methods']
