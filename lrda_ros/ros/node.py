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
The completion node: synchronized camera + LiDAR in, dense metric depth topics out.

A thin rclpy shell: subscriber callbacks only hand the newest synchronized set to a worker
thread; the worker converts messages to arrays, looks up the LiDAR->camera transform, runs
:class:`~lrda_ros.pipeline.CompletionPipeline` and publishes. Bad input is logged (throttled),
counted and dropped; it never stops the node.

Topics (all remappable): subscribes ``image`` (or ``image/compressed`` with
``image_transport: compressed``), ``camera_info``, ``points``; publishes ``depth``
(32FC1 metres, NaN = no depth, REP 118), ``depth/camera_info``, ``sparse_depth``,
``depth_colored`` (rgb8), ``points_dense`` (PointCloud2 x, y, z, rgb), ``holdout_depth`` (LiDAR
pixels withheld for live evaluation, when enabled) and ``/diagnostics``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
import os
import sys
import threading
import time
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
import numpy as np
from rcl_interfaces.msg import (
    FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult)
import rclpy
from rclpy.duration import Duration
from rclpy.exceptions import InvalidParameterValueException
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data, QoSProfile
from rclpy.qos_overriding_options import QoSOverridingOptions
from rclpy.time import Time
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, PointCloud2

from .compressed import compressed_image_to_rgb
from .conversions import (
    camera_info_to_camera_model, depth_to_image_msg, image_to_rgb, pointcloud2_to_xyz,
    rgb_to_image_msg, transform_to_rigid, xyz_to_pointcloud2)
from .latest_slot import LatestSlot
from .parameters import InvalidParameterError, NodeSettings, PARAMETERS, ParameterSpec
from .sync import create_synchronized_subscriptions
from ..colormap import colorize_depth
from ..engine import (
    DepthCompleter, InsufficientSparseDepthError, ModelLoadError, UnsupportedPrecisionError)
from ..engine.loading import load_depth_model
from ..geometry import backproject_depth, InvalidCameraError, RigidTransform
from ..pipeline import CompletionPipeline, FrameInputs, FrameOutputs, holdout_split

NODE_NAME = 'completion_node'
_THROTTLE_S = 5.0


def _descriptor(spec: ParameterSpec) -> ParameterDescriptor:
    descriptor = ParameterDescriptor(description=spec.description, read_only=spec.read_only)
    if spec.choices:
        descriptor.additional_constraints = 'one of: ' + ', '.join(spec.choices)
    if spec.minimum is not None and isinstance(spec.default, float):
        descriptor.floating_point_range = [FloatingPointRange(
            from_value=float(spec.minimum), to_value=float(spec.maximum), step=0.0)]
    elif spec.minimum is not None and isinstance(spec.default, int) \
            and not isinstance(spec.default, bool):
        descriptor.integer_range = [IntegerRange(
            from_value=int(spec.minimum), to_value=int(spec.maximum), step=0)]
    return descriptor


@dataclass
class NodeStatistics:
    """Counters and last values shown on /diagnostics."""

    received: int = 0
    processed: int = 0
    replaced: int = 0
    dropped: Counter = field(default_factory=Counter)
    statuses: Counter = field(default_factory=Counter)
    last_loss: float = float('nan')
    last_iterations: int = 0
    last_points: int = 0
    last_processing_s: float = float('nan')
    last_latency_s: float = float('nan')
    #: Seconds from the synchronized set's arrival to the end of its publishing.
    last_frame_s: float = float('nan')
    #: Frames whose optimization the time budget stopped early, and recent iteration counts.
    stopped_at_budget: int = 0
    recent_iterations: list[int] = field(default_factory=list)
    #: Monotonic times of the last completed frames (for the output rate).
    completed_at: list[float] = field(default_factory=list)

    @property
    def output_rate_hz(self) -> float:
        """Return completed frames per second over the recent window (NaN before two)."""
        times = self.completed_at
        if len(times) < 2 or times[-1] <= times[0]:
            return float('nan')
        return (len(times) - 1) / (times[-1] - times[0])

    @property
    def num_dropped(self) -> int:
        """Return all frames dropped for any reason, replaced ones included."""
        return sum(self.dropped.values()) + self.replaced


class CompletionNode(Node):
    """Dense depth from camera + LiDAR by decoder-only LoRA test-time optimization."""

    def __init__(self, **node_options: Any) -> None:
        super().__init__(NODE_NAME, **node_options)
        for spec in PARAMETERS:
            self.declare_parameter(spec.name, spec.default, _descriptor(spec))
        self.settings = NodeSettings.from_values(self._parameter_values())
        choice = load_depth_model(self.settings.model, self.settings.tto.device)
        if choice.warning:
            self.get_logger().warning(choice.warning)
        self.model_choice = choice
        try:
            completer = DepthCompleter(choice, self.settings.tto)
        except UnsupportedPrecisionError as error:
            raise InvalidParameterError('dtype', str(error)) from error
        self.pipeline = CompletionPipeline(completer, self.settings.projection)
        self.stats = NodeStatistics()
        self._stats_lock = threading.Lock()
        self._settings_lock = threading.Lock()
        # Each set carries its arrival time (time.monotonic): the time budget starts there.
        self._slot: LatestSlot[tuple[Image, CameraInfo, PointCloud2, float]] = LatestSlot()
        #: Seconds the last publishing took: the time budget reserves it.
        self._publish_seconds = 0.0
        self._last_warning: dict[str, float] = {}

        self._tf_buffer = self._make_tf_buffer()
        reliable = QoSProfile(depth=5)
        overrides = QoSOverridingOptions.with_default_policies()
        self.pub_depth = self.create_publisher(Image, 'depth', reliable,
                                               qos_overriding_options=overrides)
        self.pub_info = self.create_publisher(CameraInfo, 'depth/camera_info', reliable,
                                              qos_overriding_options=overrides)
        self.pub_sparse = self.create_publisher(Image, 'sparse_depth', reliable,
                                                qos_overriding_options=overrides)
        self.pub_colored = self.create_publisher(Image, 'depth_colored', reliable,
                                                 qos_overriding_options=overrides)
        self.pub_points = self.create_publisher(PointCloud2, 'points_dense', reliable,
                                                qos_overriding_options=overrides)
        self.pub_holdout = self.create_publisher(Image, 'holdout_depth', reliable,
                                                 qos_overriding_options=overrides)
        self.pub_diagnostics = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self.subscriptions_handle = create_synchronized_subscriptions(
            self, [self._image_input(), (CameraInfo, 'camera_info'), (PointCloud2, 'points')],
            qos_profile_sensor_data, self.settings.sync_queue_size, self.settings.sync_slop,
            self._on_synchronized, qos_overriding_options=overrides)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.create_timer(self.settings.diagnostics_period, self._publish_diagnostics)
        self._worker = threading.Thread(target=self._work, name='lrda_worker', daemon=True)
        self._worker.start()
        self.get_logger().info(
            f'model {choice.source!r} ({choice.prediction_space.value}) on '
            f'{choice.device}; {self.settings.tto.iterations} iterations cold, '
            f'{self.settings.tto.warm_iterations if self.settings.tto.warm_start else "no"} '
            f'warm; synchronization: {self.subscriptions_handle.backend}; image: '
            f'{self.settings.image_transport} on {self._image_input()[1]}')

    # --- parameters -----------------------------------------------------------------------

    def _parameter_values(self, changed: list | None = None) -> dict[str, Any]:
        values = {spec.name: self.get_parameter(spec.name).value for spec in PARAMETERS}
        for parameter in changed or []:
            values[parameter.name] = parameter.value
        return values

    def _on_set_parameters(self, parameters: list) -> SetParametersResult:
        try:
            settings = NodeSettings.from_values(self._parameter_values(parameters))
        except InvalidParameterError as error:
            return SetParametersResult(successful=False, reason=str(error))
        with self._settings_lock:
            self.settings = settings
            completer = self.pipeline.completer
            # Only fields that do not change the adapter's shape are mutable (others are
            # read-only parameters).
            completer.config = settings.tto
            self.pipeline.projection = settings.projection
        return SetParametersResult(successful=True)

    # --- input ----------------------------------------------------------------------------

    def _image_input(self) -> tuple[type, str]:
        """Return the image subscription's type and topic for ``image_transport``."""
        if self.settings.image_transport == 'compressed':
            # As image_transport does: resolve the base name (remaps apply to it), then append
            # the transport, so '-r image:=/cam/image_raw' reads /cam/image_raw/compressed.
            return CompressedImage, self.resolve_topic_name('image') + '/compressed'
        return Image, 'image'

    def _make_tf_buffer(self):
        if not self.settings.use_tf or self.settings.extrinsic is not None:
            return None
        try:
            from tf2_ros import Buffer, TransformListener
        except ImportError:
            self.get_logger().warning(
                'tf2_ros is not installed and no lidar_to_camera override is set: frames are '
                'dropped until lidar_to_camera.translation/rotation or .matrix is given')
            return None
        buffer = Buffer()
        self._tf_listener = TransformListener(buffer, self)
        return buffer

    def _on_synchronized(self, image: Image, info: CameraInfo, cloud: PointCloud2) -> None:
        with self._stats_lock:
            self.stats.received += 1
        if self._slot.put((image, info, cloud, time.monotonic())):
            with self._stats_lock:
                self.stats.replaced += 1

    def _warn_throttled(self, key: str, message: str) -> None:
        now = time.monotonic()
        if now - self._last_warning.get(key, -_THROTTLE_S) >= _THROTTLE_S:
            self._last_warning[key] = now
            self.get_logger().warning(message)

    def _drop(self, reason: str, message: str) -> None:
        with self._stats_lock:
            self.stats.dropped[reason] += 1
            count = self.stats.dropped[reason]
        self._warn_throttled(reason, f'dropped frame ({reason}, {count} so far): {message}')

    def _extrinsic(self, cloud_frame: str, camera_frame: str,
                   stamp: Any) -> RigidTransform | None:
        if self.settings.extrinsic is not None:
            return self.settings.extrinsic
        if self._tf_buffer is None:
            self._drop('no_transform', 'no LiDAR->camera transform: tf2 unavailable and no '
                       'lidar_to_camera override')
            return None
        try:
            transform = self._tf_buffer.lookup_transform(
                camera_frame, cloud_frame, Time.from_msg(stamp),
                timeout=Duration(seconds=self.settings.tf_timeout))
        except Exception as error:  # tf2 raises several TransformException subclasses
            self._drop('no_transform', f'{cloud_frame} -> {camera_frame}: {error}')
            return None
        return transform_to_rigid(transform)

    def _inputs(self, image: Image, info: CameraInfo,
                cloud: PointCloud2) -> FrameInputs | None:
        try:
            camera = camera_info_to_camera_model(info, rectified=self.settings.image_is_rectified)
        except InvalidCameraError as error:
            self._drop('bad_camera_info', f'camera_info field {error}')
            return None
        try:
            rgb = (compressed_image_to_rgb(image) if self.settings.image_transport == 'compressed'
                   else image_to_rgb(image))
            points = pointcloud2_to_xyz(cloud)
        except ValueError as error:
            self._drop('malformed', str(error))
            return None
        transform = self._extrinsic(cloud.header.frame_id, image.header.frame_id,
                                    cloud.header.stamp)
        if transform is None:
            return None
        return FrameInputs(rgb, camera, points, transform)

    # --- processing -------------------------------------------------------------------------

    def _work(self) -> None:
        while rclpy.ok(context=self.context) and not self._slot.closed:
            frame = self._slot.take(timeout=0.2)
            if frame is None:
                continue
            try:
                self._process(*frame)
            except Exception as error:  # the worker must survive anything a frame throws
                if not rclpy.ok(context=self.context):
                    return  # shutting down mid-frame: nothing to report
                self._drop('error', f'{type(error).__name__}: {error}')

    def _wants_completion(self) -> bool:
        return any(p.get_subscription_count() > 0 for p in
                   (self.pub_depth, self.pub_colored, self.pub_points, self.pub_info))

    def _deadline(self, received_at: float, budget: float) -> float | None:
        """Return when the optimization must end so the frame publishes within its budget."""
        return received_at + budget - self._publish_seconds if budget > 0 else None

    def _process(self, image: Image, info: CameraInfo, cloud: PointCloud2,
                 received_at: float) -> None:
        start = time.perf_counter()
        inputs = self._inputs(image, info, cloud)
        if inputs is None:
            return
        with self._settings_lock:
            settings, pipeline = self.settings, self.pipeline
        try:
            projection = pipeline.project(inputs)
        except ValueError as error:
            self._drop('malformed', str(error))
            return
        sparse = projection.depth
        if settings.holdout_fraction > 0:
            sparse = self._hold_out(sparse, settings.holdout_fraction, image.header)
        if self.pub_sparse.get_subscription_count() > 0 and settings.publish_sparse_depth:
            self.pub_sparse.publish(depth_to_image_msg(np.where(sparse > 0, sparse, np.nan),
                                                       image.header))
        if not self._wants_completion():
            return
        num_points = int(np.count_nonzero(sparse))
        if settings.skip_few_points and num_points < settings.tto.min_points:
            self._drop('too_few_points', f'{num_points} LiDAR pixels, need '
                       f'{settings.tto.min_points}')
            return
        try:
            outputs = pipeline.complete(inputs, projection, sparse,
                                        self._deadline(received_at, settings.time_budget))
        except InsufficientSparseDepthError as error:
            self._drop('too_few_points', str(error))
            return
        except FloatingPointError as error:
            self._drop('non_finite', str(error))
            return
        publish_start = time.monotonic()
        self._publish(image, info, inputs, outputs, settings)
        self._publish_seconds = time.monotonic() - publish_start
        self._record(image, outputs, time.perf_counter() - start,
                     time.monotonic() - received_at)

    def _hold_out(self, sparse: np.ndarray, fraction: float, header: Any) -> np.ndarray:
        """Withhold LiDAR pixels (seeded by the stamp), publish them, return the rest."""
        stamp_ns = header.stamp.sec * 1_000_000_000 + header.stamp.nanosec
        kept, held = holdout_split(sparse, fraction, np.random.default_rng(stamp_ns))
        self.pub_holdout.publish(depth_to_image_msg(np.where(held > 0, held, np.nan), header))
        return kept

    def _publish(self, image: Image, info: CameraInfo, inputs: FrameInputs,
                 outputs: FrameOutputs, settings: NodeSettings) -> None:
        header = image.header
        if self.pub_depth.get_subscription_count() > 0:
            self.pub_depth.publish(depth_to_image_msg(outputs.depth, header))
        if self.pub_info.get_subscription_count() > 0:
            info.header = header
            self.pub_info.publish(info)
        if settings.publish_depth_colored and self.pub_colored.get_subscription_count() > 0:
            near, far = settings.colormap_range
            colored = colorize_depth(outputs.depth, near, far)
            self.pub_colored.publish(rgb_to_image_msg(colored, header))
        if settings.publish_points_dense and self.pub_points.get_subscription_count() > 0:
            points, rows, cols = backproject_depth(outputs.depth, inputs.camera,
                                                   settings.points_stride)
            self.pub_points.publish(xyz_to_pointcloud2(points, header,
                                                       rgb=inputs.rgb[rows, cols]))

    def _record(self, image: Image, outputs: FrameOutputs, seconds: float,
                frame_seconds: float) -> None:
        result = outputs.completion
        latency = (self.get_clock().now() - Time.from_msg(image.header.stamp)).nanoseconds
        with self._stats_lock:
            stats = self.stats
            stats.processed += 1
            stats.statuses[result.status.value] += 1
            stats.last_loss = result.final_loss
            stats.last_iterations = result.iterations
            stats.last_points = result.num_points
            stats.last_processing_s = seconds
            stats.last_frame_s = frame_seconds
            stats.stopped_at_budget += int(result.stopped_at_deadline)
            stats.recent_iterations = (stats.recent_iterations + [result.iterations])[-20:]
            stats.last_latency_s = latency * 1e-9
            stats.completed_at = (stats.completed_at + [time.monotonic()])[-20:]
        self.get_logger().debug(
            f'frame {image.header.stamp.sec}.{image.header.stamp.nanosec:09d}: '
            f'{result.num_points} LiDAR px, {result.iterations} it '
            f'({"warm" if result.warm_started else "cold"}, {result.status.value}), '
            f'encode {result.encode_seconds * 1e3:.0f} ms, optimize '
            f'{result.optimize_seconds * 1e3:.0f} ms, total {seconds * 1e3:.0f} ms, '
            f'loss {result.losses[0] if result.losses else float("nan"):.3g} -> '
            f'{result.final_loss:.3g}')

    # --- diagnostics ------------------------------------------------------------------------

    def _diagnostic_status(self) -> DiagnosticStatus:
        with self._stats_lock:
            stats = self.stats
            values = {
                'frames received': stats.received, 'frames processed': stats.processed,
                'frames dropped': stats.num_dropped,
                'dropped (superseded by a newer frame)': stats.replaced,
                **{f'dropped ({reason})': n for reason, n in sorted(stats.dropped.items())},
                **{f'status {name}': n for name, n in sorted(stats.statuses.items())},
                'frame rate (Hz)': f'{stats.output_rate_hz:.2f}',
                'processing time (s)': f'{stats.last_processing_s:.3f}',
                'latency (s)': f'{stats.last_latency_s:.3f}',
                'last loss': f'{stats.last_loss:.4g}',
                'last iterations': stats.last_iterations,
                'time budget (s)': (f'{self.settings.time_budget:g}'
                                    if self.settings.time_budget > 0 else 'off'),
                'frame time, synchronized set to publish (s)': f'{stats.last_frame_s:.3f}',
                'frames stopped at the time budget': stats.stopped_at_budget,
                'iterations per frame (mean of last 20)': (
                    f'{np.mean(stats.recent_iterations):.1f}'
                    if stats.recent_iterations else 'nan'),
                'last LiDAR pixels': stats.last_points,
                'model': self.model_choice.source,
                'device': str(self.model_choice.device),
                'synchronization': self.subscriptions_handle.backend,
            }
            errors = sum(n for reason, n in stats.dropped.items() if reason != 'too_few_points')
        level, message = DiagnosticStatus.OK, 'completing depth'
        if self.model_choice.is_demo_prior:
            level, message = DiagnosticStatus.WARN, 'running on the demonstration prior'
        if errors:
            level, message = DiagnosticStatus.WARN, f'{errors} frames dropped for errors'
        if stats.received == 0:
            message = 'waiting for synchronized image, camera_info and points'
        return DiagnosticStatus(
            level=level, name=f'{self.get_name()}: depth completion', message=message,
            hardware_id=self.model_choice.source,
            values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])

    def _publish_diagnostics(self) -> None:
        array = DiagnosticArray()
        array.header.stamp = self.get_clock().now().to_msg()
        array.status = [self._diagnostic_status()]
        self.pub_diagnostics.publish(array)

    def destroy_node(self) -> None:
        """Stop the worker thread, then destroy the node."""
        self._slot.close()
        if self._worker.is_alive():
            self._worker.join(timeout=5.0)
        super().destroy_node()


def prefer_large_data_transport() -> None:
    """
    Select Fast DDS's large-data transports (shared memory + TCP) unless already chosen.

    Images and clouds are megabytes; over Fast DDS's default UDP transport they are often
    lost between processes (measured here: 1 to 8 of 10 KITTI images arrived). Other RMWs and
    older Fast DDS releases ignore the variable; set it to DEFAULT to opt out.
    """
    os.environ.setdefault('FASTDDS_BUILTIN_TRANSPORTS', 'LARGE_DATA')


def main(args: list[str] | None = None) -> int:
    """Run the node; exit non-zero with one clear message if it cannot start."""
    prefer_large_data_transport()
    rclpy.init(args=args)
    logger = rclpy.logging.get_logger(NODE_NAME)
    try:
        node = CompletionNode()
    except ModelLoadError as error:
        logger.fatal(f"cannot load the depth model (parameter 'model'): {error}")
        rclpy.try_shutdown()
        return 1
    except (InvalidParameterError, InvalidParameterValueException) as error:
        logger.fatal(f'invalid parameter: {error}')
        rclpy.try_shutdown()
        return 1
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
