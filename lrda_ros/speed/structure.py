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
Where a frame's time goes: one encoder pass against one decoder step (dense and sparse head).

Also the CPU allocator ablation: the same timings with glibc's default heap behaviour and the
tuned one (engine/allocator.py), each in a fresh process since the setting is process-wide.
"""

from __future__ import annotations

import math
import os
import threading
import time

import numpy as np
import torch

from .inputs import panning_frames, panning_intrinsics, random_model
from .options import LidarPattern, RESOLUTIONS
from ..engine import DepthCompleter, DepthModel, TTOConfig
from ..engine.model import sample_prediction
from ..engine.sparse_head import SparseHeadPlan

#: The cost structure's timings in a speed row (NaN where it was not measured).
STRUCTURE_KEYS = ('encoder_s', 'decoder_step_dense_s', 'decoder_step_sparse_s')


#: Seconds between a measuring process's checks that its parent is still there.
PARENT_POLL_S = 0.5


def end_with_parent(parent: int) -> None:
    """
    Make this process end itself once ``parent`` is gone, even after a SIGKILL of it.

    A pool worker's initializer: its parent's death never reaches it otherwise, and a
    measurement would run on for minutes, holding cores (or a GPU) that nobody reads.
    """
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name='end_with_parent', daemon=True).start()


def in_fresh_process(function, *args):
    """
    Run ``function(*args)`` in a newly spawned interpreter and return its result.

    The interpreter ends with the call: interrupted (SIGINT, SIGTERM), the caller terminates
    it before passing the interruption on, and it ends itself if its caller dies.
    """
    from concurrent.futures import ProcessPoolExecutor
    import multiprocessing

    before = {process.pid for process in multiprocessing.active_children()}
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context('spawn'),
                               initializer=end_with_parent, initargs=(os.getpid(),))
    try:
        return pool.submit(function, *args).result()
    except BaseException:
        for process in multiprocessing.active_children():
            if process.pid not in before:
                process.terminate()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _sync(device: torch.device) -> None:
    if device.type == 'cuda':
        torch.cuda.synchronize(device)


def cost_structure(model: DepthModel, rgb: np.ndarray, sparse: np.ndarray, repeats: int = 3,
                   **config) -> dict[str, float]:
    """
    Time one encoder pass and one decoder step (forward + backward), dense and sparse.

    ``config``: TTOConfig fields (dtype, fold_lora, tune_cpu_allocator, ...).
    """
    completer = DepthCompleter(model, TTOConfig(device=str(model.device), **config))
    pixel_values = model.preprocess(rgb, None)
    rows, cols = (torch.from_numpy(a).to(model.device) for a in np.nonzero(sparse > 0))
    plan = SparseHeadPlan.build(rows, cols, rgb.shape[:2], tuple(pixel_values.shape[-2:]))
    parameters = completer.adaptation.parameters
    intrinsics = panning_intrinsics(*rgb.shape[:2])

    def encoder():
        with completer._autocast():
            return model.encode(pixel_values, rgb.shape[:2], intrinsics)

    encoded = encoder()

    def dense_step():
        with completer._autocast():
            values = sample_prediction(model.decode(encoded), rows, cols, rgb.shape[:2])
        torch.autograd.grad(values.sum(), parameters, allow_unused=True)

    def sparse_step():
        with completer._autocast():
            values = plan.evaluate(model, encoded)
        torch.autograd.grad(values.sum(), parameters, allow_unused=True)

    timings = {'decoder_step_sparse_s': math.nan}  # the sparse head: DPT decoders only
    steps = (('encoder_s', encoder), ('decoder_step_dense_s', dense_step)) + (
        (('decoder_step_sparse_s', sparse_step),) if model.dpt_decoder else ())
    for name, call in steps:
        call()  # warm-up
        _sync(model.device)
        start = time.perf_counter()
        for _ in range(repeats):
            call()
        _sync(model.device)
        timings[name] = (time.perf_counter() - start) / repeats
    return timings


def steps_in_this_process(variant: str, height: int, width: int, lidar: LidarPattern,
                          seed: int, tuned: bool, dtype: str = 'float32',
                          device: str = 'cpu') -> dict[str, float]:
    """Cost structure of a fresh process, allocator tuned or glibc's default (spawned)."""
    frame = panning_frames(height, width, 1, lidar, seed)[0]
    return cost_structure(random_model(variant, seed, device), *frame, repeats=3,
                          tune_cpu_allocator=tuned, dtype=dtype)


def allocator_ablation(variant: str, resolution: str, lidar: LidarPattern, seed: int,
                       rounds: int = 2) -> dict[str, dict[str, float]]:
    """
    Compare decoder steps with glibc's default allocator behaviour and the tuned one.

    The setting is process-wide, so each measurement runs in a fresh spawned process,
    alternating default and tuned; medians over ``rounds`` each.
    """
    height, width = RESOLUTIONS[resolution]
    results: dict[bool, list[dict[str, float]]] = {False: [], True: []}
    for _ in range(rounds):
        for tuned in (False, True):
            results[tuned].append(in_fresh_process(steps_in_this_process, variant, height,
                                                   width, lidar, seed, tuned))
    return {('tuned' if tuned else 'default'): {
        key: float(np.median([r[key] for r in runs])) for key in runs[0]}
        for tuned, runs in results.items()}
