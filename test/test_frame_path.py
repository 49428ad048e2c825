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
One frame path: the node over DDS and ``lrda eval --bag`` give the same depth for a bag frame.

Both run in this process on the CPU with the same settings (float32, no warm start, the same
hold-out fraction and seed), so the same code must produce the same numbers: the test asserts
the published depth and ``lrda eval --save-depth``'s arrays are equal to 1e-6 m with identical
NaN masks, and that both withheld the same LiDAR pixels.
"""

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip('rclpy', reason='rclpy is not installed (the node runs over real DDS)')

from lrda_ros import world  # noqa: E402, I100
from lrda_ros.cli import main as lrda_main  # noqa: E402
from lrda_ros.demo.job import write_demo_bag  # noqa: E402
from lrda_ros.messages.conversions import depth_image_to_array  # noqa: E402
from lrda_ros.messages.rosbag import BagTopics, RosbagSource  # noqa: E402
from lrda_ros.ros.replay import complete_bag_in_process  # noqa: E402

HOLDOUT = 0.25
#: The demo bag also records ground-truth depth: name the camera.
TOPICS = BagTopics(image='/camera/image_raw')
ITERATIONS = 3
#: Settings both programs share (the node's names); everything else is at both defaults.
NODE_PARAMETERS = {
    'model': 'demo', 'device': 'cpu', 'dtype': 'float32', 'iterations': ITERATIONS,
    'warm_start': False, 'processing_size': 0, 'min_points': 8, 'max_depth': 250.0,
    'evaluation.holdout_fraction': HOLDOUT, 'publish.points_dense': False,
    'publish.depth_colored': False,
}


@pytest.fixture(scope='module')
def bag(tmp_path_factory) -> Path:
    config = world.SequenceConfig('indoor', num_frames=2, width=112, height=84, seed=5,
                                  lidar=world.LidarConfig.indoor(beams=16))
    path = tmp_path_factory.mktemp('frame_path') / 'bag'
    write_demo_bag(list(world.iter_sequence(config)), path)
    return path


@pytest.fixture(scope='module')
def extrinsic(bag) -> list[float]:
    """Return the bag's T_camera_lidar, given to both programs (tf2 may be absent here)."""
    with RosbagSource(bag, TOPICS) as source:
        camera_frame, lidar_frame = source.first_frame_ids()
        T_cam_lidar = source.transform_tree().lookup(camera_frame, lidar_frame)
    return [float(v) for v in T_cam_lidar.as_matrix().ravel()]


def _node_depth(bag: Path, extrinsic: list[float]) -> dict[int, np.ndarray]:
    replayed, _ = complete_bag_in_process(
        bag, TOPICS, {**NODE_PARAMETERS, 'lidar_to_camera.matrix': extrinsic})
    assert all('depth' in frame.outputs for frame in replayed), 'the node dropped a frame'
    return {frame.stamp_ns: depth_image_to_array(frame.outputs['depth']) for frame in replayed}


def _eval_depth(bag: Path, extrinsic: list[float], output: Path) -> dict[int, np.ndarray]:
    code = lrda_main(['eval', '--bag', str(bag), '--image-topic', TOPICS.image,
                      '--output', str(output), '--methods', 'lrda',
                      '--model', 'demo', '--device', 'cpu', '--dtype', 'float32',
                      '--iterations', str(ITERATIONS), '--holdout', str(HOLDOUT),
                      '--figures', '0', '--save-depth',
                      '--lidar-to-camera-matrix', ','.join(map(repr, extrinsic))])
    assert code == 0
    # Frame names are the image stamp, '<sec>.<nanosec>' (as the live evaluator's).
    return {int(path.stem.replace('.', '')): np.load(path)
            for path in sorted((output / 'depth' / 'lrda').glob('*.npy'))}


def test_node_and_lrda_eval_give_the_same_depth(bag, extrinsic, tmp_path):
    from_node = _node_depth(bag, extrinsic)
    from_eval = _eval_depth(bag, extrinsic, tmp_path / 'eval')
    assert sorted(from_node) == sorted(from_eval) and len(from_node) == 2
    for stamp, node_depth in from_node.items():
        eval_depth = from_eval[stamp]
        assert node_depth.shape == eval_depth.shape
        np.testing.assert_array_equal(np.isnan(node_depth), np.isnan(eval_depth))
        np.testing.assert_allclose(node_depth, eval_depth, rtol=0, atol=1e-6, equal_nan=True)
        assert np.isfinite(node_depth).mean() > 0.5  # a real completion, not an empty map


def test_node_and_lrda_eval_feed_the_engine_the_same_sparse_and_held_out_pixels(bag, extrinsic):
    from lrda_ros.datasets.rosbag import RosbagDataset
    from lrda_ros.geometry import ProjectionConfig, RigidTransform

    # lrda eval --bag opens its bags with the node's default projection (occlusion test on).
    dataset = RosbagDataset(bag, TOPICS, holdout_fraction=HOLDOUT,
                            projection=ProjectionConfig(remove_occluded=True),
                            extrinsic=RigidTransform.from_matrix(
                                np.reshape(extrinsic, (4, 4))))
    from_eval = {frame.stamp_ns: frame for frame in dataset}
    replayed, _ = complete_bag_in_process(
        bag, TOPICS, {**NODE_PARAMETERS, 'iterations': 0, 'lidar_to_camera.matrix': extrinsic},
        outputs=('depth', 'sparse_depth', 'holdout_depth'))
    assert sorted(frame.stamp_ns for frame in replayed) == sorted(from_eval)
    for frame in replayed:
        expected = from_eval[frame.stamp_ns]
        sparse = np.nan_to_num(depth_image_to_array(frame.outputs['sparse_depth']))
        held = np.nan_to_num(depth_image_to_array(frame.outputs['holdout_depth']))
        np.testing.assert_array_equal(sparse, expected.sparse_depth)
        np.testing.assert_array_equal(held, expected.gt_depth)
        assert np.count_nonzero(held) > 0 and np.count_nonzero(sparse) > 0
