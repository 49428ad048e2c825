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
Load the depth model any ``model`` spec names: the one loader of the package.

A spec is a Hugging Face hub id, a local Hugging Face directory (``save_pretrained`` layout), an
official Depth Anything V2 ``.pth`` file (converted by :mod:`lrda_ros.engine.checkpoint`),
UniDepthV2 weights (hub ids ``lpiccinelli/unidepth-v2-vit{s,b,l}14``, a folder or file of
them; :mod:`lrda_ros.engine.unidepth.loading`), or one of two keywords:

- ``demo``: the small prior shipped with this package, trained on the procedural world of
  :mod:`lrda_ros.world`. It demonstrates the system offline; it is not a foundation model.
- ``auto``: Depth Anything V2 Small from the local Hugging Face cache, else from the hub when
  the hub answers, else a ModelLoadError that says what to set: it never runs the demo prior,
  so a robot is never silently on a synthetic model.

A hub id is read from the local cache first; the hub is only asked when it is reachable
(``HF_HUB_OFFLINE`` unset and a TCP connection to its endpoint opens within a second or two),
so an offline machine gets its answer at once instead of after the hub client's retries.
"""

from __future__ import annotations

from pathlib import Path

import torch

from .checkpoint import (
    build_config, CheckpointError, inspect_checkpoint, official_to_transformers,
    read_official_state_dict)
from .da3.loading import is_da3_source
# The error and the spec names are torch-free (checked before torch loads); named here too.
from .errors import ModelLoadError
from .hub import auto_model_error, hub_unreachable_reason, not_cached_and_offline
from .model import DepthModel, resolve_device
from .names import (  # noqa: F401
    AUTO, DEFAULT_MODEL, DEMO, HOW_TO_PASS, is_demo_prior_source, looks_like_path,
    missing_path_error)
from .unidepth.loading import is_unidepth_source
from ..errors import ModelError

#: What safetensors and torch.load say of a weights file cut short or damaged.
_DAMAGED_FILE_SIGNS = ('deserializing header', 'file not fully covered', 'header too small',
                       'failed finding central directory', 'failed reading zip archive',
                       'Ran out of input', 'unexpected EOF', 'invalid load key',
                       'MetadataIncompleteBuffer', 'HeaderTooLarge', 'InvalidHeader')
_WEIGHT_SUFFIXES = ('.safetensors', '.pth', '.pt', '.bin')


def damaged_weights_error(text: str, error: BaseException) -> ModelLoadError | None:
    """
    Return the one-line error for a truncated or corrupt weights file (None: not that).

    An interrupted download or copy leaves a file its reader cannot parse; listing every model
    form the loader accepts would not help there, naming the file does.
    """
    chain, cause = [], error
    while cause is not None and len(chain) < 5:
        chain.append(f'{type(cause).__name__}: {cause}')
        cause = cause.__cause__
    found = next((line for line in chain if any(sign in line for sign in _DAMAGED_FILE_SIGNS)),
                 None)
    if found is None:
        return None
    path = Path(text).expanduser()
    files = ([path] if path.is_file() else sorted(
        child for child in path.iterdir() if child.suffix in _WEIGHT_SUFFIXES)
        if path.is_dir() else [])
    named = ', '.join(str(file) for file in files) or repr(text)
    reason = found.split('. ')[0].split('\n')[0]
    return ModelLoadError(f'the weights file {named} of model {text!r} is truncated or corrupt '
                          f'({reason}): copy or download it again')


def demo_prior_dir() -> Path:
    """Return the folder of the embedded demo prior (Hugging Face layout)."""
    return Path(__file__).resolve().parents[1] / 'weights' / 'demo_prior'


def load_depth_model(spec: str | Path = DEFAULT_MODEL, device: str = 'cpu',
                     depth_estimation_type: str | None = None,
                     max_depth: float | None = None,
                     local_files_only: bool = False) -> DepthModel:
    """
    Load the depth model a spec names (see the module docstring) on ``device``.

    ``depth_estimation_type`` ('relative' or 'metric') and ``max_depth`` only matter for official
    checkpoints, whose file name otherwise tells (``..._metric_vkitti_...`` means metric, 80 m).
    ``local_files_only`` makes a hub id resolve from the local cache only (no network). The
    result's ``source``, ``is_demo_prior`` and ``warning`` say what was loaded.

    :raises ModelLoadError: for a source that cannot be loaded (nothing falls back to another
        model), with a message that says what to pass instead.
    """
    text = str(spec)
    torch_device = resolve_device(device)
    if text == DEMO:
        return _demo_prior(torch_device)
    if text == AUTO:
        return _auto(torch_device)
    if is_unidepth_source(text):
        return _load_unidepth(text, torch_device, local_files_only)
    if is_da3_source(text):
        return _load_da3(text, torch_device, local_files_only)
    network = _load_network(text, depth_estimation_type, max_depth, local_files_only)
    return DepthModel(network, torch_device, source=text)


def _load_unidepth(text: str, device: torch.device, local_files_only: bool):
    """Return a UniDepthModel of a hub id, folder or weights file (errors say what to pass)."""
    from .unidepth import load_unidepth_network, UniDepthModel

    return UniDepthModel(_network_of('UniDepthV2', load_unidepth_network, text,
                                     local_files_only), device, source=text)


def _load_da3(text: str, device: torch.device, local_files_only: bool):
    """Return a DA3Model of a model name, hub id, folder or weights file."""
    from .da3 import DA3Model, load_da3_network

    return DA3Model(_network_of('Depth Anything 3', load_da3_network, text, local_files_only),
                    device, source=text)


def _network_of(family: str, load, text: str, local_files_only: bool) -> torch.nn.Module:
    """Run a family's loader; any failure becomes one ModelLoadError saying what to pass."""
    try:
        return load(text, local_files_only, hub_unreachable_reason)
    except Exception as error:  # torch/safetensors/hub raise many types: all mean "not loadable"
        damaged = damaged_weights_error(text, error)
        if damaged is not None:
            raise damaged from error
        if isinstance(error, ModelError):
            raise ModelLoadError(f'cannot load {family} {text!r}: {error}. {HOW_TO_PASS}'
                                 ) from error
        raise ModelLoadError(f'cannot load {family} {text!r} ({type(error).__name__}: '
                             f'{error}). {HOW_TO_PASS}') from error


def _demo_prior(device: torch.device) -> DepthModel:
    network = _load_network(str(demo_prior_dir()), None, None, True)
    return DepthModel(network, device, source=DEMO, is_demo_prior=True)


def _auto(device: torch.device) -> DepthModel:
    """Return Depth Anything V2 Small from the cache or a reachable hub; else raise, saying why."""
    try:
        network = _load_network(DEFAULT_MODEL, None, None, local_files_only=True)
        return DepthModel(network, device, source=DEFAULT_MODEL)
    except ModelLoadError:
        pass
    offline = hub_unreachable_reason()
    if offline:
        reason = not_cached_and_offline(DEFAULT_MODEL, offline)
    else:
        try:
            return DepthModel(_load_network(DEFAULT_MODEL, None, None, False), device,
                              source=DEFAULT_MODEL)
        except ModelLoadError as error:
            reason = str(error).split(' Pass the model')[0]
    raise auto_model_error(reason)


def _load_network(text: str, depth_estimation_type: str | None, max_depth: float | None,
                  local_files_only: bool) -> torch.nn.Module:
    """Return the transformers network of a hub id, local directory or official checkpoint."""
    path = Path(text).expanduser()
    try:
        if path.is_file():
            network = _load_official(path, depth_estimation_type, max_depth)
        elif path.is_dir():
            if not (path / 'config.json').is_file():
                raise ModelLoadError(f'model directory {path} has no config.json. {HOW_TO_PASS}')
            network = _load_pretrained(str(path), local_files_only=True)
        elif looks_like_path(text):
            raise missing_path_error(text)
        else:
            network = _load_hub(text, local_files_only)
    except ModelLoadError:
        raise
    except Exception as error:  # transformers/hub raise many types: all mean "not loadable"
        damaged = damaged_weights_error(text, error)
        if damaged is not None:
            raise damaged from error
        if isinstance(error, CheckpointError):
            raise ModelLoadError(
                f'cannot convert checkpoint {text!r}: {error}. {HOW_TO_PASS}') from error
        raise ModelLoadError(f'cannot load model {text!r} ({type(error).__name__}: {error}). '
                             f'{HOW_TO_PASS}') from error
    if getattr(network.config, 'model_type', None) != 'depth_anything':
        raise ModelLoadError(f'{text!r} is a {network.config.model_type!r} model, not Depth '
                             f'Anything. {HOW_TO_PASS}')
    return network


def _load_hub(hub_id: str, local_files_only: bool) -> torch.nn.Module:
    """Load a hub id from the cache, else from the hub only when it is reachable."""
    try:
        return _load_pretrained(hub_id, local_files_only=True)
    except OSError:  # not cached (transformers raises OSError / EnvironmentError)
        if local_files_only:
            raise ModelLoadError(f'model {hub_id!r} is not in the local Hugging Face cache. '
                                 f'{HOW_TO_PASS}') from None
    offline = hub_unreachable_reason()
    if offline:
        raise ModelLoadError(f'model {hub_id!r} is not in the local Hugging Face cache and '
                             f'{offline}. {HOW_TO_PASS}')
    return _load_pretrained(hub_id, local_files_only=False)


def _load_official(path: Path, depth_estimation_type: str | None,
                   max_depth: float | None) -> torch.nn.Module:
    from transformers import DepthAnythingForDepthEstimation

    state_dict = read_official_state_dict(path)
    info = inspect_checkpoint(path, state_dict, depth_estimation_type, max_depth)
    config = build_config(info.variant, info.depth_estimation_type, info.max_depth)
    network = DepthAnythingForDepthEstimation(config)
    converted = official_to_transformers(state_dict, config, set(network.state_dict()))
    result = network.load_state_dict(converted, strict=False)
    if result.missing_keys or result.unexpected_keys:
        raise CheckpointError(f'{path}: converted weights do not fit the {info.variant} model: '
                              f'missing {result.missing_keys[:5]}, '
                              f'unexpected {result.unexpected_keys[:5]}')
    return network


def _load_pretrained(source: str, local_files_only: bool) -> torch.nn.Module:
    from transformers import DepthAnythingForDepthEstimation
    from transformers.utils import logging as transformers_logging

    # Reading weights already on disk takes a moment: transformers' 'Loading weights' bar
    # would be the first thing every command prints. A download keeps its progress bars.
    quiet = (local_files_only or Path(source).is_dir()) and \
        transformers_logging.is_progress_bar_enabled()
    if quiet:
        transformers_logging.disable_progress_bar()
    # transformers' own report of missing keys would precede the one-line error below.
    verbosity = transformers_logging.get_verbosity()
    transformers_logging.set_verbosity_error()
    try:
        network, info = DepthAnythingForDepthEstimation.from_pretrained(
            source, local_files_only=local_files_only, output_loading_info=True)
    finally:
        transformers_logging.set_verbosity(verbosity)
        if quiet:
            transformers_logging.enable_progress_bar()
    _check_loading_info(source, info)
    return network


def _check_loading_info(source: str, info: dict) -> None:
    """
    Refuse weights that do not fill the model transformers built from the config.

    transformers initializes a missing tensor at random and only reports it: a folder whose
    config.json says Depth Anything V2 while its weights are another model's would give
    random depth. Every key must load; none may be left over or of another shape.
    """
    problems = {kind: sorted(map(str, info.get(kind) or ())) for kind in
                ('missing_keys', 'unexpected_keys', 'mismatched_keys', 'error_msgs')}
    problems = {kind: keys for kind, keys in problems.items() if keys}
    if problems:
        counts = ', '.join(f'{len(keys)} {kind.replace("_keys", "").replace("_", " ")} '
                           f'{[str(k) for k in keys[:3]]}' for kind, keys in problems.items())
        raise ModelLoadError(f'{source}: the weights do not fit the Depth Anything V2 model '
                             f'its config.json describes ({counts}). {HOW_TO_PASS}')
