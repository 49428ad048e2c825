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

"""Rigid transforms ``T_a_b`` and a tree of them that chains lookups between frames."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from .checks import as_points, InvalidTransformError, readonly_copy


def _quaternion_to_rotation(quaternion_xyzw: np.ndarray) -> np.ndarray:
    """Return the rotation matrix of a unit quaternion ``(x, y, z, w)``."""
    x, y, z, w = quaternion_xyzw
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


@dataclass(frozen=True, eq=False)
class RigidTransform:
    """
    Rigid transform ``T_a_b``: ``p_a = rotation @ p_b + translation``.

    ``rotation`` must be orthonormal with determinant +1 (within 1e-5, so calibration
    files printed with 6-7 significant digits are accepted as they are).
    """

    rotation: np.ndarray
    translation: np.ndarray

    def __post_init__(self) -> None:
        rotation = np.asarray(self.rotation, dtype=np.float64)
        translation = np.asarray(self.translation, dtype=np.float64)
        if rotation.shape != (3, 3) or translation.shape != (3,):
            raise InvalidTransformError(
                'rotation must be 3x3 and translation must have shape (3,), got '
                f'{rotation.shape} and {translation.shape}')
        _check_rotation(rotation, atol=1e-5)
        if not np.all(np.isfinite(translation)):
            raise InvalidTransformError(f'translation must be finite, got {translation}')
        object.__setattr__(self, 'rotation', readonly_copy(rotation))
        object.__setattr__(self, 'translation', readonly_copy(translation))

    @classmethod
    def identity(cls) -> RigidTransform:
        return cls(np.eye(3), np.zeros(3))

    @classmethod
    def from_translation_quaternion(cls, translation_xyz: np.ndarray,
                                    quaternion_xyzw: np.ndarray) -> RigidTransform:
        """
        Build a transform from a translation and an ``(x, y, z, w)`` quaternion.

        The quaternion is normalized first (ROS messages are often slightly off unit);
        a zero or non-finite quaternion is rejected.
        """
        quaternion = np.asarray(quaternion_xyzw, dtype=np.float64)
        if quaternion.shape != (4,) or not np.all(np.isfinite(quaternion)):
            raise InvalidTransformError(
                f'quaternion must be 4 finite numbers (x, y, z, w), got {quaternion_xyzw}')
        norm = np.linalg.norm(quaternion)
        if norm < 1e-9:
            raise InvalidTransformError(
                'quaternion has zero length; the identity rotation is (0, 0, 0, 1)')
        return cls(_quaternion_to_rotation(quaternion / norm), translation_xyz)

    @classmethod
    def from_matrix(cls, matrix: np.ndarray, atol: float = 1e-5) -> RigidTransform:
        """Build a transform from a 4x4 homogeneous matrix, checking that it is rigid."""
        homogeneous = np.asarray(matrix, dtype=np.float64)
        if homogeneous.shape != (4, 4):
            raise InvalidTransformError(
                f'matrix must be 4x4 homogeneous, got shape {homogeneous.shape}')
        if not np.allclose(homogeneous[3], [0.0, 0.0, 0.0, 1.0], rtol=0.0, atol=atol):
            raise InvalidTransformError(
                f'last row of a rigid transform must be [0, 0, 0, 1], got {homogeneous[3]}')
        _check_rotation(homogeneous[:3, :3], atol=atol)
        return cls(homogeneous[:3, :3], homogeneous[:3, 3])

    def as_matrix(self) -> np.ndarray:
        matrix = np.eye(4)
        matrix[:3, :3] = self.rotation
        matrix[:3, 3] = self.translation
        return matrix

    def quaternion_xyzw(self) -> np.ndarray:
        """Return the rotation as a unit quaternion (x, y, z, w) with w >= 0."""
        m = self.rotation
        # Shepperd's method: build from the largest of the four squared components.
        squares = np.array([1 + m[0, 0] - m[1, 1] - m[2, 2], 1 - m[0, 0] + m[1, 1] - m[2, 2],
                            1 - m[0, 0] - m[1, 1] + m[2, 2], 1 + np.trace(m)])
        k = int(np.argmax(squares))
        scale = 0.5 / np.sqrt(squares[k])
        off = {0: (m[1, 0] + m[0, 1], m[0, 2] + m[2, 0], m[2, 1] - m[1, 2]),
               1: (m[1, 0] + m[0, 1], m[2, 1] + m[1, 2], m[0, 2] - m[2, 0]),
               2: (m[0, 2] + m[2, 0], m[2, 1] + m[1, 2], m[1, 0] - m[0, 1]),
               3: (m[2, 1] - m[1, 2], m[0, 2] - m[2, 0], m[1, 0] - m[0, 1])}[k]
        others = [i for i in range(4) if i != k]
        quaternion = np.empty(4)
        quaternion[k] = 0.5 * np.sqrt(squares[k])
        quaternion[others] = np.asarray(off) * scale
        quaternion /= np.linalg.norm(quaternion)
        return quaternion if quaternion[3] >= 0 else -quaternion

    def inverse(self) -> RigidTransform:
        rotation_t = self.rotation.T
        return RigidTransform(rotation_t, -rotation_t @ self.translation)

    def apply(self, points: np.ndarray) -> np.ndarray:
        """Map ``(N, 3)`` points from the source frame into the target frame (float64)."""
        source = as_points(points)
        # Written out rather than ``source @ R.T``: a multi-threaded BLAS call for a 3x3
        # product can stall for tens of milliseconds on a busy CPU. One output column at a
        # time over all points (broadcasting against the 3 columns loops 3 values at a time,
        # several times slower), each summed in the same order: x r0 + y r1 + z r2 + t.
        x, y, z = source.T
        moved = np.empty((source.shape[0], 3))
        for row, (r0, r1, r2) in enumerate(self.rotation):
            column = moved[:, row]
            np.multiply(x, r0, out=column)
            column += y * r1
            column += z * r2
            column += self.translation[row]
        return moved

    def __matmul__(self, other: RigidTransform) -> RigidTransform:
        """Compose transforms: ``T_a_b @ T_b_c == T_a_c``."""
        if not isinstance(other, RigidTransform):
            return NotImplemented
        return RigidTransform(self.rotation @ other.rotation,
                              self.rotation @ other.translation + self.translation)


def _check_rotation(rotation: np.ndarray, atol: float) -> None:
    """Raise ``InvalidTransformError`` unless ``rotation`` is a proper rotation."""
    if not np.all(np.isfinite(rotation)):
        raise InvalidTransformError(f'rotation must be finite, got {rotation.tolist()}')
    error = np.max(np.abs(rotation.T @ rotation - np.eye(3)))
    if error > atol:
        raise InvalidTransformError(
            f'rotation is not orthonormal (max |R^T R - I| = {error:.3g} > {atol:g})')
    if np.linalg.det(rotation) <= 0:
        raise InvalidTransformError('rotation has determinant -1 (a reflection), expected +1')


def _slerp_quaternions(q0: np.ndarray, q1: np.ndarray, fraction: float) -> np.ndarray:
    """Spherical linear interpolation of unit quaternions (x, y, z, w), shortest arc."""
    dot = float(np.dot(q0, q1))
    if dot < 0.0:
        q1, dot = -q1, -dot
    if dot > 0.9995:  # nearly parallel: linear interpolation is exact enough and stable
        blended = q0 + fraction * (q1 - q0)
        return blended / np.linalg.norm(blended)
    angle = np.arccos(dot)
    return (np.sin((1 - fraction) * angle) * q0 + np.sin(fraction * angle) * q1) / np.sin(angle)


def interpolate_transforms(T0: RigidTransform, T1: RigidTransform,
                           fraction: float) -> RigidTransform:
    """Blend two transforms as tf2 does: linear translation, slerp rotation (0 -> T0, 1 -> T1)."""
    quaternion = _slerp_quaternions(T0.quaternion_xyzw(), T1.quaternion_xyzw(), fraction)
    translation = T0.translation + fraction * (T1.translation - T0.translation)
    return RigidTransform.from_translation_quaternion(translation, quaternion)


class _TimedEdge:
    """Samples of one transform over time (a /tf edge), looked up at a stamp."""

    def __init__(self) -> None:
        self.stamps: list[int] = []
        self.transforms: list[RigidTransform] = []

    def add(self, stamp_ns: int, transform: RigidTransform) -> None:
        index = int(np.searchsorted(self.stamps, stamp_ns, side='left'))
        if index < len(self.stamps) and self.stamps[index] == stamp_ns:
            self.transforms[index] = transform
            return
        self.stamps.insert(index, stamp_ns)
        self.transforms.insert(index, transform)

    def window(self, start_ns: int, stop_ns: int) -> list[tuple[int, RigidTransform]]:
        """
        Return the samples a lookup in [``start_ns``, ``stop_ns``] reads.

        Those inside, the last one at or before the start and the first one after the stop.
        The first sample after the stop is needed even for a lookup at the stop itself: at a
        sample's own stamp :meth:`at` interpolates towards the next one (fraction 0).
        """
        first = max(int(np.searchsorted(self.stamps, start_ns, side='right')) - 1, 0)
        last = min(int(np.searchsorted(self.stamps, stop_ns, side='right')) + 1, len(self.stamps))
        return list(zip(self.stamps[first:last], self.transforms[first:last]))

    def at(self, stamp_ns: int | None) -> RigidTransform:
        """Interpolate between the samples around ``stamp_ns``; hold the first / last outside."""
        if stamp_ns is None or stamp_ns >= self.stamps[-1]:
            return self.transforms[-1]
        index = int(np.searchsorted(self.stamps, stamp_ns, side='right'))
        if index == 0:
            return self.transforms[0]
        t0, t1 = self.stamps[index - 1], self.stamps[index]
        return interpolate_transforms(self.transforms[index - 1], self.transforms[index],
                                      (stamp_ns - t0) / (t1 - t0))


class TransformTree:
    """
    Transforms keyed by (parent, child); lookups chain through the tree.

    Static transforms (``/tf_static``) hold at all times; timed ones (``/tf``) are
    interpolated at the lookup stamp (translation linearly, rotation by slerp, as tf2 does)
    and held constant before the first and after the last sample.
    """

    def __init__(self) -> None:
        # frame -> neighbour -> (edge, inverted): each edge is stored once, in both directions.
        self._edges: dict[str, dict[str, tuple[RigidTransform | _TimedEdge, bool]]] = {}

    def add(self, parent: str, child: str, T_parent_child: RigidTransform,
            stamp_ns: int | None = None) -> None:
        """
        Add T_parent_child (maps points in ``child`` into ``parent``).

        ``stamp_ns`` None makes it static; otherwise it is a sample of a timed transform.
        A static transform of an edge wins over timed samples of it.
        """
        existing = self._edges.get(parent, {}).get(child)
        if stamp_ns is None:
            edge: RigidTransform | _TimedEdge = T_parent_child
        elif existing is not None and isinstance(existing[0], _TimedEdge) and not existing[1]:
            existing[0].add(int(stamp_ns), T_parent_child)
            return
        elif existing is not None and isinstance(existing[0], RigidTransform):
            return
        else:
            edge = _TimedEdge()
            edge.add(int(stamp_ns), T_parent_child)
        self._edges.setdefault(parent, {})[child] = (edge, False)
        self._edges.setdefault(child, {})[parent] = (edge, True)

    def window(self, start_ns: int, stop_ns: int) -> 'TransformTree':
        """
        Return a tree whose lookups between ``start_ns`` and ``stop_ns`` equal this one's.

        It holds every static transform and, of each timed edge, only the samples those lookups
        read (:meth:`_TimedEdge.window`): a small picklable part of a long recording's /tf for
        one frame, looked up elsewhere (a densifying worker) bit for bit as here.
        """
        part = TransformTree()
        for parent, neighbours in self._edges.items():
            for child, (edge, inverted) in neighbours.items():
                if inverted:
                    continue  # each edge once, in the direction it was added
                if isinstance(edge, RigidTransform):
                    part.add(parent, child, edge)
                    continue
                for stamp_ns, transform in edge.window(start_ns, stop_ns):
                    part.add(parent, child, transform, stamp_ns)
        return part

    @property
    def frames(self) -> set[str]:
        """Return every frame named by a transform."""
        return set(self._edges)

    def _hop(self, frame: str, neighbour: str, stamp_ns: int | None) -> RigidTransform:
        edge, inverted = self._edges[frame][neighbour]
        transform = edge.at(stamp_ns) if isinstance(edge, _TimedEdge) else edge
        return transform.inverse() if inverted else transform

    def connected(self, frame: str) -> set[str]:
        """Return the frames linked to ``frame`` through any chain (itself included)."""
        seen, queue = {frame}, deque([frame])
        while queue:
            for neighbour in self._edges.get(queue.popleft(), {}):
                if neighbour not in seen:
                    seen.add(neighbour)
                    queue.append(neighbour)
        return seen

    def lookup(self, target: str, source: str, stamp_ns: int | None = None) -> RigidTransform:
        """
        Return T_target_source at ``stamp_ns`` (None: the latest samples).

        Raises KeyError whose message says which frame is missing or which trees the two
        frames belong to when they are not linked.
        """
        if target == source:
            return RigidTransform.identity()
        # Breadth-first search from the target: each hop composes T_target_next.
        found = {target: RigidTransform.identity()}
        queue = deque([target])
        while queue:
            frame = queue.popleft()
            for neighbour in self._edges.get(frame, {}):
                if neighbour in found:
                    continue
                found[neighbour] = found[frame] @ self._hop(frame, neighbour, stamp_ns)
                if neighbour == source:
                    return found[neighbour]
                queue.append(neighbour)
        raise KeyError(self._missing_chain(target, source))

    def _missing_chain(self, target: str, source: str) -> str:
        missing = [frame for frame in (source, target) if frame not in self._edges]
        if not self._edges:
            return f'no transforms at all, so nothing links {source!r} to {target!r}'
        if missing:
            return (f'no transform names frame(s) {missing}, so nothing links {source!r} to '
                    f'{target!r}; known frames: {sorted(self.frames)}')
        return (f'{source!r} and {target!r} are in separate trees: {source!r} links to '
                f'{sorted(self.connected(source))}, {target!r} to '
                f'{sorted(self.connected(target))}')
