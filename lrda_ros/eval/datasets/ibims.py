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

"""iBims-1 frames (Marigold-DC layout)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .files import check_same_size, layout_error, read_depth, read_intrinsics_txt, read_rgb
from .frame import Frame, FrameDataset, sample_sparse_from_gt

_IBIMS_LAYOUT = """\
  root/image.png                   RGB
  root/gt.npy                      HxW float metres, 0 = invalid
  root/sparse_<N>.npy              optional HxW float metres, 0 = none (else sampled from gt)
  root/K.txt                       optional 3x3 camera matrix
  or root/<frame>/ folders, each holding the files above"""


class IBims(FrameDataset):
    """
    iBims-1 frames in the Marigold-DC example layout.

    Layout (one frame per folder; ``root`` is such a folder or holds several)::

      root/image.png                   RGB
      root/gt.npy                      HxW float metres, 0 = invalid
      root/sparse_<N>.npy              optional HxW float metres, 0 = none
      root/K.txt                       optional 3x3 camera matrix (none is shipped)

    The sparse input is ``sparse_<num_points>.npy`` when present, else ``num_points`` GT
    pixels sampled with ``np.random.default_rng([seed, index])``. Frames are independent;
    names are the folder names.
    """

    kind = 'ibims'

    def __init__(self, root: str | Path, num_points: int = 1000, seed: int = 0) -> None:
        super().__init__(None)
        if num_points <= 0:
            raise ValueError(f'num_points must be positive, got {num_points}')
        self.root = root = Path(root)
        self.num_points = num_points
        self.seed = seed
        if (root / 'image.png').is_file():
            folders = [root]
        elif root.is_dir():
            folders = sorted(d for d in root.iterdir() if (d / 'image.png').is_file())
        else:
            folders = []
        if not folders:
            raise layout_error(self.name, root, _IBIMS_LAYOUT, 'no image.png')
        for folder in folders:
            if not (folder / 'gt.npy').is_file():
                raise layout_error(self.name, root, _IBIMS_LAYOUT, f'no gt.npy in {folder}')
        self._items = folders

    def _load(self, index: int) -> Frame:
        folder = self._items[index]
        rgb = read_rgb(folder / 'image.png')
        gt = read_depth(folder / 'gt.npy')
        sparse_path = folder / f'sparse_{self.num_points}.npy'
        if sparse_path.is_file():
            sparse = read_depth(sparse_path)
        else:
            rng = np.random.default_rng([self.seed, index])
            sparse = sample_sparse_from_gt(gt, self.num_points, rng)
        check_same_size(folder.name, rgb, sparse_depth=sparse, gt_depth=gt)
        k_path = folder / 'K.txt'
        K = read_intrinsics_txt(k_path) if k_path.is_file() else None
        return Frame(name=folder.name, rgb=rgb, sparse_depth=sparse, gt_depth=gt, K=K)
