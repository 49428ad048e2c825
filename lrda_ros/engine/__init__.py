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
Pure-PyTorch test-time optimization engine (no ROS imports).

Typical use::

    from lrda_ros.engine import DepthCompleter, load_depth_model, TTOConfig

    model = load_depth_model('auto', device='auto')   # or a hub id, a directory, a .pth, 'demo'
    completer = DepthCompleter(model, TTOConfig(iterations=40, warm_start=True))
    result = completer.complete(rgb, sparse_depth)   # result.depth: (H, W) metres

UniDepthV2 (``load_depth_model('lpiccinelli/unidepth-v2-vits14')``, or a folder or weights file
of it) takes the camera, ``complete(rgb, sparse_depth, intrinsics=K)``, and also returns
``result.confidence``.
"""

from importlib import import_module
from typing import Any, TYPE_CHECKING

if TYPE_CHECKING:  # the names as type checkers and readers see them
    from .alignment import (  # noqa: F401
        aligned_to_depth, alignment_loss, depth_to_target, fit_scale_shift, PredictionSpace,
        ScaleShift)
    from .completion import CompletionResult, CompletionStatus, EncodedFrame  # noqa: F401
    from .config import FewPointsPolicy, Scope, TTOConfig  # noqa: F401
    from .errors import (  # noqa: F401
        CompletionCancelledError, InputTypeError, InsufficientSparseDepthError, ModelLoadError,
        NonFiniteDepthError, UnsupportedPrecisionError)
    from .loading import load_depth_model  # noqa: F401
    from .lora import LoraAdapters  # noqa: F401
    from .model import DepthModel, EncodedImage, resolve_device  # noqa: F401
    from .names import DEFAULT_MODEL  # noqa: F401
    from .tto import DepthCompleter  # noqa: F401
    from .unidepth import UniDepthModel  # noqa: F401

#: Where each public name lives, imported on first use (PEP 562): the configuration, the errors
#: and the settings and command lines built on them load without torch's seconds of import.
_HOMES = {
    'aligned_to_depth': 'alignment', 'alignment_loss': 'alignment',
    'depth_to_target': 'alignment', 'fit_scale_shift': 'alignment',
    'PredictionSpace': 'alignment', 'ScaleShift': 'alignment',
    'CompletionResult': 'completion', 'CompletionStatus': 'completion',
    'EncodedFrame': 'completion',
    'FewPointsPolicy': 'config', 'Scope': 'config', 'TTOConfig': 'config',
    'CompletionCancelledError': 'errors', 'InputTypeError': 'errors',
    'InsufficientSparseDepthError': 'errors', 'ModelLoadError': 'errors',
    'NonFiniteDepthError': 'errors', 'UnsupportedPrecisionError': 'errors',
    'load_depth_model': 'loading',
    'LoraAdapters': 'lora',
    'DepthModel': 'model', 'EncodedImage': 'model', 'resolve_device': 'model',
    'DEFAULT_MODEL': 'names',
    'DepthCompleter': 'tto',
    'UniDepthModel': 'unidepth',
}


def __getattr__(name: str) -> Any:
    """Import a public name's module on its first use (PEP 562), or a submodule."""
    home = _HOMES.get(name)
    if home is None:  # a submodule (``engine.tto``), as the eager imports had made them
        try:
            return import_module(f'.{name}', __name__)
        except ModuleNotFoundError as error:
            if error.name != f'{__name__}.{name}':
                raise
            raise AttributeError(f'module {__name__!r} has no attribute {name!r}') from None
    value = getattr(import_module(f'.{home}', __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))


__all__ = sorted(_HOMES, key=str.lower)
