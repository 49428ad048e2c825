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

"""Shared fixtures: tiny Depth Anything networks built in-process (no downloads)."""

from __future__ import annotations

import contextlib
import getpass
import os
from pathlib import Path
import signal
import tempfile
import time
from typing import Iterator
import uuid

import numpy as np
import pytest
import torch

# Keep DDS discovery on this host so concurrent test runs and other machines cannot interfere.
os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')


def _isolate_parallel_worker(worker: str | None) -> None:
    """
    Give a pytest-xdist worker (``make test`` runs two) its own DDS domain.

    Without its own domain, one worker's nodes would receive the other's messages on the same
    topic names. The worker ignores SIGINT (xdist leaves Ctrl-C to its controller), which the
    programs the tests start and interrupt would inherit: Python's own handler is put back.
    """
    if not worker:
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    index = int(worker.lstrip('gw') or 0)
    base = int(os.environ.get('ROS_DOMAIN_ID', '0'))
    os.environ['ROS_DOMAIN_ID'] = str((base + 1 + index) % 102)  # 0..101: Linux's port range


def _set_threads(worker: str | None) -> None:
    """
    Set the torch threads of this process and of the processes the tests start.

    ``LRDA_TEST_THREADS`` sets them (the CPU matrix in doc/performance.md runs 1 and 2: the
    thread count changes the order of reductions); without it an xdist worker takes one, so
    two workers share the cores instead of oversubscribing them, and a plain run keeps
    torch's default. Inductor then compiles its kernels in the worker itself, not in a pool
    of processes of its own (each imports torch: 12 s more CPU time for a compiling test,
    measured, and no sooner done when the other worker holds the other core).
    """
    threads = int(os.environ.get('LRDA_TEST_THREADS') or (1 if worker else 0))
    if threads:
        os.environ['OMP_NUM_THREADS'] = str(threads)
        torch.set_num_threads(threads)
        os.environ.setdefault('TORCHINDUCTOR_COMPILE_THREADS', str(threads))


def _shared_inductor_cache() -> None:
    """
    Give the whole run one torch.compile cache, kept apart per ``ATEN_CPU_CAPABILITY``.

    Set here, before any test, it is inherited by the xdist workers and by every process the
    tests start: ``lrda speed --compile`` and the GPU check's dry run would otherwise each
    compile into an empty cache of their own (lrda_ros/speed/compilation.py), and what one test
    compiled another compiles again. Inductor's FX graph cache and AOTAutograd's cache are
    turned on, so a graph compiled once is read back wherever it recurs.

    Inductor generates kernels for the capability torch runs with, but its cache (a
    precompiled header among it) is not keyed on that setting: a run under
    ``ATEN_CPU_CAPABILITY=default`` reusing AVX512 builds failed to compile, one under ``avx2``
    crashed. A user's own cache directory (``TORCHINDUCTOR_CACHE_DIR``) is left as set.
    """
    capability = os.environ.get('ATEN_CPU_CAPABILITY') or 'native'
    os.environ.setdefault('TORCHINDUCTOR_CACHE_DIR', str(
        Path(tempfile.gettempdir()) / f'torchinductor_{getpass.getuser()}_{capability}'))
    os.environ.setdefault('TORCHINDUCTOR_FX_GRAPH_CACHE', '1')
    os.environ.setdefault('TORCHINDUCTOR_AUTOGRAD_CACHE', '1')


_isolate_parallel_worker(os.environ.get('PYTEST_XDIST_WORKER'))
_set_threads(os.environ.get('PYTEST_XDIST_WORKER'))
_shared_inductor_cache()


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """
    Run torch on one thread here and in the processes started meanwhile (Ray workers too).

    Ray gives each worker ``OMP_NUM_THREADS`` threads when it is set (one per CPU otherwise):
    set to 1 here, a worker reduces in the order this process does, and a test comparing the
    two may ask for equality.
    """
    threads, variable = torch.get_num_threads(), os.environ.get('OMP_NUM_THREADS')
    torch.set_num_threads(1)
    os.environ['OMP_NUM_THREADS'] = '1'
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        if variable is None:
            os.environ.pop('OMP_NUM_THREADS', None)
        else:
            os.environ['OMP_NUM_THREADS'] = variable


def inner_pytest_env(**extra: str) -> dict[str, str]:
    """
    Return this process's environment for a pytest run a test starts, minus pytest's own.

    colcon passes ``--pytest-args`` to the suite through ``PYTEST_ADDOPTS`` (a ``-k`` selection,
    say), and xdist and pytest mark their processes with ``PYTEST_*`` variables: inherited, the
    inner run would apply the outer selection to its own files and collect nothing.
    """
    return {**{name: value for name, value in os.environ.items()
               if not name.startswith('PYTEST_')}, **extra}


SHARED_DATA = Path(os.environ.get('LRDA_SHARED_DATA',
                                  Path(__file__).resolve().parents[2] / 'shared' / 'data'))


@pytest.hookimpl(hookwrapper=True)
def pytest_pycollect_makemodule(module_path, parent):
    """
    Keep a test file's module-level skip to that file under launch_testing's pytest plugin.

    The plugin (part of every ROS 2 install, so of ``colcon test``) imports each test file
    inside this hook to look for a launch test; a module-level ``pytest.skip`` or
    ``importorskip`` raised there skipped the whole session: 0 tests, reported as success. The
    file is handed to pytest's own collector instead, which skips that file alone.
    """
    outcome = yield
    if isinstance(outcome.excinfo and outcome.excinfo[1], pytest.skip.Exception):
        outcome.force_result(pytest.Module.from_parent(parent, path=module_path))


def pytest_collection_modifyitems(config, items):
    """Skip the tests marked ``cuda`` where no CUDA device is visible."""
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason='no CUDA device')
    for item in items:
        if item.get_closest_marker('cuda'):
            item.add_marker(skip)


def tiny_config(depth_estimation_type: str = 'relative', swiglu: bool = False,
                max_depth: int = 20, levels: int = 4):
    """
    Return a Depth Anything V2 config small enough for unit tests (a few thousand weights).

    ``levels``: the DPT decoder's feature levels, 4 as released, or 2 (reassembled at 2x, a
    transposed convolution, and 1x) where a test compiles the decoder with Inductor: every
    layer kind in about half the graph.
    """
    from transformers import DepthAnythingConfig, Dinov2Config

    if levels not in (2, 4):
        raise ValueError(f'levels must be 2 or 4, got {levels}')
    backbone = Dinov2Config(hidden_size=32, num_attention_heads=2, num_hidden_layers=levels,
                            out_indices=list(range(1, levels + 1)), reshape_hidden_states=False,
                            image_size=56, patch_size=14, layerscale_value=1.0,
                            use_swiglu_ffn=swiglu)
    extra = {'max_depth': max_depth} if depth_estimation_type == 'metric' else {}
    decoder = ({'neck_hidden_sizes': [8, 16, 32, 32]} if levels == 4 else
               {'neck_hidden_sizes': [16, 32], 'reassemble_factors': [2, 1]})
    return DepthAnythingConfig(backbone_config=backbone, fusion_hidden_size=16,
                               head_hidden_size=8, reassemble_hidden_size=32,
                               depth_estimation_type=depth_estimation_type, **decoder, **extra)


def tiny_network(seed: int = 0, **config_options):
    """Build a tiny network with PyTorch's default init (HF's 0.02-std init is nearly dead)."""
    from transformers import DepthAnythingForDepthEstimation

    torch.manual_seed(seed)
    network = DepthAnythingForDepthEstimation(tiny_config(**config_options))
    for module in network.modules():
        if isinstance(module, (torch.nn.Conv2d, torch.nn.ConvTranspose2d, torch.nn.Linear)):
            module.reset_parameters()
    with torch.no_grad():
        network.head.conv3.bias.fill_(1.0)  # keep the final ReLU alive
    return network.eval()


def counted_steps(completer) -> list[int]:
    """Count the optimization steps ``completer`` computes (each computes its loss once)."""
    count = [0]
    loss = completer._loss

    def counted(*args):
        count[0] += 1
        return loss(*args)

    completer._loss = counted
    return count


def smooth_image(seed: int, height: int = 60, width: int = 80) -> np.ndarray:
    """Return a smooth random RGB image (low-frequency noise, bicubic upsampled)."""
    rng = np.random.default_rng(seed)
    coarse = torch.from_numpy(rng.uniform(0, 255, (1, 3, 6, 8)).astype(np.float32))
    image = torch.nn.functional.interpolate(coarse, size=(height, width), mode='bicubic')
    return image.clamp(0, 255)[0].permute(1, 2, 0).numpy().astype(np.uint8)


@pytest.fixture(autouse=True)
def threads_left_as_found() -> Iterator[None]:
    """
    Fail a test after which torch runs on another number of threads than before it.

    A worker shares the cores with the other one: left at two threads, its OpenMP threads
    spin while they wait, and every later test in that worker takes several times its CPU
    time (4 times for the fused-method evaluation of test_fusion_pipeline).
    """
    threads = torch.get_num_threads()
    yield
    assert torch.get_num_threads() == threads, 'the test left torch on another thread count'


@pytest.fixture
def tiny_model():
    """Return a DepthModel around a fresh tiny relative (disparity) network on the CPU."""
    from lrda_ros.engine import DepthModel

    return DepthModel(tiny_network(), 'cpu')


@pytest.fixture
def shared_data() -> Path:
    """Return the shared real-data folder, skipping the test when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f'shared data not found at {SHARED_DATA} (set LRDA_SHARED_DATA)')
    return SHARED_DATA


@pytest.fixture
def ros_context():
    """Yield an initialized rclpy Context of this test alone; shut it down afterwards."""
    rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')
    context = rclpy.Context()
    rclpy.init(context=context)
    yield context
    rclpy.try_shutdown(context=context)


@pytest.fixture
def namespace() -> str:
    """Return a namespace unique to this test, so topics of other tests never mix in."""
    return '/t' + uuid.uuid4().hex[:10]


def spin_until(executor, predicate, timeout: float = 30.0) -> bool:
    """Spin ``executor`` until ``predicate()`` holds or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        executor.spin_once(timeout_sec=0.05)
    return predicate()


@pytest.fixture
def tiny_model_dir(tmp_path) -> Path:
    """Save a tiny relative-depth network in the Hugging Face layout and return its folder."""
    folder = tmp_path / 'tiny_model'
    tiny_network(seed=0).save_pretrained(folder)
    return folder
