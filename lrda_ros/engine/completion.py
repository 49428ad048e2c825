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

"""What one completion takes from a sparse depth map and gives back."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
import math

import numpy as np
import torch

from .config import TTOConfig
# The errors live in a torch-free module (error handlers import them before torch); named here
# too, where the engine raises them.
from .errors import (  # noqa: F401
    CompletionCancelledError, InputTypeError, InsufficientSparseDepthError, NonFiniteDepthError)
from .model import check_rgb_image, EncodedImage, resize_prediction
from .transfers import to_device
from ..errors import ConfigError, InputError


class CompletionStatus(str, Enum):
    """How a frame's optimization ended."""

    #: Ran its iterations (or stopped early on convergence).
    OPTIMIZED = 'optimized'
    #: No optimizer step ran (fewer than min_points, or zero iterations configured): the prior
    #: aligned by scale and shift only.
    ALIGNMENT_ONLY = 'alignment_only'
    #: The loss diverged; the best weights seen were kept.
    DIVERGED = 'diverged'


def check_finite(dense: torch.Tensor, last_iterate_steps: int, config: TTOConfig) -> None:
    """
    Raise NonFiniteDepthError, saying why, where the final dense prediction is not finite.

    ``last_iterate_steps``: the steps behind a last iterate returned as it is (schedule
    'paper', which keeps no better one), 0 when the weights were the best seen or unadapted.
    """
    if bool(torch.isfinite(dense).all()):
        return
    if last_iterate_steps:
        raise NonFiniteDepthError(
            f"the last iterate of schedule 'paper' ({last_iterate_steps} steps at "
            f'learning_rate {config.learning_rate}) predicts non-finite depth: the steps '
            'diverged; lower learning_rate')
    raise NonFiniteDepthError('the depth model produced non-finite values for this image even '
                              'without adaptation')


@torch.no_grad()
def model_sky(model, encoded: EncodedImage) -> torch.Tensor | None:
    """
    Return the (H, W) sky of a frame's image by the model's sky head and threshold, or None.

    The head reads the decoder's features as the frame's steps start (the unadapted decoder on
    a cold frame); the sky is then fixed for the frame. None for models without a sky head.
    """
    if not getattr(model, 'has_sky', False):
        return None
    probability = resize_prediction(model.sky(encoded).float(), encoded.input_size)[0]
    return probability >= model.sky_threshold


@dataclass
class SparseSamples:
    """The valid pixels of a sparse depth map."""

    rows: torch.Tensor
    cols: torch.Tensor
    depth: torch.Tensor
    #: 1 per pixel, 0 per padding sample (compiled steps' sizes, engine/compiled.py); None:
    #: every sample counts.
    weights: torch.Tensor | None = None

    @property
    def count(self) -> int:
        """Return the number of valid pixels."""
        return int(self.rows.numel())

    def outside(self, mask: torch.Tensor) -> 'SparseSamples':
        """Return the samples whose pixels ``mask`` (an (H, W) bool map) leaves out."""
        keep = ~mask[self.rows, self.cols]
        weights = None if self.weights is None else self.weights[keep]
        return SparseSamples(self.rows[keep], self.cols[keep], self.depth[keep], weights)

    @classmethod
    def from_map(cls, sparse_depth: np.ndarray, min_depth: float, max_depth: float,
                 device: torch.device) -> 'SparseSamples':
        """Select finite depths in [min_depth, max_depth]; 0, NaN and inf mean no measurement."""
        with np.errstate(invalid='ignore'):
            valid = np.isfinite(sparse_depth) & (sparse_depth >= min_depth) & (
                sparse_depth <= max_depth)
        rows, cols = np.nonzero(valid)
        depth = sparse_depth[rows, cols].astype(np.float32)
        return cls(to_device(rows, device), to_device(cols, device), to_device(depth, device))


@dataclass
class CompletionResult:
    """Dense metric depth for one frame and what the optimization did."""

    depth: np.ndarray
    status: CompletionStatus
    #: The least-squares alignment of the final prediction to the sparse depths, in the
    #: model's output space: target = scale * prediction + shift, where the target is
    #: disparity (1 / metres) for relative models (Depth Anything V2) and metres for metric
    #: ones (UniDepthV2, the metric fine-tunes).
    scale: float
    shift: float
    num_points: int
    iterations: int
    warm_started: bool
    #: Loss before each optimizer step.
    losses: list[float] = field(default_factory=list)
    #: Loss of the returned prediction.
    final_loss: float = math.nan
    #: Steps that collapsed the prediction and were undone (TTOConfig.backtrack_fraction).
    backtracks: int = 0
    #: The frame's deadline (time budget) stopped the steps before ``iterations`` ran out.
    stopped_at_deadline: bool = False
    encode_seconds: float = 0.0
    #: From the encoding's end to the result: the steps, then the final dense decode.
    optimize_seconds: float = 0.0
    total_seconds: float = 0.0
    #: The final dense decode's share of ``optimize_seconds`` (to the result on the host).
    final_decode_seconds: float = 0.0
    #: (H, W) float32 confidence output of models that have one (UniDepthV2: a per-image
    #: ranking of the network's own expected error, larger = less reliable, no unit; Depth
    #: Anything 3's DualDPT: 1 / its confidence, in (0, 1], larger = less reliable), from
    #: the pass that gave ``depth``; None for models without one.
    confidence: np.ndarray | None = None
    #: Warm start was due but the frame followed a scene cut, so it ran cold (scene_cut.py).
    scene_cut: bool = False
    #: (H, W) bool: the sky, for models with a sky head (Depth Anything 3's DPT models), left
    #: out of the loss; None for models without one.
    sky: np.ndarray | None = None
    #: Decoder passes outside the steps: the warm-start checks' (at the LiDAR pixels), the
    #: final dense decode and its fallback to the best weights.
    decodes: int = 0


@dataclass
class EncodedFrame:
    """An image's network input and encoder features, computed ahead (see encode_frames)."""

    pixel_values: torch.Tensor
    encoded: EncodedImage
    #: This image's share of the encoding time (a batch's time split evenly).
    seconds: float


def check_frame(rgb: np.ndarray, sparse_depth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """
    Check one frame's inputs and return them ready for the engine.

    Raises InputTypeError for what is not a NumPy array, InputError for the wrong shape or for
    integer sparse depth (a PNG's units, not metres: the message gives the likely scale).
    Read-only arrays are copied, since PyTorch warns on every view of one.
    """
    for name, value, meaning in (('rgb', rgb, 'an (H, W, 3) uint8 image'),
                                 ('sparse_depth', sparse_depth, 'an (H, W) map in metres')):
        if not isinstance(value, np.ndarray):
            hint = ('tensor.cpu().numpy()' if isinstance(value, torch.Tensor)
                    else 'np.asarray(...)')
            raise InputTypeError(f'{name} must be a NumPy array ({meaning}), got '
                                 f'{type(value).__module__}.{type(value).__name__}: pass '
                                 f'{hint}', field=name)
    check_rgb_image(rgb)
    if sparse_depth.ndim != 2:
        raise InputError(f'sparse depth must be (H, W), got shape {sparse_depth.shape}'
                         + (': drop the channel axis (sparse_depth[..., 0])'
                            if sparse_depth.ndim == 3 and sparse_depth.shape[2] == 1 else ''),
                         field='sparse_depth')
    if sparse_depth.shape != rgb.shape[:2]:
        raise InputError(f'sparse depth is {sparse_depth.shape} but the image is '
                         f'{rgb.shape[:2]}: project the LiDAR into this image first',
                         field='sparse_depth')
    if not np.issubdtype(sparse_depth.dtype, np.floating):
        raise InputError(f'sparse depth is {sparse_depth.dtype}, not metres: '
                         f'{_likely_scale(sparse_depth)}', field='sparse_depth')
    return (rgb if rgb.flags.writeable else rgb.copy(),
            sparse_depth if sparse_depth.flags.writeable else sparse_depth.copy())


def _likely_scale(sparse_depth: np.ndarray) -> str:
    """Return how to convert integer sparse depth to float metres, with the likely scales."""
    values = sparse_depth[sparse_depth > 0]
    if values.size == 0:
        return 'pass float32 metres (0 or NaN = no measurement)'
    median = float(np.median(values))
    # The two integer encodings in use: KITTI's PNGs (metres x 256) and depth cameras'
    # millimetres; the median's reading in each tells which one the data is.
    return (f'its median {median:g} is {median / 256:.3g} m as KITTI PNG values (metres x '
            f'256) or {median / 1000:.3g} m as millimetres: pass '
            'sparse_depth.astype(np.float32) / 256 (or / 1000)')


def few_points_message(samples: SparseSamples, sparse_depth: np.ndarray, min_depth: float,
                       max_depth: float, min_points: int) -> str:
    """
    Say why too few sparse depths are valid, with the likely unit when they are out of range.

    Infinite values are named as such (no unit makes them metres); NaN means no measurement.
    """
    infinite = int(np.count_nonzero(np.isinf(sparse_depth)))
    with np.errstate(invalid='ignore'):
        above = int(np.count_nonzero(np.isfinite(sparse_depth) & (sparse_depth > max_depth)))
    message = (f'{samples.count} valid sparse depths in [{min_depth}, {max_depth}] m, need at '
               f'least {min_points} (min_points)')
    if infinite:
        message += (f'; {infinite} are infinite (inf is no depth: write 0 or NaN where there '
                    'is no measurement)')
    if above > samples.count:
        message += (f'; {above} are beyond {max_depth} m: if they are millimetres, divide by '
                    '1000 (KITTI PNG values: by 256)')
    return message


def check_unshared(network: torch.nn.Module) -> None:
    """Refuse a network whose adapters another DepthCompleter attached already."""
    if hasattr(network, 'peft_config'):  # what peft leaves on a network it adapted
        raise ConfigError('this model already carries the adapters of another DepthCompleter: '
                          'complete every camera with that one (complete(..., stream=name)), '
                          'or load the model again for a second configuration',
                          field='model')
