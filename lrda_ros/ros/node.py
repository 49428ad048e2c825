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

Topics (all remappable): subscribes ``image``, ``camera_info``, ``points`` (or each of
``point_topics``, one per LiDAR, merged: lrda_ros/ros/lidar_inputs.py); publishes ``depth``
(32FC1 metres, NaN = no depth, REP 118), ``depth/camera_info``, ``sparse_depth``,
``depth_colored`` (rgb8), ``points_dense`` (PointCloud2 x, y, z, rgb), ``holdout_depth`` (LiDAR
pixels withheld for live evaluation, when enabled), ``depth/confidence`` (32FC1, the depth's
header, in [0, 1], 1 = trusted, NaN where the depth is; geometry/confidence.py, for every
model) and ``/diagnostics``. With ``cameras: [front, ...]`` each camera has these topics under
its name, on one model (lrda_ros/ros/cameras.py).

:class:`CompletionCore` holds all behaviour in stages (declare, load, subscribe, unsubscribe,
unload); :class:`CompletionNode` runs the first three at construction, and the managed
:class:`~lrda_ros.ros.lifecycle_node.CompletionLifecycleNode` runs them on its transitions.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
import sys
import threading
import time
import traceback
from typing import Any, Callable, Iterator, TYPE_CHECKING

from diagnostic_msgs.msg import DiagnosticArray
import numpy as np
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data, QoSProfile
from rclpy.qos_overriding_options import QoSOverridingOptions
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, PointCloud2

from .bridges import MessageReader
from .calibration_monitor import CalibrationMonitor
from .camera_inputs import Drop, read_camera_inputs
from .cameras import Camera, encode_ahead, first_camera, node_cameras, PendingFrame
from .declaration import (
    declare_parameters, parameter_values, warn_unknown_parameters, watch_parameters)
from .diagnostics import camera_statuses, status_context
from .latest_slot import LatestSlots
from .lidar_inputs import CloudInputs
from .motion_alignment import MotionAligner
from .stage_times import FrameStages
from .startup import run_node
from .subscriptions import create_synchronized_subscriptions
from .sync_report import report_sync_losses
from .tf_lookup import listen_to_tf, tf2_installed, TransformLookup, TransformUnavailable
from .warning_throttle import WarningThrottle
from ..engine.errors import (CompletionCancelledError, InsufficientSparseDepthError,
                             NonFiniteDepthError, UnsupportedPrecisionError)
from ..engine.names import check_model_path
from ..engine.warm_up import WarmUp
from ..errors import InputError
from ..eval.profiling import Measure
from ..messages.causes import cause_line, STAMP_BACKWARDS
from ..messages.stamps import (
    latency_or_reason, NS_PER_S, stamp_text, stamp_to_ns)
from ..messages.sync_losses import SUPERSEDED
from ..pipeline import CompletionPipeline, FrameInputs, FrameOutputs, HoldoutRule
from ..settings import InvalidParameterError, NodeSettings, PARAMETERS
from ..settings.changes import changed_settings

if TYPE_CHECKING:
    from ..engine import DepthModel, EncodedFrame

NODE_NAME = 'completion_node'
#: attribute -> (type, topic) of every output but /diagnostics.
_OUTPUTS = {
    'pub_depth': (Image, 'depth'), 'pub_info': (CameraInfo, 'depth/camera_info'),
    'pub_sparse': (Image, 'sparse_depth'), 'pub_colored': (Image, 'depth_colored'),
    'pub_points': (PointCloud2, 'points_dense'), 'pub_holdout': (Image, 'holdout_depth'),
}


def _holdout_rule(settings: NodeSettings) -> HoldoutRule:
    """Return the live-evaluation hold-out of the node's settings (lrda eval's rule)."""
    return HoldoutRule(settings.holdout_fraction, settings.tto.seed)


class CompletionCore:
    """
    Dense depth from camera + LiDAR by decoder-only LoRA test-time optimization.

    Mixed into an rclpy Node (plain or lifecycle); every stage is a method so both node
    kinds share one implementation.
    """

    model_choice: DepthModel | None = None
    pipeline: CompletionPipeline | None = None
    cameras: list[Camera]
    _worker: threading.Thread | None = None
    #: Set when the worker met a defect: the process ends with exit code 1.
    failed: bool = False
    # The single camera's state under the node's own names (tests, bag replay, lrda speed).
    stats = first_camera('stats')
    subscriptions_handle = first_camera('subscriptions_handle')
    pub_depth, pub_info, pub_sparse = map(first_camera, ('pub_depth', 'pub_info', 'pub_sparse'))
    pub_colored, pub_points, pub_holdout = map(first_camera, ('pub_colored', 'pub_points',
                                                              'pub_holdout'))
    #: ``depth/confidence`` (geometry/confidence.py).
    pub_confidence = first_camera('pub_confidence')

    # --- stages -----------------------------------------------------------------------------

    def _declare(self) -> None:
        """Declare and validate parameters; create /diagnostics (it reports in every state)."""
        self._stats_lock = threading.Lock()
        self._settings_lock = threading.Lock()
        self._warnings = WarningThrottle(lambda message: self.get_logger().warning(message))
        self._stop = threading.Event()      # the worker ends
        self._active = threading.Event()    # frames are processed only while set
        # Per camera: image, camera_info, a cloud per point topic, and the arrival: monotonic
        # seconds and the node clock (ns).
        self._slots: LatestSlots[str, tuple[Image, CameraInfo, tuple, float, int]] = \
            LatestSlots([])  # the cameras' once the parameters are read
        self._tf: TransformLookup | None = None
        self._calibration: dict[str, CalibrationMonitor] = {}  # per camera, once loaded
        self._reader = MessageReader()  # cv_bridge / sensor_msgs_py where installed
        self._clouds = CloudInputs(self._reader, MotionAligner(self.get_logger().warning,
                                                               self._stats_lock), self._drop)
        declare_parameters(self, PARAMETERS)
        self.settings = NodeSettings.from_values(parameter_values(self, PARAMETERS))
        self.cameras = node_cameras(self.settings.cameras)  # read-only: fixed from here on
        # Each camera's newest set, with its arrival time (time.monotonic): the time budget
        # starts there.
        self._slots = LatestSlots([camera.name for camera in self.cameras])
        self.pub_diagnostics = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        watch_parameters(self, self._settings_with, self._apply_parameters)
        # A steady clock: under use_sim_time the ROS clock stands still without /clock and
        # jumps back whenever a replayed bag loops, and a ROS-time timer goes silent with it.
        self.create_timer(self.settings.diagnostics_period, self._publish_diagnostics,
                          clock=Clock(clock_type=ClockType.STEADY_TIME))

    def _load(self, create_publisher: Callable[..., Any]) -> None:
        """Load the model, create the outputs and start the worker (idle until subscribed)."""
        settings = self.settings
        # torch loads here, once the parameters passed: a bad one costs no seconds of import.
        check_model_path(settings.model, settings.tto.device)
        self._check_fusion_has_tf(tf2_installed())
        from ..engine import DepthCompleter, load_depth_model

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
                                               _holdout_rule(settings), settings.fusion)
            self._warm_up = WarmUp(completer)
        self._tf = self._listen_to_tf()
        overrides = QoSOverridingOptions.with_default_policies()
        outputs = dict(_OUTPUTS, pub_confidence=(Image, 'depth/confidence'))
        for camera in self.cameras:
            camera.publishers = {
                attribute: create_publisher(msg_type, camera.topic(topic), QoSProfile(depth=5),
                                            qos_overriding_options=overrides)
                for attribute, (msg_type, topic) in outputs.items()}
        self._stop = threading.Event()
        self._slots = LatestSlots([camera.name for camera in self.cameras])
        self._worker = threading.Thread(target=self._work, name='lrda_worker', daemon=True)
        self._worker.start()
        logger = self.get_logger()
        self._calibration = {camera.name: CalibrationMonitor(
            settings.calibration, logger.warning, log_info=logger.info, log_error=logger.error)
            for camera in self.cameras}

    def _subscribe(self) -> None:
        """Subscribe to every camera's synchronized inputs: frames flow from now on."""
        self._active.set()
        for camera in self.cameras:
            camera.subscriptions_handle = create_synchronized_subscriptions(
                self, [self._image_input(camera), (CameraInfo, camera.topic('camera_info')),
                       *[(PointCloud2, camera.topic(topic))
                         for topic in self.settings.point_topics]],
                qos_profile_sensor_data, self.settings.sync_queue_size,
                self.settings.sync_slop,
                lambda image, info, *clouds, camera=camera: self._on_synchronized(
                    camera, image, info, clouds),
                on_time_jump=lambda *jump, camera=camera: self._on_time_jump(camera, *jump),
                with_image=(1,), sync_views=[None, None, *[self._cloud_sync_view] * len(
                    self.settings.point_topics)],
                qos_overriding_options=QoSOverridingOptions.with_default_policies())

    def _cloud_sync_view(self, cloud: PointCloud2) -> Any:
        """Return what a cloud is paired by: the pairing rule of every offline path too."""
        return self.settings.pairing.view(cloud)

    def _unsubscribe(self) -> None:
        """Stop processing (a frame in progress is abandoned between steps); keep the model."""
        self._active.clear()
        for camera in self.cameras:
            if camera.subscriptions_handle is not None:
                camera.subscriptions_handle.destroy(self)
            self._slots.discard(camera.name)  # stale once processing resumes

    def _unload(self, destroy_publisher: Callable[[Any], Any]) -> None:
        """Stop and join the worker, destroy the outputs and free the model."""
        self._stop_worker()
        for camera in self.cameras:
            for publisher in camera.publishers.values():
                destroy_publisher(publisher)
            camera.publishers = {}
        if self._tf is not None:  # what configure subscribed to, cleanup unsubscribes
            self._tf.close()
            self._tf = None
        with self._settings_lock:
            self.pipeline = self.model_choice = None

    def _stop_worker(self) -> None:
        """Ask the worker to stop (it checks between optimization steps) and join it."""
        for monitor in getattr(self, '_calibration', {}).values():
            monitor.stop()
        if getattr(self, '_stop', None) is not None:
            self._stop.set()
            self._slots.close()
        if self._worker is not None:
            self._worker.join()  # never time out: torch must not run during teardown
            self._worker = None

    def _log_started(self) -> None:
        choice, tto = self.model_choice, self.settings.tto
        handle = self.subscriptions_handle
        images = ', '.join(self._image_input(camera)[1] for camera in self.cameras)
        cameras = (f'{len(self.cameras)} cameras, batch encoding '
                   f'{"on" if self.settings.batch_encoding else "off"}; '
                   if self.settings.cameras else '')
        self.get_logger().info(
            f'model {choice.source!r} ({choice.prediction_space.value}) on '
            f'{choice.device}; {tto.iterations} iterations cold, '
            f'{tto.warm_iterations if tto.warm_start else "no"} warm; {cameras}synchronization: '
            f'{handle.backend if handle else "not yet"}'
            f'{", clouds by their sweep middle" if self.settings.motion.enabled else ""}; '
            f'image: {self.settings.image_transport} on {images}; '
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

    def _settings_with(self, parameters: list) -> NodeSettings:
        """Return the settings with ``parameters`` changed; raise InvalidParameterError."""
        with self._settings_lock:
            pipeline = self.pipeline
        check = pipeline.completer.model_option_notices if pipeline is not None else None
        return changed_settings(parameter_values(self, PARAMETERS, parameters), check,
                                self._tf is not None, [p.name for p in parameters])

    def _apply_parameters(self, parameters: list) -> None:
        """Store the changed settings: the worker takes them between frames (_frame_settings)."""
        settings = self._settings_with(parameters)
        with self._settings_lock:
            self.settings = settings

    def _frame_settings(self) -> tuple[NodeSettings, CompletionPipeline]:
        """
        Return the settings of the next frames and the pipeline, reconfigured to them.

        Taken once per round of frames, so no frame mixes old and new values.
        """
        with self._settings_lock:
            settings, pipeline = self.settings, self.pipeline
            if pipeline.completer.config is not settings.tto:
                pipeline.reconfigure(settings.tto, settings.projection, _holdout_rule(settings))
        return settings, pipeline

    # --- input ----------------------------------------------------------------------------

    def _image_input(self, camera: Camera) -> tuple[type, str]:
        """Return a camera's image subscription type and topic for ``image_transport``."""
        if self.settings.image_transport == 'compressed':
            # As image_transport does: resolve the base name (remaps apply to it), then append
            # the transport, so '-r image:=/cam/image_raw' reads /cam/image_raw/compressed.
            return CompressedImage, self.resolve_topic_name(camera.topic('image')) + '/compressed'
        return Image, camera.topic('image')

    def _check_fusion_has_tf(self, tf_available: bool) -> None:
        """Refuse temporal fusion without tf2: it fuses frames by the camera's pose."""
        if self.settings.fusion.enabled and not tf_available:
            raise InvalidParameterError(
                'temporal_fusion.weight', "needs the camera's pose from tf2, and tf2_ros is "
                'not installed: set it to 0 or install tf2_ros')

    def _listen_to_tf(self) -> TransformLookup | None:
        settings = self.settings
        if not (settings.uses_tf_extrinsic or settings.fusion.enabled or settings.motion.enabled):
            return None
        lookup = listen_to_tf(self)
        self._check_fusion_has_tf(lookup is not None)
        if lookup is None and settings.uses_tf_extrinsic:
            self.get_logger().warning(
                'tf2_ros is not installed and no lidar_to_camera override is set: frames are '
                'dropped until lidar_to_camera.translation/rotation or .matrix is given')
        return lookup

    def _on_synchronized(self, camera: Camera, image: Image, info: CameraInfo,
                         clouds: tuple[PointCloud2, ...]) -> None:
        with self._stats_lock:
            camera.stats.received += 1
        arrival = (time.monotonic(), self.get_clock().now().nanoseconds)
        if self._slots.put(camera.name, (image, info, clouds, *arrival)):
            with self._stats_lock:
                camera.stats.replaced += 1
                replaced = camera.stats.replaced
            self._warn(camera, SUPERSEDED, cause_line(
                SUPERSEDED, replaced, 'a synchronized set was replaced by a newer one before '
                'the worker took it: frames arrive faster than they are completed '
                '(time_budget bounds the time per frame)'))

    def _on_time_jump(self, camera: Camera, topic: str, previous_ns: int,
                      stamp_ns: int) -> None:
        """Count and report a stamp going back on an input; the synchronizer has reset."""
        with self._stats_lock:
            camera.stats.stamp_backwards[topic] += 1
            count = camera.stats.stamp_backwards[topic]
        # One cause for every input: a bag loop sends each input's stamps back at once. The
        # warnings held back are counted per input, as the line names one.
        self._warn(camera, STAMP_BACKWARDS, cause_line(
            STAMP_BACKWARDS, count, subject=topic, text=(
                f'{previous_ns / NS_PER_S:.3f} s, then {stamp_ns / NS_PER_S:.3f} s; treated '
                'as a time jump (a bag loop, a clock reset): queued messages of the old '
                'timeline are dropped and the next frame starts cold (no warm start)')),
            subject=topic)

    def _warn_throttled(self, key: str, message: str, subject: str = '') -> None:
        """Log ``message`` at once, then at most once a minute per ``key`` with a count."""
        self._warnings.warn(key, message, subject)

    def _warn(self, camera: Camera, key: str, message: str, subject: str = '') -> None:
        """Warn about one camera, throttled per camera and ``key`` (``subject``: its input)."""
        self._warn_throttled(f'{camera.name}|{key}' if camera.name else key,
                             camera.label + message, subject)

    def _drop(self, camera: Camera, reason: str, message: str, kind: str = '') -> None:
        """
        Count a camera's dropped frame and warn, throttled per reason and ``kind`` of input.

        ``kind`` (the input at fault: image, camera_info, points) keeps a second fault of
        another input visible within the throttle window.
        """
        with self._stats_lock:
            camera.stats.dropped[reason] += 1
            count = camera.stats.dropped[reason]
        self._warn(camera, f'{reason}:{kind}',
                   cause_line(reason, count, f'{kind} {message}' if kind else message))

    def _camera_pose(self, camera: Camera, settings: NodeSettings, camera_frame: str,
                     stamp: Any) -> np.ndarray | None:
        """Return the camera's pose for temporal fusion (None: off, or counted as unknown)."""
        if not settings.fusion.enabled or self._tf is None:
            return None
        try:
            return self._tf.lookup(settings.fusion_fixed_frame, camera_frame, stamp,
                                   settings.tf_timeout).as_matrix()
        except TransformUnavailable as error:
            with self._stats_lock:
                camera.stats.unfused_no_pose += 1
                count = camera.stats.unfused_no_pose
            self._warn(camera, 'unfused_no_pose', f'published without temporal fusion ({count} '
                       f'so far): no camera pose, {settings.fusion_fixed_frame} -> '
                       f'{camera_frame}: {error}')
            return None

    def _inputs(self, camera: Camera, settings: NodeSettings, image: Image, info: CameraInfo,
                clouds: tuple[PointCloud2, ...]) -> FrameInputs | None:
        """Read the messages into arrays; an unusable one is a counted drop (None)."""
        read = read_camera_inputs(self._reader, settings, image, info, clouds)
        if isinstance(read, Drop):
            self._drop(camera, *read)
            return None
        rgb, model = read
        lidar = self._clouds.read(camera, settings, self._tf, image, clouds)
        if lidar is None:
            return None
        pose = self._camera_pose(camera, settings, image.header.frame_id, image.header.stamp)
        stamp_ns = stamp_to_ns(image.header.stamp)
        monitor = self._calibration.get(camera.name)
        if monitor is not None:  # the given extrinsic is checked; a correction applied after
            monitor.offer(FrameInputs.from_clouds(rgb, model, lidar, stamp_ns))
            lidar = monitor.corrected(lidar)
        return FrameInputs.from_clouds(rgb, model, lidar, stamp_ns, pose)

    # --- processing -------------------------------------------------------------------------

    def _should_stop(self) -> bool:
        return self._stop.is_set() or not self._active.is_set()

    def _work(self) -> None:
        stop, slots = self._stop, self._slots
        by_name = {camera.name: camera for camera in self.cameras}
        while not stop.is_set():
            ready = slots.take_all(timeout=0.2)
            if not ready or not self._active.is_set():
                continue
            try:
                self._process_round([(by_name[name], frame) for name, frame in ready])
            except CompletionCancelledError:
                continue  # stopping or deactivated: the frames are abandoned on purpose
            except Exception:  # a defect, not an input: stop the node loudly (exit code 1)
                self.get_logger().fatal(f'internal error, stopping:\n{traceback.format_exc()}')
                self.failed = True
                return

    @contextmanager
    def _frame_errors(self, camera: Camera) -> Iterator[None]:
        """Make a frame the pipeline cannot use its camera's counted drop, never fatal."""
        try:
            yield
        except InputError as error:
            self._drop(camera, 'malformed', f'{type(error).__name__}: {error}', error.field or '')

    def _process_round(self, ready: list[tuple[Camera, tuple]]) -> None:
        """Complete the newest frame of each camera that has one, one camera after another."""
        pending = []
        settings, pipeline = self._frame_settings()  # one snapshot for the whole round
        for camera, frame in ready:
            with self._frame_errors(camera):
                prepared = self._prepare(camera, settings, pipeline, *frame)
                if prepared is not None and self._compiled_for(prepared):
                    pending.append(prepared)
        for frame, encoded in zip(pending, encode_ahead(pending)):
            with self._frame_errors(frame.camera):
                self._complete(frame, encoded)

    def _compiled_for(self, frame: PendingFrame) -> bool:
        """Compile for a new size first (compile: true; engine/warm_up.py): its frame is stale."""
        height, width = frame.prepared.sparse_depth.shape
        if not self._warm_up.needed(height, width):
            return True
        seconds = self._warm_up.run(height, width, frame.camera.stream, self.get_logger().info)
        self._drop(frame.camera, 'compiling', f'compiled for {width}x{height} in {seconds:.0f} s')
        return False

    def _prepare(self, camera: Camera, settings: NodeSettings, pipeline: CompletionPipeline,
                 image: Image, info: CameraInfo, clouds: tuple[PointCloud2, ...],
                 received_at: float, received_clock_ns: int) -> PendingFrame | None:
        """Read and project a camera's frame, publish its LiDAR maps; None: nothing to do."""
        start = time.perf_counter()
        inputs = self._inputs(camera, settings, image, info, clouds)
        if inputs is None:
            return None
        read_seconds = time.perf_counter() - start
        if camera.last_frame_ns is not None and inputs.stamp_ns < camera.last_frame_ns:
            # Time went back (a bag loop): the adapted decoder belongs to another sequence.
            pipeline.reset(camera.stream)
        camera.last_frame_ns = inputs.stamp_ns
        projecting = time.perf_counter()
        prepared = pipeline.prepare(inputs)  # an InputError here is the worker's counted drop
        project_seconds = time.perf_counter() - projecting
        camera.publish_lidar_maps(prepared, image.header, settings)
        if not camera.wants_completion():
            return None
        if camera.subscribed('pub_confidence'):  # its support computes while the engine runs
            pipeline.start_support(prepared)
        return PendingFrame(camera, image, info, prepared, settings, pipeline, received_at,
                            received_clock_ns, time.perf_counter() - start, read_seconds,
                            project_seconds, time.perf_counter() - projecting - project_seconds)

    def _complete(self, frame: PendingFrame, encoded: EncodedFrame | None) -> None:
        """Complete, publish and count a prepared frame (``encoded``: its batch's features)."""
        start = time.perf_counter()
        camera, settings = frame.camera, frame.settings
        # Live evaluation reports each frame's peak memory, measured as lrda eval measures it.
        measure = Measure(frame.pipeline.completer.model.device) \
            if settings.holdout_fraction > 0 else nullcontext()
        try:
            with measure as measured:
                outputs = frame.pipeline.complete(
                    frame.prepared, camera.deadline(frame.received_at, settings.time_budget),
                    self._should_stop, camera.stream, encoded)
        except InsufficientSparseDepthError as error:
            self._drop(camera, 'too_few_points', str(error))
            return
        except NonFiniteDepthError as error:
            self._drop(camera, 'non_finite', str(error))
            return
        publish_start = time.monotonic()
        camera.publish_outputs(frame.image, frame.info, outputs, settings)
        camera.publish_seconds = time.monotonic() - publish_start
        ahead = encoded.seconds if encoded is not None else 0.0
        frame_seconds = time.monotonic() - frame.received_at
        seconds = frame.prepare_seconds + ahead + time.perf_counter() - start
        stages = FrameStages.of_frame(frame.read_seconds, frame.project_seconds,
                                      outputs.completion,
                                      frame.publish_seconds + camera.publish_seconds, seconds)
        # The node clock at the arrival plus the seconds since: a clock that jumps meanwhile
        # (a looped replay's /clock) does not enter the frame's latency.
        self._record(camera, frame.image, outputs, seconds, frame_seconds,
                     frame.received_clock_ns + round(frame_seconds * NS_PER_S),
                     measured.peak_mb if measured is not None else float('nan'), stages, settings)

    def _record(self, camera: Camera, image: Image, outputs: FrameOutputs, seconds: float,
                frame_seconds: float, clock_ns: int, peak_mb: float, stages: FrameStages,
                settings: NodeSettings) -> None:
        result = outputs.completion
        latency = latency_or_reason(clock_ns, stamp_to_ns(image.header.stamp))
        with self._stats_lock:
            camera.stats.record(result, seconds, frame_seconds, latency,
                                stamp_text(image.header.stamp), peak_mb)
            camera.stats.last_fused_fraction = outputs.fused_fraction
            camera.stats.stages = stages
        if settings.holdout_fraction > 0:
            # Live evaluation: evaluator_node takes each frame's numbers from here.
            self._publish_diagnostics()
        self.get_logger().debug(
            f'{camera.label}frame {stamp_text(image.header.stamp)}: '
            f'{result.num_points} LiDAR px, {result.iterations} it '
            f'({"warm" if result.warm_started else "cold"}, {result.status.value}), '
            f'encode {result.encode_seconds * 1e3:.0f} ms, optimize '
            f'{result.optimize_seconds * 1e3:.0f} ms, total {seconds * 1e3:.0f} ms, '
            f'loss {result.losses[0] if result.losses else float("nan"):.3g} -> '
            f'{result.final_loss:.3g}; stages: {stages.text()}')

    # --- diagnostics ------------------------------------------------------------------------

    def _lifecycle_state(self) -> str:
        """Return the lifecycle state label; a plain node is active from construction."""
        return 'active'

    def _publish_diagnostics(self) -> None:
        for camera in self.cameras:
            report_sync_losses(camera, self.settings, self._stats_lock, self._warn)
        statuses = []
        with self._stats_lock, self._settings_lock:
            choice = self.model_choice
            # The fully qualified name: nodes in different namespaces report apart.
            name = self.get_fully_qualified_name()
            for camera in self.cameras:
                statuses += camera_statuses(
                    camera, name, status_context(camera, self.settings, choice,
                                                 self._conversion()),
                    bool(choice and choice.is_demo_prior), self._calibration.get(camera.name),
                    self._lifecycle_state(), self._active.is_set(),
                    self.settings.diagnostics_period, self.get_logger())
        array = DiagnosticArray()
        array.header.stamp = self.get_clock().now().to_msg()
        array.status = statuses
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
