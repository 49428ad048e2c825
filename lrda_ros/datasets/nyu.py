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
NYUv2: the official labelled .mat with its split file, and the extracted ("sync") frames.

Protocol (Ma & Karaman, "Sparse-to-Dense", ICRA 2018, fangchangma/sparse-to-dense.pytorch, whose
654-image ``val`` set Marigold-DC and the paper evaluate on): the official test split
(``splits.mat`` ``testNdxs``, 654 of the 1,449 labelled images); each 640x480 image is resized
to 320x240 and centre-cropped to 304x228; the ground truth is the labelled (in-painted)
``depths``, valid up to 10 m; 500 ground-truth pixels are the sparse input. See
:data:`NYU_PROTOCOL`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .files import (
    check_same_size, layout_error, list_files, read_depth_png, read_rgb, RGB_SUFFIXES,
    sanitize_depth)
from .frame import Frame, FrameDataset, SamplingProtocol
from .matfile import read_mat
from ..errors import InputError

#: NYUv2 Kinect RGB intrinsics at 640x480: fx, fy, cx, cy (pixels).
NYU_INTRINSICS = (518.8579, 519.46961, 325.58245, 253.73617)

#: The NYUv2 depth-completion protocol of Ma & Karaman (2018) used by the field: 640x480 is
#: resized to 320x240 and centre-cropped to 304x228, GT is capped at 10 m, and 500 GT pixels
#: are sampled as the sparse input.
NYU_PROTOCOL = SamplingProtocol(num_points=500, seed=0, resolution=(320, 240), crop=(304, 228),
                                max_depth=10.0)


def nyu_intrinsics() -> np.ndarray:
    """Return the NYUv2 Kinect RGB camera matrix at 640x480."""
    fx, fy, cx, cy = NYU_INTRINSICS
    return np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]])


_NYU_LAYOUT = """\
  root/rgb/rgb_<id>.jpg            640x480 RGB (.png accepted)
  root/depth/sync_depth_<id>.png   640x480 uint16 PNG, millimetres, 0 = invalid
  or BTS's official_splits: root/[test/]<scene>/rgb_<id>.jpg beside sync_depth_<id>.png"""


class NYUv2(FrameDataset):
    """
    NYUv2 frames as RGB + aligned raw Kinect depth files (the BTS/Metric3D "sync" layout).

    Layout::

      root/rgb/rgb_<id>.jpg            640x480 RGB (.png accepted)
      root/depth/sync_depth_<id>.png   640x480 uint16 PNG, millimetres, 0 = invalid

    BTS's ``official_splits`` extraction (cleinc/bts
    ``utils/extract_official_train_test_set_from_mat.py``: ``<split>/<scene>/rgb_<i>.jpg`` and
    ``sync_depth_<i>.png`` side by side, 0-based ``i``; its depth is the raw ``rawDepths``, not
    the in-painted ``depths`` of the protocol, and its RGB has a 7-pixel black border) is read
    too: ``root`` is ``official_splits`` (its ``test/`` is used) or a split folder; frames are
    then named ``<scene>/<i>``. The first frame's depth file is checked at construction; a
    later frame's missing file fails the reading of that frame only.

    The files carry no sparse input: the default :data:`NYU_PROTOCOL` (resize to 320x240,
    centre-crop 304x228, GT <= 10 m, 500 GT points sampled with seed 0) makes it. ``K`` is
    the Kinect RGB matrix adjusted for the resize and crop. Frames are independent
    (``sequence=None``), named by ``<id>``.
    """

    kind = 'nyuv2'

    def __init__(self, root: str | Path,
                 protocol: SamplingProtocol | None = NYU_PROTOCOL) -> None:
        super().__init__(protocol)
        self.root = root = Path(root)
        rgb_dir, depth_dir = root / 'rgb', root / 'depth'
        if not rgb_dir.is_dir() and root.is_dir():
            self._items = self._scene_folders(root / 'test' if (root / 'test').is_dir() else root)
            return
        for folder in (rgb_dir, depth_dir):
            if not folder.is_dir():
                raise layout_error(self.name, root, _NYU_LAYOUT, f'no folder {folder.name}/')
        items = []
        for rgb in list_files(rgb_dir, RGB_SUFFIXES):
            if not rgb.stem.startswith('rgb_'):
                continue
            frame_id = rgb.stem[len('rgb_'):]
            depth = depth_dir / f'sync_depth_{frame_id}.png'
            # The first frame checks the layout; a later missing file costs its frame only.
            if not items and not depth.is_file():
                raise layout_error(self.name, root, _NYU_LAYOUT,
                                   f'no depth/{depth.name} for rgb/{rgb.name}')
            items.append((frame_id, rgb, depth))
        if not items:
            raise layout_error(self.name, root, _NYU_LAYOUT, 'no rgb/rgb_*.jpg')
        self._items = items

    def _scene_folders(self, split_dir: Path) -> list:
        items = []
        for rgb in sorted(split_dir.rglob('rgb_*.jpg')):
            frame_id = rgb.stem[len('rgb_'):]
            depth = rgb.parent / f'sync_depth_{frame_id}.png'
            if not items and not depth.is_file():
                raise layout_error(self.name, self.root, _NYU_LAYOUT,
                                   f'no {depth.name} beside {rgb.relative_to(split_dir)}')
            name = '/'.join(rgb.parent.relative_to(split_dir).parts + (frame_id,))
            items.append((name, rgb, depth))
        if not items:
            raise layout_error(self.name, self.root, _NYU_LAYOUT, 'no rgb/ folder and no '
                               '<scene>/rgb_*.jpg')
        return items

    def _load(self, index: int) -> Frame:
        frame_id, rgb_path, depth_path = self._items[index]
        rgb = read_rgb(rgb_path)
        gt = read_depth_png(depth_path, scale=1000.0)
        check_same_size(frame_id, rgb, gt_depth=gt)
        return Frame(name=frame_id, rgb=rgb, sparse_depth=np.zeros_like(gt), gt_depth=gt,
                     K=nyu_intrinsics())


def split_indices(path: Path, split: str) -> list[int]:
    """
    Return the 0-based positions of an official NYUv2 split (``splits.mat``, 1-based indices).

    :raises FileNotFoundError: when the split file is absent (the message says what to give).
    :raises InputError: when it has no ``<split>Ndxs`` variable.
    """
    if split not in ('test', 'train'):
        raise ValueError(f"split must be 'test', 'train' or None, got {split!r}")
    if not path.is_file():
        raise FileNotFoundError(f'{path}: no NYUv2 split file (the official splits.mat with '
                                'testNdxs/trainNdxs, from the NYUv2 site): put it beside the '
                                'labelled .mat, or give indices (split=None keeps all images)')
    key = f'{split}Ndxs'
    variables = read_mat(path)
    if key not in variables:
        raise InputError(f'{path}: no variable {key!r} (found {", ".join(sorted(variables))})',
                         field=key)
    return [int(i) - 1 for i in np.asarray(variables[key]).ravel()]


def _import_h5py() -> Any:
    try:
        import h5py
    except ImportError:
        raise ImportError('reading NYUv2 .mat/.h5 files needs h5py, which is not installed: '
                          'pip install h5py') from None
    return h5py


class NYUv2Mat(FrameDataset):
    """
    NYUv2 from HDF5: the official labeled ``.mat`` or a folder of per-frame ``.h5`` files.

    Accepted inputs:

    * ``nyu_depth_v2_labeled.mat`` (MATLAB v7.3 = HDF5): datasets ``images`` stored as
      ``(N, 3, W, H)`` uint8 and ``depths`` (or ``rawDepths``, see ``depth_key``) as
      ``(N, W, H)`` float metres; both are transposed back to ``H x W``. Frame names are the
      1-based MATLAB indices (``0001`` ...), matching ``splits.mat``; ``indices`` selects
      0-based positions; without them, ``split`` (``'test'``: the protocol's 654 images,
      ``'train'``: 795) takes ``testNdxs`` / ``trainNdxs`` of the official ``splits.mat``
      (``splits``, default: beside the ``.mat``; a MATLAB level-5 file read without SciPy);
      ``split=None`` keeps all 1,449. Note that ``depths`` is in-painted.
    * a folder searched recursively for ``*.h5`` with ``rgb`` ``(3, H, W)`` uint8 and
      ``depth`` ``(H, W)`` float metres (Ma & Karaman's ``nyudepthv2/val/official`` files);
      names are the file stems.

    Needs ``h5py`` (imported on first use). The default protocol is :data:`NYU_PROTOCOL`.
    """

    kind = 'nyuv2_mat'

    def __init__(self, path: str | Path, protocol: SamplingProtocol | None = NYU_PROTOCOL,
                 depth_key: str = 'depths', indices: Sequence[int] | None = None,
                 split: str | None = 'test', splits: str | Path | None = None) -> None:
        super().__init__(protocol)
        self.path = path = Path(path)
        self.depth_key = depth_key
        h5py = _import_h5py()
        if path.is_dir():
            files = sorted(path.rglob('*.h5'))
            if not files:
                raise FileNotFoundError(f'{self.name}: no *.h5 file (with rgb and depth) '
                                        f'under {path}')
            self._items = [(f.stem, f, None) for f in files]
            return
        if not path.is_file():
            raise FileNotFoundError(f'{self.name}: {path} is neither nyu_depth_v2_labeled.mat '
                                    'nor a folder of *.h5 files')
        with h5py.File(path, 'r') as f:
            for key in ('images', depth_key):
                if key not in f:
                    raise ValueError(f'{path}: no dataset {key!r} (expected the NYUv2 labeled '
                                     f'.mat layout with images and {depth_key})')
            count = int(f['images'].shape[0])
        if indices is None and split is not None:
            indices = split_indices(Path(splits) if splits else path.parent / 'splits.mat',
                                    split)
        positions = range(count) if indices is None else [int(i) for i in indices]
        for i in positions:
            if not 0 <= i < count:
                raise IndexError(f'{path}: index {i} out of range (0..{count - 1})')
        self._items = [(f'{i + 1:04d}', path, i) for i in positions]

    def _load(self, index: int) -> Frame:
        h5py = _import_h5py()
        name, path, position = self._items[index]
        with h5py.File(path, 'r') as f:
            if position is None:
                rgb = np.transpose(np.asarray(f['rgb']), (1, 2, 0))
                depth = np.asarray(f['depth'])
            else:
                rgb = np.transpose(np.asarray(f['images'][position]), (2, 1, 0))
                depth = np.asarray(f[self.depth_key][position]).T
        if rgb.ndim != 3 or rgb.shape[2] != 3:
            raise ValueError(f'{path}: frame {name} image has shape {rgb.shape}, expected '
                             '3 colour channels')
        rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
        gt = sanitize_depth(depth)
        check_same_size(name, rgb, gt_depth=gt)
        return Frame(name=name, rgb=rgb, sparse_depth=np.zeros_like(gt), gt_depth=gt,
                     K=nyu_intrinsics())
