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


"""``lrda play`` and ``lrda hold-rate``: a bag replayed over rclpy; the rate a node holds."""

from __future__ import annotations

from pathlib import Path

from .options import add_command, add_model, add_topics, EXIT_GRACE_S, number, parameter

#: Seconds ``lrda hold-rate`` has after a signal to stop its replay process and print.
HOLD_RATE_GRACE_S = 15.0


def add_play(commands) -> None:
    parser = add_command(commands, 'play', 'replay a rosbag2 over rclpy (without ros2cli)')
    parser.add_argument('bag', type=Path, help='a rosbag2 folder (.mcap or .db3)')
    parser.add_argument('--rate', type=number(float, above=0), default=1.0,
                        help='replay speed factor (2: twice as fast)')
    parser.add_argument('--loop', action='store_true', help='start again at the end')
    parser.add_argument('--wait', type=number(float, 0), default=10.0,
                        help='seconds to wait for a subscriber on every topic before playing')
    parser.add_argument('--linger', type=number(float, 0), default=10.0,
                        help='at most this many seconds after the last message, wait for '
                             'every reliable subscriber to acknowledge everything (what is '
                             'not confirmed then is named)')
    parser.add_argument('--clock', type=number(float, above=0), nargs='?', const=40.0,
                        default=0.0, metavar='HZ',
                        help='publish the bag time on /clock (40 Hz when given without a '
                             'rate), for nodes run with use_sim_time:=true; default: off')
    add_topics(parser, ('image', 'camera-info', 'points'))


def run_play(args) -> int:
    import threading

    from ..interrupts import exit_now, exit_within
    from ..messages.rosbag import BagTopics
    from ..ros.replay import play_bag

    # SIGINT and SIGTERM end the replay between messages: a summary, exit code 0.
    stop = threading.Event()
    with exit_within(EXIT_GRACE_S, on_signal=stop.set):
        play_bag(args.bag, BagTopics(args.image_topic, args.camera_info_topic,
                                     args.points_topic),
                 args.rate, args.loop, wait_for_subscribers_s=args.wait, linger_s=args.linger,
                 clock_hz=args.clock, stop=stop)
        if stop.is_set():
            exit_now(0)  # all is closed: no slow interpreter teardown
    return 0


def add_hold_rate(commands) -> None:
    parser = add_command(commands, 'hold-rate', 'replay a bag in a loop, from a second '
                         'process that subscribes to every output, into a node with a time '
                         'budget in this one, and report the output rate it holds')
    parser.add_argument('bag', type=Path, help='a rosbag2 folder (.mcap or .db3)')
    parser.add_argument('--budget', type=parameter('time_budget'), default=0.5,
                        help='time_budget of the node (s per frame; 0 = off)')
    parser.add_argument('--seconds', type=number(float, above=0), default=30.0,
                        help='how long to replay')
    parser.add_argument('--rate', type=number(float, above=0), default=1.0,
                        help='replay speed factor')
    add_model(parser, 'demo')
    parser.add_argument('--processing-size', type=parameter('processing_size'), default=518,
                        help='longer side of the network input, 0: the image size')
    parser.add_argument('--output', type=Path,
                        help='write the per-frame record as JSON (default: not written)')


def run_hold_rate(args) -> int:
    import json
    import threading

    from ..interrupts import exit_within
    from ..messages.rosbag import BagTopics, RosbagSource
    from ..ros.replay import held_rate, hold_rate

    with RosbagSource(args.bag, BagTopics()) as source:
        image, _, cloud = next(iter(source.synchronized()))[:3]
        T_cam_lidar = source.transform_tree().lookup(image.header.frame_id,
                                                     cloud.header.frame_id)
    parameters = {'model': args.model, 'device': args.device, 'time_budget': args.budget,
                  'processing_size': args.processing_size, 'warm_start': True,
                  'publish.points_dense': True,  # every output subscribed and built
                  'lidar_to_camera.matrix': [float(v) for v in T_cam_lidar.as_matrix().ravel()]}
    # SIGINT and SIGTERM end the replay early: the summary of what was measured, exit code 0.
    stop = threading.Event()
    with exit_within(HOLD_RATE_GRACE_S, on_signal=stop.set,
                     farewell='lrda hold-rate: stopped before its summary'):
        result = hold_rate(args.bag, BagTopics(), parameters, args.seconds, args.rate, stop)
    rate, summary = held_rate(result)
    print(f'budget {args.budget:g} s: {summary}')
    if args.output:
        args.output.write_text(json.dumps({'budget_s': args.budget, 'rate_hz': rate,
                                           **result}, indent=2) + '\n')
    return 0
