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
Load official UniDepthV2 weights by parameter name: hub ids, folders and files.

- A hub id ``lpiccinelli/unidepth-v2-vit{s,b,l}14``: its ``config.json`` and weights
  (``model.safetensors``, else ``pytorch_model.bin``) from the local Hugging Face cache, else
  from the hub when it is reachable.
- A folder with those files (a downloaded hub repository).
- A weights file (``.safetensors``, ``.bin``, ``.pth``, ``.pt``); its size is read from a
  ``config.json`` beside it when that is UniDepthV2's, else inferred from the tensor shapes.

The state dict loads strictly: a missing or unexpected parameter name is an error that names it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import torch

from .config import config_from_state_dict, HUB_IDS, UniDepthConfigError, UniDepthV2Config
from .network import UniDepthV2Network

WEIGHT_FILES = ('model.safetensors', 'pytorch_model.bin')
WEIGHT_SUFFIXES = ('.safetensors', '.bin', '.pth', '.pt')


def is_hub_id(text: str) -> bool:
    """Return whether ``text`` names an official UniDepthV2 hub repository."""
    return text.strip().lower() in HUB_IDS


def is_unidepth_source(text: str) -> bool:
    """Return whether a model spec names UniDepthV2 weights (hub id, folder or file)."""
    if is_hub_id(text):
        return True
    path = Path(text).expanduser()
    if path.is_dir():
        return _unidepth_config_file(path / 'config.json') is not None
    if path.is_file() and path.suffix in WEIGHT_SUFFIXES:
        try:
            return any(key.startswith('pixel_encoder.') for key in _weight_names(path))
        except Exception:  # unreadable here: let the generic loader report it
            return False
    return False


def _unidepth_config_file(path: Path) -> dict | None:
    """Return a config.json's content when it describes UniDepthV2, else None."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if isinstance(data, dict) and 'model' not in data and isinstance(data.get('config'), dict):
        data = data['config']
    model = data.get('model') if isinstance(data, dict) else None
    return data if isinstance(model, dict) and model.get('name') == 'UniDepthV2' else None


def _weight_names(path: Path) -> list[str]:
    if path.suffix == '.safetensors':
        from safetensors import safe_open

        with safe_open(str(path), framework='pt') as handle:
            return list(handle.keys())
    return list(read_state_dict(path))


def read_state_dict(path: Path) -> dict[str, torch.Tensor]:
    """
    Read a weights file into a flat state dict.

    Unwraps a training checkpoint's ``model`` entry and a ``module.`` (data-parallel) prefix,
    as UniDepth's own loader does.
    """
    if path.suffix == '.safetensors':
        from safetensors.torch import load_file

        state = load_file(str(path))
    else:
        try:
            state = torch.load(str(path), map_location='cpu', weights_only=True, mmap=True)
        except RuntimeError:  # a legacy (non-zip) file cannot be memory-mapped
            state = torch.load(str(path), map_location='cpu', weights_only=True)
    if isinstance(state, dict) and isinstance(state.get('model'), dict):
        state = state['model']
    if not isinstance(state, dict):
        raise UniDepthConfigError(f'{path} holds a {type(state).__name__}, not a state dict')
    return {key.removeprefix('module.'): value for key, value in state.items()}


def build_network(config: UniDepthV2Config, state_dict: dict[str, torch.Tensor],
                  origin: str) -> UniDepthV2Network:
    """Build the network of ``config`` and load ``state_dict`` into it by name (strict)."""
    network = UniDepthV2Network(config)
    result = network.load_state_dict(state_dict, strict=False)
    if result.missing_keys or result.unexpected_keys:
        raise UniDepthConfigError(
            f'{origin}: weights do not fit UniDepthV2 ({config.variant or "custom"}): missing '
            f'{result.missing_keys[:5]}, unexpected {result.unexpected_keys[:5]}')
    return network


def load_folder(folder: Path) -> UniDepthV2Network:
    """Load a folder holding ``config.json`` and ``model.safetensors``/``pytorch_model.bin``."""
    data = _unidepth_config_file(folder / 'config.json')
    if data is None:
        raise UniDepthConfigError(f'{folder}/config.json is not a UniDepthV2 configuration')
    weights = next((folder / name for name in WEIGHT_FILES if (folder / name).is_file()), None)
    if weights is None:
        raise UniDepthConfigError(f'{folder} has none of {list(WEIGHT_FILES)}')
    return build_network(UniDepthV2Config.from_official(data), read_state_dict(weights),
                         str(folder))


def load_file(path: Path) -> UniDepthV2Network:
    """Load a weights file; its configuration from a config.json beside it, or its shapes."""
    state = read_state_dict(path)
    data = _unidepth_config_file(path.parent / 'config.json')
    config = (UniDepthV2Config.from_official(data) if data is not None
              else config_from_state_dict(state))
    return build_network(config, state, str(path))


def load_hub(hub_id: str, local_files_only: bool,
             hub_unreachable_reason: Callable[[], str]) -> UniDepthV2Network:
    """
    Load an official hub repository: the local cache first, the hub only when reachable.

    ``hub_unreachable_reason()`` returns why the hub cannot be reached ('' when it can).
    """
    repo = hub_id.strip().lower()
    try:
        return _download(repo, local_only=True)
    except _NotCached:
        if local_files_only:
            raise UniDepthConfigError(f'model {hub_id!r} is not in the local Hugging Face '
                                      'cache') from None
    reason = hub_unreachable_reason()
    if reason:
        raise UniDepthConfigError(f'model {hub_id!r} is not in the local Hugging Face cache '
                                  f'and {reason}')
    return _download(repo, local_only=False)


class _NotCached(Exception):
    """A hub file is not in the local cache."""


def _download(repo: str, local_only: bool) -> UniDepthV2Network:
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    def fetch(name: str) -> Path:
        try:
            return Path(hf_hub_download(repo, name, local_files_only=local_only))
        except LocalEntryNotFoundError as error:
            raise _NotCached(name) from error

    config_path = fetch('config.json')
    weights = None
    for name in WEIGHT_FILES:
        try:
            weights = fetch(name)
            break
        except (_NotCached, EntryNotFoundError):
            continue
    if weights is None:
        if local_only:
            raise _NotCached(repo)
        raise UniDepthConfigError(f'{repo} has none of {list(WEIGHT_FILES)}')
    data = _unidepth_config_file(config_path)
    config = (UniDepthV2Config.from_official(data) if data is not None
              else UniDepthV2Config.official(HUB_IDS[repo]))
    return build_network(config, read_state_dict(weights), repo)


def load_unidepth_network(spec: str, local_files_only: bool,
                          hub_unreachable_reason: Callable[[], str]) -> UniDepthV2Network:
    """Load the UniDepthV2 network a spec names (see the module docstring)."""
    if is_hub_id(spec):
        return load_hub(spec, local_files_only, hub_unreachable_reason)
    path = Path(spec).expanduser()
    return load_folder(path) if path.is_dir() else load_file(path)
