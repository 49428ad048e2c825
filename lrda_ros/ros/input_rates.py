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
Each input's rate and the age of its last message: the ``<node>: inputs`` status.

diagnostic_updater's ``FrequencyStatus`` meaning: the rate over a window of recent diagnostics
periods, WARN below the expected rate by more than a tolerance, ERROR with no message in the
window (the input stopped). The node is not told its sensors' rates, so the expected rate is
the input's own: the median interval of its recent messages, which one gap does not move.

Ages and rates are on the steady clock of the messages' arrival, not the node's clock: under
use_sim_time a stopped replay stops /clock too (the ROS clock would stand still and no input
would ever look stale), and a looped one sends it back.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
import statistics
import threading
import time
from typing import Any, Callable, Sequence

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue


@dataclass(frozen=True)
class RateRules:
    """When an input's rate is too low and when it stopped."""

    #: The window, in diagnostics periods (diagnostic_updater's ``window_size``) ...
    window_periods: int = 5
    #: ... but at least this many seconds and expected intervals, so one message more or
    #: less (arrival jitter) moves the rate by a few percent, not past the tolerance.
    min_window_s: float = 5.0
    window_intervals: int = 20
    #: WARN below the expected rate by more than this share: replays on a loaded host jitter
    #: more than diagnostic_updater's default 0.1 allows.
    tolerance: float = 0.2
    #: The recent intervals whose median is the expected one.
    intervals: int = 50


@dataclass(frozen=True)
class InputReport:
    """One input's state at a diagnostics period."""

    topic: str
    level: int
    #: '' when OK, else what is wrong, naming the input.
    problem: str
    received: int
    age_s: float
    rate_hz: float
    expected_hz: float


#: Keys of the inputs status, each once per input (doc/ros.md).
INPUT_KEYS = ('<input>: messages', '<input>: age of last message (s)', '<input>: rate (Hz)',
              '<input>: expected rate (Hz)')


class InputRates:
    """Arrival times of each input's messages, from its subscription on."""

    def __init__(self, topics: Sequence[str], rules: RateRules = RateRules(),
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.topics = list(topics)
        self.rules = rules
        self._clock = clock
        self._lock = threading.Lock()
        self._since = clock()
        # Enough arrivals for the longest window at any sensible rate (1 kHz x 10 s).
        self._arrivals = {topic: deque(maxlen=10_000) for topic in self.topics}
        self._received = dict.fromkeys(self.topics, 0)
        #: Each input's level last logged: a log line per change, not per period.
        self._logged = dict.fromkeys(self.topics, DiagnosticStatus.OK)

    def tick(self, index: int) -> None:
        """Note a message of input ``index`` (its order in ``topics``), arrived now."""
        topic = self.topics[index]
        with self._lock:
            self._arrivals[topic].append(self._clock())
            self._received[topic] += 1

    def reports(self, period_s: float) -> list[InputReport]:
        """Return every input's report now, for diagnostics published every ``period_s``."""
        now = self._clock()
        with self._lock:
            return [self._report(topic, list(self._arrivals[topic]), self._received[topic],
                                 now, period_s) for topic in self.topics]

    def status(self, name: str, period_s: float,
               logger: Any) -> tuple[DiagnosticStatus, tuple[int, str]]:
        """
        Return the ``<name>: inputs`` status and the worst input's (level, problem).

        Each change of an input's level is logged once on ``logger`` (an rclpy logger): ERROR
        when it stopped, WARN when it slowed, INFO when it is back at its rate.
        """
        reports = self.reports(period_s)
        for report in reports:
            if report.level != self._logged[report.topic]:
                self._logged[report.topic] = report.level
                text = f'{name}: input {report.problem}'
                # One call per severity: an rclpy logger refuses two severities at one line.
                if report.level == DiagnosticStatus.ERROR:
                    logger.error(text)
                elif report.level == DiagnosticStatus.WARN:
                    logger.warning(text)
                else:
                    logger.info(f'{name}: input {report.topic} back at {report.rate_hz:.2f} Hz')
        return inputs_status(name, reports), worst(reports)

    def _report(self, topic: str, arrivals: list[float], received: int, now: float,
                period_s: float) -> InputReport:
        rules = self.rules
        recent = arrivals[-rules.intervals - 1:]
        expected = float('nan')
        if len(recent) >= 3:
            median = statistics.median(b - a for a, b in zip(recent, recent[1:]))
            expected = 1.0 / median if median > 0 else float('nan')
        window = max(rules.window_periods * period_s, rules.min_window_s,
                     rules.window_intervals / expected if expected > 0 else 0.0)
        span = min(window, now - self._since)  # a window cannot reach before the subscription
        events = sum(1 for t in arrivals if t > now - window)
        rate = events / span if span > 0 else float('nan')
        age = now - arrivals[-1] if arrivals else float('nan')
        level, problem = DiagnosticStatus.OK, ''
        if events == 0 and (arrivals or now - self._since >= window):
            level = DiagnosticStatus.ERROR
            problem = (f'{topic} stopped: no message for {age:.1f} s' if arrivals else
                       f'{topic}: no message in the {now - self._since:.1f} s since subscribed')
        elif span >= window and expected > 0 and rate < expected * (1 - rules.tolerance):
            level = DiagnosticStatus.WARN
            problem = (f'{topic} slowed: {rate:.2f} Hz over {window:.1f} s, expected '
                       f'{expected:.2f} Hz (last message {age:.1f} s ago)')
        return InputReport(topic, level, problem, received, age, rate, expected)


def inputs_status(name: str, reports: Sequence[InputReport]) -> DiagnosticStatus:
    """Return the ``<name>: inputs`` status: the worst input's level, each input's values."""
    values = []
    for report in reports:
        values += [KeyValue(key=key.replace('<input>', report.topic), value=text) for key, text in
                   zip(INPUT_KEYS, (str(report.received), f'{report.age_s:.2f}',
                                    f'{report.rate_hz:.2f}', f'{report.expected_hz:.2f}'))]
    level, message = worst(reports)
    waiting = [report.topic for report in reports if report.received == 0]
    if not message:
        message = (f'waiting for the first message of {", ".join(waiting)}' if waiting
                   else 'every input arriving at its rate')
    return DiagnosticStatus(level=level, name=f'{name}: inputs', message=message,
                            values=values)


def worst(reports: Sequence[InputReport]) -> tuple[int, str]:
    """Return the worst level of ``reports`` and their problems at that level ('' if OK)."""
    level = max((report.level for report in reports), default=DiagnosticStatus.OK)
    problems = [r.problem for r in reports if r.level == level and r.problem]
    return level, '; '.join(problems)
