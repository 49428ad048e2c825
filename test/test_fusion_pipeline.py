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

"""Temporal fusion through the one frame path: per camera, restarted by a scene cut, steadier."""

import math

from lrda_ros import world
from lrda_ros.datasets.synthetic import synthetic_frames
from lrda_ros.engine import DepthCompleter, TTOConfig
from lrda_ros.engine.loading import load_depth_model
from lrda_ros.errors import InputError
from lrda_ros.eval.harness import evaluate
from lrda_ros.eval.methods import build_methods
from lrda_ros.geometry import ProjectionConfig, RigidTransform
from lrda_ros.geometry.temporal_fusion import TemporalFusionConfig
from lrda_ros.pipeline import CompletionPipeline, FrameInputs
import numpy as np
import pytest

WIDTH, HEIGHT = 84, 56


@pytest.fixture
def model():
    return load_depth_model('demo', 'cpu')   # a completer adds its adapters to the network


def _inputs(view, pose: bool = True) -> FrameInputs:
    return FrameInputs(view.rgb, view.camera, view.points_lidar[:, :3],
                       RigidTransform.from_matrix(view.T_cam_lidar), view.stamp_ns,
                       view.T_world_cam if pose else None)


def test_the_pipeline_fuses_each_camera_apart_and_restarts_after_a_scene_cut(model):
    room = list(world.iter_sequence(world.SequenceConfig('indoor', 3, width=WIDTH,
                                                         height=HEIGHT, seed=7)))
    street = list(world.iter_sequence(world.SequenceConfig('outdoor', 1, width=WIDTH,
                                                           height=HEIGHT, seed=3)))
    config = TTOConfig(iterations=12, warm_iterations=4, warm_start=True, min_points=8,
                       device='cpu')
    pipeline = CompletionPipeline(DepthCompleter(model, config), ProjectionConfig(),
                                  fusion=TemporalFusionConfig(weight=0.5))
    shares = [pipeline.complete(pipeline.prepare(_inputs(view)), stream='front').fused_fraction
              for view in room]
    assert shares[0] == 0.0 and min(shares[1:]) > 0.5   # the room, moved by its poses
    # Another camera's first frame is fused with nothing of the front camera's.
    assert pipeline.complete(pipeline.prepare(_inputs(room[2])), stream='left'
                             ).fused_fraction == 0.0
    cut = pipeline.complete(pipeline.prepare(_inputs(street[0])), stream='front')
    assert cut.completion.scene_cut and cut.fused_fraction == 0.0
    # No pose: published as completed, and the next frame with a pose starts anew.
    unposed = pipeline.complete(pipeline.prepare(_inputs(room[0], pose=False)), stream='left')
    assert unposed.fused_fraction == 0.0
    assert pipeline.complete(pipeline.prepare(_inputs(room[1])), stream='left'
                             ).fused_fraction == 0.0
    pipeline.reset('front')   # a bag loop: cold and unfused
    again = pipeline.complete(pipeline.prepare(_inputs(room[1])), stream='front')
    assert not again.completion.warm_started and again.fused_fraction == 0.0


def test_the_fused_method_is_steadier_than_warm_start_at_no_higher_error(model):
    # The demo room as `lrda eval` scores it: TAE with the rendered trajectory, dense truth.
    frames = list(synthetic_frames(world.SequenceConfig(
        'indoor', 6, width=128, height=96, seed=7, lidar=world.LidarConfig(beams=32))))
    config = TTOConfig(device='cpu', min_points=8)
    methods = build_methods(['lrda-warm', 'lrda-warm-fused'], model, config)
    summary = evaluate(frames, list(methods.values()), progress=False).summary()
    warm, fused = summary['lrda-warm'], summary['lrda-warm-fused']
    assert fused['tae'] < 0.8 * warm['tae']
    assert fused['mae'] <= 1.02 * warm['mae']


def test_the_fused_method_needs_poses(model):
    frame = next(iter(synthetic_frames(world.SequenceConfig('indoor', 1, width=WIDTH,
                                                            height=HEIGHT, seed=7))))
    config = TTOConfig(device='cpu', iterations=2, min_points=8)
    method = build_methods(['lrda-warm-fused'], model, config)['lrda-warm-fused']
    with pytest.raises(InputError, match='pose'):
        method.complete(frame.rgb, frame.sparse_depth, frame.K, None)
    assert math.isfinite(float(np.nanmean(
        method.complete(frame.rgb, frame.sparse_depth, frame.K, frame.T_world_cam).depth)))
