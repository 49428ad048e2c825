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

import subprocess
import sys

from linters import SOURCES
import pytest

pytest.importorskip('ament_flake8.main', reason='ament_flake8 is not installed')


@pytest.mark.flake8
@pytest.mark.linter
def test_flake8():
    # flake8 forks workers; forking this process, which runs DDS and torch threads, can
    # deadlock, so the linter runs in a fresh interpreter.
    command = [sys.executable, '-c', 'import sys; from ament_flake8.main import main; '
               'sys.exit(main(sys.argv[1:]))', *map(str, SOURCES)]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, 'code style errors:\n' + completed.stdout[-5000:]
