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

The default model is the embedded demonstration prior (see :mod:`lrda_ros.prior`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
import shutil
import uuid

import numpy as np
from tqdm import tqdm

from . import synthetic
from .conversions import (
    camera_model_to_camera_info, depth_to_image_msg, rgb_to_image_msg, xyz_to_pointcloud2)
from .eval.bag import BagTopics, RosbagSource
from .eval.datasets import Frame
from .eval.harness import EvalResult, FrameRecord
from .eval.metrics import compute_metrics
from .eval.report import frame_figure, summary_markdown, write_csv, write_summary
from .geometry import ProjectionConfig, RigidTransform
from .parameters import NodeSettings
from .visualization import colorize_depth, depth_display_range

IMAGE_TOPIC = '/camera/image_raw'
INFO_TOPIC = '/camera/camera_info'
POINTS_TOPIC = '/lidar/points'
DEPTH_TOPIC = '/camera/depth/ground_truth'
CAMERA_FRAME, LIDAR_FRAME, BASE_FRAME = 'camera_optical', 'lidar', 'base_link'

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
    progress: bool = True


def _header(frame_id: str, stamp_ns: int):
    from builtin_interfaces.msg import Time
    from std_msgs.msg import Header

    return Header(frame_id=frame_id, stamp=Time(sec=stamp_ns // 10**9, nanosec=stamp_ns % 10**9))


def _tf_static(typestore, frames: list[synthetic.SyntheticFrame], stamp_ns: int):
    """Return a TFMessage: base_link -> lidar (identity) and lidar -> camera_optical."""
    types = typestore.types
    transform = RigidTransform.from_matrix(frames[0].T_cam_lidar).inverse()
    time_msg = types['builtin_interfaces/msg/Time'](sec=stamp_ns // 10**9,
                                                    nanosec=stamp_ns % 10**9)

    def stamped(parent, child, translation, rotation):
        return types['geometry_msgs/msg/TransformStamped'](
            header=types['std_msgs/msg/Header'](stamp=time_msg, frame_id=parent),
            child_frame_id=child,
            transform=types['geometry_msgs/msg/Transform'](
                translation=types['geometry_msgs/msg/Vector3'](*translation),
                rotation=types['geometry_msgs/msg/Quaternion'](*rotation)))

    return types['tf2_msgs/msg/TFMessage'](transforms=[
        stamped(BASE_FRAME, LIDAR_FRAME, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)),
        stamped(LIDAR_FRAME, CAMERA_FRAME, tuple(transform.translation),
                tuple(transform.quaternion_xyzw()))])


def write_bag(frames: list[synthetic.SyntheticFrame], path: Path) -> None:
    """Write the sequence as a rosbag2 (MCAP) with the topics named in this module."""
    from rclpy.serialization import serialize_message
    from rosbags.interfaces import (
        Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime)
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import get_typestore, Stores

    typestore = get_typestore(Stores.ROS2_HUMBLE)
    forever = QosTime(sec=2147483647, nsec=4294967295)
    latched = Qos(QosHistory.KEEP_LAST, 1, QosReliability.RELIABLE, QosDurability.TRANSIENT_LOCAL,
                  forever, forever, QosLiveliness.AUTOMATIC, forever, False)
    if path.exists():
        shutil.rmtree(path)
    with Writer(path, version=8, storage_plugin=StoragePlugin.MCAP) as writer:
        connections = {
            topic: writer.add_connection(topic, msgtype, typestore=typestore)
            for topic, msgtype in ((IMAGE_TOPIC, 'sensor_msgs/msg/Image'),
                                   (INFO_TOPIC, 'sensor_msgs/msg/CameraInfo'),
                                   (POINTS_TOPIC, 'sensor_msgs/msg/PointCloud2'),
                                   (DEPTH_TOPIC, 'sensor_msgs/msg/Image'))}
        tf = writer.add_connection('/tf_static', 'tf2_msgs/msg/TFMessage', typestore=typestore,
                                   offered_qos_profiles=[latched])
        start = frames[0].stamp_ns + 10**9
        writer.write(tf, start, typestore.serialize_cdr(_tf_static(typestore, frames, start),
                                                        'tf2_msgs/msg/TFMessage'))
        for frame in frames:
            stamp = start + frame.stamp_ns
            camera_header = _header(CAMERA_FRAME, stamp)
            points = frame.points_lidar
            messages = {
                IMAGE_TOPIC: rgb_to_image_msg(frame.rgb, camera_header),
                INFO_TOPIC: camera_model_to_camera_info(frame.camera, camera_header),
                POINTS_TOPIC: xyz_to_pointcloud2(points[:, :3], _header(LIDAR_FRAME, stamp),
                                                 extra_fields={'intensity': points[:, 3]}),
                DEPTH_TOPIC: depth_to_image_msg(
                    np.where(frame.depth > 0, frame.depth, np.nan).astype(np.float32),
                    camera_header),
            }
            for topic, message in messages.items():
                writer.write(connections[topic], stamp, serialize_message(message))


def run_node_on_bag(bag: Path, overrides: dict, description: str, progress: bool):
    """Replay ``bag`` lock-step into a fresh in-process completion node; return its frames."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter

    from .node import CompletionNode
    from .replay import LockstepReplay

    context = rclpy.Context()
    rclpy.init(context=context)
    namespace = '/lrda_demo_' + uuid.uuid4().hex[:8]
    source = RosbagSource(bag, BagTopics(IMAGE_TOPIC, INFO_TOPIC, POINTS_TOPIC))
    try:
        T_cam_lidar = source.transform_tree().lookup(CAMERA_FRAME, LIDAR_FRAME)
        parameters = {**overrides,
                      'lidar_to_camera.matrix': [float(v) for v in
                                                 T_cam_lidar.as_matrix().ravel()]}
        node = CompletionNode(context=context, namespace=namespace, parameter_overrides=[
            Parameter(name, value=value) for name, value in parameters.items()])
        player = rclpy.create_node('lrda_demo_player', namespace=namespace, context=context)
        replay = LockstepReplay(player, source, outputs=('depth',))
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        executor.add_node(player)
        if not replay.wait_for_subscribers(executor):
            raise RuntimeError('the completion node did not subscribe to the replayed topics')
        bar = tqdm(total=len(source.synchronized_stamps()), desc=description, unit='frame',
                   disable=not progress)
        stats = []

        def tick(_frame):
            # The node's own processing time and iterations for the frame just completed.
            stats.append((node.stats.last_processing_s, node.stats.last_iterations))
            bar.update(1)

        frames = replay.play(executor, on_frame=tick)
        bar.close()
        executor.shutdown()
        node.destroy_node()
        player.destroy_node()
        return frames, stats
    finally:
        source.close()
        rclpy.try_shutdown(context=context)


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
    output = Path(options.output)
    (output / 'frames').mkdir(parents=True, exist_ok=True)
    config = synthetic.SequenceConfig(
        options.kind, options.frames, width=options.width, height=options.height,
        seed=options.seed, lidar=synthetic.LidarConfig(beams=options.beams))
    sequence = list(tqdm(synthetic.iter_sequence(config), total=options.frames,
                         desc='rendering', unit='frame', disable=not options.progress))
    bag = output / 'bag'
    write_bag(sequence, bag)

    common = {'model': options.model, 'device': options.device, 'processing_size': 0,
              'iterations': options.iterations, 'warm_iterations': options.warm_iterations,
              'min_points': 16, 'publish.points_dense': False,
              'publish.depth_colored': False, 'publish.sparse_depth': False}
    result = EvalResult(list(CONFIGURATIONS))
    max_depth = NodeSettings.from_values(common).tto.max_depth
    depth: dict[str, list[np.ndarray]] = {}
    for name, overrides in CONFIGURATIONS.items():
        replayed, stats = run_node_on_bag(bag, {**common, **overrides}, name,
                                          options.progress)
        depth[name] = []
        for synthetic_frame, frame, (seconds, iterations) in zip(sequence, replayed, stats):
            label = f'{synthetic_frame.index:03d}'
            if 'depth' not in frame.outputs:
                result.records.append(FrameRecord(label, name, seconds, float('nan'), 0,
                                                  'dropped', float('nan'), None,
                                                  'no depth published'))
                depth[name].append(np.full(synthetic_frame.depth.shape, np.nan, np.float32))
                continue
            prediction = np.frombuffer(bytes(frame.outputs['depth'].data), np.float32).reshape(
                synthetic_frame.depth.shape).copy()
            depth[name].append(prediction)
            # NaN from the node means "at or beyond max_depth" (REP 118): score it there.
            metrics = compute_metrics(np.nan_to_num(prediction, nan=max_depth),
                                      synthetic_frame.depth)
            result.records.append(FrameRecord(label, name, seconds, float('nan'), iterations,
                                              'ok', float('nan'), metrics))

    projected = _projected_inputs(bag, NodeSettings.from_values(common).projection)
    frames = [Frame(f'{f.index:03d}', f.rgb, sparse, f.depth.astype(np.float32),
                    f.camera.K, options.kind, f.stamp_ns)
              for f, sparse in zip(sequence, projected)]
    for index, frame in enumerate(frames):
        frame_figure(frame, {name: depth[name][index] for name in CONFIGURATIONS},
                     output / 'frames' / f'{frame.name}.png')
    _contact_sheet(frames, depth, 'lrda-warm', output / 'contact_sheet.png')
    _animation(frames, depth['lrda-warm'], output / 'depth.gif')
    write_csv(result, output / 'frames.csv')
    title = (f'lrda demo: synthetic {options.kind} sequence, {options.frames} frames '
             f'{options.width}x{options.height}, model {options.model!r}')
    summary = write_summary(result, output, title, {'options': {
        k: str(v) for k, v in options.__dict__.items()}})
    print(summary_markdown(summary, title))
    print(f'wrote {output}/: summary.md, frames.csv, frames/*.png, contact_sheet.png, '
          f'depth.gif, bag/')
    return summary


def _projected_inputs(bag: Path, projection: ProjectionConfig) -> list[np.ndarray]:
    """Return the sparse depth each frame's LiDAR projects to, as the node computes it."""
    from .eval.bag import RosbagDataset

    dataset = RosbagDataset(bag, BagTopics(IMAGE_TOPIC, INFO_TOPIC, POINTS_TOPIC, DEPTH_TOPIC),
                            projection=projection)
    try:
        return [frame.sparse_depth for frame in dataset]
    finally:
        dataset.source.close()
