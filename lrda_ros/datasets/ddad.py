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
DDAD (TRI's Dense Depth for Autonomous Driving) read from its DGP distribution, no dgp needed.

Layout (TRI-ML/dgp ``dgp/proto`` messages written as JSON; ``dgp/datasets/base_dataset.py``)::

  root/ddad.json                        SceneDataset: scene_splits {"0": train, "1": val,
                                        "2": test} -> filenames "<scene>/scene_<sha1>.json"
  root/<scene>/scene_<sha1>.json        Scene: samples [{datum_keys, calibration_key, ...}],
                                        data [{key, id {name, timestamp}, datum {image |
                                        point_cloud {filename, pose}}}]
  root/<scene>/calibration/<key>.json   SampleCalibration: names, intrinsics {fx, fy, cx, cy,
                                        skew}, extrinsics {translation, rotation qw..qz}
  root/<scene>/rgb/CAMERA_01/<t>.png    front camera, 1936x1216
  root/<scene>/point_cloud/LIDAR/<t>.npz  'data': (N, >=3) float X, Y, Z (, INTENSITY) in the
                                        LiDAR frame (or a structured array with X, Y, Z)

Pose conventions (dgp ``utils/pose.py`` and ``utils/annotation.py``
``get_depth_from_point_cloud``): a datum's ``pose`` is ``T_world_sensor`` at its own time
(``p_world = R p_sensor + t``, quaternion ``qw, qx, qy, qz``); the camera frame is the optical
frame (x right, y down, z forward). dgp projects the LiDAR with
``T_camera_lidar = pose_camera^-1 * pose_lidar`` (ego-motion between the two stamps
included) and the pinhole ``K``, without distortion. When a scene has no poses (all-zero
quaternions), the calibration extrinsics (``T_vehicle_sensor``) give
``T_camera_lidar = T_vehicle_camera^-1 * T_vehicle_lidar``.

Protocol (VPP4DC, bartn8/vppdc ``convert_ddad.py``, whose output Marigold-DC evaluates,
prs-eth/Marigold-DC ``DATASETS.md``; the paper follows): the ``val`` split (3,950 samples),
front camera ``CAMERA_01`` at its native 1936x1216, the LiDAR projected into it (dgp's depth
map); the ground truth is that map after the outlier filter with a 3 m threshold (7x7 window);
the sparse input is a 20 % per-pixel random subset of the unfiltered map, then (Marigold-DC
``dataset_processing.py`` ``process_ddad``) the outlier filter with 1.5 m (7x7). Both were
stored as 16-bit PNGs (metres = value / 256, truncated), so values here are floored to 1/256 m
too. Metrics at the native 1936x1216 (Marigold-DC's ``eval.py`` on the full-size maps, valid
where the ground truth is > 0).

Differences from dgp, all sub-pixel or rare: a point lands in the pixel whose centre is nearest
(``floor(u + 0.5)``, :mod:`lrda_ros.geometry`) where dgp truncates ``u``; where several points
hit a pixel the nearest wins (dgp keeps an arbitrary one); the 20 % draw is seeded per frame
(``np.random.default_rng([seed, index])``) where VPP4DC drew from one global stream.
"""

from __future__ import annotations

from datetime import datetime, timezone
import json
from pathlib import Path

import numpy as np

from .files import layout_error, read_rgb
from .frame import Frame, FrameDataset
from ..errors import InputError
from ..geometry import (
    CameraModel, DDAD_GROUND_TRUTH_FILTER, filter_outliers, lidar_to_sparse_depth, OutlierFilter,
    ProjectionConfig, RigidTransform, SPARSE_INPUT_FILTER)

#: dgp's DatasetSplit enum values, the keys of ``scene_splits`` in ``ddad.json``.
DDAD_SPLITS = {'train': '0', 'val': '1', 'test': '2'}
#: Share of the projected LiDAR pixels kept as the sparse input (VPP4DC's ``sample_hints``).
DDAD_INPUT_FRACTION = 0.2
#: Depth resolution of the protocol's 16-bit PNGs (metres per step) and their largest value.
DEPTH_STEP_M, DEPTH_MAX_M = 1.0 / 256.0, 65535.0 / 256.0
#: Every point in front of the camera counts (dgp applies no range limit).
DDAD_PROJECTION = ProjectionConfig(min_range=0.0, max_range=1.0e6)

_DDAD_LAYOUT = """\
  root/ddad.json                              scene_splits {"1": {"filenames": [...]}} (val)
  root/<scene>/scene_<sha1>.json              samples and data (dgp Scene)
  root/<scene>/calibration/<key>.json         names, intrinsics, extrinsics
  root/<scene>/rgb/CAMERA_01/<stamp>.png      front camera
  root/<scene>/point_cloud/LIDAR/<stamp>.npz  'data': X, Y, Z[, ...] in the LiDAR frame"""


def _pose(message: dict | None) -> RigidTransform | None:
    """Return a dgp Pose message as a transform, or None when it is empty (zero quaternion)."""
    if not message:
        return None
    rotation = message.get('rotation', {})
    quaternion = np.array([rotation.get(k, 0.0) for k in ('qx', 'qy', 'qz', 'qw')], float)
    if not np.any(quaternion):
        return None
    translation = message.get('translation', {})
    return RigidTransform.from_translation_quaternion(
        np.array([translation.get(k, 0.0) for k in ('x', 'y', 'z')], float), quaternion)


def _stamp_ns(text: str) -> int | None:
    """Return the nanoseconds of a protobuf JSON Timestamp (``2019-01-01T00:00:00.123456Z``)."""
    try:
        whole, _, fraction = text.rstrip('Z').partition('.')
        moment = datetime.strptime(whole, '%Y-%m-%dT%H:%M:%S').replace(tzinfo=timezone.utc)
    except (AttributeError, ValueError):
        return None
    since = moment - datetime(1970, 1, 1, tzinfo=timezone.utc)
    seconds = since.days * 86400 + since.seconds
    return seconds * 1_000_000_000 + int((fraction + '000000000')[:9] or 0)


def quantize_depth(depth: np.ndarray) -> np.ndarray:
    """Floor depth to 1/256 m as a 16-bit KITTI-style PNG stores it (capped at 255.996 m)."""
    return (np.floor(np.minimum(depth, DEPTH_MAX_M) / DEPTH_STEP_M) * DEPTH_STEP_M).astype(
        np.float32)


def read_point_cloud(path: Path) -> np.ndarray:
    """Read a dgp point cloud ``.npz`` as (N, 3) float64 X, Y, Z in the sensor frame."""
    try:
        with np.load(path) as archive:
            data = archive['data']
    except (OSError, ValueError, KeyError) as error:
        raise InputError(f'{path}: not a dgp point cloud (.npz with "data"): {error}',
                         field='point_cloud') from None
    if data.dtype.fields is not None:
        names = {name.upper(): name for name in data.dtype.fields}
        if not all(axis in names for axis in 'XYZ'):
            raise InputError(f'{path}: structured point cloud without X, Y, Z fields',
                             field='point_cloud')
        return np.stack([data[names[axis]] for axis in 'XYZ'], axis=1).astype(np.float64)
    if data.ndim != 2 or data.shape[1] < 3:
        raise InputError(f'{path}: point cloud of shape {data.shape}, expected (N, >=3)',
                         field='point_cloud')
    return np.asarray(data[:, :3], dtype=np.float64)


class DDAD(FrameDataset):
    """
    DDAD under the depth-completion protocol of the module docstring.

    ``root`` holds ``ddad.json`` (``ddad_train_val``). ``split`` names dgp's split (``val``);
    ``camera`` / ``lidar`` the datums (matched without regard to case). ``input_fraction``,
    ``input_filter`` (None: the unfiltered subset) and ``gt_filter`` (None: the unfiltered
    map) change only what they name. Frames of a scene are consecutive, in sample order, with
    ``sequence`` = the scene folder; names are ``<scene>/<image stem>``.
    ``Frame.notes``: ``lidar_pixels`` (projected), ``outliers_removed`` (from the input),
    ``gt_outliers_removed``, ``pose_source`` ('poses' or 'extrinsics'). ``Frame.T_world_cam``:
    the camera datum's pose (``T_world_sensor``), for the temporal alignment error; None in a
    scene without poses.
    """

    kind = 'ddad'

    def __init__(self, root: str | Path, split: str = 'val', camera: str = 'CAMERA_01',
                 lidar: str = 'LIDAR', input_fraction: float = DDAD_INPUT_FRACTION,
                 input_filter: OutlierFilter | None = SPARSE_INPUT_FILTER,
                 gt_filter: OutlierFilter | None = DDAD_GROUND_TRUTH_FILTER,
                 seed: int = 0) -> None:
        super().__init__(None)
        self.root = root = Path(root)
        if split not in DDAD_SPLITS:
            raise ValueError(f'split must be one of {", ".join(DDAD_SPLITS)}, got {split!r}')
        if not 0 < input_fraction <= 1:
            raise ValueError(f'input_fraction must be in (0, 1], got {input_fraction}')
        self.camera, self.lidar = camera.lower(), lidar.lower()
        self.input_fraction, self.seed = input_fraction, seed
        self.input_filter, self.gt_filter = input_filter, gt_filter
        self._calibrations: dict[Path, dict] = {}
        index_path = root / 'ddad.json'
        if not index_path.is_file():
            raise layout_error(self.name, root, _DDAD_LAYOUT, 'no ddad.json')
        splits = self._json(index_path).get('scene_splits', {})
        filenames = splits.get(DDAD_SPLITS[split], {}).get('filenames', [])
        if not filenames:
            raise layout_error(self.name, root, _DDAD_LAYOUT,
                               f'ddad.json lists no scene for split {split!r} '
                               f'(scene_splits["{DDAD_SPLITS[split]}"])')
        self._items = [item for name in filenames for item in self._scene(root / name)]
        if not self._items:
            raise layout_error(self.name, root, _DDAD_LAYOUT,
                               f'no sample has both {camera} and {lidar}')

    def _json(self, path: Path) -> dict:
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError) as error:
            raise InputError(f'{path}: unreadable JSON: {error}', field=path.name) from None

    def _scene(self, path: Path) -> list[tuple]:
        if not path.is_file():
            raise layout_error(self.name, self.root, _DDAD_LAYOUT,
                               f'ddad.json names {path.relative_to(self.root)}, which is absent')
        scene = self._json(path)
        data = {datum.get('key'): datum for datum in scene.get('data', [])}
        items = []
        for sample in scene.get('samples', []):
            by_name = {}
            for key in sample.get('datum_keys', []):
                datum = data.get(key)
                if datum is not None:
                    by_name[datum.get('id', {}).get('name', '').lower()] = datum
            image, cloud = by_name.get(self.camera), by_name.get(self.lidar)
            if image is None or cloud is None or 'image' not in image.get('datum', {}) \
                    or 'point_cloud' not in cloud.get('datum', {}):
                continue  # as dgp's synchronized dataset: only samples holding both datums
            items.append((path.parent, sample.get('calibration_key', ''), image, cloud))
        return items

    def _calibration(self, scene_dir: Path, key: str) -> dict:
        path = scene_dir / 'calibration' / f'{key}.json'
        if path not in self._calibrations:
            if not path.is_file():
                raise InputError(f'{path}: calibration of a sample is absent',
                                 field='calibration_key')
            message = self._json(path)
            names = [name.lower() for name in message.get('names', [])]
            self._calibrations[path] = {
                name: (intrinsic, extrinsic) for name, intrinsic, extrinsic in
                zip(names, message.get('intrinsics', []), message.get('extrinsics', []))}
        return self._calibrations[path]

    def geometry(self, index: int) -> tuple[np.ndarray, RigidTransform, str]:
        """Return (K, T_camera_lidar, 'poses' or 'extrinsics') of frame ``index``."""
        scene_dir, key, image, cloud = self._items[index % len(self)]
        calibration = self._calibration(scene_dir, key)
        if self.camera not in calibration:
            raise InputError(f'{scene_dir}/calibration/{key}.json: no {self.camera} entry',
                             field='names')
        intrinsic = calibration[self.camera][0]
        K = np.array([[intrinsic.get('fx', 0.0), intrinsic.get('skew', 0.0),
                       intrinsic.get('cx', 0.0)],
                      [0.0, intrinsic.get('fy', 0.0), intrinsic.get('cy', 0.0)],
                      [0.0, 0.0, 1.0]])
        pose_camera = _pose(image['datum']['image'].get('pose'))
        pose_lidar = _pose(cloud['datum']['point_cloud'].get('pose'))
        if pose_camera is not None and pose_lidar is not None:
            return K, pose_camera.inverse() @ pose_lidar, 'poses'
        if self.lidar not in calibration:
            raise InputError(f'{scene_dir}/calibration/{key}.json: no {self.lidar} entry',
                             field='names')
        extrinsics = [_pose(calibration[name][1]) for name in (self.camera, self.lidar)]
        if any(pose is None for pose in extrinsics):
            raise InputError(f'{scene_dir}: no datum poses and no extrinsics for '
                             f'{self.camera}/{self.lidar}', field='extrinsics')
        return K, extrinsics[0].inverse() @ extrinsics[1], 'extrinsics'

    def camera_pose(self, index: int) -> np.ndarray | None:
        """Return frame ``index``'s 4x4 camera pose in the scene's world (None without one)."""
        _, _, image, _ = self._items[index % len(self)]
        pose = _pose(image['datum']['image'].get('pose'))
        return None if pose is None else pose.as_matrix()

    def projected_lidar(self, index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
        """Return (rgb, the LiDAR depth map in the camera before filtering, K, notes)."""
        scene_dir, _, image, cloud = self._items[index % len(self)]
        rgb = read_rgb(scene_dir / image['datum']['image']['filename'])
        points = read_point_cloud(scene_dir / cloud['datum']['point_cloud']['filename'])
        K, T_cam_lidar, source = self.geometry(index)
        camera = CameraModel(K, width=rgb.shape[1], height=rgb.shape[0])
        depth = lidar_to_sparse_depth(points, T_cam_lidar, camera, DDAD_PROJECTION).depth
        return rgb, depth, K, {'pose_source': source, 'lidar_pixels': int((depth > 0).sum())}

    def _load(self, index: int) -> Frame:
        scene_dir, _, image, _ = self._items[index]
        rgb, depth, K, notes = self.projected_lidar(index)
        gt, gt_removed = (depth, 0) if self.gt_filter is None else filter_outliers(
            depth, self.gt_filter)
        rng = np.random.default_rng([self.seed, index])
        subset = np.where(rng.random(depth.shape) < self.input_fraction, depth, 0.0)
        sparse = quantize_depth(subset)
        removed = 0
        if self.input_filter is not None:
            sparse, removed = filter_outliers(sparse, self.input_filter)
        notes.update(outliers_removed=removed, gt_outliers_removed=gt_removed)
        stem = Path(image['datum']['image']['filename']).stem
        return Frame(name=f'{scene_dir.name}/{stem}', rgb=rgb, sparse_depth=sparse,
                     gt_depth=quantize_depth(gt), K=K, sequence=scene_dir.name,
                     stamp_ns=_stamp_ns(image.get('id', {}).get('timestamp', '')),
                     notes=notes, T_world_cam=self.camera_pose(index))
