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
Train the embedded demo prior: a small Depth Anything V2 network on the synthetic world.

No pretrained weights are reachable on an offline machine, so the demo ships this stand-in: the
same transformers architecture (DINOv2 backbone + DPT head) at about 2 M parameters, trained for
about 20 minutes on a 2-core CPU to predict relative depth (disparity up to scale and shift)
from procedurally rendered indoor and street scenes. It is a demonstration prior, not a
foundation model.

Reproduce the shipped weights with ``lrda train-prior`` (defaults are the shipped run).
"""

from __future__ import annotations

from dataclasses import asdict, replace
import json
import math
from pathlib import Path
import time

import numpy as np
import torch
from tqdm import tqdm

from .prior_config import PriorTrainingConfig
from .. import world
from ..engine.alignment import fit_scale_shift
from ..engine.loading import demo_prior_dir
from ..engine.model import IMAGENET_MEAN, IMAGENET_STD


def prior_architecture():
    """Return the demo prior's DepthAnythingConfig (relative depth, ~2 M parameters)."""
    from transformers import DepthAnythingConfig, Dinov2Config

    backbone = Dinov2Config(hidden_size=128, num_attention_heads=4, num_hidden_layers=6,
                            mlp_ratio=4, out_indices=[2, 3, 5, 6], reshape_hidden_states=False,
                            image_size=224, patch_size=14, layerscale_value=1.0)
    return DepthAnythingConfig(backbone_config=backbone, reassemble_hidden_size=128,
                               neck_hidden_sizes=[32, 64, 128, 128], fusion_hidden_size=48,
                               head_hidden_size=16, depth_estimation_type='relative')


def new_prior_network(seed: int):
    """Build the untrained network with PyTorch's default initialization."""
    from transformers import DepthAnythingForDepthEstimation

    torch.manual_seed(seed)
    network = DepthAnythingForDepthEstimation(prior_architecture())
    for module in network.modules():
        if isinstance(module, (torch.nn.Conv2d, torch.nn.ConvTranspose2d, torch.nn.Linear)):
            module.reset_parameters()
    return network


def render_training_views(config: PriorTrainingConfig) -> tuple[np.ndarray, np.ndarray]:
    """Render ``num_views`` random views: RGB uint8 and disparity (1/depth, 0 for sky)."""
    rgb = np.empty((config.num_views, config.height, config.width, 3), np.uint8)
    disparity = np.empty((config.num_views, config.height, config.width), np.float32)
    rng = np.random.default_rng(config.seed)
    for index in tqdm(range(config.num_views), desc='rendering views', unit='view'):
        kind = 'indoor' if rng.random() < config.indoor_fraction else 'outdoor'
        image, depth, _ = world.random_view(int(rng.integers(2**31)), kind, config.width,
                                            config.height)
        rgb[index] = image
        with np.errstate(divide='ignore'):
            disparity[index] = np.where(depth > 0, 1.0 / np.maximum(depth, 1e-6), 0.0)
    return rgb, disparity


def scale_shift_invariant_loss(prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """
    Mean over images of the L1 residual after least-squares alignment (MiDaS-style).

    Residuals are divided by each target's mean absolute deviation so near and far scenes
    weigh alike. The alignment is the same closed form the test-time optimization uses.
    """
    losses = []
    for pred, tgt in zip(prediction.flatten(1), target.flatten(1)):
        fit = fit_scale_shift(pred, tgt)
        spread = (tgt - tgt.median()).abs().mean().clamp_min(1e-6)
        losses.append((fit.apply(pred) - tgt).abs().mean() / spread)
    return torch.stack(losses).mean()


def _augment(rgb: torch.Tensor, disparity: torch.Tensor, generator: torch.Generator):
    flip = torch.rand(rgb.shape[0], generator=generator) < 0.5
    rgb = torch.where(flip[:, None, None, None], rgb.flip(-1), rgb)
    disparity = torch.where(flip[:, None, None], disparity.flip(-1), disparity)
    gain = 0.8 + 0.4 * torch.rand(rgb.shape[0], 1, 1, 1, generator=generator)
    bias = 0.1 * (torch.rand(rgb.shape[0], 3, 1, 1, generator=generator) - 0.5)
    return (rgb * gain + bias).clamp(0, 1), disparity


def _learning_rate(config: PriorTrainingConfig, step: int) -> float:
    if step < config.warmup_steps:
        return config.learning_rate * (step + 1) / config.warmup_steps
    progress = (step - config.warmup_steps) / max(1, config.steps - config.warmup_steps)
    return config.learning_rate * 0.5 * (1 + math.cos(math.pi * progress))


def train_prior(config: PriorTrainingConfig) -> dict:
    """
    Render views, train, and save the network (fp16, Hugging Face layout) to ``output``.

    Torch runs on ``config.threads`` threads meanwhile, and on the caller's again after: left
    at two in a process that shares the cores (a test worker beside another), its OpenMP
    threads wait spinning, and everything the process computes afterwards takes several
    times the CPU time.
    """
    caller_threads = torch.get_num_threads()
    torch.set_num_threads(config.threads)
    try:
        return _train_prior(config)
    finally:
        torch.set_num_threads(caller_threads)


def _train_prior(config: PriorTrainingConfig) -> dict:
    output = Path(config.output) if config.output is not None else demo_prior_dir()
    config = replace(config, output=output)
    start = time.perf_counter()
    rgb, disparity = render_training_views(config)
    rendered = time.perf_counter()
    network = new_prior_network(config.seed).train()
    optimizer = torch.optim.AdamW(network.parameters(), lr=config.learning_rate,
                                  weight_decay=config.weight_decay)
    mean = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
    generator = torch.Generator().manual_seed(config.seed)
    losses = []
    progress = tqdm(range(config.steps), desc='training prior', unit='step')
    for step in progress:
        index = torch.randint(0, config.num_views, (config.batch_size,), generator=generator)
        images = torch.from_numpy(rgb[index.numpy()]).permute(0, 3, 1, 2).float() / 255.0
        targets = torch.from_numpy(disparity[index.numpy()])
        images, targets = _augment(images, targets, generator)
        for group in optimizer.param_groups:
            group['lr'] = _learning_rate(config, step)
        prediction = network((images - mean) / std).predicted_depth
        loss = scale_shift_invariant_loss(prediction, targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(network.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
        progress.set_postfix(loss=f'{np.mean(losses[-20:]):.4f}')
    report = {
        'config': {k: str(v) if isinstance(v, Path) else v for k, v in asdict(config).items()},
        'render_seconds': round(rendered - start, 1),
        'train_seconds': round(time.perf_counter() - rendered, 1),
        'final_loss': float(np.mean(losses[-50:])),
        'parameters': sum(p.numel() for p in network.parameters()),
    }
    output.mkdir(parents=True, exist_ok=True)
    network.eval().to(torch.float16).save_pretrained(output)
    (output / 'training.json').write_text(json.dumps(report, indent=2) + '\n')
    return report
