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
The published Depth Anything 3 networks, as the official ``depth_anything_3/configs/*.yaml``.

Each preset names the DINOv2 size, the blocks the head reads, where RoPE, QK-norm and the
alternating (view-local / global) attention start, whether the head reads the local and global
tokens side by side (``cat_token``), and the head: DualDPT (depth + confidence, and a ray branch
this package does not run) or DPT (depth, and a sky head).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import ModelError

#: ViT sizes of the DINOv2 backbones: width, depth, heads.
VIT_SIZES = {'vits': (384, 12, 6), 'vitb': (768, 12, 12), 'vitl': (1024, 24, 16)}

#: The official metric conversion: metres = network output * focal length (pixels of the
#: network input, mean of fx and fy) / 300 (``depth_anything_3.utils.alignment``,
#: ``apply_metric_scaling``; the DA3METRIC-LARGE model card gives the same formula).
METRIC_FOCAL_DIVISOR = 300.0


class DA3ConfigError(ModelError):
    """A Depth Anything 3 preset or checkpoint the package cannot build."""


@dataclass(frozen=True)
class DA3Config:
    """One Depth Anything 3 network (the fields of its official yaml)."""

    name: str
    vit: str
    out_layers: tuple[int, int, int, int]
    alt_start: int
    qknorm_start: int
    rope_start: int
    cat_token: bool
    #: 'dualdpt' (any-view models) or 'dpt' (metric and mono models).
    head: str
    features: int
    out_channels: tuple[int, int, int, int]
    #: Whether the depth is metric (given the camera's focal length) or relative.
    metric: bool
    #: Licence of the published weights (model card).
    licence: str
    #: Blocks of the backbone (fewer than the ViT's own for tests' shallow networks).
    depth: int | None = None
    patch_size: int = 14
    rope_frequency: float = 100.0

    @property
    def embed_dim(self) -> int:
        return VIT_SIZES[self.vit][0]

    @property
    def num_blocks(self) -> int:
        return VIT_SIZES[self.vit][1] if self.depth is None else self.depth

    @property
    def num_heads(self) -> int:
        return VIT_SIZES[self.vit][2]

    @property
    def head_dim_in(self) -> int:
        """Width of the tokens the head reads: local and global side by side with cat_token."""
        return self.embed_dim * (2 if self.cat_token else 1)

    @property
    def has_confidence(self) -> bool:
        return self.head == 'dualdpt'

    @property
    def has_sky(self) -> bool:
        return self.head == 'dpt'

    @property
    def position_embedding(self) -> bool:
        """Whether the head adds a UV sine embedding (DualDPT does; DPT's default is off)."""
        return self.head == 'dualdpt'

    def check(self) -> None:
        """Raise DA3ConfigError for a preset that does not describe a buildable network."""
        if self.vit not in VIT_SIZES:
            raise DA3ConfigError(f'{self.name}: unknown ViT {self.vit!r}')
        if self.head not in ('dualdpt', 'dpt'):
            raise DA3ConfigError(f'{self.name}: unknown head {self.head!r}')
        if max(self.out_layers) >= self.num_blocks:
            raise DA3ConfigError(f'{self.name}: out_layers {self.out_layers} need more than '
                                 f'{self.num_blocks} blocks')


def _any_view(name: str, vit: str, out_layers, start: int, features: int, out_channels,
              licence: str) -> DA3Config:
    return DA3Config(name, vit, tuple(out_layers), start, start, start, True, 'dualdpt',
                     features, tuple(out_channels), False, licence)


def _mono_or_metric(name: str, metric: bool, licence: str) -> DA3Config:
    return DA3Config(name, 'vitl', (4, 11, 17, 23), -1, -1, -1, False, 'dpt', 256,
                     (256, 512, 1024, 1024), metric, licence)


#: The presets, as the official configs (``depth_anything_3/configs/<name>.yaml``, 0.1.1).
PRESETS = {preset.name: preset for preset in (
    _any_view('da3-small', 'vits', (5, 7, 9, 11), 4, 64, (48, 96, 192, 384), 'Apache-2.0'),
    _any_view('da3-base', 'vitb', (5, 7, 9, 11), 4, 128, (96, 192, 384, 768), 'Apache-2.0'),
    _any_view('da3-large', 'vitl', (11, 15, 19, 23), 8, 256, (256, 512, 1024, 1024),
              'CC-BY-NC-4.0'),
    _mono_or_metric('da3metric-large', True, 'Apache-2.0'),
    _mono_or_metric('da3mono-large', False, 'Apache-2.0'),
)}

#: Hub repositories of the presets (model cards at huggingface.co/depth-anything).
HUB_IDS = {
    'depth-anything/da3-small': 'da3-small',
    'depth-anything/da3-base': 'da3-base',
    'depth-anything/da3-large': 'da3-large',
    'depth-anything/da3metric-large': 'da3metric-large',
    'depth-anything/da3mono-large': 'da3mono-large',
}


def preset(name: str) -> DA3Config:
    """Return the preset of an official model name (``da3-small``, ...)."""
    key = name.strip().lower()
    if key not in PRESETS:
        raise DA3ConfigError(f'{name!r} is no Depth Anything 3 model this package builds; '
                             f'expected one of {", ".join(PRESETS)}')
    return PRESETS[key]
