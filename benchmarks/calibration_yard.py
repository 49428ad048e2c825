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
A synthetic yard for the calibration check's translation: near targets at 2-8 m, several views.

Translation differs from rotation only by parallax, a shift in the image that falls with
depth, so a window observes it only with strong depth edges near the camera at several
depths. The yard has them: diamond-shaped boards (square boards turned 45 degrees, so their
outlines are slanted and a vertical shift moves them across the image's edges too) and posts,
light on dark, at 2 to 8 m, across the whole field of view, in front of a wall at 25 m. A
64-beam LiDAR with a fine azimuth step (0.1 degree) sees them from five camera positions.
"""

from __future__ import annotations

from dataclasses import replace
import math

from lrda_ros import world
from lrda_ros.calibration.score import (
    calibration_frame, CalibrationFrame, FrameSelection, rotation_matrix)
from lrda_ros.geometry import RigidTransform
import numpy as np

#: Camera positions (x forward, y left, m) and headings (deg) of the window's views.
VIEWS = ((0.0, 0.0, 0.0), (0.6, 0.8, 8.0), (1.2, -0.8, -8.0), (-0.5, 0.4, -4.0),
         (0.3, -0.3, 5.0))
CAMERA_HEIGHT_M = 1.4
#: The synthetic LiDAR's rays are thin: outlines on the bisector of a jump's two rays.
SELECTION = FrameSelection(outline_shift=0.5)


def _board(center, size: float, material: world.Material) -> world.Rect:
    """Return a square board facing the camera (-x), turned 45 degrees: a diamond."""
    half = size / math.sqrt(2.0)
    return world.Rect(center, (0.0, half, half), (0.0, half, -half), material)


def yard_scene(seed: int = 0, scale: float = 1.0) -> world.Scene:
    """
    Return the yard: boards and posts at 2-8 m before a wall at 25 m, on a dark ground.

    ``scale`` makes it that many times as large and as far: with the views scaled alike the
    images are the same, and a translation's parallax ``scale`` times smaller.
    """
    rng = np.random.default_rng([seed, 707])
    dark = world.Material((0.12, 0.12, 0.14))
    primitives = [world.Rect((0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0),
                             world.Material((0.2, 0.2, 0.2)), infinite=True),
                  world.Rect((25.0 * scale, 0.0, 5.0 * scale), (0.0, 60.0 * scale, 0.0),
                             (0.0, 0.0, 10.0 * scale), dark)]
    for index, depth in enumerate(np.linspace(2.2, 8.0, 14)):
        # Spread across the view: the lateral position grows with depth (the field of view).
        lateral = (rng.uniform(-0.85, 0.85)) * depth * 0.8
        light = world.Material(tuple(rng.uniform(0.7, 0.95, 3)))
        if index % 3 == 2:
            width = rng.uniform(0.15, 0.3)
            primitives.append(world.Box((depth * scale, lateral * scale, 1.5 * scale),
                                        (width * scale, width * scale, 3.0 * scale), light))
        else:
            size = rng.uniform(0.35, 0.6) * (0.6 + depth / 8.0)
            height = CAMERA_HEIGHT_M + rng.uniform(-0.35, 0.35) * depth * 0.25
            primitives.append(_board((depth * scale, lateral * scale, height * scale),
                                     size * scale, light))
    lighting = world.Lighting(ambient=0.8, shadows=False)
    return world.Scene(tuple(primitives), 'custom', lighting, seed=seed)


def yard_frames(seed: int = 0, scale: float = 1.0,
                size: tuple[int, int, float] = (1216, 352, 700.0),
                views=VIEWS) -> tuple[list[CalibrationFrame], RigidTransform]:
    """Return the window's frames, made with the true extrinsic, and that extrinsic."""
    width, height, fx = size
    camera = world.pinhole_camera_focal(width, height, fx)
    T_cam_lidar = world.lidar_mount()
    scene = yard_scene(seed, scale)
    lidar = world.LidarConfig(beams=64, vertical_fov_deg=(-15.0, 5.0),
                              horizontal_resolution_deg=0.1, max_range=100.0 * scale,
                              range_noise_std=0.005)
    frames = []
    for x, y, heading in views:
        T_world_cam = world.camera_pose((x * scale, y * scale, CAMERA_HEIGHT_M * scale),
                                        math.radians(heading), 0.0)
        points = world.simulate_lidar(scene, T_world_cam @ T_cam_lidar, lidar)[:, :3]
        rgb = world.render(scene, camera, T_world_cam).rgb
        frames.append(calibration_frame(rgb, points, RigidTransform.from_matrix(T_cam_lidar),
                                        camera, selection=SELECTION))
    return frames, RigidTransform.from_matrix(T_cam_lidar)


def with_error(frames: list[CalibrationFrame], true: RigidTransform, rotation_deg,
               translation_m) -> list[CalibrationFrame]:
    """Return the frames with the extrinsic whose right correction is the error: C^-1 T."""
    C = RigidTransform(rotation_matrix(np.radians(rotation_deg)), np.asarray(translation_m))
    given = C.inverse() @ true
    return [replace(frame, T_cam_lidar=given) for frame in frames]
