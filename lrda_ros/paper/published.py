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
The source paper's accuracy table (MAE / RMSE in metres) and which of its rows a run compares to.

Numbers as the paper reports them: its main table (UniDepthV2-L) and supplementary table
(DAv2-L backbone, with the scale/shift baseline, Marigold-DC and TestPromptDC rows); DAv2-S on
NYUv2 and KITTI DC from its backbone ablation. A missing cell is a dataset the paper does not
report for that row.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

#: Datasets of the table, in the paper's column order.
PAPER_DATASETS = ('ibims', 'void', 'nyuv2', 'kitti_dc', 'ddad')
#: Backbones the paper reports.
PAPER_BACKBONES = ('DAv2-L', 'DAv2-S', 'UniDepthV2-L')


@dataclass(frozen=True)
class PaperRow:
    """One row of the paper's table: ``{dataset: (MAE, RMSE)}``."""

    label: str
    values: MappingProxyType

    def get(self, dataset: str) -> tuple[float, float] | None:
        """Return (MAE, RMSE) on ``dataset``, or None when the paper reports none."""
        return self.values.get(dataset)


def _row(label: str, *cells: tuple[float, float] | None) -> PaperRow:
    values = {d: cell for d, cell in zip(PAPER_DATASETS, cells) if cell is not None}
    return PaperRow(label, MappingProxyType(values))


#: Rows by (backbone, method name of eval/methods.py).
PAPER_ROWS = MappingProxyType({
    ('DAv2-L', 'scale-shift'): _row('DAv2-L + scale/shift', (0.129, 0.224), (0.159, 0.357),
                                    (0.205, 0.310), (1.701, 3.293), (2.966, 5.504)),
    ('DAv2-L', 'prompt'): _row('DAv2-L + TestPromptDC', (0.063, 0.194), (0.098, 0.299),
                               (0.094, 0.193), (0.504, 1.580), None),
    ('DAv2-L', 'lrda'): _row('DAv2-L + ours (paper)', (0.046, 0.137), (0.095, 0.325),
                             (0.058, 0.124), (0.433, 1.389), (1.751, 4.388)),
    ('UniDepthV2-L', 'lrda'): _row('UniDepthV2-L + ours (paper)', (0.041, 0.138),
                                   (0.086, 0.271), (0.109, 0.182), (0.515, 1.476),
                                   (2.012, 4.160)),
    ('DAv2-S', 'lrda'): _row('DAv2-S + ours (paper)', None, None, (0.067, 0.133),
                             (0.558, 1.484), None),
})
#: Rows shown for reference in every report (no method of ours runs them).
REFERENCE_ROWS = (
    _row('Marigold-DC', (0.061, 0.189), (0.106, 0.322), (0.093, 0.216), (0.568, 1.663),
         (1.795, 4.141)),
)
#: Our methods that the paper's rows stand for (warm start is the paper's future work: its
#: cold-start row is the reference).
PAPER_METHOD = MappingProxyType({'scale-shift': 'scale-shift', 'lrda': 'lrda',
                                 'lrda-warm': 'lrda', 'prompt': 'prompt'})


def backbone_of(model_source: str) -> str | None:
    """Return the paper backbone a model source names (hub id, path), or None."""
    text = model_source.lower()
    if 'da3' in text or 'depth-anything-3' in text or 'depth_anything_3' in text:
        return None  # Depth Anything 3 came after the paper: no row of it stands for DA3
    if 'unidepth' in text:
        return 'UniDepthV2-L' if 'large' in text or 'vitl' in text else None
    if 'depth-anything' in text or 'depth_anything' in text or 'dav2' in text:
        if 'small' in text or 'vits' in text:
            return 'DAv2-S'
        if 'large' in text or 'vitl' in text:
            return 'DAv2-L'
    return None


def paper_row(backbone: str, method: str) -> PaperRow | None:
    """Return the paper's row for ``method`` on ``backbone``, or None when it has none."""
    return PAPER_ROWS.get((backbone, PAPER_METHOD.get(method, '')))
