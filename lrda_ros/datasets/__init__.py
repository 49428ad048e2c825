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

from pathlib import Path
from types import MappingProxyType
from typing import Any

from .ddad import DDAD
from .files import read_depth, read_depth_png, read_intrinsics_txt, read_rgb, sanitize_depth
from .folder import GenericFolder
from .frame import (
    apply_protocol, bottom_center_crop, center_crop, crop_frame, Frame, FrameDataset,
    mask_depth_range, resize_frame, sample_sparse_from_gt, SamplingProtocol, scale_intrinsics)
from .ibims import IBims, marigold_dc_points
from .kitti_dc import KITTI_OFFICIAL_SIZE, KittiDepthCompletion
from .kitti_object import KittiObject
from .matfile import MatFileError, read_mat
from .nyu import NYU_INTRINSICS, nyu_intrinsics, NYU_PROTOCOL, NYUv2, NYUv2Mat, split_indices
from .rosbag import RosbagDataset
from .void import VOID
from ..messages.rosbag import BagTopics, RosbagSource

_REGISTRY = MappingProxyType({
    'kitti_dc': KittiDepthCompletion,
    'kitti_object': KittiObject,
    'nyuv2': NYUv2,
    'nyuv2_mat': NYUv2Mat,
    'ibims': IBims,
    'void': VOID,
    'ddad': DDAD,
    'folder': GenericFolder,
    'rosbag': RosbagDataset,
})

#: The protocol each loader applies by default (kinds not listed apply none): an option that
#: changes one field (``--num-points``) replaces that field only.
DEFAULT_PROTOCOLS = MappingProxyType({'nyuv2': NYU_PROTOCOL, 'nyuv2_mat': NYU_PROTOCOL})
#: Kinds whose sparse input is real LiDAR: the outlier filter is an option of theirs.
LIDAR_KINDS = ('kitti_dc', 'ddad', 'kitti_object', 'rosbag')

__all__ = [
    'apply_protocol', 'BagTopics', 'bottom_center_crop', 'center_crop', 'crop_frame',
    'DATASET_KINDS', 'DDAD', 'DEFAULT_PROTOCOLS', 'Frame', 'FrameDataset', 'GenericFolder',
    'IBims', 'KITTI_OFFICIAL_SIZE', 'KittiDepthCompletion', 'KittiObject', 'LIDAR_KINDS',
    'marigold_dc_points', 'mask_depth_range', 'MatFileError', 'NYU_INTRINSICS', 'NYU_PROTOCOL',
    'nyu_intrinsics', 'NYUv2', 'NYUv2Mat', 'open_dataset', 'read_depth', 'read_depth_png',
    'read_intrinsics_txt', 'read_mat', 'read_rgb', 'resize_frame', 'RosbagDataset',
    'RosbagSource', 'sample_sparse_from_gt', 'SamplingProtocol', 'sanitize_depth',
    'scale_intrinsics', 'split_indices', 'VOID',
]

#: Dataset kinds accepted by :func:`open_dataset`.
DATASET_KINDS = tuple(_REGISTRY)


def open_dataset(kind: str, root: str | Path, **options: Any) -> FrameDataset:
    """
    Open a benchmark folder (or file, for ``nyuv2_mat``) by kind.

    ``options`` go to the loader's constructor (e.g. ``protocol``, ``crop_to_official``,
    ``num_points``).

    :raises ValueError: for an unknown ``kind`` (the message lists the known ones).
    :raises FileNotFoundError: when ``root`` does not exist.
    """
    try:
        loader = _REGISTRY[kind]
    except KeyError:
        raise ValueError(f'unknown dataset kind {kind!r}; expected one of '
                         f'{", ".join(DATASET_KINDS)}') from None
    if kind != 'rosbag' and not Path(root).exists():  # a bag says so itself
        raise FileNotFoundError(f'{kind}: the dataset root {root} does not exist')
    return loader(root, **options)
