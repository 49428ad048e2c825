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

"""Error types and array checks shared by the geometry modules."""

from __future__ import annotations

import numpy as np


class InvalidCameraError(ValueError):
    """Camera intrinsics or image size are unusable."""


class UnsupportedDistortionError(InvalidCameraError):
    """Distortion model is unknown, or its coefficients do not fit the model."""


class InvalidTransformError(ValueError):
    """A rigid transform is malformed (not a rotation, wrong shape, non-finite)."""


class InvalidConfigError(ValueError):
    """A projection setting is out of its accepted range."""


class InvalidPointsError(ValueError):
    """A point array or depth map has the wrong shape or type."""


def _as_points(points: np.ndarray, name: str = 'points', columns: int = 3) -> np.ndarray:
    """Return ``points`` as a float64 ``(N, columns)`` array or raise ``InvalidPointsError``."""
    array = np.asarray(points, dtype=np.float64)
    if array.ndim != 2 or array.shape[1] != columns:
        raise InvalidPointsError(
            f'{name} must have shape (N, {columns}), got {np.shape(points)}')
    return array


def _readonly(array: np.ndarray) -> np.ndarray:
    """Return a private read-only copy so frozen dataclasses stay immutable."""
    copy = np.array(array, dtype=np.float64, copy=True)
    copy.setflags(write=False)
    return copy
