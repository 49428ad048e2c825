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
One frame through the system, without ROS: project the LiDAR, hold out, complete, mask.

This is the only code that turns an image, a camera, a LiDAR cloud and the transform between
them into published depth. The node, the lifecycle node, ``lrda eval`` on bags and the demo
run every frame through :class:`CompletionPipeline`, so a replayed bag is evaluated exactly as
the node processes it: the same sparse map, the same checks, the same hold-out rule, the same
minimum-points rule (the engine's count), the same far-limit mask and, where it is on, the
same temporal fusion with the previous frame (geometry/temporal_fusion.py).
"""

from __future__ import annotations

from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from typing import Callable, Hashable, Sequence, TYPE_CHECKING

import numpy as np

from .errors import InputError
from .geometry import (
    CameraModel, clouds_to_sparse_depth, LidarCloud, ProjectionConfig, RigidTransform,
    SparseProjection)
from .geometry.confidence import depth_confidence, support_confidence
from .geometry.second_thread import new_second_thread
from .geometry.temporal_fusion import TemporalFusion, TemporalFusionConfig

if TYPE_CHECKING:  # the engine is handed in: torch loads with it, not with the hold-out rules
    from .engine import CompletionResult, DepthCompleter, EncodedFrame, TTOConfig


class FrameMismatchError(InputError):
    """Image and camera calibration disagree."""


def holdout_split(sparse_depth: np.ndarray, fraction: float,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """
    Split sparse depth into (input, held out): disjoint pixel sets, 0 where absent.

    ``fraction`` of the valid pixels, drawn without replacement, go to the held-out map.
    """
    if not 0 < fraction < 1:
        raise ValueError(f'hold-out fraction must be in (0, 1), got {fraction}')
    valid = np.flatnonzero(sparse_depth > 0)
    held = rng.choice(valid, size=int(round(fraction * valid.size)), replace=False)
    kept = sparse_depth.copy()
    kept.flat[held] = 0.0
    heldout = np.zeros_like(sparse_depth)
    heldout.flat[held] = sparse_depth.flat[held]
    return kept, heldout


def holdout_rng(seed: int, stamp_ns: int) -> np.random.Generator:
    """Return the hold-out generator of a frame: the same pixels for the same stamp and seed."""
    return np.random.default_rng([int(seed), int(stamp_ns)])


def check_camera_matches_image(camera: CameraModel, width: int, height: int) -> None:
    """Raise FrameMismatchError, naming camera_info, when its size is not the image's."""
    if (camera.width, camera.height) != (width, height):
        raise FrameMismatchError(f'camera_info is {camera.width}x{camera.height} but the image '
                                 f'is {width}x{height}', field='camera_info')


def mark_far(depth: np.ndarray, max_depth: float, far_depth: str,
             sky: np.ndarray | None = None) -> np.ndarray:
    """
    Return the published depth: the engine's, with ``far_depth`` where it lies beyond reach.

    Beyond reach: where the engine clamped the depth at ``max_depth`` (the aligned depth lies
    farther, or a relative model's aligned disparity at or below 1 / max_depth: its sky), and
    the model's sky (``sky``). ``far_depth`` 'too_far' marks them +Inf, REP 118's "too far"
    (rviz2 and points_dense show nothing there), 'no_depth' NaN, 'clamp' leaves max_depth.
    """
    if far_depth == 'clamp':
        return depth if sky is None else np.where(sky, np.float32(max_depth), depth)
    beyond = ~(depth < max_depth * (1.0 - 1e-4))
    if sky is not None:
        beyond |= sky
    marked = depth.copy()
    marked[beyond] = np.inf if far_depth == 'too_far' else np.nan
    return marked


def mark_near(depth: np.ndarray, min_depth: float) -> np.ndarray:
    """
    Return ``depth`` with -Inf, REP 118's "too close", where the engine clamped it at min_depth.

    The engine clamps the aligned depth at ``min_depth``; what lies there was predicted nearer.
    NaN and +Inf pass unchanged.
    """
    near = depth <= min_depth * (1.0 + 1e-4)
    if not near.any():
        return depth
    marked = depth.copy()
    marked[near] = -np.inf
    return marked


@dataclass(frozen=True)
class HoldoutRule:
    """
    LiDAR pixels withheld from the input as ground truth (live and bag evaluation).

    ``fraction`` 0 withholds nothing. Frame pixels are drawn with :func:`holdout_rng`
    (``seed`` and the frame's stamp), so the node and ``lrda eval`` withhold the same ones.
    """

    fraction: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        """Reject a fraction outside [0, 1)."""
        if not 0 <= self.fraction < 1:
            raise ValueError(f'hold-out fraction must be in [0, 1), got {self.fraction}')


@dataclass
class FrameInputs:
    """
    One synchronized camera + LiDAR frame, as arrays.

    ``points_lidar`` and ``T_cam_lidar`` are the first (or only) LiDAR's; ``more_clouds``
    the other LiDARs of a camera with several point topics, merged with it before projection
    (:func:`~lrda_ros.geometry.clouds_to_sparse_depth`).
    """

    rgb: np.ndarray
    camera: CameraModel
    points_lidar: np.ndarray
    T_cam_lidar: RigidTransform
    #: The camera image's header stamp (seeds the hold-out).
    stamp_ns: int = 0
    #: The camera's pose in a fixed frame (4x4 ``T_world_cam``) at the stamp, None: unknown.
    #: Only temporal fusion uses it.
    T_world_cam: np.ndarray | None = field(default=None, repr=False)
    more_clouds: tuple[LidarCloud, ...] = field(default=(), repr=False)

    @classmethod
    def from_clouds(cls, rgb: np.ndarray, camera: CameraModel, clouds: Sequence[LidarCloud],
                    stamp_ns: int = 0, T_world_cam: np.ndarray | None = None) -> 'FrameInputs':
        """Return the frame of one or several LiDARs' clouds (at least one)."""
        first, *more = clouds
        return cls(rgb, camera, first.points, first.T_cam_lidar, stamp_ns, T_world_cam,
                   tuple(more))

    @property
    def clouds(self) -> tuple[LidarCloud, ...]:
        """Return every LiDAR's cloud, the first one first."""
        return (LidarCloud(self.points_lidar, self.T_cam_lidar), *self.more_clouds)


@dataclass
class PreparedFrame:
    """A frame with its LiDAR projected and split: what the engine is given."""

    inputs: FrameInputs
    projection: SparseProjection
    #: (H, W) float32 metres the engine sees, 0 where no point landed (or held out).
    sparse_depth: np.ndarray
    #: (H, W) float32 metres withheld for evaluation (0 elsewhere), or None without hold-out.
    heldout_depth: np.ndarray | None
    #: The confidence's support factor of ``sparse_depth``, computing beside the engine
    #: (:meth:`CompletionPipeline.start_support`), or None: computed with the confidence.
    support: Future | None = field(default=None, repr=False, compare=False)


@dataclass
class FrameOutputs:
    """Everything published for one frame."""

    #: (H, W) float32 metres; beyond the engine's far limit and on the sky far_depth (+Inf,
    #: REP 118's too far, by default), NaN where there is no depth.
    depth: np.ndarray
    prepared: PreparedFrame
    completion: CompletionResult
    #: Share of the depth's valid pixels averaged with the previous frame (temporal fusion).
    fused_fraction: float = 0.0
    #: The pipeline's second thread, for the confidence (geometry/second_thread.py).
    beside: Executor | None = field(default=None, repr=False, compare=False)

    @property
    def sparse_depth(self) -> np.ndarray:
        """Return the LiDAR input the engine saw."""
        return self.prepared.sparse_depth

    @property
    def confidence(self) -> np.ndarray:
        """
        Return the (H, W) float32 confidence of the depth: [0, 1], 1 = trusted, NaN where it is.

        From the LiDAR input's support and fit and the depth's edges, for every model; a
        model's own confidence output (UniDepthV2) reorders it (geometry/confidence.py).
        """
        return self.confidence_on(self.beside)

    def confidence_on(self, beside: Executor | None) -> np.ndarray:
        """
        Return :attr:`confidence`, its whole-image steps split with ``beside``.

        ``beside``: an executor for the second half of the work (``SameThread()``: all on
        this thread, when the second thread is busy with other outputs), None: one of its own.
        """
        support = self.prepared.support
        return depth_confidence(self.depth, self.sparse_depth, self.completion.confidence,
                                beside, None if support is None else support.result())


def prepare_frame(inputs: FrameInputs, projection: ProjectionConfig,
                  holdout: HoldoutRule = HoldoutRule(),
                  beside: Executor | None = None) -> PreparedFrame:
    """
    Check a frame, project its LiDAR and withhold the hold-out pixels (the engine's input).

    ``beside``: the caller's second thread (geometry/second_thread.py), else one per call.
    """
    height, width = inputs.rgb.shape[:2]
    check_camera_matches_image(inputs.camera, width, height)
    projected = clouds_to_sparse_depth(inputs.clouds, inputs.camera, projection, beside)
    sparse, heldout = projected.depth, None
    if holdout.fraction > 0:
        sparse, heldout = holdout_split(sparse, holdout.fraction,
                                        holdout_rng(holdout.seed, inputs.stamp_ns))
    return PreparedFrame(inputs, projected, sparse, heldout)


def complete_sparse(completer: DepthCompleter, rgb: np.ndarray, sparse_depth: np.ndarray,
                    deadline: float | None = None,
                    should_stop: Callable[[], bool] | None = None,
                    intrinsics: np.ndarray | None = None, stream: Hashable = None,
                    encoded: EncodedFrame | None = None
                    ) -> tuple[np.ndarray, CompletionResult]:
    """
    Run the engine on an image and its sparse map; return (published depth, engine result).

    The published depth is the engine's with ``far_depth`` beyond its far limit and on the
    sky (:func:`mark_far`) and -Inf at its near limit (:func:`mark_near`). Every completion (node,
    bag and dataset evaluation) ends here. Engine errors (too few LiDAR points under the
    'error' policy, non-finite network output) propagate to the caller. ``intrinsics`` (the
    image's K) goes to models that take the camera. ``stream`` (a camera's name) picks whose
    warm start the frame continues; ``encoded``: the image's features encoded ahead.
    """
    result = completer.complete(rgb, sparse_depth, deadline, should_stop, intrinsics, stream,
                                encoded)
    config = completer.config
    depth = mark_far(result.depth, config.max_depth, config.far_depth, result.sky)
    return mark_near(depth, config.min_depth), result


class CompletionPipeline:
    """Project the cloud into the image, hold out, complete the depth, mark unusable pixels."""

    def __init__(self, completer: DepthCompleter, projection: ProjectionConfig,
                 holdout: HoldoutRule = HoldoutRule(),
                 fusion: TemporalFusionConfig = TemporalFusionConfig()) -> None:
        self.completer = completer
        self.projection = projection
        self.holdout = holdout
        self.fusion = fusion
        self._fusion_states: dict[Hashable, TemporalFusion] = {}
        #: Kept from frame to frame: a thread started per frame costs time (second_thread.py).
        self._beside = new_second_thread()

    def reconfigure(self, config: TTOConfig, projection: ProjectionConfig,
                    holdout: HoldoutRule) -> None:
        """
        Run the next frames with these settings: call between frames, never during one.

        Raise ConfigError (nothing changed) for an engine option the model cannot honour.
        """
        self.completer.reconfigure(config)
        self.projection = projection
        self.holdout = holdout

    def reset(self, stream: Hashable = None) -> None:
        """Start ``stream`` (a camera) anew: its next frame is cold and fused with nothing."""
        self.completer.reset(stream)
        self._fusion_state(stream).reset()

    def _fusion_state(self, stream: Hashable) -> TemporalFusion:
        if stream not in self._fusion_states:
            self._fusion_states[stream] = TemporalFusion(self.fusion)
        return self._fusion_states[stream]

    def prepare(self, inputs: FrameInputs) -> PreparedFrame:
        """Check the frame, project its LiDAR and withhold the hold-out pixels."""
        return prepare_frame(inputs, self.projection, self.holdout, self._beside)

    def start_support(self, prepared: PreparedFrame) -> None:
        """
        Start the confidence's support factor of a prepared frame on the second thread.

        It needs only the sparse map: computed while the engine runs (on a GPU, beside it;
        on the CPU, sharing the cores with it), it leaves the confidence's other factors after
        the engine. For a frame whose confidence will be published.
        """
        prepared.support = self._beside.submit(support_confidence, prepared.sparse_depth)

    def encode(self, prepared: Sequence[PreparedFrame]) -> list[EncodedFrame]:
        """
        Encode several prepared frames ahead of :meth:`complete`, batched where shapes agree.

        For frames of several cameras ready together (DepthCompleter.encode_frames).
        """
        return self.completer.encode_frames([frame.inputs.rgb for frame in prepared],
                                            [frame.inputs.camera.K for frame in prepared])

    def complete(self, prepared: PreparedFrame, deadline: float | None = None,
                 should_stop: Callable[[], bool] | None = None, stream: Hashable = None,
                 encoded: EncodedFrame | None = None) -> FrameOutputs:
        """
        Complete a prepared frame (see :func:`complete_sparse`).

        ``deadline`` (``time.monotonic()``) is when the completion must end (anytime mode);
        ``should_stop`` goes to :meth:`DepthCompleter.complete`; ``stream`` names whose warm
        start and temporal fusion it continues (a camera) and ``encoded`` is its output of
        :meth:`encode`. A frame after a scene cut is fused with nothing.
        """
        inputs = prepared.inputs
        depth, result = complete_sparse(self.completer, inputs.rgb, prepared.sparse_depth,
                                        deadline, should_stop, inputs.camera.K, stream, encoded)
        if not self.fusion.enabled:
            return FrameOutputs(depth, prepared, result, beside=self._beside)
        fused = self._fusion_state(stream).fuse(depth, inputs.camera.K, inputs.T_world_cam,
                                                restart=result.scene_cut)
        return FrameOutputs(fused.depth, prepared, result, fused.fused_fraction, self._beside)

    def process(self, inputs: FrameInputs, deadline: float | None = None,
                should_stop: Callable[[], bool] | None = None) -> FrameOutputs:
        """Prepare and complete one frame."""
        return self.complete(self.prepare(inputs), deadline, should_stop)
