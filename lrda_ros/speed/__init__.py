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
Speed measurement: the time and memory of test-time optimization (``lrda speed``).

:mod:`.run` measures methods side by side (what it measures: :mod:`.options`, which loads
without torch), each configuration in a fresh process, on official-size networks with random
weights and synthetic frames (:mod:`.inputs`), with the cost structure (:mod:`.structure`) and
a report (:mod:`.report`) that opens with the machine (:mod:`.machine`). :mod:`.host_sync`
counts what makes the host wait for the device. Accuracy is measured in :mod:`lrda_ros.eval`.
"""

from .options import SpeedOptions

__all__ = ['SpeedOptions']
