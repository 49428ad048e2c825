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
Live evaluation: score the completion node's ``depth`` against a ground-truth depth topic.

Run it beside ``ros2 bag play`` and the completion node; it writes the same report as
``lrda eval``, through the same writer (frames.csv, summary.md/.json, speed_accuracy.png,
sparsification.png, frames/<stamp>.png when ``image`` is available, the same metadata keys)
every ``report_every`` frames and at shutdown. Ground truth is any depth Image topic (32FC1
metres or 16UC1 millimetres), e.g. a dense sensor in the bag, or the completion node's own
``holdout_depth`` when it runs with ``evaluation.holdout_fraction`` > 0. NaN depth is no depth
(left out of the errors, counted in ``coverage``), as in ``lrda eval``.

A depth stamp older than the previous one starts a new loop (a looping bag): the finished
loop's report stays where it is and the next one goes to ``loop_<k>/`` in ``output_dir``.

The temporal alignment error (TAE, eval/temporal.py) of each depth frame against the previous
one needs the camera's K (``camera_info``) and its pose: tf2's lookup from ``tae.fixed_frame``
(default ``odom``) to the depth's frame at its stamp. Without tf2, camera_info or that chain
the TAE is left empty (NaN), and said once in the log.

Each frame's iterations, processing time, final loss and peak memory come from the completion
node's /diagnostics (it publishes them after every frame during live evaluation), matched by
the frame's stamp; without them the time between depth frames stands in for the time per
frame, and the rest is left empty. Each frame's AUSE (and the sparsification figure) is scored
from the completion node's ``depth/confidence`` and ``sparse_depth`` of the same stamp, as
``lrda eval`` scores it; a frame without both has none. The scoring is lrda_ros/eval/live.py;
this node only reads messages into it.
"""

from __future__ import annotations

from pathlib import Path
import sys
import threading
import time

from diagnostic_msgs.msg import DiagnosticArray
import numpy as np
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rclpy.qos_overriding_options import QoSOverridingOptions
from sensor_msgs.msg import CameraInfo, Image

from .startup import run_node
from .subscriptions import create_synchronized_subscriptions
from .tf_lookup import listen_to_tf, TransformLookup, TransformUnavailable
from ..eval.harness import EvalResult
from ..eval.live import diagnostics_stats, draw_live_figure, LiveEvaluation, write_live_report
from ..eval.report import report_metadata
from ..messages.conversions import depth_image_to_array, float_image_to_array, image_to_rgb
from ..messages.stamps import stamp_text, stamp_to_ns
from ..messages.sync_losses import LOSS_REASONS


class EvaluatorNode(Node):
    """Synchronize ``depth`` with ``ground_truth`` and accumulate per-frame metrics."""

    def __init__(self, **node_options) -> None:
        super().__init__('evaluator_node', **node_options)
        declare = self._declare
        self.method = declare('method_name', 'lrda', 'Name of the evaluated configuration.')
        self.output = Path(declare('output_dir', 'out/live_eval', 'Report folder.'))
        self.max_depth = declare('max_depth', 0.0, 'Ignore ground truth beyond (m); 0 = none.')
        self.figures = declare('figures', 5, 'Frames drawn as PNG (needs the image topic).')
        self.report_every = declare('report_every', 10, 'Rewrite the report every N frames.')
        self.slop = declare('sync.slop', 0.01, 'Largest stamp difference of a pair (s).')
        self.source = declare('source', '', 'What is evaluated, for the report (e.g. the bag '
                              'played); empty: not recorded.')
        self.fixed_frame = declare('tae.fixed_frame', 'odom', 'Fixed frame of the camera poses '
                                   'for the temporal alignment error; empty: no TAE.')
        #: The records and what each frame still waits for (pure Python: eval/live.py).
        self.evaluation = LiveEvaluation(self.method, self.max_depth or None)
        self._K: np.ndarray | None = None
        self._tae_problem_logged = False
        #: Loops of a looping bag seen so far (0: the first pass).
        self.loop = 0
        #: The completion node's model and device, from its /diagnostics.
        self._model: dict[str, str] = {}
        self._images: dict[int, Image] = {}
        self._lock = threading.Lock()
        self._last_arrival: float | None = None
        self._figures_drawn = 0
        self._waiting_figures: dict[int, tuple[str, np.ndarray, np.ndarray]] = {}
        self._reported = False
        (self.output / 'frames').mkdir(parents=True, exist_ok=True)
        qos = QoSProfile(depth=10)
        self._sync = create_synchronized_subscriptions(
            self, [(Image, 'depth'), (Image, 'ground_truth')], qos, 20, self.slop,
            self._on_pair, on_time_jump=lambda *jump: None)
        # Reliable: megabyte images between processes are mostly lost best effort. A
        # best-effort camera needs qos_overrides./<image topic>.subscription.reliability.
        overrides = QoSOverridingOptions.with_default_policies()
        self.create_subscription(Image, 'image', self._on_image, qos,
                                 qos_overriding_options=overrides)
        self.create_subscription(DiagnosticArray, '/diagnostics', self._on_diagnostics, 50)
        self.create_subscription(CameraInfo, 'camera_info', self._on_camera_info, qos)
        # The completion node's maps of each frame, for its AUSE (published around its depth).
        self.create_subscription(Image, 'depth/confidence', self._on_confidence, qos)
        self.create_subscription(Image, 'sparse_depth', self._on_sparse_depth, qos)
        self._tf = self._listen_to_tf()
        self.get_logger().info(f'scoring depth against ground_truth as {self.method!r}; '
                               f'report in {self.output}')

    def _listen_to_tf(self) -> TransformLookup | None:
        if not self.fixed_frame:
            return None
        lookup = listen_to_tf(self)
        if lookup is None:
            self._tae_unavailable('tf2_ros is not installed')
        return lookup

    def _tae_unavailable(self, reason: str) -> None:
        if not self._tae_problem_logged:
            self._tae_problem_logged = True
            self.get_logger().warning(f'TAE is not computed: {reason}')

    def _on_camera_info(self, message: CameraInfo) -> None:
        self._K = np.asarray(message.k, dtype=np.float64).reshape(3, 3)

    def _on_confidence(self, message: Image) -> None:
        self._take_map(message, float_image_to_array, self.evaluation.add_confidence)

    def _on_sparse_depth(self, message: Image) -> None:
        self._take_map(message, depth_image_to_array, self.evaluation.add_sparse_depth)

    def _take_map(self, message: Image, read, add) -> None:
        """Hand a frame's map to the evaluation; a message it cannot read is said, not fatal."""
        name = stamp_text(message.header.stamp)
        try:
            values = read(message)
        except ValueError as error:
            self.get_logger().warning(f'frame {name}: no AUSE: {error}')
            return
        with self._lock:
            add(name, values)

    def _camera_pose(self, depth_msg: Image) -> np.ndarray | None:
        """Return the depth camera's pose in ``tae.fixed_frame`` at its stamp, or None."""
        if self._tf is None:
            return None
        try:
            return self._tf.lookup(self.fixed_frame, depth_msg.header.frame_id,
                                   depth_msg.header.stamp).as_matrix()
        except TransformUnavailable as error:
            self._tae_unavailable(f'{self.fixed_frame} -> {depth_msg.header.frame_id}: {error}')
            return None

    def _declare(self, name: str, default, description: str):
        return self.declare_parameter(
            name, default, ParameterDescriptor(description=description)).value

    def _on_diagnostics(self, message: DiagnosticArray) -> None:
        for status in message.status:
            values = {kv.key: kv.value for kv in status.values}
            if values.get('model'):
                self._model = {key: values.get(key, '') for key in ('model', 'device')}
            frame = diagnostics_stats(values)
            if frame is not None:
                with self._lock:
                    self.evaluation.add_stats(*frame)

    def _on_image(self, message: Image) -> None:
        stamp = stamp_to_ns(message.header.stamp)
        with self._lock:
            self._images[stamp] = message
            while len(self._images) > 50:
                del self._images[min(self._images)]
            waiting = self._waiting_figures.pop(stamp, None)
            # Images arrive in stamp order: older waiting frames lost theirs; free their slots.
            for lost in [s for s in self._waiting_figures if s < stamp]:
                del self._waiting_figures[lost]
        if waiting is not None:
            self._draw(message, *waiting)

    def _draw(self, image: Image, name: str, prediction: np.ndarray, truth: np.ndarray) -> None:
        try:
            draw_live_figure(self.folder, self.method, name, image_to_rgb(image), prediction,
                             truth)
        except ValueError as error:
            self.get_logger().warning(f'frame {name}: no figure: {error}')
            return
        with self._lock:
            self._figures_drawn += 1

    def _on_pair(self, depth_msg: Image, truth_msg: Image) -> None:
        now = time.monotonic()
        interval = float('nan') if self._last_arrival is None else now - self._last_arrival
        self._last_arrival = now
        stamp = depth_msg.header.stamp
        name = stamp_text(stamp)
        if self.evaluation.starts_next_pass(stamp_to_ns(stamp)):
            self._start_next_loop()
        if self._K is None and self.fixed_frame:
            self._tae_unavailable('no camera_info received')
        pose = self._camera_pose(depth_msg)
        stamp_ns = stamp_to_ns(stamp)
        with self._lock:
            try:
                prediction = float_image_to_array(depth_msg)
                truth = depth_image_to_array(truth_msg)
                self.evaluation.score(name, prediction, truth, self._K, pose, interval)
            except ValueError as error:
                self.get_logger().warning(f'frame {name} not scored: {error}')
                return
            count = len(self.result.records)
            image = self._images.get(stamp_ns)
            wants_figure = self._figures_drawn + len(self._waiting_figures) < self.figures
            if wants_figure and image is None:  # the image may still be on its way
                self._waiting_figures[stamp_ns] = (name, prediction, truth)
        if wants_figure and image is not None:
            self._draw(image, name, prediction, truth)
        if count % max(1, self.report_every) == 0:
            self.write_report()

    def destroy_node(self) -> None:
        """Write the final report (logging while the context is still valid), then destroy."""
        if not self._reported:
            self._reported = True
            summary = self.write_report()
            if summary:
                self.get_logger().info(f'final report in {self.folder}: {summary}')
        super().destroy_node()

    @property
    def folder(self) -> Path:
        """Return the report folder of the current loop."""
        return self.output / f'loop_{self.loop}' if self.loop else self.output

    def _start_next_loop(self) -> None:
        """Finish the loop's report and start the next one in a folder of its own."""
        self.write_report()
        with self._lock:
            self.loop += 1
            self.evaluation.restart()
            self._figures_drawn = 0
            self._waiting_figures.clear()
        self.get_logger().info(f'the depth stamp went back: loop {self.loop} of the input, '
                               f'reported in {self.folder}')

    def metadata(self, result: EvalResult) -> dict:
        """Return what the report records besides the scores: the keys lrda eval writes."""
        counts = self._sync.loss_counts() or {}
        return report_metadata(
            methods=[self.method], model=self._model.get('model') or None,
            device=self._model.get('device') or None,
            options={'max_depth': self.max_depth, 'sync.slop': self.slop,
                     'tae.fixed_frame': self.fixed_frame,
                     'figures': self.figures, 'report_every': self.report_every,
                     'output_dir': str(self.output)},
            source=self.source or None, engine=None,
            topics={role: self.resolve_topic_name(role)
                    for role in ('depth', 'ground_truth', 'image')},
            frames=result.num_frames,
            sync_losses={reason: counts.get(reason, 0) for reason in LOSS_REASONS},
            loop=self.loop)

    @property
    def result(self) -> EvalResult:
        """Return the current loop's records."""
        return self.evaluation.result

    def write_report(self) -> dict:
        """Write lrda eval's report files of the current loop; return the summary."""
        with self._lock:
            result = self.evaluation.snapshot()
        if not result.records:
            return {}
        return write_live_report(result, self.folder, self.metadata(result))


def main(args: list[str] | None = None) -> int:
    """Run the evaluator until SIGINT/SIGTERM, then write the final report and exit 0."""
    # Mid-callback (a large figure), the signal waits for Python: the process still ends in
    # time (run_node), with the last complete report (files are replaced whole).
    return run_node('evaluator_node', EvaluatorNode, args)


if __name__ == '__main__':
    sys.exit(main())
