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
A densifying worker: the node's model and frame path, without ROS, one frame at a time.

:class:`FrameWorker` loads the model once and completes the frames of one chunk after another,
in order, so warm start carries from frame to frame as in the node. It reads each frame as
the node reads its messages (:class:`~lrda_ros.densify.frames.FrameReader`: the clouds moved to
the image's stamp as ``lrda eval --bag`` moves them) and runs
:class:`~lrda_ros.pipeline.CompletionPipeline` with the node's settings; frames the node would
drop (unreadable messages, too few LiDAR points under ``few_points: skip``, a non-finite
result, no transform) are dropped with the node's reason. The same class runs in the driver
process or as a Ray actor (``lrda_ros.cluster``).
"""

from __future__ import annotations

from dataclasses import dataclass
import io
import time
from typing import Any, Mapping

import numpy as np

from .frames import FrameDropped, FrameReader
from .recordings import RawFrame
from ..engine import (
    DepthCompleter, InsufficientSparseDepthError, NonFiniteDepthError, UnsupportedPrecisionError)
from ..engine.loading import load_depth_model
from ..errors import InputError
from ..eval.report import engine_metadata
from ..pipeline import CompletionPipeline, HoldoutRule
from ..settings import InvalidParameterError, NodeSettings


@dataclass
class FrameResult:
    """One completed (or dropped) frame and the warm state the next frame starts from."""

    index: int
    #: (H, W) float32 metres, NaN = no depth (the node's ``depth``); None when dropped.
    depth: np.ndarray | None
    #: The node's ``depth/confidence`` (geometry/confidence.py).
    confidence: np.ndarray | None
    #: The node's drop reason (malformed, bad_camera_info, too_few_points, ...), or ''.
    dropped: str
    #: Why it was dropped.
    message: str
    #: ``DepthCompleter.warm_state`` after this frame, serialized with torch (None: cold).
    warm_state: bytes | None
    #: Seconds the worker spent on the frame.
    seconds: float
    #: Motion alignment of its clouds: the outcome (moved, no_fixed_frame_pose, ...) or 'off'.
    motion: str = 'off'


def pack_warm_state(state: dict | None) -> bytes | None:
    """Serialize a warm state (tensors on the CPU) for a checkpoint file or another process."""
    if state is None:
        return None
    import torch

    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


def unpack_warm_state(data: bytes | None) -> dict | None:
    """Return the warm state :func:`pack_warm_state` serialized."""
    if data is None:
        return None
    import torch

    return torch.load(io.BytesIO(data), map_location='cpu', weights_only=True)


class FrameWorker:
    """Load the node's model once; complete frames in order (see the module docstring)."""

    def __init__(self, parameters: Mapping[str, Any]) -> None:
        settings = NodeSettings.from_values(parameters)
        self.settings = settings
        self.choice = load_depth_model(settings.model, settings.tto.device)
        try:
            completer = DepthCompleter(self.choice, settings.tto)
        except UnsupportedPrecisionError as error:
            raise InvalidParameterError('dtype', str(error)) from error
        self.notices = list(completer.notices)
        self.pipeline = CompletionPipeline(
            completer, settings.projection,
            HoldoutRule(settings.holdout_fraction, settings.tto.seed))
        self.reader = FrameReader(settings)
        self._last_stamp_ns: int | None = None

    def describe(self) -> dict[str, Any]:
        """Return what was loaded where, for the run's report."""
        return {'model': self.choice.source, 'device': str(self.choice.device),
                'has_confidence': bool(self.choice.has_confidence),
                'warning': self.choice.warning, 'notices': self.notices,
                'engine': engine_metadata(self.choice.source, str(self.choice.device),
                                          self.settings.tto)}

    def start(self, warm_state: bytes | None, odometry: bool = False) -> None:
        """
        Begin a chunk: cold, or from the warm state its previous frame left.

        ``odometry``: LiDAR poses for motion alignment from KISS-ICP on the chunk's clouds (the
        recording's /tf has no fixed-frame chain); the chunk's first frame has no velocity yet.
        """
        self.pipeline.completer.load_warm_state(unpack_warm_state(warm_state))
        self._last_stamp_ns = None
        self.reader.start(odometry)

    def complete(self, frame: RawFrame) -> FrameResult:
        """Complete one frame as the node would; a frame it would drop comes back dropped."""
        start = time.perf_counter()
        try:
            depth, confidence = self._complete(frame)
            dropped, message = '', ''
        except FrameDropped as drop:
            depth = confidence = None
            dropped, message = drop.reason, drop.message
        completer = self.pipeline.completer
        return FrameResult(frame.index, depth, confidence, dropped, message,
                           pack_warm_state(completer.warm_state()),
                           time.perf_counter() - start, self.reader.motion)

    def _complete(self, frame: RawFrame) -> tuple[np.ndarray, np.ndarray | None]:
        inputs = self.reader.inputs(frame)
        if self._last_stamp_ns is not None and inputs.stamp_ns < self._last_stamp_ns:
            self.pipeline.reset()  # time went back, as the node resets
        self._last_stamp_ns = inputs.stamp_ns
        try:
            outputs = self.pipeline.process(inputs)
        except InsufficientSparseDepthError as error:
            raise FrameDropped('too_few_points', str(error)) from None
        except NonFiniteDepthError as error:
            raise FrameDropped('non_finite', str(error)) from None
        except InputError as error:
            raise FrameDropped('malformed', f'{type(error).__name__}: {error}') from None
        return outputs.depth, outputs.confidence
