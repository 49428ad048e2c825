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

"""Anytime mode: the optimizer steps stop in time for a frame's deadline (simulated clock)."""

from __future__ import annotations

from conftest import smooth_image, tiny_network
from lrda_ros.engine import CompletionStatus, DepthCompleter, DepthModel, TTOConfig
from lrda_ros.engine import deadline as deadline_module
from lrda_ros.engine.deadline import FrameDeadline, StepTimes
from lrda_ros.engine.lookahead import StepPosts
import numpy as np
import pytest
import torch

STEP_S, DECODE_S = 0.1, 0.05


class SimulatedClock:
    """A monotonic clock that only moves when the network computes."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def frame(seed: int = 0):
    image = smooth_image(seed)
    rng = np.random.default_rng(seed)
    sparse = np.zeros(image.shape[:2], np.float32)
    sparse.flat[rng.choice(sparse.size, 300, replace=False)] = rng.uniform(2, 6, 300)
    return image, sparse


def completer_on(clock: SimulatedClock, **options) -> DepthCompleter:
    """Return a completer whose steps take STEP_S and dense decodes DECODE_S of ``clock``."""
    completer = DepthCompleter(DepthModel(tiny_network(seed=4)),
                               TTOConfig(device='cpu', iterations=40, **options))
    points, dense = completer._points_prediction, completer._dense_prediction

    def timed_points(*args):
        clock.now += STEP_S
        return points(*args)

    def timed_dense(*args):
        clock.now += DECODE_S
        return dense(*args)

    completer._points_prediction, completer._dense_prediction = timed_points, timed_dense
    return completer


@pytest.fixture
def clock(monkeypatch) -> SimulatedClock:
    simulated = SimulatedClock()
    monkeypatch.setattr(deadline_module.time, 'monotonic', simulated.monotonic)
    return simulated


def test_steps_stop_so_the_frame_ends_by_its_deadline(clock):
    completer = completer_on(clock)
    # First frame: no durations known yet; then the step and the finish are measured.
    deadline = clock.now + 1.0
    first = completer.complete(*frame(), deadline=deadline)
    assert first.stopped_at_deadline and first.status is CompletionStatus.OPTIMIZED
    assert completer.step_times.step == pytest.approx(STEP_S)
    assert completer.step_times.first_step == pytest.approx(STEP_S)
    completer.reset()
    deadline = clock.now + 1.0
    result = completer.complete(*frame(), deadline=deadline)
    # Step k starts at 0.1 k: it runs while 0.1 k + 0.1 (a step) + 0.05 (the finish) <= 1.0.
    assert result.iterations == 9 and result.stopped_at_deadline
    assert clock.now <= deadline
    assert result.final_loss < result.losses[0]


def test_a_cut_frame_is_the_same_as_running_that_many_steps(clock):
    budgeted = completer_on(clock).complete(*frame(1), deadline=clock.now + 0.62)
    assert 0 < budgeted.iterations < 40
    plain = DepthCompleter(DepthModel(tiny_network(seed=4)),
                           TTOConfig(device='cpu', iterations=budgeted.iterations))
    reference = plain.complete(*frame(1))
    assert not reference.stopped_at_deadline
    np.testing.assert_allclose(budgeted.depth, reference.depth, rtol=1e-5)
    assert budgeted.final_loss == pytest.approx(reference.final_loss, rel=1e-5)


def test_a_slow_first_step_is_not_taken_for_every_step(clock):
    completer = completer_on(clock)
    # The frame's first step also builds its caches: 0.5 s here, later steps 0.1 s.
    completer.step_times.first_step, completer.step_times.step = 0.5, STEP_S
    completer.step_times.finish = DECODE_S
    result = completer.complete(*frame(), deadline=clock.now + 1.0)
    # Steps start at 0, 0.1, ...: each needs 0.1 + 0.05 to fit (the first 0.5 + 0.05).
    assert result.iterations == 9 and clock.now <= 1000.0 + 1.0 + 1e-9


def test_a_stale_slow_step_estimate_does_not_lock_steps_out(clock):
    completer = completer_on(clock)
    completer.step_times.first_step = completer.step_times.step = 5.0  # one slow outlier
    completer.step_times.finish = DECODE_S
    iterations = []
    for _ in range(20):
        iterations.append(completer.complete(*frame(), deadline=clock.now + 1.0).iterations)
        completer.reset()
    assert iterations[0] == 0 and iterations[-1] == 9
    # Only the later steps' estimate stale: the first step runs and is measured, the second
    # is refused until the stale estimate has decayed.
    completer.step_times.step = 5.0
    iterations = [completer.complete(*frame(), deadline=clock.now + 1.0).iterations
                  for _ in range(20)]
    assert iterations[0] == 1 and iterations[-1] == 9


def test_a_deadline_already_past_gives_the_aligned_prior(clock):
    result = completer_on(clock).complete(*frame(), deadline=clock.now - 1.0)
    assert result.iterations == 0 and result.stopped_at_deadline
    assert result.status is CompletionStatus.ALIGNMENT_ONLY and np.isfinite(result.depth).all()


def test_warm_start_improves_over_a_sequence_within_the_budget(clock):
    completer = completer_on(clock, warm_start=True, warm_iterations=40)
    image, sparse = frame(2)
    losses = []
    for _ in range(4):  # the same view: each frame continues where the last one stopped
        deadline = clock.now + 0.5
        result = completer.complete(image, sparse, deadline=deadline)
        assert clock.now <= deadline + STEP_S  # the first frame plans without durations
        losses.append(result.final_loss)
    assert losses[-1] < losses[0] and sorted(losses, reverse=True) == losses


def test_the_config_budget_sets_the_deadline_and_must_not_be_negative(clock):
    completer = completer_on(clock, time_budget=0.5)
    start = clock.now
    result = completer.complete(*frame())
    assert result.stopped_at_deadline and 0 < result.iterations < 40
    assert clock.now <= start + 0.5 + STEP_S
    with pytest.raises(ValueError, match='time_budget'):
        TTOConfig(time_budget=-1.0)


def test_a_deadline_counts_the_steps_in_flight(clock):
    times = StepTimes(first_step=0.2, step=0.1, finish=0.05)
    deadline = FrameDeadline(clock.now + 0.3, times)
    assert deadline.another_step_fits()  # 0.3 s left: the first step (0.2), the finish (0.05)
    # A second step (0.1) fits after the first only once that one has ended ...
    assert not deadline.another_step_fits((), in_flight=1)  # 0.2 + 0.1 + 0.05 > 0.3
    deadline = FrameDeadline(clock.now + 0.3, times)
    deadline.another_step_fits()
    clock.now += 0.1  # ... as the device reports 0.1 s later (its first step took 0.1)
    assert deadline.another_step_fits((0.1,), in_flight=0)
    # The durations read late are recorded in order: the frame's first step, then later ones.
    times = StepTimes()
    deadline = FrameDeadline(None, times)
    deadline.another_step_fits()
    deadline.another_step_fits((), in_flight=1)
    deadline.another_step_fits((0.3, 0.12), in_flight=1)
    assert (times.first_step, times.step) == (0.3, 0.12)


def test_step_durations_come_from_the_posts_without_a_wait(clock):
    posts = StepPosts(torch.device('cpu'))
    for seconds in (0.5, 0.1, 0.1):
        clock.now += seconds
        posts.post(torch.tensor(True))
    assert not posts.settle(3)
    assert posts.take_durations() == pytest.approx([0.5, 0.1, 0.1])
    assert posts.take_durations() == []
