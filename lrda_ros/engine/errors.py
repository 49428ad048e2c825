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
The engine's errors, importable without torch.

A node or command refuses a bad setting, model or input with one line before torch's seconds of
import; its error handlers name these classes, so they live apart from the code (loading, the
completer, precisions) that raises them, which re-exports them under their old names.
"""

from __future__ import annotations

from ..errors import ConfigError, InputError, LrdaError, ModelError


class ModelLoadError(ModelError):
    """The depth model could not be loaded; the message says what to pass instead."""


class UnsupportedPrecisionError(ConfigError):
    """The configured ``dtype`` cannot run on the configured device; the message says why."""


class InputTypeError(InputError, TypeError):
    """An input is not of the type the engine takes (a NumPy array)."""


class InsufficientSparseDepthError(InputError):
    """Too few valid sparse depths to anchor the metric scale."""


class CompletionCancelledError(LrdaError, RuntimeError):
    """``should_stop`` asked the optimization to stop (e.g. the node is shutting down)."""


class NonFiniteDepthError(InputError, FloatingPointError):
    """The network produced non-finite values for a frame (e.g. a corrupt image)."""
