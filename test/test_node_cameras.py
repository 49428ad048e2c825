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
The node on real cameras: strong lens distortion (checked against OpenCV), compressed images.

A strongly distorted synthetic camera (plumb_bob k1 = -0.3, and a fisheye) must put every
LiDAR point of ``/sparse_depth`` on the pixel ``cv2.projectPoints`` / ``cv2.fisheye`` gives; the
same scene sent raw and as JPEG must give the same sparse map and near-identical depth.
"""

from __future__ import annotations

from conftest import smooth_image, spin_until
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy', reason='rclpy is not installed')
cv2 = pytest.importorskip('cv2', reason='opencv-python-headless is not installed '
                                        '(pip install -r requirements-dev.txt)')

from lrda_ros.geometry import RigidTransform  # noqa: E402, I100
from lrda_ros.messages.conversions import depth_image_to_array  # noqa: E402
from lrda_ros.ros.bag_writer import stamped_header  # noqa: E402
from lrda_ros.ros.builders import rgb_to_image_msg, xyz_to_pointcloud2  # noqa: E402
from lrda_ros.ros.node import CompletionNode  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, PointCloud2  # noqa: E402

WIDTH, HEIGHT = 160, 120
K = np.array([[95.0, 0.0, 80.3], [0.0, 96.0, 59.6], [0.0, 0.0, 1.0]])
P = np.array([[88.0, 0.0, 79.5, 0.0], [0.0, 88.0, 60.5, 0.0], [0.0, 0.0, 1.0, 0.0]])
DISTORTIONS = {
    'plumb_bob': np.array([-0.3, 0.09, 0.001, -0.0012, -0.01]),
    'equidistant': np.array([0.06, -0.02, 0.004, -0.0007]),
}
# LiDAR 0.3 m left of and 0.1 m above the camera (optical frame axes), slightly rotated.
T_CAM_LIDAR = RigidTransform.from_translation_quaternion(
    [0.3, -0.1, 0.05], [0.01, -0.02, 0.015, 0.9997])
STAMP_NS = 1_552_097_915_404_700_000


def opencv_project(points_cam: np.ndarray, model: str, K_: np.ndarray, D: np.ndarray):
    zero = np.zeros(3)
    project = cv2.fisheye.projectPoints if model == 'equidistant' else cv2.projectPoints
    uv, _ = project(points_cam.reshape(-1, 1, 3), zero, zero, K_, D)
    return uv.reshape(-1, 2)


def scene(model: str, smooth: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """
    Return camera-frame points spread over the whole distorted image (pixel grid rays).

    Depths are random per point, or with ``smooth`` a slanted plane (a scene a depth network
    can fit, so that small image differences give small depth differences).
    """
    cols, rows = np.meshgrid(np.arange(2, WIDTH - 2, 5.3), np.arange(2, HEIGHT - 2, 4.7))
    pixels = np.stack([cols, rows], axis=-1).reshape(-1, 1, 2)
    criteria = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 100, 1e-12)
    D = DISTORTIONS[model]
    if model == 'equidistant':
        rays = cv2.fisheye.undistortPoints(pixels, K, D, criteria=criteria).reshape(-1, 2)
    else:
        rays = cv2.undistortPointsIter(pixels, K, D, None, None, criteria).reshape(-1, 2)
    depth = np.random.default_rng(2).uniform(1.5, 12.0, len(rays))
    if smooth:
        depth = 6.0 + 2.0 * rays[:, 0] + 3.0 * rays[:, 1]
    return np.column_stack([rays * depth[:, None], depth]), depth


def camera_info(model: str, header) -> CameraInfo:
    return CameraInfo(header=header, width=WIDTH, height=HEIGHT, distortion_model=model,
                      d=[float(v) for v in DISTORTIONS[model]], k=K.ravel(),
                      r=np.eye(3).ravel(), p=P.ravel())


class Inputs:
    """Publishers of image (raw and compressed), camera_info and points in one namespace."""

    def __init__(self, context, namespace: str) -> None:
        self.namespace = namespace
        self.node = rclpy.create_node('inputs', namespace=namespace, context=context)
        self.image = self.node.create_publisher(Image, 'image', 10)
        self.compressed = self.node.create_publisher(CompressedImage, 'image/compressed', 10)
        self.info = self.node.create_publisher(CameraInfo, 'camera_info', 10)
        self.points = self.node.create_publisher(PointCloud2, 'points', 10)

    def record(self, namespace: str) -> dict[str, list]:
        """Subscribe to sparse_depth and depth of the node in ``namespace``."""
        received: dict[str, list] = {'sparse_depth': [], 'depth': []}
        for topic, store in received.items():
            self.node.create_subscription(Image, f'{namespace}/{topic}', store.append, 10)
        return received

    def publish(self, rgb, info, points_lidar, stamp_ns, compressed: CompressedImage = None):
        camera_header = stamped_header('camera_optical', stamp_ns)
        self.image.publish(rgb_to_image_msg(rgb, camera_header))
        if compressed is not None:
            compressed.header = camera_header
            self.compressed.publish(compressed)
        info.header = camera_header
        self.info.publish(info)
        self.points.publish(xyz_to_pointcloud2(points_lidar.astype(np.float32),
                                               stamped_header('lidar', stamp_ns)))


def parameters(model_dir, **overrides) -> list[Parameter]:
    values = {'model': str(model_dir), 'device': 'cpu', 'iterations': 3, 'warm_start': False,
              'min_points': 8, 'projection.min_range': 0.1, 'projection.remove_occluded': False,
              'lidar_to_camera.matrix': [float(v) for v in T_CAM_LIDAR.as_matrix().ravel()]}
    values.update(overrides)
    return [Parameter(name, value=value) for name, value in values.items()]


@pytest.fixture
def system(ros_context, namespace, tiny_model_dir):
    """Yield (start a node, the inputs, the executor); nodes read the inputs' topics."""
    nodes = []
    executor = SingleThreadedExecutor(context=ros_context)
    inputs = Inputs(ros_context, namespace)
    executor.add_node(inputs.node)

    def start(name: str, **overrides):
        """Start a completion node in ``<namespace>/<name>``; return it and its outputs."""
        remaps = ['--ros-args'] + [item for topic in ('image', 'camera_info', 'points')
                                   for item in ('-r', f'{topic}:={namespace}/{topic}')]
        node = CompletionNode(context=ros_context, namespace=f'{namespace}/{name}',
                              cli_args=remaps,
                              parameter_overrides=parameters(tiny_model_dir, **overrides))
        executor.add_node(node)
        nodes.append(node)
        received = inputs.record(f'{namespace}/{name}')
        assert spin_until(executor, lambda: node.pub_sparse.get_subscription_count() > 0
                          and inputs.points.get_subscription_count() > 0, 10)
        return node, received

    yield start, inputs, executor
    executor.shutdown()
    for node in nodes:
        node.destroy_node()
    inputs.node.destroy_node()


def _settled(node: CompletionNode, count: int):
    return lambda: node.stats.processed + sum(node.stats.dropped.values()) >= count


def _off_pixel_boundaries(uv: np.ndarray, margin: float = 0.02) -> np.ndarray:
    fraction = np.abs((uv + 0.5) - np.round(uv + 0.5))
    return np.all(fraction > margin, axis=1)


@pytest.mark.parametrize('model', sorted(DISTORTIONS))
def test_sparse_depth_lands_where_opencv_projects(system, model):
    start, inputs, executor = system
    node, received = start('distorted')
    points_cam, depth = scene(model)
    expected_uv = opencv_project(points_cam, model, K, DISTORTIONS[model])
    keep = _off_pixel_boundaries(expected_uv)
    points_cam, depth, expected_uv = points_cam[keep], depth[keep], expected_uv[keep]
    points_lidar = T_CAM_LIDAR.inverse().apply(points_cam)

    inputs.publish(smooth_image(1, HEIGHT, WIDTH), camera_info(model, None), points_lidar,
                   STAMP_NS)
    assert spin_until(executor, lambda: received['sparse_depth'], 60), node.stats
    sparse = depth_image_to_array(received['sparse_depth'][0])

    expected = np.zeros((HEIGHT, WIDTH), np.float32)
    cols, rows = np.floor(expected_uv + 0.5).astype(int).T
    expected[rows, cols] = depth
    assert len(depth) > 400 and node.stats.dropped == {}
    np.testing.assert_allclose(sparse, expected, rtol=1e-6)


def test_rectified_image_projects_with_p_and_no_distortion(system):
    start, inputs, executor = system
    node, received = start('rectified', image_is_rectified=True)
    points_cam, depth = scene('plumb_bob')
    expected_uv = opencv_project(points_cam, 'plumb_bob', P[:, :3], np.zeros(5))
    keep = _off_pixel_boundaries(expected_uv) & np.all(
        (expected_uv > -0.5) & (expected_uv < [WIDTH - 0.5, HEIGHT - 0.5]), axis=1)
    points_cam, depth, expected_uv = points_cam[keep], depth[keep], expected_uv[keep]
    inputs.publish(smooth_image(1, HEIGHT, WIDTH), camera_info('plumb_bob', None),
                   T_CAM_LIDAR.inverse().apply(points_cam), STAMP_NS)
    assert spin_until(executor, lambda: received['sparse_depth'], 60), node.stats
    expected = np.zeros((HEIGHT, WIDTH), np.float32)
    cols, rows = np.floor(expected_uv + 0.5).astype(int).T
    expected[rows, cols] = depth
    np.testing.assert_allclose(depth_image_to_array(received['sparse_depth'][0]), expected,
                               rtol=1e-6)


def test_bad_calibrations_are_counted_drops_naming_the_field(system):
    start, inputs, executor = system
    node, received = start('checked')
    warnings = []
    node._warn_throttled = lambda key, message, subject='': warnings.append(message)
    points_lidar = T_CAM_LIDAR.inverse().apply(scene('plumb_bob')[0])
    rgb = smooth_image(1, HEIGHT, WIDTH)
    bad = []
    info = camera_info('plumb_bob', None)
    info.distortion_model = 'kannala_brandt'
    bad.append((info, 'distortion_model'))
    info = camera_info('plumb_bob', None)
    info.d = [-0.3, 0.1, 0.0]
    bad.append((info, 'D has 3 coefficients'))
    info = camera_info('plumb_bob', None)
    info.k = [float('nan')] + list(K.ravel()[1:])
    bad.append((info, 'K must be finite'))
    info = camera_info('plumb_bob', None)
    info.k = [-95.0] + list(K.ravel()[1:])
    bad.append((info, 'fx and fy must be positive'))
    for index, (info, field) in enumerate(bad):
        inputs.publish(rgb, info, points_lidar, STAMP_NS + index * 10**8)
        assert spin_until(executor, _settled(node, index + 1), 30)
        assert node.stats.dropped['bad_camera_info'] == index + 1
        assert field in warnings[-1] and 'camera_info' in warnings[-1]
    # Still working.
    inputs.publish(rgb, camera_info('plumb_bob', None), points_lidar, STAMP_NS + 10**9)
    assert spin_until(executor, lambda: node.stats.processed == 1, 60)


def _jpeg(rgb: np.ndarray) -> CompressedImage:
    ok, data = cv2.imencode('.jpg', rgb[..., ::-1], [cv2.IMWRITE_JPEG_QUALITY, 95])
    assert ok
    return CompressedImage(format='rgb8; jpeg compressed bgr8', data=data.tobytes())


def test_raw_and_jpeg_give_the_same_sparse_map_and_near_identical_depth(system):
    start, inputs, executor = system
    raw_node, raw = start('raw')
    jpeg_node, jpeg = start('jpeg', image_transport='compressed')
    assert jpeg_node.subscriptions_handle.subscriptions[0].topic_name.endswith(
        '/image/compressed')
    points_cam, _ = scene('plumb_bob', smooth=True)
    rgb = smooth_image(8, HEIGHT, WIDTH)
    inputs.publish(rgb, camera_info('plumb_bob', None), T_CAM_LIDAR.inverse().apply(points_cam),
                   STAMP_NS, compressed=_jpeg(rgb))
    assert spin_until(executor, lambda: raw['depth'] and jpeg['depth'], 120), (
        raw_node.stats, jpeg_node.stats)
    np.testing.assert_array_equal(depth_image_to_array(raw['sparse_depth'][0]),
                                  depth_image_to_array(jpeg['sparse_depth'][0]))
    shape = (HEIGHT, WIDTH)
    raw_depth = np.frombuffer(bytes(raw['depth'][0].data), np.float32).reshape(shape)
    jpeg_depth = np.frombuffer(bytes(jpeg['depth'][0].data), np.float32).reshape(shape)
    assert raw['depth'][0].header == jpeg['depth'][0].header
    valid = np.isfinite(raw_depth) & np.isfinite(jpeg_depth)
    assert valid.mean() > 0.99
    relative = np.abs(raw_depth[valid] - jpeg_depth[valid]) / raw_depth[valid]
    assert np.median(relative) < 0.01 and np.percentile(relative, 99) < 0.05

    # Undecodable compressed data is a counted drop; the node carries on.
    broken = _jpeg(rgb)
    broken.data = bytes(broken.data)[:200]
    inputs.publish(rgb, camera_info('plumb_bob', None), T_CAM_LIDAR.inverse().apply(points_cam),
                   STAMP_NS + 10**8, compressed=broken)
    assert spin_until(executor, lambda: jpeg_node.stats.dropped['malformed'] == 1, 30)
