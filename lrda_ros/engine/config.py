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

"""One dataclass configures the test-time optimization engine."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import Enum

from ..errors import check_fields


#: ``TTOConfig.scene_cut_factor``'s default.
SCENE_CUT_FACTOR = 4.0
#: Step schedules (``TTOConfig.schedule``; engine/schedule.py).
SCHEDULES = ('adaptive', 'fast', 'paper')
#: Where the encoder can run (engine/encoder_backends.py).
ENCODER_BACKENDS = ('torch', 'onnxruntime', 'tensorrt')
#: Compute precisions of ``TTOConfig.dtype`` (engine/precision.py autocasts to them).
PRECISIONS = ('float32', 'bfloat16', 'float16')
#: How adapted layers compute (``TTOConfig.lora_path``; engine/lora_paths.py).
LORA_PATHS = ('auto', 'separate', 'merged')
#: ``dtype`` values: a precision, or 'auto' (bfloat16 where the hardware computes it
#: natively, else float32; engine/precision.py).
DTYPES = ('auto',) + PRECISIONS


class Scope(str, Enum):
    """
    Which parameters test-time optimization adapts.

    ``DECODER_LORA`` is the method (LoRA on the DPT decoder, encoder features cached once per
    frame); the others are the paper's ablations and the strongest prior zero-shot baseline.
    """

    DECODER_LORA = 'decoder_lora'
    ENCODER_LORA = 'encoder_lora'
    FULL_LORA = 'full_lora'
    DECODER_FULL = 'decoder_full'
    PROMPT = 'prompt'


class FewPointsPolicy(str, Enum):
    """What to do with fewer valid sparse points than ``min_points``."""

    #: Return the prior aligned by scale/shift only (status ``ALIGNMENT_ONLY``).
    ALIGN = 'align'
    #: Raise InsufficientSparseDepthError.
    ERROR = 'error'


#: What published depth holds beyond max_depth and on the sky (TTOConfig.far_depth).
#: Words, not 'inf' and 'nan': ROS parameter files and --ros-args read those as numbers.
FAR_DEPTHS = ('too_far', 'no_depth', 'clamp')


@dataclass
class TTOConfig:
    """
    Everything that shapes one frame's test-time optimization.

    The paper's settings are the defaults of ``iterations`` (40 Adam steps), ``learning_rate``
    (1e-2), ``scope`` (LoRA on the decoder), ``lora_rank`` (8) and ``processing_size`` (None);
    ``schedule``'s is not: 'adaptive' ends a frame early and keeps its best iterate, while
    'paper' runs exactly the paper's loop (the last iterate of its T steps).
    ``processing_size`` trades accuracy for speed: the image is resized so its longer side is
    about this many pixels; None keeps the input size. Both sides are always rounded to
    multiples of the 14-pixel patch.
    """

    iterations: int = 40
    learning_rate: float = 1e-2
    scope: Scope = Scope.DECODER_LORA
    lora_rank: int = 8
    lora_alpha: float = 8.0
    lora_dropout: float = 0.0
    #: Extra regular expressions; a layer is adapted if its name matches any. Empty: all
    #: Conv2d/Linear layers of the scope (peft cannot adapt ConvTranspose2d).
    target_modules: tuple[str, ...] = ()
    device: str = 'auto'
    #: 'float32', or 'bfloat16'/'float16' to autocast forward passes (CUDA, and CPUs with
    #: bfloat16 instructions), or 'auto': bfloat16 where the device computes it natively
    #: (CUDA compute capability 8+, CPUs with AVX512-BF16 or AMX), else float32. A device
    #: that cannot run the choice is rejected when the completer is built
    #: (engine/precision.py).
    dtype: str = 'float32'
    processing_size: int | None = None
    #: Sparse depths outside [min_depth, max_depth] metres are ignored; output is clamped to it.
    min_depth: float = 0.1
    max_depth: float = 250.0
    min_points: int = 32
    few_points: FewPointsPolicy = FewPointsPolicy.ALIGN
    #: What published depth (the node, lrda eval, lrda densify: pipeline.complete_sparse)
    #: holds where the aligned depth lies beyond max_depth, and on the sky of models with a
    #: sky head: 'too_far' (+Inf, REP 118's too far), 'no_depth' (NaN) or 'clamp' (max_depth,
    #: as the engine's own result.depth). The engine's result is clamped whatever this says.
    far_depth: str = 'too_far'
    #: Carry adapted weights to the next frame and run ``warm_iterations`` there instead.
    warm_start: bool = False
    warm_iterations: int = 10
    #: Warm start, schedule 'paper': a frame whose starting loss (the carried weights, before
    #: any step) is more than this many times the previous frame's final loss, both as a share
    #: of a constant prediction's, follows a scene cut and runs cold (engine/scene_cut.py).
    #: 'adaptive' and 'fast' compare the carried start with the unadapted one instead. 0 =
    #: off (either check).
    scene_cut_factor: float = SCENE_CUT_FACTOR
    #: How the steps are spent (engine/schedule.py): 'adaptive' (each frame ends when its loss
    #: has stopped improving, at most ``iterations`` steps; a warm frame starts from the
    #: carried or the unadapted weights, whichever fits it better, and after
    #: ``warm_iterations`` steps ends if it has caught up with the previous frame, restarts
    #: cold if far behind, else goes on), 'fast' (most steps on a coarser network input: about
    #: a third of the arithmetic, for a less accurate fit) or 'paper' (the paper's loop:
    #: exactly ``iterations`` steps, ``warm_iterations`` on warm frames, the last iterate
    #: returned; the divergence and backtrack rules below do not act).
    schedule: str = 'adaptive'
    #: Plateau rule: a frame ends once its best loss improved by at most this share over the
    #: last ``patience`` steps. None: the schedule's (0.001; off for 'paper'); 0: off.
    convergence_tol: float | None = None
    patience: int = 10
    #: The host queues at most two steps past the newest stop flag (end rules, divergence)
    #: it has read (engine/lookahead.py): on CUDA a stop is seen a step or two late (the steps
    #: queued meanwhile are masked). N > 0 also reads it every N steps, waiting for the
    #: device (one synchronization each), so that no masked step runs past a stop. 0 = never.
    stop_check_every: int = 0
    #: Anytime mode: seconds per ``complete`` call (0 = off). The steps stop in time to
    #: return within it, with the best iterate so far (the last under 'paper';
    #: engine/deadline.py); an explicit
    #: ``deadline`` argument to ``complete`` takes precedence.
    time_budget: float = 0.0
    #: A loss above this multiple of the first iteration's loss (or non-finite) counts as
    #: divergence: optimization stops and the best weights seen are kept (not under
    #: 'paper'). (A rise that collapses the prediction, ``backtrack_fraction``, is undone
    #: instead.)
    divergence_factor: float = 10.0
    #: A step that gives back more than this fraction of what the best iterate gained over a
    #: constant prediction (whose loss is the target's variance) sends the optimization back
    #: to the best weights with half the learning rate (for the rest of the frame). Such a step
    #: has collapsed the prediction (e.g. the head's final ReLU off at nearly every LiDAR
    #: pixel, where the gradient all but vanishes); undoing it keeps the remaining steps
    #: useful. 1 = off (an aligned prediction never does worse than a constant one). Not under
    #: 'paper'.
    backtrack_fraction: float = 0.5
    #: Evaluate the full-resolution tail of the head only at the LiDAR pixels during the steps
    #: (exact; see engine/sparse_head.py).
    sparse_head: bool = True
    #: Compute the decoder's high-resolution tail (last fusion layer, the head at 8x the patch
    #: grid and above) in this many bands of rows, exact (see engine/strips.py): during the
    #: steps under activation checkpointing (needs ``sparse_head``), and in the final decode.
    #: Peak memory falls roughly with the count, each step computes the tail twice. 1 = off.
    tail_strips: int = 1
    #: How each adapted layer computes during the steps (engine/lora_paths.py): 'separate'
    #: (the base layer plus the low-rank path, as peft trains), 'merged' (one layer with
    #: W + BA, its weight gradient sent on to the adapters), or 'auto': per layer, the one
    #: measured cheaper on this device at the frame's shapes (timed once per network input
    #: shape, during its first step). Same result up to floating-point rounding.
    lora_path: str = 'auto'
    #: Compute a frame the same way on every run (engine/determinism.py): 'auto' lora_path
    #: fixed to 'separate', cuDNN's deterministic algorithms, float32 without TF32 on CUDA.
    deterministic: bool = False
    #: Run convolutions in channels-last memory layout (faster oneDNN/cuDNN kernels).
    channels_last: bool = True
    #: Keep large freed CPU blocks in the heap (process-wide glibc setting; see
    #: engine/allocator.py): CPU steps stop paying page faults for their activations, and so
    #: do every frame's host arrays (images, maps, messages) whatever the engine's device.
    tune_cpu_allocator: bool = True
    seed: int = 0
    #: Where the encoder runs: 'torch', 'onnxruntime' (the backbone exported to ONNX, cached
    #: per model and input size in ``encoder_cache_dir``), or 'tensorrt' (ONNX Runtime's
    #: TensorRT provider); see engine/encoder_backends.py. The decoder's steps stay in torch.
    encoder_backend: str = 'torch'
    #: Folder of the exported encoders ('' = ~/.cache/lrda_ros/onnx).
    encoder_cache_dir: str = ''
    #: Run whole optimization steps and the final decode under torch.compile (one graph each,
    #: compiled once per resolution); see engine/compiled.py.
    compile: bool = False  # noqa: A003 (the option is named compile)

    def __post_init__(self) -> None:
        """Coerce enum fields and reject values that cannot work."""
        self.scope = Scope(self.scope)
        self.few_points = FewPointsPolicy(self.few_points)
        self.target_modules = tuple(self.target_modules)
        checks = [
            (self.iterations >= 0, 'iterations', 'iterations must be >= 0'),
            (self.far_depth in FAR_DEPTHS, 'far_depth',
             f'far_depth must be one of {", ".join(FAR_DEPTHS)}, got {self.far_depth!r}'),
            (self.warm_iterations >= 0, 'warm_iterations', 'warm_iterations must be >= 0'),
            (self.scene_cut_factor == 0 or self.scene_cut_factor > 1, 'scene_cut_factor',
             'scene_cut_factor must be 0 (off) or > 1'),
            (self.learning_rate > 0, 'learning_rate', 'learning_rate must be > 0'),
            (self.lora_rank >= 1, 'lora_rank', 'lora_rank must be >= 1'),
            (self.lora_alpha > 0, 'lora_alpha', 'lora_alpha must be > 0'),
            (0 <= self.lora_dropout < 1, 'lora_dropout', 'lora_dropout must be in [0, 1)'),
            (self.dtype in DTYPES, 'dtype', f'dtype must be one of {list(DTYPES)}'),
            (self.processing_size is None or self.processing_size >= 14, 'processing_size',
             'processing_size must be None or >= 14'),
            (0 < self.min_depth, 'min_depth', 'min_depth must be > 0'),
            (self.min_depth < self.max_depth, 'max_depth', 'max_depth must exceed min_depth'),
            (self.min_points >= 1, 'min_points', 'min_points must be >= 1'),
            (self.schedule in SCHEDULES, 'schedule', f'schedule must be one of {list(SCHEDULES)}'),
            (self.convergence_tol is None or self.convergence_tol >= 0, 'convergence_tol',
             "convergence_tol must be >= 0 (0 = off) or None (the schedule's)"),
            (self.time_budget >= 0, 'time_budget', 'time_budget must be >= 0 (0 = off)'),
            (self.patience >= 1, 'patience', 'patience must be >= 1'),
            (self.stop_check_every >= 0, 'stop_check_every',
             'stop_check_every must be >= 0 (0 = never wait for the stop flag)'),
            (self.tail_strips >= 1, 'tail_strips', 'tail_strips must be >= 1'),
            (self.lora_path in LORA_PATHS, 'lora_path',
             f'lora_path must be one of {list(LORA_PATHS)}'),
            (self.encoder_backend in ENCODER_BACKENDS, 'encoder_backend',
             f'encoder_backend must be one of {list(ENCODER_BACKENDS)}'),
            (self.divergence_factor > 1, 'divergence_factor', 'divergence_factor must be > 1'),
            (0 < self.backtrack_fraction <= 1, 'backtrack_fraction',
             'backtrack_fraction must be in (0, 1]'),
        ]
        checks += [
            (self.schedule != 'fast' or self.scope not in (Scope.ENCODER_LORA, Scope.FULL_LORA,
                                                           Scope.PROMPT), 'schedule',
             "schedule 'fast' runs its coarse steps on cached encoder features; scope "
             f"{self.scope.value} re-encodes at every step: use 'adaptive' or 'paper'"),
            (self.schedule == 'paper' or self.scene_cut_factor in (0, SCENE_CUT_FACTOR),
             'scene_cut_factor',
             "scene_cut_factor tunes the 'paper' schedule's scene-cut rule; schedule "
             f"'{self.schedule}' compares the carried start with the unadapted one instead: "
             'leave it at its default (0 turns the comparison off)'),
        ]
        check_fields(checks, 'TTOConfig: ')

    def to_dict(self) -> dict:
        """Return a plain dict (enums as strings) for logs and reports."""
        data = asdict(self)
        data['scope'] = self.scope.value
        data['few_points'] = self.few_points.value
        return data
