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

"""``lrda calibrate``: its options and its run (the check itself: lrda_ros/calibration)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from .options import add_bag_inputs, add_command, extrinsic_of, node_default, parameter

#: The node parameters --rotation-tolerance and --max-frames stand for (the node's check is
#: the command's).
TOLERANCE, WINDOW = 'calibration_check.rotation_tolerance', 'calibration_check.window'


def add_calibrate(commands) -> None:
    """Add ``lrda calibrate`` and its options."""
    parser = add_command(commands, 'calibrate', "check a bag's LiDAR->camera calibration (and "
                         'time offset) from its own frames')
    parser.add_argument('--bag', type=Path, required=True,
                        help='a rosbag2 folder (.db3 or .mcap; required, no default)')
    parser.add_argument('--output', type=Path, default=Path('out/calibrate'),
                        help='folder of calibration.json, overlay.png and score_profiles.png')
    parser.add_argument('--max-frames', type=parameter(WINDOW),
                        help='frames of the window, from the start of the bag; '
                        + node_default(WINDOW))
    parser.add_argument('--translation', action='store_true',
                        help='also search the translation (reported per axis as observable or '
                        'not; off by default: see doc/calibration.md)')
    parser.add_argument('--rotation-tolerance', type=parameter(TOLERANCE),
                        help='smallest rotation correction (deg) that makes a calibration '
                        'suspect; ' + node_default(TOLERANCE))
    add_bag_inputs(parser)


def run_calibrate(args: argparse.Namespace) -> int:
    """Check the bag's calibration, print the verdict and the correction, write the report."""
    from ..calibration.bag import calibrate_bag, CALIBRATION_JSON, CalibrateOptions
    from ..messages.rosbag import BagTopics
    from ..settings import load_parameters, NodeSettings

    parameters = load_parameters(args.params_file, args.parameters)
    for name, value in ((TOLERANCE, args.rotation_tolerance), (WINDOW, args.max_frames)):
        if value is not None:
            parameters[name] = value
    settings = NodeSettings.from_values(parameters)
    extrinsic = extrinsic_of(args, parameters)
    topics = BagTopics(args.image_topic, args.camera_info_topic, args.points_topic)
    options = CalibrateOptions(
        bag=args.bag, output=args.output, topics=topics, extrinsic=extrinsic,
        image_is_rectified=(settings.image_is_rectified if args.image_is_rectified is None
                            else args.image_is_rectified),
        pairing=replace(settings.pairing, **{k: v for k, v in (
            ('slop_s', args.slop), ('queue_size', args.queue_size)) if v is not None}),
        max_frames=settings.calibration.window,
        check=replace(settings.calibration.check, translation=args.translation))
    result = calibrate_bag(options)
    print(f'frames paired as the node pairs them: {options.pairing.describe()}')
    print(result.message)
    print(f'wrote {args.output}/: {CALIBRATION_JSON}, overlay.png, score_profiles.png')
    return 0
