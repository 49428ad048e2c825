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
The completion node's cameras: each one's topics, counters, timing and subscriptions.

Without the ``cameras`` parameter the node has one unnamed camera on the unprefixed topics
(``image`` ... ``depth``). With ``cameras: [front, left]`` every camera reads and publishes the
same topics under its name (``front/image`` ... ``front/depth``), synchronizes its own inputs,
continues its own warm start (the engine's stream of that name), reserves its own publishing
time in the time budget and reports its own /diagnostics status; the model is loaded once.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Hashable, TYPE_CHECKING

import numpy as np
from sensor_msgs.msg import CameraInfo, Image

from .builders import depth_to_image_msg
from .diagnostics import NodeStatistics
from .frame_messages import frame_messages
from .subscriptions import SynchronizedSubscriptions
from ..errors import InputError
from ..pipeline import CompletionPipeline, FrameOutputs, PreparedFrame
from ..settings import NodeSettings

if TYPE_CHECKING:  # a name of torch's engine: the node starts, and checks, without torch
    from ..engine import EncodedFrame

#: Each output's publisher attribute (CompletionCore's pub_depth, ...), by frame_messages' name.
_PUBLISHERS = {'depth': 'pub_depth', 'confidence': 'pub_confidence', 'camera_info': 'pub_info',
               'colored': 'pub_colored', 'points_dense': 'pub_points'}


@dataclass
class Camera:
    """One camera of the completion node: everything that is not shared between cameras."""

    #: '' for the single unnamed camera.
    name: str = ''
    stats: NodeStatistics = field(default_factory=NodeStatistics)
    #: Synchronizer losses already warned about, per reason.
    reported_losses: Counter = field(default_factory=Counter)
    #: The last processed frame's image stamp: an older one means time went back.
    last_frame_ns: int | None = None
    #: Seconds the last publishing took: the time budget reserves it.
    publish_seconds: float = 0.0
    subscriptions_handle: SynchronizedSubscriptions | None = None
    #: Output publishers by attribute (CompletionCore's pub_depth, ...); see node.py.
    publishers: dict[str, Any] = field(default_factory=dict)

    def topic(self, relative: str) -> str:
        """Return this camera's name of a node topic: ``front/depth`` for ``depth``."""
        return f'{self.name}/{relative}' if self.name else relative

    @property
    def stream(self) -> Hashable:
        """Return the engine stream whose warm start this camera's frames continue."""
        return self.name or None

    @property
    def label(self) -> str:
        """Return the prefix of this camera's log lines ('' for the single camera)."""
        return f'camera {self.name}: ' if self.name else ''

    def status_name(self, node_name: str) -> str:
        """Return the name of this camera's /diagnostics status for the node ``node_name``."""
        return f'{node_name}/{self.name}' if self.name else node_name

    def publisher(self, attribute: str) -> Any:
        """Return the output publisher ``attribute`` (pub_depth, ...), None when absent."""
        return self.publishers.get(attribute)

    def subscribed(self, attribute: str) -> bool:
        """Return whether the output publisher ``attribute`` exists and has a subscriber."""
        publisher = self.publisher(attribute)
        return publisher is not None and publisher.get_subscription_count() > 0

    def wants_completion(self) -> bool:
        """Return whether any dense output of this camera has a subscriber."""
        return any(self.subscribed(attribute) for attribute in _PUBLISHERS.values())

    def deadline(self, received_at: float, budget: float) -> float | None:
        """Return when the optimization must end so the frame publishes within its budget."""
        return received_at + budget - self.publish_seconds if budget > 0 else None

    def publish_lidar_maps(self, prepared: PreparedFrame, header: Any,
                           settings: NodeSettings) -> None:
        """Publish a prepared frame's hold-out and (when subscribed) sparse LiDAR maps."""
        if prepared.heldout_depth is not None:
            self.publisher('pub_holdout').publish(
                _lidar_map_image(prepared.heldout_depth, header))
        if self.subscribed('pub_sparse') and settings.publish_sparse_depth:
            self.publisher('pub_sparse').publish(_lidar_map_image(prepared.sparse_depth, header))

    def publish_outputs(self, image: Image, info: CameraInfo, outputs: FrameOutputs,
                        settings: NodeSettings) -> None:
        """
        Publish a completed frame on this camera's outputs that have subscribers.

        Every message is built before the first is published: a subscriber on this machine
        woken by the depth would take a core from the confidence and the rest still being
        built (``lrda hold-rate`` on 2 cores, doc/performance.md).
        """
        for publisher, message in self._output_messages(image, info, outputs, settings):
            publisher.publish(message)

    def _output_messages(self, image: Image, info: CameraInfo, outputs: FrameOutputs,
                         settings: NodeSettings) -> list[tuple[Any, Any]]:
        """Return (publisher, message) of each output with subscribers, in publishing order."""
        enabled = {'colored': settings.publish_depth_colored,
                   'points_dense': settings.publish_points_dense}
        wanted = [name for name, attribute in _PUBLISHERS.items()
                  if enabled.get(name, True) and self.subscribed(attribute)]
        messages = frame_messages(outputs, image.header, info, wanted, settings.colormap_range,
                                  settings.points_stride)
        return [(self.publisher(_PUBLISHERS[name]), message)
                for name, message in messages.items()]


def _lidar_map_image(sparse: np.ndarray, header: Any) -> Image:
    """Return a sparse map (0 = none) as a 32FC1 image with NaN = none (REP 118)."""
    return depth_to_image_msg(np.where(sparse > 0, sparse, np.nan), header)


@dataclass
class PendingFrame:
    """A camera's prepared frame waiting in the worker's round for its completion."""

    camera: Camera
    image: Image
    info: CameraInfo
    prepared: PreparedFrame
    settings: NodeSettings
    pipeline: CompletionPipeline
    #: When the synchronized set arrived (time.monotonic): the time budget starts there.
    received_at: float
    #: The node clock (ROS time, simulated under use_sim_time) when it arrived (ns).
    received_clock_ns: int
    #: Seconds reading and preparing it took.
    prepare_seconds: float
    #: Of those, the seconds reading its messages, projecting its LiDAR and publishing its
    #: LiDAR maps (sparse_depth, holdout_depth) (stage_times.py).
    read_seconds: float = 0.0
    project_seconds: float = 0.0
    publish_seconds: float = 0.0


def encode_ahead(pending: list[PendingFrame]) -> list[EncodedFrame | None]:
    """Encode a round's frames as batches (batch_encoding), else leave it to each frame."""
    if len(pending) < 2 or not pending[0].settings.batch_encoding \
            or not pending[0].pipeline.completer.shares_encodings:
        return [None] * len(pending)
    try:
        return pending[0].pipeline.encode([frame.prepared for frame in pending])
    except InputError:  # each frame's own pass then says which camera's frame it was
        return [None] * len(pending)


def first_camera(attribute: str) -> property:
    """Return a node property reading ``attribute`` of its first (or only) camera."""
    def read(node: Any) -> Any:
        cameras = getattr(node, 'cameras', None)
        if not cameras:
            return None
        camera = cameras[0]
        return getattr(camera, attribute) if hasattr(camera, attribute) \
            else camera.publisher(attribute)
    return property(read, doc=f"The first camera's {attribute} (the only camera without "
                              '``cameras``).')


def node_cameras(names: tuple[str, ...]) -> list[Camera]:
    """Return the node's cameras: one per name, or the single unnamed one."""
    return [Camera(name) for name in names] or [Camera()]
