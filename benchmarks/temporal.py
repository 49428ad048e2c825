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
rosbag2, for ``lrda eval --bag``. ``scene-cut``: the same indoor scene, then a street of the same
image size in one sequence; prints each frame's MAE for TTO cold, warm without scene-cut
detection and warm with it (the default), and whether each warm frame was detected as a cut.

``tae-split``: where a sequence's TAE comes from. For the ground truth of a demo bag and for
each method's depth saved by ``lrda eval --save-depth``, the forward warp's AbsRel (TAE's first
direction) by the pixel's distance to the nearest LiDAR pixel of the input.

    python benchmarks/temporal.py demo-bag out/temporal/demo_bag --frames 6 --size 128x96
    python benchmarks/temporal.py scene-cut --before 3 --after 2 --size 128x96
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


def scene_cut(args) -> None:
    """Indoor frames, then street frames, as one sequence: per-frame MAE after the cut."""
    width, height = args.size
    model = load_depth_model('demo', 'cpu')
    before = synthetic_frames(world.SequenceConfig('indoor', args.before, width=width,
                                                   height=height, seed=7))
    after = synthetic_frames(world.SequenceConfig('outdoor', args.after, width=width,
                                                  height=height, seed=3))
    frames = [replace(frame, sequence='cut') for frame in list(before) + list(after)]
    config = TTOConfig(iterations=args.iterations, warm_iterations=args.warm_iterations,
                       device='cpu', min_points=8)
    methods = [_Named('cold', 'lrda', model, config),
               _Named('warm, no detection', 'lrda-warm', model,
                      replace(config, scene_cut_factor=0.0)),
               _Named('warm, detection', 'lrda-warm', model, config)]
    detected = {}
    original = methods[2].completer.complete

    def spy(*a, **k):
        result = original(*a, **k)
        detected[len(detected)] = result.scene_cut
        return result

    methods[2].completer.complete = spy
    result = evaluate(frames, methods, progress=False)
    print('| frame | ' + ' | '.join(f'{m.name} MAE (m)' for m in methods) + ' | cut detected |')
    print('|---|' + '---|' * (len(methods) + 1))
    for index, frame in enumerate(frames):
        maes = [r.metrics.mae for r in result.records if r.frame == frame.name]
        mark = ' (first after the cut)' if index == args.before else ''
        print(f'| {frame.name}{mark} | ' + ' | '.join(f'{m:.3f}' for m in maes)
              + f' | {"yes" if detected.get(index) else "no"} |')


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
    cut.add_argument('--before', type=int, default=3)
    cut.add_argument('--after', type=int, default=2)
    cut.add_argument('--size', type=_size, default=(320, 240))
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
