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

"""KITTI object benchmark (image_2/, velodyne/*.bin, calib/*.txt): real LiDAR, hold-out truth."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .files import layout_error, list_files, read_rgb
from .frame import Frame, FrameDataset
from ..geometry import CameraModel, ProjectionConfig, RigidTransform
from ..pipeline import FrameInputs, HoldoutRule, prepare_frame

_OBJECT_LAYOUT = """\
  root/image_2/<id>.png        left colour camera (rectified)
  root/velodyne/<id>.bin       float32 x, y, z, reflectance per point (Velodyne frame)
  root/calib/<id>.txt          'P2:' (3x4), 'R0_rect:' (3x3), 'Tr_velo_to_cam:' (3x4)
  (root may also be the download's parent folder holding training/ or testing/)"""


def read_kitti_calib(path: str | Path) -> dict[str, np.ndarray]:
    """Read a KITTI calibration file: ``key: numbers`` lines as float64 arrays."""
    values = {}
    for line in Path(path).read_text().splitlines():
        key, separator, rest = line.partition(':')
        if separator and rest.split():
            try:
                values[key.strip()] = np.array(rest.split(), dtype=np.float64)
            except ValueError:
                raise ValueError(f'{path}: {key.strip()!r} is not a list of numbers') from None
    return values


def kitti_object_geometry(calib: dict[str, np.ndarray],
                          name: str = 'calib') -> tuple[np.ndarray, RigidTransform]:
    """
    Return (K, T_cam2_velo) of camera 2 from a KITTI object calibration.

    KITTI projects with ``x = P2 R0_rect Tr_velo_to_cam X``. ``P2 = K [I | t]``: its fourth
    column ``K t`` is camera 2's offset from the rectified reference camera 0 (about 6 cm along
    x), so the points are moved by ``t = K^-1 P2[:, 3]`` before ``K`` projects them; dropping
    it would shift every pixel by ``fx * t_x / z`` and every depth by ``t_z``.
    """
    for key, size in (('P2', 12), ('R0_rect', 9), ('Tr_velo_to_cam', 12)):
        if key not in calib or calib[key].size != size:
            found = 'missing' if key not in calib else f'{calib[key].size} numbers'
            raise ValueError(f'{name}: {key!r} needs {size} numbers ({found})')
    P2 = calib['P2'].reshape(3, 4)
    K = P2[:, :3].copy()
    if not np.allclose(K[2], [0.0, 0.0, 1.0]) or K[1, 0] != 0.0:
        raise ValueError(f'{name}: P2 is not K [I | t] with an upper-triangular K: {P2.tolist()}')
    rectify = np.eye(4)
    rectify[:3, :3] = calib['R0_rect'].reshape(3, 3)
    velo_to_cam0 = np.eye(4)
    velo_to_cam0[:3] = calib['Tr_velo_to_cam'].reshape(3, 4)
    baseline = np.eye(4)
    baseline[:3, 3] = np.linalg.solve(K, P2[:, 3])
    # KITTI prints 7 significant digits: its rotations are orthonormal to ~1e-6 only.
    return K, RigidTransform.from_matrix(baseline @ rectify @ velo_to_cam0, atol=1e-4)


def read_velodyne_bin(path: str | Path) -> np.ndarray:
    """Read a KITTI Velodyne scan as (N, 3) float64 x, y, z (the reflectance is dropped)."""
    raw = np.fromfile(path, dtype='<f4')
    if raw.size % 4:
        raise ValueError(f'{path}: {raw.size} floats is not a whole number of (x, y, z, r) '
                         'points')
    return raw.reshape(-1, 4)[:, :3].astype(np.float64)


class KittiObject(FrameDataset):
    """
    KITTI object benchmark frames: image_2 + its Velodyne scan projected into camera 2.

    The benchmark has no depth ground truth, so a seeded ``holdout_fraction`` of the projected
    LiDAR pixels is withheld from the input and scored (as for bags). Frames are unrelated
    snapshots: ``sequence=None``, so warm-started methods start cold on each.
    ``projection.outlier_filter`` (e.g. :data:`~lrda_ros.geometry.SPARSE_INPUT_FILTER`) removes
    LiDAR points seen through nearer objects before the hold-out split;
    ``Frame.notes['outliers_removed']`` counts them.
    """

    kind = 'kitti_object'

    def __init__(self, root: str | Path, projection: ProjectionConfig = ProjectionConfig(),
                 holdout_fraction: float = 0.2, seed: int = 0) -> None:
        super().__init__(None)
        root = Path(root)
        if not (root / 'image_2').is_dir() and (root / 'training' / 'image_2').is_dir():
            root = root / 'training'
        self.root = root
        self.projection = projection
        self.holdout_fraction, self.seed = holdout_fraction, seed
        for folder in ('image_2', 'velodyne', 'calib'):
            if not (root / folder).is_dir():
                raise layout_error(self.name, root, _OBJECT_LAYOUT, f'no folder {folder}/')
        images = list_files(root / 'image_2', ('.png',))
        if not images:
            raise layout_error(self.name, root, _OBJECT_LAYOUT, 'no PNG in image_2/')
        items = []
        for image in images:
            scan = root / 'velodyne' / f'{image.stem}.bin'
            calib = root / 'calib' / f'{image.stem}.txt'
            for needed in (scan, calib):
                if not needed.is_file():
                    raise layout_error(self.name, root, _OBJECT_LAYOUT,
                                       f'no {needed.parent.name}/{needed.name} for '
                                       f'image_2/{image.name}')
            items.append((image.stem, image, scan, calib))
        self._items = items

    def _load(self, index: int) -> Frame:
        stem, image, scan, calib = self._items[index]
        rgb = read_rgb(image)
        K, T_cam_velo = kitti_object_geometry(read_kitti_calib(calib), str(calib))
        camera = CameraModel(K, width=rgb.shape[1], height=rgb.shape[0])
        # The node's frame step; without stamps, the frame index seeds the hold-out.
        prepared = prepare_frame(FrameInputs(rgb, camera, read_velodyne_bin(scan), T_cam_velo,
                                             stamp_ns=index), self.projection,
                                 HoldoutRule(self.holdout_fraction, self.seed))
        return Frame(name=stem, rgb=rgb, sparse_depth=prepared.sparse_depth,
                     gt_depth=prepared.heldout_depth, K=K, sequence=None,
                     notes={'outliers_removed': prepared.projection.num_dropped_outliers})
