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
How large the GPU check's measurements are, what they run, and what a cell holds unmeasured.

Shared by the parts (gpu_check_parts), their in-process figures (gpu_check_figures) and the
report, so that none of them imports another's caller.
"""

from __future__ import annotations

from dataclasses import dataclass

#: What a table cell holds where no number was measured.
NOT_MEASURED, TIMED_OUT, FAILED, OUT_OF_MEMORY = (
    'not yet measured', 'timed out', 'failed', 'out of memory')
#: The paper's fixed steps, so that every frame runs the counts its figures are of.
SCHEDULE = 'paper'
#: The paper's H200 figures, 40 iterations.
PAPER = {'gpu': 'H200', 'iterations': 40, 'vits_vga_lrda_s': 0.18, 'vits_vga_prompt_s': 0.88,
         'vitl_fhd_lrda_s': 2.34, 'vitl_fhd_lrda_gb': 10.5, 'vitl_fhd_prompt': OUT_OF_MEMORY}


@dataclass(frozen=True)
class Sizes:
    """How large the measurements are: the GPU's, or the dry run's tiny stand-ins."""

    #: The paper's steps per cold frame, as its figures were measured with.
    iterations: int = PAPER['iterations']
    warm_iterations: int = 10
    #: Rounds of warm frames per camera after the cold one (cameras part).
    rounds: int = 3
    #: Every backbone becomes its ViT-S and every resolution 56² (4x4 patches): every part's
    #: code runs, in seconds even where the CPU has no bfloat16 instructions (at 224² the
    #: parts took 4.6 minutes on a 2-core AVX2 CPU, most of it bfloat16 arithmetic).
    tiny: bool = False

    def backbone(self, name: str) -> str:
        """Return the backbone measured for ``name``."""
        if not self.tiny:
            return name
        if name.startswith('da3'):
            return 'da3-small'
        return 'unidepth-vits' if name.startswith('unidepth') else 'vits'

    def resolution(self, name: str) -> str:
        """Return the resolution measured for ``name``."""
        return '56' if self.tiny else name
