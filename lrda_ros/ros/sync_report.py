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
What a camera's synchronizer lost, into its counters and warnings (each /diagnostics period).

Per reason (:mod:`~lrda_ros.messages.sync_losses`), and per input for the frames lost because
that input had no message (``missing (<input>)``: which of several point clouds). Each grown
count is warned about under its one name (:mod:`~lrda_ros.messages.causes`).
"""

from __future__ import annotations

import threading
from typing import Callable

from .cameras import Camera
from ..messages.causes import MISSING
from ..settings import NodeSettings

#: Warns about a camera, throttled per key: (camera, key, message).
WarnCamera = Callable[[Camera, str, str], None]


def report_sync_losses(camera: Camera, settings: NodeSettings, stats_lock: threading.Lock,
                       warn: WarnCamera) -> None:
    """Count what the camera's synchronizer dropped; warn naming offsets, slop and inputs."""
    handle = camera.subscriptions_handle
    counts = handle.loss_counts() if handle is not None else None
    if counts is None:
        return
    missing = handle.missing_counts() or {}
    with stats_lock:
        stats = camera.stats
        stats.sync_losses.update({reason: n - stats.sync_losses[reason]
                                  for reason, n in counts.items()})
        stats.unsynchronized = sum(counts.values())
        stats.missing.update({topic: n - stats.missing[topic] for topic, n in missing.items()})
    last = handle.last_losses()
    for reason, count in counts.items():
        if count > camera.reported_losses[reason] and reason in last:
            camera.reported_losses[reason] = count
            warn(camera, f'unsynchronized:{reason}',
                 handle.loss_message(reason, count, last[reason], settings.sync_slop,
                                     settings.sync_queue_size))
    for topic, count in missing.items():
        key = f'{MISSING}:{topic}'
        if count > camera.reported_losses[key]:
            camera.reported_losses[key] = count
            warn(camera, key, handle.missing_message(topic, count, settings.sync_slop))
    problem = handle.first_sets_problem(settings.sync_slop)
    if problem:  # early, before the queues overflow: the first messages cannot pair
        warn(camera, 'unsynchronized:first_sets', problem)
