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


"""Camera poses of a rosbag2 for TAE: what ``poses='auto'`` falls back to."""

from __future__ import annotations

from conftest import SHARED_DATA
from lrda_ros.datasets import rosbag as rosbag_dataset
import pytest

# /tf_static only: no map, odom or world frame, so 'auto' means LiDAR odometry.
BAG = SHARED_DATA / 'bags' / 'kitti_2011_09_26_3frames_db3'


@pytest.fixture
def bag():
    if not BAG.is_dir():
        pytest.skip(f'KITTI bag not found at {BAG}')
    return BAG


def test_auto_without_kiss_icp_evaluates_without_tae(bag, monkeypatch):
    monkeypatch.setattr(rosbag_dataset, 'lidar_odometry_available', lambda: False)
    dataset = rosbag_dataset.RosbagDataset(bag, poses='auto')
    assert dataset.pose_source == 'none'
    assert 'KISS-ICP' in dataset.pose_warning and 'TAE is not computed' in dataset.pose_warning
    frame = next(iter(dataset))  # no ImportError from the odometry
    assert frame.notes['pose_source'] == 'none' and frame.T_world_cam is None


def test_auto_with_kiss_icp_uses_lidar_odometry(bag):
    pytest.importorskip('kiss_icp', reason='KISS-ICP (the odometry extra) is not installed')
    dataset = rosbag_dataset.RosbagDataset(bag, poses='auto')
    assert (dataset.pose_source, dataset.pose_warning) == ('lidar_odometry', None)
