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

"""One error family: every error the package raises on purpose names its kind and culprit."""

import ast
from pathlib import Path

from lrda_ros.engine import TTOConfig
from lrda_ros.errors import ConfigError, InputError, LrdaError, ModelError
from lrda_ros.geometry import ProjectionConfig
import pytest

PACKAGE = Path(__file__).resolve().parents[1] / 'lrda_ros'


def _exception_classes() -> list[tuple[str, str]]:
    """Return (module file, class name) of every class in the package named like an error."""
    found = []
    for path in sorted(PACKAGE.rglob('*.py')):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and node.name.endswith('Error'):
                found.append((str(path.relative_to(PACKAGE.parent)), node.name))
    return found


def _load(module_file: str, name: str) -> type:
    import importlib

    module = importlib.import_module(module_file[:-3].replace('/', '.'))
    return getattr(module, name)


@pytest.mark.parametrize('module_file,name', _exception_classes())
def test_every_error_class_is_in_the_family(module_file, name):
    if module_file.startswith('lrda_ros/ros/'):
        pytest.importorskip('rclpy', reason='the ROS shell needs rclpy')
    error = _load(module_file, name)
    assert issubclass(error, LrdaError), f'{module_file}: {name} is not an LrdaError'
    assert issubclass(error, (ConfigError, InputError, ModelError)) or name in (
        'CompletionCancelledError', 'LrdaError'), f'{name}: say its kind (config, input or model)'


def test_there_are_errors_of_every_layer():
    files = {module_file.split('/')[1] for module_file, _ in _exception_classes()}
    assert {'engine', 'geometry', 'messages', 'pipeline.py'} <= files


@pytest.mark.parametrize('field_name,value', [
    ('iterations', -1), ('lora_rank', 0), ('processing_size', 7), ('max_depth', 0.05),
    ('tail_strips', 0), ('dtype', 'float8')])
def test_engine_configuration_errors_name_their_field(field_name, value):
    with pytest.raises(ConfigError) as caught:
        TTOConfig(**{field_name: value})
    assert caught.value.field == field_name


@pytest.mark.parametrize('field_name,value', [
    ('embed_dim', 385), ('hidden_dim', 250), ('output_blocks', (3, 6, 9, 13)),
    ('decoder_depths', ()), ('kernel_size', 4), ('ratio_bounds', (2.5, 0.5)),
    ('pixel_bounds', (0, 10))])
def test_unidepth_configuration_errors_name_their_field(field_name, value):
    from lrda_ros.engine.unidepth import UniDepthV2Config

    with pytest.raises(ModelError) as caught:
        UniDepthV2Config(**{field_name: value})
    assert caught.value.field == field_name and 'UniDepthV2Config: ' in str(caught.value)
    for variant in ('vits', 'vitb', 'vitl'):
        UniDepthV2Config.official(variant)  # the official sizes pass


@pytest.mark.parametrize('field_name,value', [
    ('min_range', -1.0), ('max_range', 0.0), ('occlusion_window', 4), ('occlusion_margin', -1.0)])
def test_projection_configuration_errors_name_their_field(field_name, value):
    with pytest.raises(ConfigError) as caught:
        ProjectionConfig(**{field_name: value})
    assert caught.value.field == field_name


@pytest.mark.parametrize('parameter,value', [
    ('lora_rank', 0), ('processing_size', 7), ('projection.occlusion_window', 4)])
def test_node_parameter_errors_name_the_parameter(parameter, value):
    pytest.importorskip('rclpy', reason='the parameter layer is part of the ROS shell')
    from lrda_ros.settings import InvalidParameterError, NodeSettings

    with pytest.raises(InvalidParameterError) as caught:
        NodeSettings.from_values({parameter: value})
    assert caught.value.field == parameter == caught.value.name
