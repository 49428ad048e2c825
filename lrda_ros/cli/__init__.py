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
The ``lrda`` command line: one module per command or family, shared options in one place.

``commands`` builds the parser and runs a command; ``options`` holds the option types and
parsing every command shares (checked values, node parameters, topics, extrinsic, one-line
errors); ``demo`` (demo, train-prior), ``evaluate`` (eval), ``speed``, ``paper``,
``densify``, ``replay`` (play, hold-rate) and ``calibrate`` each add their options and run.
``python -m lrda_ros.cli`` is the ``lrda`` command.
"""

from .commands import command_line, main, RUNNERS
from .evaluate import eval_options
from .options import RENAMED

__all__ = ['command_line', 'eval_options', 'main', 'RENAMED', 'RUNNERS']
