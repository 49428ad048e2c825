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
What ``lrda eval`` and ``lrda paper`` run with: the source, the methods, the engine settings.

The engine settings start from the completion node's parameter table
(:mod:`lrda_ros.settings`), the one set of defaults of the node, ``lrda densify`` and
``lrda eval``: a bag is completed with the node's settings unless an option or a node
parameter (``parameters``: a parameters file, ``-p``) says otherwise. Benchmark datasets depart
from them where their protocols need it (:data:`PROTOCOL_PARAMETERS`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from ..datasets import LIDAR_KINDS
from ..engine import TTOConfig
from ..errors import ConfigError
from ..geometry import RigidTransform
from ..messages.rosbag import BagTopics
from ..settings import NodeSettings

#: Where benchmark datasets (every source but a bag) are evaluated unlike the node runs: in
#: full precision, as the paper; with a far limit beyond any benchmark's ground truth (DDAD's
#: LiDAR reaches 200 m); and from 8 points, since the sparse inputs of small sampled or
#: held-out frames can hold fewer than the node's 32.
PROTOCOL_PARAMETERS = MappingProxyType({'dtype': 'float32', 'max_depth': 250.0, 'min_points': 8})
#: Sources evaluated exactly with the node's parameters.
NODE_SOURCES = ('rosbag',)
#: The engine configuration's fields an option may set (None: the parameters decide).
ENGINE_FIELDS = ('device', 'iterations', 'warm_iterations', 'schedule', 'learning_rate',
                 'processing_size', 'dtype', 'compile', 'encoder_backend')


@dataclass(kw_only=True)
class EngineOptions:
    """
    The model and engine settings of an evaluation run.

    Each option left None takes the completion node's parameter of the same name:
    ``parameters`` (node parameter values, as a parameters file or ``-p`` give them) over the
    node's defaults. ``processing_size`` 0 keeps the image size, as the node's.
    """

    model: str | None = None
    device: str | None = None
    iterations: int | None = None
    warm_iterations: int | None = None
    #: The step schedule (engine/schedule.py), as the node's ``schedule``.
    schedule: str | None = None
    learning_rate: float | None = None
    processing_size: int | None = None
    #: The engine's precision ('float32', 'bfloat16', 'float16' or 'auto', as the node's dtype).
    dtype: str | None = None
    #: torch.compile the step and the decode (as the node's compile).
    compile: bool | None = None  # noqa: A003 (the option is named compile)
    #: Where the encoder runs (as the node's encoder_backend).
    encoder_backend: str | None = None
    seed: int = 0
    #: Completion node parameter values under the options above.
    parameters: Mapping[str, Any] = field(default_factory=dict)

    def node_settings(self, base: Mapping[str, Any] = MappingProxyType({})) -> NodeSettings:
        """Return the node's settings from ``base`` and ``parameters`` over its defaults."""
        return NodeSettings.from_values({**base, **self.parameters})

    def engine_config(self, settings: NodeSettings) -> TTOConfig:
        """Return the node's engine configuration with what the options set."""
        given = {name: getattr(self, name) for name in ENGINE_FIELDS
                 if getattr(self, name) is not None}
        if 'processing_size' in given:
            given['processing_size'] = given['processing_size'] or None
        return replace(settings.tto, seed=self.seed, **given)

    def model_spec(self, settings: NodeSettings) -> str:
        """Return the model to load: the option, else the node's ``model``."""
        return self.model if self.model is not None else settings.model


DEFAULT_METHODS = ('scale-shift', 'lrda', 'lrda-warm', 'prompt', 'classical')
#: Fraction of LiDAR pixels held out as ground truth where a source has none (bags, KITTI object).
DEFAULT_HOLDOUT = 0.2
#: Sources that can hold out LiDAR pixels as ground truth.
HOLDOUT_KINDS = ('rosbag', 'folder', 'kitti_object')


@dataclass
class EvalOptions(EngineOptions):
    """
    Everything ``lrda eval`` needs; ``kind`` is a dataset kind or 'rosbag'.

    The engine settings (:class:`EngineOptions`) start from the node's parameters: for a bag
    as they are, for a benchmark dataset with :data:`PROTOCOL_PARAMETERS`; so do
    ``slop_s``, ``queue_size`` (the node's ``sync.slop`` / ``sync.queue_size``),
    ``image_is_rectified`` and ``extrinsic`` (its ``lidar_to_camera.*``) when None.
    ``holdout_fraction``: LiDAR pixels withheld as ground truth (bags without a depth topic and
    ``kitti_object``: ``DEFAULT_HOLDOUT`` when None; ``folder``: only when set).
    ``independent``: every frame unrelated to the previous one, so warm-started methods start
    cold on each. ``min_depth`` and ``max_depth`` bound the ground truth scored.
    """

    kind: str
    root: Path
    output: Path
    methods: tuple[str, ...] = DEFAULT_METHODS
    max_frames: int | None = None
    figures: int = 10
    num_points: int | None = None
    min_depth: float = 1e-3
    max_depth: float | None = None
    holdout_fraction: float | None = None
    topics: BagTopics = field(default_factory=BagTopics)
    slop_s: float | None = None
    queue_size: int | None = None
    independent: bool = False
    #: Bags: T_camera_lidar instead of /tf_static and /tf.
    extrinsic: RigidTransform | None = None
    #: Bags: the image is rectified (P, no distortion) rather than raw (K and D).
    image_is_rectified: bool | None = None
    progress: bool = True
    #: Write every method's depth of every frame as depth/<method>/<frame>.npy.
    save_depth: bool = False
    #: Also the anytime curve: lrda and lrda-warm at these time budgets (s/frame; 0 =
    #: unlimited), written as budget_curve.{md,png}.
    budgets: tuple[float, ...] = ()
    #: The LiDAR input's outlier filter (geometry/outliers.py) on or off; None: the source's
    #: protocol (on for kitti_dc and ddad, off for bags and kitti_object).
    outlier_filter: bool | None = None


def check_options(options: EvalOptions) -> None:
    """Reject options that do not apply to the source, or are out of range, naming the option."""
    kind = options.kind
    problems = [
        (kind != 'rosbag' and (options.slop_s is not None or options.queue_size is not None),
         '--slop', f'--slop and --queue-size synchronize bag topics; --dataset {kind} has none: '
         'drop them'),
        (options.holdout_fraction is not None and kind not in HOLDOUT_KINDS, '--holdout',
         f'--holdout applies to --bag and --dataset folder or kitti_object; {kind} ships its '
         'own ground truth: drop --holdout'),
        (options.holdout_fraction is not None and not 0 < options.holdout_fraction < 1,
         '--holdout', f'--holdout must be in (0, 1), got {options.holdout_fraction}'),
        (options.holdout_fraction is not None and kind == 'rosbag' and bool(options.topics.depth),
         '--holdout', '--holdout and --depth-topic both give the ground truth: drop one'),
        (options.outlier_filter is not None and kind not in LIDAR_KINDS, '--outlier-filter',
         f'--outlier-filter applies to LiDAR input ({", ".join(LIDAR_KINDS)}); {kind} has '
         'none: drop it'),
        (options.num_points is not None and kind in ('rosbag', 'kitti_object', 'ddad'),
         '--num-points',
         f'--num-points samples the input from dataset ground truth; {kind} input is the LiDAR '
         'itself: drop --num-points'),
        (options.slop_s is not None and not options.slop_s > 0, '--slop',
         f'--slop must be positive (seconds), got {options.slop_s}'),
        (options.queue_size is not None and options.queue_size < 1, '--queue-size',
         f'--queue-size must be at least 1, got {options.queue_size}'),
        (options.max_frames is not None and options.max_frames < 1, '--max-frames',
         f'--max-frames must be at least 1, got {options.max_frames}'),
        (kind != 'rosbag' and (options.extrinsic is not None or options.image_is_rectified),
         '--image-is-rectified', '--image-is-rectified and --lidar-to-camera-* only apply to '
         '--bag (a --dataset already holds projected sparse depth)'),
    ]
    for rejected, option, message in problems:
        if rejected:
            raise ConfigError(message, field=option)


def source_settings(options: EvalOptions) -> NodeSettings:
    """Return the node settings ``options`` evaluate their source with (bags: the node's own)."""
    return options.node_settings({} if options.kind in NODE_SOURCES else PROTOCOL_PARAMETERS)
