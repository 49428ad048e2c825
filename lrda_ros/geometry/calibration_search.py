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

**Optimizer.** Levinson & Thrun search a grid of small perturbations around the current
calibration and move to the best. The score is a sum over a few thousand outline points of a
smooth (spread, bilinearly sampled) edge map: cheap to evaluate, without a useful analytic
gradient through the pixel grid, and with side peaks. So the search is derivative-free:

1. the rotation alone by *compass search* (each angle ±step, the best of those moves taken,
   the steps halved when none gains, from 1 degree down to 0.01), then Levinson & Thrun's grid
   around the peak (5 x 5 x 5 rotations, ±0.5 degree), restarting the compass from any better
   point it finds (roll and pitch can hide a higher peak from the compass);
2. on a moving rig, the time offset scanned over its whole range in 5 ms steps, the rotation
   re-fitted at each offset (the offset's profile has side peaks, and an offset turns the
   LiDAR as a yaw of the mount would);
3. every free parameter together by compass search from there.

**Confidence.** At the optimum the score's Hessian ``H`` (central differences) and each
frame's gradient ``g_f`` give the sandwich covariance ``H^-1 (sum_f g_f g_f^T) H^-1`` with the
frames as independent samples: a parameter's standard error grows where the frames disagree
and where the score is flat along it, alone or together with another (a time offset on a rig
moving at one constant twist is the same as a rotation and translation of the mount, and the
covariance says so). A parameter is *observable* when moving it by its tolerance costs at least
``least_drop`` of the score with the others re-adjusted (its marginal curvature) and its peak
lies inside the search range (not within a fifth of its edge). An unobservable parameter is
reported without a value and held at zero (the given calibration), the others searched again.
The verdict is ``suspect`` when an observable parameter's correction exceeds its tolerance and
three standard errors and the score gains at least ``min_gain``; ``consistent`` when none does;
and ``not enough evidence`` for too few frames, outline points or image edges, or nothing
observable.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .calibration_score import CalibrationFrame, PARAMETER_NAMES, WindowScore

#: Verdicts.
CONSISTENT, SUSPECT, NOT_ENOUGH_EVIDENCE = 'consistent', 'suspect', 'not enough evidence'
_DEG = np.pi / 180.0
#: The searches' finest steps: 0.01 degree, 2 mm, 0.5 ms.
_SMALLEST = np.array([0.01 * _DEG] * 3 + [0.002] * 3 + [0.0005])


@dataclass(frozen=True)
class CheckConfig:
    """How the check searches and decides; angles in degrees, lengths in m, times in s."""

    #: Fewest frames in the window (one frame has no spread to judge a peak by).
    min_frames: int = 3
    #: Fewest outline points over the window, and per frame on average.
    min_points: int = 300
    #: Mean raw edge strength (grey levels in [0, 1]) below which an image counts as blank.
    min_edge_level: float = 0.002
    #: Which parameters are searched (the time offset also needs moving frames). Translation
    #: is off by default: on the KITTI bag its peak is too flat and too tied to the rotation
    #: (doc/calibration.md).
    rotation: bool = True
    translation: bool = False
    time_offset: bool = True
    #: The search's largest excursion per parameter.
    max_rotation_deg: float = 5.0
    max_translation_m: float = 0.15
    max_time_offset_s: float = 0.15
    #: Smallest corrections that count (below: consistent).
    rotation_tolerance_deg: float = 0.3
    translation_tolerance_m: float = 0.03
    time_tolerance_s: float = 0.01
    #: Least share of the score a parameter's tolerance-sized change must cost, the other
    #: parameters re-adjusted, for the parameter to count as observed.
    least_drop: float = 0.001
    #: Least relative score gain of a suspect calibration.
    min_gain: float = 0.002

    def __post_init__(self) -> None:
        if self.min_frames < 1 or self.min_points < 1:
            raise ValueError('min_frames and min_points must be >= 1')
        for name in ('max_rotation_deg', 'max_translation_m', 'max_time_offset_s',
                     'rotation_tolerance_deg', 'translation_tolerance_m', 'time_tolerance_s',
                     'least_drop'):
            if not getattr(self, name) > 0:
                raise ValueError(f'{name} must be > 0, got {getattr(self, name)}')

    def scales(self) -> np.ndarray:
        """Return each parameter's unit of search (1 degree, 0.1 m, 20 ms) in theta's units."""
        return np.array([_DEG] * 3 + [0.1] * 3 + [0.02])

    def bounds(self) -> np.ndarray:
        """Return each parameter's largest excursion in theta's units."""
        return np.array([self.max_rotation_deg * _DEG] * 3 + [self.max_translation_m] * 3
                        + [self.max_time_offset_s])

    def tolerances(self) -> np.ndarray:
        """Return each parameter's smallest correction that counts, in theta's units."""
        return np.array([self.rotation_tolerance_deg * _DEG] * 3
                        + [self.translation_tolerance_m] * 3 + [self.time_tolerance_s])


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


def _pattern_search(score: WindowScore, theta: np.ndarray, free: np.ndarray,
                    steps: np.ndarray, smallest: np.ndarray, bounds: np.ndarray
                    ) -> tuple[np.ndarray, float]:
    """
    Maximize ``score`` over the ``free`` entries by compass search; return (theta, best).

    Every free parameter is tried ±step and the best move taken (the steepest of the
    compass's directions: taking the first gain can lock a coupled pair, roll and pitch, into
    a side peak); without any gain the steps halve, down to ``smallest``.
    """
    theta = theta.copy()
    best = score(theta)
    steps = steps.copy()
    while np.any(free & (steps >= smallest)):
        trials = []
        for index in np.flatnonzero(free & (steps >= smallest)):
            for sign in (1.0, -1.0):
                trial = theta.copy()
                trial[index] = np.clip(trial[index] + sign * steps[index], -bounds[index],
                                       bounds[index])
                if trial[index] != theta[index]:
                    trials.append(trial)
        values = [score(trial) for trial in trials]
        if values and max(values) > best:
            best = max(values)
            theta = trials[int(np.argmax(values))]
        else:
            steps = steps / 2.0
    return theta, best


def _rotation_search(score: WindowScore, theta: np.ndarray, scales: np.ndarray,
                     smallest: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """
    Maximize over the rotation: compass search, then Levinson & Thrun's grid around the peak.

    The grid (5 x 5 x 5 rotations, ±0.5 degree) finds a higher peak a coupled pair (roll and
    pitch) can hide from the compass; the compass restarts from it until the grid finds none.
    """
    rotation_only = np.zeros(7, bool)
    rotation_only[:3] = True
    offsets = np.stack(np.meshgrid(*[np.linspace(-0.5, 0.5, 5) * _DEG] * 3, indexing='ij'),
                       axis=-1).reshape(-1, 3)
    theta, best = _pattern_search(score, theta, rotation_only, scales, smallest, bounds)
    for _ in range(10):
        grid = np.repeat(theta[None], len(offsets), axis=0)
        grid[:, :3] = np.clip(grid[:, :3] + offsets, -bounds[:3], bounds[:3])
        values = np.array([score(trial) for trial in grid])
        if values.max() <= best:
            break
        theta, best = _pattern_search(score, grid[int(np.argmax(values))], rotation_only,
                                      scales / 4, smallest, bounds)
    return theta


def _time_scan(score: WindowScore, theta: np.ndarray, rotation: bool, scales: np.ndarray,
               smallest: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """
    Return theta at the best time offset of a scan over its whole range (5 ms steps).

    The offset's profile has side peaks, so it is scanned rather than climbed. An offset also
    turns the LiDAR as a yaw of the mount would: with the rotation searched, each offset of
    the scan gets its own best rotation, fitted from the given one (a fit carried from offset
    to offset, or started from the rotation fitted without an offset, stops in side peaks), so
    the scan follows that ridge instead of crossing it.
    """
    rotation_only = np.zeros(7, bool)
    rotation_only[:3] = rotation
    best, best_value = theta, -np.inf
    for offset in np.arange(-bounds[6], bounds[6] + 1e-9, 0.005):
        current = np.where(rotation_only, 0.0, theta)
        current[6] = offset
        if rotation:
            current, value = _pattern_search(score, current, rotation_only, scales,
                                             smallest * 4, bounds)
        else:
            value = score(current)
        if value > best_value:
            best, best_value = current.copy(), value
    return best


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


def _differences(score: WindowScore, theta: np.ndarray, index: np.ndarray,
                 h: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """
    Return the score's Hessian over ``index`` (central differences), frame gradients, score.

    The gradients are each frame's (F, n), as shares of the window score (a frame's score
    over the number of frames); the score is the window's at ``theta``, or a tenth of the
    edge maps' scale where that is larger (``WindowScore.scale``; a contrast map's score is
    near zero): the unit relative drops are taken in.
    """
    n = len(index)
    center = score.per_frame(theta)

    def at(offsets: dict[int, float]) -> np.ndarray:
        trial = theta.copy()
        for position, sign in offsets.items():
            trial[index[position]] += sign * h[position]
        return score.per_frame(trial)

    plus = [at({i: 1.0}) for i in range(n)]
    minus = [at({i: -1.0}) for i in range(n)]
    gradients = np.zeros((len(center), n))
    for i in range(n):
        gradients[:, i] = (plus[i] - minus[i]) / (2 * h[i])
    total = max(float(center.mean()), 0.1 * score.scale)  # the unit drops are measured in
    hessian = np.zeros((n, n))
    for i in range(n):
        hessian[i, i] = (plus[i].mean() - 2 * center.mean() + minus[i].mean()) / h[i] ** 2
        for j in range(i + 1, n):
            cross = (at({i: 1.0, j: 1.0}).mean() - at({i: 1.0, j: -1.0}).mean()
                     - at({i: -1.0, j: 1.0}).mean() + at({i: -1.0, j: -1.0}).mean())
            hessian[i, j] = hessian[j, i] = cross / (4 * h[i] * h[j])
    return hessian, gradients / len(center), total


def _curvature_inverse(hessian: np.ndarray, total: float) -> np.ndarray:
    """Return ``(-H)^-1`` with a curvature floor: a flat direction gets a large variance."""
    if hessian.size == 0:
        return hessian
    values, vectors = np.linalg.eigh(-(hessian + hessian.T) / 2)
    values = np.maximum(values, 1e-9 * max(total, 1e-12))
    return (vectors / values) @ vectors.T


def _observable(hessian: np.ndarray, total: float, tolerances: np.ndarray,
                least_drop: float) -> np.ndarray:
    """
    Return which parameters the window observes: those whose *marginal* peak is sharp.

    A parameter's marginal curvature ``1 / ((-H)^-1)_pp`` is what the score loses when the
    parameter moves and every other free one re-adjusts to make up for it (the score's
    profile). A parameter counts as observed when moving it by its tolerance so costs at least
    ``least_drop`` of the score; the weakest one is dropped (held at the given value) and the
    rest judged again without it.
    """
    kept = np.ones(len(tolerances), bool)
    while kept.any():
        positions = np.flatnonzero(kept)
        inverse = _curvature_inverse(hessian[np.ix_(positions, positions)], total)
        drops = 0.5 * tolerances[positions] ** 2 / np.diag(inverse) / max(total, 1e-12)
        weakest = int(np.argmin(drops))
        if drops[weakest] >= least_drop:
            break
        kept[positions[weakest]] = False
    return kept


def _standard_errors(hessian: np.ndarray, gradients: np.ndarray, total: float) -> np.ndarray:
    """Return the sandwich standard errors with the frames as samples."""
    frames, n = gradients.shape
    if n == 0:
        return np.zeros(0)
    inverse = _curvature_inverse(hessian, total)
    meat = gradients.T @ gradients * frames / max(frames - 1, 1)
    return np.sqrt(np.maximum(np.diag(inverse @ meat @ inverse), 0.0))


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
    free, time_note = _free_parameters(frames, config)
    theta = _search(score, free, config)
    steps = np.array([0.15 * _DEG] * 3 + [0.03] * 3 + [0.005])
    index = np.flatnonzero(free)
    hessian, _, total = _differences(score, theta, index, steps[index])
    observable = np.zeros(7, bool)
    observable[index] = _observable(hessian, total, config.tolerances()[index],
                                    config.least_drop)
    # A peak at the edge of the search range is no peak: the score still rises beyond it.
    observable &= np.abs(theta) < 0.8 * config.bounds()
    if np.any(free & ~observable):  # hold what the window cannot see at the given value
        theta = np.where(observable, theta, 0.0)
        theta, _ = _pattern_search(score, theta, observable, config.scales() / 8, _SMALLEST,
                                   config.bounds())
    errors = np.full(7, np.nan)
    index = np.flatnonzero(observable)
    hessian, gradients, total = _differences(score, theta, index, steps[index])
    errors[index] = _standard_errors(hessian, gradients, total)
    given, corrected = score.per_frame(zero), score.per_frame(theta)
    parameters = tuple(_estimate(index, theta, errors, free, observable, time_note)
                       for index in range(7))
    check = CalibrationCheck(
        verdict=CONSISTENT, reason='', theta=theta, parameters=parameters,
        score_given=float(given.mean()), score_corrected=float(corrected.mean()),
        frames=len(frames), points=points, evaluations=score.evaluations,
        score_unit=score.scale, frame_scores=tuple(zip(given.tolist(), corrected.tolist())))
    return _with_verdict(check, observable, errors, config)


def _search(score: WindowScore, free: np.ndarray, config: CheckConfig) -> np.ndarray:
    """Return the correction maximizing ``score`` over ``free``, searched from zero."""
    scales, bounds = config.scales(), config.bounds()
    theta = np.zeros(7)
    if config.rotation and free[:3].any():
        theta = _rotation_search(score, theta, scales, _SMALLEST, bounds)
    if free[6]:
        theta = _time_scan(score, theta, config.rotation, scales, _SMALLEST, bounds)
    theta, _ = _pattern_search(score, theta, free, scales / 4, _SMALLEST, bounds)
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


def _estimate(index: int, theta: np.ndarray, errors: np.ndarray, free: np.ndarray,
              observable: np.ndarray, time_note: str) -> ParameterEstimate:
    name = PARAMETER_NAMES[index]
    if not free[index]:
        note = (time_note or 'not searched') if index == 6 else 'not searched'
        return ParameterEstimate(name, None, None, False, False, note)
    if not observable[index]:
        return ParameterEstimate(name, None, float(errors[index]), False, True,
                                 'not observable in this window: the score has no clear peak '
                                 'along it (or it trades off against another parameter)')
    return ParameterEstimate(name, float(theta[index]), float(errors[index]), True, True)


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
