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
Declare the completion node's parameters on an rclpy node, with errors users can act on.

rclpy alone turns a params file with a wrong type into a traceback, refuses a run-time change of
type with a message that names neither the parameter nor the fix, and ignores misspelt names.
Here integers given for doubles (and integer arrays for double arrays) are converted, at start-up
and at run time; any other wrong type names the parameter and the type expected; an out-of-range
value names its range; and a name the node does not declare is warned about with the closest
declared name.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from rcl_interfaces.msg import (
    FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult)
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.node import Node
from rclpy.parameter import Parameter

from ..settings.parameters import (
    closest_parameter, coerce_value, InvalidParameterError, ParameterSpec, SPECS)

# Parameters rclpy declares itself, on demand (QoS overrides exist once the topic does).
_RCLPY_PREFIXES = ('qos_overrides.',)


def descriptor(spec: ParameterSpec) -> ParameterDescriptor:
    """Build what ``ros2 param describe`` shows: description, range, read-only flag."""
    # Typed by coerce_parameter_types and parameter_values instead of rclpy: rclpy checks a
    # static type before any callback runs and rejects an integer for a double.
    result = ParameterDescriptor(description=spec.description, read_only=spec.read_only,
                                 additional_constraints=spec.constraints, dynamic_typing=True)
    if spec.minimum is not None and isinstance(spec.default, float):
        result.floating_point_range = [FloatingPointRange(
            from_value=float(spec.minimum), to_value=float(spec.maximum), step=0.0)]
    elif spec.minimum is not None and isinstance(spec.default, int) \
            and not isinstance(spec.default, bool):
        result.integer_range = [IntegerRange(
            from_value=int(spec.minimum), to_value=int(spec.maximum), step=0)]
    return result


def _overrides(node: Node) -> dict[str, Parameter]:
    # rclpy keeps the values of --params-file, -p and parameter_overrides here (every
    # distro since Foxy); declare_parameter reads them from the same dict.
    return getattr(node, '_parameter_overrides', {})


def declare_parameters(node: Node, specs: Iterable[ParameterSpec]) -> None:
    """Declare every spec on ``node``; raise InvalidParameterError for an unusable override."""
    overrides = _overrides(node)
    for spec in specs:
        override = overrides.get(spec.name)
        if override is not None:
            value = coerce_value(spec.name, override.value)
            reason = spec.check(value)
            if reason:
                raise InvalidParameterError(spec.name, reason)
            if value is not override.value:
                overrides[spec.name] = Parameter(spec.name, value=value)
        try:
            node.declare_parameter(spec.name, spec.default, descriptor(spec))
        except (InvalidParameterTypeException, InvalidParameterValueException) as error:
            raise InvalidParameterError(spec.name, str(error)) from error


def warn_unknown_parameters(node: Node) -> list[str]:
    """Warn about each override that names no declared parameter; return those names."""
    unknown = sorted(name for name in _overrides(node) if not node.has_parameter(name)
                     and not name.startswith(_RCLPY_PREFIXES))
    for name in unknown:
        closest = closest_parameter(name)
        hint = f"; did you mean '{closest}'?" if closest else ''
        node.get_logger().warning(
            f"parameter '{name}' is not a parameter of {node.get_name()} and is ignored{hint}")
    return unknown


def coerce_parameter_types(parameters: list[Parameter]) -> list[Parameter]:
    """
    Convert integers given for doubles (and integer arrays for double arrays): a pre-set callback.

    Values of any other wrong type pass unchanged; parameter_values rejects them with a reason.
    """
    result = []
    for parameter in parameters:
        if parameter.name in SPECS:
            try:
                value = coerce_value(parameter.name, parameter.value)
            except InvalidParameterError:
                value = parameter.value
            if value is not parameter.value:
                parameter = Parameter(parameter.name, value=value)
        result.append(parameter)
    return result


def parameter_values(node: Node, specs: Iterable[ParameterSpec],
                     changed: Iterable[Parameter] = ()) -> dict[str, Any]:
    """
    Return name -> value of ``specs`` on ``node``, with ``changed`` applied.

    Raise InvalidParameterError for a changed value of a type its parameter does not take.
    """
    values = {spec.name: node.get_parameter(spec.name).value for spec in specs}
    values.update({parameter.name: parameter.value for parameter in changed})
    # Every value, not only the changed ones: without a pre-set callback (Humble) an integer
    # set for a double is stored as that integer.
    return {name: coerce_value(name, value) if name in SPECS else value
            for name, value in values.items()}


def keep_declared_types(node: Node, parameters: Iterable[Parameter]) -> None:
    """
    Restore the types ``ros2 param describe`` shows after a rejected change.

    rclpy sets a dynamically typed parameter's descriptor type to the type of the value being
    set before the callbacks can reject it; the value stays, so its type is restored here.
    """
    for parameter in parameters:
        if parameter.name in SPECS and node.has_parameter(parameter.name):
            node.describe_parameter(parameter.name).type = \
                node.get_parameter(parameter.name).type_.value


def watch_parameters(node: Node, validate: Callable[[list[Parameter]], Any],
                     apply: Callable[[list[Parameter]], None]) -> None:
    """
    Register the parameter callbacks: coerce types, ``validate`` a change, ``apply`` it.

    ``validate`` raises InvalidParameterError to refuse a change; ``apply`` rebuilds the
    node's state from its parameters with the change applied. From Iron on these are rclpy's
    pre-set, on-set and post-set callbacks. Humble has only on-set: values are coerced when
    read (:func:`parameter_values`), and ``apply`` runs at the end of an accepting on-set call
    (the node's only one, so nothing can refuse the change after it).
    """
    if hasattr(node, 'add_pre_set_parameters_callback'):
        node.add_pre_set_parameters_callback(coerce_parameter_types)
    post_set = getattr(node, 'add_post_set_parameters_callback', None)

    def on_set(parameters: list[Parameter]) -> SetParametersResult:
        try:
            validate(parameters)
        except InvalidParameterError as error:
            keep_declared_types(node, parameters)
            return SetParametersResult(successful=False, reason=str(error))
        if post_set is None:
            apply(parameters)
        return SetParametersResult(successful=True)

    node.add_on_set_parameters_callback(on_set)
    if post_set is not None:
        post_set(apply)
