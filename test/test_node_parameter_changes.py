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
Run-time parameter changes through the node's set_parameters service, as ros2 param set does.

An integer is a double for a double parameter (``ros2 param set ... max_depth 80`` sends an
integer); any other wrong type is refused with a reason that names the parameter and the type.
"""

from __future__ import annotations

from conftest import spin_until
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from lrda_ros import world  # noqa: E402, I100
from lrda_ros.ros.node import CompletionNode  # noqa: E402
from rcl_interfaces.msg import ParameterType  # noqa: E402
from rcl_interfaces.srv import DescribeParameters, SetParameters  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from test_node import node_parameters  # noqa: E402


@pytest.fixture
def services(ros_context, namespace, tiny_model_dir):
    """Start the node (tiny model); yield it, a call(service type, request) and the executor."""
    frame = world.make_sequence(world.SequenceConfig(
        'indoor', num_frames=1, width=112, height=84, seed=3,
        lidar=world.LidarConfig.indoor(beams=16)))[0]
    node = CompletionNode(context=ros_context, namespace=namespace,
                          parameter_overrides=node_parameters(tiny_model_dir, frame))
    client_node = rclpy.create_node('parameter_client', context=ros_context)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    executor.add_node(client_node)
    clients = {}

    def call(service_type, suffix, request):
        if suffix not in clients:
            clients[suffix] = client_node.create_client(
                service_type, f'{namespace}/completion_node/{suffix}')
        client = clients[suffix]
        assert spin_until(executor, client.service_is_ready, 10)
        future = client.call_async(request)
        assert spin_until(executor, future.done, 10)
        return future.result()

    yield node, call
    executor.shutdown()
    node.destroy_node()
    client_node.destroy_node()


def set_parameter(call, name, value):
    request = SetParameters.Request(parameters=[Parameter(name, value=value).to_parameter_msg()])
    return call(SetParameters, 'set_parameters', request).results[0]


def declared_type(call, name) -> int:
    response = call(DescribeParameters, 'describe_parameters',
                    DescribeParameters.Request(names=[name]))
    return response.descriptors[0].type


def test_an_integer_for_a_double_parameter_is_that_double(services):
    node, call = services
    result = set_parameter(call, 'max_depth', 80)
    assert result.successful, result.reason
    assert node.get_parameter('max_depth').type_ == Parameter.Type.DOUBLE
    assert node.get_parameter('max_depth').value == 80.0
    assert node.settings.tto.max_depth == 80.0  # the next frame's settings
    result = set_parameter(call, 'lidar_to_camera.translation', [0, 0, 1])
    assert result.successful, result.reason
    assert node.get_parameter('lidar_to_camera.translation').value == [0.0, 0.0, 1.0]


def test_a_wrong_type_is_refused_naming_the_parameter_and_the_type(services):
    node, call = services
    result = set_parameter(call, 'max_depth', 'far')
    assert not result.successful
    assert "'max_depth'" in result.reason and 'expects a double' in result.reason, result.reason
    result = set_parameter(call, 'iterations', 2.5)
    assert not result.successful
    assert "'iterations'" in result.reason and 'expects an integer' in result.reason
    # The refused values leave the parameters, and the types describe shows, as they were.
    assert node.get_parameter('max_depth').value == 120.0
    assert declared_type(call, 'max_depth') == ParameterType.PARAMETER_DOUBLE
    assert declared_type(call, 'iterations') == ParameterType.PARAMETER_INTEGER
    # Ranges still hold for converted values.
    result = set_parameter(call, 'max_depth', 100000)
    assert not result.successful and 'max_depth' in result.reason
