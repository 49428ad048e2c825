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

"""Your own data: rgb/, sparse/, optional gt/ and intrinsics."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .files import (
    check_same_size, find_with_suffix, first_existing, layout_error, list_files, read_depth,
    read_intrinsics_txt, read_rgb, RGB_SUFFIXES, stem_stamp_ns)
from .frame import Frame, FrameDataset, SamplingProtocol
from ..pipeline import holdout_split

_FOLDER_LAYOUT = """\
  root/rgb/<name>.png|.jpg|.jpeg    RGB images; <name> orders the frames
  root/sparse/<name>.png|.npy       sparse depth: uint16 PNG (metres = value / depth_scale)
                                    or .npy float metres; 0 = no measurement
  root/gt/<name>.png|.npy           optional ground truth, same encodings (without it, hold
                                    out LiDAR pixels as ground truth: --holdout)
  root/K.txt                        optional 3x3 camera matrix for all frames
  root/intrinsics/<name>.txt        optional per-frame 3x3 camera matrix (overrides K.txt)"""


class GenericFolder(FrameDataset):
    """
    A simple folder layout for your own data.

    Layout::

      root/rgb/<name>.png|.jpg|.jpeg    RGB images; sorted <name> orders the frames
      root/sparse/<name>.png|.npy       sparse depth: uint16 PNG (metres = value / depth_scale,
                                        default 256 as KITTI) or .npy float32 metres;
                                        0 = no measurement
      root/gt/<name>.png|.npy           optional ground truth, same encodings
      root/K.txt                        optional 3x3 camera matrix (9 numbers or a 'K:' line)
      root/intrinsics/<name>.txt        optional per-frame matrix (overrides K.txt)

    Every ``rgb/`` file needs a ``sparse/`` file of the same name; when ``gt/`` exists every
    frame needs one. With ``sequential=True`` (default) the frames form one time-ordered
    sequence named after ``root`` (name them so that sorting orders them in time, e.g.
    zero-padded numbers or timestamps); ``sequential=False`` makes them independent.
    Names ``<seconds>.<fraction>`` (e.g. ``1552097915.4047``) or integer nanoseconds (16 digits
    or more) also give ``stamp_ns``; other names (``000123``) leave it ``None``.

    ``holdout_fraction`` (for LiDAR sparse input without ``gt/``): that fraction of each
    frame's sparse pixels, drawn with ``np.random.default_rng([seed, index])``, is withheld
    from the input and becomes the ground truth, as for bags; never in both.
    """

    kind = 'folder'

    def __init__(self, root: str | Path, protocol: SamplingProtocol | None = None,
                 depth_scale: float = 256.0, sequential: bool = True,
                 holdout_fraction: float | None = None, seed: int = 0) -> None:
        super().__init__(protocol)
        self.root = root = Path(root)
        self.depth_scale = depth_scale
        self.sequential = sequential
        self.holdout_fraction, self.seed = holdout_fraction, seed
        rgb_dir, sparse_dir, gt_dir = root / 'rgb', root / 'sparse', root / 'gt'
        for folder in (rgb_dir, sparse_dir):
            if not folder.is_dir():
                raise layout_error(self.name, root, _FOLDER_LAYOUT, f'no folder {folder.name}/')
        if holdout_fraction is not None and gt_dir.is_dir():
            raise ValueError(f'{self.name}: {root} has gt/, and the hold-out would replace it '
                             'by withheld LiDAR pixels: drop --holdout (holdout_fraction) or gt/')
        images = list_files(rgb_dir, RGB_SUFFIXES)
        if not images:
            raise layout_error(self.name, root, _FOLDER_LAYOUT, 'no image in rgb/')
        shared_k = root / 'K.txt'
        items = []
        for image in images:
            stem = image.stem
            sparse = find_with_suffix(sparse_dir, stem, ('.png', '.npy'))
            if sparse is None:
                raise layout_error(self.name, root, _FOLDER_LAYOUT,
                                   f'no sparse/{stem}.png or .npy for rgb/{image.name}')
            gt = None
            if gt_dir.is_dir():
                gt = find_with_suffix(gt_dir, stem, ('.png', '.npy'))
                if gt is None:
                    raise layout_error(self.name, root, _FOLDER_LAYOUT,
                                       f'no gt/{stem}.png or .npy for rgb/{image.name}')
            k_path = first_existing(root / 'intrinsics' / f'{stem}.txt', shared_k)
            items.append((stem, image, sparse, gt, k_path))
        self._items = items

    def _load(self, index: int) -> Frame:
        stem, image, sparse_path, gt_path, k_path = self._items[index]
        rgb = read_rgb(image)
        sparse = read_depth(sparse_path, self.depth_scale)
        gt = None if gt_path is None else read_depth(gt_path, self.depth_scale)
        check_same_size(stem, rgb, sparse_depth=sparse, gt_depth=gt)
        if self.holdout_fraction is not None:
            rng = np.random.default_rng([self.seed, index])
            sparse, gt = holdout_split(sparse, self.holdout_fraction, rng)
        K = None if k_path is None else read_intrinsics_txt(k_path)
        return Frame(name=stem, rgb=rgb, sparse_depth=sparse, gt_depth=gt, K=K,
                     sequence=self.root.name if self.sequential else None,
                     stamp_ns=stem_stamp_ns(stem))
