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

from pathlib import Path

import pytest

# Explicit paths: a virtual environment in the checkout must not be linted.
ROOT = Path(__file__).resolve().parents[1]
SOURCES = [ROOT / 'lrda_ros', ROOT / 'test', ROOT / 'launch', ROOT / 'setup.py']

ament_flake8_main = pytest.importorskip(
    'ament_flake8.main', reason='ament_flake8 is not installed').main_with_errors


@pytest.mark.flake8
@pytest.mark.linter
def test_flake8():
    rc, errors = ament_flake8_main(argv=[str(p) for p in SOURCES])
    assert rc == 0, 'Found %d code style errors / warnings:\n' % len(errors) + '\n'.join(errors)
