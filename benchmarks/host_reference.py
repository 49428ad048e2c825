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
The host stages as they were before their rewrite, kept only as the reference they must equal.

benchmarks/host_path.py times them beside the package's; the tests hold the package's stages to
them (test/test_host_path.py). Nothing in lrda_ros imports this: it is not a second code path.
"""

from __future__ import annotations

from typing import Sequence

from lrda_ros.colormap import _turbo_table
from lrda_ros.geometry import (
    CameraModel, LidarCloud, projection, ProjectionConfig, RigidTransform, SparseProjection)
from lrda_ros.geometry.camera import before_fold, pixels_to_normalized, project_points
from lrda_ros.geometry.checks import as_points, InvalidPointsError
from lrda_ros.geometry.confidence import EDGE_SCALE, RESIDUAL_SCALE
from lrda_ros.geometry.projection import MIN_DEPTH_M
import numpy as np

#: Radii (pixels) at which the distance to the nearest LiDAR pixel is resolved.
_RADII = (0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)


def _box_sum(values: np.ndarray, radius: int) -> np.ndarray:
    """Return the sum of ``values`` over the (2 radius + 1)^2 window around each pixel."""
    height, width = values.shape
    integral = np.zeros((height + 1, width + 1))
    integral[1:, 1:] = np.cumsum(np.cumsum(values, axis=0), axis=1)
    rows, cols = np.arange(height), np.arange(width)
    top, bottom = np.clip(rows - radius, 0, height), np.clip(rows + radius + 1, 0, height)
    left, right = np.clip(cols - radius, 0, width), np.clip(cols + radius + 1, 0, width)
    return (integral[bottom][:, right] - integral[top][:, right]
            - integral[bottom][:, left] + integral[top][:, left])


def lidar_distance(sparse_depth: np.ndarray) -> np.ndarray:
    """Return each pixel's chessboard distance (pixels) to a LiDAR pixel, resolved at _RADII."""
    lidar = (np.isfinite(sparse_depth) & (sparse_depth > 0)).astype(np.float64)
    distance = np.full(sparse_depth.shape, float(max(sparse_depth.shape)))
    for radius in reversed(_RADII):
        distance[_box_sum(lidar, radius) > 0] = radius
    return distance


def lidar_spacing(sparse_depth: np.ndarray) -> float:
    """Return the LiDAR's mean spacing in pixels, ``sqrt(H W / points)`` (inf without points)."""
    points = int(np.count_nonzero(np.isfinite(sparse_depth) & (sparse_depth > 0)))
    return float(np.sqrt(sparse_depth.size / points)) if points else float('inf')


def support_confidence(sparse_depth: np.ndarray) -> np.ndarray:
    """Return the support factor alone (distance to the nearest LiDAR pixel), in [0, 1]."""
    spacing = lidar_spacing(sparse_depth)
    return (1.0 / (1.0 + (lidar_distance(sparse_depth) / (2.0 * spacing)) ** 2)).astype(
        np.float32)


def _fit_factor(depth: np.ndarray, sparse_depth: np.ndarray, spacing: float) -> np.ndarray:
    lidar = np.isfinite(sparse_depth) & (sparse_depth > 0) & np.isfinite(depth)
    if not lidar.any():
        return np.ones(depth.shape)
    residual = np.zeros(depth.shape)
    residual[lidar] = np.abs(depth[lidar] - sparse_depth[lidar]) / sparse_depth[lidar]
    radius = int(min(max(2.0 * spacing, 1.0), max(depth.shape)))
    total, count = _box_sum(residual, radius), _box_sum(lidar.astype(np.float64), radius)
    with np.errstate(invalid='ignore', divide='ignore'):
        local = np.where(count > 0, total / count, residual[lidar].mean())
    return 1.0 / (1.0 + local / RESIDUAL_SCALE)


def _edge_factor(depth: np.ndarray) -> np.ndarray:
    with np.errstate(invalid='ignore', divide='ignore'):
        log_depth = np.log(np.where(depth > 0, depth, np.nan))
    step = np.zeros(depth.shape)
    padded = np.pad(log_depth, 1, mode='edge')
    height, width = depth.shape
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            neighbour = padded[1 + dr:1 + dr + height, 1 + dc:1 + dc + width]
            difference = np.abs(neighbour - log_depth)
            step = np.fmax(step, np.where(np.isfinite(difference), difference, 0.0))
    return 1.0 / (1.0 + step / EDGE_SCALE)


def _rank_trust(uncertainty: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Return 1 - the per-image percentile of a larger-is-less-reliable map, over ``valid``."""
    trust = np.ones(uncertainty.shape)
    values = uncertainty[valid]
    if values.size > 1:
        ranks = np.argsort(np.argsort(values, kind='stable'), kind='stable')
        trust[valid] = 1.0 - ranks / (values.size - 1)
    return trust


def depth_confidence(depth: np.ndarray, sparse_depth: np.ndarray,
                     model_uncertainty: np.ndarray | None = None) -> np.ndarray:
    """Return the (H, W) float32 confidence of ``depth`` given the LiDAR input the engine saw."""
    valid = np.isfinite(depth)
    spacing = lidar_spacing(sparse_depth)
    if not np.isfinite(spacing):
        confidence = np.zeros(depth.shape)
    else:
        confidence = (support_confidence(sparse_depth) * _fit_factor(depth, sparse_depth, spacing)
                      * _edge_factor(depth))
    if model_uncertainty is not None:
        confidence = confidence * (0.5 + 0.5 * _rank_trust(model_uncertainty, valid
                                                           & np.isfinite(model_uncertainty)))
    confidence = np.clip(confidence, 0.0, 1.0)
    return np.where(valid, confidence, np.nan).astype(np.float32)


# --- projection and z-buffer -------------------------------------------------------------

def _occluded_mask(depth_map: np.ndarray, window: int, margin: float) -> np.ndarray:
    """Mark sparse pixels with a clearly nearer pixel in the window (box minimum by slices)."""
    height, width = depth_map.shape
    nearest = np.where(depth_map > 0, depth_map, np.inf)
    padded = np.pad(nearest, window // 2, mode='constant', constant_values=np.inf)
    row_min = padded[:height].copy()
    for offset in range(1, window):
        np.minimum(row_min, padded[offset:offset + height], out=row_min)
    box_min = row_min[:, :width].copy()
    for offset in range(1, window):
        np.minimum(box_min, row_min[:, offset:offset + width], out=box_min)
    return (depth_map > 0) & (depth_map > box_min * (1.0 + margin))


def _remove_filtered(depth_map: np.ndarray, config: ProjectionConfig) -> tuple[int, int]:
    """Zero the occluded points (the old box minimum) and the outliers; return their counts."""
    num_occluded = 0
    if config.remove_occluded:
        occluded = _occluded_mask(depth_map, config.occlusion_window, config.occlusion_margin)
        depth_map[occluded] = 0.0
        num_occluded = int(np.count_nonzero(occluded))
    num_outliers = 0
    if config.outlier_filter is not None:
        # The outlier filter is unchanged: shared.
        outliers = projection.outlier_mask(depth_map, config.outlier_filter)
        depth_map[outliers] = 0.0
        num_outliers = int(np.count_nonzero(outliers))
    return num_occluded, num_outliers


def clouds_to_sparse_depth(clouds: Sequence[LidarCloud], camera: CameraModel,
                           config: ProjectionConfig) -> SparseProjection:
    """Project several LiDARs' clouds into one sparse z-depth map (the old steps)."""
    if not clouds:
        raise InvalidPointsError('no LiDAR cloud to project')
    height, width = camera.height, camera.width
    counts = np.zeros(4, dtype=np.int64)  # in, non-finite, out of range, behind the camera
    in_camera = []
    for index, cloud in enumerate(clouds):
        name = 'points_lidar' if len(clouds) == 1 else f'points_lidar of cloud {index}'
        points_cam, cloud_counts = _cloud_in_camera(as_points(cloud.points, name),
                                                    cloud.T_cam_lidar, config)
        in_camera.append(points_cam)
        counts += cloud_counts
    points_cam = in_camera[0] if len(in_camera) == 1 else np.concatenate(in_camera)
    num_in, num_non_finite, num_out_of_range, num_behind = (int(n) for n in counts)

    pixels, depth, inside = _pixels_in_image(points_cam, camera)
    depth_map = _nearest_per_pixel(pixels, depth, height, width)
    num_first_hits = int(np.count_nonzero(depth_map))
    num_occluded, num_outliers = _remove_filtered(depth_map, config)

    return SparseProjection(
        depth=depth_map,
        num_points_in=num_in,
        num_projected=num_first_hits - num_occluded - num_outliers,
        num_dropped_non_finite=num_non_finite,
        num_dropped_out_of_range=num_out_of_range,
        num_dropped_behind_camera=num_behind,
        num_dropped_outside_image=int(np.count_nonzero(~inside)),
        num_dropped_same_pixel=int(depth.size - num_first_hits),
        num_dropped_occluded=num_occluded,
        num_dropped_outliers=num_outliers,
    )


def _pixels_in_image(points_cam: np.ndarray,
                     camera: CameraModel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return the flat pixel index and depth of the points that land in the image, and which."""
    uv, depth = project_points(points_cam, camera)
    shifted = uv + 0.5
    inside = ((shifted[:, 0] >= 0) & (shifted[:, 0] < camera.width)
              & (shifted[:, 1] >= 0) & (shifted[:, 1] < camera.height))
    if camera.has_distortion:
        inside[inside] = before_fold(points_cam[inside, :2] / points_cam[inside, 2:3],
                                     camera.distortion_model, camera.D)
    cols = np.floor(shifted[inside, 0]).astype(np.intp)
    rows = np.floor(shifted[inside, 1]).astype(np.intp)
    return rows * camera.width + cols, depth[inside], inside


def _cloud_in_camera(points: np.ndarray, T_cam_lidar: RigidTransform,
                     config: ProjectionConfig) -> tuple[np.ndarray, np.ndarray]:
    """
    Return one cloud's usable points in the camera frame and its counts.

    The counts: points in, non-finite, out of range (from this LiDAR's origin), behind the
    camera.
    """
    num_in = points.shape[0]
    finite = np.all(np.isfinite(points), axis=1)
    points = points[finite]
    ranges = np.linalg.norm(points, axis=1)
    in_range = (ranges >= config.min_range) & (ranges <= config.max_range)
    points_cam = T_cam_lidar.apply(points[in_range])
    in_front = points_cam[:, 2] > MIN_DEPTH_M
    counts = np.array([num_in, num_in - points.shape[0], np.count_nonzero(~in_range),
                       np.count_nonzero(~in_front)], dtype=np.int64)
    return points_cam[in_front], counts


def _nearest_per_pixel(pixel_index: np.ndarray, depth: np.ndarray,
                       height: int, width: int) -> np.ndarray:
    """Return an ``(H, W)`` float32 map holding the smallest depth that hit each pixel."""
    depth_map = np.zeros(height * width, dtype=np.float32)
    # Sort by pixel, then depth: the first entry of each pixel run is the nearest.
    # (Fancy assignment with repeated indices has no guaranteed winner.)
    order = np.lexsort((depth, pixel_index))
    sorted_pixels = pixel_index[order]
    unique_pixels, first = np.unique(sorted_pixels, return_index=True)
    depth_map[unique_pixels] = depth[order][first]
    return depth_map.reshape(height, width)


def backproject_depth(depth: np.ndarray, camera: CameraModel,
                      stride: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lift valid depth pixels to 3-D camera points (the old steps)."""
    depth_map = projection._checked_depth(depth, camera, stride)  # unchanged checks: shared
    sampled = depth_map[::stride, ::stride].astype(np.float64)
    with np.errstate(invalid='ignore'):
        valid = np.isfinite(sampled) & (sampled > 0)
    rows, cols = np.nonzero(valid)
    z = sampled[rows, cols]
    rows = rows * stride
    cols = cols * stride
    normalized = pixels_to_normalized(cols, rows, camera)
    points = np.stack([normalized[:, 0] * z, normalized[:, 1] * z, z],
                      axis=1).astype(np.float32)
    return points, rows, cols


# --- colored depth ------------------------------------------------------------------------


def depth_display_range(depth: np.ndarray, low_percentile: float = 2.0,
                        high_percentile: float = 98.0) -> tuple[float, float]:
    """Return a robust (near, far) range in metres from the valid pixels (1, 10 if none)."""
    valid = depth[np.isfinite(depth) & (depth > 0)]
    if valid.size == 0:
        return 1.0, 10.0
    near, far = np.percentile(valid, [low_percentile, high_percentile])
    return float(near), float(max(far, near * 1.001))


def colorize_depth(depth: np.ndarray, near: float, far: float) -> np.ndarray:
    """Return the (H, W, 3) uint8 Turbo image of depth by fancy indexing (the old steps)."""
    valid = np.isfinite(depth) & (depth > 0)
    with np.errstate(divide='ignore', invalid='ignore'):
        closeness = (1.0 / np.where(valid, depth, far) - 1.0 / far) / (1.0 / near - 1.0 / far)
    x = np.nan_to_num(np.asarray(closeness, dtype=np.float32), nan=0.0)
    rgb = _turbo_table()[np.clip(np.rint(x * 255.0), 0, 255).astype(np.intp)]
    rgb[~valid] = 0
    return rgb
