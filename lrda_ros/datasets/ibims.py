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
iBims-1 (Koch et al. 2018): the official ``.mat`` and raw distributions, and Marigold-DC's sample.

Protocol (Marigold-DC, prs-eth/Marigold-DC ``DATASETS.md`` and ``script/dataset_processing.py``
``process_ibims1``; followed by the paper): all 100 images at their native 640x480; the valid
pixels are those of ``mask_invalid`` (1 = valid) and ``mask_transp`` (1 = not transparent) with a
non-zero depth; the ground truth is the depth there (0 elsewhere); the sparse input is 1,000 of
those pixels drawn by ``deterministic_select_k_true(valid, 1000, 2024)``: the legacy NumPy
generator seeded 2024 shuffles ``np.argwhere(valid)`` and the first 1,000 rows are kept, the same
draw for every image. :func:`marigold_dc_points` reproduces it exactly (it gives the sample's
``sparse_1000.npy`` bit for bit).
"""

from __future__ import annotations

from pathlib import Path
import re

import numpy as np
from PIL import Image

from .files import (
    check_same_size, layout_error, read_depth, read_depth_png, read_intrinsics_txt, read_rgb,
    sanitize_depth)
from .frame import Frame, FrameDataset
from .matfile import read_mat
from ..errors import InputError

#: Sparse points per image and the seed of Marigold-DC's draw.
IBIMS_POINTS, IBIMS_SEED = 1000, 2024
#: The raw distribution's depth PNGs: metres = value * 50 / 65535.
IBIMS_RAW_DEPTH_SCALE = 65535.0 / 50.0

_IBIMS_LAYOUT = """\
  official .mat:  root/ibims1_core_mat/<name>.mat (or root/<name>.mat), struct 'data' with
                  rgb, depth (m), mask_invalid, mask_transp, calib
  official raw:   root/ibims1_core_raw/{rgb,depth,mask_invalid,mask_transp,calib}/<name>.png
                  (calib: <name>.txt; depth uint16, m = value * 50 / 65535)
  optional:       imagelist.txt (root or its parent) selects and orders the names
  Marigold-DC:    root/image.png, root/gt.npy, optional root/sparse_<N>.npy and root/K.txt, or
                  root/<frame>/ folders holding these"""


def marigold_dc_points(valid: np.ndarray, num_points: int = IBIMS_POINTS,
                       seed: int = IBIMS_SEED) -> np.ndarray:
    """
    Return the boolean mask of the ``num_points`` pixels Marigold-DC's draw keeps.

    The legacy generator (``np.random.seed(seed)``; here a private ``RandomState``) shuffles the
    rows of ``np.argwhere(valid)`` and the first ``num_points`` are kept.

    :raises InputError: when ``valid`` has fewer than ``num_points`` pixels.
    """
    rows = np.argwhere(valid)
    if num_points > len(rows):
        raise InputError(f'cannot draw {num_points} points: only {len(rows)} valid pixels',
                         field='num_points')
    np.random.RandomState(seed).shuffle(rows)
    chosen = np.zeros(valid.shape, dtype=bool)
    chosen[tuple(rows[:num_points].T)] = True
    return chosen


def _read_mask(path: Path) -> np.ndarray:
    with Image.open(path) as img:
        mask = np.array(img)
    return (mask.any(axis=2) if mask.ndim == 3 else mask) > 0


def _camera_matrix(values: np.ndarray, source: Path) -> np.ndarray:
    """Return K from 4 numbers (fx, fy, cx, cy) or a 3x3 matrix stored either way round."""
    values = np.asarray(values, dtype=np.float64).ravel()
    if values.size == 4:
        fx, fy, cx, cy = values
        return np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]])
    if values.size != 9:
        raise InputError(f'{source}: calib holds {values.size} numbers, expected 4 (fx, fy, cx, '
                         'cy) or 9 (3x3)', field='calib')
    K = values.reshape(3, 3)
    # MATLAB keeps the transpose ([fx 0 0; s fy 0; cx cy 1], as Marigold-DC's calib.T shows).
    return K.T.copy() if np.any(K[2, :2]) and not np.any(K[:2, 2]) else K


def _image_list(*folders: Path) -> list[str] | None:
    for folder in folders:
        path = folder / 'imagelist.txt'
        if path.is_file():
            return [line.strip() for line in path.read_text().split() if line.strip()]
    return None


class IBims(FrameDataset):
    """
    iBims-1 under its depth-completion protocol (module docstring), in any of three layouts.

    Layouts: the official ``ibims1_core_mat`` (one MATLAB file per image, read without SciPy),
    the official ``ibims1_core_raw`` folders, or Marigold-DC's example folders
    (``image.png`` + ``gt.npy`` already masked, optional ``sparse_<N>.npy``: used as shipped).
    ``root`` may be the download folder holding ``ibims1_core_mat/`` or ``ibims1_core_raw/`` (the
    ``.mat`` files win when both are there) or one of these folders. ``imagelist.txt`` (in the
    folder or its parent) selects and orders the images when present, else names are sorted.
    ``num_points`` and ``seed`` change only the count and seed of the draw. Frames are
    independent, named by the image name. The first image's files are checked at construction;
    a later image's missing file fails the reading of that frame only.
    """

    kind = 'ibims'

    def __init__(self, root: str | Path, num_points: int = IBIMS_POINTS,
                 seed: int = IBIMS_SEED) -> None:
        super().__init__(None)
        if num_points <= 0:
            raise ValueError(f'num_points must be positive, got {num_points}')
        self.root = root = Path(root)
        self.num_points, self.seed = num_points, seed
        if not root.exists():
            raise layout_error(self.name, root, _IBIMS_LAYOUT, 'no such folder')
        mat_dir = next((d for d in (root / 'ibims1_core_mat', root) if d.is_dir()
                        and any(d.glob('*.mat'))), None)
        raw_dir = next((d for d in (root / 'ibims1_core_raw', root)
                        if (d / 'rgb').is_dir() and (d / 'depth').is_dir()), None)
        if mat_dir is not None:
            self.layout = 'mat'
            self._items = self._listed(mat_dir, sorted(p.stem for p in mat_dir.glob('*.mat')),
                                       lambda name: [mat_dir / f'{name}.mat'])
        elif raw_dir is not None:
            self.layout = 'raw'
            names = sorted(p.stem for p in (raw_dir / 'rgb').glob('*.png'))
            self._items = self._listed(raw_dir, names, lambda name: [
                raw_dir / folder / f'{name}.png'
                for folder in ('rgb', 'depth', 'mask_invalid', 'mask_transp')])
        else:
            self.layout = 'marigold-dc'
            folders = [root] if (root / 'image.png').is_file() else sorted(
                d for d in root.iterdir() if (d / 'image.png').is_file())
            if not folders:
                raise layout_error(self.name, root, _IBIMS_LAYOUT, 'no iBims-1 files')
            for folder in folders:
                if not (folder / 'gt.npy').is_file():
                    raise layout_error(self.name, root, _IBIMS_LAYOUT, f'no gt.npy in {folder}')
            self._items = [(folder.name, folder) for folder in folders]

    def _listed(self, folder: Path, found: list[str], needs) -> list[tuple[str, Path]]:
        listed = _image_list(folder, folder.parent)
        names = found if listed is None else listed
        if not names:
            raise layout_error(self.name, self.root, _IBIMS_LAYOUT, f'no image in {folder}')
        # The first image checks the layout; a later missing file costs its frame only.
        for name in names[:1]:
            for path in needs(name):
                if not path.is_file():
                    raise layout_error(self.name, self.root, _IBIMS_LAYOUT,
                                       f'no {path.relative_to(folder)} for image {name!r}')
        return [(name, folder) for name in names]

    def _load(self, index: int) -> Frame:
        name, folder = self._items[index]
        if self.layout == 'mat':
            rgb, depth, valid, K = self._load_mat(folder / f'{name}.mat')
        elif self.layout == 'raw':
            rgb, depth, valid, K = self._load_raw(folder, name)
        else:
            return self._load_sample(name, folder)
        check_same_size(name, rgb, depth=depth, valid=valid)
        gt = np.where(valid, depth, 0.0).astype(np.float32)
        chosen = marigold_dc_points(valid, self.num_points, self.seed)
        sparse = np.where(chosen, gt, 0.0).astype(np.float32)
        return Frame(name=name, rgb=rgb, sparse_depth=sparse, gt_depth=gt, K=K)

    def _load_mat(self, path: Path):
        data = read_mat(path).get('data')
        fields = ('rgb', 'depth', 'mask_invalid', 'mask_transp')
        if not isinstance(data, dict) or any(f not in data for f in fields):
            raise InputError(f'{path}: expected a struct "data" with fields {", ".join(fields)}',
                             field='data')
        rgb = np.ascontiguousarray(data['rgb'], dtype=np.uint8)
        if rgb.ndim != 3 or rgb.shape[2] != 3:
            raise InputError(f'{path}: data.rgb has shape {rgb.shape}, expected HxWx3',
                             field='data.rgb')
        depth = sanitize_depth(data['depth'])
        valid = (np.asarray(data['mask_invalid']) != 0) & (np.asarray(data['mask_transp']) != 0)
        K = _camera_matrix(data['calib'], path) if 'calib' in data else None
        return rgb, depth, valid & (depth != 0), K

    def _load_raw(self, folder: Path, name: str):
        rgb = read_rgb(folder / 'rgb' / f'{name}.png')
        depth = read_depth_png(folder / 'depth' / f'{name}.png', scale=IBIMS_RAW_DEPTH_SCALE)
        valid = (_read_mask(folder / 'mask_invalid' / f'{name}.png')
                 & _read_mask(folder / 'mask_transp' / f'{name}.png'))
        calib = folder / 'calib' / f'{name}.txt'
        K = None
        if calib.is_file():
            numbers = re.split(r'[\s,;]+', calib.read_text().strip())
            try:
                K = _camera_matrix(np.array(numbers, dtype=np.float64), calib)
            except ValueError as error:
                raise InputError(f'{calib}: not a list of numbers: {error}',
                                 field='calib') from None
        return rgb, depth, valid & (depth != 0), K

    def _load_sample(self, name: str, folder: Path) -> Frame:
        rgb = read_rgb(folder / 'image.png')
        gt = read_depth(folder / 'gt.npy')
        sparse_path = folder / f'sparse_{self.num_points}.npy'
        if sparse_path.is_file():
            sparse = read_depth(sparse_path)
        else:
            chosen = marigold_dc_points(gt > 0, self.num_points, self.seed)
            sparse = np.where(chosen, gt, 0.0).astype(np.float32)
        check_same_size(name, rgb, sparse_depth=sparse, gt_depth=gt)
        k_path = folder / 'K.txt'
        K = read_intrinsics_txt(k_path) if k_path.is_file() else None
        return Frame(name=name, rgb=rgb, sparse_depth=sparse, gt_depth=gt, K=K)
