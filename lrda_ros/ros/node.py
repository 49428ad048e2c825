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

Topics (all remappable): subscribes ``image``, ``camera_info``, ``points``; publishes ``depth``
(32FC1 metres, NaN = no depth, REP 118), ``depth/camera_info``, ``sparse_depth``,
``depth_colored`` (rgb8), ``points_dense`` (PointCloud2 x, y, z, rgb), ``holdout_depth`` (LiDAR
pixels withheld for live evaluation, when enabled), ``depth/confidence`` (32FC1, the depth's
header, in [0, 1], 1 = trusted, NaN where the depth is; geometry/confidence.py, for every
model) and ``/diagnostics``.

:class:`CompletionCore` holds all behaviour in stages (declare, load, subscribe, unsubscribe,
unload); :class:`CompletionNode` runs the first three at construction, and the managed
:class:`~lrda_ros.ros.lifecycle_node.CompletionLifecycleNode` runs them on its transitions.
"""

from __future__ import annotations

from collections import Counter
import sys
import threading
import time
import traceback
from typing import Any, Callable

from diagnostic_msgs.msg import DiagnosticArray
import numpy as np
from rcl_interfaces.msg import SetParametersResult
from rclpy.clock import Clock, ClockType
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data, QoSProfile
from rclpy.qos_overriding_options import QoSOverridingOptions
from rclpy.time import Time
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, PointCloud2

from .bridges import MessageReader
from .builders import depth_to_image_msg, rgb_to_image_msg, xyz_to_pointcloud2
from .declaration import (
    coerce_parameter_types, declare_parameters, keep_declared_types, parameter_values,
    warn_unknown_parameters)
from .diagnostics import completion_status, NodeStatistics, STAMP_BACKWARDS
from .latest_slot import LatestSlot
from .parameters import InvalidParameterError, NodeSettings, PARAMETERS
from .startup import run_node
from .subscriptions import create_synchronized_subscriptions, SynchronizedSubscriptions
from ..colormap import colorize_depth
from ..engine import (
    CompletionCancelledError, DepthCompleter, DepthModel, InsufficientSparseDepthError,
    NonFiniteDepthError, UnsupportedPrecisionError)
from ..engine.loading import load_depth_model
from ..errors import InputError
from ..geometry import backproject_depth, InvalidCameraError, RigidTransform
from ..messages.compressed import compressed_image_to_rgb
from ..messages.conversions import camera_info_to_camera_model, transform_to_rigid
from ..messages.stamps import NS_PER_S, stamp_error, stamp_text, stamp_to_ns
from ..messages.sync_losses import BEYOND_SLOP, suggested_slop_s, SUPERSEDED, SyncLoss
from ..pipeline import CompletionPipeline, FrameInputs, FrameOutputs, HoldoutRule

NODE_NAME = 'completion_node'
_THROTTLE_S = 5.0
#: attribute -> (type, topic) of every output but /diagnostics.
_OUTPUTS = {
    'pub_depth': (Image, 'depth'), 'pub_info': (CameraInfo, 'depth/camera_info'),
    'pub_sparse': (Image, 'sparse_depth'), 'pub_colored': (Image, 'depth_colored'),
    'pub_points': (PointCloud2, 'points_dense'), 'pub_holdout': (Image, 'holdout_depth'),
}


def _holdout_rule(settings: NodeSettings) -> HoldoutRule:
    """Return the live-evaluation hold-out of the node's settings (lrda eval's rule)."""
    return HoldoutRule(settings.holdout_fraction, settings.tto.seed)


def _depth_image(sparse: np.ndarray, header: Any) -> Image:
    """Return a sparse map (0 = none) as a 32FC1 image with NaN = none (REP 118)."""
    return depth_to_image_msg(np.where(sparse > 0, sparse, np.nan), header)


class CompletionCore:
    """
    Dense depth from camera + LiDAR by decoder-only LoRA test-time optimization.

    Mixed into an rclpy Node (plain or lifecycle); every stage is a method so both node
    kinds share one implementation.
    """

    model_choice: DepthModel | None = None
    pipeline: CompletionPipeline | None = None
    subscriptions_handle: SynchronizedSubscriptions | None = None
    #: ``depth/confidence`` (geometry/confidence.py).
    pub_confidence: Any = None
    _worker: threading.Thread | None = None
    #: Set when the worker met a defect: the process ends with exit code 1.
    failed: bool = False

    # --- stages -----------------------------------------------------------------------------

    def _declare(self) -> None:
        """Declare and validate parameters; create /diagnostics (it reports in every state)."""
        self.stats = NodeStatistics()
        self._stats_lock = threading.Lock()
        self._settings_lock = threading.Lock()
        self._last_warning: dict[str, float] = {}
        self._reported_losses: Counter[str] = Counter()
        #: The last processed frame's image stamp: an older one means time went back.
        self._last_frame_ns: int | None = None
        self._stop = threading.Event()      # the worker ends
        self._active = threading.Event()    # frames are processed only while set
        # Each set carries its arrival time (time.monotonic): the time budget starts there.
        self._slot: LatestSlot[tuple[Image, CameraInfo, PointCloud2, float]] = LatestSlot()
        #: Seconds the last publishing took: the time budget reserves it.
        self._publish_seconds = 0.0
        self._tf_buffer = None
        self._reader = MessageReader()  # cv_bridge / sensor_msgs_py where installed
        declare_parameters(self, PARAMETERS)
        self.settings = NodeSettings.from_values(parameter_values(self, PARAMETERS))
        self.pub_diagnostics = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self.add_pre_set_parameters_callback(coerce_parameter_types)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        # A steady clock: under use_sim_time the ROS clock stands still without /clock and
        # jumps back whenever a replayed bag loops, and a ROS-time timer goes silent with it.
        self.create_timer(self.settings.diagnostics_period, self._publish_diagnostics,
                          clock=Clock(clock_type=ClockType.STEADY_TIME))

    def _load(self, create_publisher: Callable[..., Any]) -> None:
        """Load the model, create the outputs and start the worker (idle until subscribed)."""
        settings = self.settings
        choice = load_depth_model(settings.model, settings.tto.device)
        if choice.warning:
            self.get_logger().warning(choice.warning)
        try:
            completer = DepthCompleter(choice, settings.tto)
        except UnsupportedPrecisionError as error:
            raise InvalidParameterError('dtype', str(error)) from error
        for notice in completer.notices:  # options the model runs without, and why
            self.get_logger().info(notice)
        with self._settings_lock:
            self.model_choice = choice
            self.pipeline = CompletionPipeline(completer, settings.projection,
                                               _holdout_rule(settings))
        self._tf_buffer = self._make_tf_buffer()
        overrides = QoSOverridingOptions.with_default_policies()
        for attribute, (msg_type, topic) in _OUTPUTS.items():
            setattr(self, attribute, create_publisher(msg_type, topic, QoSProfile(depth=5),
                                                      qos_overriding_options=overrides))
        self.pub_confidence = create_publisher(Image, 'depth/confidence', QoSProfile(depth=5),
                                               qos_overriding_options=overrides)
        self._stop = threading.Event()
        self._slot = LatestSlot()
        self._worker = threading.Thread(target=self._work, name='lrda_worker', daemon=True)
        self._worker.start()

    def _subscribe(self) -> None:
        """Subscribe to the synchronized inputs: frames flow from now on."""
        self._active.set()
        self.subscriptions_handle = create_synchronized_subscriptions(
            self, [self._image_input(), (CameraInfo, 'camera_info'), (PointCloud2, 'points')],
            qos_profile_sensor_data, self.settings.sync_queue_size,
            self.settings.sync_slop, self._on_synchronized, on_time_jump=self._on_time_jump,
            qos_overriding_options=QoSOverridingOptions.with_default_policies())

    def _unsubscribe(self) -> None:
        """Stop processing (a frame in progress is abandoned between steps); keep the model."""
        self._active.clear()
        if self.subscriptions_handle is not None:
            self.subscriptions_handle.destroy(self)
        self._slot.take(timeout=0)  # a pending frame is stale once processing resumes

    def _unload(self, destroy_publisher: Callable[[Any], Any]) -> None:
        """Stop and join the worker, destroy the outputs and free the model."""
        self._stop_worker()
        for attribute in _OUTPUTS:
            publisher = getattr(self, attribute, None)
            if publisher is not None:
                destroy_publisher(publisher)
                setattr(self, attribute, None)
        if self.pub_confidence is not None:
            destroy_publisher(self.pub_confidence)
            self.pub_confidence = None
        self._tf_buffer = self._tf_listener = None
        with self._settings_lock:
            self.pipeline = self.model_choice = None

    def _stop_worker(self) -> None:
        """Ask the worker to stop (it checks between optimization steps) and join it."""
        if getattr(self, '_stop', None) is not None:
            self._stop.set()
            self._slot.close()
        if self._worker is not None:
            self._worker.join()  # never time out: torch must not run during teardown
            self._worker = None

    def _log_started(self) -> None:
        choice, tto = self.model_choice, self.settings.tto
        self.get_logger().info(
            f'model {choice.source!r} ({choice.prediction_space.value}) on '
            f'{choice.device}; {tto.iterations} iterations cold, '
            f'{tto.warm_iterations if tto.warm_start else "no"} warm; synchronization: '
            f'{self.subscriptions_handle.backend if self.subscriptions_handle else "not yet"}; '
            f'image: {self.settings.image_transport} on {self._image_input()[1]}; '
            f'{self._conversion()}')
        self.get_logger().debug('parameters: ' + ', '.join(
            f'{name}={value!r}' for name, value in parameter_values(self, PARAMETERS).items()))

    def _conversion(self) -> str:
        reader = self._reader
        return (f'images via {"cv_bridge" if reader.image_backend == "native" else "numpy"}, '
                f'clouds via '
                f'{"sensor_msgs_py" if reader.cloud_backend == "native" else "numpy"}')

    def destroy_node(self) -> None:
        """Stop and join the worker, then destroy the node (safe after a failed start)."""
        self._stop_worker()
        super().destroy_node()

    # --- parameters -----------------------------------------------------------------------

    def _on_set_parameters(self, parameters: list) -> SetParametersResult:
        try:
            settings = NodeSettings.from_values(parameter_values(self, PARAMETERS, parameters))
        except InvalidParameterError as error:
            keep_declared_types(self, parameters)
            return SetParametersResult(successful=False, reason=str(error))
        with self._settings_lock:
            self.settings = settings
            if self.pipeline is not None:
                # Only fields that do not change the adapter's shape are mutable (others are
                # read-only parameters).
                self.pipeline.completer.config = settings.tto
                self.pipeline.projection = settings.projection
                self.pipeline.holdout = _holdout_rule(settings)
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
                replaced = self.stats.replaced
            self._warn_throttled(SUPERSEDED, (
                f'unsynchronized ({SUPERSEDED}, {replaced} so far): a synchronized set was '
                'replaced by a newer one before the worker took it: frames arrive faster than '
                'they are completed (time_budget bounds the time per frame)'))

    def _on_time_jump(self, topic: str, previous_ns: int, stamp_ns: int) -> None:
        """Count and report a stamp going back on an input; the synchronizer has reset."""
        with self._stats_lock:
            self.stats.stamp_backwards[topic] += 1
            count = self.stats.stamp_backwards[topic]
        self._warn_throttled(f'{STAMP_BACKWARDS}:{topic}', (
            f'{STAMP_BACKWARDS} on {topic} ({count} so far): '
            f'{previous_ns / NS_PER_S:.3f} s, then {stamp_ns / NS_PER_S:.3f} s; treated as a '
            'time jump (a bag loop, a clock reset): queued messages of the old timeline are '
            'dropped and the next frame starts cold (no warm start)'))

    def _warn_throttled(self, key: str, message: str) -> None:
        """Log ``message`` unless one with the same ``key`` was logged in the last seconds."""
        now = time.monotonic()
        if now - self._last_warning.get(key, -_THROTTLE_S) >= _THROTTLE_S:
            self._last_warning[key] = now
            self.get_logger().warning(message)

    def _drop(self, reason: str, message: str, kind: str = '') -> None:
        """
        Count a dropped frame and warn, throttled per reason and ``kind`` of input.

        ``kind`` (the input at fault: image, camera_info, points) keeps a second fault of
        another input visible within the throttle window.
        """
        with self._stats_lock:
            self.stats.dropped[reason] += 1
            count = self.stats.dropped[reason]
        what = f'{reason} {kind}' if kind else reason
        self._warn_throttled(f'{reason}:{kind}',
                             f'dropped frame ({what}, {count} {reason} so far): {message}')

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
        """Read the messages into arrays; an unusable one is a counted drop (None)."""
        for topic, message in zip(('image', 'camera_info', 'points'), (image, info, cloud)):
            problem = stamp_error(message.header.stamp)
            if problem:
                self._drop('malformed', f'{topic}: {problem}', topic)
                return None
        try:
            camera = camera_info_to_camera_model(info, rectified=self.settings.image_is_rectified)
        except InvalidCameraError as error:
            self._drop('bad_camera_info', f'camera_info field {error}', 'camera_info')
            return None
        try:
            rgb = (compressed_image_to_rgb(image) if self.settings.image_transport == 'compressed'
                   else self._reader.image_to_rgb(image))
        except InputError as error:
            self._drop('malformed', f'image: {error}', 'image')
            return None
        try:
            points = self._reader.pointcloud2_to_xyz(cloud)
        except InputError as error:
            self._drop('malformed', f'points: {error}', 'points')
            return None
        transform = self._extrinsic(cloud.header.frame_id, image.header.frame_id,
                                    cloud.header.stamp)
        if transform is None:
            return None
        return FrameInputs(rgb, camera, points, transform, stamp_to_ns(image.header.stamp))

    # --- processing -------------------------------------------------------------------------

    def _should_stop(self) -> bool:
        return self._stop.is_set() or not self._active.is_set()

    def _work(self) -> None:
        stop, slot = self._stop, self._slot
        while not stop.is_set():
            frame = slot.take(timeout=0.2)
            if frame is None or not self._active.is_set():
                continue
            try:
                self._process(*frame)
            except CompletionCancelledError:
                continue  # stopping or deactivated: the frame is abandoned on purpose
            except InputError as error:  # a frame the pipeline cannot use: counted, not fatal
                self._drop('malformed', f'{type(error).__name__}: {error}', error.field or '')
            except Exception:  # a defect, not an input: stop the node loudly (exit code 1)
                self.get_logger().fatal(f'internal error, stopping:\n{traceback.format_exc()}')
                self.failed = True
                return

    def _wants_completion(self) -> bool:
        return any(p is not None and p.get_subscription_count() > 0 for p in
                   (self.pub_depth, self.pub_colored, self.pub_points, self.pub_info,
                    self.pub_confidence))

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
        if self._last_frame_ns is not None and inputs.stamp_ns < self._last_frame_ns:
            # Time went back (a bag loop): the adapted decoder belongs to another sequence.
            pipeline.completer.reset()
        self._last_frame_ns = inputs.stamp_ns
        prepared = pipeline.prepare(inputs)  # an InputError here is the worker's counted drop
        if prepared.heldout_depth is not None:
            self.pub_holdout.publish(_depth_image(prepared.heldout_depth, image.header))
        if self.pub_sparse.get_subscription_count() > 0 and settings.publish_sparse_depth:
            self.pub_sparse.publish(_depth_image(prepared.sparse_depth, image.header))
        if not self._wants_completion():
            return
        try:
            outputs = pipeline.complete(prepared,
                                        self._deadline(received_at, settings.time_budget),
                                        self._should_stop)
        except InsufficientSparseDepthError as error:
            self._drop('too_few_points', str(error))
            return
        except NonFiniteDepthError as error:
            self._drop('non_finite', str(error))
            return
        publish_start = time.monotonic()
        self._publish(image, info, inputs, outputs, settings)
        self._publish_seconds = time.monotonic() - publish_start
        self._record(image, outputs, time.perf_counter() - start,
                     time.monotonic() - received_at)

    def _publish(self, image: Image, info: CameraInfo, inputs: FrameInputs,
                 outputs: FrameOutputs, settings: NodeSettings) -> None:
        header = image.header
        if self.pub_depth.get_subscription_count() > 0:
            self.pub_depth.publish(depth_to_image_msg(outputs.depth, header))
        confidence = self.pub_confidence
        if confidence is not None and confidence.get_subscription_count() > 0:
            confidence.publish(depth_to_image_msg(outputs.confidence, header))
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
            stats.scene_cuts += int(result.scene_cut)
            stats.recent_iterations = (stats.recent_iterations + [result.iterations])[-20:]
            stats.last_latency_s = latency * 1e-9
            stats.last_stamp = stamp_text(image.header.stamp)
            stats.record_completed()
        if self.settings.holdout_fraction > 0:
            # Live evaluation: evaluator_node takes each frame's iterations and time from here.
            self._publish_diagnostics()
        self.get_logger().debug(
            f'frame {stamp_text(image.header.stamp)}: '
            f'{result.num_points} LiDAR px, {result.iterations} it '
            f'({"warm" if result.warm_started else "cold"}, {result.status.value}), '
            f'encode {result.encode_seconds * 1e3:.0f} ms, optimize '
            f'{result.optimize_seconds * 1e3:.0f} ms, total {seconds * 1e3:.0f} ms, '
            f'loss {result.losses[0] if result.losses else float("nan"):.3g} -> '
            f'{result.final_loss:.3g}')

    # --- diagnostics ------------------------------------------------------------------------

    def _check_synchronization(self) -> None:
        """Count what the synchronizer dropped, per reason; warn naming offsets and slop."""
        handle = self.subscriptions_handle
        counts = handle.loss_counts() if handle is not None else None
        if counts is None:
            return
        with self._stats_lock:
            self.stats.sync_losses.update({reason: n - self.stats.sync_losses[reason]
                                           for reason, n in counts.items()})
            self.stats.unsynchronized = sum(counts.values())
        last = handle.last_losses()
        for reason, count in counts.items():
            if count > self._reported_losses[reason] and reason in last:
                self._reported_losses[reason] = count
                self._warn_throttled(f'unsynchronized:{reason}',
                                     self._loss_message(handle, reason, count, last[reason]))
        self._check_first_sets(handle)

    def _loss_message(self, handle: SynchronizedSubscriptions, reason: str, count: int,
                      loss: SyncLoss) -> str:
        slop = self.settings.sync_slop
        text = (f'unsynchronized ({reason}, {count} so far): {handle.backend} dropped '
                f'{handle.offsets_text(loss)}')
        if reason == BEYOND_SLOP:
            needed = suggested_slop_s(round(handle.largest_spread_s() * NS_PER_S))
            return (f'{text}; stamps up to {handle.largest_spread_s():.3f} s apart are beyond '
                    f'sync.slop {slop:g} s: this data needs sync.slop {needed:g} (read-only: '
                    f'-p sync.slop:={needed:g}), or stamps fixed at the source')
        return (f'{text}; no unused message of every input within the slop {slop:g} s: an '
                'input is silent or slower, or sync.queue_size '
                f'{self.settings.sync_queue_size} is too small for the delays between inputs')

    def _check_first_sets(self, handle: SynchronizedSubscriptions) -> None:
        """Warn early when the first messages cannot pair, before the queues overflow."""
        monitor = handle.monitor
        if monitor is None or handle.num_emitted or min(monitor.received) < 3:
            return
        offsets = handle.stamp_offsets()
        spread = max([0.0, *offsets.values()]) - min([0.0, *offsets.values()])
        if len(offsets) < len(handle.topics) - 1 or spread < self.settings.sync_slop:
            return
        described = ', '.join(f'{topic} {offset:+.3f} s' for topic, offset in offsets.items())
        needed = suggested_slop_s(round(spread * NS_PER_S))
        self._warn_throttled('unsynchronized:first_sets', (
            f'no synchronized set yet: latest stamps relative to {handle.topics[0]}: '
            f'{described}; beyond sync.slop {self.settings.sync_slop:g} s: this data needs '
            f'sync.slop {needed:g} (-p sync.slop:={needed:g})'))

    def _lifecycle_state(self) -> str:
        """Return the lifecycle state label; a plain node is active from construction."""
        return 'active'

    def _publish_diagnostics(self) -> None:
        self._check_synchronization()
        with self._stats_lock, self._settings_lock:
            choice, handle = self.model_choice, self.subscriptions_handle
            budget = self.settings.time_budget
            context = {
                'time budget (s)': f'{budget:g}' if budget > 0 else 'off',
                'model': choice.source if choice else '',
                'device': str(choice.device) if choice else '',
                'synchronization': handle.backend if handle else '',
                'conversion': self._conversion(),
            }
            # The fully qualified name: nodes in different namespaces report apart.
            status = completion_status(self.get_fully_qualified_name(), self.stats,
                                       self._lifecycle_state(), context,
                                       bool(choice and choice.is_demo_prior))
        array = DiagnosticArray()
        array.header.stamp = self.get_clock().now().to_msg()
        array.status = [status]
        self.pub_diagnostics.publish(array)


class CompletionNode(CompletionCore, Node):
    """The completion node, running from construction (the default executable)."""

    def __init__(self, **node_options: Any) -> None:
        super().__init__(NODE_NAME, **node_options)
        self._declare()
        self._load(self.create_publisher)
        self._subscribe()
        warn_unknown_parameters(self)
        self._log_started()


def main(args: list[str] | None = None) -> int:
    """Run the node; exit non-zero with one clear message if it cannot start."""
    return run_node(NODE_NAME, CompletionNode, args)


if __name__ == '__main__':
    sys.exit(main())
