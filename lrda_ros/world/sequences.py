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
"""Camera and LiDAR sequences along a path, and random views."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
import math

import numpy as np

from .common import DEFAULT_HFOV_DEG, F32, vec3
from .lidar import LidarConfig, simulate_lidar
from .poses import camera_pose, lidar_mount, pinhole_camera, pinhole_camera_focal
from .raycast import nearest_hit
from .rendering import camera_rays, render
from .scenes import make_scene, Scene
from ..geometry import CameraModel

# Sequences and random views
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SequenceConfig:
    """
    A synthetic drive (``'outdoor'``) or walk (``'indoor'``) with a camera and a LiDAR.

    ``fx`` defaults to a 70 degree horizontal field of view; ``lidar`` to a 32-beam
    Velodyne-like sensor (indoors: +-15 degrees); ``speed_mps`` to 8 m/s outdoors and 0.7 m/s
    indoors.
    """

    kind: str
    num_frames: int
    width: int = 640
    height: int = 480
    fx: float | None = None
    lidar: LidarConfig | None = None
    fps: float = 10.0
    speed_mps: float | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.kind not in ('indoor', 'outdoor'):
            raise ValueError(f"kind must be 'indoor' or 'outdoor', not {self.kind!r}")
        if self.num_frames < 0 or self.fps <= 0.0:
            raise ValueError('num_frames must be >= 0 and fps > 0')

    def camera(self) -> CameraModel:
        """Return the camera model of the sequence."""
        if self.fx is None:
            return pinhole_camera(self.width, self.height, DEFAULT_HFOV_DEG)
        return pinhole_camera_focal(self.width, self.height, self.fx)

    def lidar_config(self) -> LidarConfig:
        """Return the LiDAR configuration, resolving the per-kind default."""
        if self.lidar is not None:
            return self.lidar
        return LidarConfig.indoor() if self.kind == 'indoor' else LidarConfig()

    def speed(self) -> float:
        """Return the travel speed in m/s, resolving the per-kind default."""
        if self.speed_mps is not None:
            return float(self.speed_mps)
        return 0.7 if self.kind == 'indoor' else 8.0


@dataclass(frozen=True, eq=False)
class SyntheticFrame:
    """
    One synchronized camera + LiDAR frame with ground truth.

    ``points_lidar`` is (N, 4) [x, y, z, intensity] in the LiDAR frame; ``T_cam_lidar`` is the
    fixed mounting extrinsic; ``depth`` is the ground-truth z-depth (0 = no surface).
    """

    index: int
    stamp_ns: int
    rgb: np.ndarray
    depth: np.ndarray
    camera: CameraModel
    points_lidar: np.ndarray
    T_cam_lidar: np.ndarray
    T_world_cam: np.ndarray

    @property
    def T_world_lidar(self) -> np.ndarray:
        """Return the LiDAR pose in the world frame."""
        return self.T_world_cam @ self.T_cam_lidar


def _sequence_scene(config: SequenceConfig) -> Scene:
    duration = max(config.num_frames - 1, 0) / config.fps
    return make_scene(config.kind, config.seed, length=config.speed() * duration + 10.0)


def sequence_poses(config: SequenceConfig, scene: Scene | None = None) -> np.ndarray:
    """
    Return the camera trajectory ``T_world_cam`` of the sequence, shape (num_frames, 4, 4).

    Outdoors the camera drives along the right-hand lane with a gentle lateral sway; indoors it
    walks an elliptical loop around the room, looking slightly inward, with gentle yaw.
    """
    scene = _sequence_scene(config) if scene is None else scene
    layout = scene.layout
    if layout is None:
        raise ValueError('the scene has no layout to derive a trajectory from')
    rng = np.random.default_rng([config.seed, 303])
    t = np.arange(config.num_frames) / config.fps
    v = config.speed()
    sway_a, sway_p, sway_ph = rng.uniform(0.1, 0.35), rng.uniform(6.0, 12.0), rng.uniform(0, 6.3)
    yaw_a, yaw_p = rng.uniform(0.03, 0.08), rng.uniform(5.0, 9.0)
    w = 2.0 * math.pi / sway_p
    if config.kind == 'outdoor':
        height, pitch = rng.uniform(1.45, 1.7), math.radians(rng.uniform(-3.0, 0.0))
        x = 2.0 + v * t
        y = layout.lane_y + sway_a * np.sin(w * t + sway_ph)
        yaw = np.arctan2(sway_a * w * np.cos(w * t + sway_ph), v) + yaw_a * np.sin(
            2.0 * math.pi * t / yaw_p)
        z = height + 0.01 * np.sin(7.0 * t)
    else:
        (cx, cy), (rx, ry) = layout.track_center, layout.track_radii
        height, pitch = rng.uniform(1.3, 1.6), math.radians(rng.uniform(-10.0, -4.0))
        direction = 1.0 if rng.random() < 0.5 else -1.0
        phi = rng.uniform(0, 2 * math.pi) + direction * v * t / (0.5 * (rx + ry))
        x, y = cx + rx * np.cos(phi), cy + ry * np.sin(phi)
        heading = np.arctan2(direction * ry * np.cos(phi), -direction * rx * np.sin(phi))
        # Look a little toward the room's centre, plus a slow side-to-side glance.
        yaw = heading + direction * 0.3 + 4.0 * yaw_a * np.sin(2.0 * math.pi * t / yaw_p)
        z = height + 0.02 * np.sin(2.0 * math.pi * t / 0.9)
    poses = [camera_pose((x[i], y[i], z[i]), yaw[i], pitch) for i in range(config.num_frames)]
    return np.stack(poses) if poses else np.zeros((0, 4, 4))


def iter_sequence(config: SequenceConfig) -> Iterator[SyntheticFrame]:
    """Generate the frames of a sequence lazily (same content as :func:`make_sequence`)."""
    scene = _sequence_scene(config)
    camera = config.camera()
    lidar = config.lidar_config()
    T_cam_lidar = lidar_mount()
    for i, T_world_cam in enumerate(sequence_poses(config, scene)):
        view = render(scene, camera, T_world_cam, np.random.default_rng([config.seed, 2, i]))
        points = simulate_lidar(scene, T_world_cam @ T_cam_lidar, lidar,
                                np.random.default_rng([config.seed, 3, i]))
        yield SyntheticFrame(i, int(round(i * 1e9 / config.fps)), view.rgb, view.depth, camera,
                             points, T_cam_lidar.copy(), T_world_cam)


def make_sequence(config: SequenceConfig) -> list[SyntheticFrame]:
    """Generate all frames of a sequence as a list of :class:`SyntheticFrame`."""
    return list(iter_sequence(config))


def _clear(scene: Scene, position: np.ndarray, clearance: float) -> bool:
    """Return whether ``position`` is outside every solid and ``clearance`` from all surfaces."""
    pt = position[None, :]
    if any(p.contains(pt, clearance)[0] for p in scene.primitives):
        return False
    # 26 directions: cube faces, edges and corners.
    g = np.array(np.meshgrid([-1, 0, 1], [-1, 0, 1], [-1, 0, 1])).reshape(3, -1).T
    g = g[np.any(g != 0, axis=1)].astype(np.float64)
    g /= np.linalg.norm(g, axis=1, keepdims=True)
    d = tuple(np.ascontiguousarray(g[:, k], dtype=F32) for k in range(3))
    t, _ = nearest_hit(scene.primitives, vec3(position), d, chunk=g.shape[0])
    return bool(t.min() > clearance)


def _probe(scene: Scene, camera: CameraModel, T_world_cam: np.ndarray) -> tuple:
    """Return (median depth, sky fraction) of a coarse 12x9 ray grid of the view."""
    rows = max(2, round(12 * camera.height / camera.width))
    small = pinhole_camera_focal(12, rows, camera.fx * 12.0 / camera.width)
    o, d, z_unit, _, _, valid = camera_rays(small, T_world_cam)
    t, ids = nearest_hit(scene.primitives, o, d)
    depth = np.where(ids >= 0, t * z_unit, 0.0)[valid]
    sky = float(np.mean(depth == 0.0))
    return (float(np.median(depth[depth > 0])) if sky < 1.0 else 0.0), sky


def _sample_pose(scene: Scene, rng: np.random.Generator) -> np.ndarray:
    """Draw a camera pose: position, height, heading and pitch plausible for the scene kind."""
    lay = scene.layout
    if scene.kind == 'indoor':
        x0, y0, x1, y1 = lay.bounds
        pos = (rng.uniform(x0 + 0.3, x1 - 0.3), rng.uniform(y0 + 0.3, y1 - 0.3),
               rng.uniform(0.3, min(2.2, lay.ceiling - 0.3)))
        if rng.random() < 0.7:  # mostly look into the room rather than at the nearest wall
            cx, cy = lay.track_center
            yaw = math.atan2(cy - pos[1], cx - pos[0]) + rng.normal(0.0, 0.7)
        else:
            yaw = rng.uniform(-math.pi, math.pi)
        pitch = float(np.clip(rng.normal(-0.12, 0.2), -0.8, 0.5))
    else:
        hw, sw = lay.road_half_width, lay.sidewalk_width
        u = rng.random()
        if u < 0.6:  # on the carriageway, between the parked cars
            y = rng.uniform(-(hw - 2.4), hw - 2.4)
        else:  # on a sidewalk
            y = rng.choice([-1.0, 1.0]) * rng.uniform(hw + 0.3, hw + sw - 0.3)
        high = rng.random() < 0.15
        z = rng.uniform(2.0, 6.0) if high else rng.uniform(1.1, 2.0)
        pos = (rng.uniform(lay.bounds[0] + 40.0, lay.bounds[2] - 60.0), y, z)
        along = rng.random() < 0.7
        yaw = (rng.choice([0.0, math.pi]) + rng.normal(0.0, 0.25)) if along else rng.uniform(
            -math.pi, math.pi)
        pitch = float(np.clip(rng.normal(-0.05 - (0.15 if high else 0.0), 0.12), -0.6, 0.35))
    return camera_pose(pos, yaw, pitch, rng.normal(0.0, 0.04))


def random_view(seed: int, kind: str = 'indoor', width: int = 224,
                height: int = 224) -> tuple[np.ndarray, np.ndarray, CameraModel]:
    """
    Render one random view of a fresh random scene: (rgb uint8, depth float32, camera).

    Intrinsics vary (55-85 degree horizontal FOV); poses vary in position, height, heading,
    pitch and roll but are rejected when inside or within 0.3 m of an object, or (most of the
    time) when the view is dominated by a nearby surface or by sky.
    """
    rng = np.random.default_rng([seed, 606])
    scene = make_scene(kind, seed, length=60.0)
    fx = 0.5 * width / math.tan(math.radians(rng.uniform(55.0, 85.0)) / 2.0)
    camera = pinhole_camera_focal(width, height, fx)
    min_depth = 1.5 if kind == 'indoor' else 3.0
    pose = None
    for _ in range(50):
        candidate = _sample_pose(scene, rng)
        if not _clear(scene, candidate[:3, 3], 0.3):
            continue
        median, sky = _probe(scene, camera, candidate)
        close_ok = rng.random() < 0.05  # keep a few close-up views for variety
        if (median >= min_depth or close_ok) and sky < 0.6:
            pose = candidate
            break
    if pose is None:
        pose = sequence_poses(SequenceConfig(kind, 1, seed=seed), scene)[0]
    view = render(scene, camera, pose, rng)
    return view.rgb, view.depth, camera
