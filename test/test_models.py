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

"""The model setting's keywords, and the README staying in step with the parameters."""

from __future__ import annotations

from pathlib import Path

from lrda_ros.engine import ModelLoadError
from lrda_ros.engine.loading import load_model
from lrda_ros.ros.parameters import PARAMETERS
import pytest

README = Path(__file__).resolve().parents[1] / 'README.md'


def test_auto_falls_back_to_the_demo_prior_with_a_warning_when_offline(monkeypatch, tmp_path):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, 'HF_HUB_OFFLINE', True)
    monkeypatch.setenv('HF_HUB_CACHE', str(tmp_path))  # an empty cache
    monkeypatch.setattr(huggingface_hub.constants, 'HF_HUB_CACHE', str(tmp_path))
    choice = load_model('auto', 'cpu')
    assert choice.is_demo_prior and choice.source == 'demo'
    assert "'model' parameter" in choice.warning and 'DEMONSTRATION' in choice.warning


def test_explicit_sources_never_fall_back(tmp_path):
    with pytest.raises(ModelLoadError):
        load_model(str(tmp_path / 'missing.pth'), 'cpu')


def test_readme_documents_every_node_parameter():
    text = README.read_text()
    missing = [spec.name for spec in PARAMETERS if f'`{spec.name}`' not in text]
    assert not missing, f'README parameter table lacks {missing}'
