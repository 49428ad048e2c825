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
Accuracy on one source (``lrda eval``): methods side by side, scored against ground truth.

:mod:`.options` (what a run takes: the node's settings for a bag), :mod:`.run` (the command),
:mod:`.harness` (frames through methods, timed and scored), :mod:`.methods` (the one registry of
methods and baselines, :mod:`.classical`), :mod:`.metrics`, :mod:`.temporal` and
:mod:`.uncertainty` (the scores), :mod:`.report` and :mod:`.figures` (the files), :mod:`.live`
(the live evaluator's records, scored as they arrive) and :mod:`.budget` (the anytime curve).
Frames come from :mod:`lrda_ros.datasets`; the paper's table (:mod:`lrda_ros.paper`) and speed
measurement (:mod:`lrda_ros.speed`) build on this room.
"""
