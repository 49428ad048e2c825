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
The host stages around the engine, each against the steps it replaced and an independent one.

The replaced steps live in benchmarks/host_reference.py (the benchmark times them beside
these). Sparse maps, counts, distances, colours and back-projected points must be the same bit
for bit; the confidence, now summed in float32 where it was float64, within float32 rounding.
"""

from __future__ import annotations

from pathlib import Path
import sys

import cv2
from lrda_ros.colormap import colorize_depth, depth_display_range
from lrda_ros.geometry import (
    backproject_depth, CameraModel, clouds_to_sparse_depth, colours_at, InvalidConfigError,
    InvalidPointsError, LidarCloud, ProjectionConfig, RigidTransform)
from lrda_ros.geometry import confidence as confidence_module
from lrda_ros.geometry.confidence import depth_confidence, lidar_distance, support_confidence
from lrda_ros.messages.conversions import pointcloud2_to_xyz
from lrda_ros.messages.point_times import (
    finite_xyz_mask, point_times, read_cloud, TimeLayout, UINT32)
from lrda_ros.ros.builders import depth_to_pointcloud2, xyz_to_pointcloud2
import numpy as np
from PIL import Image
import pytest
from std_msgs.msg import Header

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'benchmarks'))
import host_reference as reference  # noqa: E402, I100

KITTI_FRAMES = ('0000000005', '0000000082')
KITTI_K = np.array([[721.5377, 0.0, 609.5593], [0.0, 721.5377, 172.854], [0.0, 0.0, 1.0]])
# A forward-looking LiDAR (x forward, z up) to an optical frame (z forward, y down), slightly
# turned and shifted.
LIDAR_TO_CAMERA = np.eye(4)
LIDAR_TO_CAMERA[:3, :3] = cv2.Rodrigues(np.array([0.01, -0.015, 0.007]))[0] @ np.array(
    [[0.0, -1.0, 0.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0]])
LIDAR_TO_CAMERA[:3, 3] = (-0.004, -0.076, -0.27)
# A wide-angle plumb_bob lens (k1 = -0.3) with skew: the general path everywhere.
DISTORTED = CameraModel(np.array([[600.0, 0.4, 652.3], [0.0, 610.0, 355.8], [0.0, 0.0, 1.0]]),
                        1280, 720, 'plumb_bob', np.array([-0.3, 0.1, 0.001, -0.0015, -0.01]))
# float32 rounding of a product of three factors, each summed or divided a few times in
# float32 instead of float64: a few units in the last place of values in [0, 1].
CONFIDENCE_ATOL = 1e-6


def kitti_maps(shared_data: Path, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Return a KITTI DC frame's sparse LiDAR and a depth map (ground truth, filled in)."""
    def metres(folder: str) -> np.ndarray:
        path = shared_data / 'kitti_dc' / folder / f'{name}.png'
        return np.asarray(Image.open(path), dtype=np.float32) / 256.0

    sparse, truth = metres('velodyne_raw'), metres('groundtruth')
    depth = np.where(truth > 0, truth, 8.0 + 40.0 * np.random.default_rng(0).random(
        truth.shape)).astype(np.float32)
    depth[:60] = np.nan  # the sky: no depth
    return sparse, depth


def brute_chessboard(sparse: np.ndarray) -> np.ndarray:
    """Return each pixel's chessboard distance to a LiDAR pixel, by comparing every pair."""
    rows, cols = np.nonzero(sparse > 0)
    grid_rows, grid_cols = np.indices(sparse.shape)
    return np.min(np.maximum(np.abs(grid_rows[..., None] - rows),
                             np.abs(grid_cols[..., None] - cols)), axis=-1)


@pytest.mark.parametrize('name', KITTI_FRAMES)
def test_confidence_on_kitti_equals_the_replaced_steps(shared_data, name):
    sparse, depth = kitti_maps(shared_data, name)
    np.testing.assert_array_equal(lidar_distance(sparse), reference.lidar_distance(sparse))
    np.testing.assert_array_equal(support_confidence(sparse),
                                  reference.support_confidence(sparse))
    uncertainty = np.random.default_rng(1).random(depth.shape).astype(np.float32)
    for model in (None, uncertainty):
        new = depth_confidence(depth, sparse, model)
        old = reference.depth_confidence(depth, sparse, model)
        np.testing.assert_array_equal(np.isnan(new), np.isnan(old))
        np.testing.assert_allclose(new, old, rtol=0, atol=CONFIDENCE_ATOL)


@pytest.mark.filterwarnings('ignore:invalid value:RuntimeWarning')  # the replaced steps' NaN
def test_confidence_of_odd_inputs_equals_the_replaced_steps():
    rng = np.random.default_rng(2)
    depth = (1.0 + 30.0 * rng.random((90, 130))).astype(np.float32)
    depth[5:9, 7:20] = np.nan
    depth[40, 40], depth[41, 41], depth[42, 42] = 0.0, -2.0, np.inf  # <= 0 and inf: no step
    sparse = np.where(rng.random(depth.shape) < 0.03, depth * 1.05, 0.0).astype(np.float32)
    sparse[0, 0], sparse[1, 1] = np.nan, np.inf  # not LiDAR pixels
    cases = {'lidar': sparse, 'none': np.zeros_like(sparse),
             'one corner': np.pad(np.ones((1, 1), np.float32), ((0, 89), (0, 129)))}
    for name, sparse_map in cases.items():
        new, old = depth_confidence(depth, sparse_map), reference.depth_confidence(
            depth, sparse_map)
        np.testing.assert_array_equal(np.isnan(new), np.isnan(old), err_msg=name)
        np.testing.assert_allclose(new, old, rtol=0, atol=CONFIDENCE_ATOL, err_msg=name)
        np.testing.assert_array_equal(lidar_distance(sparse_map),
                                      reference.lidar_distance(sparse_map), err_msg=name)


def test_a_support_factor_computed_ahead_gives_the_same_confidence_and_is_kept():
    # The node computes the support while the engine runs (pipeline.start_support).
    rng = np.random.default_rng(5)
    depth = (1.0 + 30.0 * rng.random((90, 130))).astype(np.float32)
    depth[5:9, 7:20] = np.nan
    sparse = np.where(rng.random(depth.shape) < 0.03, depth * 1.05, 0.0).astype(np.float32)
    uncertainty = rng.random(depth.shape).astype(np.float32)
    for model in (None, uncertainty):
        support = support_confidence(sparse)
        kept = support.copy()
        ahead = depth_confidence(depth, sparse, model, support=support)
        np.testing.assert_array_equal(ahead, depth_confidence(depth, sparse, model))
        np.testing.assert_array_equal(support, kept)
    with pytest.raises(ValueError, match='same sparse map'):
        depth_confidence(depth, sparse, support=support[1:])


def test_edge_factors_of_row_splits_are_the_whole_images():
    rng = np.random.default_rng(11)
    depth = (1.0 + 30.0 * rng.random((9, 13))).astype(np.float32)
    depth[3:6, 4] = np.nan
    depth[4, 5], depth[5, 6], depth[3, 7] = 0.0, -1.0, np.inf  # unusable beside the splits
    for image in (depth, depth[:2], depth[:1]):
        whole = confidence_module._edge_factor(image)
        for split in range(image.shape[0] + 1):
            parts = [confidence_module._edge_factor(image, slice(0, split)),
                     confidence_module._edge_factor(image, slice(split, None))]
            np.testing.assert_array_equal(np.concatenate(parts), whole, err_msg=str(split))


def test_lidar_distance_is_opencvs_and_the_brute_force_chessboard_distance_rounded_up():
    sparse = np.zeros((70, 90), np.float32)
    rng = np.random.default_rng(3)
    sparse[rng.integers(0, 70, 6), rng.integers(0, 90, 6)] = 5.0
    exact = brute_chessboard(sparse)
    mask = np.where(sparse > 0, 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(cv2.distanceTransform(mask, cv2.DIST_C, 3), exact)
    radii = np.array(reference._RADII)
    rounded_up = radii[np.searchsorted(radii, exact)]  # all within the largest radius here
    np.testing.assert_array_equal(lidar_distance(sparse), rounded_up)


def kitti_cloud(shared_data: Path) -> tuple[np.ndarray, RigidTransform]:
    """Return the KITTI bag's first sweep (x, y, z) and its LiDAR -> camera transform."""
    from lrda_ros.messages.rosbag import BagTopics, RosbagSource

    bag = shared_data / 'bags' / 'kitti_2011_09_26_10frames_mcap'
    with RosbagSource(bag, BagTopics()) as source:
        image, _, cloud = next(iter(source.synchronized()))[:3]
        transform = source.transform_tree().lookup(image.header.frame_id,
                                                   cloud.header.frame_id)
    return pointcloud2_to_xyz(cloud), transform


def assert_same_projection(clouds, camera, config):
    new = clouds_to_sparse_depth(clouds, camera, config)
    old = reference.clouds_to_sparse_depth(clouds, camera, config)
    np.testing.assert_array_equal(new.depth, old.depth)
    assert new.depth.dtype == old.depth.dtype == np.float32
    counts = [name for name in new.__dataclass_fields__ if name != 'depth']
    assert {name: getattr(new, name) for name in counts} == {
        name: getattr(old, name) for name in counts}
    return new


CONFIGS = {'default': ProjectionConfig(),
           'near and far': ProjectionConfig(min_range=4.0, max_range=30.0),
           'occlusion': ProjectionConfig(remove_occluded=True)}


@pytest.mark.parametrize('config', CONFIGS.values(), ids=CONFIGS.keys())
def test_projection_of_the_kitti_sweep_equals_the_replaced_steps(shared_data, config):
    points, transform = kitti_cloud(shared_data)
    kitti = CameraModel(KITTI_K, 1242, 375)
    projected = assert_same_projection([LidarCloud(points, transform)], kitti, config)
    assert projected.num_projected > 10_000  # the sweep does land
    assert_same_projection([LidarCloud(points, transform)], DISTORTED, config)


@pytest.mark.parametrize('window, margin', [(3, 0.0), (7, 0.1), (51, 0.1)])
def test_the_occlusion_test_is_the_replaced_box_minimum(window, margin):
    # OpenCV's erosion at the hit pixels against the shifted slices over the whole map: two
    # LiDARs (points of one hide the other's), a scene of near posts before a far wall, on a
    # pinhole and on the distorted camera; windows from the smallest to the largest allowed.
    rng = np.random.default_rng(12)
    wall = np.column_stack([rng.uniform(-40, 40, 60_000), rng.uniform(-3, 6, 60_000),
                            np.full(60_000, 60.0)])
    posts = np.column_stack([rng.uniform(-8, 8, 20_000), rng.uniform(-2, 3, 20_000),
                             rng.uniform(4.0, 12.0, 20_000)])
    to_lidar = RigidTransform.from_matrix(LIDAR_TO_CAMERA).inverse()
    clouds = [LidarCloud(to_lidar.apply(points), RigidTransform.from_matrix(LIDAR_TO_CAMERA))
              for points in (wall, posts)]
    config = ProjectionConfig(remove_occluded=True, occlusion_window=window,
                              occlusion_margin=margin)
    for camera in (CameraModel(KITTI_K, 1242, 375), DISTORTED):
        projected = assert_same_projection(clouds, camera, config)
        assert projected.num_dropped_occluded > 1000


def test_a_transform_moves_points_as_the_broadcast_sums_did():
    transform = RigidTransform.from_matrix(LIDAR_TO_CAMERA)
    rotation, translation = transform.rotation, transform.translation
    points = np.random.default_rng(10).normal(0.0, 30.0, (5000, 4))
    points[::7, 1] = np.nan
    points[1::11, 2] = np.inf
    for cloud in (points[:, :3], points[:, :3].astype(np.float32), points[:0, :3]):
        source = cloud.astype(np.float64)
        summed = (source[:, 0:1] * rotation[:, 0] + source[:, 1:2] * rotation[:, 1]
                  + source[:, 2:3] * rotation[:, 2] + translation)
        moved = transform.apply(cloud)
        np.testing.assert_array_equal(moved, summed)
        assert moved.dtype == np.float64 and moved.flags.c_contiguous


def points_on_the_image_border(camera: CameraModel, count: int, rng) -> np.ndarray:
    """Return camera-frame points on and just beside the pixel border, and behind the camera."""
    u = np.concatenate([np.full(count, -0.5), np.full(count, camera.width - 0.5),
                        rng.uniform(-1, camera.width, count)])
    v = np.concatenate([rng.uniform(-1, camera.height, 2 * count), np.full(count, -0.5)])
    u += rng.choice([-1e-9, 0.0, 1e-9, 1e-4], u.size)
    z = rng.uniform(0.5, 60.0, u.size)
    x = (u - camera.cx) / camera.fx * z
    y = (v - camera.cy) / camera.fy * z
    behind = np.stack([x[:count], y[:count], rng.uniform(-1e-5, 1e-5, count)], axis=1)
    return np.concatenate([np.stack([x, y, z], axis=1), behind])


def test_projection_at_the_edges_of_what_is_culled_equals_the_replaced_steps():
    rng = np.random.default_rng(4)
    camera = CameraModel(KITTI_K, 1242, 375)
    lidar_to_camera = RigidTransform.from_matrix(LIDAR_TO_CAMERA)
    camera_points = points_on_the_image_border(camera, 3000, rng)
    points = lidar_to_camera.inverse().apply(camera_points)
    scattered = rng.normal(0.0, 40.0, (20000, 3))
    scattered[::97] = np.nan
    scattered[1::89, 1] = np.inf
    scattered[2::83] *= 1e6  # far beyond any range
    config = ProjectionConfig(min_range=1.0, max_range=80.0)
    for cloud in (points, scattered, scattered.astype(np.float32), np.zeros((0, 3))):
        assert_same_projection([LidarCloud(cloud, lidar_to_camera)], camera, config)
        assert_same_projection([LidarCloud(cloud, lidar_to_camera)], DISTORTED, config)
    two = [LidarCloud(points, lidar_to_camera), LidarCloud(scattered, RigidTransform.identity())]
    assert_same_projection(two, camera, config)


def test_a_bad_cloud_among_several_is_named_as_before():
    camera = CameraModel(KITTI_K, 1242, 375)
    good = LidarCloud(np.ones((10, 3)), RigidTransform.identity())
    bad = LidarCloud(np.ones((10, 2)), RigidTransform.identity())
    for clouds, name in (([good, bad], 'cloud 1'), ([bad, bad], 'cloud 0')):
        with pytest.raises(InvalidPointsError, match=name):
            clouds_to_sparse_depth(clouds, camera, ProjectionConfig())
        with pytest.raises(InvalidPointsError, match=name):
            reference.clouds_to_sparse_depth(clouds, camera, ProjectionConfig())


def test_projected_pixels_are_where_opencv_projects_the_points(shared_data):
    points, transform = kitti_cloud(shared_data)
    kitti = CameraModel(KITTI_K, 1242, 375)
    sparse = clouds_to_sparse_depth([LidarCloud(points, transform)], kitti,
                                    ProjectionConfig()).depth
    camera_points = transform.apply(points)
    uv, _ = cv2.projectPoints(camera_points[camera_points[:, 2] > 0.5].reshape(-1, 1, 3),
                              np.zeros(3), np.zeros(3), KITTI_K, np.zeros(5))
    pixels = np.floor(uv.reshape(-1, 2) + 0.5).astype(int)
    inside = ((pixels >= 0) & (pixels < [1242, 375])).all(axis=1)
    hit = np.zeros_like(sparse, dtype=bool)
    hit[pixels[inside, 1], pixels[inside, 0]] = True
    # Every point OpenCV puts in the image is on a pixel of the map, and only there (a point
    # less than a hundredth of a pixel from a border may fall on either side).
    assert np.count_nonzero(hit != (sparse > 0)) <= 5


@pytest.mark.parametrize('stride', (1, 2, 3))
def test_backprojection_equals_the_replaced_steps(shared_data, stride):
    _, depth = kitti_maps(shared_data, KITTI_FRAMES[0])
    depth[100, 100], depth[101, 101] = np.inf, -1.0
    for camera in (CameraModel(KITTI_K, 1242, 375), DISTORTED.scaled(1242, 375)):
        new, old = backproject_depth(depth, camera, stride), reference.backproject_depth(
            depth, camera, stride)
        for got, expected in zip(new, old):
            np.testing.assert_array_equal(got, expected)
            assert got.dtype == expected.dtype


def assert_same_cloud(depth, camera, rgb, stride):
    points, rows, cols = backproject_depth(depth, camera, stride)
    old = xyz_to_pointcloud2(points, Header(frame_id='c'), rgb=colours_at(rgb, rows, cols))
    new = depth_to_pointcloud2(depth, camera, rgb, stride, Header(frame_id='c'))
    assert bytes(new.data) == bytes(old.data)
    for field in ('header', 'height', 'width', 'fields', 'is_bigendian', 'point_step',
                  'row_step', 'is_dense'):
        assert getattr(new, field) == getattr(old, field), field
    return new


@pytest.mark.parametrize('stride', (1, 2, 3))
def test_the_coloured_cloud_equals_back_projection_colours_and_message(shared_data, stride):
    _, depth = kitti_maps(shared_data, KITTI_FRAMES[0])
    depth[100, 100], depth[101, 101], depth[102, 102] = np.inf, -1.0, 0.0
    rgb = np.random.default_rng(8).integers(0, 256, depth.shape + (3,), dtype=np.uint8)
    kitti = CameraModel(KITTI_K, 1242, 375)
    for camera in (kitti, kitti.scaled(1242, 375), DISTORTED.scaled(1242, 375)):
        assert assert_same_cloud(depth, camera, rgb, stride).is_dense
    # Even sizes: the colours sampled by OpenCV's resize; float64 depth.
    assert_same_cloud(depth[:374, :1240].astype(np.float64), CameraModel(
        KITTI_K, 1240, 374), rgb[:374, :1240], stride)


@pytest.mark.filterwarnings('ignore:overflow:RuntimeWarning')  # the general steps' 3e38 x 3
def test_the_coloured_cloud_of_odd_inputs_equals_the_general_steps():
    rng = np.random.default_rng(9)
    rgb = rng.integers(0, 256, (40, 60, 3), dtype=np.uint8)
    depth = (1.0 + 50.0 * rng.random((40, 60))).astype(np.float32)
    # A wide lens (|x / z| up to 3) and depths whose x overflows float32: not dense.
    wide = CameraModel(np.array([[10.0, 0.0, 30.0], [0.0, 10.0, 20.0], [0.0, 0.0, 1.0]]), 60, 40)
    huge = depth.copy()
    huge[3, 0] = 3e38
    assert not assert_same_cloud(huge, wide, rgb, 1).is_dense
    assert assert_same_cloud(depth, wide, rgb, 2).is_dense
    assert assert_same_cloud(np.full((40, 60), np.nan, np.float32), wide, rgb, 2).width == 0
    # Colours of another size or type: the general steps' answer (or error).
    assert_same_cloud(depth, wide, np.pad(rgb, ((0, 2), (0, 2), (0, 0))), 2)
    with pytest.raises(ValueError, match='rgb must be a uint8'):
        depth_to_pointcloud2(depth, wide, rgb.astype(np.int64), 2, Header())
    with pytest.raises(InvalidConfigError):
        depth_to_pointcloud2(depth, wide, rgb, 0, Header())
    with pytest.raises(InvalidPointsError):
        depth_to_pointcloud2(depth[:, :50], wide, rgb[:, :50], 2, Header())


def test_point_colours_are_numpys_index_of_the_image():
    rng = np.random.default_rng(4)
    rgb = rng.integers(0, 256, (37, 53, 3), dtype=np.uint8)
    rows, cols = rng.integers(0, 37, 500), rng.integers(0, 53, 500)
    for image in (rgb, rgb[:, ::-1]):  # a view with negative strides too
        np.testing.assert_array_equal(colours_at(image, rows, cols), image[rows, cols])
    assert colours_at(rgb, rows[:0], cols[:0]).shape == (0, 3)


def test_colored_depth_equals_the_replaced_steps(shared_data):
    _, depth = kitti_maps(shared_data, KITTI_FRAMES[1])
    depth[200:210, 300:310] = 0.0
    depth[210, 300], depth[211, 300] = np.inf, 0.3  # no depth; nearer than near
    for near, far in ((2.0, 60.0), (5.0, 20.0)):
        np.testing.assert_array_equal(colorize_depth(depth, near, far),
                                      reference.colorize_depth(depth, near, far))
        np.testing.assert_array_equal(colorize_depth(depth.astype(np.float64), near, far),
                                      reference.colorize_depth(depth.astype(np.float64), near,
                                                               far))


def test_the_display_range_is_numpys_percentiles(shared_data):
    _, depth = kitti_maps(shared_data, KITTI_FRAMES[0])
    assert depth_display_range(depth) == reference.depth_display_range(depth)
    np.testing.assert_array_equal(colorize_depth(depth), reference.colorize_depth(
        depth, *reference.depth_display_range(depth)))
    rng = np.random.default_rng(6)
    for trial in range(300):
        size = int(rng.integers(1, 5000))
        values = [rng.random(size) * 80.0 + 0.1, rng.integers(1, 9, size) * 0.5,
                  np.exp(rng.normal(0.0, 3.0, size)), np.full(size, 3.7)][trial % 4]
        depth_map = values.astype(np.float32).reshape(1, -1)
        percentiles = rng.uniform(0.0, 100.0, 2)
        assert depth_display_range(depth_map, *percentiles) == reference.depth_display_range(
            depth_map, *percentiles)


def test_the_display_range_of_special_values_is_numpys_percentiles():
    rng = np.random.default_rng(7)
    tiny = np.float32(1e-41)  # subnormal: valid, with +0.0's top 16 bits
    special = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, -3.0, tiny,
                        np.finfo(np.float32).max, np.finfo(np.float32).tiny], np.float32)
    for trial in range(60):
        values = np.concatenate([rng.choice(special, int(rng.integers(0, 200))),
                                 np.exp(rng.normal(1.0, 2.0, int(rng.integers(0, 300))))])
        depth_map = rng.permutation(values).astype(np.float32).reshape(1, -1)
        percentiles = rng.uniform(0.0, 100.0, 2) if trial % 3 else (0.0, 100.0)
        assert depth_display_range(depth_map, *percentiles) == reference.depth_display_range(
            depth_map, *percentiles)
    empty = np.array([[0.0, np.nan, -1.0, np.inf]], np.float32)
    assert depth_display_range(empty) == reference.depth_display_range(empty) == (1.0, 10.0)
    assert depth_display_range(np.zeros((0, 3), np.float32)) == (1.0, 10.0)


@pytest.mark.filterwarnings('ignore:overflow:RuntimeWarning')  # the replaced steps' 1 / 1e-44
def test_colored_depth_at_level_ties_equals_the_replaced_steps():
    near, far = 2.0, 60.0
    # Depths whose closeness x 255 lands on and beside k + 0.5 in float32 (round half to even),
    # and far outside the range (beyond int32 once scaled).
    ties = (np.arange(256, dtype=np.float32) + np.float32(0.5)) / np.float32(255.0)
    inverse = ties * np.float32(1.0 / near - 1.0 / far) + np.float32(1.0 / far)
    depth = np.float32(1.0) / inverse
    around = [np.nextafter(depth, np.float32(np.inf)), np.nextafter(depth, np.float32(0.0))]
    extremes = np.array([1e-30, 1e-38, 1e-44, 1e30, 3e38, 0.0, -1.0, np.nan, np.inf],
                        np.float32)
    depth_map = np.concatenate([depth, *around, extremes]).reshape(1, -1)
    np.testing.assert_array_equal(colorize_depth(depth_map, near, far),
                                  reference.colorize_depth(depth_map, near, far))


def cloud_with_times(count: int, rng) -> object:
    """Return an ouster-ros-like cloud: x, y, z, uint32 t (ns), some NaN points, padded rows."""
    from types import SimpleNamespace

    dtype = np.dtype({'names': ['x', 'y', 'z', 't'], 'formats': ['<f4', '<f4', '<f4', '<u4'],
                      'offsets': [0, 4, 8, 16], 'itemsize': 24})
    width = count // 4
    rows = np.zeros((4, width), dtype=dtype)
    xyz = rng.normal(0, 20, (4, width, 3)).astype(np.float32)
    xyz[0, ::7] = np.nan
    xyz[2, 3::11, 1] = np.inf
    for column, name in enumerate('xyz'):
        rows[name] = xyz[..., column]
    rows['t'] = rng.integers(0, 100_000_000, (4, width))
    padded = np.zeros((4, width * 24 + 8), np.uint8)
    padded[:, :width * 24] = rows.view(np.uint8).reshape(4, -1)
    field = SimpleNamespace
    return SimpleNamespace(
        height=4, width=width, point_step=24, row_step=width * 24 + 8, is_bigendian=False,
        data=padded.reshape(-1), header=SimpleNamespace(stamp=SimpleNamespace(sec=5, nanosec=0)),
        fields=[field(name=n, offset=o, datatype=d, count=1) for n, o, d in (
            ('x', 0, 7), ('y', 4, 7), ('z', 8, 7), ('t', 16, UINT32))])


def test_a_cloud_read_once_gives_the_points_and_times_of_reading_it_three_times():
    msg = cloud_with_times(4000, np.random.default_rng(5))
    read = read_cloud(msg)
    np.testing.assert_array_equal(read.points, pointcloud2_to_xyz(msg))
    assert read.layout == TimeLayout('Ouster (ouster-ros)', 't', UINT32, 1e-9, False)
    np.testing.assert_array_equal(read.seconds,
                                  point_times(msg, read.layout)[finite_xyz_mask(msg)])
    assert read.seconds.shape[0] == read.points.shape[0] < 4000
    unreadable = read_cloud(msg, 'time')
    assert 'not in the cloud' in unreadable.time_error and unreadable.seconds is None
    np.testing.assert_array_equal(unreadable.points, read.points)
