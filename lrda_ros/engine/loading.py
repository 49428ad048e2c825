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
Which depth model to run: the ``model`` setting's keywords and the embedded demo prior.

``model`` is a Hugging Face hub id, a local Hugging Face directory, an official Depth Anything
V2 ``.pth`` file, or one of two keywords:

- ``demo``: the small prior shipped with this package, trained on the procedural world of
  :mod:`lrda_ros.demo.world`. It demonstrates the system offline; it is not a foundation model.
- ``auto``: Depth Anything V2 Small from the local Hugging Face cache, else from the hub when
  the hub answers, else the demo prior with a warning that says how to get the real model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
import socket
from urllib.parse import urlparse

from .model import DEFAULT_MODEL, DepthModel, load_depth_model, ModelLoadError

AUTO = 'auto'
DEMO = 'demo'


@dataclass(frozen=True)
class ModelChoice:
    """A loaded model and where it came from."""

    model: DepthModel
    source: str
    is_demo_prior: bool
    #: A warning for the user ('' when the requested model was loaded as asked).
    warning: str = ''


def demo_prior_dir() -> Path:
    """Return the folder of the embedded demo prior (Hugging Face layout)."""
    return Path(__file__).resolve().parents[1] / 'weights' / 'demo_prior'


def hub_reachable(timeout_s: float = 2.0) -> bool:
    """Return whether the Hugging Face endpoint accepts a TCP connection within the timeout."""
    try:
        from huggingface_hub import constants
    except ImportError:
        return False
    if constants.HF_HUB_OFFLINE:
        return False
    url = urlparse(constants.ENDPOINT)
    port = url.port or (443 if url.scheme == 'https' else 80)
    try:
        with socket.create_connection((url.hostname, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def _demo_choice(device: str, warning: str = '') -> ModelChoice:
    return ModelChoice(load_depth_model(demo_prior_dir(), device=device), DEMO, True, warning)


def load_model(spec: str, device: str = 'cpu') -> ModelChoice:
    """
    Load the model a ``model`` setting names (see the module docstring).

    Raises ModelLoadError for an explicit source that cannot be loaded: it never falls back.
    """
    if spec == DEMO:
        return _demo_choice(device)
    if spec != AUTO:
        return ModelChoice(load_depth_model(spec, device=device), spec, False)
    try:
        return ModelChoice(load_depth_model(DEFAULT_MODEL, device=device, local_files_only=True),
                           DEFAULT_MODEL, False)
    except ModelLoadError:
        pass
    if hub_reachable():
        try:
            return ModelChoice(load_depth_model(DEFAULT_MODEL, device=device), DEFAULT_MODEL,
                               False)
        except ModelLoadError as error:
            reason = str(error).split('. Pass the model')[0]
    else:
        reason = f'{DEFAULT_MODEL} is not in the local Hugging Face cache and the hub is offline'
    return _demo_choice(device, warning=(
        f"model 'auto': {reason}. Running on the DEMONSTRATION prior, trained on synthetic "
        "scenes only; depth quality on real images is poor. Set the 'model' parameter to a hub "
        'id, a local Hugging Face directory or an official depth_anything_v2_*.pth file.'))
