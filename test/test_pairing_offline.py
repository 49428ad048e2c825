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
One pairing rule: the node over DDS and ``lrda eval --bag`` pair a recording's frames alike.

The recording: an ouster-ros LiDAR (stamped at the scan's start, ``t`` per point) and a camera
0, 30, 60 and 90 ms into each sweep. With motion alignment on (the default) both pair each
image with the sweep that spans it, by the sweep's middle; with it off, both by header stamps
(an image 60 ms into a sweep then goes with the next one, 40 ms after it).
"""

from __future__ import annotations

import json

from conftest import spin_until
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from lrda_ros.cli import main as lrda_main  # noqa: E402, I100
from lrda_ros.geometry import CameraModel  # noqa: E402
from lrda_ros.ros.bag_writer import write_bag  # noqa: E402
from lrda_ros.ros.builders import camera_model_to_camera_info, rgb_to_image_msg  # noqa: E402
from lrda_ros.ros.node import CompletionNode  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image, PointCloud2  # noqa: E402
from std_msgs.msg import Header  # noqa: E402
from test_node_sweep_pairing import driver_cloud, PERIOD_NS, stamp, START_NS  # noqa: E402

MATRIX = [0.0, -1.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
PHASES_MS = (0, 30, 60, 90, 10, 70)
MS = 1_000_000
#: The rig's topics and their message types.
KINDS = {'image': Image, 'camera_info': CameraInfo, 'points': PointCloud2}


def recording() -> list[tuple[str, int, object]]:
    """Return the rig's messages as (topic, log time ns, message), in the order they come."""
    camera = CameraModel(np.array([[40.0, 0, 32], [0, 40.0, 24], [0, 0, 1]]), 64, 48)
    rgb = np.tile(np.linspace(0, 255, 64, dtype=np.uint8)[None, :, None], (48, 1, 3))
    messages = [('points', START_NS - PERIOD_NS, driver_cloud('ouster', START_NS - PERIOD_NS,
                                                              'lidar'))]
    for k, phase_ms in enumerate(PHASES_MS):
        sweep_ns = START_NS + k * PERIOD_NS
        image_ns = sweep_ns + phase_ms * MS
        header = Header(frame_id='camera', stamp=stamp(image_ns))
        # Log times: the image when taken, the cloud when its sweep has ended.
        messages += [('image', image_ns, rgb_to_image_msg(rgb, header)),
                     ('camera_info', image_ns, camera_model_to_camera_info(camera, header)),
                     ('points', sweep_ns + PERIOD_NS, driver_cloud('ouster', sweep_ns, 'lidar'))]
    return sorted(messages, key=lambda record: record[1])


def node_pairs(ros_context, namespace, model_dir, align: bool) -> list[tuple[int, int]]:
    """Return the (image, cloud) header stamps the node's synchronizer pairs, over DDS."""
    node = CompletionNode(context=ros_context, namespace=namespace, parameter_overrides=[
        Parameter('model', value=str(model_dir)), Parameter('device', value='cpu'),
        Parameter('lidar_to_camera.matrix', value=MATRIX),
        Parameter('motion.align', value=align)])
    pairs = []

    def record(camera, image, info, clouds):  # what the synchronizer handed over
        pairs.append((image.header.stamp.sec * 10**9 + image.header.stamp.nanosec,
                      clouds[0].header.stamp.sec * 10**9 + clouds[0].header.stamp.nanosec))

    node._on_synchronized = record
    executor = SingleThreadedExecutor(context=ros_context)
    peer = rclpy.create_node('rig', namespace=namespace, context=ros_context)
    for member in (node, peer):
        executor.add_node(member)
    publishers = {topic: peer.create_publisher(kind, topic, 10) for topic, kind in KINDS.items()}
    try:
        assert spin_until(executor, lambda: all(
            p.get_subscription_count() > 0 for p in publishers.values()), 20)
        received = node.cameras[0].subscriptions_handle.monitor.received
        for count, (topic, _, message) in enumerate(recording(), start=1):
            publishers[topic].publish(message)
            # Each message is in before the next is sent: the recording's order.
            assert spin_until(executor, lambda: sum(received) == count, 20), (topic, count)
    finally:
        executor.shutdown()
        node.destroy_node()
        peer.destroy_node()
    return pairs


def eval_pairs(tmp_path, align: bool) -> tuple[list[tuple[int, int]], dict]:
    """Return the (image, cloud) header stamps ``lrda eval --bag`` paired, and the rule."""
    bag, output = tmp_path / 'rig_bag', tmp_path / 'eval'
    write_bag(bag, [('/rig/' + topic, log_ns, message) for topic, log_ns, message
                    in recording()])
    assert lrda_main(['eval', '--bag', str(bag), '--output', str(output), '--methods',
                      'scale-shift', '--model', 'demo', '--device', 'cpu', '--figures', '0',
                      '--lidar-to-camera-matrix', ','.join(str(v) for v in MATRIX),
                      '-p', f'motion.align:={str(align).lower()}']) == 0
    pairing = json.loads((output / 'summary.json').read_text())['metadata']['pairing']
    return [(sets[0], sets[2]) for sets in pairing['sets_ns']], pairing


@pytest.mark.parametrize('align', [True, False], ids=['motion_align', 'header_stamps'])
def test_the_node_and_lrda_eval_pair_a_scan_start_recording_alike(
        ros_context, namespace, tiny_model_dir, tmp_path, capsys, align):
    offline, pairing = eval_pairs(tmp_path, align)
    assert pairing['by_sweep_middle'] is align
    assert ('sweep' if align else 'header stamps') in pairing['rule']
    assert 'frames paired as the node pairs them' in capsys.readouterr().out
    live = node_pairs(ros_context, namespace, tiny_model_dir, align)
    assert live == offline
    images = [START_NS + k * PERIOD_NS + phase * MS for k, phase in enumerate(PHASES_MS)]
    if align:  # every image, each with the sweep it was taken in
        assert live == [(image, START_NS + k * PERIOD_NS) for k, image in enumerate(images)]
        return
    # By header stamps: each image with the scan-start stamp nearest it, where that one is
    # within the slop and recorded (60 and 70 ms in: the next sweep's).
    starts = [START_NS + k * PERIOD_NS for k in range(-1, len(PHASES_MS))]
    expected = [(image, min(starts, key=lambda s: abs(s - image))) for image in images]
    expected = [(image, cloud) for image, cloud in expected if abs(cloud - image) < 50 * MS]
    assert set(live) <= set(expected) and len(live) >= len(PHASES_MS) - 2, (live, expected)
    assert any(cloud > image for image, cloud in live)  # some paired with the next sweep
