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
UniDepthV2 behind the engine's model interface (the one :class:`~..model.DepthModel` has).

Per frame, :meth:`UniDepthModel.encode` runs the encoder and the camera conditioning once
(rays from the given intrinsics, else from the camera head); every optimization step runs
only the decoder (:meth:`decode`). The output is metric depth (metres along the optical
axis), so the alignment fits scale and shift in depth space. The confidence head is
evaluated only for the frame's final dense prediction (:meth:`decode_with_confidence`).

Input layout follows UniDepthV2's training: images wider or taller than its aspect-ratio
range are padded into it (zeros after normalization), and without a ``processing_size`` the
image is scaled into its training pixel-count range; the padding is cropped off every
prediction, so predictions cover exactly the input image as the engine expects.
"""

from __future__ import annotations

from dataclasses import dataclass
import math
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from .config import UniDepthV2Config
from .network import CameraConditioning, UniDepthV2Network
from ..alignment import PredictionSpace
from ..model import EncodedImage, IMAGENET_MEAN, IMAGENET_STD, resize_prediction

#: LoRA targets of the method (decoder-only): every Linear/Conv2d on the path from the
#: encoder features to the depth. The camera head and its token adapter are left out (the
#: camera is fixed per frame: given, or predicted once with the encoder), and so is the
#: confidence branch, which does not reach the depth. (ConvTranspose2d ``process_features``
#: is matched too but peft cannot adapt it; full decoder fine-tuning trains it.)
DECODER_PREFIXES = (
    'pixel_decoder.input_adapter.', 'pixel_decoder.depth_layer.to_latents',
    'pixel_decoder.depth_layer.prompt_camera.', 'pixel_decoder.depth_layer.process_features.',
    'pixel_decoder.depth_layer.ups.', 'pixel_decoder.depth_layer.depth_mlp.',
    'pixel_decoder.depth_layer.to_depth_')
ENCODER_PREFIXES = ('pixel_encoder.',)


@dataclass(frozen=True)
class ProcessingLayout:
    """Where the image sits in the network input: (height, width) and padding offsets."""

    image: tuple[int, int]
    padded: tuple[int, int]
    top: int = 0
    left: int = 0


def _multiple(value: float, patch: int, ceil: bool = False) -> int:
    rounded = math.ceil(value / patch) if ceil else round(value / patch)
    return max(patch, int(rounded) * patch)


def processing_layout(height: int, width: int, processing_size: int | None,
                      config: UniDepthV2Config) -> ProcessingLayout:
    """
    Return the network input layout of an (height, width) image.

    The padded input has the aspect ratio clamped into ``config.ratio_bounds`` and sides
    that are multiples of the patch size; ``processing_size`` caps its longer side, else its
    pixel count is brought into ``config.pixel_bounds`` (UniDepthV2's training range).
    """
    patch = config.patch_size
    low, high = config.ratio_bounds
    ratio = width / height
    padded_h, padded_w = float(height), float(width)
    if ratio > high:
        padded_h = width / high
    elif ratio < low:
        padded_w = height * low
    if processing_size is None:
        pixels = padded_h * padded_w
        target = min(max(pixels, config.pixel_bounds[0]), config.pixel_bounds[1])
        scale = math.sqrt(target / pixels)
    else:
        scale = processing_size / max(padded_h, padded_w)
    if ratio > high:  # too wide: full width, rows of padding above and below
        w = _multiple(width * scale, patch)
        h = max(1, round(height * w / width))
        padded = (max(_multiple(h, patch, ceil=True), _multiple(w / high, patch)), w)
        return ProcessingLayout((h, w), padded, top=(padded[0] - h) // 2)
    if ratio < low:  # too tall: full height, columns of padding left and right
        h = _multiple(height * scale, patch)
        w = max(1, round(width * h / height))
        padded = (h, max(_multiple(w, patch, ceil=True), _multiple(h * low, patch)))
        return ProcessingLayout((h, w), padded, left=(padded[1] - w) // 2)
    size = (_multiple(height * scale, patch), _multiple(width * scale, patch))
    return ProcessingLayout(size, size)


def layout_of_input(input_size: tuple[int, int], padded: tuple[int, int],
                    config: UniDepthV2Config) -> ProcessingLayout:
    """Recover the layout :func:`processing_layout` gave an input of this padded size."""
    height, width = input_size
    low, high = config.ratio_bounds
    ratio = width / height
    if ratio > high:
        h = max(1, round(height * padded[1] / width))
        return ProcessingLayout((h, padded[1]), padded, top=(padded[0] - h) // 2)
    if ratio < low:
        w = max(1, round(width * padded[0] / height))
        return ProcessingLayout((padded[0], w), padded, left=(padded[1] - w) // 2)
    return ProcessingLayout(padded, padded)


@dataclass(frozen=True)
class UniDepthFeatures(EncodedImage):
    """Encoder features plus the frame's camera conditioning and the image's place."""

    camera: CameraConditioning | None = None
    layout: ProcessingLayout | None = None


class UniDepthModel:
    """
    A UniDepthV2 network with the encoder/decoder split the method needs.

    Same interface as :class:`~lrda_ros.engine.model.DepthModel` (``source``,
    ``is_demo_prior`` and ``warning`` say where it came from).
    """

    #: The decoder is not Depth Anything's DPT: the sparse head and tail strips do not apply.
    dpt_decoder = False
    has_confidence = True
    prediction_space = PredictionSpace.DEPTH
    encoder_prefixes = ENCODER_PREFIXES
    decoder_prefixes = DECODER_PREFIXES

    def __init__(self, network: UniDepthV2Network, device: torch.device | str = 'cpu',
                 source: str = '', is_demo_prior: bool = False, warning: str = '') -> None:
        self.source, self.is_demo_prior, self.warning = source, is_demo_prior, warning
        self.network = network.eval().requires_grad_(False).to(device=device,
                                                               dtype=torch.float32)
        self.device = torch.device(device)
        self.config: UniDepthV2Config = network.config
        self.patch_size = self.config.patch_size
        self._mean = torch.tensor(IMAGENET_MEAN, device=self.device).view(1, 3, 1, 1)
        self._std = torch.tensor(IMAGENET_STD, device=self.device).view(1, 3, 1, 1)

    def to(self, device: torch.device | str) -> 'UniDepthModel':
        """Move the network to ``device`` (in place) and return self."""
        self.device = torch.device(device)
        self.network.to(self.device)
        self._mean, self._std = self._mean.to(self.device), self._std.to(self.device)
        return self

    def preprocess(self, rgb: np.ndarray, processing_size: int | None) -> torch.Tensor:
        """Turn an (H, W, 3) uint8 RGB image into normalized, padded (1, 3, h, w) input."""
        if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
            raise ValueError(f'expected an (H, W, 3) uint8 RGB image, got shape {rgb.shape} '
                             f'dtype {rgb.dtype}')
        layout = processing_layout(*rgb.shape[:2], processing_size, self.config)
        image = torch.from_numpy(np.ascontiguousarray(rgb)).to(self.device)
        image = image.permute(2, 0, 1)[None].to(torch.float32) / 255.0
        image = (image - self._mean) / self._std
        if layout.image != tuple(rgb.shape[:2]):
            # Bilinear without antialiasing, as UniDepthV2's own preprocessing.
            image = F.interpolate(image, size=layout.image, mode='bilinear',
                                  align_corners=False)
        bottom = layout.padded[0] - layout.image[0] - layout.top
        right = layout.padded[1] - layout.image[1] - layout.left
        if bottom or right or layout.top or layout.left:
            image = F.pad(image, (layout.left, right, layout.top, bottom), value=0.0)
        return image

    def _network_intrinsics(self, intrinsics: np.ndarray | None, input_size: tuple[int, int],
                            layout: ProcessingLayout) -> torch.Tensor | None:
        """Scale an input image's K to the network input (resize, then padding offset)."""
        if intrinsics is None:
            return None
        matrix = torch.tensor(np.asarray(intrinsics, dtype=np.float64), dtype=torch.float32,
                              device=self.device)
        scale_y, scale_x = (layout.image[0] / input_size[0], layout.image[1] / input_size[1])
        matrix[0, :] *= scale_x
        matrix[1, :] *= scale_y
        matrix[0, 2] += layout.left
        matrix[1, 2] += layout.top
        matrix[2] = torch.tensor([0.0, 0.0, 1.0], device=self.device)
        return matrix[None]

    def _encode(self, pixel_values: torch.Tensor, input_size: tuple[int, int],
                intrinsics: np.ndarray | None) -> UniDepthFeatures:
        size = tuple(pixel_values.shape[-2:])
        layout = layout_of_input(input_size, size, self.config)
        features, class_tokens = self.network.encode(pixel_values)
        camera = self.network.camera(class_tokens, size,
                                     self._network_intrinsics(intrinsics, input_size, layout))
        return UniDepthFeatures(tuple(features), (size[0] // self.patch_size,
                                                  size[1] // self.patch_size),
                                tuple(input_size), intrinsics, camera, layout)

    def encode(self, pixel_values: torch.Tensor, input_size: tuple[int, int],
               intrinsics: np.ndarray | None = None) -> UniDepthFeatures:
        """
        Run the encoder and the camera conditioning once, outside autograd.

        ``intrinsics``: the input image's 3x3 K (pixels), or None to let the camera head
        predict it.
        """
        with torch.no_grad():
            return self._encode(pixel_values, input_size, intrinsics)

    def encode_batch(self, pixel_values: Sequence[torch.Tensor],
                     input_sizes: Sequence[tuple[int, int]],
                     intrinsics: Sequence[np.ndarray | None]) -> list[UniDepthFeatures]:
        """
        Encode images one by one (the interface of DepthModel.encode_batch).

        Each image's camera conditioning and padding layout are its own, so images are not
        stacked into one pass here.
        """
        return [self.encode(values, size, camera)
                for values, size, camera in zip(pixel_values, input_sizes, intrinsics)]

    def encode_differentiable(self, pixel_values: torch.Tensor, input_size: tuple[int, int],
                              intrinsics: np.ndarray | None = None) -> UniDepthFeatures:
        """Run the encoder (and camera head, without K) with autograd: encoder scopes."""
        return self._encode(pixel_values, input_size, intrinsics)

    @staticmethod
    def _crop(prediction: torch.Tensor, layout: ProcessingLayout) -> torch.Tensor:
        """Cut the (B, 1, H, W) prediction to the image: (B, h, w)."""
        rows = slice(layout.top, layout.top + layout.image[0])
        cols = slice(layout.left, layout.left + layout.image[1])
        return prediction[:, 0, rows, cols]

    def decode(self, encoded: UniDepthFeatures) -> torch.Tensor:
        """Run the decoder: the (1, h, w) metric depth at processing resolution."""
        trunk = self.network.trunk(list(encoded.hidden_states), encoded.camera)
        return self._crop(self.network.depth(trunk, encoded.camera), encoded.layout)

    def decode_with_confidence(self, encoded: UniDepthFeatures
                               ) -> tuple[torch.Tensor, torch.Tensor]:
        """Run the decoder once for (1, h, w) depth and confidence at processing resolution."""
        trunk = self.network.trunk(list(encoded.hidden_states), encoded.camera)
        return (self._crop(self.network.depth(trunk, encoded.camera), encoded.layout),
                self._crop(self.network.confidence(trunk, encoded.camera), encoded.layout))

    @torch.no_grad()
    def predict(self, rgb: np.ndarray, processing_size: int | None = None,
                intrinsics: np.ndarray | None = None) -> np.ndarray:
        """Return the (H, W) metric depth for one image (its K, when known)."""
        pixel_values = self.preprocess(rgb, processing_size)
        encoded = self.encode(pixel_values, rgb.shape[:2], intrinsics)
        return resize_prediction(self.decode(encoded), rgb.shape[:2])[0].cpu().numpy()
