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
Several cameras on one model: resident memory and frames per second, printed as ratios.

Memory: real completion_node processes on the demo prior, fed synthetic frames over DDS until
every camera published depth; resident set (VmRSS, and the peak VmHWM) of one node with N
cameras against N single-camera nodes. Speed: the node's frame path (CompletionPipeline,
warm frames) on N cameras of one resolution, rounds with the encoder batched across cameras
against rounds encoding each frame alone, alternated so the machine's load hits both alike.

    OMP_NUM_THREADS=1 python benchmarks/fleet.py [--cameras 3] [--rounds 6]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
import subprocess
import sys
import time
import uuid

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lrda_ros import world  # noqa: E402, I100
from lrda_ros.engine import DepthCompleter, load_depth_model, TTOConfig  # noqa: E402
from lrda_ros.geometry import ProjectionConfig, RigidTransform  # noqa: E402
from lrda_ros.pipeline import CompletionPipeline, FrameInputs  # noqa: E402

WIDTH, HEIGHT = 320, 240


def sequence(seed: int, frames: int):
    """Return one camera's synthetic indoor frames."""
    return world.make_sequence(world.SequenceConfig(
        'indoor', num_frames=frames, width=WIDTH, height=HEIGHT, seed=seed,
        lidar=world.LidarConfig.indoor(beams=32)))


def memory_kib(pid: int) -> tuple[int, int]:
    """Return (VmRSS, VmHWM) of a process in KiB."""
    fields = dict(line.split(':', 1) for line in Path(f'/proc/{pid}/status').read_text()
                  .splitlines() if ':' in line)
    return int(fields['VmRSS'].split()[0]), int(fields['VmHWM'].split()[0])


def run_nodes(groups: list[list[str]], frames_per_camera: int) -> list[tuple[int, int]]:
    """Start one node per camera group, feed every camera, return each node's memory."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import CameraInfo, Image, PointCloud2
    from lrda_ros.ros.bag_writer import stamped_header
    from lrda_ros.ros.builders import (
        camera_model_to_camera_info, rgb_to_image_msg, xyz_to_pointcloud2)

    namespace = f'/fleet_{uuid.uuid4().hex[:8]}'
    frames = sequence(3, frames_per_camera)
    matrix = ','.join(repr(float(v)) for v in frames[0].T_cam_lidar.ravel())
    processes = []
    log = open(os.environ.get('FLEET_NODE_LOG', os.devnull), 'a')  # the nodes' output
    for index, group in enumerate(groups):
        named = len(groups) == 1
        command = [sys.executable, '-m', 'lrda_ros.ros.node', '--ros-args',
                   '-r', f'__ns:={namespace}' + ('' if named else f'/{group[0]}'),
                   '-r', f'__node:=completion_{index}', '-p', 'model:=demo',
                   '-p', 'device:=cpu', '-p', 'processing_size:=0', '-p', 'iterations:=10',
                   '-p', 'warm_start:=true', '-p', 'warm_iterations:=4',
                   '-p', f'lidar_to_camera.matrix:=[{matrix}]',
                   '-p', 'projection.remove_occluded:=false']
        if named:
            command += ['-p', f'cameras:=[{", ".join(group)}]']
        # Every frame matters here: reliable inputs (best effort loses large messages between
        # processes on a loaded machine).
        for camera in group:
            for topic in ('image', 'camera_info', 'points'):
                command += ['-p', f'qos_overrides.{namespace}/{camera}/{topic}.subscription.'
                            'reliability:=reliable']
        processes.append(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                          cwd=ROOT,
                                          env={**os.environ, 'PYTHONPATH': str(ROOT)}))
    cameras = [camera for group in groups for camera in group]
    rclpy.init()
    node = rclpy.create_node('fleet_bench', namespace=namespace)
    inputs, received = {}, dict.fromkeys(cameras, 0)
    for camera in cameras:
        inputs[camera] = [node.create_publisher(t, f'{camera}/{n}', 10) for t, n in (
            (Image, 'image'), (CameraInfo, 'camera_info'), (PointCloud2, 'points'))]

        def count(_, camera=camera):
            received[camera] += 1
        node.create_subscription(Image, f'{camera}/depth', count, 10)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        deadline = time.monotonic() + 300
        while any(p.get_subscription_count() == 0 for pubs in inputs.values() for p in pubs) \
                or any(node.count_publishers(f'{namespace}/{camera}/depth') == 0
                       for camera in cameras):
            executor.spin_once(timeout_sec=0.1)
            if time.monotonic() > deadline:
                raise RuntimeError('the nodes did not subscribe within 300 s')
        for _ in range(20):  # the nodes see this subscriber of their depth
            executor.spin_once(timeout_sec=0.1)
        for k, frame in enumerate(frames):
            header = stamped_header('camera', 10**9 + k * 10**8)
            for camera in cameras:
                image, info, points = inputs[camera]
                image.publish(rgb_to_image_msg(frame.rgb, header))
                info.publish(camera_model_to_camera_info(frame.camera, header))
                points.publish(xyz_to_pointcloud2(frame.points_lidar[:, :3],
                                                  stamped_header('lidar', 10**9 + k * 10**8)))
            wait_until = time.monotonic() + 300
            while min(received.values()) < k + 1 and time.monotonic() < wait_until:
                executor.spin_once(timeout_sec=0.1)
        if min(received.values()) < 1:
            raise RuntimeError(f'depth per camera: {received}')
        return [memory_kib(p.pid) for p in processes]
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=60)
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown()


def frames_per_second(cameras: int, rounds: int) -> dict[str, float]:
    """Time rounds of one warm frame per camera with and without batched encoding."""
    choice = load_depth_model('demo', 'cpu')
    pipeline = CompletionPipeline(
        DepthCompleter(choice, TTOConfig(device='cpu', warm_start=True, iterations=10,
                                         warm_iterations=4)),
        ProjectionConfig(min_range=0.1, remove_occluded=False))
    streams = [sequence(seed, rounds + 1) for seed in range(cameras)]
    seconds = {True: 0.0, False: 0.0}
    encode = {True: 0.0, False: 0.0}
    for k in range(rounds + 1):
        for batched in (k % 2 == 0, k % 2 == 1):  # alternate which goes first
            prepared = [pipeline.prepare(FrameInputs(
                s[k].rgb, s[k].camera, s[k].points_lidar[:, :3],
                RigidTransform.from_matrix(s[k].T_cam_lidar), k))
                for s in streams]
            start = time.perf_counter()
            features = pipeline.encode(prepared) if batched else [None] * cameras
            results = [pipeline.complete(frame, stream=(index, batched), encoded=feature)
                       for index, (frame, feature) in enumerate(zip(prepared, features))]
            if k > 0:  # the first round is cold (all iterations): not timed
                seconds[batched] += time.perf_counter() - start
                encode[batched] += sum(r.completion.encode_seconds for r in results)
    return {'batched fps': cameras * rounds / seconds[True],
            'one-by-one fps': cameras * rounds / seconds[False],
            'batched encoder s/frame': encode[True] / (cameras * rounds),
            'one-by-one encoder s/frame': encode[False] / (cameras * rounds)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('--cameras', type=int, default=3)
    parser.add_argument('--rounds', type=int, default=6)
    parser.add_argument('--frames', type=int, default=3, help='frames per camera (memory)')
    parser.add_argument('--skip-memory', action='store_true')
    args = parser.parse_args()
    names = [f'cam{index}' for index in range(args.cameras)]
    print(f'{args.cameras} cameras, {WIDTH}x{HEIGHT}, demo prior, CPU, '
          f'OMP_NUM_THREADS={os.environ.get("OMP_NUM_THREADS", "unset")}')
    if not args.skip_memory:
        together = run_nodes([names], args.frames)
        apart = run_nodes([[name] for name in names], args.frames)
        rss_one, hwm_one = together[0]
        rss_all, hwm_all = (sum(values) for values in zip(*apart))
        print(f'memory, one node with {args.cameras} cameras: RSS {rss_one / 1024:.0f} MiB '
              f'(peak {hwm_one / 1024:.0f} MiB)')
        print(f'memory, {args.cameras} single-camera nodes: RSS {rss_all / 1024:.0f} MiB '
              f'(peak {hwm_all / 1024:.0f} MiB); per node '
              + ', '.join(f'{rss / 1024:.0f}' for rss, _ in apart))
        print(f'ratio one node / {args.cameras} nodes: RSS {rss_one / rss_all:.2f}, '
              f'peak {hwm_one / hwm_all:.2f}')
    speed = frames_per_second(args.cameras, args.rounds)
    print('speed, warm frames (4 steps): ' + ', '.join(
        f'{name} {value:.3f}' for name, value in speed.items()))
    print(f'ratio batched / one-by-one fps: '
          f'{speed["batched fps"] / speed["one-by-one fps"]:.2f}')


if __name__ == '__main__':
    main()
