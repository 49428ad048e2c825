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
"""Shared conventions of the world modules: vector type, float dtype, ray tiling."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


Vec3 = tuple[float, float, float]
F32 = np.float32
# Rays closer than this to their origin are ignored: it rejects a ray re-hitting its own surface.
EPS = 1e-4
# Camera rays are cast in 8x8 pixel tiles so that one cone bounds each group (cheap culling).
TILE = (8, 8)
LIDAR_TILE = (4, 16)
CHUNK = 64  # rays per culling group: one full tile of either layout
DEFAULT_HFOV_DEG = 70.0


def vec3(values: Sequence[float]) -> Vec3:
    # Plain Python floats keep float32 arrays float32 (NumPy scalars would promote to float64).
    x, y, z = (float(v) for v in values)
    return (x, y, z)


def dot(a: Sequence[float], x, y, z):
    return a[0] * x + a[1] * y + a[2] * z
