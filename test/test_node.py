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

"""The completion node over real rclpy/DDS: synchronized input, outputs, drops, diagnostics."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

from conftest import spin_until
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')

from builtin_interfaces.msg import Time  # noqa: E402, I100
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from lrda_ros import world  # noqa: E402
from lrda_ros.geometry import lidar_to_sparse_depth, ProjectionConfig, RigidTransform  # noqa: E402
from lrda_ros.messages.conversions import depth_image_to_array  # noqa: E402
from lrda_ros.ros.builders import (  # noqa: E402
    camera_model_to_camera_info, rgb_to_image_msg, xyz_to_pointcloud2)
from lrda_ros.ros.node import CompletionNode  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image, PointCloud2  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

CAMERA_FRAME, LIDAR_FRAME = 'camera_optical', 'lidar'


@pytest.fixture(scope='module')
def frames():
    """Return a short synthetic indoor sequence with a 16-beam LiDAR."""
    config = world.SequenceConfig('indoor', num_frames=4, width=112, height=84, seed=3,
                                  lidar=world.LidarConfig.indoor(beams=16))
    return world.make_sequence(config)


def header(frame_id: str, stamp_ns: int) -> Header:
    return Header(frame_id=frame_id, stamp=Time(sec=stamp_ns // 10**9,
                                                nanosec=stamp_ns % 10**9))


def node_parameters(model_dir, frame, **overrides) -> list[Parameter]:
    values = {
        'model': str(model_dir), 'device': 'cpu', 'iterations': 4, 'warm_iterations': 2,
        'processing_size': 0, 'min_points': 8, 'publish.points_dense': True,
        'lidar_to_camera.matrix': [float(v) for v in frame.T_cam_lidar.ravel()],
        'projection.min_range': 0.1, 'projection.remove_occluded': False,
        'diagnostics_period': 0.2,
    }
    values.update(overrides)
    return [Parameter(name, value=value) for name, value in values.items()]


class Harness:
    """Publishers of the node's inputs and recorders of its outputs."""

    def __init__(self, context, namespace: str) -> None:
        self.node = rclpy.create_node('harness', namespace=namespace, context=context)
        self.pub_image = self.node.create_publisher(Image, 'image', 10)
        self.pub_info = self.node.create_publisher(CameraInfo, 'camera_info', 10)
        self.pub_points = self.node.create_publisher(PointCloud2, 'points', 10)
        self.received: dict[str, list] = {name: [] for name in (
            'depth', 'depth/camera_info', 'sparse_depth', 'depth_colored', 'points_dense')}
        types = {'depth/camera_info': CameraInfo, 'points_dense': PointCloud2}
        for name, store in self.received.items():
            self.node.create_subscription(types.get(name, Image), name, store.append, 10)
        self.diagnostics: list[DiagnosticArray] = []
        self.node.create_subscription(DiagnosticArray, '/diagnostics',
                                      self.diagnostics.append, 10)

    def publish(self, frame, stamp_ns: int, cloud_delay_ns: int = 3_000_000,
                image: Image | None = None, info: CameraInfo | None = None) -> None:
        camera_header = header(CAMERA_FRAME, stamp_ns)
        self.pub_image.publish(image or rgb_to_image_msg(frame.rgb, camera_header))
        self.pub_info.publish(info or camera_model_to_camera_info(frame.camera,
                                                                  camera_header))
        points = frame.points_lidar
        self.pub_points.publish(xyz_to_pointcloud2(
            points[:, :3], header(LIDAR_FRAME, stamp_ns + cloud_delay_ns),
            extra_fields={'intensity': points[:, 3]}))


@pytest.fixture
def system(ros_context, namespace, tiny_model_dir, frames):
    """Start the node (tiny model) and a harness; yield them with a spinning executor."""
    def start(**overrides):
        node = CompletionNode(context=ros_context, namespace=namespace,
                              parameter_overrides=node_parameters(tiny_model_dir, frames[0],
                                                                  **overrides))
        harness = Harness(ros_context, namespace)
        executor = SingleThreadedExecutor(context=ros_context)
        executor.add_node(node)
        executor.add_node(harness.node)
        started.append((node, harness, executor))
        assert spin_until(executor, lambda: node.pub_depth.get_subscription_count() > 0
                          and harness.pub_points.get_subscription_count() > 0, 10)
        return node, harness, executor

    started = []
    yield start
    for node, harness, executor in started:
        executor.shutdown()
        node.destroy_node()
        harness.node.destroy_node()


def test_synchronized_frames_give_dense_depth_with_the_image_header(system, frames):
    node, harness, executor = system()
    stamps = [1_000_000_000 + k * 100_000_000 for k in range(len(frames))]
    for frame, stamp in zip(frames, stamps):
        harness.publish(frame, stamp)
        assert spin_until(executor, lambda: node.stats.processed + sum(
            node.stats.dropped.values()) + node.stats.replaced >= frames.index(frame) + 1, 60)
    assert spin_until(executor, lambda: len(harness.received['depth']) >= 1, 30)
    assert node.stats.dropped == {} and node.stats.processed >= 1

    depth_msg = harness.received['depth'][-1]
    stamp_ns = depth_msg.header.stamp.sec * 10**9 + depth_msg.header.stamp.nanosec
    frame = frames[stamps.index(stamp_ns)]
    assert depth_msg.header.frame_id == CAMERA_FRAME
    assert depth_msg.encoding == '32FC1'
    assert (depth_msg.height, depth_msg.width) == frame.depth.shape
    depth = np.frombuffer(bytes(depth_msg.data), np.float32).reshape(frame.depth.shape)
    assert np.isfinite(depth).mean() > 0.99  # a closed room: every pixel has depth

    # The adapted, aligned prediction agrees with the LiDAR where there is LiDAR.
    expected_sparse = lidar_to_sparse_depth(
        frame.points_lidar[:, :3], RigidTransform.from_matrix(frame.T_cam_lidar),
        frame.camera, ProjectionConfig(min_range=0.1)).depth
    lidar = expected_sparse > 0
    relative_error = np.abs(depth[lidar] - expected_sparse[lidar]) / expected_sparse[lidar]
    assert np.median(relative_error) < 0.25

    sparse_msg = next(m for m in harness.received['sparse_depth'] if m.header == depth_msg.header)
    np.testing.assert_array_equal(depth_image_to_array(sparse_msg), expected_sparse)
    assert np.isnan(np.frombuffer(bytes(sparse_msg.data), np.float32)[~lidar.ravel()]).all()

    assert spin_until(executor, lambda: harness.received['points_dense']
                      and harness.received['depth_colored']
                      and harness.received['depth/camera_info'], 10)
    info = harness.received['depth/camera_info'][-1]
    assert info.header.frame_id == CAMERA_FRAME and (info.width, info.height) == (112, 84)
    colored = harness.received['depth_colored'][-1]
    assert colored.encoding == 'rgb8' and (colored.height, colored.width) == (84, 112)
    cloud = harness.received['points_dense'][-1]
    assert cloud.header.frame_id == CAMERA_FRAME
    assert [f.name for f in cloud.fields][:4] == ['x', 'y', 'z', 'rgb']
    assert cloud.width > 0.9 * (84 // 2) * (112 // 2)


def test_bad_and_unsynchronized_input_is_dropped_and_counted(system, frames):
    node, harness, executor = system()
    good = frames[0]
    base = 2_000_000_000

    def settled(count):
        return lambda: node.stats.processed + sum(node.stats.dropped.values()) >= count

    # An encoding no camera image has (depth).
    image = rgb_to_image_msg(good.rgb, header(CAMERA_FRAME, base))
    image.encoding = '16UC1'
    harness.publish(good, base, image=image)
    assert spin_until(executor, settled(1), 30)
    assert node.stats.dropped['unsupported_encoding'] == 1

    # CameraInfo of another size.
    info = camera_model_to_camera_info(good.camera, header(CAMERA_FRAME, base + 10**8))
    info.width = 200
    harness.publish(good, base + 10**8, info=info)
    assert spin_until(executor, settled(2), 30)
    assert node.stats.dropped['malformed'] == 1

    # A cloud of NaN points only (projected nothing).
    empty = dataclasses.replace(good, points_lidar=np.full((50, 4), np.nan, np.float32))
    harness.publish(empty, base + 2 * 10**8)
    assert spin_until(executor, settled(3), 30)
    assert node.stats.dropped['too_few_points'] == 1

    # A cloud 0.5 s away from its image never pairs with it.
    harness.publish(good, base + 3 * 10**8, cloud_delay_ns=500_000_000)
    spin_until(executor, lambda: False, 1.0)
    assert node.stats.processed + sum(node.stats.dropped.values()) == 3

    # The node is still healthy.
    harness.publish(good, base + 4 * 10**8)
    assert spin_until(executor, lambda: node.stats.processed == 1, 60)

    def latest_status():
        mine = node.get_fully_qualified_name()  # /diagnostics is shared
        ours = [s for d in harness.diagnostics for s in d.status if s.name.startswith(mine)]
        return ours[-1] if ours else None

    assert spin_until(executor, lambda: latest_status() is not None and {
        kv.key: kv.value for kv in latest_status().values}['frames processed'] == '1', 10)
    status = latest_status()
    values = {kv.key: kv.value for kv in status.values}
    assert int(values['dropped (malformed)']) == 1
    assert int(values['dropped (unsupported_encoding)']) == 1
    assert int(values['dropped (too_few_points)']) == 1
    # The errors were told at WARN in the window they came in; the counts stay as values.
    mine = node.get_fully_qualified_name()  # /diagnostics is shared
    ours = [s for d in harness.diagnostics for s in d.status if s.name.startswith(mine)]
    assert any(s.level == s.WARN and 'frames dropped for errors' in s.message for s in ours)


def test_frames_faster_than_processing_keep_only_the_newest(system, frames):
    node, harness, executor = system(iterations=40, warm_start=False)
    for k in range(12):
        harness.publish(frames[k % len(frames)], 3_000_000_000 + k * 10**8)
        assert spin_until(executor, lambda: node.stats.received == k + 1, 10)
    assert spin_until(executor, lambda: node.stats.processed + node.stats.replaced == 12, 120)
    assert node.stats.replaced > 0


def test_invalid_parameter_changes_are_rejected_with_a_reason(system):
    node, _, _ = system()
    result = node.set_parameters([Parameter('few_points', value='maybe')])[0]
    assert not result.successful and 'few_points' in result.reason
    result = node.set_parameters([Parameter('iterations', value=-3)])[0]
    assert not result.successful
    result = node.set_parameters([Parameter('lidar_to_camera.matrix', value=[1.0, 2.0])])[0]
    assert not result.successful and '16 values' in result.reason
    result = node.set_parameters([Parameter('iterations', value=7)])[0]
    assert result.successful and node.settings.tto.iterations == 7


def test_model_load_failure_exits_non_zero_naming_the_parameter(tmp_path):
    missing = tmp_path / 'depth_anything_v2_vits.pth'
    completed = subprocess.run(
        [sys.executable, '-m', 'lrda_ros.ros.node', '--ros-args', '-p', f'model:={missing}'],
        capture_output=True, text=True, timeout=120)
    assert completed.returncode == 1
    output = completed.stdout + completed.stderr
    assert "parameter 'model'" in output and 'does not exist' in output


def test_bfloat16_completes_frames_with_the_sparse_head(system, frames):
    # The params file's "good CUDA choice": it crashed on the first frame before.
    node, harness, executor = system(dtype='bfloat16', warm_start=True)
    for k, frame in enumerate(frames[:2]):
        harness.publish(frame, 5_000_000_000 + k * 10**8)
        assert spin_until(executor, lambda: node.stats.processed + sum(
            node.stats.dropped.values()) + node.stats.replaced >= k + 1, 60)
    assert spin_until(executor, lambda: len(harness.received['depth']) >= 1, 30)
    assert node.stats.dropped == {}
    depth = depth_image_to_array(harness.received['depth'][-1])
    assert np.isfinite(depth).mean() > 0.99


def test_a_precision_the_device_cannot_run_stops_start_up_naming_dtype(
        monkeypatch, ros_context, namespace, tiny_model_dir, frames):
    from lrda_ros.engine import tto, UnsupportedPrecisionError
    from lrda_ros.settings.parameters import InvalidParameterError

    def unsupported(device, name):
        raise UnsupportedPrecisionError(f'dtype {name!r}: not on this device; use float32')

    monkeypatch.setattr(tto, 'check_precision', unsupported)
    with pytest.raises(InvalidParameterError, match="parameter 'dtype'.*use float32"):
        CompletionNode(context=ros_context, namespace=namespace,
                       parameter_overrides=node_parameters(tiny_model_dir, frames[0],
                                                           dtype='float16'))


def test_time_budget_stops_the_optimization_and_shows_on_diagnostics(system, frames):
    # A budget far below one encoder pass: every frame publishes the aligned prior, at once.
    node, harness, executor = system(iterations=40, warm_start=False, time_budget=1e-4)
    for k, frame in enumerate(frames[:2]):
        harness.publish(frame, 6_000_000_000 + k * 10**8)
        assert spin_until(executor, lambda: node.stats.processed + sum(
            node.stats.dropped.values()) + node.stats.replaced >= k + 1, 60)
    assert spin_until(executor, lambda: len(harness.received['depth']) >= 1, 30)
    assert node.stats.dropped == {} and node.stats.stopped_at_budget == node.stats.processed
    assert node.stats.recent_iterations == [0] * node.stats.processed
    depth = depth_image_to_array(harness.received['depth'][-1])
    assert np.isfinite(depth).mean() > 0.99

    def budget_values():
        mine = node.get_fully_qualified_name()  # /diagnostics is shared
        ours = [s for d in harness.diagnostics for s in d.status if s.name.startswith(mine)]
        return {kv.key: kv.value for kv in ours[-1].values} if ours else {}

    assert spin_until(executor, lambda: budget_values().get('frames stopped at the time '
                                                            'budget') == str(
        node.stats.processed), 10)
    values = budget_values()
    assert values['time budget (s)'] == '0.0001'
    assert values['iterations per frame (mean of last 20)'] == '0.0'
    assert float(values['frame time, synchronized set to publish (s)']) > 0

    # Switched off at run time: the next frame runs all its iterations.
    assert node.set_parameters([Parameter('time_budget', value=0.0)])[0].successful
    processed = node.stats.processed
    harness.publish(frames[2], 7_000_000_000)
    assert spin_until(executor, lambda: node.stats.processed > processed, 60)
    assert node.stats.last_iterations == 40
