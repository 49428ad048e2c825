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
A completed frame's output messages built on two threads are those built one after another.

The reference is each message built by its own builder in turn, as the node built them before
(the confidence split over two threads by depth_confidence itself).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from lrda_ros.colormap import colorize_depth
from lrda_ros.geometry import CameraModel, clouds_to_sparse_depth, LidarCloud, RigidTransform
from lrda_ros.geometry.confidence import depth_confidence, support_confidence
from lrda_ros.geometry.second_thread import new_second_thread, SameThread
from lrda_ros.pipeline import FrameInputs, FrameOutputs, PreparedFrame, ProjectionConfig
from lrda_ros.ros.builders import (
    camera_model_to_camera_info, depth_to_image_msg, depth_to_pointcloud2, rgb_to_image_msg)
from lrda_ros.ros.frame_messages import frame_messages, OUTPUTS
import numpy as np
from PIL import Image
import pytest
from std_msgs.msg import Header

KITTI = CameraModel(np.array([[721.5377, 0.0, 609.5593], [0.0, 721.5377, 172.854],
                              [0.0, 0.0, 1.0]]), 1242, 375)
# Small frames (the builders' results do not depend on the size): a pinhole camera, and a
# wide-angle plumb_bob lens with skew for the dense cloud's general path.
PINHOLE = CameraModel(np.array([[180.0, 0.0, 155.3], [0.0, 180.0, 43.2], [0.0, 0.0, 1.0]]),
                      310, 94)
DISTORTED = CameraModel(np.array([[150.0, 0.4, 163.1], [0.0, 152.5, 88.9], [0.0, 0.0, 1.0]]),
                        320, 180, 'plumb_bob', np.array([-0.3, 0.1, 0.001, -0.0015, -0.01]))
HEADER = Header(frame_id='camera')
STRIDE = 2


def frame_outputs(camera: CameraModel, depth: np.ndarray, sparse: np.ndarray,
                  model_confidence: np.ndarray | None, beside, support_ahead: bool
                  ) -> FrameOutputs:
    """Return a completed frame's outputs around ``depth`` as the pipeline returns them."""
    rng = np.random.default_rng(3)
    rgb = rng.integers(0, 256, (*depth.shape, 3), dtype=np.uint8)
    inputs = FrameInputs(rgb, camera, np.zeros((0, 3), np.float32), RigidTransform.identity())
    projected = clouds_to_sparse_depth([LidarCloud(inputs.points_lidar, inputs.T_cam_lidar)],
                                       camera, ProjectionConfig())
    support = SameThread().submit(support_confidence, sparse) if support_ahead else None
    prepared = PreparedFrame(inputs, projected, sparse, None, support=support)
    return FrameOutputs(depth, prepared, SimpleNamespace(confidence=model_confidence),
                        beside=beside)


def one_after_another(outputs: FrameOutputs, info) -> dict[str, object]:
    """Return each output's message built by its builder, one after the other."""
    inputs, depth = outputs.prepared.inputs, outputs.depth
    info.header = HEADER
    return {'depth': depth_to_image_msg(depth, HEADER),
            'confidence': depth_to_image_msg(depth_confidence(
                depth, outputs.sparse_depth, outputs.completion.confidence), HEADER),
            'camera_info': info,
            'colored': rgb_to_image_msg(colorize_depth(depth), HEADER),
            'points_dense': depth_to_pointcloud2(depth, inputs.camera, inputs.rgb, STRIDE,
                                                 HEADER)}


def synthetic_maps(camera: CameraModel) -> tuple[np.ndarray, np.ndarray]:
    """Return a depth map with a sky, holes and REP 118 marks, and a sparse LiDAR map."""
    rng = np.random.default_rng(7)
    shape = (camera.height, camera.width)
    depth = (2.0 + 60.0 * rng.random(shape)).astype(np.float32)
    depth[:10] = np.nan
    depth[30:34, 200:240] = np.inf
    depth[50, 10:20] = -np.inf
    sparse = np.where(rng.random(shape) < 0.04, depth * 1.02, 0.0).astype(np.float32)
    sparse[~np.isfinite(sparse)] = 0.0
    return depth, sparse


def kitti_maps(shared_data: Path) -> tuple[np.ndarray, np.ndarray]:
    """Return a KITTI DC frame's ground truth (holes filled) and its LiDAR map."""
    def metres(folder: str) -> np.ndarray:
        path = shared_data / 'kitti_dc' / folder / '0000000005.png'
        return np.asarray(Image.open(path), dtype=np.float32) / 256.0

    sparse, truth = metres('velodyne_raw'), metres('groundtruth')
    depth = np.where(truth > 0, truth, 30.0).astype(np.float32)
    depth[:60] = np.nan
    return depth, sparse


@pytest.mark.parametrize('beside', ['second thread', 'none'])
@pytest.mark.parametrize('support_ahead', [True, False])
@pytest.mark.parametrize('camera', [PINHOLE, DISTORTED], ids=['pinhole', 'distorted'])
def test_messages_built_together_are_those_built_one_after_another(camera, support_ahead,
                                                                   beside):
    depth, sparse = synthetic_maps(camera)
    model = np.random.default_rng(9).random(depth.shape).astype(np.float32)
    with new_second_thread() as thread:
        for model_confidence in (None, model):
            outputs = frame_outputs(camera, depth, sparse, model_confidence,
                                    thread if beside == 'second thread' else None,
                                    support_ahead)
            info = camera_model_to_camera_info(camera, Header())
            together = frame_messages(outputs, HEADER, info, OUTPUTS, (None, None), STRIDE)
            expected = one_after_another(outputs, camera_model_to_camera_info(camera, Header()))
            assert list(together) == list(OUTPUTS)  # the publishing order
            for name in OUTPUTS:
                assert together[name] == expected[name], name


def test_messages_of_a_kitti_frame_are_those_built_one_after_another(shared_data):
    depth, sparse = kitti_maps(shared_data)
    with new_second_thread() as thread:
        outputs = frame_outputs(KITTI, depth, sparse, None, thread, True)
        together = frame_messages(outputs, HEADER, camera_model_to_camera_info(KITTI, Header()),
                                  OUTPUTS, (None, None), STRIDE)
    expected = one_after_another(outputs, camera_model_to_camera_info(KITTI, Header()))
    for name in OUTPUTS:
        assert together[name] == expected[name], name


def test_only_the_wanted_outputs_are_built_in_publishing_order():
    depth, sparse = synthetic_maps(PINHOLE)
    info = camera_model_to_camera_info(PINHOLE, Header())
    with new_second_thread() as thread:
        outputs = frame_outputs(PINHOLE, depth, sparse, None, thread, True)
        for wanted in (['points_dense', 'depth'], ['colored'], ['confidence', 'colored'], []):
            built = frame_messages(outputs, HEADER, info, wanted, (2.0, 50.0), STRIDE)
            assert list(built) == [name for name in OUTPUTS if name in wanted]
        fixed = frame_messages(outputs, HEADER, info, ['colored'], (2.0, 50.0), STRIDE)
        assert fixed['colored'] == rgb_to_image_msg(colorize_depth(depth, 2.0, 50.0), HEADER)
        with pytest.raises(ValueError, match="unknown outputs \\['sparse'\\]"):
            frame_messages(outputs, HEADER, info, ['depth', 'sparse'], (None, None), STRIDE)


def test_an_error_on_the_second_thread_reaches_the_caller():
    depth, sparse = synthetic_maps(PINHOLE)
    with new_second_thread() as thread:
        outputs = frame_outputs(PINHOLE, depth, sparse, None, thread, True)
        with pytest.raises(ValueError, match='need 0 < near < far'):
            frame_messages(outputs, HEADER, camera_model_to_camera_info(PINHOLE, Header()),
                           OUTPUTS, (50.0, 2.0), STRIDE)


def test_the_same_thread_executor_runs_each_call_at_once():
    calls = []
    future = SameThread().submit(calls.append, 1)
    assert calls == [1] and future.done() and future.result() is None
    failed = SameThread().submit(int, 'x')
    assert failed.done()
    with pytest.raises(ValueError):
        failed.result()
