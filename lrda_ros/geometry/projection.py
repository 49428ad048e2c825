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

"""LiDAR scan -> sparse depth map (z-buffer, occlusion removal) and dense depth -> points."""

from __future__ import annotations

from concurrent.futures import Executor
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Sequence

import cv2
import numpy as np

from .camera import before_fold, CameraModel, pixels_to_normalized, project_points
from .checks import as_points, InvalidConfigError, InvalidPointsError
from .frustum import cull_points, select_rows
from .outliers import outlier_mask, OutlierFilter
from .second_thread import second_thread
from .transforms import RigidTransform

# Points closer than this to the image plane (metres of z) count as behind the camera.
MIN_DEPTH_M = 1e-6


@dataclass(frozen=True)
class ProjectionConfig:
    """
    Settings for turning a LiDAR scan into a sparse depth map.

    ``min_range`` / ``max_range`` bound the Euclidean range from the LiDAR origin in
    metres (the quantity a LiDAR's specification states). Lens distortion is the camera's
    business (:class:`CameraModel` of the image, see :func:`camera_for_image`), not a
    setting here. ``remove_occluded`` drops points that have a clearly nearer point within an
    ``occlusion_window`` x ``occlusion_window`` pixel neighbourhood: deeper by more than
    ``occlusion_margin`` (relative). ``outlier_filter``, when set, then removes points by the
    benchmarks' local-window rule (:mod:`lrda_ros.geometry.outliers`, absolute metres).
    """

    min_range: float = 0.5
    max_range: float = 120.0
    remove_occluded: bool = False
    occlusion_window: int = 7
    occlusion_margin: float = 0.1
    outlier_filter: OutlierFilter | None = None

    def __post_init__(self) -> None:
        if not (np.isfinite(self.min_range) and self.min_range >= 0):
            raise InvalidConfigError(
                f'min_range must be a finite number >= 0 m, got {self.min_range}',
                field='min_range')
        if not (np.isfinite(self.max_range) and self.max_range > self.min_range):
            raise InvalidConfigError(
                f'max_range must be finite and > min_range ({self.min_range} m), '
                f'got {self.max_range}', field='max_range')
        window = self.occlusion_window
        if (isinstance(window, bool) or not isinstance(window, (int, np.integer))
                or window < 3 or window % 2 == 0):
            raise InvalidConfigError(
                f'occlusion_window must be an odd integer >= 3 (pixels), got {window!r}',
                field='occlusion_window')
        if not (np.isfinite(self.occlusion_margin) and self.occlusion_margin >= 0):
            raise InvalidConfigError(
                f'occlusion_margin must be a finite number >= 0, got {self.occlusion_margin}',
                field='occlusion_margin')


@dataclass(frozen=True, eq=False)
class SparseProjection:
    """
    A sparse depth map and where each input point went.

    ``num_points_in`` equals the sum of ``num_projected`` and every ``num_dropped_*``
    count. ``num_dropped_same_pixel`` counts points that lost the z-buffer to a nearer
    point on the same pixel; ``num_dropped_outliers`` those the ``outlier_filter`` removed.
    """

    depth: np.ndarray
    num_points_in: int
    num_projected: int
    num_dropped_non_finite: int
    num_dropped_out_of_range: int
    num_dropped_behind_camera: int
    num_dropped_outside_image: int
    num_dropped_same_pixel: int
    num_dropped_occluded: int
    num_dropped_outliers: int = 0


@dataclass(frozen=True, eq=False)
class LidarCloud:
    """One LiDAR's points (its own frame, at the image's instant) and ``T_cam_lidar``."""

    points: np.ndarray
    T_cam_lidar: RigidTransform


def lidar_to_sparse_depth(points_lidar: np.ndarray, T_cam_lidar: RigidTransform,
                          camera: CameraModel, config: ProjectionConfig) -> SparseProjection:
    """
    Project a LiDAR scan into a sparse z-depth map (float32, 0.0 = no measurement).

    Drops non-finite points, points whose range from the LiDAR origin is outside
    ``[min_range, max_range]``, points with ``z <= MIN_DEPTH_M`` in the camera frame and
    points outside the image. When several points land on one pixel the nearest wins.
    Points go through the camera's distortion model (none for a rectified image's
    camera). With distortion, points past the fold of the lens model (see
    :func:`~lrda_ros.geometry.camera.before_fold`), which it would map onto pixels of other
    directions, count as outside the image; the points before the fold are all kept.
    """
    return clouds_to_sparse_depth([LidarCloud(points_lidar, T_cam_lidar)], camera, config)


def clouds_to_sparse_depth(clouds: Sequence[LidarCloud], camera: CameraModel,
                           config: ProjectionConfig,
                           beside: Executor | None = None) -> SparseProjection:
    """
    Project several LiDARs' clouds into one sparse z-depth map, as one scan.

    Each cloud is range-filtered from its own LiDAR's origin and moved into the camera with its
    own transform; the points are then merged, so the z-buffer and the occlusion test see all
    of them: a near point of one LiDAR hides a far point of another at the same pixel or
    beside it. The counts are the merged scan's. One cloud gives exactly
    :func:`lidar_to_sparse_depth`'s result (the merge of one array is that array). ``beside``:
    the caller's second thread for the clouds after the first (second_thread.py), else one
    for this call.
    """
    if not clouds:
        raise InvalidPointsError('no LiDAR cloud to project')
    height, width = camera.height, camera.width
    # in, non-finite, out of range, behind the camera, culled beside the image
    counts = np.zeros(5, dtype=np.int64)
    checked = [_checked_points(cloud.points, 'points_lidar' if len(clouds) == 1
                               else f'points_lidar of cloud {index}')
               for index, cloud in enumerate(clouds)]
    in_camera = []
    # The clouds after the first are moved into the camera on a second thread, beside the
    # first (numpy releases the GIL in each whole-array step); one cloud needs no thread.
    with second_thread(beside) if len(clouds) > 1 else nullcontext() as second:
        others = [second.submit(_cloud_in_camera, points, cloud.T_cam_lidar, camera, config)
                  for points, cloud in zip(checked[1:], clouds[1:])]
        for result in [_cloud_in_camera(checked[0], clouds[0].T_cam_lidar, camera, config)] + [
                future.result() for future in others]:
            points_cam, cloud_counts = result
            in_camera.append(points_cam)
            counts += cloud_counts
    points_cam = in_camera[0] if len(in_camera) == 1 else np.concatenate(in_camera)
    num_in, num_non_finite, num_out_of_range, num_behind, num_beside = (int(n) for n in counts)

    pixels, depth, inside = _pixels_in_image(points_cam, camera)
    depth_map, nearest = _nearest_per_pixel(pixels, depth, height, width)
    num_first_hits = _count_hits(depth_map)
    num_occluded = 0
    if config.remove_occluded:
        _remove_occluded(depth_map, nearest, pixels, config.occlusion_window,
                         config.occlusion_margin)
        num_occluded = num_first_hits - _count_hits(depth_map)
    num_outliers = 0
    if config.outlier_filter is not None:
        outliers = outlier_mask(depth_map, config.outlier_filter)
        depth_map[outliers] = 0.0
        num_outliers = int(np.count_nonzero(outliers))

    return SparseProjection(
        depth=depth_map,
        num_points_in=num_in,
        num_projected=num_first_hits - num_occluded - num_outliers,
        num_dropped_non_finite=num_non_finite,
        num_dropped_out_of_range=num_out_of_range,
        num_dropped_behind_camera=num_behind,
        num_dropped_outside_image=int(np.count_nonzero(~inside)) + num_beside,
        num_dropped_same_pixel=int(depth.size - num_first_hits),
        num_dropped_occluded=num_occluded,
        num_dropped_outliers=num_outliers,
    )


def _pixels_in_image(points_cam: np.ndarray,
                     camera: CameraModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    Return the flat pixel index and depth of the camera-frame points that land in the image.

    And which of ``points_cam`` those are. With distortion, points past the lens' fold count
    as outside.
    """
    if not camera.has_distortion:
        return _pixels_in_pinhole_image(as_points(points_cam, 'points_cam'), camera)
    uv, depth = project_points(points_cam, camera)
    # floor(u + 0.5) lies in [0, W) exactly when u + 0.5 does; test in float to avoid
    # overflowing an integer cast for points projecting far outside.
    shifted = uv + 0.5
    inside = ((shifted[:, 0] >= 0) & (shifted[:, 0] < camera.width)
              & (shifted[:, 1] >= 0) & (shifted[:, 1] < camera.height))
    # Past the lens' fold a point lands on a pixel of another direction: not in this image.
    inside[inside] = before_fold(points_cam[inside, :2] / points_cam[inside, 2:3],
                                 camera.distortion_model, camera.D)
    cols = np.floor(shifted[inside, 0]).astype(np.intp)
    rows = np.floor(shifted[inside, 1]).astype(np.intp)
    return rows * camera.width + cols, depth[inside], inside


def _pixels_in_pinhole_image(points: np.ndarray,
                             camera: CameraModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    :func:`_pixels_in_image` of an undistorted camera, one coordinate at a time.

    project_points' float64 operations in its order (u = fx x/z + skew y/z + cx, v = fy y/z +
    cy, then + 0.5), on whole columns: its (N, 2) arrays loop over two values at a time.
    Points with z <= 0 (which project_points gives NaN) are outside.
    """
    x, y, z = points.T
    in_front = z > 0
    with np.errstate(invalid='ignore', divide='ignore', over='ignore'):
        safe_depth = np.where(in_front, z, 1.0)
        x_normalized, y_normalized = x / safe_depth, y / safe_depth
        u = camera.fx * x_normalized
        u += camera.K[0, 1] * y_normalized
        u += camera.cx
        u += 0.5
        v = camera.fy * y_normalized
        v += camera.cy
        v += 0.5
    # floor(u + 0.5) lies in [0, W) exactly when u + 0.5 does; test in float to avoid
    # overflowing an integer cast for points projecting far outside.
    inside = (u >= 0) & (u < camera.width) & (v >= 0) & (v < camera.height) & in_front
    at = np.flatnonzero(inside)
    cols = np.floor(u[at]).astype(np.intp)
    rows = np.floor(v[at]).astype(np.intp)
    return rows * camera.width + cols, z[at], inside


def _checked_points(points: np.ndarray, name: str) -> np.ndarray:
    """Return ``points`` as an (N, 3) float array, float32 kept (copied only to convert)."""
    array = np.asarray(points)
    if array.dtype in (np.float32, np.float64) and array.ndim == 2 and array.shape[1] == 3:
        return array
    return as_points(array, name)


def _cloud_in_camera(points: np.ndarray, T_cam_lidar: RigidTransform, camera: CameraModel,
                     config: ProjectionConfig) -> tuple[np.ndarray, np.ndarray]:
    """
    Return one cloud's points that may land in the image, in the camera frame, and its counts.

    The counts: points in, non-finite, out of range (from this LiDAR's origin), behind the
    camera, beside the image (culled; the rest beside it are found by the projection).
    The points left after the cull (frustum.py) go through the exact float64 steps.
    """
    num_in = points.shape[0]
    culled = cull_points(points, T_cam_lidar, camera, config.min_range, config.max_range,
                         MIN_DEPTH_M)
    points = as_points(select_rows(points, culled.keep))
    x, y, z = points.T
    # Per column: numpy's reductions over rows of three are several times slower (the same
    # sums in the same order as np.linalg.norm's).
    finite = np.isfinite(x) & np.isfinite(y) & np.isfinite(z)
    points = select_rows(points, finite)
    x, y, z = points.T
    ranges = np.sqrt(x * x + y * y + z * z)
    in_range = (ranges >= config.min_range) & (ranges <= config.max_range)
    points_cam = T_cam_lidar.apply(select_rows(points, in_range))
    in_front = points_cam[:, 2] > MIN_DEPTH_M
    counts = np.array([num_in, np.count_nonzero(culled.keep) - points.shape[0],
                       np.count_nonzero(~in_range),
                       np.count_nonzero(~in_front) + culled.num_behind, culled.num_outside],
                      dtype=np.int64)
    return select_rows(points_cam, in_front), counts


def _nearest_per_pixel(pixel_index: np.ndarray, depth: np.ndarray, height: int,
                       width: int) -> tuple[np.ndarray, np.ndarray]:
    """
    Return ``(H, W)`` float32 maps of the smallest depth that hit each pixel.

    The first holds 0 where no point hit, the second +inf there (what a window's minimum reads).
    """
    # float32 rounding is monotonic: the nearest of the rounded depths is the rounded nearest.
    nearest = np.full(height * width, np.inf, dtype=np.float32)
    np.minimum.at(nearest, pixel_index, depth.astype(np.float32))
    # Only the hit pixels copied into a zeroed map: replacing the rest's inf would test and
    # write every pixel.
    depth_map = np.zeros(height * width, dtype=np.float32)
    depth_map[pixel_index] = nearest[pixel_index]
    return depth_map.reshape(height, width), nearest.reshape(height, width)


def _count_hits(depth_map: np.ndarray) -> int:
    """Return the pixels holding a depth: counted on the bits (a depth is > 0, none +0.0)."""
    return int(np.count_nonzero(depth_map.view(np.uint32)))


def _remove_occluded(depth_map: np.ndarray, nearest: np.ndarray, hit_pixels: np.ndarray,
                     window: int, margin: float) -> None:
    """
    Zero the sparse pixels that have a clearly nearer pixel within a ``window`` neighbourhood.

    LiDAR and camera see the scene from different places, so through gaps next to a near
    surface the LiDAR hits background the camera cannot see. This heuristic also drops
    some genuinely visible background points right beside depth edges. ``nearest`` is
    ``depth_map`` with +inf where no point hit; ``hit_pixels`` the flat index of every hit
    (some more than once): only they are tested.
    """
    # The window's minimum, +inf outside the image: OpenCV's erosion by a square (exact: a
    # minimum rounds nothing), one pass where shifted slices took two per window offset.
    box_min = cv2.erode(nearest, np.ones((window, window), np.uint8),
                        borderType=cv2.BORDER_CONSTANT, borderValue=np.inf).reshape(-1)
    flat = depth_map.reshape(-1)
    # The float32 product and comparison of the whole-image form, at the hit pixels alone.
    occluded = hit_pixels[flat[hit_pixels] > box_min[hit_pixels] * (1.0 + margin)]
    flat[occluded] = 0.0


def _checked_depth(depth: np.ndarray, camera: CameraModel, stride: int) -> np.ndarray:
    """Return ``depth`` as an array, after checking its size against the camera and the stride."""
    depth_map = np.asarray(depth)
    if depth_map.shape != (camera.height, camera.width):
        raise InvalidPointsError(
            f'depth shape {depth_map.shape} does not match the camera '
            f'({camera.height}, {camera.width}); use CameraModel.scaled for resized images')
    if isinstance(stride, bool) or not isinstance(stride, (int, np.integer)) or stride < 1:
        raise InvalidConfigError(f'stride must be a positive integer, got {stride!r}')
    return depth_map


def _separable_rays(camera: CameraModel, stride: int) -> tuple[np.ndarray, np.ndarray] | None:
    """
    Return x / z of each sampled column and y / z of each sampled row, or None for this camera.

    For a pinhole without skew x / z depends on the column alone and y / z on the row
    (pixels_to_normalized's formula, computed once per column and row); with distortion or
    skew they do not separate (None).
    """
    if camera.has_distortion or camera.K[0, 1] != 0.0:
        return None
    columns = np.arange(0, camera.width, stride)
    rows = np.arange(0, camera.height, stride)
    return (pixels_to_normalized(columns, np.zeros(columns.size), camera)[:, 0],
            pixels_to_normalized(np.zeros(rows.size), rows, camera)[:, 1])


def _valid_depth(depth: np.ndarray) -> np.ndarray:
    with np.errstate(invalid='ignore'):
        return (depth > 0) & (depth < np.inf)


def backproject_depth(depth: np.ndarray, camera: CameraModel,
                      stride: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    Lift valid depth pixels (finite, > 0) to 3-D points in the camera frame.

    Returns ``(points, rows, cols)``: float32 ``(M, 3)`` points and the pixel indices
    they came from, sampling every ``stride``-th row and column. The depth map must match
    the camera size; pixels are undistorted through the camera's distortion model (the
    inverse of :func:`lidar_to_sparse_depth`).
    """
    sampled = _checked_depth(depth, camera, stride)[::stride, ::stride]
    sampled_rows, sampled_cols = np.nonzero(_valid_depth(sampled))
    z = sampled[sampled_rows, sampled_cols].astype(np.float64)
    rows = sampled_rows * stride
    cols = sampled_cols * stride
    rays = _separable_rays(camera, stride)
    if rays is None:
        normalized = pixels_to_normalized(cols, rows, camera)
        x_normalized, y_normalized = normalized[:, 0], normalized[:, 1]
    else:
        x_normalized, y_normalized = rays[0][sampled_cols], rays[1][sampled_rows]
    points = np.empty((z.size, 3), dtype=np.float32)
    points[:, 0] = x_normalized * z
    points[:, 1] = y_normalized * z
    points[:, 2] = z
    return points, rows, cols


def backproject_depth_grid(depth: np.ndarray, camera: CameraModel, stride: int,
                           fields: int = 3) -> tuple[np.ndarray, np.ndarray, bool] | None:
    """
    Lift every sampled pixel to a point: ``(grid, valid, finite)``, or None for this camera.

    ``grid`` is a new float32 (rows, columns, ``fields``) array of the sampled pixels whose
    first three fields hold x, y, z (the rest are left for the caller); ``valid`` marks the
    valid pixels (finite, > 0), and ``finite`` says whether all their points are finite. On
    the valid pixels the grid holds :func:`backproject_depth`'s points bit for bit, in the
    same (row-major) order; elsewhere its values mean nothing. Whole-grid operations, no index
    arrays: for a pinhole camera without skew only (None otherwise).
    """
    sampled = _checked_depth(depth, camera, stride)[::stride, ::stride]
    rays = _separable_rays(camera, stride)
    if rays is None:
        return None
    # Gathered once: the passes below then read it contiguously.
    sampled = np.ascontiguousarray(sampled)
    valid = _valid_depth(sampled)
    grid = np.empty((*sampled.shape, max(fields, 3)), dtype=np.float32)
    # float64 products rounded once to float32, as backproject_depth's; the invalid pixels'
    # (inf x 0) and overflowing ones are let be (the latter make the cloud not finite).
    with np.errstate(invalid='ignore', over='ignore'):
        np.multiply(rays[0], sampled, out=grid[..., 0])
        np.multiply(rays[1][:, None], sampled, out=grid[..., 1])
    grid[..., 2] = sampled
    # |x / z| and |y / z| <= 1: |x| and |y| are at most z, a finite float32, and so finite.
    finite = (max(np.abs(rays[0]).max(initial=0.0), np.abs(rays[1]).max(initial=0.0)) <= 1.0
              or bool(np.isfinite(grid[..., :2][valid]).all()))
    return grid, valid, finite


def colours_at(rgb: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """
    Return ``rgb[rows, cols]`` of an (H, W, 3) uint8 image, (M, 3): ``backproject_depth``'s.

    Each pixel gathered as one 3-byte item by its flat index: numpy's two-array index of a
    3-channel image moves byte by byte, several times slower.
    """
    image = np.ascontiguousarray(rgb)
    pixels = image.reshape(-1).view(np.dtype((np.void, image.shape[2] * image.itemsize)))
    return pixels[rows * image.shape[1] + cols].view(image.dtype).reshape(-1, image.shape[2])
