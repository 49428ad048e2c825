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

"""Tests for lrda_ros.messages.sync: message_filters' approximate-time rule, built in."""

import sys
import threading
import time
import types
import uuid

from lrda_ros.messages.stamps import header_stamp_ns as stamp_ns
from lrda_ros.messages.sync import ApproximateTimeSync, InvalidSyncConfigError
from lrda_ros.messages.sync_losses import suggested_slop_s
from lrda_ros.ros.subscriptions import create_synchronized_subscriptions, message_filters_available
import numpy as np
import pytest
from std_msgs.msg import Header

MS = 1_000_000  # nanoseconds


def stamped(time_ns, label=None):
    """Return a std_msgs Header-carrying message (a Header inside a simple holder)."""
    header = Header(frame_id=label or str(time_ns))
    header.stamp.sec, header.stamp.nanosec = divmod(int(time_ns), 1_000_000_000)
    return type('Stamped', (), {'header': header})()


class Recorder:
    """Collect emitted sets as tuples of stamps in nanoseconds."""

    def __init__(self):
        self.sets = []

    def __call__(self, *msgs):
        self.sets.append(tuple(stamp_ns(m) for m in msgs))


def make_sync(num_inputs=3, queue_size=10, slop_s=0.02):
    recorder = Recorder()
    return ApproximateTimeSync(num_inputs, queue_size, slop_s, recorder), recorder


def feed(sync, arrivals):
    for index, time_ns in arrivals:
        sync.add(index, stamped(time_ns))


def test_exact_stamps_match():
    sync, recorder = make_sync()
    feed(sync, [(0, 100 * MS), (1, 100 * MS), (2, 100 * MS)])
    assert recorder.sets == [(100 * MS,) * 3]
    assert sync.num_emitted == 1 and sync.num_evicted == 0


def test_within_slop_matches_and_outside_does_not():
    sync, recorder = make_sync(num_inputs=2, slop_s=0.010)
    feed(sync, [(0, 0), (1, 9 * MS)])
    assert recorder.sets == [(0, 9 * MS)]
    # Exactly one slop apart: a candidate (|dt| <= slop) but the spread must be < slop.
    feed(sync, [(0, 100 * MS), (1, 110 * MS)])
    feed(sync, [(0, 200 * MS), (1, 211 * MS)])
    assert recorder.sets == [(0, 9 * MS)]


def test_jittered_sequence_emits_every_frame_once_in_order():
    # 3 inputs at 10 Hz with +-5 ms jitter: a frame's stamps spread <= 10 ms < 20 ms slop,
    # neighbouring frames are >= 90 ms apart, so each frame matches exactly its own.
    rng = np.random.default_rng(4)
    sync, recorder = make_sync(num_inputs=3, queue_size=5, slop_s=0.020)
    frames = [[k * 100 * MS + int(rng.integers(-5 * MS, 5 * MS)) for _ in range(3)]
              for k in range(50)]
    for stamps in frames:
        for index in rng.permutation(3):
            sync.add(int(index), stamped(stamps[index]))
    assert recorder.sets == [tuple(stamps) for stamps in frames]
    assert sync.num_evicted == 0


def test_streams_with_different_latency_still_pair_up():
    # The LiDAR stream lags the camera by two frames; queues of 5 hold the backlog.
    sync, recorder = make_sync(num_inputs=2, queue_size=5, slop_s=0.020)
    camera = [k * 100 * MS + 3 * MS for k in range(10)]
    lidar = [k * 100 * MS for k in range(10)]
    for k in range(12):
        if k < 10:
            sync.add(0, stamped(camera[k]))
        if k >= 2:
            sync.add(1, stamped(lidar[k - 2]))
    assert recorder.sets == list(zip(camera, lidar))


def test_first_combination_in_nearest_first_order_wins():
    sync, recorder = make_sync(num_inputs=3, slop_s=0.010)
    # None of these can complete a set (input 2 is empty).
    feed(sync, [(0, 0), (0, 9 * MS), (1, 14 * MS), (1, 1 * MS)])
    assert recorder.sets == []
    # For t = 5 ms the candidates, nearest first, are input 0: [9, 0], input 1: [1, 14].
    # (9, 1, 5) is tried first and spreads 8 ms < 10 ms.
    feed(sync, [(2, 5 * MS)])
    assert recorder.sets == [(9 * MS, 1 * MS, 5 * MS)]
    # The leftovers 0 and 14 are 14 ms apart: no set, whatever arrives on input 2 in between.
    feed(sync, [(2, 7 * MS)])
    assert recorder.sets == [(9 * MS, 1 * MS, 5 * MS)]


def test_missing_candidate_on_one_input_blocks_until_it_arrives():
    sync, recorder = make_sync(num_inputs=3, slop_s=0.010)
    feed(sync, [(0, 0), (1, 9 * MS), (2, -5 * MS)])
    # From t = -5 ms, input 1's 9 ms is 14 ms away: no candidate, nothing emitted.
    assert recorder.sets == []
    feed(sync, [(2, 4 * MS)])
    assert recorder.sets == [(0, 9 * MS, 4 * MS)]


def test_queue_overflow_evicts_oldest_and_counts():
    sync, recorder = make_sync(num_inputs=2, queue_size=3, slop_s=0.010)
    feed(sync, [(0, k * 100 * MS) for k in range(5)])
    assert sync.num_evicted == 2  # stamps 0 and 100 ms pushed out (input 1 still silent)
    feed(sync, [(1, 200 * MS)])
    assert recorder.sets == [(200 * MS, 200 * MS)]
    # Input 0 holds 300 and 400 ms, both still pairable (input 1 is at 200 ms); a stamp older
    # than all of a full queue is evicted straight away.
    feed(sync, [(0, 500 * MS), (0, 250 * MS)])
    assert sync.num_evicted == 3 and dict(sync.losses.counts) == {'no_partner': 3}
    feed(sync, [(1, 300 * MS)])
    assert recorder.sets == [(200 * MS, 200 * MS), (300 * MS, 300 * MS)]


def test_a_message_that_can_no_longer_pair_is_dropped_and_counted_at_once():
    # An image and camera_info at 10 s, the cloud at 10.5 s (slop 0.05 s), then good frames:
    # queues of 10 never overflow, so without this rule the three stayed queued, uncounted.
    sync, recorder = make_sync(num_inputs=3, queue_size=10, slop_s=0.05)
    feed(sync, [(0, 10_000 * MS), (1, 10_000 * MS), (2, 10_500 * MS), (0, 11_000 * MS)])
    # Image and cloud are past the camera_info at 10 s, and no cloud is near it: dropped. The
    # image at 10 s waits for the camera_info stream to move on too.
    assert dict(sync.losses.counts) == {'beyond_slop': 1}
    assert sync.losses.last['beyond_slop'].stamp_ns == 10_000 * MS
    feed(sync, [(1, 11_000 * MS)])
    # Every input is past the rest now: the image at 10 s and the cloud are dropped too.
    assert dict(sync.losses.counts) == {'beyond_slop': 3}
    assert sync.losses.last['beyond_slop'].offsets_ns == (-500 * MS, -500 * MS, 0)
    feed(sync, [(2, 11_003 * MS)] + [(i, 12_000 * MS) for i in range(3)])
    assert recorder.sets == [(11_000 * MS, 11_000 * MS, 11_003 * MS), (12_000 * MS,) * 3]
    assert sync.num_evicted == 3 and all(not queue for queue in sync._queues)


@pytest.mark.parametrize('time_jumps', [False, True])
def test_one_stray_stamp_ahead_drops_no_good_message(time_jumps):
    # A cloud stamped 0.5 s ahead of its frame, then the next frame on time: only the other
    # inputs passing a message make it unpairable, so the frame at 0.4 s still pairs.
    recorder = Recorder()
    sync = ApproximateTimeSync(3, 10, 0.05, recorder,
                               on_time_jump=(lambda *jump: None) if time_jumps else None)
    feed(sync, [(0, 300 * MS), (1, 300 * MS), (2, 800 * MS),
                (0, 400 * MS), (1, 400 * MS), (2, 403 * MS)])
    assert recorder.sets == [(400 * MS, 400 * MS, 403 * MS)]
    # The frame at 0.3 s lost its cloud: dropped once every input had moved past it.
    assert sync.losses.counts['beyond_slop'] == 2


def test_same_stamp_replaces_and_counts_as_evicted():
    labels = []
    sync = ApproximateTimeSync(
        2, 10, 0.01, lambda a, b: labels.append((a.header.frame_id, b.header.frame_id)))
    sync.add(0, stamped(0, 'first'))
    sync.add(0, stamped(0, 'second'))
    sync.add(1, stamped(0, 'other'))
    assert labels == [('second', 'other')] and sync.num_evicted == 1


def test_late_message_for_old_stamp_pairs_if_still_queued():
    sync, recorder = make_sync(num_inputs=2, queue_size=10, slop_s=0.010)
    feed(sync, [(0, k * 100 * MS) for k in range(6)])
    feed(sync, [(1, 2 * MS)])  # half a second late, for the first frame
    assert recorder.sets == [(0, 2 * MS)]


def test_headerless_messages_are_rejected_unless_allowed():
    sync, recorder = make_sync(num_inputs=2)
    sync.add(0, object())
    assert sync.num_rejected_headerless == 1 and recorder.sets == []
    recorder = Recorder()
    lenient = ApproximateTimeSync(2, 10, 0.01, recorder, allow_headerless=True,
                                  now_ns=lambda: 42 * MS)
    lenient.add(0, object())
    lenient.add(1, stamped(45 * MS))
    assert len(recorder.sets) == 1 and lenient.num_rejected_headerless == 0


def test_invalid_settings_raise():
    for args in [(1, 10, 0.01), (2, 0, 0.01), (2, 10, -0.1), (2, 10, float('nan'))]:
        with pytest.raises(InvalidSyncConfigError):
            ApproximateTimeSync(*args, callback=print)
    sync, _ = make_sync(num_inputs=2)
    with pytest.raises(IndexError):
        sync.add(2, stamped(0))


def test_callback_runs_outside_the_lock():
    seen = []

    def callback(*msgs):
        seen.append(sync.num_emitted)  # takes the lock: would deadlock inside it

    sync = ApproximateTimeSync(2, 10, 0.01, callback)
    worker = threading.Thread(target=feed, args=(sync, [(0, 0), (1, 0)]), daemon=True)
    worker.start()
    worker.join(timeout=5.0)
    assert not worker.is_alive() and seen == [1]


def test_two_threads_adding_concurrently():
    num_frames = 2000
    lock = threading.Lock()
    emitted = []

    def callback(a, b):
        with lock:
            emitted.append((stamp_ns(a), stamp_ns(b)))

    sync = ApproximateTimeSync(2, num_frames, 0.01, callback)
    stamps = [k * 100 * MS for k in range(num_frames)]
    threads = [threading.Thread(target=feed, args=(sync, [(index, t) for t in stamps]))
               for index in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20.0)
    assert sync.num_emitted == num_frames and sync.num_evicted == 0
    assert sorted(emitted) == [(t, t) for t in stamps]


@pytest.fixture
def ros_node():
    rclpy = pytest.importorskip('rclpy')
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor

    context = Context()
    rclpy.init(context=context)
    node = rclpy.create_node('test_sync', namespace=f'/lrda_test_{uuid.uuid4().hex[:12]}',
                             context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    yield node, executor
    executor.shutdown()
    node.destroy_node()
    rclpy.shutdown(context=context)


def test_create_synchronized_subscriptions_with_rclpy(ros_node):
    from sensor_msgs.msg import CameraInfo, Image, PointCloud2

    node, executor = ros_node
    received = []
    topics = [(Image, 'image'), (CameraInfo, 'camera_info'), (PointCloud2, 'points')]
    handle = create_synchronized_subscriptions(
        node, topics, 10, queue_size=5, slop_s=0.05,
        callback=lambda *msgs: received.append(msgs), prefer_message_filters=True)
    assert handle.backend == ('message_filters' if message_filters_available() else 'builtin')
    assert message_filters_available() or handle.num_evicted == 0
    publishers = [node.create_publisher(msg_type, topic, 10) for msg_type, topic in topics]

    deadline = time.monotonic() + 10.0
    frame = 0
    while not received and time.monotonic() < deadline:
        # Offsets of 0, 7 and 13 ms stand in for sensor jitter (all within the 50 ms slop).
        base = 1_000_000_000 + frame * 100 * MS
        for (msg_type, _), publisher, offset in zip(topics, publishers, (0, 7, 13)):
            msg = msg_type()
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(base + offset * MS,
                                                                    1_000_000_000)
            publisher.publish(msg)
        frame += 1
        executor.spin_once(timeout_sec=0.05)
        executor.spin_once(timeout_sec=0.05)
        executor.spin_once(timeout_sec=0.05)
    assert received, 'no synchronized triple within 10 s'
    image, info, cloud = received[0]
    assert (isinstance(image, Image) and isinstance(info, CameraInfo)
            and isinstance(cloud, PointCloud2))
    stamps = [stamp_ns(m) for m in received[0]]
    assert stamps[1] - stamps[0] == 7 * MS and stamps[2] - stamps[0] == 13 * MS


def _stamped(stamp: int):
    return types.SimpleNamespace(header=types.SimpleNamespace(
        stamp=types.SimpleNamespace(sec=stamp // 1_000_000_000, nanosec=stamp % 1_000_000_000)))


@pytest.mark.parametrize('prefer_message_filters', [False, True])
def test_never_synchronizing_inputs_are_counted_with_their_offset(ros_node,
                                                                  prefer_message_filters):
    # LiDAR 0.2 s after the camera (frames 0.5 s apart), slop 0.05 s: no set ever matches.
    from sensor_msgs.msg import Image

    if prefer_message_filters and not message_filters_available():
        pytest.skip('message_filters is not installed (ROS 2 install)')
    node, executor = ros_node
    received = []
    handle = create_synchronized_subscriptions(
        node, [(Image, 'cam'), (Image, 'lidar')], 10, 2, 0.05,
        callback=lambda *msgs: received.append(msgs),
        prefer_message_filters=prefer_message_filters)
    publishers = [node.create_publisher(Image, topic, 10) for topic in ('cam', 'lidar')]
    for frame in range(6):
        for publisher, offset in zip(publishers, (0, 200 * MS)):
            msg = Image()
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(
                1_000_000_000 + frame * 500 * MS + offset, 1_000_000_000)
            publisher.publish(msg)
            executor.spin_once(timeout_sec=0.2)
    deadline = time.monotonic() + 5
    while handle.num_evicted < 12 - 1 and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)
    assert received == []
    # 12 messages: each can never pair once the other sensor's next one is in, so all but the
    # last (LiDAR 3.2 s, waiting for the camera's next) are dropped at once.
    assert handle.num_evicted == 12 - 1 and handle.num_emitted == 0
    assert handle.stamp_offsets() == {'lidar': pytest.approx(0.2)}
    # Each had a partner 0.2 s away (the other sensor's nearest message): beyond the slop.
    assert handle.loss_counts() == {'beyond_slop': 11}
    assert handle.largest_spread_s() == pytest.approx(0.2)


def test_builtin_backend_when_message_filters_not_preferred(ros_node):
    from sensor_msgs.msg import Image

    node, _ = ros_node
    handle = create_synchronized_subscriptions(
        node, [(Image, 'a'), (Image, 'b')], 10, 5, 0.05, callback=print,
        prefer_message_filters=False)
    assert handle.backend == 'builtin' and len(handle.subscriptions) == 2
    assert handle.num_evicted == 0 and handle.num_emitted == 0


def install_fake_message_filters(monkeypatch) -> list:
    """Install a stand-in message_filters; return the list its constructors log calls to."""
    calls = []

    class Subscriber:
        def __init__(self, node, msg_type, topic, qos_profile):
            calls.append(('Subscriber', node, msg_type, topic, qos_profile))
            self.callbacks = []

        def registerCallback(self, callback, *args):  # noqa: N802 (message_filters' name)
            self.callbacks.append((callback, args))

        def deliver(self, msg):
            for callback, args in self.callbacks:
                callback(msg, *args)

    class ApproximateTimeSynchronizer:
        def __init__(self, subscribers, queue_size, slop):
            calls.append(('Synchronizer', len(subscribers), queue_size, slop))
            self.queue_size, self.lock = queue_size, threading.Lock()
            self.queues = [{} for _ in subscribers]
            for index, subscriber in enumerate(subscribers):
                subscriber.registerCallback(self.add, self.queues[index])

        def registerCallback(self, callback):  # noqa: N802
            calls.append(('registerCallback', callback))
            self.callback = callback

        def add(self, msg, queue):
            with self.lock:
                queue[stamp_ns(msg)] = msg
                while len(queue) > self.queue_size:
                    del queue[min(queue)]
                if all(stamp_ns(msg) in q for q in self.queues):
                    self.callback(*[q[stamp_ns(msg)] for q in self.queues])
                    for q in self.queues:
                        del q[stamp_ns(msg)]

    fake = types.ModuleType('message_filters')
    fake.Subscriber = Subscriber
    fake.ApproximateTimeSynchronizer = ApproximateTimeSynchronizer
    monkeypatch.setitem(sys.modules, 'message_filters', fake)
    return calls


#: The one node call the fake message_filters does not take: the inputs status's names.
_NAMING_NODE = types.SimpleNamespace(resolve_topic_name=lambda topic: topic)


def test_message_filters_backend_wiring(monkeypatch):
    calls = install_fake_message_filters(monkeypatch)
    assert message_filters_available()

    node, qos, emitted = _NAMING_NODE, 7, []
    handle = create_synchronized_subscriptions(
        node, [(int, 'a'), (float, 'b')], qos, 2, 0.05, callback=lambda *m: emitted.append(m))
    assert handle.backend == 'message_filters' and handle.num_evicted == 0
    assert len(handle.subscriptions) == 2
    assert calls[:3] == [('Subscriber', node, int, 'a', 7), ('Subscriber', node, float, 'b', 7),
                         ('Synchronizer', 2, 2, 0.05)]
    assert calls[3][0] == 'registerCallback'

    # 'a' at 1.0, 1.1, 1.2 (queue of 2: 1.0 pushed out while 'b' has nothing), 'b' at 1.4:
    # 'a' 1.1 and 1.2 can no longer pair (0.3 and 0.2 s from 'b': beyond the slop), taken out
    # of the synchronizer's queue and counted; then 'a' at 1.4 and the 1.4 pair is emitted.
    a, b = handle.subscriptions
    for stamp_s, subscriber in ((1.0, a), (1.1, a), (1.2, a), (1.4, b), (1.4, a)):
        subscriber.deliver(_stamped(int(stamp_s * 1e9)))
    assert handle.num_emitted == 1 and len(emitted) == 1
    assert handle.loss_counts() == {'no_partner': 1, 'beyond_slop': 2}
    assert handle.num_evicted == 3 and handle.synchronizer.queues == [{}, {}]
    beyond = handle.last_losses()['beyond_slop']
    assert (beyond.index, beyond.stamp_ns) == (0, 1_200_000_000)
    assert beyond.offsets_ns == (0, 200 * MS)
    assert handle.offsets_text(beyond) == 'a at 1.200 s: nearest b +0.200 s'
    assert handle.largest_spread_s() == pytest.approx(0.3)
    assert handle.stamp_offsets() == {'b': pytest.approx(0.0)}


def test_losses_beyond_the_slop_name_the_offset_and_the_slop_it_needs():
    # A DDAD-like rig: the LiDAR stamped 55 ms before the camera, frames 0.5 s apart.
    sync, recorder = make_sync(num_inputs=2, queue_size=2, slop_s=0.05)
    for frame in range(4):
        feed(sync, [(0, frame * 500 * MS), (1, frame * 500 * MS - 55 * MS)])
    sync.flush()
    assert recorder.sets == []
    assert dict(sync.losses.counts) == {'beyond_slop': 8}
    loss = sync.losses.last['beyond_slop']
    assert loss.spread_ns == 55 * MS
    assert sync.losses.largest_spread_ns == 55 * MS
    assert suggested_slop_s(sync.losses.largest_spread_ns) == pytest.approx(0.07)


def test_losses_without_any_partner_and_to_faster_inputs_are_no_partner():
    # Camera at 30 Hz, LiDAR at 10 Hz: two images in three have no LiDAR left to pair with.
    sync, recorder = make_sync(num_inputs=2, queue_size=3, slop_s=0.01)
    for k in range(30):
        feed(sync, [(0, k * 33_333_333)] + ([(1, k * 33_333_333)] if k % 3 == 0 else []))
    # The silent input: nothing on input 1 near the last images.
    feed(sync, [(0, 2_000 * MS + k * 100 * MS) for k in range(5)])
    assert len(recorder.sets) == 10
    assert set(sync.losses.counts) == {'no_partner'}
    assert sync.losses.counts['no_partner'] == 20 + 5 - 3  # three still queued
    assert sync.losses.last['no_partner'].offsets_ns[1] is None


def test_a_stamp_going_back_is_a_time_jump_that_clears_the_old_timeline():
    jumps = []
    recorder = Recorder()
    sync = ApproximateTimeSync(2, 4, 0.01, recorder,
                               on_time_jump=lambda *jump: jumps.append(jump))
    # Input 1 is missing its 15.0 s message: image 15.0 waits in the queue when the bag loops.
    feed(sync, [(0, 14_000 * MS), (1, 14_000 * MS), (0, 15_000 * MS), (0, 9_000 * MS)])
    assert jumps == [(0, 15_000 * MS, 9_000 * MS)]
    assert sync.losses.time_jumps == {0: 1}
    assert dict(sync.losses.counts) == {'time_jump': 1}  # 15.0 of the old timeline
    feed(sync, [(1, 9_000 * MS)])
    assert recorder.sets == [(14_000 * MS, 14_000 * MS), (9_000 * MS, 9_000 * MS)]
    # Without the callback the rule stays message_filters': counted, nothing dropped.
    plain, _ = make_sync(num_inputs=2)
    feed(plain, [(0, 15_000 * MS), (0, 9_000 * MS)])
    assert plain.losses.time_jumps == {0: 1} and plain.num_evicted == 0


def looped_replay(lag_frames, loops=2, frames=10):
    """
    Return (input, stamp) arrivals of a 1 s recording played ``loops`` times in a row.

    Image and camera_info at 10 Hz, the cloud stamped 10 ms earlier and arriving
    ``lag_frames`` frames late, as a replay interleaves them: at each loop the image's stamp
    jumps back 0.9 s while clouds of the previous pass are still on their way.
    """
    stamps = [1_000 * MS + k * 100 * MS for _ in range(loops) for k in range(frames)]
    events = []
    for position, stamp in enumerate(stamps):
        events += [(position, 0, stamp), (position, 1, stamp),
                   (position + lag_frames, 2, stamp - 10 * MS)]
    return [(index, stamp) for _, index, stamp in sorted(events, key=lambda e: e[0])]


@pytest.mark.parametrize('lag_frames', [0, 2, 3])
def test_a_looped_replay_is_a_time_jump_not_an_offset_beyond_the_slop(lag_frames):
    jumps = []
    recorder = Recorder()
    sync = ApproximateTimeSync(3, 5, 0.05, recorder,
                               on_time_jump=lambda *jump: jumps.append(jump))
    feed(sync, looped_replay(lag_frames))
    assert sync.losses.counts['beyond_slop'] == 0
    assert sync.losses.largest_spread_ns == 0  # no slop advice
    assert sync.losses.summary(['image', 'info', 'points'])['suggested_slop_s'] is None
    assert sorted(index for index, _, _ in jumps) == [0, 1, 2]
    assert sync.losses.time_jumps == {0: 1, 1: 1, 2: 1}
    # Synchronization resumes on the next set: every frame of the second pass after the
    # first lag frames pairs, image with its own cloud.
    second = recorder.sets[-(10 - lag_frames):]
    assert [s[0] for s in second] == [1_000 * MS + k * 100 * MS for k in range(lag_frames, 10)]
    assert all(s[2] == s[0] - 10 * MS for s in second)
    # Every message is in a set, lost (time_jump only), or still queued.
    assert set(sync.losses.counts) <= {'time_jump'}


def test_a_sustained_80_ms_offset_is_beyond_a_50_ms_slop_and_the_advice_pairs_it():
    arrivals = [(index, frame * 500 * MS + (80 * MS if index == 1 else 0))
                for frame in range(20) for index in (0, 1)]
    sync, recorder = make_sync(num_inputs=2, queue_size=3, slop_s=0.05)
    feed(sync, arrivals)
    assert recorder.sets == []
    assert sync.losses.counts['beyond_slop'] > 0
    assert sync.losses.largest_spread_ns == 80 * MS
    advice = sync.losses.summary(['image', 'points'])['suggested_slop_s']
    # The advice, checked by synchronizing the same stamps with it: every frame pairs.
    advised, advised_sets = make_sync(num_inputs=2, queue_size=3, slop_s=advice)
    feed(advised, arrivals)
    assert len(advised_sets.sets) == 20
    assert all(points - image == 80 * MS for image, points in advised_sets.sets)


def test_message_filters_backend_counts_a_bag_loop_as_a_time_jump(monkeypatch):
    install_fake_message_filters(monkeypatch)
    jumps, emitted = [], []
    handle = create_synchronized_subscriptions(
        _NAMING_NODE, [(int, 'image'), (float, 'points')], 7, 4, 0.05,
        callback=lambda *m: emitted.append(m), on_time_jump=lambda *j: jumps.append(j))
    image, points = handle.subscriptions
    # Two passes of a 0.3 s recording; the image of the second pass comes before the last
    # cloud of the first, and the clouds lag one frame.
    arrivals = [(image, 1.0), (image, 1.1), (points, 1.0), (image, 1.2), (points, 1.1),
                (image, 1.0), (points, 1.2), (image, 1.1), (points, 1.0), (image, 1.2),
                (points, 1.1), (points, 1.2)]
    for subscriber, stamp_s in arrivals:
        subscriber.deliver(_stamped(round(stamp_s * 1e9)))
    assert [(topic, previous, stamp) for topic, previous, stamp in jumps] == [
        ('image', 1_200 * MS, 1_000 * MS), ('points', 1_200 * MS, 1_000 * MS)]
    assert len(emitted) == 5  # every set of the second pass pairs again
    assert set(handle.loss_counts()) <= {'time_jump'}
    assert handle.largest_spread_s() == 0.0


def test_frames_lost_without_one_cloud_are_counted_against_that_cloud():
    # Image, camera_info and two clouds; the second cloud is silent for four frames, then back.
    sync, recorder = make_sync(num_inputs=4, queue_size=2, slop_s=0.02)
    for k in range(4):
        feed(sync, [(0, k * 100 * MS), (1, k * 100 * MS), (2, k * 100 * MS + 3 * MS)])
    for k in range(4, 6):
        feed(sync, [(0, k * 100 * MS), (1, k * 100 * MS), (2, k * 100 * MS + 3 * MS),
                    (3, k * 100 * MS + 5 * MS)])
    assert recorder.sets == [(k * 100 * MS, k * 100 * MS, k * 100 * MS + 3 * MS,
                              k * 100 * MS + 5 * MS) for k in (4, 5)]
    # Every image before the cloud came back waited for it; none for the others.
    assert sync.losses.missing == {3: 4} and sync.losses.counts['no_partner'] == 12
    assert sync.losses.last_missing[3].stamp_ns == 300 * MS
    summary = sync.losses.summary(['image', 'camera_info', 'points', 'points_rear'])
    assert summary['missing'] == {'points_rear': 4}
