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

"""One registry of methods: ``lrda eval`` and ``lrda speed`` select, check and build from it."""

from __future__ import annotations

from conftest import tiny_network
from lrda_ros.cli import main as lrda_main
from lrda_ros.engine import DepthModel, Scope, TTOConfig
from lrda_ros.eval.methods import METHODS, STRIPS_METHOD_TAIL_STRIPS, TTOMethod
from lrda_ros.eval.options import DEFAULT_METHODS
from lrda_ros.speed.options import LidarPattern
from lrda_ros.speed.run import _plan, DEFAULT_SPEED_METHODS, measure_classical, SpeedOptions
import pytest


def _error_line(capsys, argv: list[str]) -> str:
    assert lrda_main(argv) == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return lines[0].split(': error: ', 1)[1]


def test_every_default_selection_names_registry_methods():
    assert set(DEFAULT_SPEED_METHODS) <= set(METHODS)
    assert set(DEFAULT_METHODS) <= set(METHODS)


@pytest.mark.parametrize('methods', ['lrda,magic', ','])
def test_speed_and_eval_reject_the_same_names_with_the_same_message(capsys, tmp_path, methods):
    speed = _error_line(capsys, ['speed', '--methods', methods, '--output', str(tmp_path)])
    evaluation = _error_line(capsys, ['eval', '--bag', str(tmp_path / 'missing'), '--methods',
                                      methods, '--output', str(tmp_path)])
    assert speed == evaluation
    assert speed.startswith('--methods: unknown ' + ('magic' if 'magic' in methods else ''))
    assert ', '.join(METHODS) in speed


#: What lrda speed times: every method but those that need camera poses (refused).
TIMED = tuple(name for name, spec in METHODS.items() if not spec.temporal_fusion)


def test_speed_accepts_every_registry_method_that_needs_no_camera_pose():
    for name in METHODS:
        if name in TIMED:
            assert SpeedOptions(methods=(name,)).methods == (name,)
        else:
            with pytest.raises(ValueError, match='camera pose'):
                SpeedOptions(methods=(name,))


@pytest.mark.parametrize('command', ['speed', 'eval'])
def test_methods_help_lists_the_registry(capsys, monkeypatch, command):
    monkeypatch.setenv('COLUMNS', '1000')  # one line per option: no wrapping inside names
    with pytest.raises(SystemExit):
        lrda_main([command, '--help'])
    line = next(text for text in capsys.readouterr().out.splitlines()
                if text.strip().startswith('--methods'))
    assert f'comma-separated, from: {", ".join(METHODS)} (default: ' in line


def test_speed_configures_each_method_as_evaluation_builds_it():
    base = TTOConfig(iterations=5, warm_iterations=2, device='cpu', dtype='float32')
    options = SpeedOptions(methods=TIMED, device='cpu', dtype='float32')
    plan = {run.label: run.config for run in _plan(options, base)}
    model = DepthModel(tiny_network())
    for name in TIMED:
        spec = METHODS[name]
        if not spec.needs_network:
            assert plan[name] is None
            continue
        assert plan[name] == TTOMethod(spec, model, base).completer.config, name
    assert plan['scale-shift'].iterations == 0 and plan['lrda'].iterations == 5
    assert plan['lrda-warm'].warm_start and not plan['lrda'].warm_start
    assert plan['lrda-strips'].tail_strips == STRIPS_METHOD_TAIL_STRIPS
    assert plan['lrda'].tail_strips == 1
    assert plan['prompt'].scope is Scope.PROMPT
    # The ablations are lrda with one optimization off, not methods of their own.
    assert plan['lrda, dense head'] == TTOConfig(**{**plan['lrda'].to_dict(),
                                                    'sparse_head': False})
    assert not plan['lrda, neither (baseline)'].channels_last


def test_classical_is_timed_without_a_network():
    sample = measure_classical('224', LidarPattern(), seed=0, frame_index=1, max_depth=80.0)
    assert sample['seconds'] > 0 and sample['peak_mb'] >= 0 and sample['iterations'] == 0
