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
A subscriber process for replay tests: counts what arrives, and can stall like a busy host.

``python replay_subscriber.py <image> <camera_info> <points> <reliable|best_effort> [--stall]``
prints ``ready`` once subscribed and, on every message, ``<kind> <count>``. With ``--stall`` it
stops itself (SIGSTOP) at the first image, as a process that gets no CPU for a while: its DDS
threads then acknowledge nothing until the test sends SIGCONT.
"""

import os
import signal
import sys

import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CameraInfo, Image, PointCloud2


def main() -> None:
    image, camera_info, points, reliability = sys.argv[1:5]
    stall = '--stall' in sys.argv[5:]
    rclpy.init()
    node = rclpy.create_node('replay_subscriber')
    qos = QoSProfile(depth=100, reliability={'reliable': ReliabilityPolicy.RELIABLE,
                                             'best_effort': ReliabilityPolicy.BEST_EFFORT
                                             }[reliability])
    counts = {'image': 0, 'camera_info': 0, 'points': 0}

    def count(kind: str):
        def received(message) -> None:
            counts[kind] += 1
            print(kind, counts[kind], flush=True)
            if stall and kind == 'image' and counts[kind] == 1:
                os.kill(os.getpid(), signal.SIGSTOP)
        return received

    topics = {'image': (Image, image), 'camera_info': (CameraInfo, camera_info),
              'points': (PointCloud2, points)}
    for kind, (msg_type, topic) in topics.items():
        node.create_subscription(msg_type, topic, count(kind), qos)
    print('ready', flush=True)
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass


if __name__ == '__main__':
    main()
