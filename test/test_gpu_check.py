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

"""benchmarks/gpu_check.sh: its CPU dry run, its plan within 8 minutes, the tables it writes."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
import re
import subprocess
import sys
import time

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / 'benchmarks' / 'gpu_check.sh'
sys.path.insert(0, str(ROOT / 'benchmarks'))
import gpu_check  # noqa: E402, I100, I202

#: What a measured column may hold where it holds no number.
WORDS = {'not yet measured', 'timed out', 'failed', 'out of memory', '—'}
NUMBER = re.compile(r'^-?\d+(\.\d+)?(e[+-]?\d+)?×?$')
#: Columns of names, not numbers.
TEXT_COLUMNS = {'figure (bfloat16)', 'backbone', 'resolution', 'dtype', 'compile', 'method',
                'configuration', 'part', 'status'}
DOC_BEGIN = '<!-- gpu_check.md begins -->'
DOC_END = '<!-- gpu_check.md ends -->'


def markdown_tables(text: str) -> dict[str, list[list[str]]]:
    """Return the table of each '### ' section as rows of cells, header first, checked."""
    tables, heading = {}, None
    for block in text.strip().split('\n\n'):
        if block.startswith('### '):
            heading = block[4:].strip()
            continue
        lines = block.strip().splitlines()
        if not lines[0].startswith('|'):
            continue
        header, rule, *body = [[cell.strip() for cell in line.strip()[1:-1].split('|')]
                               for line in lines]
        assert len(rule) == len(header) and all(set(cell) == {'-'} for cell in rule), heading
        for row in body:
            assert len(row) == len(header), (heading, row)
        tables[heading] = [header, *body]
    return tables


def measured_cells(tables: dict[str, list[list[str]]]):
    """Yield (table, column, cell) of every column that holds numbers."""
    for heading, (header, *body) in tables.items():
        for row in body:
            for column, cell in zip(header, row):
                if column not in TEXT_COLUMNS:
                    yield heading, column, cell


def assert_numbers_or_words(tables, words=WORDS) -> None:
    for heading, column, cell in measured_cells(tables):
        assert NUMBER.match(cell) or cell in words, (heading, column, cell)


@pytest.mark.slow
def test_the_dry_run_runs_every_part_without_ros_and_its_tables_parse(tmp_path):
    # A CUDA image has neither: the bench path must not import them.
    blocked = tmp_path / 'blocked'
    for module in ('rosbags', 'rclpy'):
        (blocked / module).mkdir(parents=True)
        (blocked / module / '__init__.py').write_text(
            f'raise ImportError("{module} is not on a CUDA image")\n')
    output = tmp_path / 'out'
    completed = subprocess.run(
        [str(SCRIPT), '--device', 'cpu', '--quick', '--output', str(output), '--commit', 'abc'],
        env={**os.environ, 'PYTHONPATH': str(blocked), 'PYTHON': sys.executable},
        capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-2000:]
    assert 'time limits: 5 parts' in completed.stdout
    report = json.loads((output / 'gpu_check.json').read_text())
    assert [part['status'] for part in report['parts']] == ['ok'] * 5
    assert report['commit'] == 'abc' and report['environment']['device'] == 'cpu'
    assert report['environment']['dtype_auto'] in ('float32', 'bfloat16')
    assert re.match(r'\d+ (passed|skipped)', report['tests'][0]['result'])
    speed = {row['method']: row for row in report['speed']}
    assert set(speed) == {'lrda', 'lrda-warm', 'prompt'}
    assert all(row['status'] == 'measured' and row['seconds'] > 0 and row['peak_mb'] >= 0
               for row in speed.values())
    assert (speed['lrda']['iterations'], speed['lrda-warm']['iterations']) == (2, 1)
    assert speed['lrda']['speedup_vs_prompt'] > 0
    step, = report['steps']
    assert step['host_syncs_per_step'] == 0
    assert math.isnan(step['launches_per_step'])  # counted on CUDA only
    # The CPU reads a stop flag at once: the steps run are the steps reported.
    assert step['steps_run_per_frame'] == step['steps_reported_per_frame'] > 0
    assert step['host_syncs_per_frame'] >= 0
    assert step['step_gflop'] > 0 and step['encoder_gflop'] > step['step_gflop']
    # ViT-S: 25 M parameters, held in bfloat16 where that is the compute precision.
    assert step['encoder_ms'] > 0 and step['weights_mb'] > 45
    camera, = report['cameras']
    assert camera['cameras'] == 3 and camera['frames_per_s_batched'] > 0

    text = (output / 'gpu_check.md').read_text()
    assert text == gpu_check.markdown(gpu_check.Report(**report))
    tables = markdown_tables(text)
    assert set(tables) == {'Against the paper', '`lrda speed`', 'Per step', 'Several cameras',
                           'Parts'}
    # Everything ran: numbers throughout, '—' only where nothing applies (prompt over prompt).
    assert_numbers_or_words(tables, words={'—'})
    assert len(tables['Against the paper']) == 1 + 5  # the ViT-S rows (no ViT-L here)
    assert len(tables['`lrda speed`']) == 1 + 3
    log = (output / 'gpu_check.log').read_text()
    assert '[vits-vga]   frame 1 prompt:' in log and '== cameras: ok' in log


def test_the_gpu_plan_fits_eight_minutes_and_holds_the_configurations_asked_for(capsys):
    for quick in (False, True):
        parts = gpu_check.build_plan(quick)
        assert sum(part.limit_s for part in parts) + gpu_check.RESERVE_S <= 480
        assert len({part.name for part in parts}) == len(parts)
    assert gpu_check.main(['--list']) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        'time limits: 15 parts, 465 s, + 15 s for start-up and reports = 480 s of at most 480 s')
    report = planned_report(gpu_check.build_plan(False))
    rows = {(r['backbone'], r['resolution'], r['dtype'], r['compile'], r['method'])
            for r in report.speed}
    for backbone in ('vits', 'vitb', 'vitl'):
        for resolution in ('vga', 'fhd'):
            assert (backbone, resolution, 'bfloat16', False, 'lrda') in rows
    for row in [('vits', 'vga', 'bfloat16', False, 'lrda-warm'),
                ('vits', 'vga', 'bfloat16', False, 'prompt'),
                ('vitl', 'fhd', 'bfloat16', False, 'lrda-warm'),
                ('vitl', 'fhd', 'bfloat16', False, 'prompt'),
                ('vitl', 'fhd', 'bfloat16', False, 'lrda-strips'),
                ('vits', 'vga', 'float32', False, 'lrda'),
                ('vitl', 'fhd', 'float32', False, 'lrda'),
                ('vits', 'vga', 'bfloat16', True, 'lrda'),
                ('unidepth-vits', 'vga', 'bfloat16', False, 'lrda'),
                ('unidepth-vitl', 'vga', 'bfloat16', False, 'lrda')]:
        assert row in rows
    assert [(r['backbone'], r['resolution']) for r in report.steps] == [('vits', 'vga'),
                                                                        ('vitl', 'fhd')]
    assert report.cameras[0]['cameras'] == 3
    # The most important rows come first.
    assert [part.name for part in gpu_check.build_plan(False)][:4] == [
        'environment', 'vits-vga', 'vitl-fhd', 'vitl-fhd-prompt']


def planned_report(parts) -> gpu_check.Report:
    report = gpu_check.Report('cuda', False, 'abc', gpu_check.limits_line(parts))
    report.plan(parts, gpu_check.Context('cuda', gpu_check.Sizes(), Path('/nonexistent')))
    return report


def test_rows_say_when_their_part_timed_out_failed_or_ran_out_of_memory(tmp_path):
    parts = {part.name: part for part in gpu_check.build_plan(False)}
    report = planned_report(parts.values())
    context = gpu_check.Context('cuda', gpu_check.Sizes(), tmp_path)
    report.record(parts['vitl-fhd'], gpu_check.Outcome('timed out', 45.0), [])
    prompt = parts['vitl-fhd-prompt']
    folder = context.part_file(prompt.name).parent
    folder.mkdir(parents=True)
    (folder / 'speed.json').write_text(json.dumps({'speed': [{
        'backbone': 'vitl', 'resolution': 'fhd', 'method': 'prompt', 'seconds': float('nan'),
        'peak_mb': float('nan'), 'iterations': 0.0,
        'error': 'OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB'}]}))
    report.record(prompt, gpu_check.Outcome('ok', 20.0),
                  prompt.work.read(prompt.name, context, ''))
    tables = markdown_tables(gpu_check.markdown(report))
    assert_numbers_or_words(tables)
    key = {row[0]: row[1:] for row in tables['Against the paper'][1:]}
    assert key['ViT-L FHD, `lrda` cold, s/frame'] == ['timed out', '2.34']
    assert key['ViT-L FHD, `prompt`, s/frame'] == ['out of memory', 'out of memory']
    assert key['ViT-S VGA, `lrda` cold, s/frame'] == ['not yet measured', '0.18']
    parts_table = {row[0]: row[1:] for row in tables['Parts'][1:]}
    assert parts_table['vitl-fhd'] == ['45', 'timed out', '45']


def test_the_placeholder_and_the_docs_gpu_section_are_the_same_tables(tmp_path, capsys):
    assert gpu_check.main(['--placeholder', '--output', str(tmp_path), '--commit', 'abc']) == 0
    placeholder = markdown_tables((tmp_path / 'gpu_check.md').read_text())
    assert_numbers_or_words(placeholder)
    assert {cell for _, column, cell in measured_cells(placeholder)
            if column not in ('paper (H200)', 'limit, s', 'cameras')} == {'not yet measured', '—'}
    doc = (ROOT / 'doc' / 'performance.md').read_text()
    section = markdown_tables(doc[doc.index(DOC_BEGIN) + len(DOC_BEGIN):doc.index(DOC_END)])
    assert_numbers_or_words(section)
    assert set(section) == set(placeholder)
    for heading, table in placeholder.items():  # what a GPU run writes replaces it as it is
        assert section[heading][0] == table[0], heading
        assert [row[:1] for row in section[heading]] == [row[:1] for row in table], heading


def test_a_part_that_overruns_is_stopped_with_the_processes_it_started(tmp_path):
    pid_file = tmp_path / 'pid'
    command = [sys.executable, '-c', (
        'import subprocess, sys, time\n'
        'child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])\n'
        f'open({str(pid_file)!r}, "w").write(str(child.pid))\n'
        'print("started", flush=True)\n'
        'time.sleep(60)\n')]
    lines = []
    outcome = gpu_check.run_part(command, 3, lines.append)
    assert outcome.status == 'timed out' and outcome.seconds < 30
    assert lines == ['started']
    status = Path(f'/proc/{pid_file.read_text()}/status')
    deadline = time.monotonic() + 10
    while status.exists() and 'State:\tZ' not in status.read_text() \
            and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not status.exists() or 'State:\tZ' in status.read_text()
    assert gpu_check.run_part([sys.executable, '-c', 'raise SystemExit(3)'], 30,
                              lines.append).status == 'failed'


def test_pytests_closing_line_is_found():
    output = ('ss.\n=== short test summary ===\nSKIPPED [2] x\n'
              '==== 1 passed, 2 skipped in 3.1s ====\n')
    assert gpu_check.pytest_result(output) == '1 passed, 2 skipped in 3.1s'
    assert gpu_check.pytest_result('Traceback (most recent call last):\n') == ''


@pytest.mark.parametrize('argv, message', [
    (['--device', 'tpu'], "argument --device: invalid choice: 'tpu'"),
    (['--device', 'cpu'], '--device cpu is for the dry run: add --quick'),
    (['--only', 'vitl-fhd,nothing'], '--only: unknown part nothing; the parts are environment'),
    (['--quick', '--device', 'cpu', '--only', 'vitl-fhd'], '--only: unknown part vitl-fhd'),
])
def test_a_bad_option_is_one_line(argv, message, capsys):
    assert gpu_check.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == '' and captured.err.count('\n') == 1
    assert captured.err.startswith(f'gpu_check: error: {message}')
