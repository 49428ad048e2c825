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
Scene cuts under warm start: when the carried adapters belong to another scene.

Warm start assumes the next frame looks like the last one. After a cut (a looping bag, a turn
into another room, a camera switched) the carried weights fit the old scene, and the few warm
steps cannot undo that. The signal is the loss the frame starts from: the carried weights,
before any step on the new frame, are scored on its LiDAR pixels, as a share of what a
constant prediction leaves (the target's variance; 1 = explains nothing, and scale and shift
are fitted, so the share does not depend on the scene's depth range). On a continuing
sequence it is a little above the previous frame's final share (new points, a small motion);
after a cut it is many times that. Such a frame is completed cold instead, when the unadapted
network also starts better on it than the carried weights (a sequence fitted almost perfectly
can multiply its share on ordinary motion, and then the carried weights are still the better
start).
"""

from __future__ import annotations

from dataclasses import dataclass
import math


@dataclass(frozen=True)
class SceneCutRule:
    """
    A warm frame is a cut when its starting share exceeds ``factor`` times the last final one.

    ``floor``: the last frame's share counts as at least this much, so that a frame fitted
    almost perfectly does not make every ordinary change look like a cut. ``factor`` 0
    turns detection off.
    """

    factor: float = 4.0
    floor: float = 0.02

    def is_cut(self, starting_share: float, previous_share: float | None) -> bool:
        """Return whether a warm frame starting at ``starting_share`` follows a scene cut."""
        if self.factor <= 0 or previous_share is None or not math.isfinite(previous_share):
            return False
        if not math.isfinite(starting_share):
            return True
        return starting_share > self.factor * max(previous_share, self.floor)


def unexplained_share(loss: float, constant_loss: float) -> float:
    """Return a loss as a share of a constant prediction's (NaN when the target is flat)."""
    return loss / constant_loss if constant_loss > 0 else math.nan
