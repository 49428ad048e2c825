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
The paper's table: its benchmarks on their protocols, our numbers beside its (``lrda paper``).

:mod:`.run` (``run_paper``) opens each dataset under its protocol (:mod:`.options`) and runs
the methods on every frame (resumable, locally or on Ray through :mod:`.worker`);
:mod:`.report` sets the results beside the paper's published rows (:mod:`.published`).
Frames, methods and metrics are those of :mod:`lrda_ros.datasets` and :mod:`lrda_ros.eval`.
"""

from .options import PaperOptions, PROTOCOLS

__all__ = ['PaperOptions', 'PROTOCOLS']
