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
Projection on a moving robot: sparse-depth error with and without time alignment.

The synthetic street's rig drives at ``--speed`` m/s turning at ``--yaw-rate`` deg/s; its
LiDAR sweeps in ``--period`` s with a time per point (stamped at the sweep's start, cut behind
the rig); the camera is stamped mid-sweep plus each of ``--offsets`` s. For every scene seed
and offset, the sparse depth map projected from the sweep as it was measured (one transform
for the whole cloud), from the sweep moved to the image's instant (``align_sweep``, poses
from the rig's trajectory as tf2 would give them) and from the sweep moved as a cloud without
point times is (every point taken at the stamp) is compared with the rendered depth at the
same pixels: the median absolute error per offset and over all. A still rig (speed and yaw
rate 0) must give bit-identical maps. Last, the time ``align_sweep`` takes for one sweep of
128 beams (about 130k points).

``--complete``: also the completed depth's MAE (the embedded demo prior, trained on this
world, cold frames) from the sparse map without and with alignment, and from a still rig
standing where the moving one was at the image's instant (same image, same scene).

    python benchmarks/moving_rig.py
    python benchmarks/moving_rig.py --seeds 0 1 2 --offsets -0.05 0 0.05
    python benchmarks/moving_rig.py --complete --offsets -0.05 0.05
"""

from __future__ import annotations

import argparse
import os
import time

from lrda_ros import world
from lrda_ros.geometry import (
    align_sweep, lidar_to_sparse_depth, ProjectionConfig, RigidTransform)
from lrda_ros.speed.machine import cpu_model
import numpy as np


def _frame(seed: int, offset_s: float, motion: world.RigMotion, args,
           with_rgb: bool = False) -> tuple:
    """
    Return one frame's sparse maps and its view.

    The maps: without alignment, with alignment, a still rig's, and aligned as a cloud without
    point times is (every point taken at the stamp, the sweep's start).

    The view is rendered without noise or shadows unless ``with_rgb`` (the image a completer
    sees); its depth is the ground truth either way.
    """
    scene = world.make_scene('outdoor', seed, length=80.0)
    camera = world.pinhole_camera_focal(args.width, args.height, args.fx)
    T_cam_lidar = world.lidar_mount()
    T_world_cam = world.camera_pose((15.0, scene.layout.lane_y, 1.6), 0.0, 0.0)
    T_world_lidar = T_world_cam @ T_cam_lidar
    lidar = world.LidarConfig(beams=args.beams, range_noise_std=0.0)
    sweep = world.simulate_moving_sweep(scene, T_world_lidar, lidar, motion)
    image_s = motion.sweep_period_s / 2 + offset_s
    T_world_lidar_image = motion.pose(T_world_lidar, image_s)
    T_world_cam_image = T_world_lidar_image @ np.linalg.inv(T_cam_lidar)
    view = (world.render(scene, camera, T_world_cam_image) if with_rgb else
            world.render(scene, camera, T_world_cam_image, noise_std=0.0, shadows=False))

    def pose(seconds: float) -> RigidTransform:
        return RigidTransform.from_matrix(motion.pose(T_world_lidar, seconds))

    aligned = align_sweep(sweep.points, sweep.times, image_s, pose)
    at_stamp = align_sweep(sweep.points, np.zeros(len(sweep.points)), image_s, pose)
    still = world.simulate_moving_sweep(scene, T_world_lidar_image, lidar,
                                        world.RigMotion(0.0, 0.0, motion.sweep_period_s))
    extrinsic = RigidTransform.from_matrix(T_cam_lidar)
    maps = [lidar_to_sparse_depth(points, extrinsic, camera, ProjectionConfig()).depth
            for points in (sweep.points, aligned.points, still.points, at_stamp.points)]
    return maps, view


def _errors(sparse: np.ndarray, depth: np.ndarray) -> np.ndarray:
    both = (sparse > 0) & (depth > 0)
    return np.abs(sparse[both] - depth[both]).astype(np.float64)


def _row(label: str, errors: tuple[list, list, list]) -> str:
    """Return a table row: the median errors without, with alignment and without times."""
    without, with_alignment, at_stamp = (float(np.median(np.concatenate(e))) for e in errors)
    return (f'| {label} | {without:.4f} | {with_alignment:.4f} | '
            f'{without / with_alignment:.1f} | {at_stamp:.4f} |')


def accuracy(args) -> None:
    """Print the median sparse-depth error per offset, without and with alignment."""
    motion = world.RigMotion(args.speed, args.yaw_rate, args.period)
    print(f'rig: {args.speed} m/s, {args.yaw_rate} deg/s, {1 / args.period:g} Hz sweep, '
          f'{args.beams} beams; camera {args.width}x{args.height}, fx {args.fx}; '
          f'scene seeds {args.seeds}')
    print('| camera offset (ms) | median error without (m) | with alignment (m) | ratio | '
          'aligned without point times (m) |')
    print('|---:|---:|---:|---:|---:|')
    pooled = ([], [], [])
    for offset in args.offsets:
        errors = ([], [], [])
        for seed in args.seeds:
            maps, view = _frame(seed, offset, motion, args)
            for kept, sparse in zip(errors, (maps[0], maps[1], maps[3])):
                kept.append(_errors(sparse, view.depth))
        for kept, new in zip(pooled, errors):
            kept.extend(new)
        print(_row(f'{offset * 1e3:+.0f}', errors))
    print(_row('all', pooled))
    still = world.RigMotion(0.0, 0.0, args.period)
    same = all(np.array_equal(*_frame(seed, offset, still, args)[0][:2])
               for seed in args.seeds[:1] for offset in args.offsets)
    print(f'still rig, alignment on vs off: sparse maps bit-identical: {same}')


def completion(args) -> None:
    """Print the completed depth's MAE from each sparse map (demo prior, cold frames)."""
    from lrda_ros.engine import DepthCompleter, TTOConfig
    from lrda_ros.engine.loading import load_depth_model

    completer = DepthCompleter(load_depth_model('demo', 'cpu'),
                               TTOConfig(device='cpu', warm_start=False,
                                         processing_size=args.processing_size))
    motion = world.RigMotion(args.speed, args.yaw_rate, args.period)
    names = ('without alignment', 'with alignment', 'still rig')
    mae = {name: [] for name in names}
    for offset in args.offsets:
        for seed in args.seeds:
            maps, view = _frame(seed, offset, motion, args, with_rgb=True)
            valid = view.depth > 0
            for name, sparse in zip(names, maps):
                depth = completer.complete(view.rgb, sparse).depth
                mae[name].append(float(np.mean(np.abs(depth[valid] - view.depth[valid]))))
    print(f'completed depth MAE (m), demo prior, processing size {args.processing_size}, '
          f'{len(mae[names[0]])} frames (offsets {args.offsets}, seeds {args.seeds}): ' +
          ', '.join(f'{name} {np.mean(values):.3f}' for name, values in mae.items()) +
          f'; with alignment / still rig = {np.mean(mae[names[1]]) / np.mean(mae[names[2]]):.3f}')


def timing(args) -> None:
    """Print the time align_sweep takes on one 128-beam sweep (min and median of runs)."""
    scene = world.make_scene('outdoor', 0, length=80.0)
    motion = world.RigMotion(args.speed, args.yaw_rate, args.period)
    T_world_lidar = world.camera_pose((15.0, scene.layout.lane_y, 1.6), 0.0, 0.0) @ \
        world.lidar_mount()
    lidar = world.LidarConfig(beams=128, vertical_fov_deg=(-25.0, 5.0), range_noise_std=0.0)
    sweep = world.simulate_moving_sweep(scene, T_world_lidar, lidar, motion)
    seconds = []
    for _ in range(args.runs):
        start = time.perf_counter()  # the pose look-ups are timed too, as tf2's would be
        align_sweep(sweep.points, sweep.times, 0.05,
                    lambda s: RigidTransform.from_matrix(motion.pose(T_world_lidar, s)))
        seconds.append(time.perf_counter() - start)
    print(f'align_sweep, {len(sweep.points)} points: min {min(seconds) * 1e3:.1f} ms, median '
          f'{np.median(seconds) * 1e3:.1f} ms over {args.runs} runs')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--offsets', type=float, nargs='+',
                        default=[-0.05, -0.025, 0.0, 0.025, 0.05])
    parser.add_argument('--speed', type=float, default=10.0)
    parser.add_argument('--yaw-rate', type=float, default=30.0)
    parser.add_argument('--period', type=float, default=0.1)
    parser.add_argument('--beams', type=int, default=64)
    parser.add_argument('--width', type=int, default=1216)
    parser.add_argument('--height', type=int, default=352)
    parser.add_argument('--fx', type=float, default=700.0)
    parser.add_argument('--runs', type=int, default=50)
    parser.add_argument('--complete', action='store_true')
    parser.add_argument('--processing-size', type=int, default=518)
    args = parser.parse_args()
    print(f'machine: {cpu_model()}, {os.cpu_count()} cores')
    if args.complete:
        completion(args)
        return
    accuracy(args)
    timing(args)


if __name__ == '__main__':
    main()
