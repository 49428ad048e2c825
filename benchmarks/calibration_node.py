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
The node's calibration check end to end, with real tf2: a perturbed extrinsic on /tf_static.

Writes a copy of the KITTI bag whose /tf_static carries the LiDAR->camera extrinsic turned by
``--rotation`` (degrees, a rotation vector in the camera frame: the correction the check should
report), starts ``completion_node`` (the demo prior, defaults otherwise, so the default
calibration_check window and period) and ``lrda play --loop`` on it, and listens to
/diagnostics and /depth: the seconds until the ``calibration`` status turns WARN, its message,
the depth frames before and after, and the check's CPU time against the frames' processing
time. Needs a sourced ROS 2 environment with tf2_ros and this package built
(``ros2 run lrda_ros ...``); set a private ROS_DOMAIN_ID.

    python benchmarks/calibration_node.py --data ../shared/data --rotation 0,1,0
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
import signal
import subprocess
import tempfile
import threading
import time

import numpy as np

KITTI_BAG = 'bags/kitti_2011_09_26_10frames_mcap'
TOPICS = {'image': '/kitti/camera_color_left/image_raw',
          'camera_info': '/kitti/camera_color_left/camera_info',
          'points': '/kitti/velo/pointcloud'}


def write_perturbed_bag(source: Path, target: Path, rotation_deg) -> np.ndarray:
    """Copy the bag with its camera extrinsic turned; return the correction (rotation vector)."""
    from lrda_ros.geometry import RigidTransform
    from lrda_ros.calibration.score import rotation_matrix
    from rosbags.highlevel import AnyReader
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import get_typestore, Stores

    typestore = get_typestore(Stores.ROS2_HUMBLE)
    correction = RigidTransform(rotation_matrix(np.radians(rotation_deg)), np.zeros(3))
    with AnyReader([source]) as reader, Writer(target, version=8,
                                               storage_plugin=StoragePlugin.MCAP) as writer:
        connections = {}
        for connection in reader.connections:
            connections[connection.id] = writer.add_connection(
                connection.topic, connection.msgtype, typestore=typestore,
                offered_qos_profiles=connection.ext.offered_qos_profiles)
        for connection, stamp, raw in reader.messages():
            if connection.topic == '/tf_static':
                message = reader.deserialize(raw, connection.msgtype)
                for transform in message.transforms:
                    if transform.child_frame_id.startswith('camera'):
                        t, q = transform.transform.translation, transform.transform.rotation
                        T_parent_cam = RigidTransform.from_translation_quaternion(
                            np.array([t.x, t.y, t.z]), np.array([q.x, q.y, q.z, q.w]))
                        # T_cam_lidar' = C^-1 T_cam_lidar: the right correction is C.
                        turned = (correction.inverse() @ T_parent_cam.inverse()).inverse()
                        t.x, t.y, t.z = turned.translation
                        q.x, q.y, q.z, q.w = turned.quaternion_xyzw()
                raw = typestore.serialize_cdr(message, connection.msgtype)
            writer.write(connections[connection.id], stamp, raw)
    return np.asarray(rotation_deg, float)


def main() -> None:
    """Run the node on the perturbed bag and report the calibration status's course."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--data', type=Path, default=Path('../shared/data'))
    parser.add_argument('--rotation', default='0,1,0', help='deg, camera-frame rotation vector')
    parser.add_argument('--timeout', type=float, default=240.0)
    parser.add_argument('--after', type=int, default=3,
                        help='depth frames to see after the WARN (frames keep flowing)')
    parser.add_argument('--duration', type=float, default=0.0,
                        help='keep running at least this long (s) to measure the cost over '
                        'several checks')
    args = parser.parse_args()

    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
    from sensor_msgs.msg import Image

    rotation = [float(v) for v in args.rotation.split(',')]
    folder = Path(tempfile.mkdtemp(prefix='lrda_calibration_node_'))
    bag = folder / 'perturbed'
    write_perturbed_bag(args.data / KITTI_BAG, bag, rotation)
    node = subprocess.Popen(
        ['ros2', 'run', 'lrda_ros', 'completion_node', '--ros-args', '-p', 'model:=demo',
         '-p', 'processing_size:=266', '-p', 'time_budget:=1.0',
         *[arg for role, topic in TOPICS.items() for arg in ('-r', f'{role}:={topic}')]],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    play = subprocess.Popen(['ros2', 'run', 'lrda_ros', 'lrda', 'play', str(bag), '--loop'],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    rclpy.init()
    listener = rclpy.create_node('calibration_check_listener')
    start = time.monotonic()
    state = {'depth': 0, 'depth_at_warn': None, 'warn_s': None, 'message': '', 'values': {},
             'completion': {}}
    done = threading.Event()

    def on_depth(_message) -> None:
        state['depth'] += 1
        if state['depth_at_warn'] is not None and \
                state['depth'] >= state['depth_at_warn'] + args.after:
            done.set()

    def on_diagnostics(message) -> None:
        for status in message.status:
            values = {kv.key: kv.value for kv in status.values}
            if status.name.endswith(': depth completion'):
                state['completion'] = values
            if status.name.endswith(': calibration'):
                state['values'] = values
                if status.level == DiagnosticStatus.WARN and state['warn_s'] is None:
                    state['warn_s'] = time.monotonic() - start
                    state['message'] = status.message
                    state['depth_at_warn'] = state['depth']

    listener.create_subscription(Image, '/depth', on_depth, 10)
    listener.create_subscription(DiagnosticArray, '/diagnostics', on_diagnostics, 10)
    try:
        while not (done.is_set() and time.monotonic() - start >= args.duration) and \
                time.monotonic() - start < args.timeout:
            rclpy.spin_once(listener, timeout_sec=0.5)
    finally:
        # ros2 run starts the executable as its child: end each one's whole process group.
        for process in (play, node):
            os.killpg(process.pid, signal.SIGINT)
        for process in (play, node):
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        listener.destroy_node()
        rclpy.shutdown()
    values, completion = state['values'], state['completion']
    print(f'extrinsic on /tf_static turned by {rotation} deg (the correction to find)')
    if state['warn_s'] is None:
        print(f'no WARN within {args.timeout:.0f} s; last calibration status: {values}')
        return
    processed = int(completion.get('frames processed', 0) or 0)
    frame_s = float(completion.get('processing time (s)', 'nan'))
    cpu = float(values.get('background CPU time (s)', 'nan'))
    print(f'calibration status WARN after {state["warn_s"]:.1f} s: {state["message"]}')
    print(f'correction rotation vector (deg): '
          f'{values.get("correction rotation vector (deg, camera frame)")}; frames used '
          f'{values.get("frames used")}; depth frames: {state["depth_at_warn"]} before the '
          f'WARN, {state["depth"] - state["depth_at_warn"]} after')
    print(f'frames processed {processed}, last processing time {frame_s:.2f} s; checks run '
          f'{values.get("checks run")}; background CPU {cpu:.2f} s over '
          f'{time.monotonic() - start:.0f} s, {100 * cpu / max(processed * frame_s, 1e-9):.1f} % '
          "of the frames' processing time")


if __name__ == '__main__':
    main()
