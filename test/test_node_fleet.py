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

"""Many cameras on one model over real rclpy/DDS: own topics, headers, drops and statuses."""

from __future__ import annotations

from conftest import spin_until
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from builtin_interfaces.msg import Time  # noqa: E402, I100
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from lrda_ros import world  # noqa: E402
from lrda_ros.ros.builders import (  # noqa: E402
    camera_model_to_camera_info, rgb_to_image_msg, xyz_to_pointcloud2)
from lrda_ros.ros.latest_slot import LatestSlots  # noqa: E402
from lrda_ros.ros.node import CompletionNode  # noqa: E402
from lrda_ros.settings.parameters import InvalidParameterError  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image, PointCloud2  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

LIDAR_FRAME = 'lidar'
#: camera -> (width, height, seed): two resolutions.
CAMERAS = {'front': (112, 84, 3), 'side': (70, 56, 5)}


@pytest.fixture(scope='module')
def sequences():
    """Return a short synthetic sequence per camera, each at its own resolution."""
    return {name: world.make_sequence(world.SequenceConfig(
        'indoor', num_frames=3, width=width, height=height, seed=seed,
        lidar=world.LidarConfig.indoor(beams=16))) for name, (width, height, seed)
        in CAMERAS.items()}


def header(frame_id: str, stamp_ns: int) -> Header:
    return Header(frame_id=frame_id, stamp=Time(sec=stamp_ns // 10**9,
                                                nanosec=stamp_ns % 10**9))


class CameraHarness:
    """One camera's input publishers and output recorders, under its name."""

    def __init__(self, node, name: str) -> None:
        self.name = name
        self.pub_image = node.create_publisher(Image, f'{name}/image', 60)
        self.pub_info = node.create_publisher(CameraInfo, f'{name}/camera_info', 60)
        self.pub_points = node.create_publisher(PointCloud2, f'{name}/points', 60)
        self.depth: list[Image] = []
        self.info: list[CameraInfo] = []
        node.create_subscription(Image, f'{name}/depth', self.depth.append, 60)
        node.create_subscription(CameraInfo, f'{name}/depth/camera_info', self.info.append, 60)

    def publish(self, frame, stamp_ns: int, image: Image | None = None) -> None:
        camera_header = header(f'{self.name}_optical', stamp_ns)
        self.pub_image.publish(image or rgb_to_image_msg(frame.rgb, camera_header))
        self.pub_info.publish(camera_model_to_camera_info(frame.camera, camera_header))
        self.pub_points.publish(xyz_to_pointcloud2(
            frame.points_lidar[:, :3], header(LIDAR_FRAME, stamp_ns + 2_000_000)))


@pytest.fixture
def fleet(ros_context, namespace, tiny_model_dir, sequences):
    """Start a two-camera node and a harness per camera; yield them with an executor."""
    extrinsic = sequences['front'][0].T_cam_lidar  # the procedural rig: one for both
    values = {
        'model': str(tiny_model_dir), 'device': 'cpu', 'iterations': 2, 'warm_iterations': 1,
        'warm_start': True, 'min_points': 8, 'cameras': list(CAMERAS),
        'lidar_to_camera.matrix': [float(v) for v in extrinsic.ravel()],
        'projection.min_range': 0.1, 'projection.remove_occluded': False,
        'diagnostics_period': 0.2}
    node = CompletionNode(context=ros_context, namespace=namespace, parameter_overrides=[
        Parameter(name, value=value) for name, value in values.items()])
    peer = rclpy.create_node('fleet_harness', namespace=namespace, context=ros_context)
    cameras = {name: CameraHarness(peer, name) for name in CAMERAS}
    diagnostics: list[DiagnosticArray] = []
    # Deep enough that no status is lost while the test is busy elsewhere (a loaded machine).
    peer.create_subscription(DiagnosticArray, '/diagnostics', diagnostics.append, 1000)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    executor.add_node(peer)
    assert spin_until(executor, lambda: all(
        camera.publisher('pub_depth').get_subscription_count() > 0 for camera in node.cameras)
        and all(h.pub_points.get_subscription_count() > 0 for h in cameras.values()), 60)
    yield node, cameras, diagnostics, executor
    executor.shutdown()
    node.destroy_node()
    peer.destroy_node()


def stamp_of(message) -> int:
    return message.header.stamp.sec * 10**9 + message.header.stamp.nanosec


def ours(node, status) -> bool:
    """Return whether a status is this node's: /diagnostics is shared by every node running."""
    return status.name.startswith(node.get_fully_qualified_name() + '/')


def by_name(node):
    return {camera.name: camera for camera in node.cameras}


def test_two_cameras_publish_their_own_depth_with_their_own_headers(fleet, sequences):
    node, cameras, diagnostics, executor = fleet
    stats = {name: camera.stats for name, camera in by_name(node).items()}
    # front at twice the rate of side, on stamps of its own
    sent = {'front': [], 'side': []}
    for k in range(3):
        for name, period in (('front', 10**8), ('side', 2 * 10**8)):
            if name == 'side' and k == 2:
                continue
            stamp = 5 * 10**9 + k * period + (7_000_000 if name == 'side' else 0)
            cameras[name].publish(sequences[name][k], stamp)
            sent[name].append(stamp)
            assert spin_until(executor, lambda: stats[name].received == len(sent[name]), 60)
    assert spin_until(executor, lambda: all(
        s.processed + s.replaced == len(sent[name]) for name, s in stats.items()), 60)
    assert spin_until(executor, lambda: all(h.depth for h in cameras.values()), 60)
    for name, harness in cameras.items():
        width, height, _ = CAMERAS[name]
        for message in harness.depth:
            assert message.header.frame_id == f'{name}_optical'
            assert stamp_of(message) in sent[name]
            assert (message.width, message.height) == (width, height)
            depth = np.frombuffer(bytes(message.data), np.float32)
            assert np.isfinite(depth).mean() > 0.95
        assert all(stamp_of(info) in sent[name] and (info.width, info.height) == (width, height)
                   for info in harness.info)
    # The second frame of each camera continued its own camera's adaptation.
    assert all(s.dropped == {} for s in stats.values())

    def statuses():
        latest = [status for array in diagnostics for status in array.status
                  if ours(node, status) and status.name.endswith('completion')]
        return {status.name: status for status in latest}

    assert spin_until(executor, lambda: len(statuses()) >= 2, 60)
    names = sorted(statuses())
    assert names[0].endswith('/front: depth completion')
    assert names[1].endswith('/side: depth completion')


def test_bad_input_on_one_camera_never_stops_the_other(fleet, sequences):
    node, cameras, diagnostics, executor = fleet
    front, side = by_name(node)['front'].stats, by_name(node)['side'].stats
    for k in range(3):
        stamp = 7 * 10**9 + k * 10**8
        broken = rgb_to_image_msg(sequences['side'][k].rgb, header('side_optical', stamp))
        broken.data = bytes(broken.data)[:len(broken.data) // 2]  # a truncated image
        cameras['side'].publish(sequences['side'][k], stamp, image=broken)
        cameras['front'].publish(sequences['front'][k], stamp)
        assert spin_until(executor, lambda: front.processed + front.replaced == k + 1, 60)
    assert spin_until(executor, lambda: side.dropped['malformed'] + side.replaced == 3, 60)
    assert side.processed == 0 and side.dropped['malformed'] >= 1
    assert front.dropped == {} and front.processed >= 2
    assert spin_until(executor, lambda: len(cameras['front'].depth) >= 2, 60)
    assert not cameras['side'].depth

    def warned(camera: str) -> bool:
        # A status tells the period in which the drops were counted, then the steady state:
        # wait for that status among all received, not for the latest one to be it.
        return any(status.level == DiagnosticStatus.WARN and 'dropped for errors' in
                   status.message for array in diagnostics for status in array.status
                   if ours(node, status) and status.name.endswith(f'/{camera}: depth completion'))

    assert spin_until(executor, lambda: warned('side'), 60)
    assert not warned('front')


def test_a_camera_that_stops_sending_does_not_stall_the_rest(fleet, sequences):
    node, cameras, _, executor = fleet
    front, side = by_name(node)['front'].stats, by_name(node)['side'].stats
    cameras['side'].publish(sequences['side'][0], 9 * 10**9)  # then silence
    assert spin_until(executor, lambda: side.processed == 1, 60)
    for k in range(3):
        cameras['front'].publish(sequences['front'][k], 9 * 10**9 + (k + 1) * 10**8)
        assert spin_until(executor, lambda: front.processed + front.replaced == k + 1, 60)
    assert front.processed >= 2 and side.processed == 1
    # Side's inputs half there (an image without its cloud) hold nothing up either.
    cameras['side'].pub_image.publish(rgb_to_image_msg(
        sequences['side'][1].rgb, header('side_optical', 10 * 10**9)))
    cameras['front'].publish(sequences['front'][0], 10 * 10**9)
    assert spin_until(executor, lambda: front.processed + front.replaced == 4, 60)


@pytest.mark.parametrize('parameter, names, reason', [
    ('cameras', ['front', 'front'], 'more than once'),
    ('cameras', ['front', '2nd'], 'not a camera name'),
    ('cameras', ['front', '/abs'], 'not a camera name'),
    ('cameras', ['front', ''], 'not a camera name'),
    ('point_topics', [], 'at least one'),
    ('point_topics', ['points', 'points'], 'more than once'),
    ('point_topics', ['points', '/lidar/rear'], 'not a relative topic name'),
    ('point_topics', ['points', 'depth'], "camera's own topics"),
])
def test_invalid_camera_and_point_topic_lists_are_rejected_at_start_up_with_a_reason(
        ros_context, namespace, parameter, names, reason):
    with pytest.raises(InvalidParameterError, match=reason) as caught:
        CompletionNode(context=ros_context, namespace=namespace, parameter_overrides=[
            Parameter('model', value='demo'),
            Parameter(parameter, value=names, type_=Parameter.Type.STRING_ARRAY)])
    assert caught.value.field == parameter


def test_every_camera_with_a_frame_is_served_once_per_round_and_first_in_turn():
    slots: LatestSlots[str, int] = LatestSlots(['front', 'left', 'right'])
    for k in range(5):  # a fast camera floods its slot: only its newest frame waits
        assert slots.put('front', k) == (k > 0)
    slots.put('right', 0)
    assert slots.take_all(0) == [('front', 4), ('right', 0)]
    slots.put('front', 5)
    slots.put('left', 1)
    slots.put('right', 1)
    assert slots.take_all(0) == [('left', 1), ('right', 1), ('front', 5)]
    assert slots.take_all(0) == []
    slots.close()
    assert slots.take_all(None) == []


def test_the_managed_node_runs_every_camera_on_its_transitions(
        ros_context, namespace, tiny_model_dir, sequences):
    from lrda_ros.ros.lifecycle_node import CompletionLifecycleNode
    from rclpy.lifecycle import TransitionCallbackReturn

    extrinsic = sequences['front'][0].T_cam_lidar
    node = CompletionLifecycleNode(context=ros_context, namespace=namespace, parameter_overrides=[
        Parameter('model', value=str(tiny_model_dir)), Parameter('device', value='cpu'),
        Parameter('iterations', value=1), Parameter('cameras', value=list(CAMERAS)),
        Parameter('lidar_to_camera.matrix', value=[float(v) for v in extrinsic.ravel()]),
        Parameter('projection.remove_occluded', value=False)])
    peer = rclpy.create_node('fleet_managed', namespace=namespace, context=ros_context)
    cameras = {name: CameraHarness(peer, name) for name in CAMERAS}
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    executor.add_node(peer)
    try:
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
        assert [camera.subscriptions_handle.topics for camera in node.cameras] == [
            [f'{name}/image', f'{name}/camera_info', f'{name}/points'] for name in CAMERAS]
        assert spin_until(executor, lambda: all(
            h.pub_points.get_subscription_count() > 0 for h in cameras.values()), 60)
        assert spin_until(executor, lambda: all(
            c.publisher('pub_depth').get_subscription_count() > 0 for c in node.cameras), 60)
        for name, harness in cameras.items():
            harness.publish(sequences[name][0], 11 * 10**9)
        assert spin_until(executor, lambda: all(h.depth for h in cameras.values()), 60)
        assert node.trigger_deactivate() == TransitionCallbackReturn.SUCCESS
        assert node.trigger_cleanup() == TransitionCallbackReturn.SUCCESS
        assert all(not camera.publishers for camera in node.cameras)
    finally:
        executor.shutdown()
        node.destroy_node()
        peer.destroy_node()
