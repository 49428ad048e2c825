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
A change of the node's parameters at run time, checked as start-up checks them.

Start-up validates each value, the values together, and then builds the engine on the model,
which refuses options the model cannot run; a change passes the same checks, the last one
against the loaded model (:func:`changed_settings`).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from .node_settings import NodeSettings
from .parameters import InvalidParameterError
from ..engine import TTOConfig
from ..errors import ConfigError


def changed_settings(values: Mapping[str, Any],
                     check_model: Callable[[TTOConfig], Any] | None, listens_to_tf: bool,
                     changed: Sequence[str]) -> NodeSettings:
    """
    Return the settings of ``values`` (with the change); raise InvalidParameterError if not.

    ``check_model``: the loaded model's check of engine options (the completer's
    ``model_option_notices``; None before a model is loaded); ``listens_to_tf``: whether the
    node looks transforms up (not when it started with an extrinsic override); ``changed``: the
    names of the parameters that change (removing the override is refused without tf2).
    """
    settings = NodeSettings.from_values(values)
    if check_model is None:
        return settings
    try:
        check_model(settings.tto)
    except ConfigError as error:
        raise InvalidParameterError(error.field, str(error)) from error
    override = [name for name in changed if name.startswith('lidar_to_camera.')]
    if override and settings.uses_tf_extrinsic and not listens_to_tf:
        raise InvalidParameterError(
            override[0], 'the node does not listen to tf2 (it started with the override, or '
            'tf2_ros is missing), so it cannot look the transform up: keep an override '
            '(translation/rotation or matrix), or restart without one')
    return settings
