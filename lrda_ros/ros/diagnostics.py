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

"""The completion node's counters and their /diagnostics status (ROS message building only)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
import re
import time
from typing import Any

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue

from .stage_times import FrameStages
from ..eval.live import (
    KEY_FRAME_STAMP, KEY_ITERATIONS, KEY_LOSS, KEY_PEAK_MB, KEY_PROCESSING_S, KEY_STATUS)
from ..messages.causes import (
    cause_name, DROPPED, MISSING, STAMP_BACKWARDS, SYNC_LOSS_REASONS, UNSYNCHRONIZED)
from ..messages.sweep_alignment import (
    FALLBACK_CAUSES, MOVED_OUTCOMES, POINT_TIME_PROBLEMS)
from ..messages.sync_losses import BEYOND_SLOP, SUPERSEDED

#: Frames whose drop is not a fault of the input or the node.
_BENIGN_DROPS = ('too_few_points',)
#: The message of each lifecycle state but active (a plain node is always active); transition
#: states ('configuring', ...) show their own label.
_STATE_MESSAGES = {'unconfigured': 'unconfigured: configure loads the model',
                   'inactive': 'inactive: activate subscribes to the inputs',
                   'finalized': 'finalized: shut down, no longer processing'}


@dataclass
class NodeStatistics:
    """Counters and last values shown on /diagnostics."""

    received: int = 0
    processed: int = 0
    replaced: int = 0
    dropped: Counter = field(default_factory=Counter)
    statuses: Counter = field(default_factory=Counter)
    #: Input messages the synchronizer dropped without a partner (never became a frame).
    unsynchronized: int = 0
    #: The same, per reason (causes.SYNC_LOSS_REASONS).
    sync_losses: Counter = field(default_factory=Counter)
    #: Stamps older than the previous one on the same input, per input topic.
    stamp_backwards: Counter = field(default_factory=Counter)
    #: Frames (images) the synchronizer dropped without a message of an input, per input topic.
    missing: Counter = field(default_factory=Counter)
    last_loss: float = float('nan')
    #: The last frame's peak memory (MiB) as lrda eval measures it; NaN: not measured.
    last_peak_mb: float = float('nan')
    last_iterations: int = 0
    #: The last frame's engine status (CompletionStatus value).
    last_status: str = ''
    last_points: int = 0
    last_processing_s: float = float('nan')
    #: Seconds from the last image's stamp to its depth (NaN: none, ``latency_note`` says why).
    last_latency_s: float = float('nan')
    latency_note: str = 'none yet: no frame completed'
    last_stamp: str = ''
    #: Seconds from the synchronized set's arrival to the end of its publishing.
    last_frame_s: float = float('nan')
    #: Frames whose optimization the time budget stopped early, and recent iteration counts.
    stopped_at_budget: int = 0
    #: Warm-started frames that followed a scene cut and ran cold (engine/scene_cut.py).
    scene_cuts: int = 0
    #: Frames published without temporal fusion for want of the camera's pose in tf.
    unfused_no_pose: int = 0
    #: Clouds motion alignment handled, each under one outcome: moved, moved without point
    #: times or nothing to move (sweep_alignment.MOVED_OUTCOMES), or gone out with the static
    #: extrinsic, per cause (sweep_alignment.FALLBACK_CAUSES).
    motion_outcomes: Counter = field(default_factory=Counter)
    motion_fallbacks: Counter = field(default_factory=Counter)
    #: Points whose time was taken as their cloud's stamp, per problem.
    bad_point_times: Counter = field(default_factory=Counter)
    #: Share of the last depth map's pixels averaged with the previous frame's.
    last_fused_fraction: float = 0.0
    recent_iterations: list[int] = field(default_factory=list)
    #: The last published frame's time per stage (stage_times.py).
    stages: FrameStages = field(default_factory=FrameStages)
    #: Monotonic times of the last completed frames (for the output rate).
    completed_at: list[float] = field(default_factory=list)
    #: ``window_counts`` at the last published status: the message tells what came since.
    reported: Counter = field(default_factory=Counter)

    def window_counts(self) -> Counter:
        """
        Return the totals whose growth a status message reports (the recent window).

        Time jumps are counted per input too, under ``(STAMP_BACKWARDS, topic)`` keys: the
        message names the inputs whose stamps went back, never more than there are.
        """
        counts = Counter(
            beyond_slop=self.sync_losses[BEYOND_SLOP], missing=sum(self.missing.values()),
            errors=sum(n for reason, n in self.dropped.items() if reason not in _BENIGN_DROPS),
            time_jumps=sum(self.stamp_backwards.values()))
        counts.update({(STAMP_BACKWARDS, topic): n for topic, n in self.stamp_backwards.items()})
        return counts

    def close_window(self) -> None:
        """Note a published status: the next message describes what comes after it."""
        self.reported = self.window_counts()

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

    def record_completed(self) -> None:
        """Note a completed frame for the output rate."""
        self.completed_at = (self.completed_at + [time.monotonic()])[-20:]

    def record(self, result: Any, seconds: float, frame_seconds: float,
               latency: tuple[float | None, str], stamp: str,
               peak_mb: float = float('nan')) -> None:
        """
        Count a published frame: its engine result (CompletionResult) and timings.

        ``latency``: (seconds, '') or (None, why there is none): ``stamps.latency_or_reason``;
        ``peak_mb``: its completion's peak memory (NaN: not measured).
        """
        self.processed += 1
        self.statuses[result.status.value] += 1
        self.last_loss = result.final_loss
        self.last_peak_mb = peak_mb
        self.last_iterations = result.iterations
        self.last_status = result.status.value
        self.last_points = result.num_points
        self.last_processing_s = seconds
        self.last_frame_s = frame_seconds
        self.stopped_at_budget += int(result.stopped_at_deadline)
        self.scene_cuts += int(result.scene_cut)
        self.recent_iterations = (self.recent_iterations + [result.iterations])[-20:]
        self.last_latency_s = float('nan') if latency[0] is None else latency[0]
        self.latency_note = latency[1]
        self.last_stamp = stamp
        self.record_completed()


def _entries(stats: NodeStatistics, state: str) -> list[tuple[str, Any]]:
    """
    Return the status's (key, value) pairs in order, before the node's context.

    A dict value is a counter: its key holds a ``<...>`` placeholder, repeated per name.
    """
    recent = stats.recent_iterations
    return [
        ('state', state),
        ('frames received', stats.received), ('frames processed', stats.processed),
        ('frames dropped', stats.num_dropped),
        # Each cause under its one name (messages/causes.py), the start of its warnings too.
        (cause_name(SUPERSEDED), stats.replaced),
        (f'{DROPPED} (<reason>)', dict(sorted(stats.dropped.items()))),
        (f'{UNSYNCHRONIZED} messages', stats.unsynchronized),
        (f'{UNSYNCHRONIZED} (<reason>)',
         {reason: stats.sync_losses[reason] for reason in SYNC_LOSS_REASONS}),
        (cause_name(STAMP_BACKWARDS, '<input>'), dict(sorted(stats.stamp_backwards.items()))),
        (cause_name(MISSING, '<input>'), dict(sorted(stats.missing.items()))),
        ('status <status>', dict(sorted(stats.statuses.items()))),
        ('frame rate (Hz)', f'{stats.output_rate_hz:.2f}'),
        (KEY_PROCESSING_S, f'{stats.last_processing_s:.3f}'),
        ('latency (s)', stats.latency_note or f'{stats.last_latency_s:.3f}'),
        # The exact value (shortest round-trip text): live evaluation reports the engine's.
        (KEY_LOSS, repr(float(stats.last_loss))),
        (KEY_ITERATIONS, stats.last_iterations),
        (KEY_STATUS, stats.last_status),
        (KEY_PEAK_MB, f'{stats.last_peak_mb:.1f}'),
        ('frame time, synchronized set to publish (s)', f'{stats.last_frame_s:.3f}'),
        ('stage time (ms) <stage>',
         {stage: f'{ms:.1f}' for stage, ms in stats.stages.milliseconds().items()}),
        ('frames stopped at the time budget', stats.stopped_at_budget),
        ('scene cuts (warm frames run cold)', stats.scene_cuts),
        ('temporal fusion: last share of pixels fused', f'{stats.last_fused_fraction:.2f}'),
        ('temporal fusion: frames without a pose', stats.unfused_no_pose),
        ('motion alignment: clouds (<outcome>)',
         {outcome: stats.motion_outcomes[outcome] for outcome in MOVED_OUTCOMES}),
        ('motion alignment: static extrinsic (<cause>)',
         {cause: stats.motion_fallbacks[cause] for cause in FALLBACK_CAUSES}),
        ('motion alignment: point times (<problem>)',
         {problem: stats.bad_point_times[problem] for problem in POINT_TIME_PROBLEMS}),
        ('iterations per frame (mean of last 20)',
         f'{sum(recent) / len(recent):.1f}' if recent else 'nan'),
        ('last LiDAR pixels', stats.last_points),
        (KEY_FRAME_STAMP, stats.last_stamp),
    ]


#: The keys the node adds to each status (``context`` of :func:`completion_status`).
CONTEXT_KEYS = ('camera', 'time budget (s)', 'model', 'device', 'synchronization',
                'conversion')
#: Every key a status can carry, in order; ``<...>`` stands for each reason, input topic or
#: completion status counted. doc/ros.md's Diagnostics table documents each one
#: (test/test_docs.py).
KEYS = tuple(key for key, _ in _entries(NodeStatistics(), 'active')) + CONTEXT_KEYS
_PLACEHOLDER = re.compile(r'<[^>]+>')


def _time_jumps_text(recent: Counter) -> str:
    """Say on which inputs stamps went back in the window, and how often when more than once."""
    inputs = sorted(key[1] for key, n in recent.items() if isinstance(key, tuple) and n > 0)
    jumps = recent['time_jumps']
    times = '' if jumps == len(inputs) else f' {jumps} times'
    plural = 's' if len(inputs) != 1 else ''
    return (f'stamps went back{times} on {len(inputs)} input{plural} ({", ".join(inputs)}) '
            '(a bag loop, a clock reset): synchronizer reset, next frame cold')


def completion_status(name: str, stats: NodeStatistics, state: str, context: dict[str, Any],
                      demo_prior: bool = False, idle: bool = False,
                      inputs: tuple[int, str] = (DiagnosticStatus.OK, '')) -> DiagnosticStatus:
    """
    Build the DiagnosticStatus of the node ``name`` (its fully qualified name).

    ``state`` is its lifecycle state label ('active' for the plain node): any other state is
    the message, at level WARN (an unconfigured, inactive or finalized node processes
    nothing). ``context`` adds descriptive values (model, device, synchronization backend);
    ``demo_prior`` warns that the model is the demonstration prior. The message describes
    what grew since ``stats.reported`` (:meth:`NodeStatistics.close_window`, called when a
    status is published), at WARN for errors and messages beyond the slop. ``idle``: no
    output has a subscriber, so nothing is completed (OK: nothing is wrong, but not
    'completing depth'). ``inputs``: the worst input's level and problem
    (:func:`~lrda_ros.ros.input_rates.worst`); a stopped or slowed input is the message at
    its level, since no frame can be completed without it.
    """
    unknown = set(context) - set(CONTEXT_KEYS)
    if unknown:  # every key is documented (doc/ros.md): a new one must join KEYS first
        raise ValueError(f'diagnostics context keys not in CONTEXT_KEYS: {sorted(unknown)}')
    values = {}
    for key, value in _entries(stats, state):
        if isinstance(value, dict):  # a counter: the key once per reason, input or status
            values.update({_PLACEHOLDER.sub(lambda _, name=name: name, key): n
                           for name, n in value.items()})
        else:
            values[key] = value
    values.update(context)
    # The message tells the window since the last status (a transient clears in one period);
    # the totals stay in the values.
    recent = stats.window_counts() - stats.reported
    level, message = DiagnosticStatus.OK, 'completing depth'
    if demo_prior:
        level, message = DiagnosticStatus.WARN, 'running on the demonstration prior'
    if recent['time_jumps']:
        message = f'{message}; {_time_jumps_text(recent)}'
    if recent['errors']:
        level, message = DiagnosticStatus.WARN, f'{recent["errors"]} frames dropped for errors'
    if recent['missing']:
        level = DiagnosticStatus.WARN
        message = (f'{recent["missing"]} frames lost without a message of '
                   f'{" or ".join(sorted(stats.missing))}')
    if recent['beyond_slop']:
        level = DiagnosticStatus.WARN
        message = (f'{recent["beyond_slop"]} input messages beyond sync.slop (the log names the '
                   'slop needed)')
    if stats.unsynchronized and stats.received == 0:
        level = DiagnosticStatus.WARN
        message = f'{stats.unsynchronized} input messages never synchronized (see sync.slop)'
    elif stats.received == 0:
        message = 'waiting for synchronized image, camera_info and points'
    if idle and level == DiagnosticStatus.OK:
        message = ('idle: no subscriber to any output (depth, depth/camera_info, '
                   'depth_colored, points_dense, depth/confidence), nothing is completed')
    if inputs[0] > level:
        level, message = inputs
    if state != 'active':  # nothing is processed: never OK, whatever the counters say
        level, message = DiagnosticStatus.WARN, _STATE_MESSAGES.get(state, state)
    return DiagnosticStatus(
        level=level, name=f'{name}: depth completion', message=message,
        hardware_id=str(context.get('model', '')),
        values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])


def status_context(camera: Any, settings: Any, choice: Any, conversion: str) -> dict[str, Any]:
    """Return the keys that say how ``camera``'s frames are made (model, sync, budget)."""
    handle = camera.subscriptions_handle
    budget = settings.time_budget
    return {
        **({'camera': camera.name} if camera.name else {}),
        'time budget (s)': f'{budget:g}' if budget > 0 else 'off',
        'model': choice.source if choice else '',
        'device': str(choice.device) if choice else '',
        'synchronization': handle.backend if handle else '',
        'conversion': conversion,
    }


def camera_statuses(camera: Any, name: str, context: dict[str, Any], demo: bool,
                    calibration: Any, state: str, active: bool, period: float, logger: Any
                    ) -> list[DiagnosticStatus]:
    """
    Return ``camera``'s statuses (calibration, inputs, then its main one) and close its window.

    ``demo``: the model is the demonstration prior; ``calibration``: the camera's calibration
    monitor or None; ``active``: whether frames are processed (inputs are judged only then).
    """
    statuses = []
    status_name = camera.status_name(name)
    if calibration is not None:  # before the camera's main status
        statuses.append(calibration.status(status_name))
    inputs = (DiagnosticStatus.OK, '')
    handle = camera.subscriptions_handle
    if handle is not None and handle.monitor is not None and active:
        status, inputs = handle.monitor.rates.status(status_name, period, logger)
        statuses.append(status)
    statuses.append(completion_status(status_name, camera.stats, state, context, demo,
                                      not camera.wants_completion(), inputs))
    camera.stats.close_window()
    return statuses
