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

"""The node's ROS-free parts: parameter validation, the newest-frame slot, colour maps."""

from __future__ import annotations

import threading

from lrda_ros.colormap import colorize_depth, turbo
from lrda_ros.messages.stamps import latency_or_reason, NS_PER_S
from lrda_ros.ros.latest_slot import LatestSlot
from lrda_ros.ros.warning_throttle import WarningThrottle
from lrda_ros.settings import InvalidParameterError, NodeSettings, PARAMETERS
from lrda_ros.settings.node_settings import extrinsic_override
from lrda_ros.settings.parameters import closest_parameter, coerce_value
import numpy as np
import pytest


def test_defaults_validate_and_map_to_the_engine():
    settings = NodeSettings.from_values({})
    assert settings.tto.iterations == 40 and settings.tto.learning_rate == 0.01
    assert settings.tto.lora_rank == 8 and settings.tto.processing_size is None
    assert settings.extrinsic is None and settings.tto.few_points.value == 'align'
    assert settings.tto.tail_strips == 1
    assert NodeSettings.from_values({'tail_strips': 8}).tto.tail_strips == 8
    assert not settings.fusion.enabled and settings.fusion_fixed_frame == 'odom'
    fused = NodeSettings.from_values({'temporal_fusion.weight': 0.5,
                                      'temporal_fusion.fixed_frame': 'map'})
    assert fused.fusion.weight == 0.5 and fused.fusion_fixed_frame == 'map'


def test_every_parameter_has_a_description_and_a_sane_range():
    for spec in PARAMETERS:
        assert spec.description.endswith('.'), spec.name
        if spec.minimum is not None:
            assert spec.minimum <= spec.default <= spec.maximum, spec.name


@pytest.mark.parametrize('values, culprit', [
    ({'iterations': -1}, 'iterations'),
    ({'learning_rate': 5.0}, 'learning_rate'),
    ({'few_points': 'sometimes'}, 'few_points'),
    ({'dtype': 'float64'}, 'dtype'),
    ({'tail_strips': 0}, 'tail_strips'),
    ({'min_depth': 50.0, 'max_depth': 10.0}, 'max_depth'),
    ({'projection.occlusion_window': 4}, 'projection.occlusion_window'),
    ({'projection.min_range': 50.0, 'projection.max_range': 10.0}, 'projection.max_range'),
    ({'processing_size': 13}, 'processing_size'),
    ({'processing_size': 1}, 'processing_size'),
    ({'warm_iterations': -1}, 'warm_iterations'),
    ({'device': 'tpu'}, 'device'),
    ({'device': 'cuda:7'}, 'device'),
    ({'colormap.min_depth': 200.0}, 'colormap.min_depth'),
    ({'colormap.min_depth': 20.0, 'colormap.max_depth': 10.0}, 'colormap.max_depth'),
    ({'lidar_to_camera.translation': [1.0, 2.0]}, 'lidar_to_camera.translation'),
    ({'temporal_fusion.weight': 1.0}, 'temporal_fusion.weight'),
    ({'temporal_fusion.fixed_frame': '/odom'}, 'temporal_fusion.fixed_frame'),
    ({'temporal_fusion.fixed_frame': ''}, 'temporal_fusion.fixed_frame'),
])
def test_invalid_values_are_rejected_naming_the_parameter(values, culprit):
    with pytest.raises(InvalidParameterError) as caught:
        NodeSettings.from_values(values)
    assert caught.value.name == culprit
    assert culprit in str(caught.value)


def test_tto_rejections_name_the_parameter_not_a_generic_pair():
    # Bypass the table's own range check to reach TTOConfig's: its message names the field.
    from lrda_ros.errors import ConfigError
    from lrda_ros.settings import node_settings

    error = node_settings._parameter_error(ConfigError('TTOConfig: warm_iterations must be >= 0',
                                                       field='warm_iterations'))
    assert error.name == 'warm_iterations' and 'TTOConfig' not in str(error)
    assert NodeSettings.from_values({'processing_size': 14}).tto.processing_size == 14
    assert NodeSettings.from_values({'processing_size': 0}).tto.processing_size is None


def test_wrong_types_name_the_expected_type_and_integers_become_doubles():
    assert coerce_value('lidar_to_camera.matrix', [1, 0, 0, 0]) == [1.0, 0.0, 0.0, 0.0]
    assert coerce_value('learning_rate', 0.5) == 0.5
    assert coerce_value('max_depth', 80) == 80.0 and isinstance(coerce_value('max_depth', 80),
                                                                float)
    with pytest.raises(InvalidParameterError, match=r"'iterations'.*expects an integer.*write 40"):
        coerce_value('iterations', 40.0)
    with pytest.raises(InvalidParameterError, match=r"'max_depth'.*expects a double.*'far'"):
        coerce_value('max_depth', 'far')
    with pytest.raises(InvalidParameterError, match=r"'max_depth'.*expects a double.*bool"):
        coerce_value('max_depth', True)
    with pytest.raises(InvalidParameterError, match='string'):
        coerce_value('model', 3)


def test_misspelt_names_map_to_the_closest_declared_parameter():
    assert closest_parameter('iteratons') == 'iterations'
    assert closest_parameter('procesing_size') == 'processing_size'
    assert closest_parameter('completely_unrelated_name') is None


def test_extrinsic_override_forms_agree():
    angle = np.pi / 2
    matrix = np.eye(4)
    matrix[:3, :3] = [[np.cos(angle), -np.sin(angle), 0], [np.sin(angle), np.cos(angle), 0],
                      [0, 0, 1]]
    matrix[:3, 3] = [0.1, -0.2, 0.3]
    from_matrix = extrinsic_override([0.0], [0.0], matrix.ravel().tolist())
    from_quaternion = extrinsic_override([0.1, -0.2, 0.3],
                                         [0, 0, np.sin(angle / 2), np.cos(angle / 2)], [0.0])
    np.testing.assert_allclose(from_matrix.as_matrix(), from_quaternion.as_matrix(), atol=1e-12)
    assert extrinsic_override([0.0], [0.0], [0.0]) is None
    with pytest.raises(InvalidParameterError, match='lidar_to_camera.matrix'):
        extrinsic_override([0.0], [0.0], (2 * np.eye(4)).ravel().tolist())


def test_latest_slot_keeps_the_newest_and_says_when_it_replaced_one():
    slot: LatestSlot[int] = LatestSlot()
    assert slot.take(timeout=0.01) is None
    assert not slot.put(1)
    assert slot.put(2) and slot.put(3)
    assert slot.take(timeout=0.01) == 3
    assert slot.take(timeout=0.01) is None


def test_latest_slot_wakes_a_waiting_consumer_and_closes():
    slot: LatestSlot[str] = LatestSlot()
    taken = []
    consumer = threading.Thread(target=lambda: taken.append(slot.take(timeout=5)))
    consumer.start()
    slot.put('frame')
    consumer.join(timeout=5)
    assert taken == ['frame']
    waiter = threading.Thread(target=lambda: taken.append(slot.take(timeout=5)))
    waiter.start()
    slot.close()
    waiter.join(timeout=5)
    assert taken == ['frame', None] and slot.closed


def test_colour_map_is_near_red_far_blue_and_black_where_invalid():
    depth = np.array([[1.0, 10.0, np.nan, 0.0]], np.float32)
    rgb = colorize_depth(depth, near=1.0, far=10.0)
    assert rgb.dtype == np.uint8 and rgb.shape == (1, 4, 3)
    near, far = rgb[0, 0].astype(int), rgb[0, 1].astype(int)
    assert near[0] > near[2] and far[2] > far[0]
    assert (rgb[0, 2:] == 0).all()
    ends = turbo(np.array([0.0, 1.0]))
    assert tuple(ends[0]) == pytest.approx((48, 18, 59), abs=3)
    assert tuple(ends[1]) == pytest.approx((122, 4, 3), abs=3)
    with pytest.raises(ValueError):
        colorize_depth(depth, near=5.0, far=2.0)


def test_one_fixed_colour_map_end_beyond_the_automatic_other_end_is_clamped():
    depth = np.array([[1.0, 2.0, 3.0]], np.float32)  # the automatic far end is about 3 m
    beyond_far = colorize_depth(depth, near=20.0)  # fixed near end past everything
    # Every pixel is nearer than the near end: all take the near colour (as clamping does).
    assert (beyond_far == turbo(np.array([1.0]))[0]).all()
    below_near = colorize_depth(depth, far=0.5)  # fixed far end before everything
    assert (below_near == turbo(np.array([0.0]))[0]).all()


def test_warnings_of_one_cause_log_once_then_once_a_minute_with_a_count():
    lines, now = [], [0.0]
    throttle = WarningThrottle(lines.append, clock=lambda: now[0])
    for k in range(100):  # 100 backward stamps, 1 s apart, and one other cause once
        now[0] = float(k)
        throttle.warn('stamp_backwards', f'stamp_backwards (image), {k + 1} so far')
    throttle.warn('dropped (malformed)', 'dropped (malformed), 1 so far')
    assert lines == ['stamp_backwards (image), 1 so far',
                     'stamp_backwards (image), 61 so far (59 more warnings of this cause held '
                     'back since the last one; /diagnostics counts each)',
                     'dropped (malformed), 1 so far']


def test_held_back_warnings_are_counted_per_input_the_line_names():
    # A looped bag every 5 s: each input's stamps go back at once, under one cause. The line
    # names one input, so its held-back count says which inputs the others were about.
    lines, now = [], [0.0]
    throttle = WarningThrottle(lines.append, clock=lambda: now[0])
    for loop in range(13):  # t = 0, 5, ..., 60 s
        now[0] = loop * 5.0
        for topic in ('image', 'camera_info', 'points'):
            throttle.warn('stamp_backwards', f'stamp_backwards ({topic})', subject=topic)
    assert lines == [
        'stamp_backwards (image)',
        'stamp_backwards (image) (35 more warnings of this cause held back since the last '
        'one: 12 on camera_info, 11 on image, 12 on points; /diagnostics counts each)']


def test_latency_is_told_only_for_stamps_from_the_node_clock():
    now = 1_795_800_000 * NS_PER_S
    assert latency_or_reason(now, now - 250_000_000) == (pytest.approx(0.25), '')
    # A KITTI recording of 2011 replayed without its /clock: no latency, and why.
    latency, reason = latency_or_reason(now, 1_317_000_000 * NS_PER_S)
    assert latency is None
    assert 'another clock' in reason and 'use_sim_time' in reason
    # A stamp an hour ahead is from another clock too.
    assert latency_or_reason(now, now + 3600 * NS_PER_S)[0] is None


def test_a_latency_is_never_negative():
    now = 1_795_800_000 * NS_PER_S
    # A looped replay's /clock went back: the frame of the loop's end is 127 ms ahead.
    assert latency_or_reason(now, now + 127_000_000) == (
        None, 'none: the stamp is 0.127 s ahead of the node clock (clocks not synchronized, '
              "or a replay's clock jumped back)")
    # Up to 5 ms ahead is the offset of clocks synchronized over a network: latency 0.
    assert latency_or_reason(now, now + 3_000_000) == (0.0, '')
    assert latency_or_reason(now, now + 5_000_000) == (0.0, '')
    assert latency_or_reason(now, now + 6_000_000)[0] is None
    assert latency_or_reason(now, now) == (0.0, '')
