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
Several LiDARs per camera over real rclpy/DDS, on both synchronizers.

``point_topics: [points, points_rear]``: the node synchronizes an image, its camera_info and a
cloud of each topic, merges the clouds into one sparse map, and counts a frame lost for want
of the second cloud under that cloud's name. Each test runs on the built-in synchronizer and on
message_filters' ApproximateTimeSynchronizer (2 + N subscribers; skipped where message_filters
is not installed, as on PyPI-only machines).
"""

from __future__ import annotations

from conftest import spin_until
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from lrda_ros.geometry import (  # noqa: E402, I100
    lidar_to_sparse_depth, ProjectionConfig, RigidTransform)
from lrda_ros.messages.conversions import depth_image_to_array  # noqa: E402
from lrda_ros.ros.builders import (  # noqa: E402
    camera_model_to_camera_info, rgb_to_image_msg, xyz_to_pointcloud2)
from sensor_msgs.msg import PointCloud2  # noqa: E402
from test_node import CAMERA_FRAME, frames, header, LIDAR_FRAME, system  # noqa: E402, F401
from test_node_losses import (  # noqa: E402, F401
    diagnostic_values, LoggedWarnings, synchronizer)

MS = 1_000_000
TWO_LIDARS = {'point_topics': ['points', 'points_rear'], 'sync.queue_size': 3}


class TwoLidars:
    """The harness's inputs plus a second LiDAR on ``points_rear``."""

    def __init__(self, harness, executor) -> None:
        self.harness = harness
        self.pub_rear = harness.node.create_publisher(PointCloud2, 'points_rear', 10)
        assert spin_until(executor, lambda: self.pub_rear.get_subscription_count() > 0, 10)

    def publish(self, frame, stamp_ns: int, rear: bool = True,
                rear_frame: str = LIDAR_FRAME) -> None:
        """Publish a frame, its cloud split between the two LiDARs (the rear half optional)."""
        camera_header = header(CAMERA_FRAME, stamp_ns)
        points = frame.points_lidar[:, :3]
        half = points.shape[0] // 2
        self.harness.pub_image.publish(rgb_to_image_msg(frame.rgb, camera_header))
        self.harness.pub_info.publish(camera_model_to_camera_info(frame.camera, camera_header))
        self.harness.pub_points.publish(
            xyz_to_pointcloud2(points[:half], header(LIDAR_FRAME, stamp_ns + 3 * MS)))
        if rear:
            self.pub_rear.publish(
                xyz_to_pointcloud2(points[half:], header(rear_frame, stamp_ns + 7 * MS)))


def test_two_point_topics_deliver_merged_frames(system, frames, synchronizer):  # noqa: F811
    node, harness, executor = system(**TWO_LIDARS)
    lidars = TwoLidars(harness, executor)
    stamps = [5_000_000_000 + k * 200 * MS for k in range(3)]
    for k, stamp in enumerate(stamps):
        lidars.publish(frames[k], stamp)
        assert spin_until(executor, lambda: node.stats.processed == k + 1, 60), node.stats
    assert node.subscriptions_handle.backend == synchronizer
    assert len(node.subscriptions_handle.topics) == 4
    assert spin_until(executor, lambda: len(harness.received['sparse_depth']) == 3, 10)
    for k, message in enumerate(harness.received['sparse_depth']):
        frame = frames[k]
        # Both halves, merged: exactly the whole cloud projected as one scan.
        whole = lidar_to_sparse_depth(frame.points_lidar[:, :3],
                                      RigidTransform.from_matrix(frame.T_cam_lidar),
                                      frame.camera, ProjectionConfig(min_range=0.1)).depth
        np.testing.assert_array_equal(depth_image_to_array(message), whole)
    assert node.stats.dropped == {} and sum(node.stats.missing.values()) == 0


def test_a_missing_second_cloud_is_counted_under_its_name(
        system, frames, synchronizer):  # noqa: F811
    node, harness, executor = system(**TWO_LIDARS)
    lidars = TwoLidars(harness, executor)
    warnings = LoggedWarnings(node)
    base = 8_000_000_000
    for k in range(6):  # the rear LiDAR is silent: the queues overflow with its partners
        lidars.publish(frames[k % len(frames)], base + k * 200 * MS, rear=False)
        spin_until(executor, lambda: False, 0.1)

    def counted() -> bool:
        return int(diagnostic_values(node, harness).get('missing (points_rear)', 0)) >= 2

    assert spin_until(executor, counted, 20), diagnostic_values(node, harness)
    values = diagnostic_values(node, harness)
    assert 'missing (points)' not in values and node.stats.processed == 0
    lines = warnings.matching('missing (points_rear)', 'points_rear none in range')
    assert lines and lines[0].startswith('missing (points_rear), '), warnings.lines
    # The second LiDAR comes back: frames flow again.
    lidars.publish(frames[0], base + 10 * 200 * MS)
    assert spin_until(executor, lambda: node.stats.processed == 1, 60), node.stats


def test_one_override_for_clouds_in_two_frames_drops_the_frame_naming_the_topic(
        system, frames, synchronizer):  # noqa: F811
    node, harness, executor = system(**TWO_LIDARS)
    lidars = TwoLidars(harness, executor)
    warnings = LoggedWarnings(node)
    lidars.publish(frames[0], 9_000_000_000, rear_frame='lidar_rear')
    assert spin_until(executor, lambda: node.stats.dropped['no_transform'] == 1, 30)
    lines = warnings.matching('dropped (no_transform)', "points_rear is in frame 'lidar_rear'")
    assert lines, warnings.lines
