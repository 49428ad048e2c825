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
Temporal figures on the demo prior: TAE and MAE per configuration, and a scene cut.

``demo-bag``: write the demo's synthetic indoor sequence (its camera trajectory on /tf) as a
rosbag2, for ``lrda eval --bag``. ``scene-cut``: sequences that cut to another world at the
same image size: the demo room, then a street; with ``--data``, also real frames (KITTI DC to
NYUv2 and iBims, NYUv2 to KITTI and iBims, each cropped to the aspect ratio and resized). For
the first frame after each cut and each schedule: the cold MAE, the warm-started MAE, the warm
frame's steps and whether it ran cold.

``tae-split``: where a sequence's TAE comes from. For the ground truth of a demo bag and for
each method's depth saved by ``lrda eval --save-depth``, the forward warp's AbsRel (TAE's first
direction) by the pixel's distance to the nearest LiDAR pixel of the input.

    python benchmarks/temporal.py demo-bag out/temporal/demo_bag --frames 6 --size 128x96
    python benchmarks/temporal.py scene-cut --size 128x96 --data ../shared/data
    python benchmarks/temporal.py tae-split out/temporal/demo_bag out/temporal/demo

``fusion-cost``: the time temporal fusion adds to a frame (warp and blend, numpy) at an image
size, the camera moving forward 5 cm per frame.

    python benchmarks/temporal.py fusion-cost --size 640x480
"""

from __future__ import annotations

import argparse
from dataclasses import replace
import math
from pathlib import Path

from lrda_ros import world
from lrda_ros.datasets import center_crop, Frame, open_dataset, resize_frame
from lrda_ros.datasets.synthetic import synthetic_frames
from lrda_ros.demo.job import write_demo_bag
from lrda_ros.engine import TTOConfig
from lrda_ros.engine.loading import load_depth_model
from lrda_ros.eval.harness import evaluate
from lrda_ros.eval.methods import METHODS, TTOMethod
from lrda_ros.eval.temporal import relative_pose, temporal_alignment_error, warp_depth
import numpy as np


def _size(text: str) -> tuple[int, int]:
    width, height = text.lower().split('x')
    return int(width), int(height)


def demo_bag(args) -> None:
    """Write the demo's indoor sequence (seed 7, 32 beams) as a bag with its trajectory."""
    width, height = args.size
    config = world.SequenceConfig('indoor', args.frames, width=width, height=height, seed=7,
                                  lidar=world.LidarConfig(beams=32))
    write_demo_bag(list(world.iter_sequence(config)), Path(args.output))
    print(f'wrote {args.output}')


class _Named(TTOMethod):
    """A TTO method under another name (one configuration of a comparison)."""

    def __init__(self, name: str, spec_name: str, model, config: TTOConfig) -> None:
        super().__init__(METHODS[spec_name], model, config)
        self.name = name


def _spy_scene_cuts(method: TTOMethod) -> list[bool]:
    """Record, per frame the method completes, whether its engine ran it cold after a cut."""
    cuts = []
    original = method.completer.complete

    def spy(*args, **kwargs):
        result = original(*args, **kwargs)
        cuts.append(result.scene_cut)
        return result

    method.completer.complete = spy
    return cuts


def _fit(frame: Frame, size: tuple[int, int]) -> Frame:
    """Crop ``frame`` to the aspect ratio of ``size = (W, H)`` (centred), then resize to it."""
    width, height = size
    if frame.width * height > width * frame.height:
        cropped = (round(frame.height * width / height), frame.height)
    else:
        cropped = (frame.width, round(frame.width * height / width))
    return resize_frame(center_crop(frame, cropped), size)


def _cuts(args) -> dict[str, tuple[list[Frame], Frame]]:
    """Return each cut: the frames before it and the first frame after, at one image size."""
    width, height = args.size
    before = synthetic_frames(world.SequenceConfig('indoor', args.before, width=width,
                                                   height=height, seed=7))
    after = synthetic_frames(world.SequenceConfig('outdoor', 1, width=width, height=height,
                                                  seed=3))
    cuts = {f'demo room → street ({width}×{height})': (list(before), list(after)[0])}
    if args.data is not None:
        kitti = list(open_dataset('kitti_dc', args.data / 'kitti_dc'))
        nyu = list(open_dataset('nyuv2', args.data / 'nyu'))
        ibims = list(open_dataset('ibims', args.data / 'ibims'))
        for name, frames, other in (('KITTI → NYUv2', kitti, nyu[0]),
                                    ('NYUv2 → KITTI', nyu[:2], kitti[0]),
                                    ('NYUv2 → iBims', nyu[:2], ibims[0]),
                                    ('KITTI → iBims', kitti, ibims[0])):
            size = (frames[0].width, frames[0].height)
            cuts[f'{name} ({size[0]}×{size[1]})'] = (frames, _fit(other, size))
    return cuts


def scene_cut(args) -> None:
    """Print the first frame after each cut: cold against warm-started, per schedule."""
    model = load_depth_model('demo', 'cpu')
    print("| cut | schedule | cold MAE (m) | warm MAE (m) | warm / cold | warm frame's steps "
          '| ran cold |')
    print('|---|---|---|---|---|---|---|')
    for name, (before, after) in _cuts(args).items():
        frames = [replace(frame, sequence='cut') for frame in before + [after]]
        for schedule in args.schedules:
            config = TTOConfig(iterations=args.iterations, warm_iterations=args.warm_iterations,
                               schedule=schedule, device='cpu', dtype='float32', min_points=8)
            cold = evaluate([replace(after, sequence=None)],
                            [_Named('cold', 'lrda', model, config)], progress=False).records[-1]
            warm_method = _Named('warm', 'lrda-warm', model, config)
            cuts = _spy_scene_cuts(warm_method)
            warm = evaluate(frames, [warm_method], progress=False).records[-1]
            ratio = warm.metrics.mae / cold.metrics.mae
            print(f'| {name} | {schedule} | {cold.metrics.mae:.3f} | {warm.metrics.mae:.3f} | '
                  f'{ratio:.2f} | {warm.iterations} | {"yes" if cuts[-1] else "no"} |',
                  flush=True)


#: Upper edges of the distance bins of ``tae-split`` (pixels to the nearest LiDAR pixel).
SPLIT_EDGES = (1.5, 4.0, 8.0, math.inf)


def _lidar_distance(sparse: np.ndarray) -> np.ndarray:
    """Return each pixel's distance (pixels) to the nearest valid sparse depth."""
    import cv2

    empty = ~(np.isfinite(sparse) & (sparse > 0))
    return cv2.distanceTransform(empty.astype(np.uint8), cv2.DIST_L2, 3)


def tae_split(args) -> None:
    """Print the forward AbsRel of consecutive warped depth maps by distance to the LiDAR."""
    from lrda_ros.eval.run import EvalOptions, open_source
    from lrda_ros.messages.rosbag import BagTopics

    options = EvalOptions('rosbag', args.bag, args.report, topics=BagTopics(
        '/camera/image_raw', '/camera/camera_info', '/lidar/points',
        '/camera/depth/ground_truth'))
    frames = list(open_source(options))
    depth = {'ground truth': [frame.gt_depth for frame in frames]}
    for folder in sorted((args.report / 'depth').iterdir()):
        depth[folder.name] = [np.load(folder / f'{frame.name}.npy') for frame in frames]
    lower = (0.0,) + SPLIT_EDGES[:-1]
    print('| depth | TAE | ' + ' | '.join(
        f'{a:g}-{b:g} px' if math.isfinite(b) else f'>= {a:g} px'
        for a, b in zip(lower, SPLIT_EDGES)) + ' |')
    print('|---|---|' + '---|' * len(SPLIT_EDGES))
    for name, maps in depth.items():
        total, count = np.zeros(len(SPLIT_EDGES)), np.zeros(len(SPLIT_EDGES))
        taes = []
        for a, b, frame_a, frame_b in zip(maps, maps[1:], frames, frames[1:]):
            T_b_a = relative_pose(frame_a.T_world_cam, frame_b.T_world_cam)
            taes.append(temporal_alignment_error(a, b, frame_b.K, T_b_a))
            warped = warp_depth(a, frame_b.K, T_b_a)
            both = np.isfinite(warped) & np.isfinite(b) & (b > 0)
            error = np.abs(warped - b) / np.where(both, b, 1.0)
            bins = np.digitize(_lidar_distance(frame_b.sparse_depth), SPLIT_EDGES[:-1])
            for index in range(len(SPLIT_EDGES)):
                chosen = both & (bins == index)
                total[index] += error[chosen].sum()
                count[index] += chosen.sum()
        shares = count / count.sum()
        print(f'| {name} | {np.mean(taes):.4f} | ' + ' | '.join(
            f'{t / max(c, 1):.4f} ({share:.0%})' for t, c, share in zip(total, count, shares))
            + ' |')


def fusion_cost(args) -> None:
    """Print the median time of one temporal-fusion step at ``--size``."""
    import time

    from lrda_ros.geometry.temporal_fusion import TemporalFusion, TemporalFusionConfig

    width, height = args.size
    K = np.array([[0.8 * width, 0.0, (width - 1) / 2], [0.0, 0.8 * width, (height - 1) / 2],
                  [0.0, 0.0, 1.0]])
    depth = (5.0 + np.random.default_rng(0).random((height, width))).astype(np.float32)
    fusion, pose, seconds = TemporalFusion(TemporalFusionConfig(weight=0.5)), np.eye(4), []
    fusion.fuse(depth, K, pose)
    for _ in range(args.frames):
        pose = pose.copy()
        pose[2, 3] += 0.05
        start = time.perf_counter()
        fusion.fuse(depth, K, pose)
        seconds.append(time.perf_counter() - start)
    print(f'temporal fusion at {width}x{height}: {np.median(seconds) * 1e3:.1f} ms per frame '
          f'(median of {args.frames})')


def main() -> None:
    """Parse the command line and run one figure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    commands = parser.add_subparsers(dest='command', required=True)
    bag = commands.add_parser('demo-bag')
    bag.add_argument('output', type=Path)
    bag.add_argument('--frames', type=int, default=10)
    bag.add_argument('--size', type=_size, default=(320, 240))
    bag.set_defaults(run=demo_bag)
    cut = commands.add_parser('scene-cut')
    cut.add_argument('--before', type=int, default=3, help='synthetic room frames before')
    cut.add_argument('--size', type=_size, default=(320, 240), help='synthetic cut: WxH')
    cut.add_argument('--data', type=Path,
                     help='the shared data folder (kitti_dc, nyu, ibims): also the real cuts')
    cut.add_argument('--schedules', type=lambda text: text.split(','),
                     default=['adaptive', 'paper'])
    cut.add_argument('--iterations', type=int, default=40)
    cut.add_argument('--warm-iterations', type=int, default=10)
    cut.set_defaults(run=scene_cut)
    split = commands.add_parser('tae-split')
    split.add_argument('bag', type=Path, help='a demo bag (demo-bag)')
    split.add_argument('report', type=Path, help='lrda eval --save-depth output on that bag')
    split.set_defaults(run=tae_split)
    cost = commands.add_parser('fusion-cost')
    cost.add_argument('--size', type=_size, default=(640, 480))
    cost.add_argument('--frames', type=int, default=20)
    cost.set_defaults(run=fusion_cost)
    args = parser.parse_args()
    args.run(args)


if __name__ == '__main__':
    main()
