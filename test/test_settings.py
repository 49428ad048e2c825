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
One set of defaults: the node, ``lrda eval --bag`` and ``lrda densify`` read one table.

The node declares its parameters from :data:`lrda_ros.settings.PARAMETERS` and validates them
into its settings; a bag evaluated or densified without options gets those settings, and an
option or a node parameter changes them as it would change the node's.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from lrda_ros.cli import command_line, eval_options
from lrda_ros.densify import DensifyOptions
from lrda_ros.densify.options import check_options as densify_settings
from lrda_ros.eval import run as eval_run
from lrda_ros.eval.options import PROTOCOL_PARAMETERS, source_settings
from lrda_ros.settings import load_parameters, NodeSettings, PARAMETERS
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def node_settings(ros_context) -> NodeSettings:
    """Return the settings the completion node starts with: declared and read as it does."""
    import rclpy
    from lrda_ros.ros.declaration import declare_parameters, parameter_values

    node = rclpy.create_node('defaults', context=ros_context)
    try:
        declare_parameters(node, PARAMETERS)
        return NodeSettings.from_values(parameter_values(node, PARAMETERS))
    finally:
        node.destroy_node()


def _eval(*arguments: str):
    return eval_options(command_line().parse_args(['eval', *arguments]))


def test_lrda_eval_on_a_bag_uses_the_node_defaults(node_settings, tmp_path):
    options = _eval('--bag', str(tmp_path / 'bag'))
    settings = source_settings(options)
    assert settings == node_settings
    # The engine, the model and the frame path of the evaluated methods are the node's.
    assert options.engine_config(settings) == node_settings.tto
    assert options.model_spec(settings) == node_settings.model
    for name, differs in (('dtype', 'float32'), ('max_depth', 250.0), ('min_points', 8)):
        assert getattr(node_settings.tto, name) != differs  # what datasets depart from


def test_the_bag_is_read_with_the_node_projection_and_synchronizer(node_settings, tmp_path,
                                                                   monkeypatch):
    opened = {}
    monkeypatch.setattr(eval_run, 'open_dataset', lambda kind, root, **kw: opened.update(kw))
    eval_run.open_source(_eval('--bag', str(tmp_path / 'bag')))
    assert opened['projection'] == node_settings.projection
    assert (opened['slop_s'], opened['queue_size']) == (node_settings.sync_slop,
                                                        node_settings.sync_queue_size)
    assert opened['rectified'] == node_settings.image_is_rectified
    assert opened['extrinsic'] is node_settings.extrinsic is None


def test_lrda_densify_uses_the_node_defaults(node_settings, tmp_path):
    (tmp_path / 'bag').mkdir()
    assert densify_settings(DensifyOptions(bags=(tmp_path / 'bag',),
                                           output=tmp_path / 'out')) == node_settings


def test_a_params_file_and_options_change_a_bag_evaluation_as_they_change_the_node(tmp_path):
    params = ROOT / 'config' / 'completion.yaml'
    options = _eval('--bag', str(tmp_path / 'bag'), '--params-file', str(params),
                    '-p', 'max_depth:=80', '-p', 'iterations:=5', '--iterations', '7')
    settings = source_settings(options)
    node = NodeSettings.from_values({**load_parameters(params, []), 'max_depth': 80.0,
                                     'iterations': 5})
    assert settings == node
    # An option wins over the parameters, as the help says.
    assert options.engine_config(settings) == replace(node.tto, iterations=7)


def test_datasets_depart_from_the_node_only_where_their_protocols_say(node_settings):
    options = _eval('--dataset', 'folder', '--root', 'frames')
    config = options.engine_config(source_settings(options))
    assert config == replace(node_settings.tto, **PROTOCOL_PARAMETERS)


def test_the_papers_table_runs_the_papers_schedule_unless_told_otherwise(node_settings):
    from lrda_ros.paper.run import _base_config, PaperOptions

    paper = _base_config(PaperOptions(roots={}))
    assert paper == replace(node_settings.tto, schedule='paper', **PROTOCOL_PARAMETERS)
    assert node_settings.tto.schedule == 'adaptive'  # what the node and lrda eval run
    assert _base_config(PaperOptions(roots={}, schedule='adaptive')).schedule == 'adaptive'
