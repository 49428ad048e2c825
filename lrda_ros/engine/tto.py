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
Test-time optimization: adapt the network to one frame's sparse metric depth.

Per frame: encode once; for T steps decode, fit scale/shift on the LiDAR pixels in closed form,
take an Adam step on the adapted weights to reduce the residual; then decode densely and return
the aligned prediction in metres. Warm start carries the adapted weights to the next frame.
"""

from __future__ import annotations

import math
import time
from typing import Callable, Hashable, Sequence

import numpy as np
import torch

from .adaptation import build_adaptation
from .alignment import aligned_to_depth, alignment_loss, depth_to_target
from .allocator import keep_freed_memory_in_heap
from .compiled import check_compile, compiled, padded_samples
from .completion import (check_finite, check_frame, check_unshared,  # noqa: F401
                         CompletionCancelledError, CompletionResult, CompletionStatus,
                         EncodedFrame, few_points_message, InsufficientSparseDepthError,
                         model_sky, NonFiniteDepthError, SparseSamples)
from .config import FewPointsPolicy, TTOConfig
from .deadline import deadline_in, FrameDeadline, StepTimes
from .determinism import lora_form, use_deterministic_kernels
from .encoder_backends import encoder_backend_for
from .lora_paths import PathChoice
from .model import DepthModel, EncodedImage, resize_prediction, resolve_device, sample_prediction
from .model_options import model_option_notices
from .precision import autocast, check_precision, lacks_precision, UnsupportedPrecisionError
from .scene_cut import SceneCutRule, unexplained_share
from .schedule import coarse_input, combined_trace, plan_stages, Stage, Verdict, warm_verdict
from .sparse_head import SparseHeadPlan
from .steps import fresh_adam, reset_learning_rate, StepRules, StepTrace
from .streams import ParkedStreams, portable_state, restored_adam, WarmState
from .strips import decode_in_strips
from .transfers import to_host
from .whole_step import CompiledSteps


class DepthCompleter:
    """
    Turn (RGB, sparse depth) into dense metric depth by test-time optimization.

    The completer owns the adaptation it attaches to ``model``; warm start carries the adapted
    weights from one ``complete`` call to the next until ``reset``. Image streams (cameras)
    share one completer with a warm start each: ``complete(..., stream=name)`` (streams.py).
    """

    def __init__(self, model: DepthModel, config: TTOConfig | None = None) -> None:
        self.config = config or TTOConfig()
        self.model = model.to(resolve_device(self.config.device))
        if self.config.channels_last:
            self.model.network.to(memory_format=torch.channels_last)
        if self.config.tune_cpu_allocator:  # the host's frame arrays too, whatever the device
            keep_freed_memory_in_heap()
        #: What this completer does differently from its configuration, and why.
        self.notices: list[str] = []
        self.notices += model_option_notices(self.model, self.config)
        check_unshared(self.model.network)
        self.adaptation = build_adaptation(model, self.config)
        check_compile(self.model, self.config, self.adaptation.reencodes)
        #: compile: a whole step (loss, gradient, step rules, Adam) as one graph (whole_step.py).
        self._whole_step = CompiledSteps(self.model.device) if self.config.compile else None
        self._decode = self.model.decode  # compiled after the probe (its tiny image's is waste)
        self.model.encoder_runner = encoder_backend_for(
            self.model, self.config.encoder_backend, self.adaptation.reencodes,
            self.config.encoder_cache_dir)
        self._warm_input_shape: tuple[int, ...] | None = None
        #: The last frame's final loss as a share of a constant prediction's (scene cuts).
        self._previous_share: float | None = None
        self._scene_cut_rule = SceneCutRule(self.config.scene_cut_factor)
        # Warm frames keep Adam's moments too (a fresh Adam's first steps undo what was carried).
        self._optimizer: torch.optim.Optimizer | None = None
        #: Durations of a step and of a frame's finish, for deadlines (engine/deadline.py).
        self.step_times = StepTimes()
        #: The stream whose warm state is live in the model (None: the default stream).
        self._stream: Hashable = None
        self._parked = ParkedStreams()
        #: This frame's sparse-head plans (_sparse_plan), emptied as each frame starts.
        self._frame_plans: dict[tuple[int, int, bool], SparseHeadPlan] = {}
        self._autocast_dtype = check_precision(self.model.device, self.config.dtype)
        # Depth Anything V2's decoder, and its encoder where torch runs it (precision.py).
        self.model.hold_weights(self._autocast_dtype, self.config.encoder_backend == 'torch')
        #: Each adapted layer's LoRA form per network input shape, and its timings (lora_paths).
        self.path_choice = PathChoice(getattr(self.adaptation, 'adapters', None),
                                      lora_form(self.config), self._autocast_dtype)
        use_deterministic_kernels(self.config)
        if self._autocast_dtype != torch.float32:
            self._probe_precision()
        self._decode = compiled(self._decode) if self.config.compile else self._decode

    def model_option_notices(self, config: TTOConfig) -> list[str]:
        """Raise ConfigError for an option the model cannot honour; return notices."""
        return model_option_notices(self.model, config)

    def reconfigure(self, config: TTOConfig) -> None:
        """
        Run the next frames with ``config``: call between frames, never during one.

        Raise ConfigError, keeping the current configuration, for an option the model cannot
        honour. Only options that leave the adaptation, the precision and the compiled graphs
        as built may differ (the node's read-only parameters hold the others); the state
        derived from the configuration (the scene-cut rule) is rebuilt.
        """
        self.model_option_notices(config)
        self.config = config
        self._scene_cut_rule = SceneCutRule(config.scene_cut_factor)

    @property
    def _uses_sparse_head(self) -> bool:
        return self.config.sparse_head and self.model.dpt_decoder

    def _probe_precision(self) -> None:
        """
        Run one step and a dense decode on a tiny image in the configured precision.

        A kernel the device lacks in that precision then fails here, at start-up, instead of
        on the first frame; any other error is raised as itself. Leaves no trace: gradients
        are returned, not accumulated.
        """
        size = 4 * self.model.patch_size
        pixel_values = self.model.preprocess(np.zeros((size, size, 3), np.uint8), None)
        position = torch.tensor([size // 3, 2 * size // 3], device=self.model.device)
        samples = SparseSamples(position, position.flip(0),
                                torch.ones(2, device=self.model.device))
        try:
            self.adaptation.reset(pixel_values)
            camera = np.diag([size, size, 1.0])  # a K, for the models that need one (DA3 metric)
            with self._autocast():
                encoded = self.model.encode(pixel_values, (size, size), camera)
            plan = (SparseHeadPlan.build(samples.rows, samples.cols, (size, size), (size, size))
                    if self._uses_sparse_head else None)
            with self._autocast():
                features = self.adaptation.features(self.model, pixel_values, encoded)
                points = self._points_prediction(features, samples, plan)
            if self.adaptation.parameters:
                torch.autograd.grad(points.float().sum(), self.adaptation.parameters,
                                    allow_unused=True)
            self._dense_prediction(pixel_values, encoded)
        except (RuntimeError, NotImplementedError, TypeError) as error:
            if not lacks_precision(error, self._autocast_dtype):  # a bug, not the dtype
                error.add_note(f'(in the start-up probe of dtype {self.config.dtype!r})')
                raise
            raise UnsupportedPrecisionError(
                f'dtype {self.config.dtype!r} does not run on {self.model.device} with this '
                f'configuration ({type(error).__name__}: {str(error).splitlines()[0]}); use '
                'float32') from error

    def reset(self, stream: Hashable = None) -> None:
        """Forget a stream's previous frame: its next one starts from the unadapted network."""
        if stream == self._stream:
            self._warm_input_shape = None
            self._previous_share = None
        else:
            self._parked.forget(stream)

    def use_stream(self, stream: Hashable) -> None:
        """Make ``stream``'s warm state live (park the current one); a new stream is cold."""
        if stream == self._stream:
            return
        warm = self._warm_input_shape is not None
        self._parked.park(self._stream, WarmState(
            self.adaptation.save_state() if warm else None, self._optimizer,
            self._warm_input_shape, self.step_times, self._previous_share))
        state = self._parked.unpark(stream)
        if state.input_shape is not None:
            self.adaptation.load_state(state.adaptation)
        # A cold stream's frame resets the adaptation itself (complete: not warm).
        self._optimizer, self._warm_input_shape = state.optimizer, state.input_shape
        self.step_times, self._stream = state.step_times, stream
        self._previous_share = state.previous_share

    @property
    def shares_encodings(self) -> bool:
        """Return whether frames can be encoded ahead, together (encode_frames)."""
        # Scopes that adapt the encoder or the input re-encode at every step with the
        # stream's own state: features encoded ahead would go unused.
        return not self.adaptation.reencodes

    def encode_frames(self, images: Sequence[np.ndarray],
                      intrinsics: Sequence[np.ndarray | None]) -> list[EncodedFrame]:
        """
        Encode several (H, W, 3) uint8 images ahead of ``complete``, batched by input shape.

        Images whose network inputs have one shape go through the encoder as one batch (a
        model without batched encoding encodes them one by one); each frame's ``seconds`` is
        its share of its batch's time. Only for scopes that keep the encoder frozen
        (``shares_encodings``): the features do not depend on any stream's adaptation.
        """
        if not self.shares_encodings:
            raise ValueError(f'scope {self.config.scope.value} re-encodes at every step: '
                             'frames cannot be encoded ahead')
        pixel_values = [self.model.preprocess(rgb, self.config.processing_size)
                        for rgb in images]
        groups: dict[tuple[int, ...], list[int]] = {}
        for index, values in enumerate(pixel_values):
            groups.setdefault(tuple(values.shape), []).append(index)
        frames: list[EncodedFrame | None] = [None] * len(images)
        for members in groups.values():
            start = time.perf_counter()
            with self._autocast():
                encoded = self.model.encode_batch(
                    [pixel_values[i] for i in members], [images[i].shape[:2] for i in members],
                    [intrinsics[i] for i in members])
            self._synchronize()
            share = (time.perf_counter() - start) / len(members)
            for index, features in zip(members, encoded):
                frames[index] = EncodedFrame(pixel_values[index], features, share)
        return frames

    def warm_state(self) -> dict | None:
        """
        Return what the next frame starts from (None: it starts cold), on the CPU.

        The adapted weights, Adam's moments and the input shape they fit: restored with
        :meth:`load_warm_state`, a later run continues a sequence as if never stopped.
        """
        if self._warm_input_shape is None:
            return None
        return portable_state(self._warm_input_shape, self._optimizer,
                              self.adaptation.capture(), self._previous_share)

    def load_warm_state(self, state: dict | None) -> None:
        """Continue from a :meth:`warm_state` (None: start the next frame cold)."""
        self.reset()
        if state is None:
            return
        device = self.model.device
        self.adaptation.restore([value.to(device) for value in state['adaptation']])
        self._optimizer = restored_adam(state['optimizer'], self.adaptation.parameters,
                                        self.config.learning_rate)
        self._warm_input_shape = tuple(state['input_shape'])
        self._previous_share = state.get('previous_share')

    def _sparse_plan(self, pixel_values: torch.Tensor, encoded: EncodedImage,
                     samples: SparseSamples) -> SparseHeadPlan | None:
        """Return the sparse head's plan of the LiDAR pixels at this input (None: dense head)."""
        if not self._uses_sparse_head:
            return None
        # Per frame, input and padding: a warm frame's start check and its steps share one.
        padded = samples.weights is not None
        key = (*pixel_values.shape[-2:], padded)
        if key not in self._frame_plans:
            self._frame_plans[key] = SparseHeadPlan.build(
                samples.rows, samples.cols, encoded.input_size, key[:2], fixed_shapes=padded)
        return self._frame_plans[key]

    @torch.no_grad()
    def _starting_loss(self, pixel_values: torch.Tensor, encoded: EncodedImage,
                       samples: SparseSamples, target: torch.Tensor,
                       plan: SparseHeadPlan | None) -> float:
        """Return the loss the adapted network as it stands leaves on this frame's LiDAR."""
        with self._autocast(), self.adaptation.decoding():
            features = self.adaptation.features(self.model, pixel_values, encoded)
            points = self._points_prediction(features, samples, plan)
        return float(alignment_loss(points, target)[0])

    @torch.no_grad()
    def _unadapted_starts_better(self, pixel_values: torch.Tensor, encoded: EncodedImage,
                                 samples: SparseSamples, target: torch.Tensor,
                                 plan: SparseHeadPlan | None, carried: float) -> bool:
        """
        Score the unadapted network against the carried weights' loss; keep the better start.

        Returns True (the adaptation left reset) when the unadapted network fits the frame's
        LiDAR pixels at least as well, or the carried loss is not finite (a diverged carry).
        """
        kept = self.adaptation.capture()
        self.adaptation.reset(pixel_values)
        if carried < self._starting_loss(pixel_values, encoded, samples, target, plan):
            self.adaptation.restore(kept)
            return False
        return True

    def _carried_start_is_worse(self, pixel_values: torch.Tensor, encoded: EncodedImage,
                                samples: SparseSamples, target: torch.Tensor) -> bool:
        """Score the carried and the unadapted weights on this frame; keep the better start."""
        plan = self._sparse_plan(pixel_values, encoded, samples)
        carried = self._starting_loss(pixel_values, encoded, samples, target, plan)
        return self._unadapted_starts_better(pixel_values, encoded, samples, target, plan,
                                             carried)

    def _follows_scene_cut(self, pixel_values: torch.Tensor, encoded: EncodedImage,
                           samples: SparseSamples, target: torch.Tensor,
                           constant_loss: float) -> bool:
        """
        Return whether the carried weights' share says a scene cut ('paper' schedule).

        A share far above the last frame's is confirmed against the unadapted network on the
        same pixels: on a sequence fitted almost perfectly, ordinary motion can multiply the
        share too, and the carried weights, if still better than a cold start, are kept.
        """
        plan = self._sparse_plan(pixel_values, encoded, samples)
        carried = self._starting_loss(pixel_values, encoded, samples, target, plan)
        if not self._scene_cut_rule.is_cut(unexplained_share(carried, constant_loss),
                                           self._previous_share):
            return False
        return self._unadapted_starts_better(pixel_values, encoded, samples, target, plan,
                                             carried)

    def _autocast(self):
        return autocast(self.model.device, self._autocast_dtype)

    def _synchronize(self) -> None:
        if self.model.device.type == 'cuda':
            torch.cuda.synchronize(self.model.device)

    def _points_prediction(self, features: EncodedImage, samples: SparseSamples,
                           plan: SparseHeadPlan | None) -> torch.Tensor:
        if plan is not None:
            return plan.evaluate(self.model, features, self.config.tail_strips,
                                 preserve_rng_state=self.config.lora_dropout > 0)
        prediction = self.model.decode(features)
        return sample_prediction(prediction, samples.rows, samples.cols, features.input_size)

    def _optimize(self, stages: list[Stage], samples: SparseSamples, target: torch.Tensor,
                  warm: bool, deadline: FrameDeadline,
                  should_stop: Callable[[], bool] | None = None,
                  shares: tuple[float, float] | None = None) -> tuple[StepTrace, Verdict]:
        """
        Run the stages' steps (engine/schedule.py) with one Adam, in order, until one stops.

        Between steps only the deadline (host clock), ``should_stop`` and the stop flags that
        have landed are checked, the host waiting at most for the step two back
        (engine/lookahead.py).
        ``shares``: the constant prediction's loss and the previous frame's share, which a
        ``catch_up`` stage's verdict reads; the verdict is returned (DONE when none was due).
        """
        config = self.config
        parameters = self.adaptation.parameters
        if not parameters or all(stage.max_steps == 0 for stage in stages):
            return StepTrace([], False, math.inf, None), Verdict.DONE
        if not warm or self._optimizer is None:
            self._optimizer = fresh_adam(self._optimizer, parameters, config.learning_rate)
        reset_learning_rate(self._optimizer, config.learning_rate)
        traces = []
        verdict = Verdict.DONE
        for stage in stages:
            if stage.max_steps == 0:
                continue
            trace = self._run_stage(stage, samples, target, deadline, should_stop)
            traces.append(trace)
            if deadline.reached or trace.diverged:
                break
            if stage.catch_up and shares is not None:
                constant_loss, previous_share = shares
                verdict = warm_verdict(unexplained_share(trace.best_loss, constant_loss),
                                       previous_share, len(trace.losses) < stage.max_steps,
                                       may_restart=config.scene_cut_factor > 0)
                if verdict is not Verdict.CONTINUE:
                    break
        return combined_trace(traces), verdict

    def _run_stage(self, stage: Stage, samples: SparseSamples, target: torch.Tensor,
                   deadline: FrameDeadline, should_stop: Callable[[], bool] | None) -> StepTrace:
        """Run one stage's steps, until its count, its end rules or the deadline."""
        pixel_values, encoded = stage.pixel_values, stage.encoded
        rules = (self._whole_step.rules if self._whole_step else StepRules)(
            self.adaptation.flat_parameters, target, stage.max_steps, self.config, stage.end)
        if self._whole_step is not None:  # sizes that repeat from frame to frame
            samples, target = padded_samples(samples, target)
        plan = self._sparse_plan(pixel_values, encoded, samples)
        if plan is not None:  # its host-side index bounds, before the steps
            plan.prepare(self.model, encoded, self.config.tail_strips)
        measure = self.path_choice.before_steps(tuple(pixel_values.shape))
        (posts := rules.posts).reset()  # the first step's duration from here
        for index in range(stage.max_steps):
            # Waits for the step two back, if it must (engine/lookahead.py): never more.
            stopped = index > 0 and rules.settle(index)
            if not deadline.another_step_fits(posts.take_durations(), posts.in_flight):
                break
            # Checked between steps: a step is the longest uninterruptible unit of work.
            if should_stop is not None and should_stop():
                raise CompletionCancelledError('stopped between optimization steps')
            if stopped:
                break
            if self._whole_step is not None and index > 0:
                self._whole_step.run(self._loss, (pixel_values, encoded, samples, target, plan),
                                     self.adaptation.parameters, rules, self._optimizer, index)
                continue
            self._step(pixel_values, encoded, samples, target, plan, rules, index)
            if measure and index == 0:  # each layer has run at this network input's shapes
                with self._autocast():
                    self.path_choice.measure(tuple(pixel_values.shape))
            rules.post()  # the step ended (its stop flag and end mark to the host)
        trace = rules.trace()
        trace.full_size = stage.full_size
        return trace

    def _loss(self, pixel_values: torch.Tensor, encoded: EncodedImage, samples: SparseSamples,
              target: torch.Tensor, plan: SparseHeadPlan | None) -> torch.Tensor:
        """Return the step's alignment loss (its forward pass; compiled with ``compile``)."""
        with self._autocast():
            features = self.adaptation.features(self.model, pixel_values, encoded)
            points = self._points_prediction(features, samples, plan)
        return alignment_loss(points, target, samples.weights,
                              fit_gradient=self._autocast_dtype == torch.float32)[0]

    def _step(self, pixel_values: torch.Tensor, encoded: EncodedImage, samples: SparseSamples,
              target: torch.Tensor, plan: SparseHeadPlan | None, rules: StepRules,
              index: int) -> None:
        """One optimization step, free of host synchronization."""
        self._optimizer.zero_grad(set_to_none=True)
        # The backward too: checkpointed bands recompute their forward with these weights.
        with self.adaptation.weights_for_one_step(self._autocast):
            loss = self._loss(pixel_values, encoded, samples, target, plan)
            loss.backward()
        rules.decide(index, loss, post=False)  # posted once the step has ended
        rules.apply(self._optimizer)

    @torch.no_grad()
    def _dense_prediction(self, pixel_values: torch.Tensor, encoded: EncodedImage
                          ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Return the (H, W) prediction and, for models that have one, the confidence."""
        confidence = None
        with self._autocast(), self.adaptation.decoding():
            features = self.adaptation.features(self.model, pixel_values, encoded)
            if self.model.has_confidence:
                prediction, confidence = self.model.decode_with_confidence(features)
            else:
                strips = self.config.tail_strips if self.model.dpt_decoder else 1
                prediction = (decode_in_strips(self.model, features, strips) if strips > 1
                              else self._decode(features))
        if confidence is not None:
            confidence = resize_prediction(confidence.float(), encoded.input_size)[0]
        return resize_prediction(prediction.float(), encoded.input_size)[0], confidence

    def _final_prediction(self, pixel_values: torch.Tensor, encoded: EncodedImage,
                          samples: SparseSamples, target: torch.Tensor, trace: StepTrace,
                          deadline: FrameDeadline):
        """
        Decode densely: the final weights, or the best if worse (and a second decode fits).

        After divergence the best are decoded at once; under 'paper' the last is the result.
        """
        deadline.begin_finish()
        if trace.diverged and trace.best_state is not None:
            self.adaptation.restore(trace.best_state)
        dense, confidence = self._dense_prediction(pixel_values, encoded)
        loss, fit = alignment_loss(dense[samples.rows, samples.cols], target)
        final_is_worse = not math.isfinite(float(loss)) or (
            trace.full_size and float(loss) > trace.best_loss)
        deadline.end_finish()
        if (trace.best_state is not None and not trace.diverged and final_is_worse
                and deadline.second_decode_fits()):
            self.adaptation.restore(trace.best_state)
            dense, confidence = self._dense_prediction(pixel_values, encoded)
            loss, fit = alignment_loss(dense[samples.rows, samples.cols], target)
        check_finite(dense, 0 if trace.best_state else len(trace.losses), self.config)
        return dense, confidence, loss, fit

    def complete(self, rgb: np.ndarray, sparse_depth: np.ndarray,
                 deadline: float | None = None,
                 should_stop: Callable[[], bool] | None = None,
                 intrinsics: np.ndarray | None = None, stream: Hashable = None,
                 encoded: EncodedFrame | None = None) -> CompletionResult:
        """
        Complete one frame: (H, W, 3) uint8 RGB and (H, W) sparse metres (0/NaN = none).

        ``deadline`` (a ``time.monotonic()`` value; default: ``config.time_budget`` seconds
        from now, when set) stops the optimizer steps in time to return by then, with the
        best iterate so far (see engine/deadline.py). The encoder pass and one dense decode
        always run, so a budget below their cost is overrun by that much.

        ``should_stop`` is polled before every optimization step; when it returns True the
        frame is abandoned with CompletionCancelledError (the warm-start state is reset).

        ``intrinsics``: the image's 3x3 camera matrix K (pixels), for models that take the
        camera (UniDepthV2; without it, UniDepthV2 predicts its own); others ignore it.

        ``stream``: whose warm start this frame continues (a camera's name; streams.py).
        ``encoded``: this image's features from ``encode_frames``, instead of encoding here.

        Raises InsufficientSparseDepthError when no valid sparse depth exists, or fewer than
        ``min_points`` with the 'error' policy; with the default 'align' policy such a frame
        gets scale/shift alignment only (status ALIGNMENT_ONLY).
        """
        start = time.perf_counter()
        config = self.config
        if deadline is None and config.time_budget > 0:
            deadline = deadline_in(config.time_budget)
        frame_deadline = FrameDeadline(deadline, self.step_times)
        rgb, sparse_depth = check_frame(rgb, sparse_depth)
        self._frame_plans.clear()
        decodes = self.adaptation.decodes
        samples = SparseSamples.from_map(sparse_depth, config.min_depth, config.max_depth,
                                         self.model.device)
        too_few = samples.count < config.min_points
        if samples.count == 0 or (too_few and config.few_points is FewPointsPolicy.ERROR):
            raise InsufficientSparseDepthError(few_points_message(
                samples, sparse_depth, config.min_depth, config.max_depth, config.min_points))
        self.use_stream(stream)
        if encoded is not None and tuple(encoded.encoded.input_size) != rgb.shape[:2]:
            raise ValueError(f'features encoded ahead are of a {encoded.encoded.input_size} '
                             f'image, not of this {rgb.shape[:2]} one')
        pixel_values = (self.model.preprocess(rgb, config.processing_size) if encoded is None
                        else encoded.pixel_values)
        warm = config.warm_start and self._warm_input_shape == tuple(pixel_values.shape)
        if not warm:
            self.adaptation.reset(pixel_values)
        ahead_seconds = 0.0 if encoded is None else encoded.seconds
        if encoded is None:
            with self._autocast():  # the encoder in the reduced precision too
                features = self.model.encode(pixel_values, rgb.shape[:2], intrinsics)
            self._synchronize()
        else:
            features = encoded.encoded
        with self._autocast():
            sky = model_sky(self.model, features)
        if sky is not None:  # LiDAR on what the model calls sky (glass, thin wires) is left out
            samples = samples.outside(sky)
            too_few = samples.count < config.min_points
            if samples.count == 0 or (too_few and config.few_points is FewPointsPolicy.ERROR):
                raise InsufficientSparseDepthError(
                    f'{samples.count} sparse depths of this frame lie off what the model calls '
                    f'sky, fewer than min_points ({config.min_points})')
        encoded_at = time.perf_counter()

        target = depth_to_target(samples.depth, self.model.prediction_space)
        constant_loss = float(((target - target.mean()) ** 2).sum())
        coarse = (coarse_input(self.model, pixel_values, features)
                  if config.schedule == 'fast' and not too_few else None)
        scene_cut = False
        if warm and not too_few and config.scene_cut_factor > 0:
            if config.schedule == 'paper':
                scene_cut = self._follows_scene_cut(pixel_values, features, samples, target,
                                                    constant_loss)
            else:
                scene_cut = self._carried_start_is_worse(*(coarse or (pixel_values, features)),
                                                         samples, target)
        if scene_cut:  # the carried weights fit another scene: start this frame cold
            self.adaptation.reset(pixel_values)
            warm = False
        full = (pixel_values, features)
        stages = [] if too_few else plan_stages(config, warm, full, coarse,
                                                self._previous_share)
        try:
            with self.adaptation.optimizing():  # LoRA dropout acts here, not in the output
                trace, verdict = self._optimize(stages, samples, target, warm, frame_deadline,
                                                should_stop, (constant_loss, self._previous_share))
                if verdict is Verdict.RESTART_COLD:  # the warm steps showed another scene
                    self.adaptation.reset(pixel_values)
                    warm, scene_cut = False, True
                    cold, _ = self._optimize(plan_stages(config, False, full, coarse, None),
                                             samples, target, False, frame_deadline,
                                             should_stop)
                    trace = combined_trace([trace, cold])
        except CompletionCancelledError:
            self._warm_input_shape = None  # half-adapted weights are no starting point
            raise
        decode_start = time.perf_counter()
        dense, confidence, loss, fit = self._final_prediction(
            pixel_values, features, samples, target, trace, frame_deadline)
        self._frame_plans.clear()  # frame data: not kept between frames
        depth = aligned_to_depth(fit.apply(dense), self.model.prediction_space,
                                 config.min_depth, config.max_depth)
        confidence = None if confidence is None else confidence.float()
        result_depth, confidence, sky, numbers = to_host(  # the frame's one wait at its end
            depth.float(), confidence, sky, torch.stack([loss, fit.scale, fit.shift]).float())
        loss, scale, shift = numbers.tolist()
        end = time.perf_counter()
        status = (CompletionStatus.DIVERGED if trace.diverged else
                  CompletionStatus.OPTIMIZED if trace.losses else CompletionStatus.ALIGNMENT_ONLY)
        # A diverged frame is not a good starting point for the next one.
        keep_warm = config.warm_start and status is not CompletionStatus.DIVERGED
        self._warm_input_shape = tuple(pixel_values.shape) if keep_warm else None
        self._previous_share = unexplained_share(loss, constant_loss) if keep_warm else None
        return CompletionResult(
            depth=result_depth, status=status, scale=scale, shift=shift,
            num_points=samples.count, iterations=len(trace.losses), warm_started=warm,
            losses=trace.losses, final_loss=loss, backtracks=trace.backtracks,
            stopped_at_deadline=frame_deadline.reached,
            encode_seconds=encoded_at - start + ahead_seconds, optimize_seconds=end - encoded_at,
            total_seconds=end - start + ahead_seconds, final_decode_seconds=end - decode_start,
            confidence=confidence, scene_cut=scene_cut, sky=sky,
            decodes=self.adaptation.decodes - decodes)
