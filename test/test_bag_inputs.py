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

"""
Recordings as robots make them, read by ``lrda eval --bag`` / ``RosbagDataset``.

Compressed images, compressed depth, transforms on /tf only, missing transforms, distorted
cameras.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip('rclpy', reason='rclpy is not installed (the bags are written from rclpy '
                                    'messages)')
cv2 = pytest.importorskip('cv2', reason='opencv-python-headless is not installed '
                                        '(pip install -r requirements-dev.txt)')

from lrda_ros import world  # noqa: E402, I100
from lrda_ros.cli import main as lrda_main  # noqa: E402
from lrda_ros.datasets.rosbag import RosbagDataset  # noqa: E402
from lrda_ros.geometry import (  # noqa: E402
    CameraModel, lidar_to_sparse_depth, ProjectionConfig, RigidTransform, TransformTree)
from lrda_ros.messages.rosbag import BagError, BagTopics  # noqa: E402
from lrda_ros.ros.bag_writer import stamped_header, write_bag  # noqa: E402
from lrda_ros.ros.builders import (  # noqa: E402
    camera_model_to_camera_info, depth_to_image_msg, rgb_to_image_msg, xyz_to_pointcloud2)
from sensor_msgs.msg import CompressedImage  # noqa: E402
from test_compressed import compressed_depth_32fc1  # noqa: E402

CAMERA, LIDAR = 'camera_optical', 'lidar'
IMAGE, INFO, POINTS = '/cam/image_raw', '/cam/camera_info', '/lidar/points'
START_NS = 1_552_097_915_000_000_000  # 2019
PLUMB_BOB = np.array([-0.3, 0.09, 0.001, -0.0012, -0.01])
NO_LIMITS = ProjectionConfig(min_range=0.1)


@pytest.fixture(scope='module')
def frames():
    config = world.SequenceConfig('indoor', num_frames=3, width=112, height=84, seed=3,
                                  lidar=world.LidarConfig.indoor(beams=16))
    return world.make_sequence(config)


def jpeg(rgb: np.ndarray, header) -> CompressedImage:
    ok, data = cv2.imencode('.jpg', rgb[..., ::-1], [cv2.IMWRITE_JPEG_QUALITY, 95])
    assert ok
    return CompressedImage(header=header, format='rgb8; jpeg compressed bgr8',
                           data=data.tobytes())


def write_scene_bag(path: Path, frames, images=('raw',), depth: str | None = None,
                    transforms_topic: str | None = '/tf_static',
                    camera: CameraModel | None = None,
                    cloud_offsets_ns: tuple[int, ...] = ()) -> Path:
    """
    Write the synthetic frames as a bag the way a robot records them.

    ``images``: 'raw' on /cam/image_raw and/or 'jpeg' on /cam/image_raw/compressed. ``depth``:
    None, 'compressedDepth' (32FC1) or 'image' (32FC1 Image). ``transforms_topic``: where the
    base_link -> lidar -> camera chain goes, or None for none. ``cloud_offsets_ns``: per
    frame, the cloud's stamp minus the image's (default 0).
    """
    T_lidar_camera = RigidTransform.from_matrix(frames[0].T_cam_lidar).inverse()
    chain = [('base_link', LIDAR, RigidTransform.identity()), (LIDAR, CAMERA, T_lidar_camera)]

    def messages():
        for index, frame in enumerate(frames):
            stamp = START_NS + frame.stamp_ns
            header = stamped_header(CAMERA, stamp)
            if 'raw' in images:
                yield IMAGE, stamp, rgb_to_image_msg(frame.rgb, header)
            if 'jpeg' in images:
                yield IMAGE + '/compressed', stamp, jpeg(frame.rgb, header)
            yield INFO, stamp, camera_model_to_camera_info(camera or frame.camera, header)
            offset = cloud_offsets_ns[index] if index < len(cloud_offsets_ns) else 0
            yield POINTS, stamp + 1000, xyz_to_pointcloud2(
                frame.points_lidar[:, :3], stamped_header(LIDAR, stamp + offset))
            truth = np.where(frame.depth > 0, frame.depth, np.nan).astype(np.float32)
            if depth == 'compressedDepth':
                encoded = compressed_depth_32fc1(truth)
                yield '/cam/depth/compressedDepth', stamp, CompressedImage(
                    header=header, format=encoded.format, data=encoded.data.tobytes())
            elif depth == 'image':
                yield '/cam/depth/image_raw', stamp, depth_to_image_msg(truth, header)

    write_bag(path, messages(), chain if transforms_topic else (),
              static_stamp_ns=START_NS, transforms_topic=transforms_topic or '/tf_static')
    return path


def full_sparse(frame) -> np.ndarray:
    """Return the whole projected LiDAR of a hold-out frame (input + held out)."""
    return frame.sparse_depth + frame.gt_depth


def test_a_jpeg_bag_gives_the_frames_of_the_raw_bag(tmp_path, frames):
    raw = RosbagDataset(write_scene_bag(tmp_path / 'raw', frames), projection=NO_LIMITS)
    compressed = RosbagDataset(write_scene_bag(tmp_path / 'jpeg', frames, images=('jpeg',)),
                               projection=NO_LIMITS)
    assert compressed.source.topics.image == IMAGE + '/compressed'
    pairs = list(zip(raw, compressed))
    assert len(pairs) == 3
    for raw_frame, jpeg_frame in pairs:
        np.testing.assert_array_equal(jpeg_frame.sparse_depth, raw_frame.sparse_depth)
        np.testing.assert_array_equal(jpeg_frame.gt_depth, raw_frame.gt_depth)
        assert np.abs(jpeg_frame.rgb.astype(int) - raw_frame.rgb).mean() < 8  # JPEG loss


def test_a_raw_image_wins_over_its_compressed_twin(tmp_path, frames):
    bag = write_scene_bag(tmp_path / 'both', frames, images=('raw', 'jpeg'))
    assert RosbagDataset(bag).source.topics.image == IMAGE
    named = RosbagDataset(bag, topics=BagTopics(image=IMAGE + '/compressed'))
    assert named.source.topics.image == IMAGE + '/compressed'


@pytest.mark.parametrize('kind, topic', [('compressedDepth', '/cam/depth/compressedDepth'),
                                         ('image', '/cam/depth/image_raw')])
def test_depth_topics_as_ground_truth(tmp_path, frames, kind, topic):
    bag = write_scene_bag(tmp_path / kind, frames, images=('jpeg',), depth=kind)
    dataset = RosbagDataset(bag, topics=BagTopics(depth=topic))
    assert dataset.source.topics.image == IMAGE + '/compressed'
    for frame, truth in zip(dataset, frames):
        valid = (truth.depth > 0) & (truth.depth < 10.0)  # compressedDepth's default range
        assert valid.mean() > 0.5
        # compressedDepth quantizes inverse depth: relative error <= depth / 10100.
        np.testing.assert_allclose(frame.gt_depth[valid], truth.depth[valid], rtol=1.1e-3)


def test_transforms_on_tf_only(tmp_path, frames):
    bag = write_scene_bag(tmp_path / 'tf', frames, transforms_topic='/tf')
    dataset = RosbagDataset(bag, projection=NO_LIMITS)
    tree = dataset.source.transform_tree()
    np.testing.assert_allclose(tree.lookup(CAMERA, LIDAR).as_matrix(), frames[0].T_cam_lidar,
                               atol=1e-9)
    for frame, truth in zip(dataset, frames):
        expected = lidar_to_sparse_depth(truth.points_lidar[:, :3],
                                         RigidTransform.from_matrix(truth.T_cam_lidar),
                                         truth.camera, NO_LIMITS).depth
        np.testing.assert_array_equal(full_sparse(frame), expected)


def test_timed_transforms_interpolate_between_samples():
    tree = TransformTree()
    quarter = RigidTransform.from_translation_quaternion(
        [2.0, 0.0, 4.0], [0.0, 0.0, np.sin(np.pi / 4), np.cos(np.pi / 4)])
    tree.add('odom', 'base', RigidTransform.identity(), stamp_ns=1000)
    tree.add('odom', 'base', quarter, stamp_ns=3000)
    tree.add('base', 'lidar', RigidTransform(np.eye(3), [1.0, 0.0, 0.0]))  # static
    middle = tree.lookup('odom', 'lidar', stamp_ns=2000)
    # Half-way: translation (1, 0, 2), rotation 45 degrees about z, then the static offset.
    c = np.cos(np.pi / 4)
    np.testing.assert_allclose(middle.rotation, [[c, -c, 0], [c, c, 0], [0, 0, 1]], atol=1e-12)
    np.testing.assert_allclose(middle.translation, [1.0 + c, c, 2.0], atol=1e-12)
    np.testing.assert_allclose(tree.lookup('odom', 'base', 0).as_matrix(), np.eye(4))
    np.testing.assert_allclose(tree.lookup('base', 'odom', 9999).as_matrix(),
                               quarter.inverse().as_matrix(), atol=1e-12)


def test_missing_transforms_name_the_frames_and_the_override(tmp_path, frames):
    bag = write_scene_bag(tmp_path / 'none', frames, transforms_topic=None)
    with pytest.raises(BagError, match=r"no transforms at all.*'lidar'.*'camera_optical'"
                                       r'.*--lidar-to-camera-matrix'):
        RosbagDataset(bag)
    T = RigidTransform.from_matrix(frames[0].T_cam_lidar)
    dataset = RosbagDataset(bag, extrinsic=T, projection=NO_LIMITS)
    assert len(list(dataset)) == 3

    tree = TransformTree()
    tree.add('base_link', 'lidar', RigidTransform.identity())
    tree.add('camera_link', 'camera_optical', RigidTransform.identity())
    with pytest.raises(KeyError, match=r"separate trees: 'lidar' links to \['base_link', "
                                       r"'lidar'\], 'camera_optical' to \['camera_link'"):
        tree.lookup('camera_optical', 'lidar')
    with pytest.raises(KeyError, match=r"no transform names frame\(s\) \['velodyne'\]"):
        tree.lookup('camera_optical', 'velodyne')


def test_lrda_eval_extrinsic_override_options(tmp_path, frames, capsys):
    bag = write_scene_bag(tmp_path / 'none', frames, transforms_topic=None)
    T = RigidTransform.from_matrix(frames[0].T_cam_lidar)
    common = ['eval', '--bag', str(bag), '--methods', 'classical', '--figures', '0']
    matrix = ','.join(repr(float(v)) for v in T.as_matrix().ravel())
    assert lrda_main(common + ['--output', str(tmp_path / 'm'),
                               '--lidar-to-camera-matrix', matrix]) == 0
    translation = ','.join(repr(float(v)) for v in T.translation)
    rotation = ','.join(repr(float(v)) for v in T.quaternion_xyzw())
    assert lrda_main(common + ['--output', str(tmp_path / 'q'),
                               '--lidar-to-camera-translation', translation,
                               '--lidar-to-camera-rotation', rotation]) == 0
    by_matrix, by_quaternion = (_scores(tmp_path / name / 'frames.csv') for name in 'mq')
    assert len(by_matrix) == 3 and all(np.isfinite(row['mae']) for row in by_matrix)
    assert by_matrix == by_quaternion

    bad_runs = [
        (common + ['--output', str(tmp_path / 'x'), '--lidar-to-camera-translation', '1,2',
                   '--lidar-to-camera-rotation', '0,0,0,1'],
         '--lidar-to-camera-translation: needs 3 values'),
        (common + ['--output', str(tmp_path / 'x'), '--lidar-to-camera-matrix', '1,2'],
         '--lidar-to-camera-matrix: needs 16 values'),
        (['eval', '--dataset', 'folder', '--root', str(tmp_path), '--lidar-to-camera-matrix',
          matrix], 'only apply to --bag'),
    ]
    for argv, message in bad_runs:
        capsys.readouterr()
        assert lrda_main(argv) == 1
        assert message in capsys.readouterr().err


def _scores(path: Path) -> list[dict[str, float]]:
    """Return the accuracy columns of frames.csv (not the timings)."""
    with path.open() as handle:
        return [{key: float(row[key]) for key in ('mae', 'rmse', 'num_valid')}
                for row in csv.DictReader(handle)]


def _fold_radius(D: np.ndarray) -> float:
    """Return the normalized radius where plumb_bob's radial map r -> r (1 + k1 r^2 ...) peaks."""
    k1, k2, k3 = D[0], D[1], D[4]
    # d/dr (r + k1 r^3 + k2 r^5 + k3 r^7) = 1 + 3 k1 r^2 + 5 k2 r^4 + 7 k3 r^6, in s = r^2.
    roots = np.roots([7 * k3, 5 * k2, 3 * k1, 1.0])
    real = roots[np.isreal(roots) & (roots.real > 0)].real
    return float(np.sqrt(real.min())) if real.size else np.inf


def _nearest_per_pixel(uv: np.ndarray, z: np.ndarray, width: int, height: int) -> np.ndarray:
    """Z-buffer written independently of the package: nearest depth per rounded pixel."""
    cols, rows = np.floor(uv + 0.5).astype(int).T
    inside = (cols >= 0) & (cols < width) & (rows >= 0) & (rows < height)
    out = np.full((height, width), np.inf)
    np.minimum.at(out, (rows[inside], cols[inside]), z[inside])
    return np.where(np.isfinite(out), out, 0.0).astype(np.float32)


@pytest.mark.parametrize('rectified', [False, True])
def test_eval_projects_a_distorted_camera_as_opencv(tmp_path, frames, rectified):
    pinhole = frames[0].camera
    distorted = CameraModel(pinhole.K, pinhole.width, pinhole.height, 'plumb_bob', PLUMB_BOB)
    bag = write_scene_bag(tmp_path / 'distorted', frames, camera=distorted)
    dataset = RosbagDataset(bag, projection=NO_LIMITS, rectified=rectified)
    for frame, truth in zip(dataset, frames):
        T = RigidTransform.from_matrix(truth.T_cam_lidar)
        points = truth.points_lidar[:, :3].astype(np.float64)
        points = points[np.linalg.norm(points, axis=1) >= NO_LIMITS.min_range]
        points_cam = T.apply(points)
        points_cam = points_cam[points_cam[:, 2] > 1e-6]
        # The bag's CameraInfo has P = [K | 0]: rectified means K without distortion.
        D = np.zeros(5) if rectified else PLUMB_BOB
        # Past the fold of the lens model, OpenCV folds points back into the image; they are
        # not visible (the package drops them). The fold lies outside this image.
        radius = np.hypot(points_cam[:, 0], points_cam[:, 1]) / points_cam[:, 2]
        points_cam = points_cam[radius < _fold_radius(D)]
        uv, _ = cv2.projectPoints(points_cam.reshape(-1, 1, 3), np.zeros(3), np.zeros(3),
                                  pinhole.K, D)
        expected = _nearest_per_pixel(uv.reshape(-1, 2), points_cam[:, 2], pinhole.width,
                                      pinhole.height)
        np.testing.assert_allclose(full_sparse(frame), expected, rtol=1e-6)


def test_bag_frames_are_indexable(tmp_path, frames):
    """dataset[i] works on a bag as on any dataset (it used the file list, empty for bags)."""
    dataset = RosbagDataset(write_scene_bag(tmp_path / 'raw', frames), holdout_fraction=0.2)
    streamed = list(dataset)
    assert len(dataset) == len(streamed) >= 2
    np.testing.assert_array_equal(dataset[1].rgb, streamed[1].rgb)
    np.testing.assert_array_equal(dataset[-1].sparse_depth, streamed[-1].sparse_depth)


def test_lrda_eval_counts_a_cloud_beyond_the_slop_and_names_the_slop(tmp_path, frames, capsys):
    # The last frame's cloud is stamped 55 ms before its image (a DDAD-like rig): at the
    # default slop (0.05 s) its image, camera_info and cloud never pair.
    bag = write_scene_bag(tmp_path / 'bag', frames, cloud_offsets_ns=(0, 0, -55_000_000))
    output = tmp_path / 'eval'
    assert lrda_main(['eval', '--bag', str(bag), '--output', str(output), '--methods',
                      'scale-shift', '--model', 'demo', '--device', 'cpu', '--figures',
                      '0']) == 0
    warning = capsys.readouterr().err
    assert 'beyond_slop 3' in warning and '--slop 0.07' in warning, warning
    assert POINTS in warning and '0.055 s' in warning, warning
    metadata = json.loads((output / 'summary.json').read_text())['metadata']
    losses = metadata['sync_losses']
    assert (losses['beyond_slop'], losses['no_partner'], losses['superseded']) == (3, 0, 0)
    assert losses['suggested_slop_s'] == pytest.approx(0.07)
    assert losses['largest_offset_s'] == pytest.approx(0.055)
    assert metadata['frames'] == 2

    # With the slop it names, every frame pairs.
    assert lrda_main(['eval', '--bag', str(bag), '--output', str(output), '--methods',
                      'scale-shift', '--model', 'demo', '--device', 'cpu', '--figures', '0',
                      '--slop', '0.07']) == 0
    metadata = json.loads((output / 'summary.json').read_text())['metadata']
    assert metadata['frames'] == 3 and metadata['sync_losses']['beyond_slop'] == 0
