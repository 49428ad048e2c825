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
Convert official Depth Anything V2 checkpoints (``depth_anything_v2_*.pth``) to transformers.

The official repository stores a DINOv2 backbone under ``pretrained.`` and the DPT head under
``depth_head.``; transformers' ``DepthAnythingForDepthEstimation`` names the same tensors
``backbone.``, ``neck.`` and ``head.``. The mapping below is written out by hand, is invertible
(tests build an official-layout dict from a transformers model and convert it back), and knows
both transformers naming generations of the DINOv2 attention and SwiGLU weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
import re

import torch

from ..errors import ModelError

#: Official variants: backbone size, the blocks the DPT head reads, and the head widths.
VARIANTS = {
    'vits': {'hidden_size': 384, 'heads': 6, 'layers': 12, 'intermediate': (2, 5, 8, 11),
             'features': 64, 'out_channels': (48, 96, 192, 384), 'swiglu': False},
    'vitb': {'hidden_size': 768, 'heads': 12, 'layers': 12, 'intermediate': (2, 5, 8, 11),
             'features': 128, 'out_channels': (96, 192, 384, 768), 'swiglu': False},
    'vitl': {'hidden_size': 1024, 'heads': 16, 'layers': 24, 'intermediate': (4, 11, 17, 23),
             'features': 256, 'out_channels': (256, 512, 1024, 1024), 'swiglu': False},
    'vitg': {'hidden_size': 1536, 'heads': 24, 'layers': 40, 'intermediate': (9, 19, 29, 39),
             'features': 384, 'out_channels': (1536, 1536, 1536, 1536), 'swiglu': True},
}

#: Metric checkpoints are trained with a fixed depth cap (metres) that the head multiplies by.
METRIC_MAX_DEPTH = {'hypersim': 20.0, 'vkitti': 80.0}

# Official refinenet{i} is applied deepest-first; transformers' fusion layers are in call order.
_REFINENET_TO_FUSION = {4: 0, 3: 1, 2: 2, 1: 3}


class CheckpointError(ModelError, ValueError):
    """An official checkpoint that cannot be converted."""


@dataclass(frozen=True)
class OfficialCheckpointInfo:
    """What a checkpoint file is: variant, relative or metric, and metric depth cap."""

    variant: str
    depth_estimation_type: str
    max_depth: float | None


def build_config(variant: str, depth_estimation_type: str = 'relative',
                 max_depth: float | None = None):
    """Return the transformers ``DepthAnythingConfig`` of an official variant."""
    from transformers import DepthAnythingConfig, Dinov2Config

    if variant not in VARIANTS:
        raise CheckpointError(f'unknown variant {variant!r}; expected one of {sorted(VARIANTS)}')
    if depth_estimation_type not in ('relative', 'metric'):
        raise CheckpointError(
            f"depth_estimation_type must be 'relative' or 'metric', not {depth_estimation_type!r}")
    spec = VARIANTS[variant]
    backbone = Dinov2Config(
        hidden_size=spec['hidden_size'], num_attention_heads=spec['heads'],
        num_hidden_layers=spec['layers'], mlp_ratio=4, image_size=518, patch_size=14,
        layerscale_value=1.0, use_swiglu_ffn=spec['swiglu'], reshape_hidden_states=False,
        apply_layernorm=True, out_indices=[i + 1 for i in spec['intermediate']])
    extra = {}
    if depth_estimation_type == 'metric':
        if max_depth is None:
            raise CheckpointError('a metric checkpoint needs max_depth (20 for Hypersim indoor, '
                                  '80 for Virtual KITTI outdoor)')
        # transformers 5 types this field as int, as the hub's metric configs store it
        extra['max_depth'] = int(max_depth) if float(max_depth).is_integer() else max_depth
    return DepthAnythingConfig(
        backbone_config=backbone, patch_size=14, reassemble_hidden_size=spec['hidden_size'],
        reassemble_factors=[4, 2, 1, 0.5], neck_hidden_sizes=list(spec['out_channels']),
        fusion_hidden_size=spec['features'], head_hidden_size=32, head_in_index=-1,
        depth_estimation_type=depth_estimation_type, **extra)


def inspect_checkpoint(path: Path, state_dict: dict[str, torch.Tensor],
                       depth_estimation_type: str | None = None,
                       max_depth: float | None = None) -> OfficialCheckpointInfo:
    """
    Infer variant and depth type from the weights and the official file name.

    The variant follows from the embedding width. Relative and metric checkpoints share one
    architecture, so the type comes from the name (``..._metric_hypersim_vitl.pth``) unless given.
    """
    key = 'pretrained.pos_embed'
    if key not in state_dict:
        raise CheckpointError(f'{path}: no {key!r}; not an official Depth Anything V2 checkpoint')
    width = state_dict[key].shape[-1]
    by_width = {spec['hidden_size']: name for name, spec in VARIANTS.items()}
    if width not in by_width:
        raise CheckpointError(f'{path}: embedding width {width} matches no official variant')
    name = path.name.lower()
    if depth_estimation_type is None:
        depth_estimation_type = 'metric' if 'metric' in name else 'relative'
    if depth_estimation_type == 'metric' and max_depth is None:
        max_depth = next((d for k, d in METRIC_MAX_DEPTH.items() if k in name), None)
    return OfficialCheckpointInfo(by_width[width], depth_estimation_type, max_depth)


def _backbone_names(model_keys: set[str]) -> dict[str, str]:
    """Pick the transformers parameter names of this install (they changed in transformers 5)."""
    if any('.attention.q_proj.' in k for k in model_keys):
        return {'q': 'attention.q_proj', 'k': 'attention.k_proj', 'v': 'attention.v_proj',
                'out': 'attention.o_proj', 'gate': 'mlp.gate_proj', 'up': 'mlp.up_proj',
                'down': 'mlp.down_proj', 'fused_in': None}
    return {'q': 'attention.attention.query', 'k': 'attention.attention.key',
            'v': 'attention.attention.value', 'out': 'attention.output.dense', 'gate': None,
            'up': None, 'down': 'mlp.weights_out', 'fused_in': 'mlp.weights_in'}


def _renames(num_layers: int, swiglu: bool, names: dict[str, str]) -> list[tuple[str, str]]:
    """List (official, transformers) names of every tensor that maps one to one."""
    pairs = [
        ('pretrained.cls_token', 'backbone.embeddings.cls_token'),
        ('pretrained.mask_token', 'backbone.embeddings.mask_token'),
        ('pretrained.pos_embed', 'backbone.embeddings.position_embeddings'),
        ('pretrained.patch_embed.proj.weight',
         'backbone.embeddings.patch_embeddings.projection.weight'),
        ('pretrained.patch_embed.proj.bias',
         'backbone.embeddings.patch_embeddings.projection.bias'),
        ('pretrained.norm.weight', 'backbone.layernorm.weight'),
        ('pretrained.norm.bias', 'backbone.layernorm.bias'),
    ]
    block_map = [('norm1', 'norm1'), ('attn.proj', names['out']), ('norm2', 'norm2')]
    if swiglu:
        block_map.append(('mlp.w3', names['down']))
        if names['fused_in'] is not None:
            block_map.append(('mlp.w12', names['fused_in']))
    else:
        block_map += [('mlp.fc1', 'mlp.fc1'), ('mlp.fc2', 'mlp.fc2')]
    for i in range(num_layers):
        src, dst = f'pretrained.blocks.{i}.', f'backbone.encoder.layer.{i}.'
        pairs += [(src + 'ls1.gamma', dst + 'layer_scale1.lambda1'),
                  (src + 'ls2.gamma', dst + 'layer_scale2.lambda1')]
        for official, ours in block_map:
            for suffix in ('weight', 'bias'):
                pairs.append((f'{src}{official}.{suffix}', f'{dst}{ours}.{suffix}'))
    return pairs + dpt_head_renames('depth_head.')


def dpt_head_renames(head: str) -> list[tuple[str, str]]:
    """
    List (official, transformers) names of a DPT head's tensors under the prefix ``head``.

    Depth Anything V2's and Depth Anything 3's official heads share these names
    (``projects``, ``resize_layers``, ``scratch.layer*_rn``, ``scratch.refinenet*``,
    ``scratch.output_conv*``); transformers calls them ``neck.*`` and ``head.*``.
    """
    pairs = []
    for i in range(4):
        for suffix in ('weight', 'bias'):
            pairs.append((f'{head}projects.{i}.{suffix}',
                          f'neck.reassemble_stage.layers.{i}.projection.{suffix}'))
            if i != 2:  # the third reassemble layer is an identity
                pairs.append((f'{head}resize_layers.{i}.{suffix}',
                              f'neck.reassemble_stage.layers.{i}.resize.{suffix}'))
        pairs.append((f'{head}scratch.layer{i + 1}_rn.weight', f'neck.convs.{i}.weight'))
    for refinenet, fusion in _REFINENET_TO_FUSION.items():
        src, dst = f'{head}scratch.refinenet{refinenet}.', f'neck.fusion_stage.layers.{fusion}.'
        for suffix in ('weight', 'bias'):
            pairs.append((f'{src}out_conv.{suffix}', f'{dst}projection.{suffix}'))
            for unit in (1, 2):
                for conv in (1, 2):
                    pairs.append((f'{src}resConfUnit{unit}.conv{conv}.{suffix}',
                                  f'{dst}residual_layer{unit}.convolution{conv}.{suffix}'))
    for official, ours in (('output_conv1', 'head.conv1'), ('output_conv2.0', 'head.conv2'),
                           ('output_conv2.2', 'head.conv3')):
        for suffix in ('weight', 'bias'):
            pairs.append((f'{head}scratch.{official}.{suffix}', f'{ours}.{suffix}'))
    return pairs


def _split_tensors(num_layers: int, swiglu: bool, names: dict[str, str]):
    """List (official, [transformers parts]) for tensors the official layout stores fused."""
    splits = []
    for i in range(num_layers):
        src, dst = f'pretrained.blocks.{i}.', f'backbone.encoder.layer.{i}.'
        for suffix in ('weight', 'bias'):
            splits.append((f'{src}attn.qkv.{suffix}',
                           [f'{dst}{names[p]}.{suffix}' for p in ('q', 'k', 'v')]))
            if swiglu and names['fused_in'] is None:
                # official SwiGLU: silu(first half of w12) * second half
                splits.append((f'{src}mlp.w12.{suffix}',
                               [f'{dst}{names[p]}.{suffix}' for p in ('gate', 'up')]))
    return splits


def official_to_transformers(state_dict: dict[str, torch.Tensor], config,
                             model_keys: set[str]) -> dict[str, torch.Tensor]:
    """
    Rename and split an official state dict into this transformers install's layout.

    Raises CheckpointError listing unexpected or missing official tensors.
    """
    layers = config.backbone_config.num_hidden_layers
    swiglu = bool(config.backbone_config.use_swiglu_ffn)
    names = _backbone_names(model_keys)
    remaining = dict(state_dict)
    converted: dict[str, torch.Tensor] = {}
    missing = []
    for official, ours in _renames(layers, swiglu, names):
        if official not in remaining:
            missing.append(official)
            continue
        converted[ours] = remaining.pop(official)
    for official, parts in _split_tensors(layers, swiglu, names):
        if official not in remaining:
            missing.append(official)
            continue
        for name, chunk in zip(parts, remaining.pop(official).chunk(len(parts), dim=0)):
            converted[name] = chunk.clone()
    if missing or remaining:
        raise CheckpointError(
            f'checkpoint does not match the official {layers}-layer layout: '
            f'missing {missing[:5]}{"..." if len(missing) > 5 else ""}, '
            f'unexpected {sorted(remaining)[:5]}{"..." if len(remaining) > 5 else ""}')
    return converted


def transformers_to_official(state_dict: dict[str, torch.Tensor],
                             config) -> dict[str, torch.Tensor]:
    """Invert official_to_transformers (used to test the mapping and to export weights)."""
    layers = config.backbone_config.num_hidden_layers
    swiglu = bool(config.backbone_config.use_swiglu_ffn)
    names = _backbone_names(set(state_dict))
    official = {src: state_dict[dst] for src, dst in _renames(layers, swiglu, names)}
    for src, parts in _split_tensors(layers, swiglu, names):
        official[src] = torch.cat([state_dict[p] for p in parts], dim=0)
    return official


def read_official_state_dict(path: Path) -> dict[str, torch.Tensor]:
    """Load an official ``.pth`` (plain, ``{'model': ...}`` or DataParallel ``module.`` keys)."""
    try:
        loaded = torch.load(path, map_location='cpu', weights_only=True)
    except Exception as error:  # torch raises several types for a corrupt or foreign file
        raise CheckpointError(
            f'{path}: cannot be read as a PyTorch checkpoint: {error}') from error
    if isinstance(loaded, dict) and 'model' in loaded and isinstance(loaded['model'], dict):
        loaded = loaded['model']
    if not isinstance(loaded, dict):
        raise CheckpointError(f'{path}: expected a state dict, found {type(loaded).__name__}')
    return {re.sub(r'^module\.', '', k): v for k, v in loaded.items()}
