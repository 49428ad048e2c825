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

from .alignment import (
    aligned_to_depth, alignment_loss, depth_to_target, fit_scale_shift, PredictionSpace,
    ScaleShift)
from .completion import CompletionResult, CompletionStatus, EncodedFrame, InputTypeError
from .config import FewPointsPolicy, Scope, TTOConfig
from .loading import DEFAULT_MODEL, load_depth_model, ModelLoadError
from .lora import LoraAdapters
from .model import DepthModel, EncodedImage, resolve_device
from .precision import UnsupportedPrecisionError
from .tto import (
    CompletionCancelledError, DepthCompleter, InsufficientSparseDepthError, NonFiniteDepthError)
from .unidepth import UniDepthModel

__all__ = [
    'aligned_to_depth', 'alignment_loss', 'CompletionCancelledError', 'CompletionResult',
    'CompletionStatus',
    'DEFAULT_MODEL', 'depth_to_target', 'DepthCompleter', 'DepthModel', 'EncodedFrame',
    'EncodedImage',
    'FewPointsPolicy', 'fit_scale_shift', 'InputTypeError', 'InsufficientSparseDepthError',
    'load_depth_model',
    'LoraAdapters', 'ModelLoadError', 'NonFiniteDepthError', 'PredictionSpace', 'resolve_device',
    'ScaleShift', 'Scope',
    'TTOConfig', 'UniDepthModel', 'UnsupportedPrecisionError',
]
