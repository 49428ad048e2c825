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

"""Report figures: no empty axes in frame figures, no overlapping labels in speed plots."""

from __future__ import annotations

import itertools

from lrda_ros.datasets import Frame
from lrda_ros.eval import figures
import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
import numpy as np
import pytest

matplotlib.use('Agg')


@pytest.fixture
def saved(monkeypatch):
    """Collect the figures the report functions save, instead of writing them."""
    drawn = []
    monkeypatch.setattr(Figure, 'savefig', lambda self, *a, **k: drawn.append(self))
    return drawn


def _frame(with_truth: bool) -> Frame:
    height, width = 48, 64
    rows = np.linspace(2.0, 9.0, height, dtype=np.float32)[:, None]
    truth = np.repeat(rows, width, axis=1)
    sparse = np.where((np.arange(height * width) % 17 == 0).reshape(height, width), truth, 0)
    rgb = np.zeros((height, width, 3), np.uint8)
    return Frame('f', rgb, sparse.astype(np.float32), truth if with_truth else None)


def _drawn(figure):
    """Draw a saved (and closed) figure again; return its renderer."""
    canvas = FigureCanvasAgg(figure)  # pyplot detaches a closed figure from its canvas
    canvas.draw()
    return canvas.get_renderer()


def _overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


@pytest.mark.parametrize('with_truth', [True, False])
@pytest.mark.parametrize('methods', [1, 2, 3])
def test_frame_figure_has_no_empty_axes(saved, tmp_path, with_truth, methods):
    frame = _frame(with_truth)
    predictions = {f'method{i}': frame.gt_depth if with_truth else np.full(
        frame.sparse_depth.shape, 5.0, np.float32) for i in range(methods)}
    figures.frame_figure(frame, predictions, tmp_path / 'figure.png')
    figure = saved[0]
    bars = [axis for axis in figure.axes if hasattr(axis, '_colorbar')]
    panels = [axis for axis in figure.axes if axis not in bars]
    # Every axes shows something: an image panel, or a colour bar.
    assert all(len(axis.get_images()) == 1 for axis in panels)
    inputs = 3 if with_truth else 2
    assert len(panels) == inputs + methods * (2 if with_truth else 1)
    # Colour bars in metres: depth always, error where there is ground truth.
    labels = sorted(bar.get_ylabel() for bar in bars)
    depth = 'depth (m), on a 1/depth scale'  # the colours' scale: uneven ticks, said so
    assert labels == (['absolute error (m)', depth] if with_truth else [depth])
    # Nothing drawn over anything else.
    renderer = _drawn(figure)
    boxes = [axis.get_window_extent(renderer) for axis in figure.axes]
    for a, b in itertools.combinations(boxes, 2):
        assert not _overlap(a, b)
    # Rows fill the figure's width: a method row spans what the inputs' row spans.
    top = [box for box, axis in zip(boxes, figure.axes) if axis in panels[:inputs]]
    rest = [box for box, axis in zip(boxes, figure.axes) if axis in panels[inputs:]]
    if with_truth:
        assert min(b.x0 for b in rest) == pytest.approx(min(b.x0 for b in top), abs=20)
        assert max(b.x1 for b in rest) == pytest.approx(max(b.x1 for b in top), abs=20)


def _label_boxes(figure):
    renderer = _drawn(figure)
    axis = figure.axes[0]
    boxes = {}
    for label in axis.texts:
        label.update_positions(renderer)
        boxes[label.get_text()] = Text.get_window_extent(label, renderer)
    markers = axis.transData.transform(
        [collection.get_offsets()[0] for collection in axis.collections])
    return axis, boxes, markers, renderer


@pytest.mark.parametrize('points', [
    # lrda and lrda-warm a few per cent apart, as on the demo
    {'scale-shift': (0.06, 1.046), 'lrda': (2.70, 0.238), 'lrda-warm': (2.5, 0.230),
     'prompt': (38.0, 0.31), 'classical': (0.08, 1.0)},
    # every method of lrda eval on one spot
    {name: (3.0 + 0.01 * i, 0.5 + 0.001 * i) for i, name in enumerate(
        ['scale-shift', 'lrda', 'lrda-warm', 'encoder-lora', 'full-lora', 'decoder-ft',
         'prompt', 'classical'])},
    # identical results
    {'lrda': (1.0, 0.2), 'lrda-warm': (1.0, 0.2)},
])
def test_speed_accuracy_labels_never_overlap(saved, tmp_path, points):
    summary = {name: {'frames': 3, 'seconds_per_frame': seconds, 'mae': mae}
               for name, (seconds, mae) in points.items()}
    summary['failed'] = {'frames': 0}  # a method without frames has no point and no label
    figures.speed_accuracy_plot(summary, tmp_path / 'plot.png', 'title')
    axis, boxes, markers, renderer = _label_boxes(saved[0])
    assert sorted(boxes) == sorted(points)
    for (name_a, a), (name_b, b) in itertools.combinations(boxes.items(), 2):
        assert not _overlap(a, b), (name_a, name_b)
    inside = axis.get_window_extent(renderer)
    for name, box in boxes.items():
        assert inside.x0 <= box.x0 and box.x1 <= inside.x1, name
        assert inside.y0 <= box.y0 and box.y1 <= inside.y1, name
        for x, y in markers:  # no label covers a point's centre
            assert not (box.x0 < x < box.x1 and box.y0 < y < box.y1), name
