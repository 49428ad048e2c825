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
VOID visual-inertial depth-completion sequences (Wong et al. 2020), as released.

Protocol (the release's own test split, used by Marigold-DC and the paper): the 800 frames that
``void_1500/test_image.txt`` lists, with the sparse depth (about 1,500 VIO points), validity map,
ground truth and intrinsics the parallel lists ``test_sparse_depth.txt``,
``test_validity_map.txt``, ``test_ground_truth.txt`` and ``test_intrinsics.txt`` name, line by
line (alexklwong/void-dataset ``README.md``: release layout and list files;
``src/data_utils.py``: 16-bit PNGs, metres = value / 256, validity 0/256). Native 640x480, no
resize, ground truth wherever it is > 0 (Marigold-DC ``script/eval.py``: ``mask = gt > 0``).
"""

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
  root is a <sequence> folder, or holds <sequence> folders directly or in root/data/
  With root/test_image.txt (root = void_1500, or void_release holding void_1500/), the frames
  are those the release's test_*.txt lists name, line by line."""

#: The list files of a split, in the release's names, by role.
LIST_ROLES = ('image', 'sparse_depth', 'validity_map', 'ground_truth', 'intrinsics')


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

    When ``root`` (a ``void_1500`` folder, or ``void_release`` holding ``void_1500/``) has the
    release's ``<split>_image.txt``, the frames are exactly those its lists name, in list order
    (``split='test'``: the 800 test frames; ``split=None`` ignores the lists). A listed path is
    read relative to the folder holding the lists or to its parents (the release writes them from
    its own root), else by its ``<sequence>/<kind>/<file>`` tail under ``data/``. A listed file
    that is absent fails the first frame's check at construction, or else the reading of its
    frame only (``FileNotFoundError`` naming it).
    """

    kind = 'void'

    def __init__(self, root: str | Path, protocol: SamplingProtocol | None = None,
                 split: str | None = 'test') -> None:
        super().__init__(protocol)
        self.root = root = Path(root)
        self.split = split
        lists = None
        if split is not None:
            lists = next((d for d in (root, root / 'void_1500')
                          if (d / f'{split}_image.txt').is_file()), None)
        if lists is not None:
            self._items = self._from_lists(lists, split)
            return
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

    def _resolve(self, base: Path, line: str, list_name: str, required: bool) -> Path:
        relative = Path(line.strip())
        candidates = [relative] if relative.is_absolute() else [
            folder / relative for folder in (base, *list(base.parents)[:3])]
        parts = relative.parts
        if 'data' in parts:  # the <sequence>/... tail after the release's data/ folder
            tail = parts[len(parts) - 1 - parts[::-1].index('data') + 1:]
            candidates.append(base.joinpath('data', *tail))
        for candidate in candidates:
            if candidate.is_file():
                return candidate
        if required:
            raise layout_error(self.name, self.root, _VOID_LAYOUT,
                               f'{list_name} names {line.strip()!r}, which is not a file')
        return candidates[-1]  # reading the frame fails, naming it: the frame alone is lost

    def _from_lists(self, base: Path, split: str) -> list:
        columns = {}
        for role in LIST_ROLES:
            path = base / f'{split}_{role}.txt'
            if not path.is_file():
                if role == 'validity_map':
                    continue
                raise layout_error(self.name, self.root, _VOID_LAYOUT, f'no {path.name} beside '
                                   f'{split}_image.txt')
            columns[role] = [line for line in path.read_text().splitlines() if line.strip()]
        count = len(columns['image'])
        for role, lines in columns.items():
            if len(lines) != count:
                raise layout_error(self.name, self.root, _VOID_LAYOUT,
                                   f'{split}_{role}.txt has {len(lines)} lines, '
                                   f'{split}_image.txt {count}')
        items = []
        for i in range(count):
            # The first frame checks the layout; a later missing file costs its frame only.
            paths = {role: self._resolve(base, lines[i], f'{split}_{role}.txt line {i + 1}',
                                         required=i == 0)
                     for role, lines in columns.items()}
            image = paths['image']
            sequence = image.parent.parent.name
            stamp = stem_stamp_ns(image.stem)
            items.append(((stamp if stamp is not None else -1, image.stem), sequence, image,
                          paths['sparse_depth'], paths['ground_truth'],
                          paths.get('validity_map'), paths['intrinsics'], stamp))
        if not items:
            raise layout_error(self.name, self.root, _VOID_LAYOUT, f'{split}_image.txt is empty')
        return items

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
