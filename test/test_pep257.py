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

ament_pep257_main = pytest.importorskip(
    'ament_pep257.main', reason='ament_pep257 is not installed').main


@pytest.mark.linter
@pytest.mark.pep257
def test_pep257():
    rc = ament_pep257_main(argv=[str(p) for p in SOURCES])
    assert rc == 0, 'Found code style errors / warnings'
