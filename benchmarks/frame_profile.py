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
Where a frame's time goes, by kind of work: a cold and a warm frame under the profiler.

    python benchmarks/frame_profile.py --backbone vits --resolution vga

Prints the machine line, then one table: for a cold frame (a fresh start) and a warm one
(warm-started from the frame before), each kind's self time (convolutions, matrix products
and attention, dtype casts, other copies, elementwise work, resampling, the sparse head's
gathers and set-up, the optimizer, other), its share, and its operator calls per optimization
step (lrda_ros/speed/op_kinds.py). Random weights at the official size, lrda speed's panning
frames; the schedule is the paper's unless ``--schedule`` says otherwise, so that the step
counts are fixed. Also prints the casts (``aten::_to_copy`` calls) per step, and the
kernel-launching operations per step (lrda_ros/speed/launches.py: what decides a step's
speed on a GPU), by operator and, with ``--launch-sources N``, the N lines issuing most.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from lrda_ros.engine import DepthCompleter
from lrda_ros.engine.config import SCHEDULES
from lrda_ros.speed import SpeedOptions
from lrda_ros.speed.inputs import panning_frames, random_model
from lrda_ros.speed.launches import engine_step_launches
from lrda_ros.speed.machine import machine_description, machine_line
from lrda_ros.speed.op_kinds import kind_table, profile_by_kind
from lrda_ros.speed.options import LidarPattern, RESOLUTIONS


def main() -> None:
    """Parse the options, profile a cold and a warm frame, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--backbone', default='vits', help='network size (default: vits)')
    parser.add_argument('--resolution', default='vga', choices=list(RESOLUTIONS),
                        help='frame size (default: vga)')
    parser.add_argument('--dtype', default='auto', choices=['auto', 'float32', 'bfloat16'],
                        help="'auto' (default): bfloat16 where the CPU computes it natively")
    parser.add_argument('--schedule', default='paper', choices=SCHEDULES,
                        help='step schedule (default: paper, fixed step counts)')
    parser.add_argument('--launch-sources', type=int, default=0, metavar='N',
                        help='also print the N package lines issuing most launches per step')
    args = parser.parse_args()
    machine = machine_description('cpu', args.dtype)
    print(machine_line(machine), flush=True)
    height, width = RESOLUTIONS[args.resolution]
    frames = panning_frames(height, width, 3, LidarPattern(), seed=0)
    # lrda speed's engine settings: every frame runs its steps (no divergence stop or undone
    # collapse on random weights), so the work profiled is the schedule's.
    config = replace(SpeedOptions(dtype=machine['dtype'], schedule=args.schedule,
                                  device='cpu').tto_config(), warm_start=True)
    completer = DepthCompleter(random_model(args.backbone, seed=0), config)
    completer.complete(*frames[0])  # untimed: kernel selection, allocations
    completer.reset()
    cold, cold_result = profile_by_kind(lambda: completer.complete(*frames[1]))
    warm, warm_result = profile_by_kind(lambda: completer.complete(*frames[2]))
    print(f'{args.backbone} {args.resolution}, {machine["dtype"]}, schedule {args.schedule}: '
          f'cold frame {cold_result.total_seconds:.2f} s ({cold_result.iterations} steps), '
          f'warm frame {warm_result.total_seconds:.2f} s ({warm_result.iterations} steps; '
          'wall times under the profiler)', flush=True)
    columns = {'cold': cold, 'warm': warm}
    steps = {'cold': cold_result.iterations, 'warm': warm_result.iterations}
    print(kind_table(columns, steps))
    for name, profiled in columns.items():
        print(f'{name}: casts {profiled.casts / max(steps[name], 1):.0f} per step; casts and '
              f'elementwise {profiled.share("dtype cast", "elementwise"):.0%} of the time')
    launches = engine_step_launches(args.backbone, args.resolution, machine['dtype'],
                                    by_source=args.launch_sources > 0)
    print(f'kernel-launching operations: {launches.per_step:.0f} per step (cold frames of 6 '
          f'and 3 steps), {launches.outside_steps:.0f} per frame outside the steps; most '
          f'frequent per step: {launches.most_frequent(8)}')
    top = sorted(launches.by_source.items(), key=lambda item: -item[1])
    for source, count in top[:args.launch_sources]:
        print(f'  {count:6.1f}  {source}')


if __name__ == '__main__':
    main()
