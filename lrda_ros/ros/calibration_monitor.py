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
every ``period / window`` seconds, a reference put in a one-slot box); a daemon thread at the
lowest CPU priority turns frames into the check's inputs (edge map, outline points) and runs
:func:`~lrda_ros.calibration.search.check_calibration` every ``period`` seconds once
the window is full. Nothing it does is waited for by a frame. The result is the
``<node>: calibration`` status on /diagnostics; with ``calibration_check.apply`` a suspect
check's rotation is applied to the extrinsic of later frames (logged once per change).
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace
import os
import threading
import time
from typing import Callable

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
import numpy as np

from ..calibration.score import calibration_frame, correction_transform
from ..calibration.search import CalibrationCheck, check_calibration, CheckConfig, SUSPECT
from ..calibration.text import describe
from ..geometry import LidarCloud
from ..pipeline import FrameInputs
from ..settings.node_settings import CalibrationCheckSettings

#: Keys of the calibration status (doc/ros.md).
CALIBRATION_KEYS = ('verdict', 'correction rotation vector (deg, camera frame)',
                    'rotation standard error (deg)', 'score gain (%)', 'frames used',
                    'outline points', 'frames in window', 'checks run',
                    'last check duration (s)', 'background CPU time (s)', 'correction applied')


class CalibrationMonitor:
    """One camera's window and its latest check, run by a low-priority background thread."""

    def __init__(self, settings: CalibrationCheckSettings, log: Callable[[str], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        """Start the background thread (when enabled); ``clock`` paces sampling and checks."""
        self.settings = settings
        self._clock = clock
        self._log = log
        self._lock = threading.Lock()
        self._offered = threading.Condition(self._lock)
        self._box: FrameInputs | None = None
        self._window: deque = deque(maxlen=settings.window)
        #: The window's image stamps (0: unknown), beside its frames.
        self._stamps: deque = deque(maxlen=settings.window)
        self._last_sample = -np.inf
        self._last_check = clock()
        self._stop = False
        self.check: CalibrationCheck | None = None
        self.checks_run = 0
        self.last_seconds = float('nan')
        #: CPU seconds the background thread has spent (frames prepared and checks).
        self.cpu_seconds = 0.0
        #: Set after every check, and whenever a frame joins the window (tests wait on them).
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
        if now - self._last_sample < self.settings.period_s / self.settings.window:
            return
        with self._offered:
            self._last_sample = now
            self._box = inputs
            self._offered.notify()

    def corrected(self, clouds: list[LidarCloud]) -> list[LidarCloud]:
        """Return the clouds with the applied correction (unchanged unless one is applied)."""
        if self.applied is None:
            return clouds
        correction = correction_transform(self.applied)
        return [replace(cloud, T_cam_lidar=correction @ cloud.T_cam_lidar) for cloud in clouds]

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
        config = CheckConfig(rotation_tolerance_deg=self.settings.rotation_tolerance_deg)
        while True:
            with self._offered:
                while self._box is None and not self._stop:
                    self._offered.wait()
                if self._stop:
                    return
                inputs, self._box = self._box, None
            if inputs.stamp_ns and inputs.stamp_ns in self._stamps:
                # An image the window holds already (a bag replayed in a loop): counted twice
                # it would pass for more evidence than there is.
                self.frame_added.set()
                continue
            start = time.thread_time()
            try:  # the given extrinsic: the check judges it, not an applied correction
                frame = calibration_frame(inputs.rgb, inputs.points_lidar, inputs.T_cam_lidar,
                                          inputs.camera)
            except ValueError:  # bad input (InputError): the frame path counts its drop
                self.frame_added.set()
                continue
            self._window.append(frame)
            self._stamps.append(inputs.stamp_ns)
            due = self._clock() - self._last_check >= self.settings.period_s
            if len(self._window) == self._window.maxlen and due:
                self._check(list(self._window), config)
            with self._lock:
                self.cpu_seconds += time.thread_time() - start
            self.frame_added.set()

    def _check(self, frames: list, config: CheckConfig) -> None:
        start = time.monotonic()
        check = check_calibration(frames, config)
        with self._lock:
            self.check = check
            self.checks_run += 1
            self.last_seconds = time.monotonic() - start
            self._last_check = self._clock()
        if self.settings.apply and check.verdict == SUSPECT:
            theta = np.where(np.arange(7) < 3, check.theta, 0.0)
            if self.applied is None or not np.allclose(theta, self.applied):
                self.applied = theta
                self._log('calibration check: applying the correction to the LiDAR->camera '
                          'extrinsic of every later frame: ' + describe(check))
        self.checked.set()

    def status(self, name: str) -> DiagnosticStatus:
        """Return the ``<name>: calibration`` status: OK, WARN with the correction, or waiting."""
        with self._lock:
            check, runs, seconds = self.check, self.checks_run, self.last_seconds
            frames, cpu = len(self._window), self.cpu_seconds
        values = dict.fromkeys(CALIBRATION_KEYS, '')
        values.update({'frames in window': f'{frames}/{self.settings.window}',
                       'checks run': runs, 'last check duration (s)': f'{seconds:.2f}',
                       'background CPU time (s)': f'{cpu:.2f}',
                       'correction applied': 'no' if self.applied is None else ', '.join(
                           f'{v:+.2f}' for v in np.degrees(self.applied[:3])) + ' deg'})
        level = DiagnosticStatus.OK
        if not self.settings.enabled:
            message = 'off (calibration_check.enabled: false)'
        elif check is None:
            message = (f'waiting for a full window ({frames} of {self.settings.window} frames) '
                       'and the first check')
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
                message = ('check the LiDAR->camera extrinsic (tf or lidar_to_camera.*): '
                           + message)
        return DiagnosticStatus(level=level, name=f'{name}: calibration', message=message,
                                values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])
