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

Input and output follow UniDepthV2's own inference (``UniDepthV2.infer``) step for step, so
its predictions match the official code: images wider or taller than its aspect-ratio range
are padded into it (zeros after normalization), the padded image is scaled into its training
pixel-count range (unless a ``processing_size`` is given) and K with it, and every output is
resized back to the padded size and the padding cut off, so predictions cover exactly the
input image at its resolution. One departure: the padded size is computed exactly, where the
official rule rounds one pixel short for some sizes (:func:`_paddings`; doc/design.md lists
where and why the package departs from the official code).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
import math
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from .config import UniDepthV2Config
from .network import CameraConditioning, UniDepthV2Network
from ..alignment import PredictionSpace
from ..model import BaseDepthModel, EncodedImage

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
    """
    How an image becomes the network input, as UniDepthV2's own inference does it.

    The image is padded (in its own pixels) to ``padded`` (height, width): ``paddings``
    (left, right, top, bottom) bring its aspect ratio into the training range; the padded image
    is then resized to ``network`` (multiples of the patch size). ``scale`` is the factor the
    camera matrix is scaled by.
    """

    image: tuple[int, int]
    padded: tuple[int, int]
    paddings: tuple[int, int, int, int]
    network: tuple[int, int]
    scale: float


def _paddings(height: int, width: int, ratio_bounds: tuple[float, float]
              ) -> tuple[tuple[int, int, int, int], tuple[int, int]]:
    """
    Return (left, right, top, bottom) padding and the padded size (UniDepthV2's rule, exact).

    An image within the aspect-ratio range is not padded; a wider one gets rows, a taller one
    columns, up to the range's bound: ``floor(width / high)`` rows or ``floor(height * low)``
    columns in all, as the official code. The official code computes the size of an image
    within the range too, as ``int(height * (width / height))``: two roundings, one pixel
    short for about 6 % of sizes (333x500), which gave a negative padding and a one-column
    prediction. Here the comparison and the sizes are exact (rational) arithmetic.
    """
    low, high = (Fraction(bound) for bound in ratio_bounds)
    ratio = Fraction(width, height)
    if ratio > high:  # too wide: rows of padding above and below
        padded_h = math.floor(width / high)
        top = (padded_h - height) // 2
        return (0, 0, top, padded_h - height - top), (padded_h, width)
    if ratio < low:  # too tall: columns of padding left and right
        padded_w = math.floor(height * low)
        left = (padded_w - width) // 2
        return (left, padded_w - width - left, 0, 0), (height, padded_w)
    return (0, 0, 0, 0), (height, width)


def _multiple(value: float, patch: int, ceil: bool) -> int:
    rounded = math.ceil(value / patch) if ceil else round(value / patch)
    return max(patch, int(rounded) * patch)


def processing_layout(height: int, width: int, processing_size: int | None,
                      config: UniDepthV2Config) -> ProcessingLayout:
    """
    Return the network input layout of an (height, width) image.

    Without ``processing_size``: UniDepthV2's inference rule, so that predictions match the
    official ``infer``: the padded image's pixel count is brought into ``config.pixel_bounds``
    (its training range), each side truncated and rounded up to a multiple of the patch, and K
    is scaled by that pixel-count factor. With ``processing_size``: the padded image's longer
    side becomes ``processing_size`` (to the nearest multiple of the patch), and K is scaled by
    the longer side's actual factor.
    """
    patch = config.patch_size
    paddings, padded = _paddings(height, width, config.ratio_bounds)
    if processing_size is None:
        pixels = padded[0] * padded[1]
        low, high = config.pixel_bounds
        scale = math.sqrt(min(high, max(low, pixels)) / pixels)
        network = (_multiple(int(padded[0] * scale), patch, ceil=True),
                   _multiple(int(padded[1] * scale), patch, ceil=True))
        return ProcessingLayout((height, width), padded, paddings, network, scale)
    factor = processing_size / max(padded)
    network = (_multiple(padded[0] * factor, patch, ceil=False),
               _multiple(padded[1] * factor, patch, ceil=False))
    longer = 0 if padded[0] >= padded[1] else 1
    return ProcessingLayout((height, width), padded, paddings, network,
                            network[longer] / padded[longer])


def layout_of_input(input_size: tuple[int, int], network: tuple[int, int],
                    config: UniDepthV2Config) -> ProcessingLayout:
    """Recover the layout :func:`processing_layout` gave an input of this network size."""
    layout = processing_layout(*input_size, None, config)
    if layout.network == tuple(network):
        return layout
    # A processing_size was given: its factor is the longer side's (see processing_layout).
    longer = 0 if layout.padded[0] >= layout.padded[1] else 1
    return ProcessingLayout(layout.image, layout.padded, layout.paddings, tuple(network),
                            network[longer] / layout.padded[longer])


@dataclass(frozen=True)
class UniDepthFeatures(EncodedImage):
    """Encoder features plus the frame's camera conditioning and the image's place."""

    camera: CameraConditioning | None = None
    layout: ProcessingLayout | None = None


class UniDepthModel(BaseDepthModel):
    """
    A UniDepthV2 network with the encoder/decoder split the method needs.

    Same interface as :class:`~lrda_ros.engine.model.DepthModel`.
    """

    #: The decoder is not Depth Anything's DPT: the sparse head and tail strips do not apply.
    dpt_decoder = False
    has_confidence = True
    prediction_space = PredictionSpace.DEPTH
    encoder_prefixes = ENCODER_PREFIXES
    decoder_prefixes = DECODER_PREFIXES

    def __init__(self, network: UniDepthV2Network, device: torch.device | str = 'cpu',
                 source: str = '', is_demo_prior: bool = False, warning: str = '') -> None:
        super().__init__(network, device, source, is_demo_prior, warning)
        self.config: UniDepthV2Config = network.config
        self.patch_size = self.config.patch_size

    def preprocess(self, rgb: np.ndarray, processing_size: int | None) -> torch.Tensor:
        """Turn an (H, W, 3) uint8 RGB image into normalized, padded (1, 3, h, w) input."""
        layout = processing_layout(*rgb.shape[:2], processing_size, self.config)
        image = self._normalize(self._image(rgb))
        left, right, top, bottom = layout.paddings
        if left or right or top or bottom:  # zeros after normalization, as UniDepthV2
            image = F.pad(image, (left, right, top, bottom), value=0.0)
        if layout.network != layout.padded:
            # Bilinear without antialiasing, as UniDepthV2's own preprocessing.
            image = F.interpolate(image, size=layout.network, mode='bilinear',
                                  align_corners=False)
        return image

    def _network_intrinsics(self, intrinsics: np.ndarray | None,
                            layout: ProcessingLayout) -> torch.Tensor | None:
        """Move an input image's K to the network input (padding offset, then resize)."""
        if intrinsics is None:
            return None
        matrix = torch.tensor(np.asarray(intrinsics, dtype=np.float64), dtype=torch.float32,
                              device=self.device)
        # As UniDepthV2's inference: shift by the padding, then one scale for both axes.
        matrix[0, 2] += layout.paddings[0]
        matrix[1, 2] += layout.paddings[2]
        matrix[:2] *= layout.scale
        matrix[2] = torch.tensor([0.0, 0.0, 1.0], device=self.device)
        return matrix[None]

    def _encode(self, pixel_values: torch.Tensor, input_size: tuple[int, int],
                intrinsics: np.ndarray | None) -> UniDepthFeatures:
        size = tuple(pixel_values.shape[-2:])
        layout = layout_of_input(input_size, size, self.config)
        features, class_tokens = self.network.encode(pixel_values)
        camera = self.network.camera(class_tokens, size,
                                     self._network_intrinsics(intrinsics, layout))
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
    def _to_image(prediction: torch.Tensor, layout: ProcessingLayout) -> torch.Tensor:
        """
        Bring a (B, 1, h, w) network output to the input image: (B, H, W).

        As UniDepthV2's inference: bilinear (corners not aligned) to the padded image size,
        then the padding cut off; the engine's own resize is then a no-op.
        """
        prediction = F.interpolate(prediction, size=layout.padded, mode='bilinear',
                                   align_corners=False)
        left, right, top, bottom = layout.paddings
        return prediction[:, 0, top:layout.padded[0] - bottom, left:layout.padded[1] - right]

    def decode(self, encoded: UniDepthFeatures) -> torch.Tensor:
        """Run the decoder: the (1, H, W) metric depth of the input image."""
        trunk = self.network.trunk(list(encoded.hidden_states), encoded.camera)
        return self._to_image(self.network.depth(trunk, encoded.camera), encoded.layout)

    def decode_with_confidence(self, encoded: UniDepthFeatures
                               ) -> tuple[torch.Tensor, torch.Tensor]:
        """Run the decoder once for the (1, H, W) depth and confidence of the input image."""
        trunk = self.network.trunk(list(encoded.hidden_states), encoded.camera)
        return (self._to_image(self.network.depth(trunk, encoded.camera), encoded.layout),
                self._to_image(self.network.confidence(trunk, encoded.camera), encoded.layout))
