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

"""setup.py as colcon reads it: `colcon test` must run this suite with pytest."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope='module')
def setup_py_data() -> dict:
    """Return the keyword arguments setup.py passes to setup() (run from the package root)."""
    from distutils.core import run_setup

    here = os.getcwd()
    os.chdir(ROOT)  # setup.py globs launch/ and config/ relative to the working directory
    try:
        distribution = run_setup(str(ROOT / 'setup.py'), stop_after='init')
    finally:
        os.chdir(here)
    return {'extras_require': distribution.extras_require,
            'tests_require': getattr(distribution, 'tests_require', None)}


def test_pytest_is_a_test_requirement(setup_py_data):
    tests = set(setup_py_data['extras_require'].get('test', [])) | set(
        setup_py_data['tests_require'] or [])
    assert 'pytest' in tests


def test_colcon_picks_its_pytest_step(setup_py_data):
    colcon_test = pytest.importorskip('colcon_core.task.python.test',
                                      reason='colcon is not installed')
    assert colcon_test.has_test_dependency(setup_py_data, 'pytest')


def test_every_module_is_installed():
    """
    Every .py file under lrda_ros/ lies in a package that setup.py's find_packages installs.

    A folder without ``__init__.py`` imports from the source tree (a namespace package) but is
    left out of ``colcon build``'s install, so ``ros2 run lrda_ros ...`` fails to import it.
    """
    from setuptools import find_packages

    installed = set(find_packages(str(ROOT), exclude=['test', 'test.*']))
    folders = {'.'.join(path.parent.relative_to(ROOT).parts)
               for path in (ROOT / 'lrda_ros').rglob('*.py')}
    assert folders - installed == set()
