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
Delivery of replayed messages: wait for subscribers, and know what they acknowledged.

A replay must deliver what it says it published, or say what it could not. Publishers are
reliable with a deep history (:data:`REPLAY_QOS`), so a reliable subscriber that falls behind
gets retransmissions rather than gaps. Before each message and at the end,
:class:`DeliveryTracker` asks every publisher whether its reliable subscribers acknowledged
everything so far (``Publisher.wait_for_all_acked``, what ``ros2 bag play
--wait-for-all-acked`` uses); a message pushed out of the history unacknowledged is lost to
that subscriber. What was never confirmed is named by topic and stamp. Best-effort subscribers
(``ros2 topic echo`` started before the publisher, SensorDataQoS) acknowledge nothing: a
message to them cannot be confirmed, and the report says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import threading
import time
from typing import Any

from rclpy.duration import Duration
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

#: Messages kept per topic until every reliable subscriber acknowledged them: 5 s of a 10 Hz
#: sensor. Memory is used only while a subscriber lags (50 images of 1920x1200 rgb8: 350 MB).
REPLAY_DEPTH = 50
#: Reliable, as ``ros2 bag play`` offers recorded sensor topics.
REPLAY_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=REPLAY_DEPTH,
                        reliability=ReliabilityPolicy.RELIABLE,
                        durability=DurabilityPolicy.VOLATILE)
#: Seconds given to discovery once every topic has a subscriber: the publisher sees the
#: subscription before the subscription has matched the publisher, and a best-effort one drops
#: what arrives meanwhile.
DISCOVERY_SETTLE_S = 0.5
#: Stamps named per topic in a report line; the rest are counted.
_STAMPS_SHOWN = 5


def wait_for_subscribers(publishers: dict[str, Any], timeout_s: float,
                         stop: threading.Event) -> list[str]:
    """
    Wait up to ``timeout_s`` for a subscriber on every topic; return the topics without one.

    Once all have one, waits :data:`DISCOVERY_SETTLE_S` more. ``stop`` ends the wait early.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not stop.is_set():
        if all(p.get_subscription_count() > 0 for p in publishers.values()):
            stop.wait(DISCOVERY_SETTLE_S)
            return []
        stop.wait(0.05)
    return [topic for topic, p in publishers.items() if p.get_subscription_count() == 0]


@dataclass
class TopicDelivery:
    """What one publisher sent, and what its subscribers confirmed."""

    publisher: Any
    published: int = 0
    #: Stamps (s) of messages not yet acknowledged by every reliable subscriber, oldest first.
    pending: list[float] = field(default_factory=list)
    #: Stamps of messages pushed out of the history before every reliable subscriber had them.
    evicted: list[float] = field(default_factory=list)
    #: The most subscribers seen at once, and the most best-effort ones among them.
    subscribers: int = 0
    best_effort: int = 0


@dataclass
class DeliveryTracker:
    """Per topic: messages published, and those every reliable subscriber acknowledged."""

    depth: int = REPLAY_DEPTH
    topics: dict[str, TopicDelivery] = field(default_factory=dict)

    def before_publish(self, topic: str, publisher: Any, node: Any, stamp_s: float) -> None:
        """Note a message stamped ``stamp_s`` about to go out on ``topic``."""
        entry = self.topics.setdefault(topic, TopicDelivery(publisher))
        if entry.pending and publisher.wait_for_all_acked(Duration(seconds=0)):
            entry.pending.clear()
        if len(entry.pending) >= self.depth:  # KEEP_LAST drops the oldest for the new one
            entry.evicted.append(entry.pending.pop(0))
        entry.published += 1
        entry.pending.append(stamp_s)
        entry.subscribers = max(entry.subscribers, publisher.get_subscription_count())
        entry.best_effort = max(entry.best_effort, sum(
            1 for info in node.get_subscriptions_info_by_topic(publisher.topic_name)
            if info.qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT))

    def wait(self, timeout_s: float, stop: threading.Event) -> None:
        """Wait up to ``timeout_s`` until every reliable subscriber acknowledged everything."""
        deadline = time.monotonic() + timeout_s
        waiting = [entry for entry in self.topics.values() if entry.pending]
        while waiting and not stop.is_set():
            # Short waits, so that a stop request is noticed at once.
            for entry in list(waiting):
                if entry.publisher.wait_for_all_acked(Duration(seconds=0.05)):
                    entry.pending.clear()
                    waiting.remove(entry)
            if time.monotonic() >= deadline:
                return

    @property
    def published(self) -> int:
        return sum(entry.published for entry in self.topics.values())

    def unconfirmed(self) -> dict[str, list[float]]:
        """Return, per topic, the stamps of messages some reliable subscriber did not get."""
        return {topic: entry.evicted + entry.pending for topic, entry in self.topics.items()
                if entry.evicted or entry.pending}

    def report(self) -> list[str]:
        """Return one line per topic whose delivery is not confirmed (none: all was)."""
        lines = []
        for topic, stamps in self.unconfirmed().items():
            entry = self.topics[topic]
            shown = ', '.join(f'{stamp:.3f}' for stamp in stamps[:_STAMPS_SHOWN])
            more = (f' and {len(stamps) - _STAMPS_SHOWN} more'
                    if len(stamps) > _STAMPS_SHOWN else '')
            lines.append(f'{topic}: {len(stamps)} of {entry.published} messages not '
                         f'confirmed received by every reliable subscriber (stamps '
                         f'{shown}{more})')
        nobody = [topic for topic, entry in self.topics.items() if entry.subscribers == 0]
        if nobody:
            lines.append(f'no subscriber on {", ".join(nobody)}: those messages went to nobody')
        best_effort = [topic for topic, entry in self.topics.items() if entry.best_effort]
        if best_effort:
            lines.append(
                f'best-effort subscribers on {", ".join(best_effort)} acknowledge nothing, so '
                'delivery to them cannot be confirmed (large messages are often lost that '
                'way): subscribe reliable (ros2 topic echo --qos-reliability reliable; a node: '
                '-p qos_overrides.<topic>.subscription.reliability:=reliable) or play slower '
                '(--rate)')
        return lines
