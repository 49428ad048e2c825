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
The node's own work around the engine per frame, each stage old against new, in one run.

    python benchmarks/host_path.py [--repeats 15] [--shared-data ../shared/data]

Prints the machine line, then two tables: each host stage's milliseconds at KITTI size
(1242x375 rgb8 and the KITTI bag's first ~114k-point sweep when the shared data is there, else
a synthetic 64-beam sweep) and at 1920x1200 with two synthetic 128-beam LiDARs (262k points
each, with an ouster-ros per-point time field), with every output built: the steps they
replaced (benchmarks/host_reference.py, the old cloud reading) beside the package's, and their
ratio: the median run (what a frame takes on this machine as it is) and the best run (what the
code costs when the machine lets it run: on a shared CPU the other processes' time slices land
in some runs). The allocator is set as the node sets it (engine/allocator.py). No engine: its
depth is a fixed map. The stages:

- read: the image and camera_info messages to arrays, and each cloud to points (with their
  times and validity where the cloud has a time field);
- project: the clouds into the image, the z-buffer and the occlusion test
  (``clouds_to_sparse_depth`` with the node's default settings);
- confidence: ``depth_confidence`` and its 32FC1 message;
- colored: ``colorize_depth`` (range picked per frame) and its rgb8 message;
- points_dense: the depth back-projected at stride 2 with colours, as a PointCloud2;
- depth: the depth and its camera_info messages;
- support: the confidence's support factor alone (the distance to the LiDAR), which the node
  computes on its second thread while the engine runs: not in ``host``, the node's time
  outside the engine as ``lrda hold-rate`` reports it (the replaced steps: in confidence);
- outputs, one after another: the four above with the support computed ahead, built one
  after the other (how the node built them before building them on two threads);
- outputs: the same as the node builds them after the engine, on two threads
  (``ros/frame_messages.py``). The old column of both rows is the replaced steps one after
  another. ``host`` is read, project and outputs.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from functools import partial
from pathlib import Path
import statistics
import time
from types import SimpleNamespace
from typing import Any, Callable

import host_reference as reference
from lrda_ros.colormap import colorize_depth
from lrda_ros.engine.allocator import keep_freed_memory_in_heap
from lrda_ros.geometry import (
    CameraModel, clouds_to_sparse_depth, LidarCloud, RigidTransform)
from lrda_ros.geometry.confidence import depth_confidence, support_confidence
from lrda_ros.geometry.second_thread import new_second_thread, SameThread
from lrda_ros.messages.conversions import (
    camera_info_to_camera_model, image_to_rgb, pointcloud2_to_xyz)
from lrda_ros.messages.point_times import (
    find_time_layout, finite_xyz_mask, point_times, read_cloud, UINT32)
from lrda_ros.pipeline import FrameInputs, FrameOutputs, PreparedFrame
from lrda_ros.ros.builders import (
    camera_model_to_camera_info, depth_to_image_msg, depth_to_pointcloud2, rgb_to_image_msg,
    xyz_to_pointcloud2)
from lrda_ros.ros.frame_messages import frame_messages, OUTPUTS
from lrda_ros.settings.node_settings import NodeSettings
from lrda_ros.speed.machine import machine_description, machine_line
import numpy as np
from sensor_msgs.msg import PointCloud2, PointField
from std_msgs.msg import Header

STAGES = ('read', 'project', 'confidence', 'colored', 'points_dense', 'depth', 'support',
          'outputs one by one', 'outputs')
#: The stages of a frame's host time (the outputs' own stages are in 'outputs'; the support
#: runs beside the engine).
HOST_STAGES = ('read', 'project', 'outputs')
#: The table's row names where a stage's own name says too little.
STAGE_LABELS = {'outputs': 'outputs, as the node builds them (two threads)',
                'outputs one by one': 'outputs, one after another',
                'support': 'support (beside the engine, not in host)'}
POINTS_STRIDE = 2


@dataclass
class Frame:
    """One frame's messages, their camera and transforms, and a depth map standing in."""

    image: Any
    info: Any
    clouds: list[Any]
    transforms: list[RigidTransform]
    depth: np.ndarray


def synthetic_image_messages(width: int, height: int, K: np.ndarray) -> tuple[Any, Any]:
    """Return an rgb8 image and its camera_info of a textured frame."""
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    header = Header(frame_id='camera')
    return (rgb_to_image_msg(rgb, header),
            camera_model_to_camera_info(CameraModel(K, width, height), header))


def spinning_sweep(beams: int, columns: int, fov_deg: tuple[float, float],
                   seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Return a spinning LiDAR's points (x forward, z up) in a street, and ns since its start."""
    rng = np.random.default_rng(seed)
    elevation = np.radians(np.linspace(*fov_deg, beams))[:, None]
    azimuth = np.linspace(np.pi, -np.pi, columns, endpoint=False)[None, :]
    ground = np.where(elevation < 0, 1.8 / np.maximum(np.sin(-elevation), 1e-3), np.inf)
    walls = 8.0 / np.maximum(np.abs(np.sin(azimuth)), 0.1)
    ranges = np.minimum(np.minimum(ground, walls), 80.0) * (1 + 0.01 * rng.standard_normal(
        (beams, columns)))
    points = np.stack([ranges * np.cos(elevation) * np.cos(azimuth),
                       ranges * np.cos(elevation) * np.sin(azimuth),
                       ranges * np.sin(elevation)], axis=-1).reshape(-1, 3)
    times = np.broadcast_to(np.arange(columns) * (100_000_000 // columns), (beams, columns))
    return points.astype(np.float32), times.reshape(-1).astype(np.uint32)


def cloud_message(points: np.ndarray, times: np.ndarray | None) -> Any:
    """Return a PointCloud2 of x, y, z, intensity (and ouster-ros's uint32 t when given)."""
    if times is None:
        return xyz_to_pointcloud2(points, Header(frame_id='lidar'),
                                  extra_fields={'intensity': np.ones(len(points), np.float32)})
    layout = np.dtype({'names': ['x', 'y', 'z', 'intensity', 't'],
                       'formats': ['<f4'] * 4 + ['<u4'], 'offsets': [0, 4, 8, 12, 16],
                       'itemsize': 24})
    cloud = np.zeros(len(points), dtype=layout)
    for column, name in enumerate('xyz'):
        cloud[name] = points[:, column]
    cloud['t'] = times
    msg = PointCloud2(header=Header(frame_id='lidar'), height=1, width=len(points),
                      point_step=24, row_step=24 * len(points), is_bigendian=False,
                      is_dense=True)
    msg.fields = [PointField(name=name, offset=offset, datatype=datatype, count=1)
                  for name, offset, datatype in (('x', 0, 7), ('y', 4, 7), ('z', 8, 7),
                                                 ('intensity', 12, 7), ('t', 16, UINT32))]
    msg.data = cloud.tobytes()
    return msg


def forward_lidar(yaw_deg: float, shift: float) -> RigidTransform:
    """Return T_camera_lidar of a LiDAR (x forward, z up) beside an optical-frame camera."""
    yaw = np.radians(yaw_deg)
    turn = np.array([[np.cos(yaw), -np.sin(yaw), 0.0], [np.sin(yaw), np.cos(yaw), 0.0],
                     [0.0, 0.0, 1.0]])
    optical = np.array([[0.0, -1.0, 0.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0]])
    matrix = np.eye(4)
    matrix[:3, :3] = optical @ turn
    matrix[:3, 3] = (shift, 0.1, -0.2)
    return RigidTransform.from_matrix(matrix)


def street_depth(height: int, width: int, seed: int) -> np.ndarray:
    """Return a completed depth map's stand-in: a road and walls, the sky NaN."""
    rows = np.arange(height, dtype=np.float32)[:, None]
    horizon = height * 0.4
    road = 1.8 * height / np.maximum(rows - horizon, 1.0)
    walls = np.float32(12.0) + 6.0 * np.random.default_rng(seed).random((height, width))
    depth = np.minimum(road, walls).astype(np.float32)
    depth[:int(horizon * 0.5)] = np.nan
    return depth


def kitti_frame(shared_data: Path | None) -> tuple[Frame, str]:
    """Return the KITTI bag's first frame (or a synthetic one of its size) and its source."""
    bag = None if shared_data is None else (
        shared_data / 'bags' / 'kitti_2011_09_26_10frames_mcap')
    K = np.array([[721.5377, 0.0, 609.5593], [0.0, 721.5377, 172.854], [0.0, 0.0, 1.0]])
    if bag is not None and bag.is_dir():
        from lrda_ros.messages.rosbag import BagTopics, RosbagSource

        with RosbagSource(bag, BagTopics()) as source:
            image, info, cloud = next(iter(source.synchronized()))[:3]
            transform = source.transform_tree().lookup(image.header.frame_id,
                                                       cloud.header.frame_id)
        return (Frame(image, info, [cloud], [transform], street_depth(375, 1242, 1)),
                'the KITTI bag')
    image, info = synthetic_image_messages(1242, 375, K)
    points, _ = spinning_sweep(64, 1800, (-24.8, 2.0), seed=1)
    return (Frame(image, info, [cloud_message(points, None)], [forward_lidar(0.0, 0.0)],
                  street_depth(375, 1242, 1)), 'synthetic (no shared data)')


def wide_frame() -> Frame:
    """Return a 1920x1200 frame with two 128-beam LiDARs (262k points each, point times)."""
    K = np.array([[1000.0, 0.0, 960.0], [0.0, 1000.0, 600.0], [0.0, 0.0, 1.0]])
    image, info = synthetic_image_messages(1920, 1200, K)
    clouds = [cloud_message(*spinning_sweep(128, 2048, (-22.5, 22.5), seed=seed))
              for seed in (2, 3)]
    return Frame(image, info, clouds, [forward_lidar(20.0, 0.5), forward_lidar(-20.0, -0.5)],
                 street_depth(1200, 1920, 2))


def old_read_cloud(msg: Any) -> np.ndarray:
    """Read a cloud as the node did: points, then times and validity, each parsing it again."""
    points = pointcloud2_to_xyz(msg)
    layout = find_time_layout(msg)
    if layout is not None:
        point_times(msg, layout)[finite_xyz_mask(msg)]
    return points


def host_stages(frame: Frame, old: bool) -> dict[str, Callable[[], Any]]:
    """Return each stage of ``frame`` as a call, the replaced steps' (``old``) or today's."""
    camera = camera_info_to_camera_model(frame.info)
    rgb = image_to_rgb(frame.image)
    # The node's default projection settings (occluded points removed among them).
    header, config = frame.image.header, NodeSettings.from_values({}).projection
    clouds = [LidarCloud(read_cloud(msg).points, transform)
              for msg, transform in zip(frame.clouds, frame.transforms)]
    sparse = clouds_to_sparse_depth(clouds, camera, config).depth
    # The node's pipeline keeps its second thread from frame to frame, as here.
    beside = new_second_thread()
    project = (reference.clouds_to_sparse_depth if old else
               partial(clouds_to_sparse_depth, beside=beside))
    confidence = reference.depth_confidence if old else partial(depth_confidence, beside=beside)

    def read() -> None:
        camera_info_to_camera_model(frame.info)
        image_to_rgb(frame.image)
        for msg in frame.clouds:
            old_read_cloud(msg) if old else read_cloud(msg)

    def colored() -> None:
        if old:
            rgb_to_image_msg(reference.colorize_depth(
                frame.depth, *reference.depth_display_range(frame.depth)), header)
        else:
            rgb_to_image_msg(colorize_depth(frame.depth), header)

    def points_dense() -> None:
        if old:
            points, rows, cols = reference.backproject_depth(frame.depth, camera, POINTS_STRIDE)
            xyz_to_pointcloud2(points, header, rgb=rgb[rows, cols])
        else:
            depth_to_pointcloud2(frame.depth, camera, rgb, POINTS_STRIDE, header)

    def depth() -> None:
        depth_to_image_msg(frame.depth, header)
        frame.info.header = header

    def confidence_message() -> None:
        depth_to_image_msg(confidence(frame.depth, sparse), header)

    projected = clouds_to_sparse_depth(clouds, camera, config)
    inputs = FrameInputs.from_clouds(rgb, camera, clouds)
    # Only the model's own confidence is read of the engine's result: none here.
    no_model_confidence = SimpleNamespace(confidence=None)

    prepared = PreparedFrame(inputs, projected, sparse, None,
                             support=SameThread().submit(support_confidence, sparse))

    completed = FrameOutputs(frame.depth, prepared, no_model_confidence, beside=beside)

    def outputs() -> None:
        if old:
            for stage in (confidence_message, colored, points_dense, depth):
                stage()
            return
        frame_messages(completed, header, frame.info, OUTPUTS, (None, None), POINTS_STRIDE)

    def outputs_one_by_one() -> None:
        if old:
            return outputs()
        depth()
        depth_to_image_msg(completed.confidence, header)
        colored()
        points_dense()

    stages = {'read': read, 'project': lambda: project(clouds, camera, config),
              'confidence': confidence_message, 'colored': colored,
              'points_dense': points_dense, 'depth': depth, 'outputs': outputs,
              'outputs one by one': outputs_one_by_one}
    if not old:
        stages['support'] = partial(support_confidence, sparse)
    return stages


def run_ms(call: Callable[[], Any], repeats: int) -> list[float]:
    """Return the wall times of ``call`` in ms over ``repeats`` runs after one warm-up."""
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def measure(frame: Frame, repeats: int, old_repeats: int) -> dict[str, tuple[list, list]]:
    """Return each stage's (old, new) run times in ms, old and new one after the other."""
    old, new = host_stages(frame, True), host_stages(frame, False)
    return {stage: (run_ms(old[stage], old_repeats) if stage in old else [],
                    run_ms(new[stage], repeats)) for stage in STAGES}


def table(columns: dict[str, dict[str, tuple[list, list]]],
          statistic: Callable[[list], float], what: str) -> list[str]:
    """Return the markdown table: per stage and frame kind, old, new and old / new."""
    heads = ' | '.join(f'{name}: old | new | ×' for name in columns)
    lines = [f'| {what} (ms) | {heads} |', '|---|' + '---:|' * (3 * len(columns))]
    totals = {name: [0.0, 0.0] for name in columns}
    for stage in STAGES:
        cells = []
        for name, stages in columns.items():
            old_times, new_times = stages[stage]
            old = statistic(old_times) if old_times else 0.0
            new = statistic(new_times)
            if stage in HOST_STAGES:
                totals[name][0] += old
                totals[name][1] += new
            cells.append(f'{old:.1f} | {new:.1f} | {old / new:.1f}' if old_times
                         else f'— | {new:.1f} | —')
        lines.append(f'| {STAGE_LABELS.get(stage, stage)} | ' + ' | '.join(cells) + ' |')
    lines.append('| **host, all outputs** | ' + ' | '.join(
        f'**{old:.1f}** | **{new:.1f}** | **{old / new:.1f}**'
        for old, new in totals.values()) + ' |')
    return lines


def main() -> None:
    """Parse the options, time every stage old and new on both frames, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--repeats', type=int, default=15,
                        help='timed runs of each new stage (median; default: 15)')
    parser.add_argument('--old-repeats', type=int, default=3,
                        help='timed runs of each replaced stage (default: 3)')
    parser.add_argument('--shared-data', type=Path, default=Path('../shared/data'),
                        help='the shared data folder, for the KITTI bag (default: '
                             '../shared/data; synthetic without it)')
    args = parser.parse_args()
    print(machine_line(machine_description('cpu', 'float32')))
    # As the node's engine does at start-up (tune_cpu_allocator): large arrays freed by one
    # frame are reused by the next instead of being mapped afresh and zero-filled.
    kept = keep_freed_memory_in_heap()
    print('allocator: large freed blocks ' + ('kept in the heap, as in the node' if kept
                                              else 'returned to the system (no glibc)'))
    kitti, source = kitti_frame(args.shared_data if args.shared_data.is_dir() else None)
    wide = wide_frame()
    print(f'KITTI size: 1242x375, {source}, '
          f'{sum(msg.width * msg.height for msg in kitti.clouds)} points; '
          f'1920x1200: two 128-beam LiDARs, '
          f'{sum(msg.width * msg.height for msg in wide.clouds)} points')
    columns = {'1242x375': measure(kitti, args.repeats, args.old_repeats),
               '1920x1200, 2 LiDARs': measure(wide, args.repeats, args.old_repeats)}
    print('\n'.join(table(columns, statistic=statistics.median, what='median run')))
    print()
    print('\n'.join(table(columns, statistic=min, what='best run')))


if __name__ == '__main__':
    main()
