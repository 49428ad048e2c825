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
Camera and LiDAR geometry in pure numpy: intrinsics, rigid transforms, projection.

Conventions used throughout the package:

* Camera optical frame: x right, y down, z forward (REP 103 ``_optical`` frames).
* Pixel ``(u, v)`` is ``(column, row)`` with pixel centres at integer coordinates
  (OpenCV / ROS ``image_geometry``). A point projecting to ``u`` lands in column
  ``floor(u + 0.5)``, so 10.4 goes to column 10 and 10.6 to column 11 (10.5 to 11).
* Depth maps are float32 ``(H, W)`` arrays of z-depth in metres (REP 118). A sparse
  depth map uses 0.0 for pixels without a measurement.
* ``T_a_b`` maps points expressed in frame ``b`` into frame ``a``: ``p_a = R p_b + t``.
  A tf2 ``TransformStamped`` with ``header.frame_id = A`` and ``child_frame_id = B``
  is ``T_A_B``.
"""


from .agreement import agree_with_lidar, LidarAgreement
from .camera import (
    camera_for_image, CameraModel, distort_normalized, pixels_to_normalized, project_points,
    SUPPORTED_DISTORTION_MODELS, undistort_normalized)
from .checks import (
    InvalidCameraError, InvalidConfigError, InvalidPointsError, InvalidTransformError,
    UnsupportedDistortionError)
from .motion import (
    align_sweep, AlignedSweep, check_times, move_points, points_at_instant, pose_window, se3_exp,
    se3_log, SweepTimes)
from .outliers import (
    DDAD_GROUND_TRUTH_FILTER, filter_outliers, outlier_mask, OutlierFilter, SPARSE_INPUT_FILTER)
from .projection import (
    backproject_depth, clouds_to_sparse_depth, colours_at, lidar_to_sparse_depth, LidarCloud,
    MIN_DEPTH_M, ProjectionConfig, SparseProjection)
from .transforms import RigidTransform, TransformTree

__all__ = [
    'agree_with_lidar', 'align_sweep', 'AlignedSweep', 'backproject_depth', 'camera_for_image',
    'CameraModel', 'check_times', 'clouds_to_sparse_depth', 'colours_at',
    'DDAD_GROUND_TRUTH_FILTER',
    'distort_normalized', 'filter_outliers', 'InvalidCameraError', 'InvalidConfigError',
    'InvalidPointsError', 'InvalidTransformError', 'LidarAgreement', 'lidar_to_sparse_depth',
    'LidarCloud', 'MIN_DEPTH_M', 'move_points', 'outlier_mask', 'OutlierFilter',
    'pixels_to_normalized', 'points_at_instant', 'pose_window', 'project_points',
    'ProjectionConfig', 'RigidTransform', 'se3_exp', 'se3_log', 'SPARSE_INPUT_FILTER',
    'SparseProjection', 'SUPPORTED_DISTORTION_MODELS', 'SweepTimes', 'TransformTree',
    'undistort_normalized', 'UnsupportedDistortionError',
]
