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
Each input's rate and silence (lrda_ros/ros/input_rates.py), and the node's status over DDS.

The unit tests drive the arrivals on a hand-set clock, so every rate and age is a number
computed by hand (diagnostic_updater's FrequencyStatus rules: events in the window over the
window, WARN below the expected rate by more than the tolerance, ERROR with none). The node
test streams frames as a 10 Hz sensor would, stops, and resumes, waiting on each status.
"""

from __future__ import annotations

from pathlib import Path

from conftest import spin_until
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402, I100
from lrda_ros import world  # noqa: E402
from lrda_ros.ros.input_rates import INPUT_KEYS, InputRates, RateRules  # noqa: E402
from lrda_ros.ros.node import CompletionNode  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402
from test_node import Harness, node_parameters  # noqa: E402

OK, WARN, ERROR = DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR


class _Clock:
    """A steady clock the test sets."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class _Logger:
    """Record log lines by severity, as an rclpy logger takes them."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []
        self.info, self.warning, self.error = (
            lambda text, level=level: self.lines.append((level, text))
            for level in ('info', 'warning', 'error'))


def _stream(rates: InputRates, clock: _Clock, seconds: float, hz: float,
            topics: tuple[int, ...] = (0, 1)) -> None:
    """Deliver a message of each of ``topics`` every 1 / ``hz`` s for ``seconds``."""
    for _ in range(round(seconds * hz)):
        clock.now += 1.0 / hz
        for index in topics:
            rates.tick(index)


def test_a_steady_input_is_ok_a_slowed_one_warns_and_a_stopped_one_is_an_error():
    clock = _Clock()
    rates = InputRates(['/image', '/points'], RateRules(), clock)
    logger = _Logger()
    _stream(rates, clock, 10.0, 10.0)
    clock.now += 0.05  # between two messages: no arrival on the window's edge
    status, worst = rates.status('/node', 1.0, logger)
    values = {kv.key: kv.value for kv in status.values}
    # 10 Hz: 20 expected intervals are 2 s, less than 5 periods of 1 s: a 5 s window.
    assert values['/image: rate (Hz)'] == '10.00' and values['/image: messages'] == '100'
    assert values['/image: expected rate (Hz)'] == '10.00'
    assert values['/image: age of last message (s)'] == '0.05'
    assert status.level == OK and status.message == 'every input arriving at its rate'
    assert status.name == '/node: inputs' and worst == (OK, '') and logger.lines == []

    # The image stops, the cloud goes on; 1.5 s later 35 images in the last 5 s: 7 Hz, less
    # than 10 Hz by more than 20 %.
    _stream(rates, clock, 1.5, 10.0, topics=(1,))
    status, worst = rates.status('/node', 1.0, logger)
    assert status.level == WARN and worst[0] == WARN
    assert status.message.startswith('/image slowed: 7.00 Hz over 5.0 s, expected 10.00 Hz')
    assert logger.lines == [('warning', '/node: input ' + status.message)]

    # Both stop: 5.2 s after its last message no image is in the window (ERROR); 14 clouds
    # are, 2.8 Hz (WARN). The message is the worst level's.
    clock.now = 115.2
    status, worst = rates.status('/node', 1.0, logger)
    assert status.level == ERROR and status.message == '/image stopped: no message for 5.2 s'
    assert worst == (ERROR, status.message)
    assert logger.lines[1] == ('error', '/node: input /image stopped: no message for 5.2 s')
    assert logger.lines[2][0] == 'warning'
    assert logger.lines[2][1].startswith('/node: input /points slowed: 2.80 Hz')
    rates.status('/node', 1.0, logger)
    assert len(logger.lines) == 3  # one line per change, not per period

    _stream(rates, clock, 6.0, 10.0)  # back: a full window at its rate again
    status, _ = rates.status('/node', 1.0, logger)
    assert status.level == OK
    assert [(level, 'back at' in text) for level, text in logger.lines[3:]] == [
        ('info', True), ('info', True)]


def test_an_input_that_never_came_waits_one_window_then_is_an_error():
    clock = _Clock()
    rates = InputRates(['/image', '/points'], RateRules(), clock)
    _stream(rates, clock, 2.0, 10.0, topics=(0,))
    clock.now += 0.05
    status, _ = rates.status('/node', 1.0, _Logger())
    assert status.level == OK and status.message == 'waiting for the first message of /points'
    # 2.05 s since the subscription: the rate counts from there (20 / 2.05), not over 5 s.
    assert {kv.key: kv.value for kv in status.values}['/image: rate (Hz)'] == '9.76'
    clock.now = 105.2
    status, _ = rates.status('/node', 1.0, _Logger())
    assert status.level == ERROR
    assert status.message == '/points: no message in the 5.2 s since subscribed'


def test_a_slow_sensor_gets_a_window_of_twenty_intervals():
    # 1 Hz: five messages in a 5 s window would swing 20 % with one message's jitter.
    clock = _Clock()
    rates = InputRates(['/image'], RateRules(), clock)
    _stream(rates, clock, 30.0, 1.0, topics=(0,))
    clock.now += 0.99  # just before the next message: 20 in the last 20 s
    status, _ = rates.status('/node', 1.0, _Logger())
    assert status.level == OK
    assert {kv.key: kv.value for kv in status.values}['/image: rate (Hz)'] == '1.00'


def test_every_key_is_documented_once_per_input():
    rates = InputRates(['/a', '/b'], RateRules(), _Clock())
    keys = [kv.key for kv in rates.status('/node', 1.0, _Logger())[0].values]
    assert keys == [key.replace('<input>', topic) for topic in ('/a', '/b')
                    for key in INPUT_KEYS]


@pytest.fixture(scope='module')
def frame():
    return world.make_sequence(world.SequenceConfig(
        'indoor', num_frames=1, width=112, height=84, seed=3,
        lidar=world.LidarConfig.indoor(beams=16)))[0]


def _last(diagnostics: list, name: str) -> DiagnosticStatus | None:
    ours = [s for array in diagnostics for s in array.status if s.name == name]
    return ours[-1] if ours else None


@pytest.mark.slow
def test_the_node_says_which_input_stopped_and_that_it_is_back(
        ros_context, namespace, tiny_model_dir, frame):
    node = CompletionNode(context=ros_context, namespace=namespace,
                          parameter_overrides=node_parameters(tiny_model_dir, frame))
    harness = Harness(ros_context, namespace)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    executor.add_node(harness.node)
    inputs_name = f'{namespace}/completion_node: inputs'
    main_name = f'{namespace}/completion_node: depth completion'
    stamp = [1_000_000_000]

    def sensor() -> None:  # a camera and a LiDAR at 10 Hz
        stamp[0] += 100_000_000
        harness.publish(frame, stamp[0])

    def inputs(level: int, text: str) -> bool:
        status = _last(harness.diagnostics, inputs_name)
        return status is not None and status.level == level and text in status.message

    try:
        assert spin_until(executor, lambda: harness.pub_points.get_subscription_count() > 0, 10)
        timer = harness.node.create_timer(0.1, sensor)
        assert spin_until(executor, lambda: inputs(OK, 'every input arriving'), 30)
        timer.cancel()  # the sensors stop
        assert spin_until(executor, lambda: inputs(ERROR, f'{namespace}/image stopped'), 30)
        status = _last(harness.diagnostics, inputs_name)
        assert f'{namespace}/points stopped' in status.message
        main = _last(harness.diagnostics, main_name)
        assert main.level == ERROR and 'stopped: no message for' in main.message
        timer.reset()  # back
        assert spin_until(executor, lambda: inputs(OK, 'every input arriving'), 30)
        assert spin_until(executor, lambda: _last(harness.diagnostics, main_name).level == OK,
                          10)
        timer.cancel()
    finally:
        executor.shutdown()
        node.destroy_node()
        harness.node.destroy_node()


def test_no_subscriber_is_idle_not_completing(ros_context, namespace, tiny_model_dir, frame):
    node = CompletionNode(context=ros_context, namespace=namespace,
                          parameter_overrides=node_parameters(tiny_model_dir, frame))
    listener = rclpy.create_node('listener', namespace=namespace, context=ros_context)
    diagnostics: list[DiagnosticArray] = []
    listener.create_subscription(DiagnosticArray, '/diagnostics', diagnostics.append, 10)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    executor.add_node(listener)
    name = f'{namespace}/completion_node: depth completion'

    def message_starts(text: str) -> bool:
        status = _last(diagnostics, name)
        return status is not None and status.message.startswith(text)

    try:
        assert spin_until(executor, lambda: message_starts('idle: no subscriber'), 10)
        assert _last(diagnostics, name).level == OK
        depth = listener.create_subscription(Image, 'depth', lambda _: None, 10)
        assert spin_until(executor, lambda: message_starts('waiting for synchronized'), 10)
        listener.destroy_subscription(depth)
        assert spin_until(executor, lambda: message_starts('idle: no subscriber'), 10)
    finally:
        executor.shutdown()
        node.destroy_node()
        listener.destroy_node()


def test_doc_ros_md_names_every_key():
    text = (Path(__file__).resolve().parents[1] / 'doc' / 'ros.md').read_text()
    assert all(f'| `{key}` |' in text for key in INPUT_KEYS)
