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
The methods of ``lrda paper`` on frames: the model loaded once, the same code local or on Ray.

:class:`PaperWorker` is what :mod:`lrda_ros.cluster` runs: in the driver's process, or as a
Ray actor with ``--ray``. The driver reads the frames (:mod:`lrda_ros.paper.run`), starts
a worker on a unit of frames (a dataset's settings) and sends it the frames in order; the worker
returns each frame's per-method records, which the driver stores.
"""

from __future__ import annotations

import math
from typing import Any

from ..datasets import Frame
from ..engine import TTOConfig
from ..engine.names import is_demo_prior_source
from ..errors import InputError
from ..eval.methods import build_methods, Method, METHODS
from ..eval.metrics import compute_metrics
from ..eval.profiling import Measure

#: What a method raises on a frame it cannot complete (bad input, out of memory).
METHOD_ERRORS = (InputError, RuntimeError, ValueError)


def clean(value):
    """Return ``value`` with non-finite floats as None (valid JSON)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    return value


class PaperWorker:
    """Load the model once; run the methods on the frames of one unit after another."""

    def __init__(self, model: str, device: str, methods: tuple[str, ...]) -> None:
        self.model = None
        if any(METHODS[m].scope is not None for m in methods):
            # torch loads here, for a model: the command refuses bad options without it.
            from ..engine.loading import load_depth_model

            self.model = load_depth_model(model, device)
        self.device = str(self.model.device) if self.model is not None else 'cpu'
        self._key: tuple | None = None
        self._methods: dict[str, Method] = {}
        self._last: dict[str, tuple] = {}

    def describe(self) -> dict[str, Any]:
        """Return what was loaded where, for the report."""
        model = self.model
        return {'source': model.source if model else None, 'device': self.device,
                'demo_prior': is_demo_prior_source(model.source if model else None),
                'warning': model.warning if model else ''}

    def start(self, methods: tuple[str, ...], config: TTOConfig) -> None:
        """
        Begin a unit of frames with a dataset's settings; every method starts cold.

        Methods are built again only when the settings change: a cold start depends on nothing
        a previous frame left, so reset methods give what new ones would.
        """
        if self._key != (methods, config):
            self._methods = build_methods(methods, self.model, config)
            self._key = (methods, config)
        for method in self._methods.values():
            method.reset()
        # The (sequence, index) each method completed last in this unit: a warm start needs
        # the previous frame of the same sequence, computed just before by the same method.
        self._last = {}

    def complete(self, index: int, frame: Frame, todo: list[str]) -> list[dict]:
        """Run the methods ``todo`` on frame ``index``; return a record per method."""
        records = []
        for name in todo:
            method = self._methods[name]
            if frame.sequence is None or self._last.get(name) != (frame.sequence, index - 1):
                method.reset()
            self._last[name] = (frame.sequence, index)
            record = {'kind': 'method', 'index': index, 'frame': frame.name, 'method': name}
            try:
                with Measure(self.device) as measured:
                    output = method.complete(frame.rgb, frame.sparse_depth, frame.K)
                metrics = compute_metrics(output.depth, frame.gt_depth)
            except METHOD_ERRORS as error:
                method.reset()
                record.update(status='failed', error=f'{type(error).__name__}: {error}')
            else:
                record.update(status=output.status,
                              seconds=measured.seconds + output.reused_seconds,
                              peak_mb=measured.peak_mb, iterations=output.iterations,
                              metrics=metrics.to_dict())
            records.append(clean(record))
        return records
