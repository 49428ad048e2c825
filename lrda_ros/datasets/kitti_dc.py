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
KITTI Depth Completion (selection and raw-drive layouts).

Protocol (KITTI DC devkit; Marigold-DC ``DATASETS.md`` and ``script/dataset_processing.py``
``process_kittidc``; followed by the paper): the 1,000 frames of
``depth_selection/val_selection_cropped`` at 1216x352, the real ``velodyne_raw`` LiDAR as input
after the outlier filter (7x7 window, 1.5 m; :mod:`lrda_ros.geometry.outliers`), the
accumulated ``groundtruth_depth`` wherever it is > 0, 16-bit PNGs with metres = value / 256.
"""

from __future__ import annotations

from pathlib import Path
import re


from .files import (
    check_same_size, first_existing, layout_error, list_files, read_depth_png,
    read_intrinsics_txt, read_rgb)
from .frame import bottom_center_crop, Frame, FrameDataset, SamplingProtocol
from ..geometry import filter_outliers, OutlierFilter, SPARSE_INPUT_FILTER

#: Size (W, H) of the official KITTI depth-completion selection (bottom-centre crop).
KITTI_OFFICIAL_SIZE = (1216, 352)

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
    ``crop_to_official`` bottom-centre crops larger images to 1216x352 (``K`` shifted), as the
    devkit cut the selection. ``root`` may also be the ``depth_selection`` download folder (its
    ``val_selection_cropped/`` is read).

    The first frame's files are checked at construction; a later frame's missing file fails
    the reading of that frame only.

    ``outlier_filter`` (default: the protocol's, 7x7 window and 1.5 m; None = the raw LiDAR)
    removes LiDAR points seen through nearer objects from the sparse input, after any crop;
    ``Frame.notes['outliers_removed']`` counts them.
    """

    kind = 'kitti_dc'

    def __init__(self, root: str | Path, protocol: SamplingProtocol | None = None,
                 crop_to_official: bool = False,
                 outlier_filter: OutlierFilter | None = SPARSE_INPUT_FILTER) -> None:
        super().__init__(protocol)
        root = Path(root)
        if not (root / 'image').is_dir() and (root / 'val_selection_cropped').is_dir():
            root = root / 'val_selection_cropped'
        self.root = root
        self.crop_to_official = crop_to_official
        self.outlier_filter = outlier_filter
        image_dir, sparse_dir = root / 'image', root / 'velodyne_raw'
        for folder in (image_dir, sparse_dir):
            if not folder.is_dir():
                raise layout_error(self.name, root, _KITTI_LAYOUT, f'no folder {folder.name}/')
        gt_dir = first_existing(root / 'groundtruth', root / 'groundtruth_depth')
        intrinsics_dir = root / 'intrinsics'
        shared_k = root / 'intrinsics.txt'
        images = list_files(image_dir, ('.png',))
        if not images:
            raise layout_error(self.name, root, _KITTI_LAYOUT, 'no PNG in image/')
        items = []
        for position, image in enumerate(images):
            stem = image.stem
            # The first frame checks the layout; a later missing file costs its frame only.
            required = position == 0
            sparse = self._match(sparse_dir, stem, 'velodyne_raw', required)
            gt = None if gt_dir is None else self._match(gt_dir, stem, 'groundtruth_depth',
                                                         required)
            if intrinsics_dir.is_dir():
                k_path = intrinsics_dir / f'{stem}.txt'
                if required and not k_path.is_file():
                    raise layout_error(self.name, root, _KITTI_LAYOUT, f'no {k_path.name} in '
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

    def _match(self, folder: Path, stem: str, official_token: str, required: bool) -> Path:
        candidates = [stem, stem.replace('_image_', f'_{official_token}_', 1)]
        found = first_existing(*(folder / f'{c}.png' for c in candidates))
        if found is None and not required:
            return folder / f'{candidates[-1]}.png'  # reading the frame fails, naming it
        if found is None:
            raise layout_error(self.name, self.root, _KITTI_LAYOUT,
                               f'no {folder.name}/ PNG for image {stem}.png')
        return found

    def _load(self, index: int) -> Frame:
        (sequence, _, stem), image, sparse, gt, k_path = self._items[index]
        rgb = read_rgb(image)
        sparse_depth = read_depth_png(sparse)
        gt_depth = None if gt is None else read_depth_png(gt)
        check_same_size(stem, rgb, sparse_depth=sparse_depth, gt_depth=gt_depth)
        K = None if k_path is None else read_intrinsics_txt(k_path)
        frame = Frame(name=stem, rgb=rgb, sparse_depth=sparse_depth, gt_depth=gt_depth, K=K,
                      sequence=sequence)
        if self.crop_to_official and (frame.width, frame.height) != KITTI_OFFICIAL_SIZE:
            frame = bottom_center_crop(frame, KITTI_OFFICIAL_SIZE)
        if self.outlier_filter is not None:
            filtered, removed = filter_outliers(frame.sparse_depth, self.outlier_filter)
            frame.sparse_depth = filtered
            frame.notes['outliers_removed'] = removed
        return frame
