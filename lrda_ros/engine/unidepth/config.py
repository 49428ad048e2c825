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
UniDepthV2's architecture hyperparameters, and their official ``config.json`` layout.

The official repositories (``lpiccinelli/unidepth-v2-vit{s,b,l}14``) ship the training
configuration: ``model`` (decoder and encoder settings) and ``data`` (the image shapes the
model was trained on). Only what shapes the network or its input is read here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from ...errors import check_fields, ModelError

#: DINOv2 encoder of each official size: (width, blocks, heads, 1-based blocks read out).
ENCODERS = {
    'vits': (384, 12, 6, (3, 6, 9, 12)),
    'vitb': (768, 12, 12, (3, 6, 9, 12)),
    'vitl': (1024, 24, 16, (6, 12, 18, 24)),
}
#: Decoder width and output width of each official size.
DECODERS = {'vits': (256, 32), 'vitb': (384, 48), 'vitl': (512, 64)}
#: Hugging Face hub id of each official size.
HUB_IDS = {f'lpiccinelli/unidepth-v2-{variant}14': variant for variant in ENCODERS}


class UniDepthConfigError(ModelError):
    """A UniDepthV2 configuration or checkpoint does not describe a network this code builds."""


@dataclass(frozen=True)
class UniDepthV2Config:
    """
    Everything that shapes a UniDepthV2 network and its input.

    Defaults are ViT-S (``lpiccinelli/unidepth-v2-vits14``); :meth:`official` gives each
    official size.
    """

    # --- encoder (DINOv2 ViT with layer scale, no register tokens) ---
    embed_dim: int = 384
    encoder_depth: int = 12
    encoder_heads: int = 6
    #: 1-based indices of the blocks whose (normalized) tokens feed the decoder.
    output_blocks: tuple[int, ...] = (3, 6, 9, 12)
    patch_size: int = 14
    #: Side of the square image the position embeddings were trained at (a 37 x 37 grid).
    image_size: int = 518
    mlp_ratio: int = 4
    # --- decoder ---
    hidden_dim: int = 256
    decoder_heads: int = 8
    expansion: int = 4
    #: Residual convolution units per upsampling stage (one stage per entry).
    decoder_depths: tuple[int, ...] = (2, 2, 2)
    out_dim: int = 32
    kernel_size: int = 3
    layer_scale: float = 1.0
    # --- input shapes the model was trained on ---
    #: Width / height range of training images; wider or taller inputs are padded into it.
    ratio_bounds: tuple[float, float] = (0.5, 2.5)
    #: Pixel-count range of training images; the default processing size scales into it.
    pixel_bounds: tuple[int, int] = (200_000, 600_000)
    #: Which official size this is ('' for another shape, e.g. a test network).
    variant: str = field(default='vits', compare=False)

    def __post_init__(self) -> None:
        """Reject shapes no network can have, naming the field."""
        low_ratio, high_ratio = self.ratio_bounds
        low_pixels, high_pixels = self.pixel_bounds
        check_fields([
            (self.embed_dim % self.encoder_heads == 0, 'embed_dim',
             f'embed_dim {self.embed_dim} is not a multiple of encoder_heads '
             f'{self.encoder_heads}'),
            (self.hidden_dim % self.decoder_heads == 0, 'hidden_dim',
             f'hidden_dim {self.hidden_dim} is not a multiple of decoder_heads '
             f'{self.decoder_heads}'),
            (all(1 <= block <= self.encoder_depth for block in self.output_blocks),
             'output_blocks', f'output_blocks {self.output_blocks} must be blocks 1 .. '
             f'{self.encoder_depth} of the encoder'),
            (len(self.decoder_depths) >= 1 and min(self.decoder_depths) >= 1, 'decoder_depths',
             f'decoder_depths {self.decoder_depths} needs at least one unit per stage'),
            (self.patch_size >= 1 and self.kernel_size % 2 == 1, 'kernel_size',
             f'patch_size {self.patch_size} must be >= 1 and kernel_size {self.kernel_size} odd'),
            (0 < low_ratio <= high_ratio, 'ratio_bounds',
             f'ratio_bounds {self.ratio_bounds} must be (low, high) with 0 < low <= high'),
            (0 < low_pixels <= high_pixels, 'pixel_bounds',
             f'pixel_bounds {self.pixel_bounds} must be (low, high) with 0 < low <= high'),
        ], 'UniDepthV2Config: ', UniDepthConfigError)

    @classmethod
    def official(cls, variant: str) -> 'UniDepthV2Config':
        """Return the configuration of an official size: 'vits', 'vitb' or 'vitl'."""
        if variant not in ENCODERS:
            raise UniDepthConfigError(f'unknown UniDepthV2 size {variant!r}; expected one of '
                                      f'{sorted(ENCODERS)}')
        width, depth, heads, blocks = ENCODERS[variant]
        hidden, out = DECODERS[variant]
        return cls(embed_dim=width, encoder_depth=depth, encoder_heads=heads,
                   output_blocks=blocks, hidden_dim=hidden, out_dim=out, variant=variant)

    @classmethod
    def from_official(cls, data: dict) -> 'UniDepthV2Config':
        """
        Read an official ``config.json`` (the training configuration).

        Accepts the configuration itself or wrapped in ``{"config": ...}`` (how the hub
        mixin may store an ``__init__`` argument).
        """
        if 'model' not in data and isinstance(data.get('config'), dict):
            data = data['config']
        try:
            model = data['model']
            name = model.get('name', 'UniDepthV2')
            if name != 'UniDepthV2':
                raise UniDepthConfigError(f'config describes {name!r}, not UniDepthV2')
            encoder, decoder = model['pixel_encoder'], model['pixel_decoder']
            variant = _variant_of_encoder_name(encoder['name'])
            base = cls.official(variant)
            constraints = data.get('data', {}).get('augmentations', {}).get(
                'shape_constraints', {})
            return replace(
                base,
                output_blocks=tuple(encoder.get('output_idx', base.output_blocks)),
                hidden_dim=int(decoder['hidden_dim']),
                decoder_depths=tuple(int(d) for d in decoder.get('depths', base.decoder_depths)),
                out_dim=int(decoder.get('out_dim', base.out_dim)),
                kernel_size=int(decoder.get('kernel_size', 7)),
                decoder_heads=int(model.get('num_heads', base.decoder_heads)),
                expansion=int(model.get('expansion', base.expansion)),
                layer_scale=float(model.get('layer_scale', base.layer_scale)),
                ratio_bounds=tuple(constraints.get('ratio_bounds', base.ratio_bounds)),
                pixel_bounds=(int(constraints.get('pixels_min', base.pixel_bounds[0])),
                              int(constraints.get('pixels_max', base.pixel_bounds[1]))),
                **_encoder_override(encoder))
        except (KeyError, TypeError, ValueError) as error:
            raise UniDepthConfigError(f'not a UniDepthV2 configuration ({type(error).__name__}: '
                                      f'{error})') from error

    def to_official(self) -> dict:
        """Return this configuration in the official ``config.json`` layout."""
        encoder = {'name': f'dinov2_{self.variant or "vits"}14',
                   'output_idx': list(self.output_blocks), 'use_norm': True,
                   'num_register_tokens': 0, 'stacking_fn': 'last', 'pretrained': None}
        if not self.variant:  # a shape of no official size: spell the encoder out
            encoder.update(embed_dim=self.embed_dim, depth=self.encoder_depth,
                           num_heads=self.encoder_heads, img_size=self.image_size)
        return {
            'model': {
                'name': 'UniDepthV2', 'num_heads': self.decoder_heads,
                'expansion': self.expansion, 'layer_scale': self.layer_scale,
                'pixel_decoder': {'name': 'Decoder', 'hidden_dim': self.hidden_dim,
                                  'dropout': 0.0, 'depths': list(self.decoder_depths),
                                  'out_dim': self.out_dim, 'kernel_size': self.kernel_size},
                'pixel_encoder': encoder,
            },
            'data': {'augmentations': {'shape_constraints': {
                'ratio_bounds': list(self.ratio_bounds), 'pixels_min': self.pixel_bounds[0],
                'pixels_max': self.pixel_bounds[1], 'shape_mult': self.patch_size}}},
        }

    def to_dict(self) -> dict:
        """Return the fields as a plain dict (for logs)."""
        return asdict(self)


def _variant_of_encoder_name(name: str) -> str:
    """Map 'dinov2_vits14' (the official encoder names) to 'vits'."""
    for variant in ENCODERS:
        if name == f'dinov2_{variant}14':
            return variant
    raise UniDepthConfigError(f'encoder {name!r} is not a DINOv2 ViT-S/B/L/14 '
                              "(UniDepthV2's ConvNeXt variants are not supported)")


def _encoder_override(encoder: dict) -> dict:
    """Return the encoder shape a configuration spells out (test networks), else nothing."""
    keys = {'embed_dim': 'embed_dim', 'depth': 'encoder_depth', 'num_heads': 'encoder_heads',
            'img_size': 'image_size'}
    spelled = {field_name: int(encoder[key]) for key, field_name in keys.items()
               if key in encoder}
    return {**spelled, 'variant': ''} if spelled else {}


def config_from_state_dict(state_dict: dict) -> UniDepthV2Config:
    """
    Infer the configuration of an official checkpoint from its tensor shapes.

    For weights without their ``config.json``: the encoder width names the official size,
    and the decoder's shapes are checked against it.
    """
    try:
        width = int(state_dict['pixel_encoder.cls_token'].shape[-1])
        hidden = int(state_dict['pixel_decoder.input_adapter.input_adapters.0.weight'].shape[0])
    except KeyError as error:
        raise UniDepthConfigError(f'not a UniDepthV2 state dict: no {error}') from error
    variant = next((name for name, spec in ENCODERS.items() if spec[0] == width), None)
    if variant is None:
        raise UniDepthConfigError(f'encoder width {width} matches no official UniDepthV2 size')
    config = UniDepthV2Config.official(variant)
    blocks = {int(key.split('.')[2]) for key in state_dict
              if key.startswith('pixel_encoder.blocks.')}
    stages = {int(key.split('.')[3]) for key in state_dict
              if key.startswith('pixel_decoder.depth_layer.ups.')}
    if len(blocks) != config.encoder_depth or hidden != config.hidden_dim:
        raise UniDepthConfigError(
            f'state dict has {len(blocks)} encoder blocks and decoder width {hidden}, '
            f'official {variant} has {config.encoder_depth} and {config.hidden_dim}: pass '
            'its config.json too (a folder with config.json and the weights)')
    units = [len({key.split('.')[5] for key in state_dict
                  if key.startswith(f'pixel_decoder.depth_layer.ups.{stage}.convs.')})
             for stage in sorted(stages)]
    return replace(config, decoder_depths=tuple(units))
