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

"""File readers (16-bit depth PNG, RGB, camera matrices) and layout helpers of the loaders."""

from __future__ import annotations

from pathlib import Path
import re
from typing import Sequence

import numpy as np
from PIL import Image

from ..messages.stamps import sec_nanosec_to_ns

SIXTEEN_BIT_MODES = ('I;16', 'I;16L', 'I;16B', 'I;16N', 'I')
RGB_SUFFIXES = ('.png', '.jpg', '.jpeg')


# --------------------------------------------------------------------------- file readers

def sanitize_depth(depth: np.ndarray) -> np.ndarray:
    """Return ``depth`` as float32 with non-finite and non-positive values set to 0."""
    out = np.array(depth, dtype=np.float32)
    with np.errstate(invalid='ignore'):
        out[~np.isfinite(out) | (out <= 0)] = 0.0
    return out


def read_depth_png(path: str | Path, scale: float = 256.0) -> np.ndarray:
    """Read a 16-bit depth PNG as float32 metres (``value / scale``; 0 stays 0 = invalid)."""
    with Image.open(path) as img:
        if img.mode not in SIXTEEN_BIT_MODES:
            raise ValueError(f'{path}: expected a 16-bit depth PNG (Pillow mode I;16 or I), '
                             f'got mode {img.mode!r}')
        raw = np.array(img)
    if raw.ndim != 2:
        raise ValueError(f'{path}: expected a single-channel depth PNG, got shape {raw.shape}')
    if raw.dtype != np.uint16:
        if raw.size and (raw.min() < 0 or raw.max() > np.iinfo(np.uint16).max):
            raise ValueError(f'{path}: depth PNG values outside the uint16 range')
        raw = raw.astype(np.uint16)
    return raw.astype(np.float32) / np.float32(scale)


def read_depth(path: str | Path, png_scale: float = 256.0) -> np.ndarray:
    """Read depth from a 16-bit PNG (``value / png_scale``) or a ``.npy`` of float metres."""
    path = Path(path)
    if path.suffix.lower() == '.npy':
        depth = np.load(path)
        if depth.ndim != 2:
            raise ValueError(f'{path}: expected an HxW depth array, got shape {depth.shape}')
        return sanitize_depth(depth)
    return read_depth_png(path, png_scale)


def read_rgb(path: str | Path) -> np.ndarray:
    """Read an image file as HxWx3 uint8 RGB."""
    with Image.open(path) as img:
        return np.array(img.convert('RGB'), dtype=np.uint8)


def read_intrinsics_txt(path: str | Path) -> np.ndarray:
    """
    Read a 3x3 camera matrix from a text file.

    Accepted: a line ``K: <9 numbers>`` (row-major), a KITTI ``P_rect_02: <12 numbers>`` line
    (its left 3x3), or a file holding just 9 numbers (one line or a 3x3 block).
    """
    path = Path(path)
    text = path.read_text()
    labelled = {}
    plain = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        if ':' in line:
            key, _, rest = line.partition(':')
            labelled[key.strip()] = rest.split()
        else:
            plain.extend(line.split())
    try:
        if 'K' in labelled:
            values = np.array(labelled['K'], dtype=np.float64)
        elif 'P_rect_02' in labelled:
            values = np.array(labelled['P_rect_02'], dtype=np.float64).reshape(3, 4)[:, :3]
        else:
            values = np.array(plain, dtype=np.float64)
        return values.reshape(3, 3)
    except ValueError as exc:
        raise ValueError(f'{path}: expected a 3x3 camera matrix (a "K:" line, a "P_rect_02:" '
                         f'line or 9 numbers): {exc}') from None


def layout_error(name: str, root: Path, layout: str, problem: str) -> FileNotFoundError:
    return FileNotFoundError(f'{name}: {problem} under {root}\nexpected layout:\n{layout}')


def first_existing(*paths: Path) -> Path | None:
    for path in paths:
        if path.exists():
            return path
    return None


def find_with_suffix(folder: Path, stem: str, suffixes: Sequence[str]) -> Path | None:
    return first_existing(*(folder / f'{stem}{suffix}' for suffix in suffixes))


def list_files(folder: Path, suffixes: Sequence[str]) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in suffixes)


def check_same_size(name: str, rgb: np.ndarray, **depths: np.ndarray | None) -> None:
    for field_name, depth in depths.items():
        if depth is not None and depth.shape != rgb.shape[:2]:
            raise ValueError(f'frame {name!r}: {field_name} is {depth.shape[1]}x'
                             f'{depth.shape[0]} but the image is {rgb.shape[1]}x{rgb.shape[0]}')


STAMP = re.compile(r'^(\d+)(?:\.(\d+))?$')


def stem_stamp_ns(stem: str) -> int | None:
    """Return the time of a ``<seconds>.<fraction>`` or ``<16+ digit nanoseconds>`` stem."""
    match = STAMP.match(stem)
    if match is None:
        return None
    if match.group(2) is None:
        return int(stem) if len(stem) >= 16 else None
    fraction = match.group(2).ljust(9, '0')[:9]
    return sec_nanosec_to_ns(int(match.group(1)), int(fraction))
