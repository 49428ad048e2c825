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
The one rule that pairs clouds with images, for the node and every offline path.

A synchronized set is an image, its camera_info and one cloud per LiDAR whose stamps lie
within ``slop_s``, matched by the approximate time synchronizer (``queue_size`` messages per
input). With motion alignment on (``motion.align``), a cloud takes part by the middle of its
sweep (:func:`~lrda_ros.messages.sweep_stamp.at_sweep_middle`: its point times, else the
configured azimuth sweep, else its header stamp); off, by its header stamp. The node's
synchronizer and :meth:`~lrda_ros.messages.rosbag.RosbagSource.synchronize` (``lrda eval
--bag``, ``lrda calibrate``, ``lrda densify``) both see clouds through :meth:`PairingRule.view`,
so a bag replayed into the node and the same bag read offline pair the same frames.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .sweep_alignment import MotionConfig
from .sweep_stamp import at_sweep_middle


@dataclass(frozen=True)
class PairingRule:
    """How clouds are paired with images: the node's ``sync.*`` and ``motion.*``."""

    slop_s: float = 0.05
    queue_size: int = 10
    #: ``enabled``: clouds by their sweep's middle (its ``time_field``, ``azimuth`` and
    #: ``max_point_offset_s`` say where that is); off: by their header stamps.
    motion: MotionConfig = field(default_factory=MotionConfig)

    @property
    def by_sweep_middle(self) -> bool:
        """Return whether clouds are paired by their sweep's middle (else header stamps)."""
        return self.motion.enabled

    def view(self, cloud: Any) -> Any:
        """Return what the synchronizer pairs ``cloud`` by."""
        return at_sweep_middle(cloud, self.motion) if self.by_sweep_middle else cloud

    def describe(self) -> str:
        """Return the rule in words, as reports state it."""
        how = ('clouds by the middle of their sweep (point times, else the azimuth sweep, else '
               'the header stamp; motion.align on)' if self.by_sweep_middle
               else 'clouds by their header stamps (motion.align off)')
        return (f'{how}, within sync.slop {self.slop_s:g} s, sync.queue_size '
                f'{self.queue_size}')
