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
Depth-completion benchmarks as iterables of :class:`Frame` (RGB + sparse depth + GT + K).

Every loader indexes its folder when constructed (raising :class:`FileNotFoundError` that names
the expected layout when the folder does not match), reads files lazily in ``__getitem__``, and
yields frames with the package conventions: ``rgb`` HxWx3 uint8, depths HxW float32 z-depth in
metres with ``0.0`` = no measurement, ``K`` a 3x3 float64 pinhole matrix for the pixels of that
frame (or ``None`` when the dataset ships none). Frames that share a ``sequence`` are consecutive
and in time order (usable for warm-starting); ``sequence=None`` marks an independent frame.

16-bit PNG depth is always read as exact uint16 (Pillow modes ``I;16*`` or ``I``); an 8-bit PNG
where depth is expected is an error, never a silent conversion.

A :class:`SamplingProtocol` applied by a loader resizes (RGB bilinear; depth nearest, so no depth
is invented; ``K`` scaled), centre-crops, drops ground truth outside ``[min_depth, max_depth]``
and, when ``num_points`` is set, replaces the sparse input by ``num_points`` ground-truth pixels
drawn uniformly without replacement with ``np.random.default_rng([seed, index])``: deterministic
per frame whatever the iteration order. Sparse inputs shipped by a dataset are not range-masked.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
import re
from types import MappingProxyType
from typing import Any, Iterator, Sequence

import numpy as np
from PIL import Image

#: NYUv2 Kinect RGB intrinsics at 640x480: fx, fy, cx, cy (pixels).
NYU_INTRINSICS = (518.8579, 519.46961, 325.58245, 253.73617)

#: Size (W, H) of the official KITTI depth-completion selection (bottom-centre crop).
KITTI_OFFICIAL_SIZE = (1216, 352)

_SIXTEEN_BIT_MODES = ('I;16', 'I;16L', 'I;16B', 'I;16N', 'I')
_RGB_SUFFIXES = ('.png', '.jpg', '.jpeg')


# --------------------------------------------------------------------------- frames, protocol

@dataclass
class Frame:
    """One RGB image with its sparse depth input, optional ground truth and intrinsics."""

    name: str
    rgb: np.ndarray
    sparse_depth: np.ndarray
    gt_depth: np.ndarray | None = None
    K: np.ndarray | None = None
    sequence: str | None = None
    stamp_ns: int | None = None

    def __post_init__(self) -> None:
        """Check shapes and dtypes so that a malformed frame fails where it is made."""
        rgb = self.rgb
        if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
            raise ValueError(f'frame {self.name!r}: rgb must be HxWx3 uint8, got '
                             f'{rgb.shape} {rgb.dtype}')
        hw = rgb.shape[:2]
        for field_name in ('sparse_depth', 'gt_depth'):
            depth = getattr(self, field_name)
            if depth is None:
                continue
            if depth.shape != hw or depth.dtype != np.float32:
                raise ValueError(f'frame {self.name!r}: {field_name} must be {hw[0]}x{hw[1]} '
                                 f'float32 (like rgb), got {depth.shape} {depth.dtype}')
        if self.K is not None and np.shape(self.K) != (3, 3):
            raise ValueError(f'frame {self.name!r}: K must be 3x3, got {np.shape(self.K)}')

    @property
    def width(self) -> int:
        """Return the image width in pixels."""
        return int(self.rgb.shape[1])

    @property
    def height(self) -> int:
        """Return the image height in pixels."""
        return int(self.rgb.shape[0])


@dataclass(frozen=True)
class SamplingProtocol:
    """
    How a benchmark turns its files into evaluation frames.

    ``num_points``: when set, the sparse input is this many GT pixels sampled uniformly
    without replacement (after resize/crop and range masking); ``None`` keeps the dataset's
    own sparse depth. ``seed``: frame ``i`` samples with ``np.random.default_rng([seed, i])``.
    ``resolution``: ``(W, H)`` to resize to first, or ``None``. ``crop``: ``(W, H)`` centre
    crop applied after the resize, or ``None``. ``max_depth``: GT above this (metres) is set
    to 0 (invalid), or ``None``. ``min_depth``: GT at or below this (metres) is set to 0.
    """

    num_points: int | None = None
    seed: int = 0
    resolution: tuple[int, int] | None = None
    crop: tuple[int, int] | None = None
    max_depth: float | None = None
    min_depth: float = 1e-3

    def __post_init__(self) -> None:
        """Validate the fields."""
        if self.num_points is not None and self.num_points <= 0:
            raise ValueError(f'num_points must be positive or None, got {self.num_points}')
        for name in ('resolution', 'crop'):
            size = getattr(self, name)
            if size is not None and (len(size) != 2 or min(size) <= 0):
                raise ValueError(f'{name} must be (W, H) with positive sizes, got {size}')
        if self.max_depth is not None and self.max_depth <= self.min_depth:
            raise ValueError(f'max_depth ({self.max_depth}) must exceed min_depth '
                             f'({self.min_depth})')


#: The NYUv2 depth-completion protocol of Ma & Karaman (2018) used by the field: 640x480 is
#: resized to 320x240 and centre-cropped to 304x228, GT is capped at 10 m, and 500 GT pixels
#: are sampled as the sparse input.
NYU_PROTOCOL = SamplingProtocol(num_points=500, seed=0, resolution=(320, 240), crop=(304, 228),
                                max_depth=10.0)


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
        if img.mode not in _SIXTEEN_BIT_MODES:
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


# --------------------------------------------------------------------------- frame transforms

def sample_sparse_from_gt(gt: np.ndarray, num_points: int,
                          rng: np.random.Generator) -> np.ndarray:
    """
    Sample ``num_points`` valid GT pixels uniformly without replacement as sparse depth.

    :raises ValueError: when ``gt`` has fewer than ``num_points`` valid (finite, > 0) pixels.
    """
    gt = np.asarray(gt)
    with np.errstate(invalid='ignore'):
        candidates = np.flatnonzero(np.isfinite(gt) & (gt > 0))
    if num_points > candidates.size:
        raise ValueError(f'cannot sample {num_points} points: the ground truth has only '
                         f'{candidates.size} valid pixels')
    chosen = rng.choice(candidates, size=num_points, replace=False)
    sparse = np.zeros(gt.shape, dtype=np.float32)
    sparse.flat[chosen] = gt.flat[chosen]
    return sparse


def _nearest_index(src: int, dst: int) -> np.ndarray:
    """Return the source index sampled by each of ``dst`` pixels (pixel-centre aligned)."""
    idx = np.floor((np.arange(dst) + 0.5) * (src / dst)).astype(np.int64)
    return np.minimum(idx, src - 1)


def scale_intrinsics(K: np.ndarray, sx: float, sy: float) -> np.ndarray:
    """Return ``K`` for an image resized by ``(sx, sy)`` (pixel centres at integers)."""
    out = np.array(K, dtype=np.float64)
    out[0, :2] *= sx
    out[1, 1] *= sy
    out[0, 2] = (out[0, 2] + 0.5) * sx - 0.5
    out[1, 2] = (out[1, 2] + 0.5) * sy - 0.5
    return out


def resize_frame(frame: Frame, size: tuple[int, int]) -> Frame:
    """
    Resize a frame to ``size = (W, H)``.

    RGB uses Pillow's bilinear filter (antialiased when shrinking); depth maps use nearest
    neighbour so that every output depth is a measured one; ``K`` follows the pixel-centre
    convention ``c' = (c + 0.5) * s - 0.5``, ``f' = f * s``. Shrinking sparse depth keeps
    only the points that nearest-neighbour sampling hits: sample sparse points after resizing.
    """
    width, height = int(size[0]), int(size[1])
    if (width, height) == (frame.width, frame.height):
        return frame
    rows = _nearest_index(frame.height, height)
    cols = _nearest_index(frame.width, width)
    rgb = np.asarray(Image.fromarray(frame.rgb).resize((width, height),
                                                       Image.Resampling.BILINEAR))
    gt = None if frame.gt_depth is None else frame.gt_depth[np.ix_(rows, cols)]
    K = None
    if frame.K is not None:
        K = scale_intrinsics(frame.K, width / frame.width, height / frame.height)
    return replace(frame, rgb=rgb, sparse_depth=frame.sparse_depth[np.ix_(rows, cols)],
                   gt_depth=gt, K=K)


def crop_frame(frame: Frame, x0: int, y0: int, size: tuple[int, int]) -> Frame:
    """Crop ``size = (W, H)`` pixels starting at column ``x0``, row ``y0``; shift ``K``."""
    width, height = int(size[0]), int(size[1])
    if x0 < 0 or y0 < 0 or x0 + width > frame.width or y0 + height > frame.height:
        raise ValueError(f'frame {frame.name!r}: crop {width}x{height} at ({x0}, {y0}) does '
                         f'not fit in {frame.width}x{frame.height}')
    window = (slice(y0, y0 + height), slice(x0, x0 + width))
    K = None
    if frame.K is not None:
        K = np.array(frame.K, dtype=np.float64)
        K[0, 2] -= x0
        K[1, 2] -= y0
    gt = None if frame.gt_depth is None else frame.gt_depth[window].copy()
    return replace(frame, rgb=frame.rgb[window].copy(),
                   sparse_depth=frame.sparse_depth[window].copy(), gt_depth=gt, K=K)


def center_crop(frame: Frame, size: tuple[int, int]) -> Frame:
    """
    Crop the centre ``(W, H)``; offsets ``(W0 - W) // 2`` and ``(H0 - H) // 2``.

    With NYUv2 at 320x240 and ``size = (304, 228)`` this cuts 8 columns and 6 rows on each
    side, as torchvision's ``CenterCrop((228, 304))`` in the field's data loaders does.
    """
    return crop_frame(frame, (frame.width - int(size[0])) // 2,
                      (frame.height - int(size[1])) // 2, size)


def bottom_center_crop(frame: Frame, size: tuple[int, int]) -> Frame:
    """Crop ``(W, H)`` at the bottom, centred horizontally (the KITTI DC selection crop)."""
    return crop_frame(frame, (frame.width - int(size[0])) // 2, frame.height - int(size[1]),
                      size)


def mask_depth_range(depth: np.ndarray, min_depth: float,
                     max_depth: float | None) -> np.ndarray:
    """Return a copy of ``depth`` with values outside ``(min_depth, max_depth]`` set to 0."""
    out = sanitize_depth(depth)
    out[out <= min_depth] = 0.0
    if max_depth is not None:
        out[out > max_depth] = 0.0
    return out


def apply_protocol(frame: Frame, protocol: SamplingProtocol, index: int = 0) -> Frame:
    """Resize, crop, range-mask the GT and (optionally) sample sparse input, in that order."""
    if protocol.resolution is not None:
        frame = resize_frame(frame, protocol.resolution)
    if protocol.crop is not None:
        frame = center_crop(frame, protocol.crop)
    if frame.gt_depth is not None:
        frame = replace(frame, gt_depth=mask_depth_range(frame.gt_depth, protocol.min_depth,
                                                         protocol.max_depth))
    if protocol.num_points is not None:
        if frame.gt_depth is None:
            raise ValueError(f'frame {frame.name!r}: the protocol samples sparse points from '
                             'the ground truth, but this frame has none')
        rng = np.random.default_rng([protocol.seed, index])
        frame = replace(frame, sparse_depth=sample_sparse_from_gt(
            frame.gt_depth, protocol.num_points, rng))
    return frame


# --------------------------------------------------------------------------- loaders

class FrameDataset:
    """Base of the loaders: a sized, indexable iterable of :class:`Frame`."""

    #: Registry name of the loader (also its ``name``).
    kind = 'dataset'

    def __init__(self, protocol: SamplingProtocol | None = None) -> None:
        self.protocol = protocol
        self.name = self.kind
        self._items: list[Any] = []

    def __len__(self) -> int:
        """Return the number of frames."""
        return len(self._items)

    def __getitem__(self, index: int) -> Frame:
        """Load frame ``index`` (negative indices count from the end)."""
        n = len(self._items)
        if not -n <= index < n:
            raise IndexError(f'{self.name}: frame index {index} out of range (0..{n - 1})')
        index %= n
        frame = self._load(index)
        if self.protocol is not None:
            frame = apply_protocol(frame, self.protocol, index)
        return frame

    def __iter__(self) -> Iterator[Frame]:
        """Yield the frames in order (sequences consecutive and in time order)."""
        for index in range(len(self._items)):
            yield self[index]

    def _load(self, index: int) -> Frame:
        raise NotImplementedError


def _layout_error(name: str, root: Path, layout: str, problem: str) -> FileNotFoundError:
    return FileNotFoundError(f'{name}: {problem} under {root}; expected layout:\n{layout}')


def _first_existing(*paths: Path) -> Path | None:
    for path in paths:
        if path.exists():
            return path
    return None


def _find_with_suffix(folder: Path, stem: str, suffixes: Sequence[str]) -> Path | None:
    return _first_existing(*(folder / f'{stem}{suffix}' for suffix in suffixes))


def _list_files(folder: Path, suffixes: Sequence[str]) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in suffixes)


def _check_same_size(name: str, rgb: np.ndarray, **depths: np.ndarray | None) -> None:
    for field_name, depth in depths.items():
        if depth is not None and depth.shape != rgb.shape[:2]:
            raise ValueError(f'frame {name!r}: {field_name} is {depth.shape[1]}x'
                             f'{depth.shape[0]} but the image is {rgb.shape[1]}x{rgb.shape[0]}')


_KITTI_LAYOUT = """\
  root/image/<name>.png            RGB (KITTI image_02/03)
  root/velodyne_raw/<name>.png     uint16 PNG, metres = value / 256, 0 = none
  root/groundtruth/<name>.png      optional, same encoding (or root/groundtruth_depth/)
  root/intrinsics.txt              optional 'K: <9 numbers>' (or root/intrinsics/<name>.txt)
  Official val_selection_cropped names (..._image_<frame>_image_02.png with velodyne_raw /
  groundtruth_depth in place of the first 'image') are matched too."""

_KITTI_DRIVE = re.compile(r'(\d{4}_\d{2}_\d{2}_drive_\d{4}_sync)')
_KITTI_CAMERA = re.compile(r'_(image_0[23])$')
_KITTI_INDEX = re.compile(r'(\d{10})')


class KittiDepthCompletion(FrameDataset):
    """
    KITTI depth completion (real LiDAR ``velodyne_raw`` input, accumulated ``groundtruth``).

    Layout::

      root/image/<name>.png            RGB (KITTI image_02/03)
      root/velodyne_raw/<name>.png     uint16 PNG, metres = value / 256, 0 = none
      root/groundtruth/<name>.png      optional, same encoding (or root/groundtruth_depth/)
      root/intrinsics.txt              optional 'K: <9 numbers>' (or root/intrinsics/<name>.txt)

    The official ``val_selection_cropped`` / ``test_depth_completion_anonymous`` folders fit
    this layout: their per-frame names (``<drive>_image_<frame>_image_02``, with
    ``velodyne_raw`` / ``groundtruth_depth`` in place of the first ``image``) are matched.
    ``sequence`` is ``<drive>_image_0X`` when the name contains the drive, else the root
    folder's name for all frames; frames are sorted by sequence, then frame number.
    ``crop_to_official`` bottom-centre crops larger images to 1216x352 (``K`` shifted).
    """

    kind = 'kitti_dc'

    def __init__(self, root: str | Path, protocol: SamplingProtocol | None = None,
                 crop_to_official: bool = False) -> None:
        super().__init__(protocol)
        self.root = root = Path(root)
        self.crop_to_official = crop_to_official
        image_dir, sparse_dir = root / 'image', root / 'velodyne_raw'
        for folder in (image_dir, sparse_dir):
            if not folder.is_dir():
                raise _layout_error(self.name, root, _KITTI_LAYOUT, f'no folder {folder.name}/')
        gt_dir = _first_existing(root / 'groundtruth', root / 'groundtruth_depth')
        intrinsics_dir = root / 'intrinsics'
        shared_k = root / 'intrinsics.txt'
        images = _list_files(image_dir, ('.png',))
        if not images:
            raise _layout_error(self.name, root, _KITTI_LAYOUT, 'no PNG in image/')
        items = []
        for image in images:
            stem = image.stem
            sparse = self._match(sparse_dir, stem, 'velodyne_raw')
            gt = None if gt_dir is None else self._match(gt_dir, stem, 'groundtruth_depth')
            if intrinsics_dir.is_dir():
                k_path = intrinsics_dir / f'{stem}.txt'
                if not k_path.is_file():
                    raise _layout_error(self.name, root, _KITTI_LAYOUT, f'no {k_path.name} in '
                                        'intrinsics/')
            else:
                k_path = shared_k if shared_k.is_file() else None
            drive = _KITTI_DRIVE.search(stem)
            camera = _KITTI_CAMERA.search(stem)
            if drive is not None:
                sequence = drive.group(1) + ('' if camera is None else f'_{camera.group(1)}')
            else:
                sequence = root.name
            numbers = _KITTI_INDEX.findall(stem)
            order = int(numbers[-1]) if numbers else -1
            items.append(((sequence, order, stem), image, sparse, gt, k_path))
        items.sort(key=lambda item: item[0])
        self._items = items

    def _match(self, folder: Path, stem: str, official_token: str) -> Path:
        candidates = [stem, stem.replace('_image_', f'_{official_token}_', 1)]
        found = _first_existing(*(folder / f'{c}.png' for c in candidates))
        if found is None:
            raise _layout_error(self.name, self.root, _KITTI_LAYOUT,
                                f'no {folder.name}/ PNG for image {stem}.png')
        return found

    def _load(self, index: int) -> Frame:
        (sequence, _, stem), image, sparse, gt, k_path = self._items[index]
        rgb = read_rgb(image)
        sparse_depth = read_depth_png(sparse)
        gt_depth = None if gt is None else read_depth_png(gt)
        _check_same_size(stem, rgb, sparse_depth=sparse_depth, gt_depth=gt_depth)
        K = None if k_path is None else read_intrinsics_txt(k_path)
        frame = Frame(name=stem, rgb=rgb, sparse_depth=sparse_depth, gt_depth=gt_depth, K=K,
                      sequence=sequence)
        if self.crop_to_official and (frame.width, frame.height) != KITTI_OFFICIAL_SIZE:
            frame = bottom_center_crop(frame, KITTI_OFFICIAL_SIZE)
        return frame


def nyu_intrinsics() -> np.ndarray:
    """Return the NYUv2 Kinect RGB camera matrix at 640x480."""
    fx, fy, cx, cy = NYU_INTRINSICS
    return np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]])


_NYU_LAYOUT = """\
  root/rgb/rgb_<id>.jpg            640x480 RGB (.png accepted)
  root/depth/sync_depth_<id>.png   640x480 uint16 PNG, millimetres, 0 = invalid"""


class NYUv2(FrameDataset):
    """
    NYUv2 frames as RGB + aligned raw Kinect depth files (the BTS/Metric3D "sync" layout).

    Layout::

      root/rgb/rgb_<id>.jpg            640x480 RGB (.png accepted)
      root/depth/sync_depth_<id>.png   640x480 uint16 PNG, millimetres, 0 = invalid

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
        for folder in (rgb_dir, depth_dir):
            if not folder.is_dir():
                raise _layout_error(self.name, root, _NYU_LAYOUT, f'no folder {folder.name}/')
        items = []
        for rgb in _list_files(rgb_dir, _RGB_SUFFIXES):
            if not rgb.stem.startswith('rgb_'):
                continue
            frame_id = rgb.stem[len('rgb_'):]
            depth = depth_dir / f'sync_depth_{frame_id}.png'
            if not depth.is_file():
                raise _layout_error(self.name, root, _NYU_LAYOUT,
                                    f'no depth/{depth.name} for rgb/{rgb.name}')
            items.append((frame_id, rgb, depth))
        if not items:
            raise _layout_error(self.name, root, _NYU_LAYOUT, 'no rgb/rgb_*.jpg')
        self._items = items

    def _load(self, index: int) -> Frame:
        frame_id, rgb_path, depth_path = self._items[index]
        rgb = read_rgb(rgb_path)
        gt = read_depth_png(depth_path, scale=1000.0)
        _check_same_size(frame_id, rgb, gt_depth=gt)
        return Frame(name=frame_id, rgb=rgb, sparse_depth=np.zeros_like(gt), gt_depth=gt,
                     K=nyu_intrinsics())


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
      0-based positions (e.g. ``testNdxs - 1``). Note that ``depths`` is in-painted.
    * a folder searched recursively for ``*.h5`` with ``rgb`` ``(3, H, W)`` uint8 and
      ``depth`` ``(H, W)`` float metres (Ma & Karaman's ``nyudepthv2/val/official`` files);
      names are the file stems.

    Needs ``h5py`` (imported on first use). The default protocol is :data:`NYU_PROTOCOL`.
    """

    kind = 'nyuv2_mat'

    def __init__(self, path: str | Path, protocol: SamplingProtocol | None = NYU_PROTOCOL,
                 depth_key: str = 'depths', indices: Sequence[int] | None = None) -> None:
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
        _check_same_size(name, rgb, gt_depth=gt)
        return Frame(name=name, rgb=rgb, sparse_depth=np.zeros_like(gt), gt_depth=gt,
                     K=nyu_intrinsics())


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
            raise _layout_error(self.name, root, _IBIMS_LAYOUT, 'no image.png')
        for folder in folders:
            if not (folder / 'gt.npy').is_file():
                raise _layout_error(self.name, root, _IBIMS_LAYOUT, f'no gt.npy in {folder}')
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
        _check_same_size(folder.name, rgb, sparse_depth=sparse, gt_depth=gt)
        k_path = folder / 'K.txt'
        K = read_intrinsics_txt(k_path) if k_path.is_file() else None
        return Frame(name=folder.name, rgb=rgb, sparse_depth=sparse, gt_depth=gt, K=K)


_VOID_LAYOUT = """\
  <sequence>/image/<stamp>.png           RGB (stamp = seconds, e.g. 1552097915.4047)
  <sequence>/sparse_depth/<stamp>.png    uint16 PNG, metres = value / 256, 0 = none
  <sequence>/validity_map/<stamp>.png    optional, > 0 = valid sparse point
  <sequence>/ground_truth/<stamp>.png    optional, uint16 PNG, metres = value / 256
  <sequence>/K.txt                       optional 3x3 camera matrix
  root is a <sequence> folder, or holds <sequence> folders directly or in root/data/"""

_STAMP = re.compile(r'^(\d+)(?:\.(\d+))?$')


def _stamp_ns(stem: str) -> int | None:
    """Return the time of a ``<seconds>.<fraction>`` or ``<16+ digit nanoseconds>`` stem."""
    match = _STAMP.match(stem)
    if match is None:
        return None
    if match.group(2) is None:
        return int(stem) if len(stem) >= 16 else None
    fraction = match.group(2).ljust(9, '0')[:9]
    return int(match.group(1)) * 1_000_000_000 + int(fraction)


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
            raise _layout_error(self.name, root, _VOID_LAYOUT, 'no <sequence>/image/ folder')
        items = []
        for seq in sequences:
            if not (seq / 'sparse_depth').is_dir():
                raise _layout_error(self.name, root, _VOID_LAYOUT,
                                    f'no sparse_depth/ in {seq.name}')
            k_path = seq / 'K.txt'
            frames = []
            for image in _list_files(seq / 'image', ('.png',)):
                sparse = seq / 'sparse_depth' / image.name
                if not sparse.is_file():
                    raise _layout_error(self.name, root, _VOID_LAYOUT,
                                        f'no sparse_depth/{image.name} in {seq.name}')
                gt = seq / 'ground_truth' / image.name
                if (seq / 'ground_truth').is_dir() and not gt.is_file():
                    raise _layout_error(self.name, root, _VOID_LAYOUT,
                                        f'no ground_truth/{image.name} in {seq.name}')
                validity = seq / 'validity_map' / image.name
                stamp = _stamp_ns(image.stem)
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
            _check_same_size(stem, rgb, validity_map=valid)
            sparse[~valid] = 0.0
        gt = None if gt_path is None else read_depth_png(gt_path)
        _check_same_size(stem, rgb, sparse_depth=sparse, gt_depth=gt)
        K = None if k_path is None else read_intrinsics_txt(k_path)
        return Frame(name=f'{sequence}/{stem}', rgb=rgb, sparse_depth=sparse, gt_depth=gt,
                     K=K, sequence=sequence, stamp_ns=stamp)


_FOLDER_LAYOUT = """\
  root/rgb/<name>.png|.jpg|.jpeg    RGB images; <name> orders the frames
  root/sparse/<name>.png|.npy       sparse depth: uint16 PNG (metres = value / depth_scale)
                                    or .npy float metres; 0 = no measurement
  root/gt/<name>.png|.npy           optional ground truth, same encodings
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
    """

    kind = 'folder'

    def __init__(self, root: str | Path, protocol: SamplingProtocol | None = None,
                 depth_scale: float = 256.0, sequential: bool = True) -> None:
        super().__init__(protocol)
        self.root = root = Path(root)
        self.depth_scale = depth_scale
        self.sequential = sequential
        rgb_dir, sparse_dir, gt_dir = root / 'rgb', root / 'sparse', root / 'gt'
        for folder in (rgb_dir, sparse_dir):
            if not folder.is_dir():
                raise _layout_error(self.name, root, _FOLDER_LAYOUT, f'no folder {folder.name}/')
        images = _list_files(rgb_dir, _RGB_SUFFIXES)
        if not images:
            raise _layout_error(self.name, root, _FOLDER_LAYOUT, 'no image in rgb/')
        shared_k = root / 'K.txt'
        items = []
        for image in images:
            stem = image.stem
            sparse = _find_with_suffix(sparse_dir, stem, ('.png', '.npy'))
            if sparse is None:
                raise _layout_error(self.name, root, _FOLDER_LAYOUT,
                                    f'no sparse/{stem}.png or .npy for rgb/{image.name}')
            gt = None
            if gt_dir.is_dir():
                gt = _find_with_suffix(gt_dir, stem, ('.png', '.npy'))
                if gt is None:
                    raise _layout_error(self.name, root, _FOLDER_LAYOUT,
                                        f'no gt/{stem}.png or .npy for rgb/{image.name}')
            k_path = _first_existing(root / 'intrinsics' / f'{stem}.txt', shared_k)
            items.append((stem, image, sparse, gt, k_path))
        self._items = items

    def _load(self, index: int) -> Frame:
        stem, image, sparse_path, gt_path, k_path = self._items[index]
        rgb = read_rgb(image)
        sparse = read_depth(sparse_path, self.depth_scale)
        gt = None if gt_path is None else read_depth(gt_path, self.depth_scale)
        _check_same_size(stem, rgb, sparse_depth=sparse, gt_depth=gt)
        K = None if k_path is None else read_intrinsics_txt(k_path)
        return Frame(name=stem, rgb=rgb, sparse_depth=sparse, gt_depth=gt, K=K,
                     sequence=self.root.name if self.sequential else None,
                     stamp_ns=_stamp_ns(stem))


# --------------------------------------------------------------------------- registry

def _rosbag(root: str | Path, **options: Any) -> FrameDataset:
    from .bag import RosbagDataset  # bag.py builds on this module

    return RosbagDataset(root, **options)


_REGISTRY = MappingProxyType({
    'kitti_dc': KittiDepthCompletion,
    'nyuv2': NYUv2,
    'nyuv2_mat': NYUv2Mat,
    'ibims': IBims,
    'void': VOID,
    'folder': GenericFolder,
    'rosbag': _rosbag,
})

#: Dataset kinds accepted by :func:`open_dataset`.
DATASET_KINDS = tuple(_REGISTRY)


def open_dataset(kind: str, root: str | Path, **options: Any) -> FrameDataset:
    """
    Open a benchmark folder (or file, for ``nyuv2_mat``) by kind.

    ``options`` go to the loader's constructor (e.g. ``protocol``, ``crop_to_official``,
    ``num_points``).

    :raises ValueError: for an unknown ``kind`` (the message lists the known ones).
    """
    try:
        loader = _REGISTRY[kind]
    except KeyError:
        raise ValueError(f'unknown dataset kind {kind!r}; expected one of '
                         f'{", ".join(DATASET_KINDS)}') from None
    return loader(root, **options)
