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
``compile: true``: compile for an image size before its first frame, on a synthetic frame.

Compiling the whole step and the decode takes minutes on a CPU (and tens of seconds on a
GPU): paid inside a real frame, it would stall that frame and those queued behind it. A
completer warms up on a synthetic frame of the size instead (a smooth image, LiDAR-like
depths on the lower rows), cold, with every stage of the configured schedule, so each graph
the size's frames run is compiled there; its warm state and step durations are then
forgotten. The compiled graphs serve any LiDAR point count (engine/compiled.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
import time
from typing import Callable, Hashable, TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .tto import DepthCompleter

#: One pixel in this many of the synthetic frame's lower rows has a depth (a LiDAR's share).
SYNTHETIC_DEPTH_EVERY = 7


def synthetic_frame(height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Return an (H, W, 3) uint8 image and (H, W) depths (0 = none) a frame could have."""
    rows, cols = np.meshgrid(np.linspace(0.0, 1.0, height, dtype=np.float32),
                             np.linspace(0.0, 1.0, width, dtype=np.float32), indexing='ij')
    image = np.stack([rows, np.full_like(rows, 0.5), cols], axis=-1)
    # A ground plane on the lower two thirds: 2 m at the bottom row, 40 m at its top.
    depth = 2.0 + 38.0 * ((1.0 - rows) * 1.5) ** 2
    depth[:height // 3] = 0.0
    sparse = np.zeros_like(depth)
    sparse.flat[::SYNTHETIC_DEPTH_EVERY] = depth.flat[::SYNTHETIC_DEPTH_EVERY]
    return (255 * image).astype(np.uint8), sparse


@dataclass
class WarmUp:
    """The image sizes a completer has compiled for (``compile: true``), and the warm-up."""

    completer: 'DepthCompleter'
    done: set[tuple[int, int]] = field(default_factory=set)

    def needed(self, height: int, width: int) -> bool:
        """Return whether frames of this size would compile (compile on, size not warmed)."""
        return bool(self.completer.config.compile) and (height, width) not in self.done

    def run(self, height: int, width: int, stream: Hashable = None,
            log: Callable[[str], object] = print) -> float:
        """
        Compile for frames of this size on a synthetic frame of ``stream``; return seconds.

        ``log`` gets a line as the compilation starts (it takes minutes on a CPU).

        The stream's warm start is forgotten (a new size starts cold anyway), its step
        durations (deadlines plan with them) kept as they were.
        """
        completer = self.completer
        log(f'compile: compiling the steps and the decode for {width}x{height} images (once '
            'per size) ...')
        start = time.perf_counter()
        config = completer.config
        completer.use_stream(stream)
        durations = replace(completer.step_times)
        completer.config = replace(config, warm_start=False, time_budget=0.0)
        try:
            completer.complete(*synthetic_frame(height, width), stream=stream)
        finally:
            completer.config = config
            completer.reset(stream)
            completer.step_times = durations
        self.done.add((height, width))
        return time.perf_counter() - start
