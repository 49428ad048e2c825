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
What ``lrda paper`` runs: its datasets under their protocols, and its options.

Without torch: the command line builds its parser from these, and torch loads when the run
starts (:mod:`.run`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from ..datasets import DDAD, FrameDataset, IBims, KittiDepthCompletion, NYU_PROTOCOL, NYUv2
from ..datasets import NYUv2Mat, VOID
from ..eval.options import EngineOptions


def _open_nyu(root: Path, seed: int) -> FrameDataset:
    """Open NYUv2 from the labelled .mat (with splits.mat), Ma & Karaman's .h5 or sync frames."""
    protocol = replace(NYU_PROTOCOL, seed=seed)
    labelled = root / 'nyu_depth_v2_labeled.mat' if root.is_dir() else root
    if labelled.is_file():
        return NYUv2Mat(labelled, protocol=protocol)
    if root.is_dir() and not (root / 'rgb').is_dir() and any(root.rglob('*.h5')):
        return NYUv2Mat(root, protocol=protocol)
    return NYUv2(root, protocol=protocol)


@dataclass(frozen=True)
class PaperProtocol:
    """One dataset of the table: how to open it, and what its protocol is."""

    key: str
    label: str
    #: Frames of the full protocol.
    frames: int
    #: What is evaluated, for the report.
    description: str
    #: (root, seed) -> the dataset under its protocol.
    opener: Callable[[Path, int], FrameDataset]
    #: Longer side of the network input (None: the image's size, the paper's default).
    processing_size: int | None = None


PROTOCOLS = {p.key: p for p in (
    PaperProtocol('ibims', 'iBims-1', 100, '640x480, 1,000 GT points (Marigold-DC draw, '
                  'seed 2024)', lambda root, seed: IBims(root)),
    PaperProtocol('void', 'VOID', 800, '640x480, void_1500 test list, ~1,500 VIO points',
                  lambda root, seed: VOID(root, split='test')),
    PaperProtocol('nyuv2', 'NYUv2', 654, 'official test split, 320x240 -> 304x228 crop, '
                  'GT <= 10 m, 500 GT points', _open_nyu),
    PaperProtocol('kitti_dc', 'KITTI DC', 1000, 'val_selection_cropped 1216x352, '
                  'velodyne_raw after the 7x7 / 1.5 m outlier filter',
                  lambda root, seed: KittiDepthCompletion(root, crop_to_official=True)),
    # The paper feeds DDAD at about 1274x728 (sides multiples of 14); the engine keeps the
    # aspect ratio: a 1274 longer side gives 1274x798.
    PaperProtocol('ddad', 'DDAD', 3950, 'val split, CAMERA_01 1936x1216, 20 % of the '
                  'LiDAR after the 1.5 m filter, GT after the 3 m filter',
                  lambda root, seed: DDAD(root, split='val', seed=seed),
                  processing_size=1274),
)}


@dataclass
class PaperOptions(EngineOptions):
    """
    Everything ``lrda paper`` needs; ``roots`` maps dataset keys to their folders.

    The engine settings (:class:`~lrda_ros.eval.options.EngineOptions`) are the node's with
    the benchmarks' departures (:data:`~lrda_ros.eval.options.PROTOCOL_PARAMETERS`) and the
    paper's fixed steps (:data:`PAPER_PARAMETERS`); ``processing_size`` None (or 0) is each
    protocol's: the image size, DDAD 1274.
    """

    roots: dict[str, Path]
    output: Path = Path('out/paper')
    methods: tuple[str, ...] = ('scale-shift', 'lrda')
    max_frames: int | None = None
    resume: bool = False
    overwrite: bool = False
    #: The paper backbone to compare with; None: from the model's name.
    paper_backbone: str | None = None
    progress: bool = True
    #: A Ray cluster to spread the frames over (None: this process); see lrda_ros.cluster.
    ray_address: str | None = None
    #: Ray workers, each with the model loaded once (0: one per GPU, or per CPU without).
    workers: int = 0
