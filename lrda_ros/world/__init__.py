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
Procedural synthetic worlds: a vectorized ray caster for a camera and a spinning LiDAR.

Scenes are built from a few dozen analytic primitives (rectangles, yaw-rotated boxes, spheres
and vertical cylinders), each with a procedural texture defined in the surface's own 2-D
coordinates in metres, so texture frequency in the image falls with distance like in real
images.  One ray-casting routine serves both sensors: camera pixels and LiDAR beams are just
origins plus directions.

Conventions: world z up; camera optical frame x right, y down, z forward; LiDAR frame x
forward, y left, z up; ``T_a_b`` maps points in frame b to frame a; depth images are float32
z-depth in metres with 0 where there is no surface (sky).
"""

from .common import DEFAULT_HFOV_DEG
from .lidar import LidarConfig, simulate_lidar
from .materials import Material, TEXTURES
from .moving import MovingSweep, RigMotion, simulate_moving_sweep
from .poses import camera_pose, lidar_mount, pinhole_camera, pinhole_camera_focal
from .primitives import Box, Cylinder, Rect, Sphere
from .raycast import cast_rays, RayHits
from .rendering import render, RenderResult
from .scenes import Lighting, make_scene, Scene, SceneLayout
from .sequences import (
    iter_sequence, make_sequence, random_view, sequence_poses, SequenceConfig, SyntheticFrame)

__all__ = [
    'Box', 'Cylinder', 'DEFAULT_HFOV_DEG', 'LidarConfig', 'Lighting', 'Material', 'MovingSweep',
    'RayHits', 'Rect', 'RenderResult', 'RigMotion', 'Scene', 'SceneLayout', 'SequenceConfig',
    'Sphere', 'SyntheticFrame', 'TEXTURES', 'camera_pose', 'cast_rays', 'pinhole_camera',
    'pinhole_camera_focal', 'iter_sequence', 'lidar_mount', 'make_scene', 'make_sequence',
    'random_view', 'render', 'sequence_poses', 'simulate_lidar', 'simulate_moving_sweep',
]
