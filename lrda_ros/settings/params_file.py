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
Node parameter values outside ROS: a ROS 2 parameters file and ``NAME:=VALUE`` overrides.

What ``lrda densify`` and ``lrda eval --bag`` read, as the node reads ``--params-file`` and
``-p``, checked against the node's table (:mod:`.parameters`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from .parameters import closest_parameter, coerce_value, InvalidParameterError, SPECS
from ..errors import ConfigError


def load_parameters(params_file: Path | None, overrides: Sequence[str]) -> dict[str, Any]:
    """
    Return node parameter values from a ROS 2 parameters file and ``NAME:=VALUE`` overrides.

    The file's ``ros__parameters`` of every node entry (``/**``, ``completion_node``, ...) are
    merged in file order, nested keys joined by dots; overrides win. Values are YAML, as on a
    ``ros2 run ... -p`` command line, and take the parameter's type (an integer for a double).
    """
    import yaml

    values: dict[str, Any] = {}
    if params_file is not None:
        if not Path(params_file).is_file():
            raise ConfigError(f'parameters file {str(params_file)!r} does not exist',
                              field='--params-file')
        try:
            document = yaml.safe_load(Path(params_file).read_text()) or {}
        except yaml.YAMLError as error:
            raise ConfigError(f'parameters file {str(params_file)!r} is not valid YAML: '
                              f'{str(error).splitlines()[0]}', field='--params-file') from None
        for entry in document.values() if isinstance(document, dict) else ():
            if isinstance(entry, dict) and isinstance(entry.get('ros__parameters'), dict):
                values.update(_flatten(entry['ros__parameters']))
    for item in overrides:
        name, sep, text = item.partition(':=')
        if not sep or not name:
            raise ConfigError(f'-p {item!r}: write NAME:=VALUE (a node parameter)', field='-p')
        values[name.strip()] = yaml.safe_load(text) if text.strip() else ''
    for name in values:
        if name not in SPECS:
            close = closest_parameter(name)
            raise InvalidParameterError(name, 'the completion node has no such parameter'
                                        + (f' (did you mean {close!r}?)' if close else ''))
    return {name: coerce_value(name, value) for name, value in values.items()}


def _flatten(tree: Mapping[str, Any], prefix: str = '') -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f'{prefix}{key}.'))
        else:
            flat[f'{prefix}{key}'] = value
    return flat
