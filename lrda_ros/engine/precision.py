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
Reduced-precision compute (``dtype``): held weights, autocast contexts, the support check.

``bfloat16``/``float16`` autocast the forward passes. What the optimizer updates stays float32
(master weights for Adam); the frozen weights of the layers that compute in the reduced
precision are held in it, cast once per model (:func:`hold_frozen_weights`): autocast keeps a
cast copy only of leaf tensors that require gradients, so a float32 frozen weight would be
cast again by every operation of every step. A precision the device cannot run is rejected
when the completer is built, with the reason, never at the first frame.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
import re
from typing import Sequence

import torch
from torch import nn

from .config import DTYPES, PRECISIONS
# Torch-free, for handlers that refuse a setting before torch loads; raised here.
from .errors import UnsupportedPrecisionError


def autocast_dtype(name: str) -> torch.dtype:
    """Return the torch dtype of a precision name ('float32', 'bfloat16', 'float16')."""
    if name not in PRECISIONS:
        raise UnsupportedPrecisionError(f'dtype must be one of {list(PRECISIONS)}, got {name!r}')
    return getattr(torch, name)


def autocast(device: torch.device, dtype: torch.dtype) -> AbstractContextManager:
    """Return the autocast context of ``dtype`` on ``device`` (none for float32)."""
    if dtype == torch.float32:
        return nullcontext()
    return torch.autocast(device.type, dtype=dtype)


def full_precision(device: torch.device) -> AbstractContextManager:
    """
    Return a context that suspends autocast: float32 inputs compute in float32 inside it.

    For the network's output layers: a relative-depth prediction varies by a few percent
    across a frame in places, and 8 bits of bfloat16 mantissa would quantize that variation
    (and the gradient the alignment loss sends back through it) into a few levels.
    """
    return torch.autocast(device.type, enabled=False)


def native_bfloat16(device: torch.device) -> bool:
    """Return whether ``device`` computes bfloat16 in hardware (not emulated)."""
    if device.type == 'cuda':
        return torch.cuda.is_bf16_supported(including_emulation=False)
    if device.type == 'cpu':
        cpu = torch.cpu
        return bool(getattr(cpu, '_is_avx512_bf16_supported', lambda: False)()
                    or getattr(cpu, '_is_amx_tile_supported', lambda: False)())
    return False


def resolve_precision(device: torch.device, name: str) -> str:
    """Return the precision ``name`` means on ``device``: 'auto' becomes one of PRECISIONS."""
    if name not in DTYPES:
        raise UnsupportedPrecisionError(f'dtype must be one of {list(DTYPES)}, got {name!r}')
    if name != 'auto':
        return name
    return 'bfloat16' if native_bfloat16(device) else 'float32'


def check_precision(device: torch.device, name: str) -> torch.dtype:
    """
    Return the dtype of ``name`` if ``device`` can autocast to it, else raise why not.

    Known gaps are named here; the completer also runs one tiny step at start-up
    (``DepthCompleter``), which catches kernels a device or build lacks.
    """
    dtype = autocast_dtype(resolve_precision(device, name))
    if dtype == torch.float32:
        return dtype
    if not torch.amp.is_autocast_available(device.type):
        raise UnsupportedPrecisionError(
            f'dtype {name!r}: PyTorch has no autocast for {device.type} devices; use float32')
    if (device.type == 'cuda' and dtype == torch.bfloat16
            and not torch.cuda.is_bf16_supported(including_emulation=False)):
        raise UnsupportedPrecisionError(
            f"dtype 'bfloat16': {torch.cuda.get_device_name(device)} has no bfloat16 support "
            '(needs compute capability 8.0 or newer); use float16 or float32')
    return dtype


#: How PyTorch names each reduced precision in its errors (C++ scalar type, Python name).
_DTYPE_WORDS = {torch.bfloat16: ('BFloat16', 'bfloat16'), torch.float16: ('Half', 'float16')}
#: How PyTorch says a kernel or a conversion is missing for a dtype ("... not implemented
#: for 'BFloat16'", "Got unsupported ScalarType BFloat16", "... does not support bfloat16").
_MISSING = re.compile(r'not implemented for|unsupported|not supported|does not support|'
                      r'no kernel', re.IGNORECASE)


def lacks_precision(error: BaseException, dtype: torch.dtype) -> bool:
    """
    Return whether ``error`` says the device lacks a kernel or conversion for ``dtype``.

    Only such an error means "this dtype does not run here"; any other (a shape mismatch, a
    cuDNN failure, a bug in the sparse head) is the error it is, and is reported as itself.
    """
    if not isinstance(error, (RuntimeError, NotImplementedError, TypeError)):
        return False
    text = str(error)
    return (any(word in text for word in _DTYPE_WORDS.get(dtype, ()))
            and _MISSING.search(text) is not None)


#: The layer types autocast computes in the reduced precision (their weights are held in it).
_HELD_TYPES = (nn.Conv2d, nn.ConvTranspose2d, nn.Linear)


def hold_frozen_weights(network: nn.Module, prefixes: Sequence[str], dtype: torch.dtype,
                        keep_float32: Sequence[str] = ()) -> list[str]:
    """
    Cast the frozen weights of the Conv/ConvTranspose/Linear layers under ``prefixes`` to dtype.

    In place, once. Parameters that require gradients (what the optimizer updates: LoRA
    adapters, or whole layers in the decoder fine-tuning ablation) stay float32, and so do the
    layers named in ``keep_float32`` (and their peft base layers): those that compute in float32
    under any autocast. Returns the names of the layers cast.
    """
    held = []
    for name, module in network.named_modules():
        if type(module) not in _HELD_TYPES or not name.startswith(tuple(prefixes)):
            continue
        if '.lora_' in name or name.removesuffix('.base_layer') in keep_float32:
            continue
        parameters = [p for p in module.parameters(recurse=False) if not p.requires_grad]
        if not parameters or any(p.requires_grad for p in module.parameters(recurse=False)):
            continue
        for parameter in parameters:
            parameter.data = parameter.data.to(dtype)
        held.append(name)
    return held
