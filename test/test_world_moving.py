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

"""The moving rig: its kinematics by hand, and alignment measured on a small skewed sweep."""

import math

from lrda_ros.geometry import (
    align_sweep, lidar_to_sparse_depth, ProjectionConfig, RigidTransform)
from lrda_ros.world import (
    camera_pose, lidar_mount, LidarConfig, make_scene, pinhole_camera_focal, render, RigMotion,
    simulate_moving_sweep)
import numpy as np
import pytest


def test_rig_pose_is_the_hand_computed_arc():
    motion = RigMotion(speed_mps=10.0, yaw_rate_dps=30.0)
    start = np.eye(4)
    start[:3, 3] = [1.0, 2.0, 0.5]
    for seconds in (0.0, 0.05, 0.3):
        pose = motion.pose(start, seconds)
        yaw = math.radians(30.0) * seconds
        radius = 10.0 / math.radians(30.0)
        np.testing.assert_allclose(
            pose[:3, 3], [1.0 + radius * math.sin(yaw), 2.0 + radius * (1 - math.cos(yaw)), 0.5],
            rtol=0, atol=1e-12)
        np.testing.assert_allclose(pose[:2, :2], [[math.cos(yaw), -math.sin(yaw)],
                                                  [math.sin(yaw), math.cos(yaw)]],
                                   rtol=0, atol=1e-12)


def sparse_errors(motion, offset_s, seed=0):
    """Return the sparse maps without / with alignment and the rendered depth."""
    scene = make_scene('outdoor', seed, length=60.0)
    camera = pinhole_camera_focal(1216, 352, 700.0)  # KITTI's image size and focal length
    T_cam_lidar = lidar_mount()
    T_world_lidar = camera_pose((12.0, scene.layout.lane_y, 1.6), 0.0, 0.0) @ T_cam_lidar
    lidar = LidarConfig(beams=32, horizontal_resolution_deg=0.7, range_noise_std=0.0)
    sweep = simulate_moving_sweep(scene, T_world_lidar, lidar, motion)
    image_s = motion.sweep_period_s / 2 + offset_s
    T_world_cam = motion.pose(T_world_lidar, image_s) @ np.linalg.inv(T_cam_lidar)
    depth = render(scene, camera, T_world_cam, noise_std=0.0, shadows=False).depth
    extrinsic = RigidTransform.from_matrix(T_cam_lidar)
    aligned = align_sweep(sweep.points, sweep.times, image_s,
                          lambda s: RigidTransform.from_matrix(motion.pose(T_world_lidar, s)))
    maps = [lidar_to_sparse_depth(points, extrinsic, camera, ProjectionConfig()).depth
            for points in (sweep.points, aligned.points)]
    return maps, depth


def median_error(sparse, depth):
    both = (sparse > 0) & (depth > 0)
    return float(np.median(np.abs(sparse[both] - depth[both])))


@pytest.mark.parametrize('offset_s', [-0.05, 0.05])
def test_alignment_cuts_the_sparse_depth_error_tenfold_on_a_moving_rig(offset_s):
    (without, with_alignment), depth = sparse_errors(RigMotion(10.0, 30.0), offset_s)
    assert median_error(with_alignment, depth) * 10 <= median_error(without, depth)


def test_a_still_rig_gives_the_same_sparse_map_bit_for_bit():
    (without, with_alignment), _ = sparse_errors(RigMotion(0.0, 0.0), 0.05)
    assert np.count_nonzero(without) > 100
    np.testing.assert_array_equal(without, with_alignment)
