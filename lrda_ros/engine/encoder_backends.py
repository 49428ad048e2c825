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
The encoder on an inference engine: ONNX Runtime, or TensorRT through ONNX Runtime.

The encoder (DINOv2 backbone) runs once per frame and needs no gradients, so it can run on
the engines robots deploy with; the decoder's test-time optimization stays in PyTorch.
``encoder_backend``:

- ``torch``: the backbone in PyTorch (default);
- ``onnxruntime``: the loaded backbone exported to ONNX (opset 17) once per model and input
  size, cached as ``<cache>/<model hash>-<h>x<w>.onnx``, and run by ONNX Runtime with the best
  provider present (CUDA, else CPU; TensorRT is only used when asked for);
- ``tensorrt``: the same ONNX file run by ONNX Runtime's TensorRT execution provider (engines
  cached beside it), which needs an ONNX Runtime build with TensorRT and a GPU.

A backend that cannot run here is rejected when the completer is built, with the reason.
The engines compute in float32 whatever ``dtype`` says (the decoder still autocasts).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
import tempfile

import numpy as np
import torch

from .config import ENCODER_BACKENDS
from ..errors import ConfigError

__all__ = ['ENCODER_BACKENDS', 'encoder_backend_for', 'OnnxEncoder']
ONNX_OPSET = 17
_TENSORRT = 'TensorrtExecutionProvider'
_CUDA = 'CUDAExecutionProvider'
_CPU = 'CPUExecutionProvider'


def default_cache_dir() -> Path:
    """Return ``$XDG_CACHE_HOME/lrda_ros/onnx`` (``~/.cache/lrda_ros/onnx``)."""
    base = os.environ.get('XDG_CACHE_HOME') or Path.home() / '.cache'
    return Path(base) / 'lrda_ros' / 'onnx'


def model_hash(module: torch.nn.Module) -> str:
    """Return a digest of a module's weights (names, shapes and values): the cache key."""
    digest = hashlib.sha256()
    for name, tensor in module.state_dict().items():
        digest.update(f'{name}:{tuple(tensor.shape)}:{tensor.dtype}'.encode())
        digest.update(tensor.detach().to('cpu', torch.float32).contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]


def providers_for(backend: str, device: torch.device) -> list:
    """
    Return the ONNX Runtime providers for ``backend`` on ``device``, or raise why none can run.

    Raises ConfigError (field ``encoder_backend``) when ONNX Runtime or the provider is missing.
    """
    try:
        import onnxruntime
    except ImportError as error:
        raise ConfigError(
            f'encoder_backend {backend!r} needs ONNX Runtime: pip install onnxruntime '
            '(or onnxruntime-gpu), or set encoder_backend: torch', field='encoder_backend'
        ) from error
    available = onnxruntime.get_available_providers()
    if backend == 'tensorrt':
        if _TENSORRT not in available:
            raise ConfigError(
                "encoder_backend 'tensorrt' needs ONNX Runtime built with TensorRT "
                f'(onnxruntime-gpu and TensorRT installed); this one has {available}: use '
                "encoder_backend 'onnxruntime' or 'torch'", field='encoder_backend')
        return [_TENSORRT] + [p for p in (_CUDA, _CPU) if p in available]
    if device.type == 'cuda' and _CUDA in available:
        return [_CUDA, _CPU]
    return [_CPU]


class _Backbone(torch.nn.Module):
    """The backbone as a module returning its feature maps as a plain tuple (for export)."""

    def __init__(self, backbone: torch.nn.Module) -> None:
        super().__init__()
        self.backbone = backbone

    def forward(self, pixel_values: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(self.backbone(pixel_values).feature_maps)


def export_backbone(backbone: torch.nn.Module, shape: tuple[int, ...], path: Path) -> Path:
    """Export ``backbone`` for inputs of ``shape`` to ``path`` (written atomically)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    device = next(backbone.parameters()).device
    example = torch.zeros(shape, device=device)
    with tempfile.TemporaryDirectory(dir=path.parent) as folder:
        partial = Path(folder) / path.name
        with torch.no_grad():
            torch.onnx.export(_Backbone(backbone).eval(), (example,), str(partial),
                              input_names=['pixel_values'], opset_version=ONNX_OPSET,
                              dynamo=False)
        os.replace(partial, path)
    return path


class OnnxEncoder:
    """
    Run a model's backbone with ONNX Runtime: one exported file and session per input size.

    Called like the backbone's feature extraction: (1, 3, h, w) pixel values to the tuple of
    feature maps, returned as torch tensors on the input's device.
    """

    def __init__(self, backbone: torch.nn.Module, backend: str, device: torch.device,
                 cache_dir: Path | None = None) -> None:
        self.backend = backend
        self.providers = providers_for(backend, device)
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
        self._backbone = backbone
        self._key = model_hash(backbone)
        self._sessions: dict = {}

    def path_for(self, shape: tuple[int, ...]) -> Path:
        """Return the cached ONNX file of this model for inputs of ``shape``."""
        return self.cache_dir / f'{self._key}-{shape[-2]}x{shape[-1]}.onnx'

    def _session(self, shape: tuple[int, ...]):
        import onnxruntime

        if shape not in self._sessions:
            path = self.path_for(shape)
            if not path.exists():
                export_backbone(self._backbone, shape, path)
            options = onnxruntime.SessionOptions()
            options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
            providers = [(p, {'trt_engine_cache_enable': True,
                              'trt_engine_cache_path': str(self.cache_dir)})
                         if p == _TENSORRT else p for p in self.providers]
            self._sessions[shape] = onnxruntime.InferenceSession(str(path), options,
                                                                 providers=providers)
        return self._sessions[shape]

    def __call__(self, pixel_values: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """
        Return the backbone's feature maps for ``pixel_values``, on its device.

        ONNX Runtime reads the input and writes the outputs in place in device memory
        (I/O binding): no copy to the host and back. The export's shapes are fixed, so the
        outputs are allocated before the run.
        """
        session = self._session(tuple(pixel_values.shape))
        pixel_values = pixel_values.detach().to(torch.float32).contiguous()
        device = pixel_values.device
        outputs = [torch.empty([int(size) for size in output.shape], dtype=torch.float32,
                               device=device) for output in session.get_outputs()]
        binding = session.io_binding()
        for name, tensor in (('pixel_values', pixel_values),
                             *zip((output.name for output in session.get_outputs()), outputs)):
            bind = binding.bind_input if name == 'pixel_values' else binding.bind_output
            bind(name, device.type, device.index or 0, np.float32, list(tensor.shape),
                 tensor.data_ptr())
        if device.type == 'cuda':  # ONNX Runtime's stream is not torch's: the input is ready
            torch.cuda.current_stream(device).synchronize()
        session.run_with_iobinding(binding)  # returns once the outputs are written
        return tuple(outputs)


def encoder_backend_for(model, backend: str, scope_reencodes: bool,
                        cache_dir: str = '') -> OnnxEncoder | None:
    """
    Return the runner of ``backend`` for ``model``'s encoder (None for ``torch``).

    Raises ConfigError when the combination cannot run, saying why.
    """
    if backend not in ENCODER_BACKENDS:
        raise ConfigError(f'encoder_backend must be one of {list(ENCODER_BACKENDS)}, got '
                          f'{backend!r}', field='encoder_backend')
    if backend == 'torch':
        return None
    if not getattr(model, 'encoder_exports', False):
        raise ConfigError(
            f'encoder_backend {backend!r} exports the DINOv2 backbone of Depth Anything V2; '
            f"{type(model).__name__}'s encoder runs in torch: set "
            'encoder_backend: torch', field='encoder_backend')
    if scope_reencodes:
        raise ConfigError(
            f'encoder_backend {backend!r} runs the encoder without gradients, but this scope '
            'adapts the encoder or its input and re-encodes with autograd at every step: use '
            'encoder_backend: torch (or scope decoder_lora / decoder_full)',
            field='encoder_backend')
    return OnnxEncoder(model.network.backbone, backend, model.device,
                       Path(cache_dir) if cache_dir else None)
