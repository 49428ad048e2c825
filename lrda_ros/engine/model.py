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
Load a Depth Anything V2 model and split it into a cached encoder and a re-run decoder.

The encoder (DINOv2 backbone) runs once per frame; test-time optimization re-runs only the
decoder (DPT neck and head) on the cached features. :mod:`lrda_ros.engine.loading` builds
it from any model spec (hub id, local directory, official ``.pth``, ``demo``, ``auto``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from .alignment import PredictionSpace
from .lora import DECODER_PREFIXES, ENCODER_PREFIXES
from .lora_paths import low_rank_term
from .names import unknown_device_message
from .precision import autocast, full_precision, hold_frozen_weights
from .transfers import to_device
from ..errors import ConfigError

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


@dataclass(frozen=True)
class EncodedImage:
    """Backbone features of one image, computed once and reused by every decoder pass."""

    hidden_states: tuple[torch.Tensor, ...]
    patch_grid: tuple[int, int]
    input_size: tuple[int, int]
    #: The input image's 3x3 camera matrix, for models that take one (re-encoding needs it).
    intrinsics: np.ndarray | None = None
    #: Outputs of frozen layers whose inputs are these features, computed on first use and
    #: reused by every later decoder pass (see :func:`frozen_base_output`).
    frozen_outputs: dict = field(default_factory=dict, compare=False, repr=False, kw_only=True)


def frozen_base_output(layer: torch.nn.Module, inputs: torch.Tensor, cache: dict,
                       key: Hashable) -> torch.Tensor:
    """
    Return ``layer(inputs)`` for inputs that stay the same from step to step (a frame's features).

    The frozen part is computed once and kept in ``cache``: the whole output of a frozen layer,
    or, for a LoRA-adapted one (peft), its base layer's output, to which the low-rank path is
    added anew at every call (its weights change between steps). A layer with trainable base
    weights (the decoder fine-tuning ablation), or inputs that carry a gradient (scopes that
    adapt the encoder re-encode at every step), is computed in full every time.
    """
    base = getattr(layer, 'base_layer', layer)
    if inputs.requires_grad or any(p.requires_grad for p in base.parameters()):
        return layer(inputs)
    cache_key = (key, torch.is_autocast_enabled(inputs.device.type))
    if cache_key not in cache:
        with torch.no_grad():
            cache[cache_key] = base(inputs)
    output = cache[cache_key]
    if base is layer or getattr(layer, 'disable_adapters', False):
        return output
    low_rank = low_rank_term(layer, inputs)
    return output if low_rank is None else output + low_rank


def resolve_device(name: str) -> torch.device:
    """
    Map 'auto' to CUDA when available, else CPU; check explicit names against this machine.

    Raises ValueError (one line, saying what to use instead) for a name torch does not know, a
    CUDA device without CUDA, and a CUDA index this machine does not have.
    """
    if name == 'auto':
        return torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError) as error:
        raise ValueError(unknown_device_message(name)) from error
    if device.type == 'cuda' and not torch.cuda.is_available():
        raise ValueError(f'device {name!r} requested but CUDA is not available; '
                         "use 'auto' or 'cpu'")
    if device.type == 'cuda' and device.index is not None \
            and device.index >= torch.cuda.device_count():
        raise ValueError(f'device {name!r} requested but this machine has '
                         f'{torch.cuda.device_count()} CUDA device(s): use cuda:0 .. '
                         f'cuda:{torch.cuda.device_count() - 1}')
    if device.type not in ('cpu', 'cuda'):
        raise ValueError(f"device {name!r} is not supported: use 'auto', 'cpu', 'cuda' or "
                         "'cuda:N'")
    return device


def processing_shape(height: int, width: int, processing_size: int | None,
                     patch_size: int = 14) -> tuple[int, int]:
    """
    Return the network input (height, width): multiples of the patch size.

    ``processing_size`` caps the longer side (None keeps the input resolution, as in the paper).
    """
    scale = 1.0 if processing_size is None else processing_size / max(height, width)

    def to_multiple(side: int) -> int:
        return max(patch_size, int(round(side * scale / patch_size)) * patch_size)

    return to_multiple(height), to_multiple(width)


def resize_prediction(prediction: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """Resize a (1, h, w) prediction to the input size (bilinear, corners aligned as DAv2)."""
    if tuple(prediction.shape[-2:]) == tuple(size):
        return prediction
    return F.interpolate(prediction[:, None], size=size, mode='bilinear',
                         align_corners=True)[:, 0]


def bilinear_source(index: torch.Tensor, size_in: int,
                    size_out: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """
    Return (low, high, fraction) source indices of ``F.interpolate(align_corners=True)``.

    For output indices along one axis resized from ``size_in`` to ``size_out``: the two input
    indices each output interpolates and the weight of ``high``, computed in float32 the way
    PyTorch's kernel does (so sampled values match it to rounding).
    """
    scale = (size_in - 1) / (size_out - 1) if size_out > 1 else 0.0
    source = index.to(torch.float32) * torch.tensor(scale, dtype=torch.float32)
    low = source.long().clamp(0, size_in - 1)
    return low, (low + 1).clamp(max=size_in - 1), source - low


def input_pixels_to_grid(rows: torch.Tensor, cols: torch.Tensor,
                         input_size: tuple[int, int]) -> torch.Tensor:
    """
    Return grid_sample coordinates (1, 1, N, 2) of input pixels.

    With corners aligned, input pixel (r, c) sits at the same normalized position in any
    resolution, so sampling the low-resolution prediction there equals resizing it first and
    indexing the pixel, without materializing the full-resolution map.
    """
    height, width = input_size
    gx = cols.to(torch.float32) * (2.0 / max(width - 1, 1)) - 1.0
    gy = rows.to(torch.float32) * (2.0 / max(height - 1, 1)) - 1.0
    return torch.stack([gx, gy], dim=-1)[None, None]


def sample_prediction(prediction: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor,
                      input_size: tuple[int, int]) -> torch.Tensor:
    """Return the (N,) values of resize_prediction(prediction, input_size) at the pixels."""
    grid = input_pixels_to_grid(rows, cols, input_size).to(prediction.device)
    sampled = F.grid_sample(prediction[:, None], grid.to(prediction.dtype), mode='bilinear',
                            padding_mode='border', align_corners=True)
    return sampled[0, 0, 0]


def fuse_level(layer: torch.nn.Module, hidden: torch.Tensor | None,
               skip: torch.Tensor) -> torch.Tensor:
    """
    One DPT fusion layer up to its upsampling: add the refined skip, refine, project.

    The 1x1 projection runs here, before the layer's 2x bilinear upsampling, where transformers
    runs it after: both are linear and the bilinear weights sum to one, so the bias (and a LoRA
    branch) passes through unchanged, while the projection (forward, backward, and the input
    autograd keeps for its adapter) costs a quarter. Exact up to rounding.
    """
    if hidden is None:  # the coarsest layer has no finer input yet
        hidden = skip
    else:
        if hidden.shape != skip.shape:
            skip = F.interpolate(skip, size=hidden.shape[2:], mode='bilinear',
                                 align_corners=False)
        hidden = hidden + layer.residual_layer1(skip)
    return layer.projection(layer.residual_layer2(hidden))


def fuse_features(fusion_stage: torch.nn.Module, features: list[torch.Tensor],
                  levels: int | None = None) -> list[torch.Tensor]:
    """
    Run the DPT fusion stage, coarsest level first, as transformers' DepthAnything does.

    ``features`` is the pyramid finest first; ``levels`` runs only that many fusion layers
    (the rest of the decoder can then be evaluated elsewhere, e.g. in strips).
    """
    coarse_to_fine = features[::-1]
    fused: list[torch.Tensor] = []
    hidden = None
    for index in range(len(coarse_to_fine) if levels is None else levels):
        hidden = fuse_level(fusion_stage.layers[index], hidden, coarse_to_fine[index])
        size = ({'size': coarse_to_fine[index + 1].shape[2:]}
                if index + 1 < len(coarse_to_fine) else {'scale_factor': 2})
        hidden = F.interpolate(hidden, **size, mode='bilinear', align_corners=True)
        fused.append(hidden)
    return fused


def head_output(head: torch.nn.Module, upsampled: torch.Tensor) -> torch.Tensor:
    """
    Apply the head after its upsampling (conv2, conv3, activations): (1, h, w) prediction.

    Computed in float32 under any autocast (see precision.full_precision).
    """
    with full_precision(upsampled.device):
        hidden = head.activation1(head.conv2(upsampled.float()))
        # The depth is the first channel (DA3's DualDPT has a confidence channel after it).
        return (head.activation2(head.conv3(hidden)[:, :1]) * head.max_depth)[:, 0]


def check_rgb_image(rgb: np.ndarray) -> None:
    """Raise ValueError unless ``rgb`` is an (H, W, 3) uint8 image (every model's input)."""
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise ValueError(f'expected an (H, W, 3) uint8 RGB image, got shape {rgb.shape} '
                         f'dtype {rgb.dtype}')


class BaseDepthModel:
    """
    What every engine model shares: frozen float32 weights on a device, input normalization.

    Also where the weights came from, and the whole-image prediction. ``source`` is the model
    spec that was loaded (``'demo'`` for the embedded prior), ``is_demo_prior`` whether it is
    that prior, and ``warning`` what the user should know about the choice ('' when the
    requested model was loaded as asked). Subclasses add the encoder/decoder split the method
    needs: ``preprocess``, ``encode``, ``encode_batch``, ``encode_differentiable``, ``decode``.
    """

    def __init__(self, network: torch.nn.Module, device: torch.device | str = 'cpu',
                 source: str = '', is_demo_prior: bool = False, warning: str = '') -> None:
        self.source, self.is_demo_prior, self.warning = source, is_demo_prior, warning
        # Weights may be stored in half precision; the engine keeps float32 master weights and
        # uses autocast for lower-precision compute (hold_weights: frozen ones held in it).
        self.network = network.eval().requires_grad_(False).to(device=device, dtype=torch.float32)
        self.device = torch.device(device)
        #: The precision the frozen weights are held in (hold_weights) and the encoder's
        #: features are kept in: the decoder's activation stream.
        self.held_dtype = torch.float32
        self._mean = torch.tensor(IMAGENET_MEAN, device=self.device).view(1, 3, 1, 1)
        self._std = torch.tensor(IMAGENET_STD, device=self.device).view(1, 3, 1, 1)

    def to(self, device: torch.device | str) -> 'BaseDepthModel':
        """Move the network to ``device`` (in place) and return self."""
        self.device = torch.device(device)
        self.network.to(self.device)
        self._mean, self._std = self._mean.to(self.device), self._std.to(self.device)
        return self

    #: Layers that compute in float32 under any autocast (their weights stay float32).
    float32_layers: tuple[str, ...] = ()

    #: Whether the decoder's frozen weights are held in a reduced compute precision
    #: (hold_weights): the models whose float32 layers are named (float32_layers).
    holds_weights = False

    def hold_weights(self, dtype: torch.dtype, with_encoder: bool) -> list[str]:
        """
        Hold the decoder's frozen weights in ``dtype``, the encoder's too with ``with_encoder``.

        Once per model (see precision.py); returns the layers cast. The encoder's features are
        then kept in ``dtype`` too, so the decoder's activations stay in one precision from its
        first layer on. A model already held in another precision is refused: the completers
        that share it would compute in a precision they were not configured for.
        """
        wanted = dtype if self.holds_weights else torch.float32
        if self.held_dtype not in (torch.float32, wanted):
            raise ConfigError(f"this model's frozen weights are held in {self.held_dtype} by "
                              'another completer; load the model again for this one',
                              field='dtype')
        if wanted == torch.float32:
            return []
        prefixes = self.decoder_prefixes + (self.encoder_prefixes if with_encoder else ())
        held = hold_frozen_weights(self.network, prefixes, dtype, self.float32_layers)
        self.held_dtype = dtype
        return held

    def _features(self, features: Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
        """Return copies of encoder features in the held precision (plain tensors)."""
        return tuple(f.to(self.held_dtype, copy=True) for f in features)

    def _image(self, rgb: np.ndarray) -> torch.Tensor:
        """Return an (H, W, 3) uint8 RGB image as (1, 3, H, W) floats in [0, 1] on the device."""
        check_rgb_image(rgb)
        image = to_device(rgb, self.device)
        return image.permute(2, 0, 1)[None].to(torch.float32) / 255.0

    def _normalize(self, image: torch.Tensor) -> torch.Tensor:
        return (image - self._mean) / self._std

    @torch.no_grad()
    def predict(self, rgb: np.ndarray, processing_size: int | None = None,
                intrinsics: np.ndarray | None = None) -> np.ndarray:
        """Return the raw (H, W) prediction for one image (its K, for models that take one)."""
        pixel_values = self.preprocess(rgb, processing_size)
        with autocast(self.device, self.held_dtype):  # weights held in it compute in it
            encoded = self.encode(pixel_values, rgb.shape[:2], intrinsics)
            prediction = self.decode(encoded).float()
        return resize_prediction(prediction, rgb.shape[:2])[0].cpu().numpy()


class DepthModel(BaseDepthModel):
    """A Depth Anything V2 network with the encoder/decoder split the method needs."""

    #: The decoder is transformers' DPT: the sparse head and tail strips apply to it.
    dpt_decoder = True
    #: Depth Anything V2 has no confidence output.
    has_confidence = False
    encoder_prefixes = ENCODER_PREFIXES
    decoder_prefixes = DECODER_PREFIXES
    float32_layers = ('head.conv2', 'head.conv3')  # head_output
    holds_weights = True
    #: Runs the backbone for ``encode`` instead of PyTorch (engine/encoder_backends.py).
    encoder_runner = None
    #: Whether encoder_backends can export the backbone (transformers' DINOv2 only).
    encoder_exports = True

    def __init__(self, network: torch.nn.Module, device: torch.device | str = 'cpu',
                 source: str = '', is_demo_prior: bool = False, warning: str = '') -> None:
        super().__init__(network, device, source, is_demo_prior, warning)
        config = network.config
        self.patch_size = int(config.patch_size)
        self.prediction_space = (PredictionSpace.DEPTH if config.depth_estimation_type == 'metric'
                                 else PredictionSpace.DISPARITY)

    def preprocess(self, rgb: np.ndarray, processing_size: int | None) -> torch.Tensor:
        """Turn an (H, W, 3) uint8 RGB image into normalized (1, 3, h, w) network input."""
        image = self._image(rgb)
        height, width = rgb.shape[:2]
        size = processing_shape(height, width, processing_size, self.patch_size)
        if size != (height, width):
            downscale = size[0] < height or size[1] < width
            image = F.interpolate(image, size=size, mode='bicubic', align_corners=False,
                                  antialias=downscale).clamp_(0.0, 1.0)
        return self._normalize(image)

    def _patch_grid(self, pixel_values: torch.Tensor) -> tuple[int, int]:
        return (pixel_values.shape[-2] // self.patch_size,
                pixel_values.shape[-1] // self.patch_size)

    def backbone_features(self, pixel_values: torch.Tensor) -> Sequence[torch.Tensor]:
        """Return the backbone's token sequences the decoder reads (class token first)."""
        return self.network.backbone(pixel_values).feature_maps

    def encoded_image(self, features: Sequence[torch.Tensor], pixel_values: torch.Tensor,
                      input_size: tuple[int, int],
                      intrinsics: np.ndarray | None) -> EncodedImage:
        """Wrap one image's features (held precision already) with what its decode needs."""
        return EncodedImage(tuple(features), self._patch_grid(pixel_values), input_size,
                            intrinsics)

    def encode(self, pixel_values: torch.Tensor, input_size: tuple[int, int],
               intrinsics: np.ndarray | None = None) -> EncodedImage:
        """Run the backbone once, outside autograd, and keep its features (K is unused)."""
        with torch.inference_mode():
            features = (self.backbone_features(pixel_values)
                        if self.encoder_runner is None else self.encoder_runner(pixel_values))
        # Inference tensors cannot be saved for backward; plain copies can feed the decoder.
        return self.encoded_image(self._features(features), pixel_values, input_size,
                                  intrinsics)

    def encode_batch(self, pixel_values: Sequence[torch.Tensor],
                     input_sizes: Sequence[tuple[int, int]],
                     intrinsics: Sequence[np.ndarray | None]) -> list[EncodedImage]:
        """
        Encode images of one network input shape in one backbone pass (K is unused).

        Each image's features are its own contiguous copy: a frame's decoder passes then run
        exactly as after :meth:`encode`.
        """
        with torch.inference_mode():
            features = self.backbone_features(torch.cat(list(pixel_values)))
        return [self.encoded_image(self._features([f[i:i + 1] for f in features]), values,
                                   size, camera)
                for i, (values, size, camera) in enumerate(zip(pixel_values, input_sizes,
                                                               intrinsics))]

    def encode_differentiable(self, pixel_values: torch.Tensor, input_size: tuple[int, int],
                              intrinsics: np.ndarray | None = None) -> EncodedImage:
        """Run the backbone with autograd (encoder adaptation and prompt tuning)."""
        features = self.backbone_features(pixel_values)
        return self.encoded_image(tuple(f.to(self.held_dtype) for f in features), pixel_values,
                                  input_size, intrinsics)

    def pooled(self, encoded: EncodedImage, scale: float) -> EncodedImage:
        """
        Return the features average-pooled to a patch grid ``scale`` times as large per side.

        The class token stays; the patch tokens are pooled on their grid. The decoder then
        runs at that grid, like on a smaller image but on this image's own features.
        """
        grid = tuple(max(1, round(side * scale)) for side in encoded.patch_grid)

        def pool(hidden: torch.Tensor) -> torch.Tensor:
            tokens = hidden[:, 1:].reshape(hidden.shape[0], *encoded.patch_grid, -1)
            tokens = F.adaptive_avg_pool2d(tokens.permute(0, 3, 1, 2), grid)
            return torch.cat([hidden[:, :1], tokens.flatten(2).transpose(1, 2)], 1)

        pixels = torch.empty(1, 3, grid[0] * self.patch_size, grid[1] * self.patch_size,
                             device='meta')  # the shape of an input of that grid
        return self.encoded_image(tuple(pool(hidden) for hidden in encoded.hidden_states),
                                  pixels, encoded.input_size, encoded.intrinsics)

    def head_input(self, encoded: EncodedImage, upsampled: torch.Tensor,
                   rows: tuple[int, int] | None = None) -> torch.Tensor:
        """
        Return the head's upsampled conv1 features as its output convolutions read them.

        Depth Anything V2 reads them as they are; a model that adds a constant map there (DA3's
        DualDPT) adds its ``rows`` [first, stop) of the processing resolution (all: None).
        """
        return upsampled

    def head_position_rows(self, encoded: EncodedImage) -> torch.Tensor | None:
        """Return the (h * w, C) constant the head adds at each processing pixel, or None."""
        return None

    def output_scale(self, encoded: EncodedImage) -> torch.Tensor | None:
        """Return the frame's factor on the head's output (DA3's metric focal term), or None."""
        return None

    def reassembled(self, encoded: EncodedImage, level: int, resize: bool = True) -> torch.Tensor:
        """
        Reassemble one backbone level into a feature map, as transformers' DPT neck does.

        Drops the class token, lays the patch tokens out on the patch grid (channels-last
        strides, free), and applies the level's 1x1 projection and, with ``resize``, its
        resampling to the level's resolution.
        """
        patch_h, patch_w = encoded.patch_grid
        tokens = encoded.hidden_states[level][:, 1:]
        grid = tokens.reshape(tokens.shape[0], patch_h, patch_w, -1).permute(0, 3, 1, 2)
        layer = self.network.neck.reassemble_stage.layers[level]
        # The projection's input is the frame's features: its frozen part is computed once.
        projected = frozen_base_output(layer.projection, grid, encoded.frozen_outputs,
                                       ('reassemble', level))
        constant = self.level_constant(encoded, level)
        if constant is not None:
            projected = projected + constant.to(projected.dtype)
        return layer.resize(projected) if resize else projected

    def level_constant(self, encoded: EncodedImage, level: int) -> torch.Tensor | None:
        """Return what a model adds to a level after its projection (DA3's UV embedding)."""
        return None

    def neck_inputs(self, encoded: EncodedImage, first_level: int = 0) -> list[torch.Tensor]:
        """Return the pyramid the fusion consumes (finest first), from ``first_level`` on."""
        convs = self.network.neck.convs
        return [convs[level](self.reassembled(encoded, level))
                for level in range(first_level, len(convs))]

    def decode_features(self, encoded: EncodedImage) -> list[torch.Tensor]:
        """Run the DPT neck: reassemble and fuse the features into a pyramid."""
        return fuse_features(self.network.neck.fusion_stage, self.neck_inputs(encoded))

    def decode(self, encoded: EncodedImage) -> torch.Tensor:
        """Run neck and head: the (1, h, w) prediction at processing resolution."""
        return self.scaled_output(encoded, head_output(self.network.head,
                                                       self.head_features(encoded)))

    def head_features(self, encoded: EncodedImage) -> torch.Tensor:
        """Return what the head's output convolutions read: conv1's output, upsampled."""
        head = self.network.head
        size = (encoded.patch_grid[0] * self.patch_size, encoded.patch_grid[1] * self.patch_size)
        features = head.conv1(self.decode_features(encoded)[head.head_in_index])
        upsampled = F.interpolate(features, size=size, mode='bilinear', align_corners=True)
        return self.head_input(encoded, upsampled)

    def scaled_output(self, encoded: EncodedImage, prediction: torch.Tensor) -> torch.Tensor:
        """Apply the frame's output factor (:meth:`output_scale`) to a head's output."""
        scale = self.output_scale(encoded)
        return prediction if scale is None else prediction * scale
