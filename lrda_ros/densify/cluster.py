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
``lrda densify --ray ADDRESS``: the chunks of the recordings on the workers of a Ray cluster.

Each worker is a Ray actor holding one :class:`~lrda_ros.densify.worker.FrameWorker` (the model
loaded once) with a GPU of its own where the cluster has GPUs (a share of one when there are
more workers than GPUs), else one CPU. The driver reads the recordings and sends each actor the
frames of its chunk in order, a few ahead, so the actor is never idle waiting for the next
frame; Ray runs one caller's calls to an actor in the order they were made. Ray is imported only
here, only with ``--ray``. The workers import ``lrda_ros``: it must be installed on every node.
"""

from __future__ import annotations

from collections import deque
import logging
from typing import Any, Mapping

from .recordings import RawFrame
from .worker import FrameResult, FrameWorker
from ..errors import ConfigError


class RayPool:
    """Frame workers as Ray actors, one chunk at a time each (slot = actor)."""

    #: Frames sent ahead to an actor.
    in_flight = 2

    def __init__(self, address: str, workers: int, parameters: Mapping[str, Any],
                 device: str) -> None:
        try:
            import ray
        except ImportError:
            raise ConfigError('--ray needs Ray: pip install ray (the cluster extra of '
                              'lrda_ros)', field='--ray') from None
        if device.startswith('cuda:'):
            raise ConfigError(f"parameter 'device': {device} names one GPU, but each Ray worker "
                              "gets its own: use 'auto' or 'cuda'", field='device')
        self._ray = ray
        self._owned = not ray.is_initialized()
        if self._owned:
            try:
                ray.init(address=address, logging_level=logging.WARNING)
            except (ConnectionError, ValueError, RuntimeError) as error:
                raise ConfigError(f'--ray {address}: cannot connect ({str(error).strip()})',
                                  field='--ray') from None
        try:
            resources = ray.cluster_resources()
            cpus, gpus = int(resources.get('CPU', 0)), int(resources.get('GPU', 0))
            if device == 'cpu':
                gpus = 0  # the node's device parameter asks for the CPU
            count = workers or gpus or cpus
            if count > cpus:
                raise ConfigError(f'--workers {count}: the Ray cluster has {cpus} CPUs and '
                                  'each worker takes one: ask for fewer', field='--workers')
            actor = ray.remote(num_cpus=1, num_gpus=min(1.0, gpus / count) if gpus else 0)(
                FrameWorker)
            self.actors = [actor.remote(dict(parameters)) for _ in range(count)]
            self._pending: dict[int, deque] = {slot: deque() for slot in range(count)}
        except BaseException:
            self.close()
            raise

    @property
    def size(self) -> int:
        """Return the number of workers."""
        return len(self.actors)

    def describe(self) -> list[dict[str, Any]]:
        """Wait until every worker has loaded the model; return what each loaded."""
        return [self._get(actor.describe.remote()) for actor in self.actors]

    def start(self, slot: int, warm_state: bytes | None) -> None:
        """Begin a chunk on a worker (runs before the frames sent after it)."""
        self._pending[slot].append(self.actors[slot].start.remote(warm_state))

    def submit(self, slot: int, frame: RawFrame) -> None:
        """Send a frame of the worker's chunk."""
        self._pending[slot].append(self.actors[slot].complete.remote(frame))

    def next_result(self) -> tuple[int, FrameResult]:
        """Return the next frame finished by any worker (each worker's in order)."""
        while True:
            heads = {queue[0]: slot for slot, queue in self._pending.items() if queue}
            ready, _ = self._ray.wait(list(heads), num_returns=1)
            slot = heads[ready[0]]
            result = self._get(self._pending[slot].popleft())
            if result is not None:  # None: a chunk's start
                return slot, result

    def _get(self, ref):
        exceptions = self._ray.exceptions
        try:
            return self._ray.get(ref)
        except exceptions.RayTaskError as error:
            cause = getattr(error, 'cause', None)
            if isinstance(cause, Exception):
                raise cause from None  # the worker's own error, as a local run shows it
            raise RuntimeError(f'a Ray worker failed: {str(error).strip().splitlines()[0]}'
                               ) from None
        except exceptions.RayActorError as error:
            lines = [line for line in str(error).splitlines() if line.strip()]
            raise RuntimeError('a Ray worker died: ' + (lines[-1] if lines else '')) from None

    def close(self) -> None:
        """End the workers; disconnect (and stop a Ray instance this run started)."""
        for actor in getattr(self, 'actors', []):
            self._ray.kill(actor)
        self.actors = []
        if self._owned and self._ray.is_initialized():
            self._ray.shutdown()
