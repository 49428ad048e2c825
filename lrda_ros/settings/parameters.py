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
The completion node's parameters: one table of specs, each value checked against its spec.

Kept free of ROS so validation is testable anywhere; the node turns each spec into a declared
parameter with a descriptor (description, range, read-only), and
:meth:`.node_settings.NodeSettings.from_values` validates a whole set of values.
"""

from __future__ import annotations

import array
from dataclasses import dataclass
import difflib
from typing import Any

from ..calibration import CheckConfig
from ..engine.config import DTYPES, FAR_DEPTHS, SCHEDULES
from ..errors import ConfigError


class InvalidParameterError(ConfigError):
    """A parameter value was rejected; ``name`` (also ``field``) says which."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"parameter '{name}': {reason}", field=name)
        self.name = name
        self.reason = reason


@dataclass(frozen=True)
class ParameterSpec:
    """One parameter: default (which fixes its type), description and constraints."""

    name: str
    default: Any
    description: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    #: Needs a restart (model, device, adapter shape, subscriptions).
    read_only: bool = False
    #: Integers inside [minimum, maximum] that are nevertheless invalid (inclusive bounds).
    excluded: tuple[int, int] | None = None
    #: The ROS 2 type, where an empty default cannot tell it ('string array').
    value_type: str = ''

    @property
    def constraints(self) -> str:
        """Return the constraints a range cannot express, in words ('' if none)."""
        if self.choices:
            return 'one of: ' + ', '.join(self.choices)
        if self.excluded:
            low, high = self.excluded
            return (f'{self.minimum:g} or {high + 1} .. {self.maximum:g} ({low} .. {high} '
                    'are invalid)')
        return ''

    @property
    def type_name(self) -> str:
        """Return the ROS 2 parameter type the default fixes (as ros2 param describe says)."""
        return self.value_type or _type_name(self.default)

    def check(self, value: Any) -> str | None:
        """Return why ``value`` is invalid, or None."""
        if self.choices and value not in self.choices:
            return f'must be one of {list(self.choices)}, got {value!r}'
        if self.excluded and self.excluded[0] <= value <= self.excluded[1]:
            return f'must be {self.constraints}, got {value}'
        numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
        if numeric and self.minimum is not None and value < self.minimum:
            return f'must be >= {self.minimum}, got {value}'
        if numeric and self.maximum is not None and value > self.maximum:
            return f'must be <= {self.maximum}, got {value}'
        return None


PARAMETERS: tuple[ParameterSpec, ...] = (
    ParameterSpec('cameras', [], 'Camera names, e.g. [front, left]: each reads <camera>/image, '
                  '<camera>/camera_info and <camera>/points and publishes <camera>/depth, ... '
                  'with its own synchronizer, warm start, counters and /diagnostics status, '
                  'on one model. [] = one camera on image, camera_info, points.',
                  read_only=True, value_type='string array'),
    ParameterSpec('point_topics', ['points'], "Each camera's PointCloud2 topics, relative "
                  "names (under the camera's name with cameras): one per LiDAR. A frame takes a "
                  'cloud of each, every cloud moved to the image stamp with its own frame and '
                  'point times, then all merged and projected as one scan (one z-buffer, one '
                  'occlusion test). [points] = one LiDAR.', read_only=True),
    ParameterSpec('batch_encoding', True, 'Encode frames of several cameras that are ready '
                  'together in one encoder batch (per network input shape).', read_only=True),
    ParameterSpec('model', 'auto', 'Depth model: a Hugging Face hub id, a local Hugging Face '
                  'directory, an official depth_anything_v2_*.pth file, a Depth Anything 3 '
                  'model (da3-small, da3-base, da3-large, da3metric-large, da3mono-large) or '
                  'folder, "demo" (the embedded synthetic-world prior) or "auto" (Depth '
                  'Anything V2 Small if cached or reachable, else a start-up error saying what '
                  'to set).', read_only=True),
    ParameterSpec('device', 'auto', 'Torch device: "auto" (CUDA when present), "cpu", "cuda", '
                  '"cuda:N".', read_only=True),
    ParameterSpec('dtype', 'auto', 'Compute precision of forward passes (autocast; weights '
                  'and the output layers stay float32): "auto" is bfloat16 where the device '
                  'computes it natively (CUDA compute capability 8+, CPUs with AVX512-BF16 or '
                  'AMX), else float32. A device that cannot run the choice stops start-up.',
                  choices=DTYPES, read_only=True),
    ParameterSpec('schedule', 'adaptive', "How the optimization steps are spent: 'adaptive' "
                  '(a frame ends when its loss stops improving, at most iterations steps; a '
                  'warm frame starts from the carried or the unadapted weights, whichever fits '
                  'better; after warm_iterations it ends if it fits as well as the last frame, '
                  'restarts cold if far behind, else goes on), '
                  "'fast' (most steps on coarser features: about a third of the arithmetic, a "
                  "looser fit) or 'paper' (exactly iterations, warm_iterations when warm).",
                  choices=SCHEDULES),
    ParameterSpec('iterations', 40, 'Adam steps per frame on a cold start: the most under the '
                  "'adaptive' and 'fast' schedules, exactly under 'paper' (40).", 0, 1000),
    ParameterSpec('learning_rate', 0.01, 'Adam learning rate (paper: 0.01).', 1e-6, 1.0),
    ParameterSpec('lora_rank', 8, 'Rank of the decoder LoRA adapters (paper: 8).', 1, 256,
                  read_only=True),
    ParameterSpec('lora_alpha', 8.0, 'LoRA scaling numerator (scale = alpha / rank).', 1e-3,
                  1e4, read_only=True),
    ParameterSpec('warm_start', True, 'Carry adapted weights from one frame to the next.'),
    ParameterSpec('warm_iterations', 10, "Adam steps on a warm-started frame ('paper'); under "
                  "'adaptive' and 'fast', the steps after which a warm frame is held against "
                  'the previous one (it ends, goes on or restarts cold).', 0, 1000),
    ParameterSpec('scene_cut_factor', 4.0, "Warm start, 'paper' schedule: a frame whose "
                  "starting loss exceeds this multiple of the previous frame's final loss (both "
                  'relative to a constant prediction) follows a scene cut and runs cold; 0 = '
                  "off, else > 1. 'adaptive' and 'fast' compare the carried start with the "
                  'unadapted one and may restart a frame cold after its warm steps instead (0 '
                  'turns both off).', 0.0, 1e6),
    ParameterSpec('temporal_fusion.weight', 0.0, "Share of the previous frame's depth, moved "
                  'by the camera pose from tf, in each published map where the two agree '
                  '(less flicker; 0.5 halves it); 0 = off.', 0.0, 0.95, read_only=True),
    ParameterSpec('temporal_fusion.fixed_frame', 'odom', 'Temporal fusion: the tf frame the '
                  "camera's pose is looked up in (REP 105 odom; map or world also do).",
                  read_only=True),
    ParameterSpec('convergence_tol', 0.0, 'Plateau rule: a frame ends once its best loss '
                  'improved by at most this share over the last 10 steps; 0 = the '
                  "schedule's (0.001 for 'adaptive' and 'fast', off for 'paper').", 0.0, 1.0),
    ParameterSpec('time_budget', 0.0, 'Anytime mode: seconds per frame from the synchronized '
                  'set to the publish. The optimization stops in time and publishes the best '
                  'iterate so far, so the node keeps a rate on any hardware (the encoder and '
                  'one decode always run). 0 = off: run all iterations.', 0.0, 3600.0),
    ParameterSpec('processing_size', 0, 'Longer side of the network input in pixels (rounded to '
                  'multiples of 14, the patch size, so at least 14); 0 keeps the image size. '
                  'Lower is faster.', 0, 8192, excluded=(1, 13)),
    ParameterSpec('compile', False, 'Run each optimization step (forward, backward, the step '
                  'rules and Adam, the sparse head included) and the final decode under '
                  'torch.compile, one graph each (a CUDA graph per step on CUDA); compiled on a '
                  'synthetic frame when the first frame of an image size comes (that frame '
                  'waits, then is dropped as compiling), for any LiDAR point count; a '
                  "frame's first step runs eagerly. For CUDA, where a step is otherwise "
                  'hundreds of kernel launches (its speed there unmeasured); on a CPU it does '
                  'not pay (0.95x eager at ViT-S VGA) after a minute of compilation per '
                  'resolution (doc/performance.md). '
                  'Depth Anything V2 or 3 with tail_strips 1 only; other combinations stop '
                  'start-up with the reason.', read_only=True),
    ParameterSpec('deterministic', False, 'Compute a frame the same way on every run: the '
                  "adapted layers' form fixed (lora_path auto's timed choice off), cuDNN's "
                  'deterministic algorithms and IEEE float32 (no TF32) on CUDA; may be slower.',
                  read_only=True),
    ParameterSpec('encoder_backend', 'torch', 'Where the encoder runs: "torch", "onnxruntime" '
                  '(exported to ONNX once per model and input size, cached in '
                  '~/.cache/lrda_ros/onnx) or "tensorrt" (ONNX Runtime with TensorRT). A '
                  'backend that cannot run here stops start-up with the reason.',
                  choices=('torch', 'onnxruntime', 'tensorrt'), read_only=True),
    ParameterSpec('tail_strips', 1, "Compute the decoder's high-resolution tail in this many "
                  'bands of rows (exact; recomputed in the backward pass): much less memory at '
                  'high resolution, steps up to ~2x slower. 1 = off.', 1, 256),
    ParameterSpec('min_points', 32, 'Fewest projected LiDAR pixels to run the optimization.',
                  1, 10_000_000),
    ParameterSpec('few_points', 'align', "Below min_points: 'align' publishes the prior aligned "
                  "by scale/shift only; 'skip' drops the frame (counted).",
                  choices=('align', 'skip')),
    ParameterSpec('min_depth', 0.1, 'Nearest valid depth in metres (input and output); nearer '
                  'output is -Inf (REP 118: too close).', 1e-3,
                  1e3),
    ParameterSpec('max_depth', 120.0, 'Farthest valid depth in metres; farther output is '
                  'far_depth.', 0.1, 1e4),
    ParameterSpec('far_depth', 'too_far', 'What depth holds beyond max_depth and on the sky of '
                  "models with a sky head (Depth Anything 3 metric and mono): 'too_far' (+Inf, "
                  "REP 118; no point in points_dense), 'no_depth' (NaN) or 'clamp' (max_depth).",
                  choices=FAR_DEPTHS),
    ParameterSpec('projection.min_range', 0.5, 'Drop LiDAR points closer than this (metres '
                  'from the sensor).', 0.0, 1e3),
    ParameterSpec('projection.max_range', 120.0, 'Drop LiDAR points farther than this (metres '
                  'from the sensor).', 0.1, 1e4),
    ParameterSpec('projection.remove_occluded', True, 'Drop LiDAR points that show through '
                  'nearer surfaces because LiDAR and camera sit apart.'),
    ParameterSpec('projection.occlusion_window', 7, 'Window (odd, pixels) of the occlusion '
                  'test.', 3, 51),
    ParameterSpec('projection.occlusion_margin', 0.1, 'A point is occluded when it is this '
                  'fraction farther than the nearest point in its window.', 0.0, 10.0),
    ParameterSpec('image_is_rectified', False, 'The image is rectified (image_rect): project '
                  'with the P matrix and no distortion. false (a raw image): project with K and '
                  "the camera_info's distortion (plumb_bob, rational_polynomial, equidistant).",
                  read_only=True),
    ParameterSpec('image_transport', 'raw', "How the image arrives: 'raw' (sensor_msgs/Image on "
                  "image) or 'compressed' (sensor_msgs/CompressedImage, JPEG or PNG, on "
                  'image/compressed, the image_transport convention).',
                  choices=('raw', 'compressed'), read_only=True),
    ParameterSpec('sync.queue_size', 10, 'Messages kept per input for time synchronization.',
                  1, 1000, read_only=True),
    ParameterSpec('sync.slop', 0.05, 'Largest stamp difference (s) of a synchronized set. '
                  "With motion.align a cloud counts at its sweep's middle (from its point times "
                  'or azimuth sweep), so half a sweep (0.05 s at 10 Hz) pairs any camera phase '
                  'with the sweep that spans it, however the driver stamps.', 0.0, 10.0,
                  read_only=True),
    ParameterSpec('lidar_to_camera.use_tf', True, 'Look up the LiDAR->camera transform in tf2 '
                  '(ignored when an override below is set or tf2_ros is missing).'),
    ParameterSpec('lidar_to_camera.translation', [0.0], 'Override: translation [x, y, z] (m) of '
                  'T_camera_lidar (maps LiDAR points into the camera optical frame); [] or [0.0] '
                  'for none: no shift when only the rotation is set.'),
    ParameterSpec('lidar_to_camera.rotation', [0.0], 'Override: rotation quaternion [x, y, z, '
                  'w] of T_camera_lidar; [] or [0.0] for none: no rotation when only the '
                  'translation is set.'),
    ParameterSpec('lidar_to_camera.matrix', [0.0], 'Override: row-major 4x4 T_camera_lidar (16 '
                  'values); wins over translation/rotation.'),
    ParameterSpec('tf_timeout', 0.05, 'Seconds to wait for a transform.', 0.0, 10.0),
    ParameterSpec('motion.align', True, "Move each LiDAR point to where it was at the image's "
                  "stamp, through motion.fixed_frame: the LiDAR at the point's time, then at "
                  "the image's (two tf2 look-ups per cloud, constant velocity between), and "
                  'pair each image with the cloud whose sweep spans it. Where the fixed-frame '
                  'chain is missing the frame goes out with the static extrinsic, counted on '
                  '/diagnostics and warned about once per cause. false = one transform per '
                  'cloud, as for a robot standing still, clouds paired by their header stamps.',
                  read_only=True),
    ParameterSpec('motion.fixed_frame', 'odom', 'Motion alignment: the tf frame that stands '
                  'still while the robot moves (REP 105 odom; map or world also do).'),
    ParameterSpec('motion.time_field', 'auto', "Motion alignment: the clouds' per-point time "
                  "field. 'auto' recognizes the Ouster (t), Velodyne (time), Autoware "
                  "(time_stamp), Livox, Hesai and RoboSense (timestamp) layouts; '' reads none; "
                  'a name reads that field of one of those layouts.'),
    ParameterSpec('motion.max_point_offset', 0.25, 'Motion alignment: a point time further '
                  "than this (s) from its cloud's stamp is counted (outside_sweep) and taken "
                  'as the stamp.', 0.001, 10.0),
    ParameterSpec('motion.azimuth_times', False, 'Motion alignment, clouds without a time '
                  "field (KITTI's): time each point from its azimuth (motion.rotation_period, "
                  'motion.rotation_direction, motion.sweep_start_azimuth, '
                  "motion.stamp_azimuth); false = every point at the cloud's stamp."),
    ParameterSpec('motion.rotation_period', 0.1, 'Azimuth times: seconds per turn of the '
                  'LiDAR head.', 0.001, 10.0),
    ParameterSpec('motion.rotation_direction', 'clockwise', 'Azimuth times: the sense of turn '
                  'seen from above (Velodyne: clockwise).',
                  choices=('clockwise', 'counterclockwise')),
    ParameterSpec('motion.sweep_start_azimuth', 180.0, 'Azimuth times: where each sweep '
                  "starts, degrees (0 = the LiDAR's +x, counter-clockwise positive; KITTI: 180, "
                  'behind).', -360.0, 360.0),
    ParameterSpec('motion.stamp_azimuth', 0.0, 'Azimuth times: where the head points at the '
                  "cloud's stamp, degrees (KITTI: 0, facing forward).", -360.0, 360.0),
    ParameterSpec('publish.sparse_depth', True, 'Publish the projected LiDAR depth.'),
    ParameterSpec('publish.depth_colored', True, 'Publish an rgb8 colour map of the depth.'),
    ParameterSpec('publish.points_dense', False, 'Publish the dense depth as a coloured cloud.'),
    ParameterSpec('publish.points_stride', 2, 'Pixel stride of points_dense.', 1, 64),
    ParameterSpec('colormap.min_depth', 0.0, 'Near end of the colour map (m); 0 picks per frame.',
                  0.0, 1e4),
    ParameterSpec('colormap.max_depth', 0.0, 'Far end of the colour map (m); 0 picks per frame.',
                  0.0, 1e4),
    ParameterSpec('evaluation.holdout_fraction', 0.0, 'Live evaluation: withhold this fraction '
                  'of the projected LiDAR pixels from the optimization and publish them on '
                  'holdout_depth (0 = off; score with evaluator_node).', 0.0, 0.9),
    ParameterSpec('calibration_check.enabled', True, 'Check the LiDAR->camera rotation from the '
                  'data in the background: LiDAR depth discontinuities against image edges over '
                  'a window of recent frames (doc/calibration.md); the result is the '
                  "'calibration' status on /diagnostics. Never delays a frame.",
                  read_only=True),
    ParameterSpec('calibration_check.window', 10, 'Calibration check: frames in its window (at '
                  'least 3); a window that cannot fill (a short looped recording) is checked '
                  'with the frames it holds once no new image has joined for half a period.',
                  3, 100, read_only=True),
    ParameterSpec('calibration_check.period', 30.0, 'Calibration check: seconds between '
                  'checks; a frame joins the window at most every period / window seconds.',
                  1.0, 86400.0, read_only=True),
    ParameterSpec('calibration_check.rotation_tolerance', CheckConfig().rotation_tolerance_deg,
                  'Calibration check: the '
                  'smallest rotation correction (degrees) that turns the status to WARN.',
                  0.05, 10.0, read_only=True),
    ParameterSpec('calibration_check.apply', False, 'Calibration check: once a check finds the '
                  'calibration suspect, apply its rotation correction to every later frame (a '
                  'log line says what changed); false = only report.', read_only=True),
    ParameterSpec('diagnostics_period', 1.0, 'Seconds between /diagnostics updates.', 0.05,
                  3600.0, read_only=True),
)

SPECS = {spec.name: spec for spec in PARAMETERS}


def _type_name(value: Any) -> str:
    if isinstance(value, array.array):  # rclpy's array parameters from a service request
        return ('double' if value.typecode in 'fd' else 'integer') + ' array'
    if isinstance(value, bool):
        return 'bool'
    if isinstance(value, int):
        return 'integer'
    if isinstance(value, float):
        return 'double'
    if isinstance(value, str):
        return 'string'
    if isinstance(value, (list, tuple)) and value:
        return _type_name(value[0]) + ' array'
    return type(value).__name__


def _article(noun: str) -> str:
    return 'an' if noun[0] in 'aeiou' else 'a'


def coerce_value(name: str, value: Any) -> Any:
    """
    Return ``value`` as the type parameter ``name`` takes, or raise InvalidParameterError.

    Only the unambiguous conversions are made: an integer for a double (``max_depth:=80``,
    ``ros2 param set ... max_depth 80``: YAML reads 80 as an integer) and an integer array for
    a double array (YAML ``[1, 0, 0, ...]`` for a matrix). Any other type is an error that
    names the parameter and the type expected.
    """
    spec = SPECS[name]
    if _type_name(value) == spec.type_name:
        return value
    if spec.type_name.endswith(' array') and isinstance(value, (list, tuple, array.array)) \
            and len(value) == 0:
        return []  # an empty array has no element type to tell
    if spec.type_name == 'double' and _is_integer(value):
        return float(value)
    if spec.type_name == 'double array' and isinstance(value, (list, tuple, array.array)) and all(
            _is_integer(v) for v in value):
        return [float(v) for v in value]
    hint = ''
    if spec.type_name == 'integer' and isinstance(value, float) and value.is_integer():
        hint = f' (write {int(value)})'
    raise InvalidParameterError(
        name, f'expects {_article(spec.type_name)} {spec.type_name}, got {value!r} '
        f'({_type_name(value)}){hint}')


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def closest_parameter(name: str) -> str | None:
    """Return the declared parameter name closest to ``name`` (a likely misspelling), if any."""
    matches = difflib.get_close_matches(name, SPECS, n=1, cutoff=0.6)
    return matches[0] if matches else None
