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
import threading

from lrda_ros.engine import ModelLoadError
from lrda_ros.engine.loading import load_depth_model
from lrda_ros.settings.parameters import PARAMETERS
import pytest

README = Path(__file__).resolve().parents[1] / 'README.md'


def test_auto_fails_closed_saying_what_to_set_when_offline(monkeypatch, tmp_path):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, 'HF_HUB_OFFLINE', True)
    monkeypatch.setenv('HF_HUB_CACHE', str(tmp_path))  # an empty cache
    monkeypatch.setattr(huggingface_hub.constants, 'HF_HUB_CACHE', str(tmp_path))
    with pytest.raises(ModelLoadError) as raised:
        load_depth_model('auto', 'cpu')
    message = str(raised.value)
    assert "model 'auto'" in message and 'not in the local Hugging Face cache' in message
    assert "Set 'model'" in message and "'demo'" in message and '\n' not in message


def test_explicit_sources_never_fall_back(tmp_path):
    with pytest.raises(ModelLoadError):
        load_depth_model(str(tmp_path / 'missing.pth'), 'cpu')


def test_readme_documents_every_node_parameter():
    text = README.read_text()
    missing = [spec.name for spec in PARAMETERS if f'`{spec.name}`' not in text]
    assert not missing, f'README parameter table lacks {missing}'


@pytest.fixture
def offline_probe(monkeypatch):
    """Make the hub unreachable (no DNS) and record connection attempts and hub downloads."""
    from transformers import DepthAnythingForDepthEstimation

    calls = {'connect': [], 'download': []}
    # A probe thread an earlier test left behind (timed out on a loaded machine) may connect
    # now: only the threads started from here on count.
    earlier_threads = set(threading.enumerate())

    def refuse(address, *args, **kwargs):
        if threading.current_thread() not in earlier_threads:
            calls['connect'].append(address)
        raise OSError('[Errno -2] Name or service not known')

    original = DepthAnythingForDepthEstimation.from_pretrained.__func__

    def from_pretrained(cls, source, *args, local_files_only=False, **kwargs):
        if not local_files_only:
            calls['download'].append(source)
            raise AssertionError('the hub must not be asked when it is unreachable')
        return original(cls, source, *args, local_files_only=True, **kwargs)

    monkeypatch.delenv('HF_HUB_OFFLINE', raising=False)
    import huggingface_hub.constants
    monkeypatch.setattr(huggingface_hub.constants, 'HF_HUB_OFFLINE', False)
    monkeypatch.setattr('socket.create_connection', refuse)
    monkeypatch.setattr(DepthAnythingForDepthEstimation, 'from_pretrained',
                        classmethod(from_pretrained))
    return calls


def test_public_loader_resolves_the_demo_keyword_without_the_network(offline_probe):
    # The README's engine snippet: 'demo' is the embedded prior, never a hub id.
    model = load_depth_model('demo', 'cpu')
    assert model.is_demo_prior and model.source == 'demo' and not model.warning
    assert offline_probe == {'connect': [], 'download': []}
    from lrda_ros.engine import load_depth_model as public

    assert public is load_depth_model  # one loader for every spec


def test_hub_id_fails_at_once_when_the_hub_is_unreachable(offline_probe):
    with pytest.raises(ModelLoadError) as raised:
        load_depth_model('lrda-ros-tests/no-such-model', 'cpu')
    message = str(raised.value)
    assert 'not in the local Hugging Face cache' in message and 'unreachable' in message
    assert "'demo'" in message and 'local Hugging Face directory' in message
    assert '\n' not in message
    assert offline_probe['download'] == [] and len(offline_probe['connect']) == 1


def test_auto_honours_hf_hub_offline_set_after_import(offline_probe, monkeypatch, tmp_path):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, 'HF_HUB_CACHE', str(tmp_path))
    monkeypatch.setenv('HF_HUB_OFFLINE', '1')  # set after huggingface_hub read its constants
    with pytest.raises(ModelLoadError) as raised:
        load_depth_model('auto', 'cpu')
    assert 'HF_HUB_OFFLINE is set' in str(raised.value)
    assert offline_probe == {'connect': [], 'download': []}  # no probe, no download


def _cut_in_half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


@pytest.mark.parametrize('form', ['hugging_face_folder', 'official_pth', 'unidepth_folder'])
def test_a_truncated_weights_file_is_named_as_such_in_one_line(form, tmp_path):
    import torch

    from conftest import tiny_network
    from unidepth_tiny import tiny_unidepth_network, write_official_checkpoint

    if form == 'hugging_face_folder':
        model = tmp_path / 'tiny'
        tiny_network(seed=0).save_pretrained(model)
        weights = model / 'model.safetensors'
    elif form == 'official_pth':
        model = weights = tmp_path / 'depth_anything_v2_vits.pth'
        torch.save({'pretrained.cls_token': torch.zeros(1, 1, 384)}, weights)
    else:
        model = Path(write_official_checkpoint(tmp_path / 'unidepth', tiny_unidepth_network()))
        weights = model / 'model.safetensors' if model.is_dir() else model
    _cut_in_half(weights)  # an interrupted download or copy
    with pytest.raises(ModelLoadError) as raised:
        load_depth_model(str(model), 'cpu')
    message = str(raised.value)
    assert f'the weights file {weights} ' in message and 'truncated or corrupt' in message
    assert 'download it again' in message and '\n' not in message
    assert 'Pass the model as' not in message  # not the list of every accepted form
