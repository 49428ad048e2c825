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
The completion node's parameters, free of ROS: one table for every entry point.

:data:`~.parameters.PARAMETERS` declares each parameter once (default, description, range);
:class:`~.node_settings.NodeSettings` validates values into the node's settings. The node declares
its ROS parameters from the table; ``lrda eval --bag`` and ``lrda densify`` start from the same
defaults and read the same parameters files (:mod:`.params_file`), so a recording is completed
and scored with the settings the node would use.
"""

from .node_settings import extrinsic_override, NodeSettings, OFFLINE_POINT_TOPICS
from .parameters import InvalidParameterError, PARAMETERS, SPECS
from .params_file import load_parameters

__all__ = ['extrinsic_override', 'InvalidParameterError', 'load_parameters', 'NodeSettings',
           'OFFLINE_POINT_TOPICS', 'PARAMETERS', 'SPECS']
