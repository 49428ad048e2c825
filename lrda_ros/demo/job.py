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
``lrda demo``: the whole system on a synthetic street, offline, in one command.

1. Render a short synthetic sequence (camera + spinning LiDAR + exact depth); indoor by default.
2. Write it as a rosbag2 (MCAP): image, camera_info, LiDAR cloud, ground-truth depth, /tf_static.
3. Replay the bag into the completion node over real rclpy/DDS, three times: prior + scale/shift
   only, test-time optimization from a cold start on every frame, and warm-started.
4. Write per-frame figures (RGB | sparse | dense | error), a contact sheet, an animated GIF,
   and a metrics table (MAE/RMSE per configuration) to the output folder.

The default model is the embedded demonstration prior (see :mod:`lrda_ros.demo.prior`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from .. import world
from ..colormap import colorize_depth, depth_display_range
from ..datasets import Frame
from ..engine import TTOConfig
from ..engine.names import check_model_path
from ..eval.figures import frame_figure
from ..eval.harness import EvalResult, FrameRecord, score_confidence
from ..eval.metrics import compute_metrics
from ..eval.report import (engine_metadata, json_ready, summary_markdown, write_csv,
                           write_summary)
from ..eval.temporal import TemporalTracker
from ..geometry import ProjectionConfig, RigidTransform
from ..messages.conversions import float_image_to_array
from ..messages.rosbag import BagTopics, RosbagSource
from ..ros.bag_writer import stamped_header, write_bag
from ..ros.builders import (
    camera_model_to_camera_info, depth_to_image_msg, rgb_to_image_msg, xyz_to_pointcloud2)
from ..ros.replay import complete_bag_in_process
from ..settings import NodeSettings

IMAGE_TOPIC = '/camera/image_raw'
INFO_TOPIC = '/camera/camera_info'
POINTS_TOPIC = '/lidar/points'
DEPTH_TOPIC = '/camera/depth/ground_truth'
CAMERA_FRAME, LIDAR_FRAME, BASE_FRAME = 'camera_optical', 'lidar', 'base_link'
ODOM_FRAME = 'odom'

#: The configurations compared, as completion-node parameter overrides.
CONFIGURATIONS = {
    'scale-shift': {'iterations': 0, 'warm_start': False},
    'lrda': {'warm_start': False},
    'lrda-warm': {'warm_start': True},
}


@dataclass
class DemoOptions:
    """What ``lrda demo`` renders and runs."""

    output: Path = Path('out/demo')
    kind: str = 'indoor'
    frames: int = 10
    width: int = 320
    height: int = 240
    beams: int = 32
    seed: int = 7
    model: str = 'demo'
    device: str = 'auto'
    iterations: int = 40
    warm_iterations: int = 10
    schedule: str = TTOConfig.schedule
    progress: bool = True


def write_demo_bag(frames: list[world.SyntheticFrame], path: Path) -> None:
    """
    Write the sequence as a rosbag2 (MCAP) with the topics named in this module.

    The rendered trajectory goes on /tf as odom -> base_link (the LiDAR's pose), so the
    camera's pose is known to evaluation (the temporal alignment error).
    """
    start = frames[0].stamp_ns + 10**9
    T_lidar_camera = RigidTransform.from_matrix(frames[0].T_cam_lidar).inverse()
    static = [(BASE_FRAME, LIDAR_FRAME, RigidTransform.identity()),
              (LIDAR_FRAME, CAMERA_FRAME, T_lidar_camera)]

    def messages():
        for frame in frames:
            stamp = start + frame.stamp_ns
            camera_header = stamped_header(CAMERA_FRAME, stamp)
            points = frame.points_lidar
            yield IMAGE_TOPIC, stamp, rgb_to_image_msg(frame.rgb, camera_header)
            yield INFO_TOPIC, stamp, camera_model_to_camera_info(frame.camera, camera_header)
            yield POINTS_TOPIC, stamp, xyz_to_pointcloud2(
                points[:, :3], stamped_header(LIDAR_FRAME, stamp),
                extra_fields={'intensity': points[:, 3]})
            yield DEPTH_TOPIC, stamp, depth_to_image_msg(
                np.where(frame.depth > 0, frame.depth, np.nan).astype(np.float32), camera_header)

    trajectory = [(start + frame.stamp_ns, [(ODOM_FRAME, BASE_FRAME, RigidTransform.from_matrix(
        frame.T_world_lidar))]) for frame in frames]
    write_bag(path, messages(), static, static_stamp_ns=start, timed_transforms=trajectory)


def _run_configuration(bag: Path, parameters: dict, description: str, progress: bool):
    """Replay ``bag`` into a fresh in-process node; return its frames and per-frame stats."""
    topics = BagTopics(IMAGE_TOPIC, INFO_TOPIC, POINTS_TOPIC)
    with RosbagSource(bag, topics) as source:
        T_cam_lidar = source.transform_tree().lookup(CAMERA_FRAME, LIDAR_FRAME)
        total = len(source.synchronized_stamps())
    parameters = {**parameters,
                  'lidar_to_camera.matrix': [float(v) for v in T_cam_lidar.as_matrix().ravel()]}
    with tqdm(total=total, desc=description, unit='frame', disable=not progress) as bar:
        return complete_bag_in_process(bag, topics, parameters, on_frame=lambda _: bar.update(1))


def _contact_sheet(frames: list[Frame], depth: dict[str, list[np.ndarray]],
                   method: str, path: Path) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    near, far = depth_display_range(np.concatenate([f.gt_depth.ravel() for f in frames]))
    columns = ['RGB', 'ground truth', f'{method} depth', 'scale-shift depth']
    figure, axes = plt.subplots(len(frames), 4, figsize=(12, 2.3 * len(frames)), squeeze=False)
    for row, frame in enumerate(frames):
        images = [frame.rgb, colorize_depth(frame.gt_depth, near, far),
                  colorize_depth(depth[method][row], near, far),
                  colorize_depth(depth['scale-shift'][row], near, far)]
        for column, image in enumerate(images):
            axes[row, column].imshow(image)
            axes[row, column].axis('off')
            if row == 0:
                axes[row, column].set_title(columns[column], fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    plt.close(figure)


def _animation(frames: list[Frame], predictions: list[np.ndarray], path: Path) -> None:
    from PIL import Image as PILImage

    near, far = depth_display_range(np.concatenate([f.gt_depth.ravel() for f in frames]))
    images = [PILImage.fromarray(np.concatenate(
        [frame.rgb, colorize_depth(prediction, near, far)], axis=1))
        for frame, prediction in zip(frames, predictions)]
    images[0].save(path, save_all=True, append_images=images[1:], duration=300, loop=0)


def run_demo(options: DemoOptions) -> dict:
    """Run the demo end to end; return the summary table (also written to the output)."""
    # The nodes load the model themselves; loading it here first makes a bad spec fail at once
    # with the loader's message instead of after the rendering; a missing path, before torch.
    check_model_path(options.model, options.device)
    from ..engine.loading import load_depth_model

    model = load_depth_model(options.model, options.device)
    output = Path(options.output)
    (output / 'frames').mkdir(parents=True, exist_ok=True)
    config = world.SequenceConfig(
        options.kind, options.frames, width=options.width, height=options.height,
        seed=options.seed, lidar=world.LidarConfig(beams=options.beams))
    sequence = list(tqdm(world.iter_sequence(config), total=options.frames,
                         desc='rendering', unit='frame', disable=not options.progress))
    bag = output / 'bag'
    write_demo_bag(sequence, bag)

    common = {'model': options.model, 'device': options.device, 'processing_size': 0,
              'iterations': options.iterations, 'warm_iterations': options.warm_iterations,
              'schedule': options.schedule,
              'min_points': 16, 'publish.points_dense': False,
              'publish.depth_colored': False, 'publish.sparse_depth': False}
    result = EvalResult(list(CONFIGURATIONS))
    max_depth = NodeSettings.from_values(common).tto.max_depth
    # The bag's frames as evaluation reads them: the node's sparse input, K and the camera
    # pose from /tf, for the temporal alignment error and the confidence's AUSE.
    frames = _bag_frames(bag, NodeSettings.from_values(common).projection)
    depth: dict[str, list[np.ndarray]] = {}
    for name, overrides in CONFIGURATIONS.items():
        replayed, stats = _run_configuration(bag, {**common, **overrides}, name,
                                             options.progress)
        depth[name] = []
        tracker = TemporalTracker()
        for synthetic_frame, frame, (seconds, iterations), bag_frame in zip(
                sequence, replayed, stats, frames):
            label = f'{synthetic_frame.index:03d}'
            if 'depth' not in frame.outputs:
                result.records.append(FrameRecord(label, name, seconds, float('nan'), 0,
                                                  'dropped', float('nan'), None,
                                                  'no depth published'))
                depth[name].append(np.full(synthetic_frame.depth.shape, np.nan, np.float32))
                continue
            prediction = float_image_to_array(frame.outputs['depth'])
            depth[name].append(prediction)
            # NaN from the node means "at or beyond max_depth" (REP 118): score it there.
            metrics = compute_metrics(np.nan_to_num(prediction, nan=max_depth),
                                      synthetic_frame.depth)
            record = FrameRecord(label, name, seconds, float('nan'), iterations, 'ok',
                                 float('nan'), metrics, tae=tracker.update(
                                     prediction, bag_frame.K, bag_frame.T_world_cam))
            score_confidence(record, prediction, bag_frame)
            result.records.append(record)

    frames = [Frame(f'{f.index:03d}', f.rgb, bag_frame.sparse_depth, f.depth.astype(np.float32),
                    f.camera.K, options.kind, f.stamp_ns)
              for f, bag_frame in zip(sequence, frames)]
    for index, frame in enumerate(frames):
        frame_figure(frame, {name: depth[name][index] for name in CONFIGURATIONS},
                     output / 'frames' / f'{frame.name}.png')
    _contact_sheet(frames, depth, 'lrda-warm', output / 'contact_sheet.png')
    _animation(frames, depth['lrda-warm'], output / 'depth.gif')
    write_csv(result, output / 'frames.csv')
    title = (f'lrda demo: synthetic {options.kind} sequence, {options.frames} frames '
             f'{options.width}x{options.height}, model {options.model!r}')
    engine = engine_metadata(model.source, str(model.device), NodeSettings.from_values(common).tto)
    summary = write_summary(result, output, title, {'options': json_ready(asdict(options)),
                                                    'engine': engine})
    print(summary_markdown(summary, title, engine))
    print(f'wrote {output}/: summary.md, frames.csv, frames/*.png, contact_sheet.png, '
          f'depth.gif, bag/')
    return summary


def _bag_frames(bag: Path, projection: ProjectionConfig) -> list[Frame]:
    """
    Return the bag's frames as evaluation reads them.

    Each holds the sparse depth its LiDAR projects to, as the node computes it, the ground
    truth from the depth topic, K and the camera pose the bag's /tf gives.
    """
    from ..datasets.rosbag import RosbagDataset

    dataset = RosbagDataset(bag, BagTopics(IMAGE_TOPIC, INFO_TOPIC, POINTS_TOPIC, DEPTH_TOPIC),
                            projection=projection)
    try:
        return list(dataset)
    finally:
        dataset.source.close()
