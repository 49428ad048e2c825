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
``colcon test`` runs the suite under launch_testing's pytest plugin: skips stay per file.

The plugin imports every test file while collecting; a file that skips at module level (an
optional dependency or data set missing, as on most installs) used to skip the whole session,
and ``colcon test`` reported success with 0 tests.
"""

import os
from pathlib import Path
import subprocess
import sys

from conftest import inner_pytest_env
import pytest

HERE = Path(__file__).resolve().parent


def test_a_module_level_skip_skips_that_file_alone(tmp_path):
    pytest.importorskip('launch_testing', reason='launch_testing is not installed (ROS 2)')
    (tmp_path / 'test_skipped.py').write_text(
        'import pytest\n\npytest.skip("absent", allow_module_level=True)\n')
    (tmp_path / 'test_kept.py').write_text('def test_kept():\n    pass\n')
    # The package's conftest, loaded as a plugin, with launch_testing's plugin auto-loaded.
    completed = subprocess.run(
        [sys.executable, '-m', 'pytest', '--collect-only', '-q', '-p', 'conftest',
         '--rootdir', str(tmp_path), '-c', os.devnull, str(tmp_path)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env=inner_pytest_env(PYTHONPATH=os.pathsep.join(
            [str(HERE), *filter(None, [os.environ.get('PYTHONPATH')])])))
    output = completed.stdout + completed.stderr
    assert 'test_kept.py::test_kept' in output, output
    assert '1 test collected' in output, output


def test_an_inner_run_ignores_the_outer_selection(tmp_path, monkeypatch):
    # colcon test --pytest-args -k launch: the selection reaches the suite as PYTEST_ADDOPTS,
    # which an inner pytest would apply to its own files (here: deselecting its only test).
    monkeypatch.setenv('PYTEST_ADDOPTS', '-k launch')
    (tmp_path / 'test_inner.py').write_text('def test_inner():\n    pass\n')
    completed = subprocess.run(
        [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', '--rootdir',
         str(tmp_path), '-c', os.devnull, str(tmp_path)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env=inner_pytest_env())
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0 and '1 passed' in output, output
