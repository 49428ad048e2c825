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

"""The README and doc/ pages: links resolve, the ROS reference lists every parameter and key."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
import re

from lrda_ros.ros.launch_arguments import LAUNCH_ARGUMENTS
from lrda_ros.settings.parameters import PARAMETERS
import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / 'README.md', *sorted((ROOT / 'doc').glob('*.md'))]
LINK = re.compile(r'\]\(([^)\s]+)\)')


def _anchors(text: str) -> set[str]:
    """Return the GitHub anchors of a page's headings."""
    anchors = set()
    for heading in re.findall(r'^#+ (.+)$', text, flags=re.MULTILINE):
        slug = re.sub(r'[^\w\- ]', '', heading.strip().lower()).replace(' ', '-')
        anchors.add(slug)
    return anchors


@pytest.mark.parametrize('page', PAGES, ids=lambda page: page.name)
def test_relative_links_and_anchors_resolve(page):
    text = page.read_text()
    for target in LINK.findall(text):
        if re.match(r'[a-z]+:', target):
            continue
        path, _, anchor = target.partition('#')
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f'{page.name}: {target} does not exist'
        if anchor:
            assert anchor in _anchors(linked.read_text()), f'{page.name}: no #{anchor} in {path}'


def test_ros_reference_lists_every_parameter_with_its_default():
    text = (ROOT / 'doc' / 'ros.md').read_text()
    text = text[text.index('\n## Parameters'):]
    text = text[:text.index('\n## ', 1)]
    row = re.compile(r'^\| `([\w.]+)` \| `([^`]*)`', flags=re.MULTILINE)
    rows = dict(row.findall(text))
    for spec in PARAMETERS:
        assert spec.name in rows, f'doc/ros.md lacks {spec.name}'
        default = spec.default
        if isinstance(default, bool):
            expected = 'true' if default else 'false'
        elif isinstance(default, list):
            expected = '[' + ', '.join(repr(value) for value in default) + ']'
        else:
            expected = str(default)
        assert rows[spec.name] == expected, (spec.name, rows[spec.name], expected)


def _section(page: str, heading: str) -> str:
    """Return the text of a doc page's ``## heading`` section."""
    text = (ROOT / 'doc' / page).read_text()
    text = text[text.index(f'\n## {heading}'):]
    return text[:text.index('\n## ', 1)]


def test_ros_reference_lists_every_launch_argument_with_its_default():
    rows = dict(re.findall(r'^\| `(\w+)` \| ([^|]+) \|', _section('ros.md', 'Launch arguments'),
                           flags=re.MULTILINE))
    assert list(rows) == [argument.name for argument in LAUNCH_ARGUMENTS]
    for argument in LAUNCH_ARGUMENTS:
        assert (f'`{argument.default}`' if argument.default else '(none)') in rows[argument.name]


def test_ros_reference_documents_every_diagnostics_key():
    diagnostics = pytest.importorskip('lrda_ros.ros.diagnostics',
                                      reason='diagnostic_msgs is not installed')
    rows = re.findall(r'^\| (.+?) \|', _section('ros.md', 'Diagnostics'),
                      flags=re.MULTILINE)
    documented = {key for row in rows for key in re.findall(r'`([^`]+)`', row)}
    missing = [key for key in diagnostics.KEYS if key not in documented]
    assert not missing, f'doc/ros.md#diagnostics lacks {missing}'


def test_every_key_a_status_carries_is_a_listed_key():
    diagnostics = pytest.importorskip('lrda_ros.ros.diagnostics',
                                      reason='diagnostic_msgs is not installed')
    # Every counter holds something, so every per-reason key appears.
    stats = diagnostics.NodeStatistics(
        received=3, processed=2, replaced=1, dropped=Counter(malformed=1, no_transform=2),
        statuses=Counter(optimized=2), sync_losses=Counter(beyond_slop=1, no_partner=2),
        stamp_backwards=Counter({'/cam/points': 1}), missing=Counter({'points_rear': 2}),
        recent_iterations=[4, 2])
    context = dict.fromkeys(diagnostics.CONTEXT_KEYS, 'x')
    status = diagnostics.completion_status('/node', stats, 'active', context)
    patterns = {key: re.compile(re.sub(r'<[^>]+>', '.+', re.escape(key)) + '$')
                for key in diagnostics.KEYS}
    keys = [value.key for value in status.values]
    for key in keys:
        assert any(p.match(key) for p in patterns.values()), f'{key!r} is not in KEYS'
    for key, pattern in patterns.items():  # and KEYS holds nothing a status never carries
        assert any(pattern.match(k) for k in keys), f'no status carries {key!r}'
    with pytest.raises(ValueError, match='not in CONTEXT_KEYS'):
        diagnostics.completion_status('/node', stats, 'active', {'undocumented': 1})
