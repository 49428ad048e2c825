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
Model specs and device names, read without torch: a setting that cannot work is refused at once.

:func:`~lrda_ros.engine.loading.load_depth_model` and
:func:`~lrda_ros.engine.model.resolve_device` give these answers with torch loaded; nodes and
commands ask here first, so that a typo costs no seconds of torch's import.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path
import re

from .errors import ModelLoadError
from .hub import auto_model_error, why_it_cannot_load

DEFAULT_MODEL = 'depth-anything/Depth-Anything-V2-Small-hf'
AUTO = 'auto'
DEMO = 'demo'

#: What a refused model spec's message ends with: the forms the loader takes.
HOW_TO_PASS = ('Pass the model as a local Hugging Face directory (config.json + '
               'model.safetensors, as written by save_pretrained), an official Depth Anything V2 '
               'checkpoint file (depth_anything_v2_vits.pth, ..._metric_hypersim_vitl.pth), '
               'a UniDepthV2 hub id (lpiccinelli/unidepth-v2-vits14, -vitb14, -vitl14) or a '
               'folder or weights file of one, a Depth Anything 3 model (da3-small, da3-base, '
               'da3-large, da3metric-large, da3mono-large, or its hub id) or a folder or '
               'weights file of one, '
               "'demo' for the embedded demonstration prior, or a hub id that is reachable or "
               f'already cached (default {DEFAULT_MODEL!r}).')

#: Devices resolve_device takes on every machine: nothing of torch's to ask about them.
ALWAYS_AVAILABLE_DEVICES = ('auto', 'cpu')
#: The device types torch parses (c10's DeviceType names, past releases' included).
TORCH_DEVICE_TYPES = frozenset((
    'cpu', 'cuda', 'ipu', 'xpu', 'mkldnn', 'opengl', 'opencl', 'ideep', 'hip', 've', 'fpga',
    'maia', 'xla', 'lazy', 'vulkan', 'mps', 'meta', 'hpu', 'mtia', 'privateuseone', 'ort',
    'mlc', 'msnpu'))
#: torch's device string: a type, then an index without leading zeros.
_DEVICE_STRING = re.compile(r'([A-Za-z_]+)(?::(?:0|[1-9][0-9]*))?')


def is_demo_prior_source(source: str | None) -> bool:
    """
    Return whether a model's ``source`` names the demonstration prior.

    ``source`` as a loaded model records it and /diagnostics and reports name it: ``demo``
    for the prior (only ever loaded when asked for).
    """
    return source == DEMO


def looks_like_path(source: str) -> bool:
    """Return whether a model spec is meant as a path (never a hub id or a model name)."""
    return (source.startswith(('/', './', '../', '~')) or source.count('/') > 1
            or source.endswith(('.pth', '.pt', '.safetensors', '.bin')))


def missing_path_error(text: str) -> ModelLoadError:
    """Return the error of a model path that names neither a file nor a folder."""
    return ModelLoadError(f'model path {text!r} does not exist. {HOW_TO_PASS}')


def check_model_path(spec: str | Path, device: str) -> None:
    """
    Raise load_depth_model's ModelLoadError for a model it cannot load whatever torch says.

    A model path that does not exist, and ``auto`` where the default model is not in the local
    Hugging Face cache and the hub cannot be reached. Only for a device the loader accepts
    without asking torch (it checks the device first). A spec that looks like a path is no hub
    id or model name of any family, so the loader would find no other meaning for it.
    """
    if device not in ALWAYS_AVAILABLE_DEVICES:
        return
    text = str(spec)
    path = Path(text).expanduser()
    if looks_like_path(text) and not path.is_file() and not path.is_dir():
        raise missing_path_error(text)
    if text == AUTO:
        reason = why_it_cannot_load(DEFAULT_MODEL)
        if reason:
            raise auto_model_error(reason)


def unknown_device_message(name: str) -> str:
    """Return what resolve_device says of a device name torch cannot parse."""
    return f"unknown device {name!r}: use 'auto', 'cpu', 'cuda' or 'cuda:N'"


def unknown_device(name: object) -> str | None:
    """
    Return resolve_device's message for a device name torch cannot parse, else None.

    None also where torch must decide: a device extension (an entry point of group
    ``torch.backends``, loaded with torch) may add a device type.
    """
    if not isinstance(name, str) or name in ALWAYS_AVAILABLE_DEVICES:
        return None
    match = _DEVICE_STRING.fullmatch(name)
    if (match and match.group(1) in TORCH_DEVICE_TYPES) or entry_points(group='torch.backends'):
        return None
    return unknown_device_message(name)
