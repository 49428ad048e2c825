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

"""Tests for the procedural synthetic world: determinism, geometry and sensor consistency."""

import math
import time

from lrda_ros import world as syn
import numpy as np
import pytest

SMALL_LIDAR = syn.LidarConfig(beams=16, horizontal_resolution_deg=0.5, range_noise_std=0.0)
SMALL_LIDAR_INDOOR = syn.LidarConfig.indoor(beams=16, horizontal_resolution_deg=0.5,
                                            range_noise_std=0.0)


def _small_sequence(kind, seed=7, num_frames=2, lidar=None):
    config = syn.SequenceConfig(kind, num_frames, width=160, height=120, lidar=lidar,
                                seed=seed)
    return syn.make_sequence(config)


def _floor_scene():
    floor = syn.Rect((0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0),
                     syn.Material((0.5, 0.5, 0.5), texture='checker'), infinite=True)
    return syn.Scene((floor,))


def _project(points_cam, K):
    """Pinhole projection of (N, 3) optical-frame points to pixel (u, v)."""
    z = points_cam[:, 2]
    u = K[0, 0] * points_cam[:, 0] / z + K[0, 2]
    v = K[1, 1] * points_cam[:, 1] / z + K[1, 2]
    return u, v


def _lidar_vs_gt(frame):
    """Return (compared, agree) counts of LiDAR points against the frame's GT depth."""
    depth = frame.depth.astype(np.float64)
    H, W = depth.shape
    xyz = frame.points_lidar[:, :3].astype(np.float64)
    cam = xyz @ frame.T_cam_lidar[:3, :3].T + frame.T_cam_lidar[:3, 3]
    cam = cam[cam[:, 2] > 0.1]
    u, v = _project(cam, frame.camera.K)
    # Need the 2x2 bilinear support plus a one-pixel ring for the smoothness test.
    inside = (u >= 1) & (u < W - 2) & (v >= 1) & (v < H - 2)
    cam, u, v = cam[inside], u[inside], v[inside]
    u0, v0 = np.floor(u).astype(int), np.floor(v).astype(int)
    inv = np.where(depth > 0, 1.0 / np.maximum(depth, 1e-9), 0.0)
    # Inverse depth of a plane is affine in pixel coordinates: compare only where the 4x4
    # neighbourhood is non-zero with vanishing second differences (one smooth surface).
    patch = np.stack([inv[v0 + dv, u0 + du] for dv in range(-1, 3) for du in range(-1, 3)])
    patch = patch.reshape(4, 4, -1)
    scale = patch.max(axis=(0, 1))
    d2u = np.abs(patch[:, :-2] + patch[:, 2:] - 2.0 * patch[:, 1:-1]).max(axis=(0, 1))
    d2v = np.abs(patch[:-2] + patch[2:] - 2.0 * patch[1:-1]).max(axis=(0, 1))
    smooth = (patch.min(axis=(0, 1)) > 0) & (np.maximum(d2u, d2v) < 1e-3 * scale)
    fu, fv = u - u0, v - v0
    interp = ((1 - fu) * (1 - fv) * patch[1, 1] + fu * (1 - fv) * patch[1, 2]
              + (1 - fu) * fv * patch[2, 1] + fu * fv * patch[2, 2])
    z = cam[:, 2]
    agree = np.abs(1.0 / np.maximum(interp, 1e-9) - z) <= 2e-3 * z + 1e-3
    return int(smooth.sum()), int((agree & smooth).sum())


@pytest.mark.parametrize('kind', ['outdoor', 'indoor'])
def test_lidar_points_land_on_matching_gt_depth(kind):
    lidar = SMALL_LIDAR if kind == 'outdoor' else SMALL_LIDAR_INDOOR
    for frame in _small_sequence(kind, lidar=lidar):
        compared, agree = _lidar_vs_gt(frame)
        assert compared > 150, compared
        assert agree / compared > 0.95, (agree, compared)


def test_same_seed_is_deterministic_and_seeds_differ():
    a = _small_sequence('outdoor', seed=3, lidar=SMALL_LIDAR)
    b = _small_sequence('outdoor', seed=3, lidar=SMALL_LIDAR)
    c = _small_sequence('outdoor', seed=4, lidar=SMALL_LIDAR)
    for fa, fb in zip(a, b):
        np.testing.assert_array_equal(fa.rgb, fb.rgb)
        np.testing.assert_array_equal(fa.depth, fb.depth)
        np.testing.assert_array_equal(fa.points_lidar, fb.points_lidar)
        np.testing.assert_array_equal(fa.T_world_cam, fb.T_world_cam)
    assert not np.array_equal(a[0].depth, c[0].depth)
    assert not np.array_equal(a[0].rgb, c[0].rgb)
    rgb1, depth1, _ = syn.random_view(11, 'indoor', 64, 48)
    rgb2, depth2, _ = syn.random_view(11, 'indoor', 64, 48)
    rgb3, depth3, _ = syn.random_view(12, 'indoor', 64, 48)
    np.testing.assert_array_equal(rgb1, rgb2)
    np.testing.assert_array_equal(depth1, depth2)
    assert not np.array_equal(depth1, depth3)


def test_flat_floor_depth_is_analytic():
    height, pitch = 1.5, math.radians(20.0)
    camera = syn.pinhole_camera(160, 120, 70.0)
    pose = syn.camera_pose((3.0, -2.0, height), yaw=0.7, pitch=-pitch)
    result = syn.render(_floor_scene(), camera, pose)
    fy, cy = camera.K[1, 1], camera.K[1, 2]
    for v in (40, 60, 90, 119):
        expected = height / (math.sin(pitch) + math.cos(pitch) * (v - cy) / fy)
        np.testing.assert_allclose(result.depth[v, [0, 80, 159]], expected, rtol=1e-4)
    # Rows above the horizon see nothing.
    horizon = cy - fy * math.tan(pitch)
    assert np.all(result.depth[: int(horizon) - 1] == 0.0)


def test_outdoor_sky_has_zero_depth():
    scene = syn.make_scene('outdoor', 5, length=60.0)
    lane = scene.layout.lane_y
    camera = syn.pinhole_camera(160, 120)
    result = syn.render(scene, camera, syn.camera_pose((20.0, lane, 1.6), 0.0, math.radians(12)))
    sky = result.depth == 0.0
    assert sky[:20].mean() > 0.2
    np.testing.assert_array_equal(sky, result.primitive_ids < 0)
    assert np.all(result.normals[sky] == 0.0)
    # The sky is drawn as a bluish gradient, not as black.
    rgb = result.rgb[sky].astype(int)
    assert np.mean(rgb[:, 2] > rgb[:, 0]) > 0.9


def test_indoor_frames_have_no_holes():
    for frame in _small_sequence('indoor', seed=2, num_frames=3, lidar=SMALL_LIDAR_INDOOR):
        assert np.all(frame.depth > 0.0)
    for seed in range(4):
        _, depth, _ = syn.random_view(seed, 'indoor', 80, 60)
        assert np.all(depth > 0.0)


def test_outputs_have_expected_shapes_dtypes_and_ranges():
    frames = _small_sequence('outdoor', seed=1, num_frames=2, lidar=SMALL_LIDAR)
    config = syn.SequenceConfig('outdoor', 2, width=160, height=120, seed=1)
    for i, frame in enumerate(frames):
        assert frame.index == i
        assert frame.stamp_ns == i * 100_000_000
        assert frame.rgb.shape == (120, 160, 3) and frame.rgb.dtype == np.uint8
        assert frame.depth.shape == (120, 160) and frame.depth.dtype == np.float32
        assert np.all(np.isfinite(frame.depth)) and np.all(frame.depth >= 0.0)
        assert frame.rgb.std() > 10.0  # textured, shaded content
        assert (frame.camera.width, frame.camera.height) == (160, 120)
        assert frame.camera.K.shape == (3, 3)
        assert frame.points_lidar.ndim == 2 and frame.points_lidar.shape[1] == 4
        assert frame.points_lidar.dtype == np.float32
        assert len(frame.points_lidar) > 1000
        ranges = np.linalg.norm(frame.points_lidar[:, :3], axis=1)
        assert ranges.max() <= SMALL_LIDAR.max_range + 1e-3
        assert np.all((frame.points_lidar[:, 3] >= 0.0) & (frame.points_lidar[:, 3] <= 1.0))
        for T in (frame.T_cam_lidar, frame.T_world_cam):
            assert T.shape == (4, 4)
            np.testing.assert_allclose(T[:3, :3] @ T[:3, :3].T, np.eye(3), atol=1e-9)
    # Default horizontal field of view is 70 degrees.
    fx = config.camera().K[0, 0]
    assert math.degrees(2 * math.atan(80 / fx)) == pytest.approx(70.0)
    # Driving forward at the default 8 m/s and 10 fps.
    step = frames[1].T_world_cam[:3, 3] - frames[0].T_world_cam[:3, 3]
    assert step[0] == pytest.approx(0.8, abs=0.05)


def test_frame_conventions():
    T = syn.lidar_mount(up=0.2, back=0.1)
    # LiDAR x (forward) is the optical z axis, LiDAR z (up) is optical -y.
    np.testing.assert_allclose(T[:3, :3] @ [1, 0, 0], [0, 0, 1], atol=1e-12)
    np.testing.assert_allclose(T[:3, :3] @ [0, 0, 1], [0, -1, 0], atol=1e-12)
    np.testing.assert_allclose(T[:3, 3], [0.0, -0.2, -0.1], atol=1e-12)
    pose = syn.camera_pose((1.0, 2.0, 3.0), yaw=math.pi / 2, pitch=0.0)
    np.testing.assert_allclose(pose[:3, 2], [0, 1, 0], atol=1e-12)  # looks along world +y
    np.testing.assert_allclose(pose[:3, 1], [0, 0, -1], atol=1e-12)  # image down = world down


def test_lidar_over_floor():
    scene = _floor_scene()
    T_world_lidar = np.eye(4)
    T_world_lidar[2, 3] = 2.0
    config = syn.LidarConfig(beams=8, horizontal_resolution_deg=2.0, range_noise_std=0.0,
                             max_range=30.0)
    points = syn.simulate_lidar(scene, T_world_lidar, config, np.random.default_rng(0))
    np.testing.assert_allclose(points[:, 2], -2.0, atol=1e-4)
    assert np.linalg.norm(points[:, :3], axis=1).max() <= 30.0
    # Beams from -25 to 3 degrees: those at or above ~-3.8 degrees reach past 30 m.
    assert len(points) == 6 * 180
    dropped = syn.simulate_lidar(scene, T_world_lidar, syn.LidarConfig(
        beams=8, horizontal_resolution_deg=2.0, max_range=30.0, dropout=0.5),
        np.random.default_rng(0))
    assert 0.35 * len(points) < len(dropped) < 0.65 * len(points)


def test_cast_rays_hits_sphere_and_box():
    mat = syn.Material((0.8, 0.2, 0.2))
    scene = syn.Scene((syn.Sphere((5.0, 0.0, 0.0), 1.0, mat),
                       syn.Box((0.0, 6.0, 0.0), (2.0, 2.0, 2.0), mat, yaw=math.pi / 4)))
    hits = syn.cast_rays(scene, np.zeros(3), np.array([[1.0, 0, 0], [0, 2.0, 0], [0, 0, 1]]))
    np.testing.assert_allclose(hits.t[:2], [4.0, 6.0 - math.sqrt(2.0)], rtol=1e-5)
    assert hits.t[2] == np.inf and hits.primitive.tolist() == [0, 1, -1]
    np.testing.assert_allclose(hits.normals[0], [-1, 0, 0], atol=1e-6)
    np.testing.assert_allclose(np.abs(hits.normals[1]), [math.sqrt(0.5)] * 2 + [0], atol=1e-6)
    # Per-ray origins.
    hits = syn.cast_rays(scene, np.array([[0.0, 0, 0], [5.0, 0, 3]]),
                         np.array([[1.0, 0, 0], [0, 0, -1]]))
    np.testing.assert_allclose(hits.t, [4.0, 2.0], rtol=1e-5)
    np.testing.assert_allclose(hits.points[1], [5.0, 0.0, 1.0], atol=1e-5)


def test_culled_ray_casting_matches_brute_force():
    scene = syn.make_scene('outdoor', 9, length=40.0)
    # Coherent directions (a camera-like fan) from one origin and from scattered origins.
    yaw, pitch = np.meshgrid(np.linspace(-0.8, 0.8, 64), np.linspace(-0.5, 0.3, 32))
    dirs = np.stack([np.cos(pitch) * np.cos(yaw), np.cos(pitch) * np.sin(yaw),
                     np.sin(pitch)], axis=-1).reshape(-1, 3)
    rng = np.random.default_rng(0)
    origins = np.array([10.0, scene.layout.lane_y, 1.6]) + rng.normal(0.0, 0.5, dirs.shape)
    for o in (origins[0], origins):
        hits = syn.cast_rays(scene, o, dirs)
        d = tuple(dirs[:, k].astype(np.float32) for k in range(3))
        oo = tuple(o[k] for k in range(3)) if o.ndim == 1 else tuple(
            o[:, k].astype(np.float32) for k in range(3))
        t = np.stack([p.intersect(oo, d) for p in scene.primitives])
        expected = np.where(np.isfinite(t.min(axis=0)), t.argmin(axis=0), -1)
        np.testing.assert_array_equal(hits.primitive, expected)


def test_random_views_are_plausible_and_diverse():
    medians = []
    for seed in range(4):
        for kind in ('indoor', 'outdoor'):
            rgb, depth, camera = syn.random_view(seed, kind, 64, 48)
            assert rgb.shape == (48, 64, 3) and depth.shape == (48, 64)
            assert camera.width == 64 and camera.height == 48
            valid = depth > 0
            # Never inside an object or pressed against a surface.
            assert depth[valid].min() > 0.1
            assert valid.mean() > 0.3
            medians.append(float(np.median(depth[valid])))
    assert np.std(medians) > 0.5


def test_render_timing_640x480():
    scene = syn.make_scene('outdoor', 0)
    camera = syn.pinhole_camera(640, 480)
    pose = syn.sequence_poses(syn.SequenceConfig('outdoor', 1, seed=0), scene)[0]
    start = time.perf_counter()
    result = syn.render(scene, camera, pose)
    elapsed = time.perf_counter() - start
    print(f'\n640x480 outdoor render: {elapsed * 1e3:.0f} ms')
    assert result.rgb.shape == (480, 640, 3)
