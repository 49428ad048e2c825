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
``lrda paper``: the paper's accuracy table in one command, on the paper's protocols.

Each given dataset is opened under its protocol (:data:`PROTOCOLS`; the loaders' docstrings
name the sources), every method runs on every frame, and each frame's results are appended to
``frames/<dataset>.jsonl`` at once, so an interrupted run continues with ``--resume`` where it
stopped (methods resumed mid-sequence start cold). A frame that cannot be read is reported,
recorded as skipped and left out; a method failing on a frame is recorded as failed. The report
(``paper.md``, ``paper.json``, ``paper.png``; :mod:`lrda_ros.paper.report`)
sets our MAE / RMSE beside the paper's row for the same backbone and method.
"""

from __future__ import annotations

from dataclasses import replace
import json
import math
from pathlib import Path
import sys
import time
from types import MappingProxyType
from typing import Iterator
import zlib

import numpy as np
from tqdm import tqdm

from .options import PaperOptions, PaperProtocol, PROTOCOLS
from .published import backbone_of, PAPER_BACKBONES
from .report import write_report
from .worker import clean, PaperWorker
from ..cluster import check_ray_options, make_pool, run_units, Unit
from ..datasets import FrameDataset
from ..engine import TTOConfig
from ..errors import ConfigError, InputError
from ..eval.methods import METHODS
from ..eval.metrics import aggregate, DepthMetrics
from ..eval.options import PROTOCOL_PARAMETERS
from ..eval.report import engine_metadata


#: Settings a resumed run must share with the run it continues (methods may be added).
RESUME_KEYS = ('model', 'iterations', 'warm_iterations', 'schedule', 'learning_rate',
               'processing_size', 'dtype', 'seed')


def check_options(options: PaperOptions) -> None:
    """Reject unusable options, naming the option."""
    unknown = [m for m in options.methods if m not in METHODS]
    problems = [
        (not options.methods, '--methods', '--methods names no method'),
        (bool(unknown), '--methods', f'unknown methods {unknown}; choose from '
                                     f'{", ".join(METHODS)}'),
        (options.max_frames is not None and options.max_frames < 1, '--max-frames',
         f'--max-frames must be at least 1, got {options.max_frames}'),
        (options.resume and options.overwrite, '--resume', '--resume continues the results in '
         f'{options.output}, --overwrite deletes them: give one'),
        (options.paper_backbone is not None and options.paper_backbone not in PAPER_BACKBONES,
         '--paper-backbone', f'--paper-backbone must be one of {", ".join(PAPER_BACKBONES)}'),
    ]
    for key, root in options.roots.items():
        problems.append((key not in PROTOCOLS, f'--{key}', f'unknown dataset {key!r}'))
        problems.append((not Path(root).exists(), f'--{key.replace("_", "-")}',
                         f'--{key.replace("_", "-")} {root}: no such file or folder'))
    for rejected, option, message in problems:
        if rejected:
            raise ConfigError(message, field=option)
    check_ray_options(options.ray_address, options.workers, _base_config(options).device)


# --------------------------------------------------------------------------- per-frame store

class FrameStore:
    """The per-frame results of one dataset: one JSON object per line, appended and flushed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.records: list[dict] = []
        self._methods: dict[int, set[str]] = {}
        if path.is_file():
            text = path.read_text()
            if text and not text.endswith('\n'):
                with path.open('a') as f:  # end a cut line, so the next record starts anew
                    f.write('\n')
            for number, line in enumerate(text.splitlines(), 1):
                try:
                    self._add(json.loads(line))
                except (ValueError, KeyError, TypeError):
                    # An interrupted write leaves at most a partial last line: redo that frame.
                    print(f'{path}:{number}: unreadable line ignored', file=sys.stderr)

    def _add(self, record: dict) -> None:
        if record.get('kind') == 'method':
            self._methods.setdefault(int(record['index']), set()).add(record['method'])
        self.records.append(record)

    def done(self, index: int) -> set[str]:
        """Return the methods recorded for frame ``index`` (a skipped frame is tried again)."""
        return self._methods.get(index, set())

    def append(self, record: dict) -> None:
        """Record one result now (a crash loses at most the frame in progress)."""
        self._add(record)
        with self.path.open('a') as f:
            f.write(json.dumps(record) + '\n')


# --------------------------------------------------------------------------- the run

def _prepare_output(options: PaperOptions, settings: dict) -> None:
    """Refuse to mix with an earlier run unless resumed with its settings, or overwritten."""
    frames_dir = options.output / 'frames'
    run_file = options.output / 'run.json'
    existing = sorted(frames_dir.glob('*.jsonl')) if frames_dir.is_dir() else []
    if existing and not (options.resume or options.overwrite):
        raise ConfigError(f'{options.output} holds the results of an earlier run: --resume to '
                          'continue it, --overwrite to start again, or another --output',
                          field='--output')
    if options.overwrite:
        for path in existing:
            path.unlink()
    if options.resume and run_file.is_file():
        earlier = json.loads(run_file.read_text())
        changed = [k for k in RESUME_KEYS if earlier.get(k) != settings.get(k)]
        if changed:
            raise ConfigError(f'--resume: the run in {options.output} used other settings '
                              f'({", ".join(f"{k}={earlier.get(k)!r}" for k in changed)}); '
                              'give the same, or --overwrite', field='--resume')
    frames_dir.mkdir(parents=True, exist_ok=True)


def _config(options: PaperOptions, protocol: PaperProtocol) -> TTOConfig:
    size = options.processing_size or protocol.processing_size
    return replace(_base_config(options), processing_size=size)


#: The paper's table is of its fixed schedule (40 steps; --schedule compares another).
PAPER_PARAMETERS = MappingProxyType({**PROTOCOL_PARAMETERS, 'schedule': 'paper'})


def _base_config(options: PaperOptions) -> TTOConfig:
    """Return the engine configuration of every protocol, but for the processing size."""
    return options.engine_config(options.node_settings(PAPER_PARAMETERS))


def _settings(options: PaperOptions) -> dict:
    """Return what a resumed run must share with the run it continues, and what it ran."""
    config = _base_config(options)
    return {'model': options.model_spec(options.node_settings(PAPER_PARAMETERS)),
            'iterations': config.iterations, 'warm_iterations': config.warm_iterations,
            'schedule': config.schedule,
            'learning_rate': config.learning_rate, 'processing_size': options.processing_size,
            'dtype': config.dtype, 'seed': options.seed, 'methods': list(options.methods),
            'roots': {k: str(v) for k, v in options.roots.items()}}


#: What reading a damaged or missing frame raises (the loaders' errors included).
FRAME_ERRORS = (OSError, ValueError, KeyError, EOFError, zlib.error, IndexError)


def _units(protocol: PaperProtocol, dataset: FrameDataset, store: FrameStore,
           options: PaperOptions, count: int, bar: tqdm) -> list[Unit]:
    """
    Cut a dataset's frames still to do into units a worker completes in order.

    A warm-started method needs every frame of a sequence, in order, on one worker, and the
    sequences are known only once frames are read: while one is to run, the dataset is one unit.
    Otherwise every frame starts cold and is a unit of its own, for any worker; the results are
    the same as in one process, since a cold start depends on nothing an earlier frame left.
    """
    todo = {i: set(options.methods) - store.done(i) for i in range(count)}
    pending = [i for i in range(count) if todo[i]]
    config = _config(options, protocol)
    carries = any(METHODS[m].warm_start for i in pending for m in todo[i])
    groups = [pending] if carries and pending else [[i] for i in pending]
    return [Unit((options.methods, config),
                 _frames(protocol, dataset, store, group, options.methods, count, bar),
                 (protocol, store, bar)) for group in groups]


def _frames(protocol: PaperProtocol, dataset: FrameDataset, store: FrameStore,
            indices: list[int], methods: tuple[str, ...], count: int,
            bar: tqdm) -> Iterator[tuple]:
    """Read the frames (in the driver) as a worker needs them: (index, frame, methods to run)."""
    for index in indices:
        todo = [m for m in methods if m not in store.done(index)]
        bar.set_postfix_str(f'{protocol.label} {index + 1}/{count}')
        try:
            frame = dataset[index]
            if frame.gt_depth is None or not np.any(frame.gt_depth > 0):
                raise InputError('no valid ground truth', field='gt_depth')
        except FRAME_ERRORS as error:
            message = f'{type(error).__name__}: {(str(error).splitlines() or [""])[0]}'
            tqdm.write(f'{protocol.label}: frame {index} skipped: {message}', file=sys.stderr)
            store.append({'kind': 'skipped', 'index': index, 'error': message})
            bar.update(1)
            continue
        store.append(clean({'kind': 'frame', 'index': index, 'frame': frame.name,
                            'input_points': int(np.count_nonzero(frame.sparse_depth)),
                            'gt_points': int(np.count_nonzero(frame.gt_depth > 0)),
                            'notes': frame.notes}))
        yield index, frame, todo


def _finished(unit: Unit, records: list[dict]) -> None:
    """Store a frame's records as they come back from a worker."""
    protocol, store, bar = unit.tag
    for record in records:
        store.append(record)
        if record.get('status') == 'failed':
            tqdm.write(f"{protocol.label}: {record['method']} failed on {record['frame']}: "
                       f"{record['error']}", file=sys.stderr)
    bar.update(1)


def summarize(store: FrameStore, methods: tuple[str, ...], count: int) -> dict:
    """Aggregate one dataset's records: per method the mean of per-frame metrics."""
    records = [r for r in store.records if r.get('index', count) < count]
    latest_read = {}  # the last attempt to read each frame decides: read or skipped
    for r in records:
        if r.get('kind') in ('frame', 'skipped'):
            latest_read[r['index']] = r
    frames = {i: r for i, r in latest_read.items() if r['kind'] == 'frame'}
    skipped = [r for r in latest_read.values() if r['kind'] == 'skipped']
    removed = [f.get('notes', {}).get('outliers_removed') for f in frames.values()]
    removed = [n for n in removed if n is not None]
    summary = {'frames_evaluated': len(frames), 'frames_skipped': len(skipped),
               'skipped': [{'index': r['index'], 'error': r.get('error', '')} for r in skipped],
               'input_points_mean': float(np.mean([f['input_points'] for f in frames.values()]))
               if frames else None,
               'outliers_removed_mean': float(np.mean(removed)) if removed else None,
               'methods': {}}
    for method in methods:
        latest = {}
        for r in records:
            if r.get('kind') == 'method' and r.get('method') == method \
                    and r['index'] in frames:
                latest[r['index']] = r  # a redone frame replaces the earlier record
        scored = [r for r in latest.values() if r.get('metrics') and
                  r['metrics'].get('mae') is not None]
        entry = {'frames': len(scored), 'failures': len(latest) - len(scored)}
        if scored:
            values = [DepthMetrics(**{k: (math.nan if v is None else v)
                                      for k, v in r['metrics'].items()}) for r in scored]
            entry.update(clean(aggregate(values).to_dict()))
            entry['seconds_per_frame'] = float(np.mean([r['seconds'] for r in scored]))
            entry['peak_mb'] = float(np.max([r['peak_mb'] for r in scored]))
        summary['methods'][method] = entry
    return summary


def run_paper(options: PaperOptions) -> dict:
    """Run every given dataset under its protocol, write the report and return its data."""
    check_options(options)
    options.output = Path(options.output)
    opened = []
    for key, protocol in PROTOCOLS.items():
        if key in options.roots:
            # Layout problems surface here, before hours of computing.
            opened.append((protocol, protocol.opener(Path(options.roots[key]), options.seed)))
    if not opened:
        raise ConfigError('no dataset given: pass at least one of '
                          + ', '.join(f'--{k.replace("_", "-")}' for k in PROTOCOLS),
                          field='--datasets')
    settings = _settings(options)
    _prepare_output(options, settings)
    stores = {p.key: FrameStore(options.output / 'frames' / f'{p.key}.jsonl') for p, _ in opened}
    counts = {p.key: len(d) if options.max_frames is None else min(len(d), options.max_frames)
              for p, d in opened}
    done = sum(1 for p, _ in opened for i in range(counts[p.key])
               if set(options.methods) <= stores[p.key].done(i))
    with tqdm(total=sum(counts.values()), initial=done, unit='frame', desc='paper',
              disable=not options.progress) as bar:
        units = [unit for p, d in opened
                 for unit in _units(p, d, stores[p.key], options, counts[p.key], bar)]
        device = _base_config(options).device
        pool = make_pool(options.ray_address, options.workers, device, PaperWorker,
                         settings['model'], device, options.methods, units=len(units))
        try:
            workers = pool.describe()
            model = workers[0]
            if model['warning']:
                tqdm.write(f"warning: {model['warning']}", file=sys.stderr)
            settings['model_source'] = model['source']
            (options.output / 'run.json').write_text(json.dumps(settings, indent=2) + '\n')
            started = time.time()
            run_units(pool, units, _finished)
        finally:
            pool.close()
    results = {p.key: dict(summarize(stores[p.key], options.methods, counts[p.key]),
                           label=p.label, root=str(options.roots[p.key]),
                           frames_protocol=p.frames, frames_available=len(d),
                           description=p.description,
                           processing_size=options.processing_size or p.processing_size)
               for p, d in opened}
    inferred = backbone_of(model['source']) if model['source'] else None
    if options.paper_backbone:
        backbone, origin = options.paper_backbone, 'as given'
    elif inferred:
        backbone, origin = inferred, 'from the model name'
    else:
        backbone, origin = 'DAv2-L', "assumed: the model is none of the paper's backbones"
    data = {'settings': settings, 'device': model['device'], 'demo_prior': model['demo_prior'],
            'engine': {**engine_metadata(model['source'], model['device'], _base_config(options)),
                       'processing_size': options.processing_size or 'per dataset'},
            'workers': len(workers),
            'paper_backbone': backbone, 'backbone_origin': origin,
            'seconds': time.time() - started, 'datasets': results,
            'skipped_datasets': [{'key': k, 'label': p.label,
                                  'option': f'--{k.replace("_", "-")}'}
                                 for k, p in PROTOCOLS.items() if k not in options.roots]}
    write_report(data, options.output)
    return data
