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
The calibration check: the correction that maximizes the window's score, and how sure it is.

**Search** (optimize). Derivative-free, from the given calibration:

1. the rotation alone by *compass search*, then Levinson & Thrun's grid around the peak;
2. on a moving rig, the time offset scanned over its whole range, the rotation re-fitted at
   each offset;
3. with ``translation``, each translation whose tolerance the window can resolve by parallax
   (below) scanned over its range along its ridge with the rotation;
4. every free parameter together by compass search from there (a translation again along its
   ridge).

**Confidence** (confidence). A translation differs from a rotation only by
parallax: it is searched only where its tolerance moves the outline points, beyond what the
rotation makes up, by ``min_parallax_px`` (else it is "not observable" without a search: the
score's systematic errors would place its peak). Every searched parameter is then
*observable* only when its marginal peak is sharp (its tolerance, the others re-adjusted,
costs ``least_drop`` of the score), inside the search range, and, with ``split_halves``, the
window's two halves in time, each searched again, agree on it within its tolerance. What is
not observable is reported without a value and held at zero (the given calibration), the
others searched again. Standard errors are the frame-wise sandwich's or half the halves'
difference, the larger (consecutive frames are correlated: the sandwich alone is too small).
The verdict is ``suspect`` when an observable parameter's correction exceeds its tolerance and
three standard errors and the score gains at least ``min_gain``; ``consistent`` when none does;
and ``not enough evidence`` for too few frames, outline points or image edges, or nothing
observable.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .confidence import (
    half_window_spread, pixel_jacobian, ridge_basis, sandwich_errors, score_derivatives,
    sharp_parameters, with_parallax)
from .optimize import (
    DEG, pattern_search, rotation_search, SMALLEST, time_scan, translation_scan)
from .score import (
    CalibrationFrame, PARAMETER_NAMES, SHOWN_SCALES, SHOWN_UNITS, WindowScore)

#: Verdicts.
CONSISTENT, SUSPECT, NOT_ENOUGH_EVIDENCE = 'consistent', 'suspect', 'not enough evidence'
#: The central differences' steps: 0.15 degree, 3 cm, 5 ms.
_STEPS = np.array([0.15 * DEG] * 3 + [0.03] * 3 + [0.005])


@dataclass(frozen=True)
class PerKind:
    """One number per kind of parameter: rotation (deg), translation (m), time offset (s)."""

    rotation_deg: float
    translation_m: float
    time_offset_s: float

    def per_parameter(self) -> np.ndarray:
        """Return the number of each of theta's 7 parameters, in theta's units."""
        return np.array([self.rotation_deg * DEG] * 3 + [self.translation_m] * 3
                        + [self.time_offset_s])


@dataclass(frozen=True)
class CheckConfig:
    """How the check searches and decides; angles in degrees, lengths in m, times in s."""

    #: Which parameters are searched (the time offset also needs moving frames). Translation
    #: is off by default: a street seen from a car rarely has the near depth edges that tell
    #: it from a rotation (on the KITTI bag it is not observable: doc/calibration.md).
    rotation: bool = True
    translation: bool = False
    time_offset: bool = True
    #: The search's largest excursion per kind of parameter.
    max_excursion: PerKind = PerKind(rotation_deg=5.0, translation_m=0.15, time_offset_s=0.15)
    #: Fewest frames in the window (one frame has no spread to judge a peak by).
    min_frames: int = 3
    #: Fewest outline points over the window, and per frame on average.
    min_points: int = 300
    #: Mean raw edge strength (grey levels in [0, 1]) below which an image counts as blank.
    min_edge_level: float = 0.002
    #: Smallest corrections that count (below: consistent), per kind of parameter.
    tolerance: PerKind = PerKind(rotation_deg=0.3, translation_m=0.03, time_offset_s=0.01)
    #: Least share of the score a parameter's tolerance-sized change must cost, the other
    #: parameters re-adjusted, for the parameter to count as observed.
    least_drop: float = 0.001
    #: Least relative score gain of a suspect calibration.
    min_gain: float = 0.002
    #: Least shift (px, root-mean-square over the outline points) a translation's tolerance
    #: must move the outlines by, beyond what the rotation makes up, to be searched: the
    #: score's systematic errors on real data (motion during the sweep, where an outline
    #: falls within a beam) are about a pixel or two, and bias a translation they outweigh.
    min_parallax_px: float = 2.0
    #: Whether a parameter must also come out the same, within its tolerance, from the
    #: window's first and second half in time (confidence.half_window_spread).
    split_halves: bool = True

    def __post_init__(self) -> None:
        if self.min_frames < 1 or self.min_points < 1:
            raise ValueError('min_frames and min_points must be >= 1')
        if not self.min_parallax_px >= 0:
            raise ValueError(f'min_parallax_px must be >= 0, got {self.min_parallax_px}')
        for name, value in (('max_excursion', self.max_excursion), ('tolerance', self.tolerance)):
            if not all(number > 0 for number in vars(value).values()):
                raise ValueError(f'every {name} must be > 0, got {value}')
        if not self.least_drop > 0:
            raise ValueError(f'least_drop must be > 0, got {self.least_drop}')

    @property
    def rotation_tolerance_deg(self) -> float:
        """Return the smallest rotation correction (deg) that makes a calibration suspect."""
        return self.tolerance.rotation_deg

    def with_rotation_tolerance(self, degrees: float) -> 'CheckConfig':
        """Return this configuration with another rotation tolerance (deg)."""
        return replace(self, tolerance=replace(self.tolerance, rotation_deg=degrees))

    def scales(self) -> np.ndarray:
        """Return each parameter's unit of search (1 degree, 0.1 m, 20 ms) in theta's units."""
        return PerKind(1.0, 0.1, 0.02).per_parameter()

    def bounds(self) -> np.ndarray:
        """Return each parameter's largest excursion in theta's units."""
        return self.max_excursion.per_parameter()

    def tolerances(self) -> np.ndarray:
        """Return each parameter's smallest correction that counts, in theta's units."""
        return self.tolerance.per_parameter()


@dataclass(frozen=True)
class ParameterEstimate:
    """One parameter of the correction: value and standard error (theta's units), or why not."""

    name: str
    value: float | None
    standard_error: float | None
    observable: bool
    searched: bool
    note: str = ''


@dataclass(frozen=True)
class CalibrationCheck:
    """The check's result: verdict, the correction theta (7,), per-parameter confidence."""

    verdict: str
    reason: str
    theta: np.ndarray
    parameters: tuple[ParameterEstimate, ...]
    score_given: float
    score_corrected: float
    frames: int
    points: int
    evaluations: int
    #: The edge maps' scale (WindowScore.scale): a tenth of it is the unit of the gain where
    #: the given score is smaller (a contrast map's).
    score_unit: float = 0.0
    #: Each frame's score at the given and the corrected calibration.
    frame_scores: tuple[tuple[float, float], ...] = field(default=())

    @property
    def gain(self) -> float:
        """Return the relative score gain of the correction over the given calibration."""
        unit = max(self.score_given, 0.1 * self.score_unit)
        return (self.score_corrected - self.score_given) / unit if unit > 0 else 0.0

    def parameter(self, name: str) -> ParameterEstimate:
        """Return the estimate of parameter ``name`` (PARAMETER_NAMES)."""
        return self.parameters[PARAMETER_NAMES.index(name)]


#: Why a time offset is not searched.
NO_MOTION = ('no motion in the window (a still robot, or no odometry and point times): a time '
             'offset changes nothing')
ONE_TWIST = ("the window moves at one twist: a time offset then moves every frame's points as "
             'one fixed turn and shift of the mount would, so with the rotation searched it '
             'cannot be told apart; check it with the extrinsic trusted (rotation off) or over '
             'frames with different motions (turning both ways, speeding up)')


def one_twist(frames: list[CalibrationFrame], spread: float = 0.2) -> bool:
    """
    Return whether the moving frames share one twist, within ``spread`` of its size.

    Then ``exp(-offset xi)`` is the same rigid transform for every frame: a time offset and a
    correction of the extrinsic have the same effect on the score. Turn rates and speeds are
    compared apart (at least 0.05 rad/s and 0.5 m/s count as their size).
    """
    twists = np.array([frame.twist for frame in frames if frame.moving])
    if len(twists) < 2:
        return True
    mean = twists.mean(axis=0)
    for part, least in ((slice(0, 3), 0.5), (slice(3, 6), 0.05)):
        size = max(float(np.linalg.norm(mean[part])), least)
        if np.max(np.linalg.norm(twists[:, part] - mean[part], axis=1)) > spread * size:
            return False
    return True


def _free_parameters(frames: list[CalibrationFrame], config: CheckConfig
                     ) -> tuple[np.ndarray, str]:
    """Return the searched parameters, and why the time offset is not searched ('' if it is)."""
    free = np.zeros(7, bool)
    free[:3] = config.rotation
    free[3:6] = config.translation
    why = ''
    if not any(frame.moving for frame in frames):
        why = NO_MOTION
    elif (config.rotation or config.translation) and one_twist(frames):
        why = ONE_TWIST
    free[6] = config.time_offset and not why
    return free, why


def check_calibration(frames: list[CalibrationFrame],
                      config: CheckConfig = CheckConfig()) -> CalibrationCheck:
    """
    Return the verdict on a window of frames' calibration, its correction and confidence.

    Never raises on thin evidence: too few frames, outline points or image edges give
    :data:`NOT_ENOUGH_EVIDENCE` with the reason and a zero correction.
    """
    frames = list(frames)
    score = WindowScore(frames)
    points = sum(len(frame.points) for frame in frames)
    zero = np.zeros(7)
    reason = _too_little(frames, points, config)
    if reason:
        return _without_estimate(reason, frames, points, score)
    searched, time_note = _free_parameters(frames, config)
    free, parallax, basis = _with_parallax(score, searched, config)
    theta = _search(score, free, config, basis)
    observable, theta, spread = _observable_set(frames, score, theta, free, config, basis)
    errors = np.full(7, np.nan)
    index = np.flatnonzero(observable)
    hessian, gradients, total = score_derivatives(score, theta, index, _STEPS[index])
    errors[index] = sandwich_errors(hessian, gradients, total)
    # The halves' difference bounds the error from below where the frames are correlated.
    errors = np.where(observable & np.isfinite(spread), np.fmax(errors, spread / 2), errors)
    given, corrected = score.per_frame(zero), score.per_frame(theta)
    notes = _notes(searched, observable, time_note, parallax, spread, config)
    parameters = tuple(
        ParameterEstimate(name, float(theta[i]) if observable[i] else None,
                          float(errors[i]) if observable[i] else None, bool(observable[i]),
                          bool(searched[i]), notes[i]) for i, name in enumerate(PARAMETER_NAMES))
    check = CalibrationCheck(
        verdict=CONSISTENT, reason='', theta=theta, parameters=parameters,
        score_given=float(given.mean()), score_corrected=float(corrected.mean()),
        frames=len(frames), points=points, evaluations=score.evaluations,
        score_unit=score.scale, frame_scores=tuple(zip(given.tolist(), corrected.tolist())))
    return _with_verdict(check, observable, errors, config)


def _with_parallax(score: WindowScore, searched: np.ndarray, config: CheckConfig
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    Return the parameters to search, each translation's parallax (px; NaN elsewhere), basis.

    A translation is searched only where its tolerance moves the outline points, beyond what
    the other searched parameters make up, by at least ``config.min_parallax_px``: less than
    the score's systematic errors on real data (confidence.with_parallax), and
    its peak is placed by them rather than by the calibration. The basis moves each
    translation left along its ridge (confidence.ridge_basis).
    """
    parallax = np.full(7, np.nan)
    if not searched[3:6].any():
        return searched, parallax, np.eye(7)
    index = np.flatnonzero(searched)
    jacobian, weights = pixel_jacobian(score, np.zeros(7), index, _STEPS[index])
    kept, shifts = with_parallax(jacobian, weights, config.tolerances()[index],
                                 (index >= 3) & (index < 6), config.min_parallax_px)
    parallax[index] = shifts
    free = searched.copy()
    free[index] = kept
    return free, parallax, ridge_basis(jacobian[:, kept], weights, index[kept])


def _held(score: WindowScore, theta: np.ndarray, observable: np.ndarray,
          config: CheckConfig, basis: np.ndarray) -> np.ndarray:
    """Return theta with what is not observable held at zero and the rest searched again."""
    theta = np.where(observable, theta, 0.0)
    return pattern_search(score, theta, observable, config.scales() / 8, SMALLEST,
                          config.bounds(), basis)[0]


def _observable_set(frames: list[CalibrationFrame], score: WindowScore, theta: np.ndarray,
                    free: np.ndarray, config: CheckConfig, basis: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    Return which parameters the window observes, theta with the others held, the halves' spread.

    Sharp marginal peaks inside the search range first (confidence); then, with
    ``config.split_halves``, the window's halves in time must agree on each parameter within
    its tolerance: the one that disagrees most (relative to its tolerance) is held at the
    given value, the rest searched again, until the halves agree on all that are left.
    """
    index = np.flatnonzero(free)
    hessian, _, total = score_derivatives(score, theta, index, _STEPS[index])
    observable = np.zeros(7, bool)
    observable[index] = sharp_parameters(hessian, total, config.tolerances()[index],
                                         config.least_drop)
    # A peak at the edge of the search range is no peak: the score still rises beyond it.
    observable &= np.abs(theta) < 0.8 * config.bounds()
    if np.any(free & ~observable):
        theta = _held(score, theta, observable, config, basis)

    def climb(half: WindowScore, start: np.ndarray, which: np.ndarray) -> np.ndarray:
        # A half may peak past the window's range: let it, the spread then says so.
        return pattern_search(half, start, which, config.scales() / 8, SMALLEST,
                              2 * config.bounds(), basis)[0]

    spread = np.full(7, np.nan)  # each parameter's last spread: when judged, or when dropped
    while config.split_halves and observable.any():
        latest, _ = half_window_spread(frames, theta, observable, climb)
        spread[observable] = latest[observable]
        ratio = np.where(observable, np.nan_to_num(latest, nan=0.0) / config.tolerances(),
                         -np.inf)
        if ratio.max() <= 1.0:
            break
        observable[int(np.argmax(ratio))] = False
        theta = _held(score, theta, observable, config, basis)
    return observable, theta, spread


def _search(score: WindowScore, free: np.ndarray, config: CheckConfig,
            basis: np.ndarray) -> np.ndarray:
    """Return the correction maximizing ``score`` over ``free``, searched from zero."""
    scales, bounds = config.scales(), config.bounds()
    theta = np.zeros(7)
    if config.rotation and free[:3].any():
        theta = rotation_search(score, theta, scales, SMALLEST, bounds)
    if free[6]:
        theta = time_scan(score, theta, config.rotation, scales, SMALLEST, bounds)
    if free[3:6].any():
        theta = translation_scan(score, theta, free, basis, bounds)
    theta, _ = pattern_search(score, theta, free, scales / 4, SMALLEST, bounds, basis)
    return np.where(free, theta, 0.0)


def _too_little(frames: list[CalibrationFrame], points: int, config: CheckConfig) -> str:
    if len(frames) < config.min_frames:
        return (f'{len(frames)} frame(s) in the window, at least {config.min_frames} needed to '
                'judge a peak')
    if points < config.min_points:
        return (f'{points} LiDAR outline points (depth jumps) in the window, at least '
                f'{config.min_points} needed')
    blank = sum(frame.edge_level < config.min_edge_level for frame in frames)
    if blank > len(frames) // 2:
        return f'{blank} of {len(frames)} images have almost no edges (blank, dark or blurred)'
    return ''


def _without_estimate(reason: str, frames: list[CalibrationFrame], points: int,
                      score: WindowScore) -> CalibrationCheck:
    parameters = tuple(ParameterEstimate(name, None, None, False, False, 'not enough evidence')
                       for name in PARAMETER_NAMES)
    given = score.per_frame(np.zeros(7)) if frames else np.zeros(0)
    value = float(given.mean()) if len(given) else 0.0
    return CalibrationCheck(NOT_ENOUGH_EVIDENCE, reason, np.zeros(7), parameters, value, value,
                            len(frames), points, score.evaluations)


def _notes(searched: np.ndarray, observable: np.ndarray, time_note: str,
           parallax: np.ndarray, spread: np.ndarray, config: CheckConfig) -> list[str]:
    """Return why each parameter has no value ('' for those that have one)."""
    notes = []
    tolerances = config.tolerances()
    for index in range(7):
        shown, unit = SHOWN_SCALES[index], SHOWN_UNITS[index]
        tolerance = f'{tolerances[index] * shown:.3g} {unit}'
        if not searched[index]:
            note = (time_note or 'not searched') if index == 6 else 'not searched'
        elif observable[index]:
            note = ''
        elif parallax[index] < config.min_parallax_px:
            note = (f'not observable in this window: a change of {tolerance} moves the LiDAR '
                    f'outlines by {parallax[index]:.2f} px beyond what the other parameters '
                    f'make up, under the {config.min_parallax_px:g} px needed (too little '
                    'depth spread near the camera to tell it from a rotation)')
        elif np.isfinite(spread[index]):
            note = ('not observable in this window: its two halves in time disagree on it by '
                    f'{spread[index] * shown:.3g} {unit}, more than the tolerance ({tolerance})')
        else:
            note = ('not observable in this window: the score has no clear peak along it (or '
                    'it trades off against another parameter)')
        notes.append(note)
    return notes


def _with_verdict(check: CalibrationCheck, observable: np.ndarray, errors: np.ndarray,
                  config: CheckConfig) -> CalibrationCheck:
    if not observable.any() or (config.rotation and not observable[:3].any()):
        return replace(check, verdict=NOT_ENOUGH_EVIDENCE, theta=np.zeros(7),
                       reason='no rotation is observable in this window (too few edges that '
                              'the LiDAR outlines cross)')
    theta = check.theta
    significant = observable & (np.abs(theta) > config.tolerances()) & (
        np.abs(theta) > 3 * np.nan_to_num(errors, nan=np.inf))
    if significant.any() and check.gain >= config.min_gain:
        return replace(check, verdict=SUSPECT, reason='the data fit a corrected calibration '
                       f'better (score +{100 * check.gain:.1f} %)')
    return replace(check, verdict=CONSISTENT, reason='no correction beyond the tolerances '
                   'fits the data better')
