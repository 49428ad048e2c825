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
Recordings of two LiDARs: ``lrda eval --bag`` and ``lrda densify`` merge their clouds as the node.

The synthetic indoor frames' clouds are split between two LiDARs, the second one mounted apart
and turned (its half of each cloud written in its own frame, the mount on /tf_static). Each
frame's merged sparse map must be the whole cloud projected as one scan, and a frame whose
second cloud was never recorded is counted against that topic.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip('rclpy', reason='rclpy is not installed (the bags are written from rclpy '
                    'messages)')

from lrda_ros import world  # noqa: E402, I100
from lrda_ros.cli import main as lrda_main  # noqa: E402
from lrda_ros.datasets.rosbag import RosbagDataset  # noqa: E402
from lrda_ros.densify import DensifyOptions, run_densify  # noqa: E402
from lrda_ros.geometry import lidar_to_sparse_depth, ProjectionConfig, RigidTransform  # noqa: E402
from lrda_ros.messages.rosbag import BagTopics  # noqa: E402
from lrda_ros.ros.bag_writer import stamped_header, write_bag  # noqa: E402
from lrda_ros.ros.builders import (  # noqa: E402
    camera_model_to_camera_info, rgb_to_image_msg, xyz_to_pointcloud2)

CAMERA, LIDAR, REAR_LIDAR = 'camera_optical', 'lidar', 'lidar_rear'
IMAGE, INFO, POINTS, REAR = '/cam/image_raw', '/cam/camera_info', '/lidar/points', '/rear/points'
START_NS = 1_552_097_915_000_000_000
NO_LIMITS = ProjectionConfig(min_range=0.1)
T_LIDAR_REAR = RigidTransform.from_translation_quaternion(
    [-0.4, 0.1, 0.2], [0.0, 0.0, np.sin(np.radians(60.0)), np.cos(np.radians(60.0))])


@pytest.fixture(scope='module')
def frames():
    config = world.SequenceConfig('indoor', num_frames=3, width=112, height=84, seed=3,
                                  lidar=world.LidarConfig.indoor(beams=16))
    return world.make_sequence(config)


def write_two_lidar_bag(path: Path, frames, without_rear: tuple[int, ...] = ()) -> Path:
    """Write the frames with each cloud split between the two LiDARs (some rear ones left out)."""
    T_lidar_camera = RigidTransform.from_matrix(frames[0].T_cam_lidar).inverse()
    chain = [('base_link', LIDAR, RigidTransform.identity()), (LIDAR, CAMERA, T_lidar_camera),
             (LIDAR, REAR_LIDAR, T_LIDAR_REAR)]

    def messages():
        for index, frame in enumerate(frames):
            stamp = START_NS + frame.stamp_ns
            header = stamped_header(CAMERA, stamp)
            yield IMAGE, stamp, rgb_to_image_msg(frame.rgb, header)
            yield INFO, stamp, camera_model_to_camera_info(frame.camera, header)
            points = frame.points_lidar[:, :3]
            half = points.shape[0] // 2
            yield POINTS, stamp + 1000, xyz_to_pointcloud2(points[:half],
                                                           stamped_header(LIDAR, stamp + 2000))
            if index not in without_rear:
                rear = T_LIDAR_REAR.inverse().apply(points[half:])
                yield REAR, stamp + 2000, xyz_to_pointcloud2(
                    rear, stamped_header(REAR_LIDAR, stamp + 4000))

    write_bag(path, messages(), chain, static_stamp_ns=START_NS)
    return path


def whole_cloud(frame) -> np.ndarray:
    """Return the frame's whole cloud projected as one scan (one LiDAR, no split)."""
    return lidar_to_sparse_depth(frame.points_lidar[:, :3],
                                 RigidTransform.from_matrix(frame.T_cam_lidar), frame.camera,
                                 NO_LIMITS).depth


def test_a_bag_of_two_lidars_merges_them_into_the_whole_scan(tmp_path, frames):
    bag = write_two_lidar_bag(tmp_path / 'two', frames)
    dataset = RosbagDataset(bag, BagTopics(points=POINTS, more_points=(REAR,)),
                            projection=NO_LIMITS, holdout_fraction=0.0, poses='none')
    merged = list(dataset)
    assert len(merged) == 3 and dataset.topic_roles['more_points'] == [REAR]
    for frame, truth in zip(merged, frames):
        # The rear half, moved back through its mount, lands where the whole cloud does; the
        # float32 it was written in moves a few points that sit on a pixel border (this
        # LiDAR's beams meet the pixel grid) to the next pixel.
        whole = whole_cloud(truth)
        same = np.isclose(frame.sparse_depth, whole, rtol=1e-5, atol=0)
        assert same.mean() > 0.998 and np.count_nonzero(whole) > 800
    alone = next(iter(RosbagDataset(bag, BagTopics(points=POINTS), projection=NO_LIMITS,
                                    holdout_fraction=0.0, poses='none')))
    assert np.count_nonzero(alone.sparse_depth) < np.count_nonzero(merged[0].sparse_depth)
    assert dataset.sync_losses['missing'] == {}


def test_a_frame_whose_second_cloud_was_not_recorded_is_counted_against_it(tmp_path, frames):
    bag = write_two_lidar_bag(tmp_path / 'gap', frames, without_rear=(1,))
    dataset = RosbagDataset(bag, BagTopics(points=POINTS, more_points=(REAR,)),
                            projection=NO_LIMITS, holdout_fraction=0.0, poses='none')
    assert len(dataset) == 2
    assert dataset.sync_losses['missing'] == {REAR: 1}
    assert dataset.sync_losses['no_partner'] >= 1


def test_lrda_densify_takes_a_points_topic_per_lidar(tmp_path, frames, tiny_model_dir):
    bag = write_two_lidar_bag(tmp_path / 'two', frames)
    report = run_densify(DensifyOptions(
        (bag,), tmp_path / 'out', {'model': str(tiny_model_dir), 'device': 'cpu',
                                   'iterations': 1, 'processing_size': 0, 'min_points': 8,
                                   'projection.min_range': 0.1, 'motion.align': False},
        BagTopics(points=POINTS, more_points=(REAR,)), progress=False))
    assert report.completed == 3 and not report.dropped and report.motion == {'off': 3}


def test_the_command_line_repeats_points_topic_per_lidar(tmp_path, frames, capsys):
    bag = write_two_lidar_bag(tmp_path / 'two', frames)
    code = lrda_main(['densify', str(bag), '--output', str(tmp_path / 'out'),
                      '--points-topic', POINTS, '--points-topic', POINTS])
    error = capsys.readouterr().err.strip()
    assert code == 1 and 'a point topic is given twice' in error, error
    code = lrda_main(['eval', '--bag', str(bag), '--output', str(tmp_path / 'eval'),
                      '-p', 'point_topics:=[points, points_rear]'])
    error = capsys.readouterr().err.strip()
    assert code == 1 and "parameter 'point_topics': names the node's live topics" in error
