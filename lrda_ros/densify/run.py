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
``lrda densify``: complete every synchronized frame of rosbag2 recordings, as the node would.

Recordings are planned first (synchronized sets, transforms, output topics), so a bad input or
option fails before a model loads. Chunks of frames then go to a worker each (this process, or
Ray actors with ``--ray``), frames of a chunk in order so warm start carries as in the node;
every finished frame is stored at once (``lrda_ros.densify.store``), so ``--resume`` continues
an interrupted run where it stopped. Last, each recording is written as a new bag: its own
messages and the node's outputs (``lrda_ros.densify.writer``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
import time
from typing import Any, Callable

from tqdm import tqdm

from .options import check_options, DensifyOptions, output_topics
from .recordings import Chunk, open_recording, Recording
from .store import PartialStore
from .worker import FrameResult, FrameWorker
from ..cluster import make_pool, run_units, Unit
from ..errors import ConfigError


@dataclass
class DensifyReport:
    """What a run did."""

    #: The bags written.
    outputs: list[Path]
    #: Synchronized frames in the recordings.
    frames: int
    #: Frames completed by this run (not counting those an earlier run finished).
    completed: int = 0
    #: Frames an interrupted run had finished.
    reused: int = 0
    #: Frames dropped (no output), per the node's reason.
    dropped: Counter = field(default_factory=Counter)
    #: Completed frames per motion alignment outcome (the node's names) or 'off'.
    motion: Counter = field(default_factory=Counter)
    #: Seconds from the first frame sent to the last one back (model loading excluded).
    seconds: float = 0.0
    #: What each worker loaded (model, device).
    workers: list[dict[str, Any]] = field(default_factory=list)
    #: The rule that paired clouds with images (the node's: sync.*, motion.align).
    paired_by: str = ''

    @property
    def frames_per_second(self) -> float:
        """Return the completion rate of this run (frames per second)."""
        return self.completed / self.seconds if self.seconds > 0 else float('nan')


def run_densify(options: DensifyOptions,
                on_frame: Callable[[FrameResult], None] | None = None) -> DensifyReport:
    """Densify ``options.bags`` into ``options.output`` (see the module docstring)."""
    settings = check_options(options)
    recordings = [open_recording(Path(bag), options.topics, settings.sync_queue_size,
                                 settings.sync_slop, settings.extrinsic, settings.motion)
                  for bag in options.bags]
    if options.max_frames is not None:
        recordings = [replace(r, frames=r.frames[:options.max_frames]) for r in recordings]
    topics = [output_topics(options.namespace, recording.topics.image)
              for recording in recordings]
    for recording, written in zip(recordings, topics):
        with_inputs = set(written.values()) & _recorded_topics(recording)
        if with_inputs:
            raise ConfigError(f'{recording.path} already records '
                              f'{", ".join(sorted(with_inputs))}: write the outputs elsewhere '
                              'with --namespace', field='--namespace')
    manifest = {'bags': [str(Path(bag).resolve()) for bag in options.bags],
                'parameters': dict(sorted(options.parameters.items())),
                # more_points as JSON reads it back (a list), so a resume compares equal.
                'topics': {**asdict(options.topics),
                           'more_points': list(options.topics.more_points)},
                'namespace': options.namespace,
                'chunk_frames': options.chunk_frames, 'storage': options.storage,
                **({'max_frames': options.max_frames} if options.max_frames else {})}
    store = PartialStore(options.output, manifest, [r.name for r in recordings],
                         options.resume, options.overwrite)
    report = DensifyReport([Path(options.output) / r.name for r in recordings],
                           sum(len(r.frames) for r in recordings),
                           paired_by=settings.pairing.describe())
    todo = []
    for number, recording in enumerate(recordings):
        if store.finished(recording.name):
            report.reused += len(recording.frames)
            continue
        for chunk in recording.chunks(number, options.chunk_frames):
            start, warm_state = store.progress(recording.name, chunk)
            report.reused += sum(frame.index < start for frame in chunk.frames)
            if start <= chunk.frames[-1].index:
                todo.append((recording, chunk, start, warm_state))
    if todo:
        _complete(options, settings.tto.device, todo, store, report, on_frame)
    for recording, written in zip(recordings, topics):
        if not store.finished(recording.name):
            write_densified_recording(recording, written, options, store)
            store.discard(recording.name)
    store.close()
    return report


def write_densified_recording(recording: Recording, topics: dict[str, str],
                              options: DensifyOptions, store: PartialStore) -> None:
    """Write one recording's output bag from its stored frames."""
    from .writer import write_densified

    write_densified(Path(options.output) / recording.name, recording, topics, options.storage,
                    lambda index: store.load(recording.name, index))


def _recorded_topics(recording: Recording) -> set[str]:
    from contextlib import closing

    from ..messages.rosbag import open_reader

    with closing(open_reader(recording.path)) as reader:
        return {connection.topic for connection in reader.connections}


def _complete(options: DensifyOptions, device: str,
              todo: list[tuple[Recording, Chunk, int, bytes | None]], store: PartialStore,
              report: DensifyReport, on_frame: Callable[[FrameResult], None] | None) -> None:
    """Complete the frames left, a chunk per worker at a time; store each as it finishes."""
    pool = make_pool(options.ray_address, options.workers, device, FrameWorker,
                     dict(options.parameters), units=len(todo))
    bar = None
    try:
        report.workers = pool.describe()
        bar = tqdm(total=report.frames, initial=report.reused, unit='frame', desc='densify',
                   disable=not options.progress, dynamic_ncols=True)
        started = time.perf_counter()

        def finished(unit: Unit, result: FrameResult) -> None:
            name, chunk = unit.tag
            store.save(name, chunk, result)
            report.completed += 1
            if result.dropped:
                report.dropped[result.dropped] += 1
            else:
                report.motion[result.motion] += 1
            report.seconds = time.perf_counter() - started
            bar.update(1)
            if on_frame is not None:
                on_frame(result)

        # Chunks are read only when a worker takes them (a generator reads nothing until then).
        run_units(pool, [Unit((warm_state, recording.odometry),
                              ((frame,) for frame in recording.read(chunk, start)),
                              (recording.name, chunk))
                         for recording, chunk, start, warm_state in todo], finished)
    finally:
        if bar is not None:
            bar.close()
        pool.close()
