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
The completion node's settings: a whole set of parameter values validated into one object.

Each value is checked against its spec in the table (:mod:`.parameters`), then the values
together (depth range, cameras, extrinsic override), and mapped onto the engine's, the
projection's and the temporal fusion's configurations, whose own rejections name the parameter.
"""

from __future__ import annotations

from dataclasses import dataclass
import re
from typing import Any, Mapping, Sequence

import numpy as np

from .parameters import InvalidParameterError, PARAMETERS, SPECS
from ..calibration import CheckConfig
from ..engine.config import FewPointsPolicy, TTOConfig
from ..engine.names import ALWAYS_AVAILABLE_DEVICES, unknown_device
from ..errors import ConfigError
from ..geometry import ProjectionConfig, RigidTransform
from ..geometry.temporal_fusion import TemporalFusionConfig
from ..messages.pairing import PairingRule
from ..messages.point_times import AzimuthSweep
from ..messages.sweep_alignment import MotionConfig

#: A camera name: ROS 2 name tokens (letters, digits, underscores; not starting with a digit),
#: joined by '/', relative (its topics live in the node's namespace).
CAMERA_NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*')


def _frame_id(name: str, value: str) -> str:
    """Return a tf2 frame id, or raise naming the parameter (empty, or a leading '/')."""
    if not value or value.startswith('/') or any(c.isspace() for c in value):
        raise InvalidParameterError(name, f"must be a tf2 frame id such as 'odom' (no leading "
                                    f"'/', no spaces), got {value!r}")
    return value


def _parameter_error(error: ConfigError, prefix: str = '') -> InvalidParameterError:
    """Name the parameter a configuration rejection is about (``prefix`` + its field)."""
    return InvalidParameterError(f'{prefix}{error.field}', str(error).removeprefix('TTOConfig: '))


def _is_unset(values: Sequence[float]) -> bool:
    # ROS 2 parameter overrides cannot declare an empty double array type from YAML, so [0.0]
    # (the default) also means "not set".
    return len(values) == 0 or (len(values) == 1 and values[0] == 0.0)


def _names(parameter: str, values: Sequence[str], kind: str, examples: str,
           each: str) -> tuple[str, ...]:
    """Return ``values``: distinct ROS name tokens joined by '/'; raise naming ``parameter``."""
    names = tuple(values)
    for name in names:
        if not isinstance(name, str) or not CAMERA_NAME.fullmatch(name):
            raise InvalidParameterError(
                parameter, f'{name!r} is not {kind}: use letters, digits and underscores (not '
                f"starting with a digit), tokens joined by '/', e.g. {examples}")
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise InvalidParameterError(parameter, f'{", ".join(duplicates)} given more than once: '
                                    f'{each}')
    return names


def camera_names(values: Sequence[str]) -> tuple[str, ...]:
    """Return the validated ``cameras``; raise InvalidParameterError saying what is wrong."""
    return _names('cameras', values, 'a camera name', 'front or rig/left',
                  'each camera needs its own topics')


#: The node's own topics, relative to a camera: a point topic may not be one of them.
CAMERA_TOPICS = ('image', 'image/compressed', 'camera_info', 'depth', 'depth/camera_info',
                 'depth/confidence', 'sparse_depth', 'depth_colored', 'points_dense',
                 'holdout_depth')


#: Why the offline commands refuse several ``point_topics``: a recording names its own topics.
OFFLINE_POINT_TOPICS = ("names the node's live topics; give the recording's point topics with "
                        '--points-topic, once per LiDAR')


def point_topic_names(values: Sequence[str]) -> tuple[str, ...]:
    """Return the validated ``point_topics``; raise InvalidParameterError saying what is wrong."""
    if not values:
        raise InvalidParameterError('point_topics', 'needs at least one topic (a frame projects '
                                    'the LiDAR): [points] for one LiDAR')
    names = _names('point_topics', values, 'a relative topic name',
                   'points or lidar/rear/points (remap it to reach another topic)',
                   'each LiDAR needs its own topic')
    for name in names:
        if name in CAMERA_TOPICS:
            raise InvalidParameterError('point_topics', f"{name!r} is one of the camera's own "
                                        'topics (image, camera_info and the outputs)')
    return names


def extrinsic_override(translation: Sequence[float], rotation: Sequence[float],
                       matrix: Sequence[float]) -> RigidTransform | None:
    """
    Return the T_camera_lidar the override parameters give, or None when unset.

    ``matrix`` wins when set. Otherwise translation and rotation are one override as soon as
    either is set, the other part then its neutral value (no shift, or no rotation): each can
    be given, or changed at run time, on its own.
    """
    if not _is_unset(matrix):
        if len(matrix) != 16:
            raise InvalidParameterError('lidar_to_camera.matrix',
                                        f'needs 16 values (row-major 4x4), got {len(matrix)}')
        try:
            return RigidTransform.from_matrix(np.asarray(matrix, float).reshape(4, 4))
        except ValueError as error:
            raise InvalidParameterError('lidar_to_camera.matrix', str(error)) from error
    if _is_unset(translation) and _is_unset(rotation):
        return None
    translation = [0.0, 0.0, 0.0] if _is_unset(translation) else translation
    rotation = [0.0, 0.0, 0.0, 1.0] if _is_unset(rotation) else rotation
    if len(translation) != 3:
        raise InvalidParameterError('lidar_to_camera.translation',
                                    f'needs 3 values [x, y, z], got {len(translation)}')
    if len(rotation) != 4:
        raise InvalidParameterError('lidar_to_camera.rotation',
                                    f'needs 4 values [x, y, z, w], got {len(rotation)}')
    try:
        return RigidTransform.from_translation_quaternion(np.asarray(translation, float),
                                                          np.asarray(rotation, float))
    except ValueError as error:
        raise InvalidParameterError('lidar_to_camera.rotation', str(error)) from error


@dataclass(frozen=True)
class CalibrationCheckSettings:
    """The node's background calibration check (``calibration_check.*``)."""

    enabled: bool = True
    window: int = 10
    period_s: float = 30.0
    #: How the check searches and decides: ``lrda calibrate``'s, with the node's tolerance.
    check: CheckConfig = CheckConfig()
    apply: bool = False

    @property
    def sample_interval_s(self) -> float:
        """Return the least time between two frames joining the window."""
        return self.period_s / self.window

    @property
    def partial_after_s(self) -> float:
        """Return how long without a new image makes a window that cannot fill be checked."""
        return self.period_s / 2


@dataclass(frozen=True)
class NodeSettings:
    """Validated settings of the completion node."""

    model: str
    tto: TTOConfig
    #: Camera names; empty: one camera on the unprefixed topics.
    cameras: tuple[str, ...]
    batch_encoding: bool
    projection: ProjectionConfig
    image_is_rectified: bool
    image_transport: str
    sync_queue_size: int
    sync_slop: float
    use_tf: bool
    extrinsic: RigidTransform | None
    tf_timeout: float
    publish_sparse_depth: bool
    publish_depth_colored: bool
    publish_points_dense: bool
    points_stride: int
    colormap_range: tuple[float | None, float | None]
    holdout_fraction: float
    diagnostics_period: float
    time_budget: float
    fusion: TemporalFusionConfig = TemporalFusionConfig()
    #: The frame temporal fusion looks the camera's pose up in.
    fusion_fixed_frame: str = 'odom'
    #: How clouds are moved to the image's stamp (motion.*).
    motion: MotionConfig = MotionConfig()
    #: Each camera's point cloud topics, relative: one per LiDAR.
    point_topics: tuple[str, ...] = ('points',)
    calibration: CalibrationCheckSettings = CalibrationCheckSettings()

    @property
    def pairing(self) -> PairingRule:
        """Return how clouds are paired with images (sync.* and motion.*): node and offline."""
        return PairingRule(self.sync_slop, self.sync_queue_size, self.motion)

    @property
    def uses_tf_extrinsic(self) -> bool:
        """Return whether the LiDAR -> camera transform is looked up in tf2 (no override)."""
        return self.use_tf and self.extrinsic is None

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> 'NodeSettings':
        """Validate a name -> value mapping; raise InvalidParameterError naming the culprit."""
        merged = {spec.name: spec.default for spec in PARAMETERS}
        merged.update(values)
        for name, value in merged.items():
            spec = SPECS.get(name)
            reason = spec.check(value) if spec is not None else None
            if reason:
                raise InvalidParameterError(name, reason)
        v = merged
        if v['min_depth'] >= v['max_depth']:
            raise InvalidParameterError(
                'max_depth', f"must exceed min_depth ({v['min_depth']}), got {v['max_depth']}")
        unknown = unknown_device(v['device'])  # a name torch cannot parse: refused without it
        if unknown:
            raise InvalidParameterError('device', unknown)
        if v['device'] not in ALWAYS_AVAILABLE_DEVICES:
            from ..engine.model import resolve_device  # torch: once the cheaper checks passed
            try:
                resolve_device(v['device'])
            except ValueError as error:
                raise InvalidParameterError('device', str(error)) from error
        try:
            tto = TTOConfig(
                iterations=v['iterations'], learning_rate=v['learning_rate'],
                lora_rank=v['lora_rank'], lora_alpha=v['lora_alpha'], device=v['device'],
                dtype=v['dtype'], processing_size=v['processing_size'] or None,
                min_depth=v['min_depth'], max_depth=v['max_depth'], far_depth=v['far_depth'],
                min_points=v['min_points'],
                # 'skip': the engine refuses the frame (its count of usable points), the node
                # drops it as too_few_points.
                few_points=(FewPointsPolicy.ERROR if v['few_points'] == 'skip'
                            else FewPointsPolicy.ALIGN),
                warm_start=v['warm_start'], warm_iterations=v['warm_iterations'],
                scene_cut_factor=v['scene_cut_factor'],
                convergence_tol=v['convergence_tol'] or None, schedule=v['schedule'],
                tail_strips=v['tail_strips'],
                compile=v['compile'], encoder_backend=v['encoder_backend'],
                deterministic=v['deterministic'])
        except ConfigError as error:
            raise _parameter_error(error) from error
        try:
            projection = ProjectionConfig(
                min_range=v['projection.min_range'], max_range=v['projection.max_range'],
                remove_occluded=v['projection.remove_occluded'],
                occlusion_window=v['projection.occlusion_window'],
                occlusion_margin=v['projection.occlusion_margin'])
        except ConfigError as error:
            raise _parameter_error(error, 'projection.') from error
        colormap = (v['colormap.min_depth'] or None, v['colormap.max_depth'] or None)
        if colormap[0] and colormap[1] and colormap[0] >= colormap[1]:
            raise InvalidParameterError('colormap.max_depth', 'must exceed colormap.min_depth')
        if colormap[0] and colormap[0] >= v['max_depth']:
            # Output beyond max_depth is NaN: such a near end leaves nothing to colour.
            raise InvalidParameterError(
                'colormap.min_depth', f"must be below max_depth ({v['max_depth']}), got "
                f'{colormap[0]}')
        return cls(
            model=v['model'], tto=tto, cameras=camera_names(v['cameras']),
            batch_encoding=v['batch_encoding'], projection=projection,
            image_is_rectified=v['image_is_rectified'], image_transport=v['image_transport'],
            sync_queue_size=v['sync.queue_size'],
            sync_slop=v['sync.slop'], use_tf=v['lidar_to_camera.use_tf'],
            extrinsic=extrinsic_override(v['lidar_to_camera.translation'],
                                         v['lidar_to_camera.rotation'],
                                         v['lidar_to_camera.matrix']),
            tf_timeout=v['tf_timeout'], publish_sparse_depth=v['publish.sparse_depth'],
            publish_depth_colored=v['publish.depth_colored'],
            publish_points_dense=v['publish.points_dense'],
            points_stride=v['publish.points_stride'], colormap_range=colormap,
            holdout_fraction=v['evaluation.holdout_fraction'],
            diagnostics_period=v['diagnostics_period'], time_budget=v['time_budget'],
            fusion=TemporalFusionConfig(weight=v['temporal_fusion.weight']),
            fusion_fixed_frame=_frame_id('temporal_fusion.fixed_frame',
                                         v['temporal_fusion.fixed_frame']),
            motion=motion_config(v), point_topics=point_topic_names(v['point_topics']),
            calibration=CalibrationCheckSettings(
                v['calibration_check.enabled'], v['calibration_check.window'],
                v['calibration_check.period'], CheckConfig().with_rotation_tolerance(
                    v['calibration_check.rotation_tolerance']), v['calibration_check.apply']))


def motion_config(v: Mapping[str, Any]) -> MotionConfig:
    """Return the motion alignment the ``motion.*`` values give."""
    azimuth = None
    if v['motion.azimuth_times']:
        azimuth = AzimuthSweep(period_s=v['motion.rotation_period'],
                               clockwise=v['motion.rotation_direction'] == 'clockwise',
                               start_azimuth_deg=v['motion.sweep_start_azimuth'],
                               stamp_azimuth_deg=v['motion.stamp_azimuth'])
    return MotionConfig(enabled=v['motion.align'],
                        fixed_frame=_frame_id('motion.fixed_frame', v['motion.fixed_frame']),
                        time_field=v['motion.time_field'],
                        max_point_offset_s=v['motion.max_point_offset'], azimuth=azimuth)
