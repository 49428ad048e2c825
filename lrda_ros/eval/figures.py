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
Evaluation figures (PNG), drawn with matplotlib's Agg backend.

Per frame, RGB | sparse input | ground truth on top and one row per method with its prediction
and absolute error (depth and error each on one colour scale shared by all panels, with a
colour bar in metres); a speed/accuracy plot, time per frame against MAE with one point per
method, labels placed clear of the points and of each other; and the sparsification curves of
the confidence.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .harness import EvalResult
from ..colormap import colorize_depth, depth_display_range
from ..datasets import Frame

#: The depth bar's label: colours, like colorize_depth's, are spaced by inverse depth (near
#: depths get most of them), so its ticks are uneven.
DEPTH_BAR_LABEL = 'depth (m), on a 1/depth scale'


def sparsification_plot(result: EvalResult, path: Path, title: str) -> None:
    """
    Plot each method's mean sparsification curves.

    Its confidence (solid) and the LiDAR distance alone (dashed): the MAE of the pixels left,
    relative to all, against the fraction removed.
    """
    from .uncertainty import FRACTIONS
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6.5, 4.5), dpi=110)
    drawn = False
    for method in result.methods:
        curves = [r.curves for r in result.records if r.method == method and r.curves]
        if not curves:
            continue
        confidence = np.mean([c[0] for c in curves], axis=0)
        distance = np.mean([c[1] for c in curves], axis=0)
        line, = axis.plot(FRACTIONS, confidence, label=f'{method}: depth/confidence')
        axis.plot(FRACTIONS, distance, '--', color=line.get_color(),
                  label=f'{method}: LiDAR distance alone')
        drawn = True
    if not drawn:
        plt.close(figure)
        return
    axis.set_xlabel('fraction of ground-truth pixels removed (least confident first)')
    axis.set_ylabel('MAE of the rest / MAE of all')
    axis.set_title(f'{title}: sparsification', fontsize=10)
    axis.grid(True, alpha=0.3)
    axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


#: Width in pixels of one panel of a frame figure (4 inches at the figure's 90 dpi).
PANEL_PIXELS = 360


def frame_figure(frame: Frame, predictions: dict[str, np.ndarray], path: Path) -> None:
    """
    Save RGB | sparse | ground truth, then prediction | error per method.

    Every row is filled by its own panels (the inputs' row holds three, a method's row two), so
    no axes stand empty; without ground truth the methods' depth panels go two to a row. Depth
    panels share one colour scale and error panels another, each with a colour bar in metres.
    Sparse input, ground truth and errors (defined where the ground truth is) are drawn as
    squares grown from their pixels, sized so that they stay visible whatever the image width:
    each covers about the same area of the panel at 320 or 2048 pixels wide.
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    gt = frame.gt_depth
    has_gt = gt is not None and bool(np.any(gt > 0))
    near, far = depth_display_range(gt if has_gt else frame.sparse_depth)
    radius = marker_radius(frame.width)
    errors = {m: np.where(gt > 0, np.abs(p - gt), np.nan) for m, p in predictions.items()} \
        if has_gt else {}
    finite = [e[np.isfinite(e)] for e in errors.values() if np.isfinite(e).any()]
    error_max = max(float(np.percentile(np.concatenate(finite), 95)), 1e-3) if finite else 1.0
    error_cmap = matplotlib.colormaps['magma'].with_extremes(bad='0.25')
    gt_spread = spread_index(gt, radius) if has_gt else None

    # Panels as (kind, image, title), kind 'rgb', 'depth' or 'error', in rows.
    inputs = [('rgb', frame.rgb, 'RGB'),
              ('depth', gather(frame.sparse_depth, spread_index(frame.sparse_depth, radius)),
               f'sparse input ({np.count_nonzero(frame.sparse_depth > 0)} px)')]
    if has_gt:
        inputs.append(('depth', gather(gt, gt_spread),
                       f'ground truth ({np.count_nonzero(gt > 0)} px)'))
    results = []
    for method, prediction in predictions.items():
        results.append(('depth', prediction, f'{method}: depth'))
        if method in errors:
            mae = np.nanmean(errors[method])
            results.append(('error', gather(errors[method], gt_spread, np.nan),
                            f'{method}: |error| at ground truth (MAE {mae:.3f} m)'))
    per_row = 2
    rows = [inputs] + [results[i:i + per_row] for i in range(0, len(results), per_row)]
    figure, axes = _panel_grid(rows, frame.height / frame.width, width=11.0)

    error_axes = []
    for axis, (kind, image, title) in zip(axes, [panel for row in rows for panel in row]):
        if kind == 'error':
            error_image = axis.imshow(image, cmap=error_cmap, vmin=0, vmax=error_max,
                                      interpolation='nearest')
            error_axes.append(axis)
        else:
            axis.imshow(image if kind == 'rgb' else colorize_depth(image, near, far),
                        interpolation='nearest')
        axis.set_title(title, fontsize=9)
        axis.axis('off')
    # Depth bar on the left, by the methods' depth column; error bar on the right, by theirs
    # (two bars on one side of overlapping axes groups would be drawn over each other).
    depth_bar = figure.colorbar(_depth_mappable(near, far), ax=axes, location='left',
                                fraction=0.04, aspect=20 * len(rows), pad=0.01)
    depth_bar.set_label(DEPTH_BAR_LABEL)
    ticks = _depth_ticks(near, far)
    depth_bar.set_ticks(ticks, labels=[f'{t:g}' for t in ticks])
    if error_axes:
        error_bar = figure.colorbar(error_image, ax=error_axes, fraction=0.04,
                                    aspect=20 * len(error_axes), pad=0.01, extend='max')
        error_bar.set_label('absolute error (m)')
    figure.suptitle(f'{frame.name}   ({frame.width}x{frame.height}; points drawn '
                    f'{2 * radius + 1}x{2 * radius + 1} px)', fontsize=10)
    figure.savefig(path, dpi=90)
    plt.close(figure)


def _panel_grid(rows: list[list], aspect: float, width: float):
    """
    Return a figure and one axes per panel, each row's panels filling the figure's width.

    Row heights follow their panels' (height / width ``aspect``), so a row of two panels is
    taller than one of three; a row shorter than the others is centred.
    """
    import matplotlib.pyplot as plt

    # Twice the least common multiple of the row lengths: every row divides it evenly, and a
    # lone panel (half the width, as in a row of two) can be centred.
    columns = 2 * int(np.lcm.reduce([len(row) for row in rows]))
    heights = [aspect / max(len(row), 2) for row in rows]
    panels_width = width - 1.6  # less the colour bars
    figure = plt.figure(figsize=(width, panels_width * sum(heights) + 0.3 * len(rows) + 0.4),
                        layout='constrained')
    grid = figure.add_gridspec(len(rows), columns, height_ratios=heights)
    axes = []
    for index, row in enumerate(rows):
        span = columns // max(len(row), 2)
        start = (columns - span * len(row)) // 2
        axes += [figure.add_subplot(grid[index, start + k * span:start + (k + 1) * span])
                 for k in range(len(row))]
    return figure, axes


def marker_radius(width: int, panel_pixels: int = PANEL_PIXELS) -> int:
    """Return the half-size in image pixels that makes a point ~2 panel pixels wide."""
    return max(1, int(round(width / panel_pixels)))


def spread_index(depth: np.ndarray, radius: int) -> np.ndarray:
    """
    Return, per pixel, the flat index of the nearest-depth measured pixel within ``radius``.

    A (2 radius + 1)^2 square around each measured pixel (> 0, finite) takes its index, the
    nearest depth winning where squares overlap (as a nearer surface hides a farther one);
    -1 where no measurement is within reach. Images do not wrap at their borders.
    """
    valid = np.isfinite(depth) & (depth > 0)
    priority = np.where(valid, depth, np.inf)
    index = np.where(valid, np.arange(depth.size).reshape(depth.shape), -1)
    for axis in (0, 1):  # a square's minimum is the minimum of the row-wise minima
        best_priority, best_index = priority.copy(), index.copy()
        for offset in [o for step in range(1, radius + 1) for o in (step, -step)]:
            candidate = _shift(priority, offset, axis, np.inf)
            better = candidate < best_priority
            best_priority[better] = candidate[better]
            best_index[better] = _shift(index, offset, axis, -1)[better]
        priority, index = best_priority, best_index
    return index


def gather(values: np.ndarray, index: np.ndarray, empty: float = 0.0) -> np.ndarray:
    """Return ``values`` at ``spread_index``'s indices (``empty`` where it is -1)."""
    return np.where(index >= 0, values.ravel()[np.maximum(index, 0)], empty).astype(np.float32)


def _shift(array: np.ndarray, offset: int, axis: int, fill: float) -> np.ndarray:
    """Return ``array`` moved by ``offset`` along ``axis``, ``fill`` where nothing moved in."""
    out = np.full_like(array, fill)
    length = array.shape[axis]
    if abs(offset) >= length:
        return out
    source = [slice(None)] * 2
    target = [slice(None)] * 2
    source[axis] = slice(max(0, -offset), length - max(0, offset))
    target[axis] = slice(max(0, offset), length - max(0, -offset))
    out[tuple(target)] = array[tuple(source)]
    return out


def _depth_mappable(near: float, far: float):
    """Return a colour-bar source that maps metres exactly as :func:`colorize_depth` does."""
    import matplotlib
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import FuncNorm

    # colorize_depth: turbo((1/d - 1/far) / (1/near - 1/far)); FuncNorm of 1/d runs from 0 at
    # near to 1 at far, so the reversed palette gives the same colour for every depth.
    def inverse(values):
        return 1.0 / np.maximum(np.asarray(values, dtype=np.float64), 1e-9)

    norm = FuncNorm((inverse, inverse), vmin=near, vmax=far)
    return ScalarMappable(norm=norm, cmap=matplotlib.colormaps['turbo_r'])


def _depth_ticks(near: float, far: float, min_gap: float = 0.07) -> list[float]:
    """Return near, far and round depths between, at least ``min_gap`` of the bar apart."""
    def position(depth: float) -> float:  # along the bar, as colorize_depth's inverse depth
        return (1.0 / near - 1.0 / depth) / (1.0 / near - 1.0 / far)

    candidates = sorted(m * 10.0 ** e for e in range(-2, 4) for m in (1, 2, 3, 5))
    ticks = [near]
    for tick in candidates:
        if near < tick < far and position(tick) - position(ticks[-1]) >= min_gap \
                and 1.0 - position(tick) >= min_gap:
            ticks.append(tick)
    return [float(f'{t:.3g}') for t in ticks + [far]]


def speed_accuracy_plot(summary: dict[str, dict], path: Path, title: str) -> None:
    """
    Plot time per frame (log) against MAE, one labelled point per method.

    Labels take their point's colour and are placed where they overlap neither each other nor
    a point, nearer their own point than any other (see :func:`place_labels`).
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6.5, 4.5), dpi=110)
    points, colours = [], []
    for method, entry in summary.items():
        if not entry.get('frames'):
            continue
        seconds = max(entry['seconds_per_frame'], 1e-4)
        marker = axis.scatter(seconds, entry['mae'], s=40)
        points.append((method, seconds, entry['mae']))
        colours.append(marker.get_facecolor()[0])
    axis.set_xscale('log')
    axis.margins(x=0.2, y=0.15)  # room for the labels inside the axes
    axis.set_xlabel('time per frame (s, log scale)')
    axis.set_ylabel('MAE (m)')
    axis.set_title(title, fontsize=10)
    axis.grid(True, which='both', alpha=0.3)
    figure.tight_layout()
    place_labels(axis, points, marker_points=40 ** 0.5, colours=colours)
    figure.savefig(path, dpi=110)
    plt.close(figure)


#: Where a label may go around its point: unit directions, tried in this order.
_LABEL_DIRECTIONS = ((1, 1), (1, -1), (-1, 1), (-1, -1), (1, 0), (-1, 0), (0, 1), (0, -1))
#: Distances (points) from a point to its label, nearest first.
_LABEL_DISTANCES = (4, 10, 18, 28, 40, 55, 75)


def place_labels(axis, points: list[tuple[str, float, float]], marker_points: float = 6.0,
                 fontsize: float = 9, colours: list | None = None) -> list:
    """
    Label each ``(text, x, y)`` point without overlaps; return the annotations.

    The most crowded points are labelled first. Each label takes the first free position,
    trying nearer rings before farther ones and the diagonals first. Free: its box (as the
    renderer draws it) lies inside the axes and overlaps no label placed before it, no
    leader line and no point's marker (``marker_points`` wide, in points); near its point it
    must be clearly nearer that point than any other, and farther out it gets a thin leader
    line that crosses no label or point. Where no position is free, the one with the least
    overlap is taken.
    """
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

    figure = axis.figure
    figure.canvas.draw()  # settles the limits and the layout the boxes are measured in
    renderer = figure.canvas.get_renderer()
    scale = figure.dpi / 72.0
    inside = axis.get_window_extent(renderer)
    half = marker_points * scale / 2
    centres = axis.transData.transform([(x, y) for _, x, y in points]) if points else []
    taken = [Bbox.from_extents(px - half, py - half, px + half, py + half) for px, py in centres]
    # The most crowded points first: they have the fewest free places.
    crowding = [min((np.hypot(*(centre - other)) for number, other in enumerate(centres)
                     if number != index), default=np.inf)
                for index, centre in enumerate(centres)]
    leaders, annotations = [], {}
    for index in sorted(range(len(points)), key=lambda number: crowding[number]):
        text, x, y = points[index]
        style = {'fontsize': fontsize, 'textcoords': 'offset points'}
        if colours is not None:
            style['color'] = colours[index]
        best = None
        for ring, distance in enumerate(_LABEL_DISTANCES):
            for dx, dy in _LABEL_DIRECTIONS:
                offset = (dx * distance, dy * distance)
                alignment = {'ha': ('right', 'center', 'left')[dx + 1],
                             'va': ('top', 'center', 'bottom')[dy + 1]}
                label = axis.annotate(text, (x, y), xytext=offset, **style, **alignment)
                label.update_positions(renderer)
                box = Text.get_window_extent(label, renderer).padded(scale)
                label.remove()
                # Without a leader line, another point must be clearly farther from it.
                own = _distance(box, centres[index])
                ambiguous = ring <= 1 and any(
                    _distance(box, centre) < 1.5 * own + 2 * scale
                    for other, centre in enumerate(centres) if other != index)
                overlap = sum(_area(box, other) for other in taken) + (
                    box.width * box.height - _area(box, inside))
                crossing = any(_crosses(box, *leader) for leader in leaders)
                if ring > 1:  # its leader line must cross no label and no other point
                    leader = (centres[index], _nearest(box, centres[index]))
                    crossing |= any(_crosses(other, *leader) for number, other
                                    in enumerate(taken) if number != index)
                score = (overlap > 0 or crossing, ambiguous, overlap)
                if best is None or score < best[0]:
                    best = (score, ring, offset, alignment, box)
            if best[0] == (False, False, 0):
                break
        _, ring, offset, alignment, box = best
        arrow = None
        if ring > 1:
            arrow = {'arrowstyle': '-', 'color': '0.5', 'lw': 0.6, 'shrinkA': 0,
                     'shrinkB': half / scale + 1}
            leaders.append((centres[index], _nearest(box, centres[index])))
        annotations[index] = axis.annotate(text, (x, y), xytext=offset, arrowprops=arrow,
                                           **style, **alignment)
        taken.append(box)
    return [annotations[index] for index in range(len(points))]


def _nearest(box, point) -> tuple[float, float]:
    """Return the point of a display box nearest a display point."""
    return (min(max(point[0], box.x0), box.x1), min(max(point[1], box.y0), box.y1))


def _distance(box, point) -> float:
    """Return the distance from a display point to a display box (0 inside it)."""
    nearest = _nearest(box, point)
    return float(np.hypot(point[0] - nearest[0], point[1] - nearest[1]))


def _crosses(box, start, end, samples: int = 32) -> bool:
    """Return whether the segment from ``start`` to ``end`` passes through a display box."""
    steps = np.linspace(0.0, 1.0, samples)[1:-1, None]
    along = np.asarray(start) + steps * (np.asarray(end) - np.asarray(start))
    return bool(np.any((along[:, 0] > box.x0) & (along[:, 0] < box.x1)
                       & (along[:, 1] > box.y0) & (along[:, 1] < box.y1)))


def _area(box, other) -> float:
    """Return the area two display boxes share."""
    width = min(box.x1, other.x1) - max(box.x0, other.x0)
    height = min(box.y1, other.y1) - max(box.y0, other.y0)
    return max(width, 0.0) * max(height, 0.0)
