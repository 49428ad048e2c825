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

"""Evaluation frames, sampling protocols, frame transforms and the loader base class."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterator

import numpy as np
from PIL import Image

from .files import sanitize_depth

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
    #: What the loader did to the frame, for reports (e.g. ``outliers_removed``: LiDAR points
    #: the outlier filter took out of the sparse input).
    notes: dict = field(default_factory=dict)
    #: The camera's 4x4 pose in a fixed frame (maps camera points into it), when the source
    #: knows it: the temporal alignment error compares consecutive frames through it.
    T_world_cam: np.ndarray | None = None

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
        n = len(self)  # subclasses may size themselves otherwise (bags)
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
