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
The methods compared by evaluation and benchmarks, behind one small interface.

Every learned method is the same test-time optimization loop with a different scope (see
:class:`~lrda_ros.engine.config.Scope`); ``scale-shift`` is that loop with zero steps, and
``classical`` is IP-Basic morphological filling, a floor that needs no network.
:data:`METHODS` is the only registry of method names: ``lrda eval`` and ``lrda speed`` both
build (or time) their methods from it and check ``--methods`` with :func:`check_method_names`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
import time
from typing import Protocol, Sequence, TYPE_CHECKING

import numpy as np

from .classical import ip_basic_complete
from ..engine.config import Scope, TTOConfig
from ..errors import ConfigError, InputError
from ..geometry import agree_with_lidar, LidarAgreement
from ..geometry.temporal_fusion import TemporalFusion, TemporalFusionConfig
from ..pipeline import complete_sparse

if TYPE_CHECKING:
    from ..engine import DepthModel


#: Bands of rows of the decoder's high-resolution tail for ``lrda-strips`` (engine/strips.py).
STRIPS_METHOD_TAIL_STRIPS = 16
#: Temporal fusion of ``lrda-warm-fused`` (the node's ``temporal_fusion.weight`` 0.5).
FUSED_METHOD_FUSION = TemporalFusionConfig(weight=0.5)


@dataclass(frozen=True)
class MethodSpec:
    """
    How a named method configures the engine.

    ``scope`` None: no network (``classical``). ``iterations`` and ``tail_strips`` None: the
    caller's configuration decides.
    """

    name: str
    description: str
    scope: Scope | None = Scope.DECODER_LORA
    iterations: int | None = None
    warm_start: bool = False
    tail_strips: int | None = None
    #: Follow with the LiDAR agreement stage (geometry/agreement.py).
    lidar_agreement: bool = False
    #: Fuse each depth map with the previous one, moved by the camera pose
    #: (geometry/temporal_fusion.py, :data:`FUSED_METHOD_FUSION`).
    temporal_fusion: bool = False
    #: The step schedule the method is defined with (None: the caller's configuration).
    schedule: str | None = None

    @property
    def needs_network(self) -> bool:
        """Return whether the method runs the depth network (every method but classical)."""
        return self.scope is not None

    def configure(self, config: TTOConfig) -> TTOConfig:
        """Return ``config`` with what this method sets: scope, warm start, steps, strips."""
        if not self.needs_network:
            raise ValueError(f'method {self.name!r} runs no test-time optimization')
        overrides = {'scope': self.scope, 'warm_start': self.warm_start}
        if self.iterations is not None:
            overrides['iterations'] = self.iterations
        if self.tail_strips is not None:
            overrides['tail_strips'] = self.tail_strips
        if self.schedule is not None:
            overrides['schedule'] = self.schedule
        return replace(config, **overrides)


METHODS: dict[str, MethodSpec] = {spec.name: spec for spec in (
    MethodSpec('scale-shift', 'prior + least-squares scale/shift, no optimization',
               iterations=0),
    MethodSpec('lrda', 'decoder-only LoRA test-time optimization (the method)'),
    MethodSpec('lrda-warm', 'lrda warm-started from the previous frame of a sequence',
               warm_start=True),
    MethodSpec('lrda-warm-fused', "lrda-warm, each depth map averaged with the previous one's "
               'moved by the camera pose where they agree (needs poses)', warm_start=True,
               temporal_fusion=True),
    MethodSpec('lrda-strips', "lrda with the decoder's high-resolution tail in strips under "
               'activation checkpointing (less memory, more time)',
               tail_strips=STRIPS_METHOD_TAIL_STRIPS),
    # The paper's ablations and baseline, with its fixed step count (engine/schedule.py).
    MethodSpec('encoder-lora', 'ablation: LoRA on the encoder only', Scope.ENCODER_LORA,
               schedule='paper'),
    MethodSpec('full-lora', 'ablation: LoRA on encoder and decoder', Scope.FULL_LORA,
               schedule='paper'),
    MethodSpec('decoder-ft', 'ablation: full fine-tuning of the decoder', Scope.DECODER_FULL,
               schedule='paper'),
    MethodSpec('prompt', 'visual-prompt tuning through the frozen network (TestPromptDC-style)',
               Scope.PROMPT, schedule='paper'),
    MethodSpec('classical', 'IP-Basic morphological filling (no network)', scope=None),
    MethodSpec('lrda-lidar', 'lrda, then its LiDAR residuals propagated into the image '
               '(guided by the prediction; exact at LiDAR pixels)', lidar_agreement=True),
)}


def check_method_names(names: Sequence[str]) -> None:
    """Reject an empty selection or a name outside :data:`METHODS`, as ``--methods``."""
    unknown = [name for name in names if name not in METHODS]
    if unknown or not names:
        raise ConfigError(f'--methods: unknown {", ".join(unknown) or "(empty)"}; choose from '
                          f'{", ".join(METHODS)}', field='--methods')


@dataclass
class MethodOutput:
    """A method's depth for one frame and what it did."""

    depth: np.ndarray
    iterations: int = 0
    status: str = 'ok'
    final_loss: float = float('nan')
    #: The model's own per-pixel uncertainty (larger = less reliable; UniDepthV2), or None.
    confidence: np.ndarray | None = None
    #: Seconds another method spent on this output, reused here (add them to this one's time).
    reused_seconds: float = 0.0


class Method(Protocol):
    """Complete one frame; ``reset`` starts a new sequence."""

    name: str

    def complete(self, rgb: np.ndarray, sparse_depth: np.ndarray,
                 intrinsics: np.ndarray | None = None,
                 T_world_cam: np.ndarray | None = None) -> MethodOutput:
        """
        Return dense metric depth for one frame.

        ``intrinsics``: its K; ``T_world_cam``: the camera's pose (temporal fusion), when known.
        """

    def reset(self) -> None:
        """Forget state carried between frames."""


class TTOMethod:
    """A test-time optimization method on its own copy of the network."""

    def __init__(self, spec: MethodSpec, model: DepthModel, config: TTOConfig) -> None:
        from ..engine import DepthCompleter  # torch: with the first network, not the registry

        network = copy.deepcopy(model.network)  # LoRA injection modifies the network
        self.name = spec.name
        self.completer = DepthCompleter(type(model)(network, model.device),
                                        spec.configure(config))
        self.fusion = TemporalFusion(
            FUSED_METHOD_FUSION if spec.temporal_fusion else TemporalFusionConfig())

    def complete(self, rgb: np.ndarray, sparse_depth: np.ndarray,
                 intrinsics: np.ndarray | None = None,
                 T_world_cam: np.ndarray | None = None) -> MethodOutput:
        """Run the engine on one frame, as the node does (far_depth beyond reach, fusion)."""
        depth, result = complete_sparse(self.completer, rgb, sparse_depth,
                                        intrinsics=intrinsics)
        if self.fusion.config.enabled:
            if intrinsics is None or T_world_cam is None:
                raise InputError(f'{self.name} fuses consecutive frames and needs the camera '
                                 'matrix and pose of each: this source has no poses (a bag '
                                 'needs /tf to the camera or the odometry extra)', field='pose')
            depth = self.fusion.fuse(depth, intrinsics, T_world_cam,
                                     restart=result.scene_cut).depth
        return MethodOutput(depth, result.iterations, result.status.value, result.final_loss,
                            result.confidence)

    def reset(self) -> None:
        """Cold-start the next frame, fused with nothing."""
        self.completer.reset()
        self.fusion.reset()


class ClassicalMethod:
    """IP-Basic filling of the sparse depth alone."""

    name = 'classical'

    def __init__(self, max_depth: float) -> None:
        self.max_depth = max_depth

    def complete(self, rgb: np.ndarray, sparse_depth: np.ndarray,
                 intrinsics: np.ndarray | None = None,
                 T_world_cam: np.ndarray | None = None) -> MethodOutput:
        """Fill the sparse depth; the image, camera and pose are not used."""
        return MethodOutput(ip_basic_complete(sparse_depth, max_depth=self.max_depth))

    def reset(self) -> None:
        """Nothing is carried between frames."""


class LidarAgreementMethod:
    """A method followed by the LiDAR agreement stage."""

    def __init__(self, name: str, inner: Method,
                 agreement: LidarAgreement = LidarAgreement()) -> None:
        self.name, self.inner, self.agreement = name, inner, agreement

    def complete(self, rgb: np.ndarray, sparse_depth: np.ndarray,
                 intrinsics: np.ndarray | None = None,
                 T_world_cam: np.ndarray | None = None) -> MethodOutput:
        """Complete with the inner method, then agree with the LiDAR (NaN stays NaN)."""
        output = self.inner.complete(rgb, sparse_depth, intrinsics, T_world_cam)
        output.depth = agree_with_lidar(output.depth, sparse_depth, self.agreement)
        return output

    def reset(self) -> None:
        """Reset the inner method."""
        self.inner.reset()


class SharedCompletion:
    """
    A cold-start method whose completion of the latest frame a following stage reuses.

    ``lrda`` and ``lrda-lidar`` run the same deterministic cold start on a frame; when both are
    selected the network runs once. The frame is recognised by its arrays' identity (held, so
    an id is never reused); resets change nothing a cold start depends on, so they keep it.
    """

    def __init__(self, inner: TTOMethod) -> None:
        self.inner, self.name = inner, inner.name
        self._last: tuple | None = None

    def complete(self, rgb: np.ndarray, sparse_depth: np.ndarray,
                 intrinsics: np.ndarray | None = None,
                 T_world_cam: np.ndarray | None = None) -> MethodOutput:
        """Complete the frame, or return a copy of the output for the same frame."""
        last = self._last
        if last is not None and last[0] is rgb and last[1] is sparse_depth \
                and last[2] is intrinsics:
            output = last[3]
            return replace(output, depth=output.depth.copy(), reused_seconds=last[4])
        started = time.perf_counter()
        output = self.inner.complete(rgb, sparse_depth, intrinsics, T_world_cam)
        self._last = (rgb, sparse_depth, intrinsics, output, time.perf_counter() - started)
        return replace(output, depth=output.depth.copy())

    def reset(self) -> None:
        """Reset the inner method (its cold start does not depend on it)."""
        self.inner.reset()


def build_methods(names: Sequence[str], model: DepthModel | None,
                  config: TTOConfig) -> dict[str, Method]:
    """
    Return the named methods by name, sharing work where the results are the same.

    A LiDAR agreement method whose network part is another selected method (``lrda-lidar``
    and ``lrda``) reuses that method's completion of each frame instead of computing it again;
    its ``reused_seconds`` carry the time of that completion.
    """
    check_method_names(list(names))
    methods: dict[str, Method] = {}
    for name in names:
        if name in methods:
            continue  # built already, shared with a stage that follows it
        spec = METHODS[name]
        base = next((other for other in names if spec.lidar_agreement and other != name
                     and replace(spec, name=other, description=METHODS[other].description,
                                 lidar_agreement=False) == METHODS[other]), None)
        if base is None or model is None or spec.warm_start:
            methods[name] = build_method(name, model, config)
            continue
        if not isinstance(methods.get(base), SharedCompletion):
            methods[base] = SharedCompletion(TTOMethod(METHODS[base], model, config))
        methods[name] = LidarAgreementMethod(name, methods[base])
    return {name: methods[name] for name in names}


def build_method(name: str, model: DepthModel | None, config: TTOConfig) -> Method:
    """Return the named method (``model`` may be None for ``classical`` only)."""
    check_method_names([name])
    spec = METHODS[name]
    if not spec.needs_network:
        return ClassicalMethod(config.max_depth)
    if model is None:
        raise ValueError(f'method {name!r} needs a depth model')
    if spec.lidar_agreement:
        return LidarAgreementMethod(name, TTOMethod(spec, model, config))
    return TTOMethod(spec, model, config)
