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

"""What the ament linters check, for the three linter tests (flake8, pep257, copyright)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Explicit paths: a virtual environment in the checkout must not be linted.
SOURCES = [ROOT / 'lrda_ros', ROOT / 'test', ROOT / 'launch', ROOT / 'setup.py']


def lint(linter: str, reason: str) -> int:
    """Run an ament linter over :data:`SOURCES` here; return its exit code (skip without it)."""
    main = pytest.importorskip(f'{linter}.main', reason=reason).main
    return main(argv=[str(path) for path in SOURCES])
