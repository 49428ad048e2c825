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
What ``lrda speed`` measures (its options) and the frames' sizes and LiDAR pattern.

Without torch: the command line builds its parser from these, and torch loads when a
measurement starts (its options checked).
"""

from __future__ import annotations

from dataclasses import dataclass
import math
from pathlib import Path

import numpy as np

from .against import check_checkout
from ..engine.config import TTOConfig
from ..eval.methods import check_method_names, METHODS

#: UniDepthV2 backbones by ``--backbones`` name (the official sizes, random weights).
UNIDEPTH_BACKBONES = {f'unidepth-{variant}': variant for variant in ('vits', 'vitb', 'vitl')}
#: (height, width) of the named resolutions; 56² (4x4 patches of 14) is for quick checks of
#: the measuring path, not a size anyone completes depth at.
RESOLUTIONS = {'56': (56, 56), '224': (224, 224), 'vga': (480, 640), 'hd': (720, 1280),
               'fhd': (1080, 1920)}


def backbone_names() -> tuple[str, ...]:
    """Return every backbone name ``--backbones`` takes (loads the engine's networks)."""
    from ..engine.checkpoint import VARIANTS
    from ..engine.da3 import PRESETS as DA3_PRESETS

    return tuple(VARIANTS) + tuple(UNIDEPTH_BACKBONES) + tuple(DA3_PRESETS)


@dataclass(frozen=True)
class LidarPattern:
    """Where the frames have LiDAR depth."""

    #: Share of all pixels with a return (KITTI's projected HDL-64: about 4 %).
    fraction: float = 0.04
    #: Share of the image's rows above the LiDAR's top beam, which have none (KITTI's HDL-64
    #: in its colour camera: rows 122 to 129 of 375 are the first, so about a third; 0: the
    #: returns spread over the whole image).
    top: float = 0.33

    def mask(self, height: int, width: int, rng: np.random.Generator) -> np.ndarray:
        """Return a random (height, width) mask of returns, none in the rows above the LiDAR."""
        first = int(round(self.top * height))
        mask = np.zeros((height, width), bool)
        mask[first:] = rng.random((height - first, width)) < self.fraction * height / max(
            height - first, 1)
        return mask


#: Methods timed unless ``--methods`` says otherwise: names of the registry (eval/methods.py).
DEFAULT_SPEED_METHODS = ('lrda', 'lrda-warm', 'lrda-strips', 'encoder-lora', 'prompt')


@dataclass
class SpeedOptions:
    """What ``lrda speed`` measures."""

    backbones: tuple[str, ...] = ('vits',)
    resolutions: tuple[str, ...] = ('224', 'vga')
    methods: tuple[str, ...] = DEFAULT_SPEED_METHODS
    iterations: int = 40
    warm_iterations: int = 10
    schedule: str = TTOConfig.schedule
    device: str = 'auto'
    #: 'auto' (as the node): bfloat16 where the hardware computes it natively.
    dtype: str = 'auto'
    #: Share of pixels with a LiDAR return (KITTI's projected HDL-64: about 4 %).
    lidar_fraction: float = LidarPattern.fraction
    #: Share of the rows above the LiDAR's top beam (LidarPattern.top).
    lidar_top: float = LidarPattern.top
    #: Timed frames per configuration (after one untimed warm-up frame); medians reported.
    frames: int = 3
    sparse_head: bool = True
    #: torch.compile the steps and the final decode (the node's compile).
    compile: bool = False  # noqa: A003 (the option is named compile)
    #: Also time the cost structure (an encoder pass, a decoder step) in its own process.
    structure: bool = True
    #: Also time lrda with each optimization off, and the CPU allocator setting.
    ablations: bool = True
    output: Path = Path('out/speed')
    seed: int = 0
    #: Another checkout of the package: each frame is timed with it too, right after
    #: (speed/against.py), for speed-ups measured side by side.
    against: Path | None = None

    def __post_init__(self) -> None:
        """Reject unknown names and out-of-range numbers before anything runs."""
        for option, given, known in (('--backbones', self.backbones, backbone_names()),
                                     ('--resolutions', self.resolutions, RESOLUTIONS)):
            unknown = [name for name in given if name not in known]
            if unknown or not given:
                raise ValueError(f'{option}: unknown {", ".join(unknown) or "(empty)"}; choose '
                                 f'from {", ".join(known)}')
        check_method_names(self.methods)  # as lrda eval does
        posed = [name for name in self.methods if METHODS[name].temporal_fusion]
        if posed:
            raise ValueError(f'--methods: {", ".join(posed)} fuses frames by the camera pose, '
                             'which the panning frames have not: time lrda-warm')
        for option, value in (('--iterations', self.iterations), ('--frames', self.frames)):
            if value < 1:
                raise ValueError(f'{option} must be at least 1, got {value}')
        if self.against is not None:
            self.against = check_checkout(self.against)
        if not 0 <= self.lidar_top < 1:
            raise ValueError(f'--lidar-top must be in [0, 1), got {self.lidar_top}')
        if not 0 < self.lidar_fraction <= 1 - self.lidar_top:
            raise ValueError(f'--lidar-fraction must be in (0, 1 - --lidar-top], got '
                             f'{self.lidar_fraction}')

    @property
    def lidar(self) -> LidarPattern:
        """Return the LiDAR pattern of the frames."""
        return LidarPattern(self.lidar_fraction, self.lidar_top)

    def tto_config(self) -> TTOConfig:
        """
        Return the engine configuration the methods start from.

        Every frame runs its configured steps: on random weights the loss means nothing, so
        neither a divergence stop nor an undone collapse (a step without backward) may change
        the work timed.
        """
        from ..engine.model import resolve_device

        return TTOConfig(iterations=self.iterations, warm_iterations=self.warm_iterations,
                         schedule=self.schedule,
                         device=str(resolve_device(self.device)), dtype=self.dtype,
                         processing_size=None, sparse_head=self.sparse_head, seed=self.seed,
                         divergence_factor=math.inf, backtrack_fraction=1.0,
                         compile=self.compile)
