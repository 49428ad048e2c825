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
A hand-made scene for the calibration check: a bright plank in front of a dark wall.

Everything is computed here from first principles, with no code of the package: the image is
painted from the pinhole formula (the plank's corners divided by their depth), the LiDAR scan
is intersected with the two planes by hand. A spinning LiDAR (x forward, y left, z up) sits
at the camera (x right, y down, z forward); scan lines are horizontal, so the plank's left and
right sides are the only depth jumps.
"""

from __future__ import annotations

import numpy as np

#: Image size and pinhole intrinsics.
WIDTH, HEIGHT, FOCAL, CX, CY = 320, 160, 160.0, 160.0, 80.0
#: The LiDAR frame in the camera's optical frame: x_cam = -y_lidar, y_cam = -z_lidar,
#: z_cam = x_lidar.
R_CAM_LIDAR = np.array([[0.0, -1.0, 0.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0]])
PLANK_DEPTH, WALL_DEPTH = 6.0, 20.0
PLANK_HALF_HEIGHT = 1.5


def plank_image(left_m: float, right_m: float, camera_x_m: float = 0.0) -> np.ndarray:
    """
    Paint the view: wall grey 60, plank grey 200 between lateral ``left_m`` and ``right_m``.

    ``camera_x_m``: the camera stands that far to the right (the plank moves left in the
    image). A pixel column is plank where its centre's ray meets the plank.
    """
    columns = np.arange(WIDTH)
    rows = np.arange(HEIGHT)
    x_at_plank = (columns - CX) / FOCAL * PLANK_DEPTH + camera_x_m
    y_at_plank = (rows - CY) / FOCAL * PLANK_DEPTH
    plank = ((x_at_plank >= left_m) & (x_at_plank <= right_m))[None, :] & \
        (np.abs(y_at_plank) <= PLANK_HALF_HEIGHT)[:, None]
    grey = np.where(plank, 200, 60).astype(np.uint8)
    return np.repeat(grey[:, :, None], 3, axis=2)


def plank_scan(left_m: float, right_m: float, times_of=None, lateral_speed: float = 0.0
               ) -> tuple[np.ndarray, np.ndarray]:
    """
    Return a scan of the scene (LiDAR frame, ring by ring in azimuth order) and point times.

    Rings every 0.3 degree from -12 to +12 degrees of elevation, azimuth every 0.25 degree
    over +-45 degrees. ``times_of(azimuth_deg)`` gives a column's time (s; default 0) and
    ``lateral_speed`` (m/s, towards the camera's +x) moves the LiDAR while it sweeps: each ray
    leaves from where the LiDAR is at its time.
    """
    points, times = [], []
    for elevation in np.radians(np.arange(-12.0, 12.01, 0.3)):
        for azimuth_deg in np.arange(45.0, -45.01, -0.25):  # sweeps from left to right
            azimuth = np.radians(azimuth_deg)
            t = 0.0 if times_of is None else times_of(azimuth_deg)
            shift = lateral_speed * t  # the LiDAR's position along camera x (= -y_lidar)
            direction = np.array([np.cos(elevation) * np.cos(azimuth),
                                  np.cos(elevation) * np.sin(azimuth), np.sin(elevation)])
            # Camera-frame ray from (shift, 0, 0): x = shift + s*(-dy), y = -s*dz, z = s*dx.
            s_plank = PLANK_DEPTH / direction[0]
            x = shift - s_plank * direction[1]
            y = -s_plank * direction[2]
            hits_plank = left_m <= x <= right_m and abs(y) <= PLANK_HALF_HEIGHT
            s = s_plank if hits_plank else WALL_DEPTH / direction[0]
            points.append(direction * s)
            times.append(t)
    return np.array(points), np.array(times)


#: A larger camera for the boards: translation shows only as parallax, pixels per centimetre.
BOARD_WIDTH, BOARD_HEIGHT, BOARD_FOCAL = 640, 320, 400.0
BOARD_CX, BOARD_CY = 320.0, 160.0
BACK_DEPTH = 80.0


def board_image(boards) -> np.ndarray:
    """
    Paint the boards: light diamonds (grey 220) on a dark background (grey 40).

    ``boards`` are (lateral x, height y (down), depth z, half-diagonal) in metres in the
    camera frame, each a square turned 45 degrees facing the camera: a point (x, y) of its
    plane is on it where ``|x - lateral| + |y - height| <= half-diagonal``. A pixel is light
    where its centre's ray meets a board (the nearest one first: farther ones are behind).
    """
    columns, rows = np.meshgrid(np.arange(BOARD_WIDTH), np.arange(BOARD_HEIGHT))
    ray_x, ray_y = (columns - BOARD_CX) / BOARD_FOCAL, (rows - BOARD_CY) / BOARD_FOCAL
    light = np.zeros(ray_x.shape, bool)
    for lateral, height, depth, half in boards:
        light |= np.abs(ray_x * depth - lateral) + np.abs(ray_y * depth - height) <= half
    grey = np.where(light, 220, 40).astype(np.uint8)
    return np.repeat(grey[:, :, None], 3, axis=2)


def board_scan(boards) -> np.ndarray:
    """
    Return a scan of the boards (LiDAR frame, ring by ring in azimuth order).

    The LiDAR sits at the camera (axes as R_CAM_LIDAR); rings every 0.3 degree from -20 to
    +20 degrees of elevation, azimuth every 0.15 degree over +-45 degrees. Each ray stops at
    the nearest board it meets (camera frame: along the ray to depth z, the diamond test of
    board_image), else at the background plane at BACK_DEPTH.
    """
    elevation = np.radians(np.arange(-20.0, 20.01, 0.3))[:, None]
    azimuth = np.radians(np.arange(45.0, -45.01, -0.15))[None, :]
    # LiDAR direction (x forward, y left, z up) -> camera (x right, y down, z forward).
    forward = np.cos(elevation) * np.cos(azimuth)
    right = -np.cos(elevation) * np.sin(azimuth)
    down = -np.sin(elevation) * np.ones_like(azimuth)
    depth = np.full(forward.shape, BACK_DEPTH)
    for lateral, height, board_depth, half in sorted(boards, key=lambda b: -b[2]):
        x, y = right / forward * board_depth, down / forward * board_depth
        on = np.abs(x - lateral) + np.abs(y - height) <= half
        depth = np.where(on & (board_depth < depth), board_depth, depth)
    s = depth / forward  # range along the ray
    directions = np.stack([forward, -right, -down], axis=-1)  # back to the LiDAR frame
    return (directions * s[..., None]).reshape(-1, 3)


def board_layouts(depths, seed: int = 0, frames: int = 4) -> list:
    """
    Return ``frames`` layouts of boards, one at each depth, spread across the view.

    Each board's place and size are drawn (``seed``) in image terms, a lateral position within
    the middle 80 % of the width, a height within the middle half, a half-diagonal of 18-30
    pixels, and scaled by its depth, so the same draw at other depths looks the same.
    """
    rng = np.random.default_rng(seed)
    layouts = []
    for _ in range(frames):
        boards = []
        for depth in depths:
            u = rng.uniform(0.1, 0.9) * BOARD_WIDTH
            v = rng.uniform(0.25, 0.75) * BOARD_HEIGHT
            half = rng.uniform(18.0, 30.0)
            boards.append(((u - BOARD_CX) / BOARD_FOCAL * depth,
                           (v - BOARD_CY) / BOARD_FOCAL * depth, depth,
                           half / BOARD_FOCAL * depth))
        layouts.append(boards)
    return layouts
