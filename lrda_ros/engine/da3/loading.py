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
Load official Depth Anything 3 weights: model names, hub ids, folders and files.

- A model name (``da3-small``, ``da3-base``, ``da3-large``, ``da3metric-large``,
  ``da3mono-large``) or its hub id (``depth-anything/DA3-SMALL``, ...): ``config.json`` and
  ``model.safetensors`` from the local Hugging Face cache, else from the hub when it answers.
- A folder as the official ``DepthAnything3.save_pretrained`` writes it (``config.json`` with
  ``model_name``, and ``model.safetensors``).
- A weights file (``.safetensors``, ``.pth``, ``.pt``, ``.bin``) in either official layout:
  the saved one (``model.backbone...``) or the training one, which the official
  ``convert_general_state_dict`` / ``convert_metric_state_dict`` rename (ported here as
  :func:`official_names`); the model from a ``config.json`` beside it, else from the shapes
  (and, for the two ViT-L DPT models, which share them, from ``metric`` or ``mono`` in the
  file name).

Loading is strict: every parameter of the network must come from the checkpoint, and every
tensor of the checkpoint must be one of them or of the branches this package does not build
(:data:`UNBUILT_BRANCHES`); anything else is an error naming the keys.
"""

from __future__ import annotations

import json
from pathlib import Path
import re
from typing import Callable

import torch

from .config import DA3Config, DA3ConfigError, HUB_IDS, preset, PRESETS, VIT_SIZES
from .network import DA3Network
from ..checkpoint import dpt_head_renames
from ..unidepth.loading import read_state_dict

WEIGHT_FILE = 'model.safetensors'
WEIGHT_SUFFIXES = ('.safetensors', '.bin', '.pth', '.pt')
#: Official tensors of branches a single view's depth does not need: the ray head of DualDPT
#: (``*_aux``), the camera encoder and decoder, the Gaussian-splatting head.
UNBUILT_BRANCHES = (r'^head\.scratch\.[a-z0-9_]*_aux\.', r'^cam_enc\.', r'^cam_dec\.',
                    r'^gs_head\.', r'^gs_adapter\.')


def hub_id_of(spec: str) -> str | None:
    """Return the hub repository a model name or hub id names, as published, else None."""
    key = spec.strip().lower()
    name = HUB_IDS.get(key) or (key if key in PRESETS else None)
    return None if name is None else f'depth-anything/{name.upper()}'


def _config_model_name(path: Path) -> str | None:
    """Return the ``model_name`` of an official DA3 config.json, else None."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    name = data.get('model_name') if isinstance(data, dict) else None
    return name if isinstance(name, str) and name.lower().startswith('da3') else None


def is_da3_source(spec: str) -> bool:
    """Return whether a model spec names Depth Anything 3 (name, hub id, folder or file)."""
    if hub_id_of(spec) is not None:
        return True
    path = Path(spec).expanduser()
    if path.is_dir():
        return _config_model_name(path / 'config.json') is not None
    if path.is_file() and path.suffix in WEIGHT_SUFFIXES:
        if _config_model_name(path.parent / 'config.json') is not None:
            return True
        try:
            return _key_says_da3(_weight_names(path))
        except Exception:  # unreadable here: the generic loader reports it
            return False
    return False


def _key_says_da3(names: list[str]) -> bool:
    return any(name.endswith('backbone.pretrained.pos_embed') or name.endswith(
        'net.pretrained.pos_embed') for name in names)


def _weight_names(path: Path) -> list[str]:
    if path.suffix == '.safetensors':
        from safetensors import safe_open

        with safe_open(str(path), framework='pt') as handle:
            return list(handle.keys())
    return list(read_state_dict(path))


def official_names(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """
    Return a checkpoint under the official network's names (``backbone...``, ``head...``).

    The saved layout (``model.`` + names, as ``save_pretrained`` writes) loses its prefix.
    The training layout gets the official renames: ``convert_metric_state_dict`` (a
    ``module.`` prefix) then ``convert_general_state_dict``, ported rule for rule; the
    ``module.`` the file reader strips (read_state_dict) is what the metric rule adds back,
    so both training layouts take this one path.
    """
    if 'model.backbone.pretrained.pos_embed' in state:
        return {key.removeprefix('model.'): value for key, value in state.items()}
    renamed = {}
    for key, value in state.items():
        key = ('module.' + key).replace('module.', 'model.').replace('.net.', '.backbone.')
        if key == 'model.backbone.pretrained.camera_token':
            continue  # the official conversion drops it: camera_token_extra replaces it
        for old, new in (('.camera_token_extra', '.camera_token'),
                         ('model.all_heads.camera_cond_head', 'model.cam_enc'),
                         ('model.all_heads.camera_head', 'model.cam_dec'),
                         ('.more_mlps.', '.backbone.'), ('.fc_rot.', '.fc_qvec.'),
                         ('model.all_heads.head', 'model.head'),
                         ('output_conv2_additional.sky_mask', 'sky_output_conv2'),
                         ('_ray.', '_aux.'), ('gaussian_param_head.', 'gs_head.')):
            key = key.replace(old, new)
        renamed[key.removeprefix('model.')] = value
    return renamed


def _renames() -> dict[str, str]:
    """Map the official names of the depth branch's tensors to this network's."""
    renames = dict(dpt_head_renames('head.'))
    for suffix in ('weight', 'bias'):
        renames[f'head.norm.{suffix}'] = f'head_norm.{suffix}'
        for index in (0, 2):
            renames[f'head.scratch.sky_output_conv2.{index}.{suffix}'] = f'sky.{index}.{suffix}'
    return renames


def network_state(official: dict[str, torch.Tensor], network: DA3Network,
                  origin: str) -> dict[str, torch.Tensor]:
    """
    Return the network's state dict from an official one; every key accounted for.

    Raises DA3ConfigError naming missing tensors, and tensors that are neither the network's
    nor of an unbuilt branch.
    """
    renames = _renames()
    wanted = set(network.state_dict())
    state, unexpected = {}, []
    for key, value in official.items():
        ours = renames.get(key, key)
        if ours in wanted:
            state[ours] = value
        elif not any(re.match(pattern, key) for pattern in UNBUILT_BRANCHES):
            unexpected.append(key)
    missing = sorted(wanted - set(state))
    if missing or unexpected:
        name = network.da3_config.name
        raise DA3ConfigError(
            f'{origin} is not a complete {name} checkpoint: {len(missing)} missing '
            f'{missing[:3]}, {len(unexpected)} unexpected {sorted(unexpected)[:3]}')
    return state


def config_from_state(official: dict[str, torch.Tensor], file_name: str) -> DA3Config:
    """Infer the preset of official weights from their shapes (and the file name)."""
    embed = official.get('backbone.pretrained.pos_embed')
    if embed is None:
        raise DA3ConfigError('no backbone.pretrained.pos_embed: not a Depth Anything 3 '
                             'checkpoint')
    vit = next((name for name, size in VIT_SIZES.items() if size[0] == embed.shape[-1]), None)
    dual = 'head.norm.weight' in official
    candidates = [config for config in PRESETS.values()
                  if config.vit == vit and (config.head == 'dualdpt') == dual]
    if len(candidates) > 1:
        lowered = file_name.lower()
        candidates = [c for c in candidates
                      if ('metric' in lowered) == c.metric and ('mono' in lowered or c.metric)]
    if len(candidates) != 1:
        raise DA3ConfigError(
            f'cannot tell which Depth Anything 3 model these {vit or "unknown"} weights are; '
            'put the official config.json (model_name) beside the file')
    return candidates[0]


def build_network(config: DA3Config, state: dict[str, torch.Tensor],
                  origin: str) -> DA3Network:
    """Build ``config``'s network and load official weights into it (strict)."""
    network = DA3Network(config)
    named = network_state(official_names(state), network, origin)
    try:
        network.load_state_dict(named, strict=True)
    except RuntimeError as error:  # shapes that do not fit this preset
        first = str(error).split('\n\t')[1] if '\n\t' in str(error) else str(error)
        raise DA3ConfigError(f'{origin} does not fit {config.name}: {first.strip()}') from None
    return network


def load_file(path: Path, model_name: str | None = None) -> DA3Network:
    """Load a weights file; the model from ``model_name``, a config.json beside it, or shapes."""
    state = read_state_dict(path)
    name = model_name or _config_model_name(path.parent / 'config.json')
    config = preset(name) if name else config_from_state(official_names(state), path.name)
    return build_network(config, state, str(path))


def load_folder(folder: Path) -> DA3Network:
    """Load a folder written by the official ``save_pretrained``."""
    name = _config_model_name(folder / 'config.json')
    if name is None:
        raise DA3ConfigError(f'{folder}/config.json names no Depth Anything 3 model_name')
    weights = folder / WEIGHT_FILE
    if not weights.is_file():
        raise DA3ConfigError(f'{folder} has no {WEIGHT_FILE}')
    return load_file(weights, name)


class _NotCached(Exception):
    """A hub file is not in the local cache."""


def _hub_files(repo: str, local_only: bool) -> tuple[Path, Path]:
    """Return the paths of a repository's config.json and weights (from the cache: local_only)."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return tuple(Path(hf_hub_download(repo, name, local_files_only=local_only))
                     for name in ('config.json', WEIGHT_FILE))
    except LocalEntryNotFoundError as error:
        raise _NotCached(repo) from error


def load_hub(spec: str, local_files_only: bool,
             hub_unreachable_reason: Callable[[], str]) -> DA3Network:
    """Load a hub repository: the local cache first, the hub only when reachable."""
    repo = hub_id_of(spec)
    try:
        config_path, weights = _hub_files(repo, local_only=True)
    except _NotCached:
        reason = 'only the cache may be read' if local_files_only else hub_unreachable_reason()
        if reason:
            raise DA3ConfigError(f'{spec!r} ({repo}) is not in the local Hugging Face cache '
                                 f'and {reason}') from None
        config_path, weights = _hub_files(repo, local_only=False)
    return load_file(weights, _config_model_name(config_path) or preset_of_hub_id(repo))


def preset_of_hub_id(repo: str) -> str:
    """Return the preset name of a published repository (``depth-anything/DA3-SMALL``)."""
    return HUB_IDS[repo.lower()]


def load_da3_network(spec: str, local_files_only: bool,
                     hub_unreachable_reason: Callable[[], str]) -> DA3Network:
    """Load the Depth Anything 3 network a spec names (see the module docstring)."""
    if hub_id_of(spec) is not None:
        return load_hub(spec, local_files_only, hub_unreachable_reason)
    path = Path(spec).expanduser()
    return load_folder(path) if path.is_dir() else load_file(path)
