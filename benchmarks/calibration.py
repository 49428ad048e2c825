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
The calibration check measured: known errors on the KITTI bag, time offsets, its cost.

``kitti``: the shared KITTI bag's 10 frames with its /tf_static extrinsic (the reference)
turned by rotation errors about each camera axis and combinations of them, and shifted by
translation errors, each checked with the default settings (rotation searched) and, for the
translations, with the translation searched too. ``moving``: the synthetic street seen by a
rig driving at ``--speed`` m/s and turning at ``--yaw-rate`` deg/s, the camera's image taken
``offset`` after its stamp; a window of ``--window`` views (one scene seed each), the rig at one
twist, then turning a different way in each view. A still rig must report the time offset as
unobservable. ``translation``: the synthetic yard (calibration_yard.py: boards and posts at
2-8 m, five views) with translation errors of 5 and 10 cm along each camera axis, searched
with the rotation; then the same yard eight times as large and far, where the same errors
must be reported as not observable. ``cost``: the seconds to prepare one KITTI frame
(edge map, outline points) and to check a window. ``figure``: ``lrda calibrate``'s report and
figures for the bag with its extrinsic turned by ``--rotation``.

    python benchmarks/calibration.py kitti --data ../shared/data
    python benchmarks/calibration.py moving
    python benchmarks/calibration.py translation
    python benchmarks/calibration.py cost --data ../shared/data
    python benchmarks/calibration.py figure --data ../shared/data --rotation 0,1,0 \
        --output out/calibration_figure      # lrda calibrate's figures, extrinsic turned
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
import time

from lrda_ros import world
from lrda_ros.calibration.bag import (
    bag_window, calibrate_frames, calibrate_window, CalibrateOptions)
from lrda_ros.calibration.score import (
    calibration_frame, FrameSelection, rotation_matrix, rotation_vector)
from lrda_ros.calibration.search import CheckConfig
from lrda_ros.geometry import RigidTransform
from lrda_ros.speed.machine import cpu_model
import numpy as np

KITTI_BAG = 'bags/kitti_2011_09_26_10frames_mcap'
ROTATIONS = ([(0.0, 0.0, 0.0)]
             + [tuple(a if i == j else 0.0 for j in range(3)) for a in (0.5, 1.0, 2.0)
                for i in range(3)]
             + [(0.5, -0.5, 0.0), (1.0, 1.0, 1.0), (-2.0, 1.0, -0.5)])
TRANSLATIONS = [(0.0, 0.0, 0.0)] + [tuple(a if i == j else 0.0 for j in range(3))
                                    for a in (0.05, 0.1) for i in range(3)]


def _perturb(T: RigidTransform, rotation_deg, translation_m) -> RigidTransform:
    """Return the extrinsic whose correction is the given error: C^-1 T."""
    C = RigidTransform(rotation_matrix(np.radians(rotation_deg)), np.asarray(translation_m))
    return C.inverse() @ T


def _kitti(args) -> None:
    bag = args.data / KITTI_BAG
    window = bag_window(bag)
    T = window.extrinsic
    print('| error applied | search | verdict | estimated rotation (deg) | rotation error after '
          '(deg) | estimated translation (m) | translation error after (m) | score gain |')
    print('|---|---|---|---|---:|---|---:|---:|')
    cases = [(r, (0.0, 0.0, 0.0), False) for r in ROTATIONS] + \
        [((0.0, 0.0, 0.0), t, searched) for t in TRANSLATIONS for searched in (False, True)
         if any(t) or searched]
    for rotation, translation, search_translation in cases:
        given = _perturb(T, rotation, translation)
        config = CheckConfig(translation=search_translation)
        result = calibrate_frames(window.frames(given), config)
        check = result.check
        error = RigidTransform(rotation_matrix(check.theta[:3]), check.theta[3:6]) @ \
            _perturb(RigidTransform.identity(), rotation, translation)
        rotation_left = np.degrees(np.linalg.norm(rotation_vector(error.rotation)))
        translation_text = ', '.join(
            'n/o' if not p.observable else f'{p.value:+.3f}' for p in check.parameters[3:6]) \
            if search_translation else 'not searched'
        applied = (f'rot {rotation}' if any(rotation) else '') + \
            (f'trans {translation} m' if any(translation) else '') or 'none (true)'
        print(f'| {applied} | {"rot+trans" if search_translation else "rot"} | '
              f'{check.verdict} | '
              + ', '.join(f'{v:+.2f}' for v in np.degrees(check.theta[:3])) + ' | '
              f'{rotation_left:.3f} | {translation_text} | '
              f'{np.linalg.norm(error.translation):.3f} | {100 * check.gain:+.2f} % |',
              flush=True)


def _moving_window(offset_s: float, motions, seeds, size, selection: FrameSelection) -> list:
    """Return the rig's calibration frames: each seed's scene, image taken offset late."""
    width, height, fx = size
    camera = world.pinhole_camera_focal(width, height, fx)
    T_cam_lidar = world.lidar_mount()
    frames = []
    for seed, motion in zip(seeds, motions):
        scene = world.make_scene('outdoor', seed, length=80.0)
        T_world_cam = world.camera_pose((15.0, scene.layout.lane_y, 1.6), 0.0, 0.0)
        T_world_lidar = T_world_cam @ T_cam_lidar
        sweep = world.simulate_moving_sweep(
            scene, T_world_lidar, world.LidarConfig(beams=64, range_noise_std=0.0), motion)
        stamp_s = motion.sweep_period_s / 2  # the image's stamp: mid-sweep
        T_world_cam_true = motion.pose(T_world_lidar, stamp_s + offset_s) @ np.linalg.inv(
            T_cam_lidar)
        rgb = world.render(scene, camera, T_world_cam_true).rgb
        frames.append(calibration_frame(
            rgb, sweep.points, RigidTransform.from_matrix(T_cam_lidar), camera,
            times_s=sweep.times - stamp_s, twist=motion.twist(),
            selection=selection))
    return frames


def _moving(args) -> None:
    selection = FrameSelection(outline_shift=args.outline_shift,
                               edge_contrast_px=args.edge_contrast)
    print(f'frames: {args.window} views, {args.width}x{args.height}, fx {args.fx:g}; '
          f'outline_shift {args.outline_shift:g}, edge_contrast_px {args.edge_contrast}\n')
    print('| rig | offset applied (ms) | search | verdict | estimated offset (ms) | standard '
          'error (ms) | error (ms) | seconds |')
    print('|---|---:|---|---|---:|---:|---:|---:|')
    size = (args.width, args.height, args.fx)
    turns = [args.yaw_rate * sign for sign in (1, -1, 0.5, -0.5, 0)]
    rigs = [(f'{args.speed:g} m/s, {args.yaw_rate:g} deg/s',
             [world.RigMotion(args.speed, args.yaw_rate)] * args.window, args.offsets),
            (f'{args.speed:g} m/s, turns of ' + ', '.join(f'{t:+g}' for t in turns) + ' deg/s',
             [world.RigMotion(args.speed, turns[i % 5]) for i in range(args.window)],
             args.offsets),
            ('still', [world.RigMotion(0.0, 0.0)] * args.window, [0.05])]
    for label, motions, offsets in rigs:
        for offset in offsets:
            frames = _moving_window(offset, motions, range(args.window), size, selection)
            for name, config in (('time', CheckConfig(rotation=False)),
                                 ('rot+time', CheckConfig())):
                start = time.perf_counter()
                check = calibrate_frames(frames, config).check
                seconds = time.perf_counter() - start
                p = check.parameter('time_offset')
                estimate = f'{1e3 * p.value:+.1f}' if p.observable else 'unobservable'
                error = f'{1e3 * (p.value - offset):+.1f}' if p.observable else '-'
                se = f'{1e3 * p.standard_error:.1f}' if p.standard_error else '-'
                print(f'| {label} | {1e3 * offset:+.0f} | {name} | {check.verdict} | {estimate} '
                      f'| {se} | {error} | {seconds:.1f} |',
                      flush=True)


def _translation(args) -> None:
    from calibration_yard import with_error, yard_frames

    print(f'machine: {cpu_model()}\n')
    print('| yard | error applied | search | verdict | estimated translation (m) | standard '
          'error (m) | translation error after (m) | rotation error after (deg) | seconds |')
    print('|---|---|---|---|---|---|---:|---:|---:|')
    axes = [tuple(a if i == j else 0.0 for j in range(3)) for a in (0.05, 0.1)
            for i in range(3)]
    plans = [(1.0, [((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), True)]
              + [((0.0, 0.0, 0.0), t, True) for t in axes]
              + [((0.0, 0.0, 0.0), t, True) for t in ((-0.05, 0.0, 0.0), (0.0, -0.1, 0.0))]
              + [((0.5, -0.5, 0.3), (0.05, -0.05, 0.05), True)]
              + [((0.0, 0.0, 0.0), t, False) for t in ((0.1, 0.0, 0.0), (0.0, 0.1, 0.0))]),
             (args.far_scale, [((0.0, 0.0, 0.0), t, True) for t in axes[3:]])]
    for scale, cases in plans:
        frames, true = yard_frames(scale=scale)
        label = 'near, 2-8 m' if scale == 1 else f'far, {2.2 * scale:.0f}-{8 * scale:.0f} m'
        for rotation, translation, search_translation in cases:
            start = time.perf_counter()
            check = calibrate_frames(with_error(frames, true, rotation, translation),
                                     CheckConfig(translation=search_translation)).check
            seconds = time.perf_counter() - start
            error = RigidTransform(rotation_matrix(check.theta[:3]), check.theta[3:6]) @ \
                _perturb(RigidTransform.identity(), rotation, translation)
            rotation_left = np.degrees(np.linalg.norm(rotation_vector(error.rotation)))
            p = check.parameters[3:6]
            if search_translation:
                estimate = ', '.join('n/o' if not q.observable else f'{q.value:+.3f}' for q in p)
                se = ', '.join('-' if not q.observable else f'{q.standard_error:.4f}' for q in p)
            else:
                estimate, se = 'not searched', '-'
            applied = (f'rot {rotation} deg, ' if any(rotation) else '') + \
                (f'trans {translation} m' if any(translation) else 'none (true)')
            print(f'| {label} | {applied} | {"rot+trans" if search_translation else "rot"} | '
                  f'{check.verdict} | {estimate} | {se} | {np.linalg.norm(error.translation):.3f}'
                  f' | {rotation_left:.3f} | {seconds:.1f} |', flush=True)


def _cost(args) -> None:
    bag = args.data / KITTI_BAG
    window = bag_window(bag)
    start = time.perf_counter()
    frames = window.frames(window.extrinsic)
    prepare = (time.perf_counter() - start) / len(frames)
    start = time.perf_counter()
    result = calibrate_frames(frames, CheckConfig())
    search = time.perf_counter() - start
    print(f'machine: {cpu_model()}')
    print(f'prepare one frame (edge map, outline points): {1e3 * prepare:.0f} ms; '
          f'check a window of {len(frames)}: {search:.2f} s '
          f'({result.check.evaluations} score evaluations)')


def _figure(args) -> None:
    bag = args.data / KITTI_BAG
    window = bag_window(bag)
    rotation = [float(v) for v in args.rotation.split(',')]
    given = _perturb(window.extrinsic, rotation, (0.0, 0.0, 0.0))
    result = calibrate_window(replace(window, extrinsic=given),
                              CalibrateOptions(bag, output=args.output))
    from PIL import Image

    # The documentation's copy: 900 px wide, 256 colours.
    with Image.open(args.output / 'overlay.png') as overlay:
        small = overlay.convert('RGB').resize(
            (900, round(overlay.height * 900 / overlay.width)), Image.LANCZOS)
        small.quantize(256).save(args.output / 'overlay_doc.png', optimize=True)
    print(result.message)
    print(f'wrote {args.output}/: calibration.json, overlay.png, overlay_doc.png, '
          'score_profiles.png')


def main() -> None:
    """Run one of the measurements."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    commands = parser.add_subparsers(dest='command', required=True)
    for name in ('kitti', 'cost', 'figure'):
        command = commands.add_parser(name)
        command.add_argument('--data', type=Path, default=Path('../shared/data'))
        if name == 'figure':
            command.add_argument('--rotation', default='0,1,0',
                                 help='error applied to the extrinsic (deg, camera frame)')
            command.add_argument('--output', type=Path, default=Path('out/calibration_figure'))
    translation = commands.add_parser('translation')
    translation.add_argument('--far-scale', type=float, default=8.0,
                             help='the far yard: the near one that many times as large and far')
    moving = commands.add_parser('moving')
    moving.add_argument('--offsets', type=float, nargs='+', default=[0.02, 0.04, 0.06, 0.08])
    moving.add_argument('--speed', type=float, default=10.0)
    moving.add_argument('--yaw-rate', type=float, default=30.0)
    moving.add_argument('--window', type=int, default=5)
    moving.add_argument('--width', type=int, default=1216)
    moving.add_argument('--height', type=int, default=352)
    moving.add_argument('--fx', type=float, default=700.0)
    moving.add_argument('--outline-shift', type=float, default=0.5,
                        help="FrameSelection.outline_shift: 0.5 for the synthetic LiDAR's "
                        'thin rays')
    moving.add_argument('--edge-contrast', type=int, default=31,
                        help='FrameSelection.edge_contrast_px: 31 for the procedural textures')
    args = parser.parse_args()
    {'kitti': _kitti, 'moving': _moving, 'translation': _translation, 'cost': _cost,
     'figure': _figure}[args.command](args)


if __name__ == '__main__':
    main()
