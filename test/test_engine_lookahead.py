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

"""The host queues at most LOOKAHEAD steps past the newest stop flag it has read."""

from __future__ import annotations

import copy

from conftest import counted_steps, smooth_image, tiny_network
from lrda_ros.engine import DepthCompleter, DepthModel, TTOConfig
from lrda_ros.engine.lookahead import LOOKAHEAD, StepPosts
import numpy as np
import torch

NETWORK = tiny_network(seed=4)


def slow_device(monkeypatch) -> None:
    """
    Make StepPosts see a device far slower than the host, as a GPU replaying cheap graphs is.

    A posted step is taken to finish only when the host waits for it (and with it every
    earlier step, in stream order): the worst case for how far the host runs ahead.
    """
    def landed(self, step):
        return step <= getattr(self, 'finished', -1)

    def wait(self, step):
        self.finished = max(step, getattr(self, 'finished', -1))

    monkeypatch.setattr(StepPosts, '_landed', landed)
    monkeypatch.setattr(StepPosts, '_wait', wait)


def frame():
    image = smooth_image(3)
    rng = np.random.default_rng(3)
    sparse = np.zeros(image.shape[:2], np.float32)
    sparse.flat[rng.choice(sparse.size, 300, replace=False)] = rng.uniform(2, 6, 300)
    return image, sparse


def run_counted(**options):
    """Complete a frame; return the result and the steps computed."""
    completer = DepthCompleter(DepthModel(copy.deepcopy(NETWORK)),
                               TTOConfig(device='cpu', iterations=30, **options))
    computed = counted_steps(completer)
    return completer.complete(*frame()), computed[0]


def test_a_stop_is_seen_within_the_lookahead_and_the_masked_steps_change_nothing(
        monkeypatch):
    # A plateau rule that ends the frame long before its 30 steps.
    options = {'convergence_tol': 0.05, 'patience': 2}
    on_cpu, computed_cpu = run_counted(**options)
    assert 0 < on_cpu.iterations < 30
    # On the CPU a step has finished when the host goes on: no step runs past the stop.
    assert computed_cpu == on_cpu.iterations
    slow_device(monkeypatch)
    lagging, computed = run_counted(**options)
    # The host saw the stop LOOKAHEAD steps late: it queued LOOKAHEAD - 1 masked steps.
    assert lagging.iterations == on_cpu.iterations
    assert computed == lagging.iterations + LOOKAHEAD - 1
    assert lagging.losses == on_cpu.losses
    np.testing.assert_array_equal(lagging.depth, on_cpu.depth)


def test_the_host_never_waits_for_a_step_closer_than_the_lookahead(monkeypatch):
    slow_device(monkeypatch)
    posts = StepPosts(torch.device('cpu'))
    going = torch.tensor(True)
    for step in range(10):
        assert not posts.settle(step)
        # Only the step LOOKAHEAD back has been waited for: the ones after it are in flight.
        assert posts.in_flight == min(step, LOOKAHEAD - 1)
        posts.post(going)
    stop_at = posts.posted
    posts.post(torch.tensor(False))  # this step's rule stopped the steps after it
    queued = stop_at + 1
    while not posts.settle(queued):
        posts.post(torch.tensor(False))  # a masked step
        queued += 1
    assert queued - (stop_at + 1) == LOOKAHEAD - 1
    assert len(posts.take_durations()) == posts.read
