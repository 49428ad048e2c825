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
``lrda paper --ray``: the frames on a local 2-worker Ray cluster give the local run's table.

The cluster is a real Ray instance started here (``ray.cluster_utils.Cluster``); the workers are
Ray actors that load the tiny network once. A local run is the reference; an interrupted copy of
it is resumed on Ray, with a dataset whose frames go to any worker and one kept on one worker.
The local reference runs torch on one thread, as each Ray worker does, so the metrics compare
exactly (several threads add in a varying order).
"""

import json
import shutil
import socket
import sys

from conftest import one_thread
import numpy as np
import pytest
from test_paper import _ibims_samples, _void_release

from lrda_ros.cli import main as lrda_main  # noqa: I100
from lrda_ros.paper import PaperOptions
from lrda_ros.paper.run import run_paper

METHODS = ('scale-shift', 'lrda', 'lrda-warm')


@pytest.fixture
def one_torch_thread():
    """Run torch on one CPU thread, here and in the Ray workers (equal sums, equal results)."""
    with one_thread():
        yield


def _options(tmp_path, model, output, methods, **extra) -> PaperOptions:
    return PaperOptions(
        roots={'ibims': tmp_path / 'ibims', 'void': tmp_path / 'void_release'},
        output=tmp_path / output, methods=methods, model=str(model), device='cpu',
        iterations=2, processing_size=56, progress=False, **extra)


def _metrics(data: dict) -> dict:
    return {(key, method): {k: v for k, v in entry.items()
                            if k not in ('seconds_per_frame', 'peak_mb')}
            for key, result in data['datasets'].items()
            for method, entry in result['methods'].items()}


def _method_records(path) -> list[tuple]:
    return sorted((r['index'], r['method']) for r in map(json.loads, path.read_text().splitlines())
                  if r['kind'] == 'method')


@pytest.mark.slow
def test_a_run_resumed_on_ray_gives_the_local_table(tmp_path, tiny_model_dir, one_torch_thread):
    pytest.importorskip('ray', reason='Ray is not installed (the cluster extra)')
    from ray.cluster_utils import Cluster

    _ibims_samples(tmp_path / 'ibims')
    _void_release(tmp_path / 'void_release')  # 2 frames readable, 2 skipped
    local = run_paper(_options(tmp_path, tiny_model_dir, 'local', METHODS))
    # An interrupted run: iBims lost a warm-started result (so its frames stay on one worker,
    # in order), VOID only cold-start ones (so each frame goes to any worker).
    output = tmp_path / 'ray'
    shutil.copytree(tmp_path / 'local', output)
    lost = {'ibims': {(0, 'lrda-warm'), (1, 'scale-shift'), (1, 'lrda'), (1, 'lrda-warm')},
            'void': {(0, 'lrda'), (2, 'scale-shift'), (2, 'lrda')}}
    kept_lines = {}
    for key, records in lost.items():
        store = output / 'frames' / f'{key}.jsonl'
        kept = kept_lines[key] = [
            line for line in store.read_text().splitlines()
            if (json.loads(line).get('index'), json.loads(line).get('method')) not in records]
        store.write_text('\n'.join(kept) + '\n')
    cluster = Cluster(initialize_head=True, head_node_args={'num_cpus': 2})
    try:
        resumed = run_paper(_options(tmp_path, tiny_model_dir, 'ray', METHODS,
                                     ray_address=cluster.address, workers=2, resume=True))
    finally:
        cluster.shutdown()
    for key, records in lost.items():
        store = output / 'frames' / f'{key}.jsonl'
        assert _method_records(store) == _method_records(tmp_path / 'local' / 'frames' /
                                                         f'{key}.jsonl')
        lines = store.read_text().splitlines()
        assert lines[:len(kept_lines[key])] == kept_lines[key]  # what was done stays
        new = [json.loads(line) for line in lines[len(kept_lines[key]):]]
        assert sorted((r['index'], r['method']) for r in new if r['kind'] == 'method') == sorted(
            records)
    assert _metrics(resumed) == _metrics(local)
    assert (local['workers'], resumed['workers']) == (1, 2)
    for key in ('ibims', 'void'):
        assert np.isfinite(resumed['datasets'][key]['methods']['lrda']['mae'])
    assert resumed['datasets']['void']['frames_skipped'] == 2
    markdown = (output / 'paper.md').read_text()
    assert markdown.count('| VOID | lrda-warm |') == 2 and 'on 2 Ray workers' in markdown
    assert 'device cpu' in markdown
    assert (output / 'paper.png').stat().st_size > 10000


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize('arguments, message', [
    (['--ray', '127.0.0.1:{port}'], '--ray 127.0.0.1:{port}: no Ray cluster answers there '
     "(Connection refused); start one with 'ray start --head' or give its address"),
    (['--ray', 'head-node'], "--ray must be 'auto', 'local', host:port or ray://host:port"),
    (['--workers', '2'], '--workers sets the Ray workers: give --ray ADDRESS too'),
    (['--ray', 'auto', '--device', 'cuda:1'], '--device cuda:1 names one GPU, but each Ray '
     'worker gets its own'),
])
def test_bad_ray_options_end_in_one_line(arguments, message, tmp_path, capsys):
    pytest.importorskip('ray', reason='Ray is not installed (the cluster extra)')
    (tmp_path / 'ibims').mkdir()
    port = _free_port()
    arguments = [a.format(port=port) for a in arguments]
    code = lrda_main(['paper', '--ibims', str(tmp_path / 'ibims'), '--output',
                      str(tmp_path / 'out')] + arguments)
    error = capsys.readouterr().err.strip()
    assert code == 1 and error.splitlines() == [
        'lrda paper: error: ' + error.split('error: ', 1)[1]], error
    assert message.format(port=port) in error, error
    assert not (tmp_path / 'out').exists()  # refused before anything was written


def test_a_negative_worker_count_is_a_usage_error(tmp_path, capsys):
    (tmp_path / 'ibims').mkdir()
    with pytest.raises(SystemExit) as stopped:
        lrda_main(['paper', '--ibims', str(tmp_path / 'ibims'), '--output', str(tmp_path / 'out'),
                   '--ray', 'local', '--workers', '-1'])
    error = capsys.readouterr().err.strip()
    assert stopped.value.code == 2 and error.splitlines() == [
        'lrda paper: error: argument --workers: must be >= 0, got -1 (see lrda paper --help)']
    assert not (tmp_path / 'out').exists()


@pytest.mark.parametrize('command', ['paper', 'densify'])
def test_without_ray_installed_the_error_says_what_to_install(command, tmp_path, capsys,
                                                              monkeypatch):
    monkeypatch.setitem(sys.modules, 'ray', None)  # import ray raises ImportError
    (tmp_path / 'data').mkdir()
    data = ['--ibims', str(tmp_path / 'data')] if command == 'paper' else [
        str(tmp_path / 'data')]
    code = lrda_main([command, *data, '--output', str(tmp_path / 'out'), '--ray', 'auto'])
    assert code == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        f"lrda {command}: error: --ray needs Ray: pip install 'lrda_ros[cluster]'"]
