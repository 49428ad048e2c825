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
The node's background calibration check: a window of recent frames, checked at a low rate.

The worker only *offers* a frame (:meth:`CalibrationMonitor.offer`: a time comparison and,
every ``period / window`` seconds, a reference put in a one-slot box); an image whose stamp
the window holds already (a bag replayed in a loop) is passed over without using the slot. A
daemon thread at the lowest CPU priority keeps the window and, every ``period`` seconds once
it is full, hands it to :func:`~lrda_ros.calibration.check_window`, the function ``lrda
calibrate`` calls: the same frames and extrinsic give the same verdict. A window that cannot
fill (a short looped recording drops an image per loop, a camera drops frames) is checked with
the frames it holds once no new image has joined for half a period. Nothing it does is
waited for by a frame. The result is the ``<node>: calibration`` status on /diagnostics, and
a log line whenever the verdict changes; with ``calibration_check.apply`` a suspect check's
rotation is applied to the extrinsic of later frames (logged once per change). An exception
in the thread (a defect, memory) is logged and shown as ERROR; the window is emptied and the
monitor goes on with the next one.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace
import os
import threading
import time
import traceback
from typing import Callable

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
import numpy as np

from ..calibration import CalibrationCheck, check_window, describe, SUSPECT, WindowFrame
from ..calibration.score import correction_transform
from ..calibration.window import frame_problem
from ..geometry import LidarCloud
from ..pipeline import FrameInputs
from ..settings.node_settings import CalibrationCheckSettings

#: Keys of the calibration status (doc/ros.md).
CALIBRATION_KEYS = ('verdict', 'correction rotation vector (deg, camera frame)',
                    'rotation standard error (deg)', 'score gain (%)', 'frames used',
                    'outline points', 'frames in window', 'checks run', 'checks failed',
                    'last check duration (s)', 'background CPU time (s)', 'correction applied')

_SUSPECT_ADVICE = 'check the LiDAR->camera extrinsic (tf or lidar_to_camera.*): '


class CalibrationMonitor:
    """One camera's window and its latest check, run by a low-priority background thread."""

    def __init__(self, settings: CalibrationCheckSettings, log: Callable[[str], None],
                 clock: Callable[[], float] = time.monotonic, *,
                 log_info: Callable[[str], None] | None = None,
                 log_error: Callable[[str], None] | None = None) -> None:
        """
        Start the background thread (when enabled); ``clock`` paces sampling and checks.

        ``log`` takes warnings (a suspect verdict, a correction applied), ``log_info`` the
        other verdicts and ``log_error`` a failed check (both ``log`` when not given).
        """
        self.settings = settings
        self._clock = clock
        self._log = log
        self._log_info = log_info or log
        self._log_error = log_error or log
        #: The verdict last logged: a line per change, not per check.
        self._logged_verdict = ''
        #: The last check's failure ('' once a check succeeds again), and the count.
        self.failure = ''
        self.failures = 0
        self._lock = threading.Lock()
        self._offered = threading.Condition(self._lock)
        self._box: FrameInputs | None = None
        self._window: deque[WindowFrame] = deque(maxlen=settings.window)
        self._last_sample = -np.inf
        self._last_check = self._last_new = clock()
        #: Images offered again whose stamp the window held (a recording replayed in a loop).
        self.repeats = 0
        self._stop = False
        self.check: CalibrationCheck | None = None
        self.checks_run = 0
        self.last_seconds = float('nan')
        #: CPU seconds the background thread has spent (frames kept and checks).
        self.cpu_seconds = 0.0
        #: Set after every check, and whenever an offered frame was taken or passed over
        #: (tests wait on them).
        self.checked = threading.Event()
        self.frame_added = threading.Event()
        #: The rotation applied to later frames' extrinsic (calibration_check.apply).
        self.applied: np.ndarray | None = None
        self._thread = None
        if settings.enabled:
            self._thread = threading.Thread(target=self._run, name='lrda_calibration',
                                            daemon=True)
            self._thread.start()

    def offer(self, inputs: FrameInputs) -> None:
        """Hand a frame over if one is due (never blocks beyond a lock held for a swap)."""
        if not self.settings.enabled:
            return
        now = self._clock()
        if now - self._last_sample < self.settings.sample_interval_s:
            return
        with self._offered:
            if inputs.stamp_ns and any(f.stamp_ns == inputs.stamp_ns for f in self._window):
                # An image the window holds already: counted twice it would pass for more
                # evidence than there is; the next new image takes the slot.
                self.repeats += 1
                self.frame_added.set()
                return
            self._last_sample = now
            self._box = inputs
            self._offered.notify()

    def corrected(self, clouds: list[LidarCloud]) -> list[LidarCloud]:
        """Return the clouds with the applied correction (unchanged unless one is applied)."""
        if self.applied is None:
            return clouds
        correction = correction_transform(self.applied)
        return [replace(cloud, T_cam_lidar=correction @ cloud.T_cam_lidar) for cloud in clouds]

    def window(self) -> list[WindowFrame]:
        """Return the frames the window holds now (what the next check is handed)."""
        with self._lock:
            return list(self._window)

    def stop(self) -> None:
        """End the background thread (it finishes a check in progress first)."""
        with self._offered:
            self._stop = True
            self._offered.notify()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        try:  # the lowest priority: a frame's work always comes first (Linux: per thread)
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        except (AttributeError, OSError):
            pass
        while True:
            with self._offered:
                if self._box is None and not self._stop:
                    # Woken by a frame, or in time to check a window that cannot fill.
                    self._offered.wait(self.settings.partial_after_s / 4)
                if self._stop:
                    return
                inputs, self._box = self._box, None
            start = time.thread_time()
            try:
                if inputs is not None:
                    self._keep(inputs)
                frames = self.window()
                if frames and self._due(len(frames)):
                    self._check(frames)
            except Exception as error:  # never the thread's end: the next window is checked
                self._fail(error)
            with self._lock:
                self.cpu_seconds += time.thread_time() - start
            if inputs is not None:
                self.frame_added.set()

    def _keep(self, inputs: FrameInputs) -> None:
        """Add a frame to the window (the given extrinsic: the check judges it)."""
        frame = WindowFrame(inputs.rgb, inputs.points_lidar, inputs.camera, inputs.T_cam_lidar,
                            inputs.stamp_ns)
        if frame_problem(frame):  # bad input (InputError): the frame path counts its drop
            return
        with self._lock:
            self._window.append(frame)
            self._last_new = self._clock()

    def _due(self, frames: int) -> bool:
        """Return whether a check is due: a full window, or one that stopped filling."""
        now = self._clock()
        if now - self._last_check < self.settings.period_s:
            return False
        if frames == self.settings.window:
            return True
        return (frames >= self.settings.check.min_frames
                and now - self._last_new >= self.settings.partial_after_s)

    def _fail(self, error: Exception) -> None:
        """Note a failed window (ERROR on /diagnostics) and start the next one empty."""
        reason = f'{type(error).__name__}: {error}'
        with self._lock:
            self.failure = reason
            self.failures += 1
            self._window.clear()
            self._last_check = self._clock()
        self._log_error(f'calibration check failed ({self.failures} so far), going on with the '
                        f'next window: {reason}\n{traceback.format_exc()}')
        self.checked.set()

    def _check(self, frames: list[WindowFrame]) -> None:
        start = time.monotonic()
        check, _ = check_window(frames, self.settings.check)
        with self._lock:
            self.check = check
            self.checks_run += 1
            self.last_seconds = time.monotonic() - start
            self._last_check = self._clock()
            self.failure = ''
        if check.verdict != self._logged_verdict:  # once per change, not every period
            self._logged_verdict = check.verdict
            if check.verdict == SUSPECT:
                self._log(f'calibration check: {_SUSPECT_ADVICE}{describe(check)}')
            else:
                self._log_info(f'calibration check: {describe(check)}')
        if self.settings.apply and check.verdict == SUSPECT:
            theta = np.where(np.arange(7) < 3, check.theta, 0.0)
            if self.applied is None or not np.allclose(theta, self.applied):
                self.applied = theta
                self._log('calibration check: applying the correction to the LiDAR->camera '
                          'extrinsic of every later frame: ' + describe(check))
        self.checked.set()

    def _waiting(self, frames: int) -> str:
        """Return what a monitor without a check yet waits for."""
        settings = self.settings
        held = f'{frames} of {settings.window} frames'
        repeats = (f'; {self.repeats} images offered again were passed over (a looped '
                   'recording?)' if self.repeats else '')
        if frames < settings.check.min_frames:
            return (f'waiting for frames: {held}, a check needs at least '
                    f'{settings.check.min_frames}; a new image joins at most every '
                    f'{settings.sample_interval_s:g} s{repeats}')
        if frames == settings.window:
            return f'the window is full ({held}): checking{repeats}'
        return (f'waiting for a full window: {held}; a new image joins at most every '
                f'{settings.sample_interval_s:g} s, and once none has joined for '
                f'{settings.partial_after_s:g} s the {frames} held are checked{repeats}')

    def status(self, name: str) -> DiagnosticStatus:
        """
        Return the ``<name>: calibration`` status.

        OK while waiting or consistent, WARN with the correction when suspect, ERROR while the
        last check failed (until one succeeds).
        """
        with self._lock:
            check, runs, seconds = self.check, self.checks_run, self.last_seconds
            frames, cpu = len(self._window), self.cpu_seconds
            failure, failures = self.failure, self.failures
        values = dict.fromkeys(CALIBRATION_KEYS, '')
        values.update({'frames in window': f'{frames}/{self.settings.window}',
                       'checks run': runs, 'checks failed': failures,
                       'last check duration (s)': f'{seconds:.2f}',
                       'background CPU time (s)': f'{cpu:.2f}',
                       'correction applied': 'no' if self.applied is None else ', '.join(
                           f'{v:+.2f}' for v in np.degrees(self.applied[:3])) + ' deg'})
        level = DiagnosticStatus.OK
        if not self.settings.enabled:
            message = 'off (calibration_check.enabled: false)'
        elif check is None:
            message = self._waiting(frames)
        else:
            rotation_error = check.parameters[0].standard_error
            values.update({
                'verdict': check.verdict,
                'correction rotation vector (deg, camera frame)': ', '.join(
                    f'{v:+.2f}' for v in np.degrees(check.theta[:3])),
                'rotation standard error (deg)': '' if rotation_error is None else ', '.join(
                    f'{np.degrees(p.standard_error or np.nan):.2f}'
                    for p in check.parameters[:3]),
                'score gain (%)': f'{100 * check.gain:.2f}', 'frames used': check.frames,
                'outline points': check.points})
            message = describe(check)
            if check.verdict == SUSPECT:
                level = DiagnosticStatus.WARN
                message = _SUSPECT_ADVICE + message
        if failure:
            level = DiagnosticStatus.ERROR
            message = (f'the last check failed ({failures} so far), going on with the next '
                       f'window: {failure}')
        return DiagnosticStatus(level=level, name=f'{name}: calibration', message=message,
                                values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])
