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

"""VOID visual-inertial depth-completion sequences."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from .files import (
    check_same_size, layout_error, list_files, read_depth_png, read_intrinsics_txt, read_rgb,
    stem_stamp_ns)
from .frame import Frame, FrameDataset, SamplingProtocol

_VOID_LAYOUT = """\
  <sequence>/image/<stamp>.png           RGB (stamp = seconds, e.g. 1552097915.4047)
  <sequence>/sparse_depth/<stamp>.png    uint16 PNG, metres = value / 256, 0 = none
  <sequence>/validity_map/<stamp>.png    optional, > 0 = valid sparse point
  <sequence>/ground_truth/<stamp>.png    optional, uint16 PNG, metres = value / 256
  <sequence>/K.txt                       optional 3x3 camera matrix
  root is a <sequence> folder, or holds <sequence> folders directly or in root/data/"""


class VOID(FrameDataset):
    """
    VOID (Wong et al. 2020) visual-inertial depth completion sequences.

    Layout (as released, e.g. ``void_1500/data/<sequence>/``)::

      <sequence>/image/<stamp>.png           RGB (stamp = seconds, e.g. 1552097915.4047)
      <sequence>/sparse_depth/<stamp>.png    uint16 PNG, metres = value / 256, 0 = none
      <sequence>/validity_map/<stamp>.png    optional, > 0 = valid sparse point
      <sequence>/ground_truth/<stamp>.png    optional, uint16 PNG, metres = value / 256
      <sequence>/K.txt                       optional 3x3 camera matrix

    ``root`` is one ``<sequence>`` folder, or holds ``<sequence>`` folders directly or in
    ``root/data/``. Frames are grouped by sequence (folder name) and sorted by stamp; numeric
    stems give ``stamp_ns``. Sparse depth is zeroed where a validity map says 0.
    """

    kind = 'void'

    def __init__(self, root: str | Path, protocol: SamplingProtocol | None = None) -> None:
        super().__init__(protocol)
        self.root = root = Path(root)
        if (root / 'image').is_dir():
            sequences = [root]
        else:
            sequences = [d for base in (root, root / 'data') if base.is_dir()
                         for d in sorted(base.iterdir()) if (d / 'image').is_dir()]
        if not sequences:
            raise layout_error(self.name, root, _VOID_LAYOUT, 'no <sequence>/image/ folder')
        items = []
        for seq in sequences:
            if not (seq / 'sparse_depth').is_dir():
                raise layout_error(self.name, root, _VOID_LAYOUT,
                                   f'no sparse_depth/ in {seq.name}')
            k_path = seq / 'K.txt'
            frames = []
            for image in list_files(seq / 'image', ('.png',)):
                sparse = seq / 'sparse_depth' / image.name
                if not sparse.is_file():
                    raise layout_error(self.name, root, _VOID_LAYOUT,
                                       f'no sparse_depth/{image.name} in {seq.name}')
                gt = seq / 'ground_truth' / image.name
                if (seq / 'ground_truth').is_dir() and not gt.is_file():
                    raise layout_error(self.name, root, _VOID_LAYOUT,
                                       f'no ground_truth/{image.name} in {seq.name}')
                validity = seq / 'validity_map' / image.name
                stamp = stem_stamp_ns(image.stem)
                frames.append(((stamp if stamp is not None else -1, image.stem), seq.name,
                               image, sparse, gt if gt.is_file() else None,
                               validity if validity.is_file() else None,
                               k_path if k_path.is_file() else None, stamp))
            frames.sort(key=lambda item: item[0])
            items.extend(frames)
        self._items = items

    def _load(self, index: int) -> Frame:
        (_, stem), sequence, image, sparse_path, gt_path, validity, k_path, stamp = \
            self._items[index]
        rgb = read_rgb(image)
        sparse = read_depth_png(sparse_path)
        if validity is not None:
            with Image.open(validity) as img:
                valid = np.array(img) > 0
            if valid.ndim == 3:
                valid = valid.any(axis=2)
            check_same_size(stem, rgb, validity_map=valid)
            sparse[~valid] = 0.0
        gt = None if gt_path is None else read_depth_png(gt_path)
        check_same_size(stem, rgb, sparse_depth=sparse, gt_depth=gt)
        K = None if k_path is None else read_intrinsics_txt(k_path)
        return Frame(name=f'{sequence}/{stem}', rgb=rgb, sparse_depth=sparse, gt_depth=gt,
                     K=K, sequence=sequence, stamp_ns=stamp)
