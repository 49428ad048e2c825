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
Work spread over a Ray cluster, or done in this process: the plumbing of ``--ray ADDRESS``.

``lrda densify`` and ``lrda paper`` both cut their work into *units* (a chunk of a
recording, frames of a dataset): a unit's items go to one worker, in order, after one ``start``
call, so state a worker carries from item to item (warm start) stays as in a local run. A worker
is any class with ``describe()``, ``start(*args)`` and ``complete(*args)``; it loads its model
once when built. :class:`LocalPool` builds one in this process (no Ray needed);
:class:`RayPool` builds Ray actors, each with a GPU of its own where the cluster has GPUs (a
share of one when there are more workers than GPUs), else one CPU. :func:`run_units` keeps every
worker busy: it sends each a few items ahead (Ray runs one caller's calls to an actor in the
order they were made) and hands back each result as it comes. Ray is imported only with
``--ray``; the workers import ``lrda_ros``, so it must be installed on every node.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
import logging
import socket
from typing import Any, Callable, Iterable, Iterator

from .errors import ConfigError

#: What to install for ``--ray``.
RAY_INSTALL = "pip install 'lrda_ros[cluster]'"
#: Seconds to wait for a TCP answer from a cluster's address (Ray itself retries for minutes).
CONNECT_TIMEOUT_S = 5.0


def check_ray_options(address: str | None, workers: int, device: str,
                      device_option: str = '--device', device_field: str = '--device') -> None:
    """
    Reject ``--ray`` / ``--workers`` combinations at start-up, before data or a model loads.

    Ray must be importable, and a ``host:port`` or ``ray://host:port`` address must answer:
    ``ray.init`` would otherwise retry an unreachable one for minutes. ``device_option`` names
    the device setting in the message, ``device_field`` in the error's field.
    """
    if workers < 0:
        raise ConfigError(f'--workers must be 0 (one per GPU or CPU) or more, got {workers}',
                          field='--workers')
    if address is None:
        if workers > 0:
            raise ConfigError('--workers sets the Ray workers: give --ray ADDRESS too, or drop '
                              '--workers', field='--workers')
        return
    if device.startswith('cuda:'):
        raise ConfigError(f'{device_option} {device} names one GPU, but each Ray worker gets its '
                          "own: use 'auto' or 'cuda'", field=device_field)
    try:
        import ray  # noqa: F401
    except ImportError:
        raise ConfigError(f'--ray needs Ray: {RAY_INSTALL}', field='--ray') from None
    if address in ('auto', 'local'):
        return  # Ray finds (or starts) the instance and says at once when it cannot
    host, _, port = address.removeprefix('ray://').rpartition(':')
    if not host or not port.isdigit():
        raise ConfigError(f"--ray must be 'auto', 'local', host:port or ray://host:port, got "
                          f'{address!r}', field='--ray')
    try:
        socket.create_connection((host.strip('[]'), int(port)), CONNECT_TIMEOUT_S).close()
    except OSError as error:
        reason = error.strerror or str(error) or type(error).__name__
        raise ConfigError(f'--ray {address}: no Ray cluster answers there ({reason}); start one '
                          "with 'ray start --head' or give its address", field='--ray') from None


class LocalPool:
    """One worker in this process (no Ray)."""

    in_flight = 1
    size = 1

    def __init__(self, worker_class: type, *args: Any) -> None:
        self.worker = worker_class(*args)
        self._done: deque = deque()

    def describe(self) -> list[dict[str, Any]]:
        """Return what the worker loaded."""
        return [self.worker.describe()]

    def start(self, slot: int, *args: Any) -> None:
        """Begin a unit."""
        self.worker.start(*args)

    def submit(self, slot: int, *args: Any) -> None:
        """Complete an item now."""
        self._done.append(self.worker.complete(*args))

    def next_result(self) -> tuple[int, Any]:
        """Return the item completed first."""
        return 0, self._done.popleft()

    def close(self) -> None:
        """Nothing to end."""


class RayPool:
    """Workers as Ray actors, one unit at a time each (slot = actor)."""

    #: Items sent ahead to an actor.
    in_flight = 2

    def __init__(self, address: str, workers: int, device: str, worker_class: type,
                 *args: Any, units: int | None = None) -> None:
        """
        Connect to ``address`` and start the workers.

        ``workers`` 0: one per GPU, or per CPU without GPUs; never more than ``units`` (each
        loads a model: an actor without work is only a cost).
        """
        try:
            import ray
        except ImportError:
            raise ConfigError(f'--ray needs Ray: {RAY_INSTALL}', field='--ray') from None
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
                gpus = 0  # the device option asks for the CPU
            count = workers or gpus or cpus
            if count > cpus:
                raise ConfigError(f'--workers {count}: the Ray cluster has {cpus} CPUs and '
                                  'each worker takes one: ask for fewer', field='--workers')
            count = max(1, min(count, units)) if units is not None else count
            actor = ray.remote(num_cpus=1, num_gpus=min(1.0, gpus / count) if gpus else 0)(
                worker_class)
            self.actors = [actor.remote(*args) for _ in range(count)]
            self._pending: dict[int, deque] = {slot: deque() for slot in range(count)}
        except BaseException:
            self.close()
            raise

    @property
    def size(self) -> int:
        """Return the number of workers."""
        return len(self.actors)

    def describe(self) -> list[dict[str, Any]]:
        """Wait until every worker has loaded its model; return what each loaded."""
        return [self._get(actor.describe.remote()) for actor in self.actors]

    def start(self, slot: int, *args: Any) -> None:
        """Begin a unit on a worker (runs before the items sent after it)."""
        self._pending[slot].append(self.actors[slot].start.remote(*args))

    def submit(self, slot: int, *args: Any) -> None:
        """Send an item of the worker's unit."""
        self._pending[slot].append(self.actors[slot].complete.remote(*args))

    def next_result(self) -> tuple[int, Any]:
        """Return the next item finished by any worker (each worker's in order)."""
        while True:
            heads = {queue[0]: slot for slot, queue in self._pending.items() if queue}
            ready, _ = self._ray.wait(list(heads), num_returns=1)
            slot = heads[ready[0]]
            result = self._get(self._pending[slot].popleft())
            if result is not None:  # None: a unit's start
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


def make_pool(address: str | None, workers: int, device: str, worker_class: type, *args: Any,
              units: int | None = None) -> LocalPool | RayPool:
    """Return a :class:`LocalPool` without an address, else a :class:`RayPool` on it."""
    if address is None:
        return LocalPool(worker_class, *args)
    return RayPool(address, workers, device, worker_class, *args, units=units)


@dataclass
class Unit:
    """Items one worker completes in order after one ``start``: a chunk, a dataset's frames."""

    #: The arguments of the worker's ``start``.
    start: tuple
    #: The arguments of each ``complete`` call, produced only as they are sent.
    items: Iterator[tuple]
    #: What the caller needs to file a result (a recording's name, a dataset).
    tag: Any = None


@dataclass
class _Running:
    unit: Unit
    out: int = 0


def run_units(pool: LocalPool | RayPool, units: Iterable[Unit],
              on_result: Callable[[Unit, Any], None]) -> None:
    """Complete every unit's items on the pool; call ``on_result`` for each as it finishes."""
    queue = deque(units)
    running: dict[int, _Running] = {}

    def send(slot: int) -> None:
        task = running[slot]
        while task.out < pool.in_flight:
            item = next(task.unit.items, None)
            if item is None:
                break
            pool.submit(slot, *item)
            task.out += 1
        if task.out == 0:
            del running[slot]

    while queue or running:
        for slot in range(pool.size):
            if slot not in running and queue:
                unit = queue.popleft()
                pool.start(slot, *unit.start)
                running[slot] = _Running(unit)
                send(slot)
        if not running:
            continue
        slot, result = pool.next_result()
        task = running[slot]
        task.out -= 1
        on_result(task.unit, result)
        send(slot)
