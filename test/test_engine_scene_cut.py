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

"""Scene cuts under warm start: detected after a cut to another scene, not along a sequence."""

from lrda_ros import world
from lrda_ros.datasets.synthetic import synthetic_frames
from lrda_ros.engine import DepthCompleter, TTOConfig
from lrda_ros.engine.loading import load_depth_model
from lrda_ros.engine.scene_cut import SceneCutRule, unexplained_share
from lrda_ros.errors import ConfigError
import pytest

WIDTH, HEIGHT = 84, 56


def test_rule_by_hand():
    rule = SceneCutRule(factor=4.0, floor=0.02)
    assert not rule.is_cut(0.5, None)  # nothing to compare with: the first warm frame
    assert not rule.is_cut(0.079, 0.01)  # the floor: 4 x max(0.01, 0.02) = 0.08
    assert rule.is_cut(0.081, 0.01)
    assert rule.is_cut(0.41, 0.1) and not rule.is_cut(0.39, 0.1)
    assert rule.is_cut(float('nan'), 0.1)  # a non-finite start is no place to go on from
    assert not SceneCutRule(factor=0.0).is_cut(1.0, 0.01)  # off
    assert unexplained_share(2.0, 8.0) == 0.25


def test_factor_between_zero_and_one_is_rejected():
    with pytest.raises(ConfigError) as error:
        TTOConfig(scene_cut_factor=0.5)
    assert error.value.field == 'scene_cut_factor'


@pytest.fixture(scope='module')
def frames():
    indoor = synthetic_frames(world.SequenceConfig('indoor', 3, width=WIDTH, height=HEIGHT,
                                                   seed=7))
    street = synthetic_frames(world.SequenceConfig('outdoor', 1, width=WIDTH, height=HEIGHT,
                                                   seed=3))
    return list(indoor) + list(street)


def test_detects_the_cut_to_another_scene_and_not_the_sequence(frames):
    # The demo prior, three frames of a room, then a street of the same size.
    model = load_depth_model('demo', 'cpu')
    config = TTOConfig(iterations=12, warm_iterations=4, warm_start=True, min_points=8,
                       device='cpu')
    completer = DepthCompleter(model, config)
    results = [completer.complete(f.rgb, f.sparse_depth, intrinsics=f.K) for f in frames]
    assert [r.warm_started for r in results] == [False, True, True, False]
    assert [r.scene_cut for r in results] == [False, False, False, True]
    completer.reset()  # after a reset nothing is compared: the next frame is cold, no cut
    again = completer.complete(frames[0].rgb, frames[0].sparse_depth, intrinsics=frames[0].K)
    assert not again.warm_started and not again.scene_cut
