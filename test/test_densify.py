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
``lrda densify`` on the real KITTI recording: the node's outputs, resumable, the same on Ray.

One densified run of the 3-frame KITTI bag (tiny random network, 126 px processing, warm
start on) is the reference. The node, replayed lock-step over real DDS with the same
parameters, must publish the same depth to 1e-6 m with the same NaNs; an interrupted run must
resume from the next frame (the warm state of the last finished one restored) and end with the
same bag; two recordings on a local 2-worker Ray cluster must come out as the local run did.
Everything runs torch on one CPU thread (see ``one_torch_thread``), so all compare exactly.
"""

from __future__ import annotations

import shutil

from conftest import one_thread, SHARED_DATA, tiny_network
import numpy as np
import pytest

from lrda_ros.cli import main as lrda_main  # noqa: I100
from lrda_ros.densify import DensifyOptions, run_densify
from lrda_ros.errors import ConfigError

BAG = SHARED_DATA / 'bags' / 'kitti_2011_09_26_3frames_db3'
IMAGE = '/kitti/camera_color_left/image_raw'
NAMESPACE = '/kitti/camera_color_left'
#: The node's parameters both programs share; publish.* only trim the node's extra outputs.
PARAMETERS = {'device': 'cpu', 'dtype': 'float32', 'iterations': 3, 'warm_iterations': 2,
              'processing_size': 126}

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    not BAG.is_dir(), reason=f'KITTI bag not found at {BAG} (set LRDA_SHARED_DATA)')]


def read_bag(path) -> dict[str, list]:
    """Return topic -> [(log time, CDR bytes)] of a rosbag2, in log-time order."""
    from rosbags.highlevel import AnyReader

    messages: dict[str, list] = {}
    with AnyReader([path]) as reader:
        for connection, log_ns, raw in reader.messages():
            messages.setdefault(connection.topic, []).append((log_ns, bytes(raw)))
    return messages


def densified_depth(path) -> dict[int, np.ndarray]:
    """Return image stamp (ns) -> depth of a densified bag, decoded as ROS tools would."""
    from rosbags.highlevel import AnyReader

    from lrda_ros.messages.conversions import depth_image_to_array
    from lrda_ros.messages.stamps import stamp_to_ns

    with AnyReader([path]) as reader:
        connections = [c for c in reader.connections if c.topic == f'{NAMESPACE}/depth']
        return {stamp_to_ns(message.header.stamp): depth_image_to_array(message)
                for message in (reader.deserialize(raw, c.msgtype)
                                for c, _, raw in reader.messages(connections=connections))}


@pytest.fixture(scope='module', autouse=True)
def one_torch_thread():
    """
    Run torch on one CPU thread, here and in the Ray workers.

    With several threads some CPU kernels add in a varying order, so two runs of the same frames
    differ by ~1e-5 relative once warm start carries those differences on; on one thread every
    run gives the same numbers, and the test can ask for equality.
    """
    with one_thread():
        yield


@pytest.fixture(scope='module')
def model_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp('densify_model')
    tiny_network(seed=0).save_pretrained(folder)
    return folder


def options(model_dir, output, **extra) -> DensifyOptions:
    return DensifyOptions(bags=extra.pop('bags', (BAG,)), output=output,
                          parameters={**PARAMETERS, 'model': str(model_dir)}, progress=False,
                          **extra)


@pytest.fixture(scope='module')
def reference(model_dir, tmp_path_factory):
    """Densify the bag locally once; return the output bag's folder."""
    output = tmp_path_factory.mktemp('densify_reference')
    report = run_densify(options(model_dir, output))
    assert (report.frames, report.completed, report.reused) == (3, 3, 0)
    assert not report.dropped and report.workers[0]['device'] == 'cpu'
    assert not (output / '.partial').exists()
    return output / BAG.name


def test_the_output_bag_holds_the_recording_and_the_nodes_outputs(reference):
    original, written = read_bag(BAG), read_bag(reference)
    for topic, messages in original.items():
        assert written[topic] == messages, f'{topic} was not copied byte for byte'
    assert sorted(set(written) - set(original)) == [f'{NAMESPACE}/depth',
                                                    f'{NAMESPACE}/depth/camera_info',
                                                    f'{NAMESPACE}/depth/confidence']
    from rosbags.typesys import get_typestore, Stores

    store = get_typestore(Stores.ROS2_KILTED)
    images = [store.deserialize_cdr(raw, 'sensor_msgs/msg/Image') for _, raw in original[IMAGE]]
    infos = [store.deserialize_cdr(raw, 'sensor_msgs/msg/CameraInfo')
             for _, raw in original[f'{NAMESPACE}/camera_info']]
    depth_log = [log for log, _ in written[f'{NAMESPACE}/depth']]
    for k, (log_ns, raw) in enumerate(written[f'{NAMESPACE}/depth/camera_info']):
        info = store.deserialize_cdr(raw, 'sensor_msgs/msg/CameraInfo')
        # The input camera_info with the image's header, as the node republishes it.
        assert info.header == images[k].header
        np.testing.assert_array_equal(info.k, infos[k].k)
        assert (info.width, info.height, info.distortion_model) == (1242, 375, 'plumb_bob')
        # Logged when the last input of the set was.
        inputs = [original[t][k][0] for t in (IMAGE, f'{NAMESPACE}/camera_info',
                                              '/kitti/velo/pointcloud')]
        assert log_ns == depth_log[k] == max(inputs)


def test_densified_depth_equals_what_the_node_publishes(model_dir, reference):
    pytest.importorskip('rclpy', reason='rclpy is not installed (the node runs over real DDS)')
    from lrda_ros.messages.conversions import depth_image_to_array
    from lrda_ros.messages.rosbag import BagTopics, RosbagSource
    from lrda_ros.ros.replay import complete_bag_in_process

    with RosbagSource(BAG) as source:  # tf2 is absent here: the node gets /tf_static's value
        T = source.transform_tree().lookup('camera_color_left', 'velo_link')
    replayed, _ = complete_bag_in_process(BAG, BagTopics(), {
        **PARAMETERS, 'model': str(model_dir), 'publish.depth_colored': False,
        'lidar_to_camera.matrix': [float(v) for v in T.as_matrix().ravel()]})
    from_node = {frame.stamp_ns: depth_image_to_array(frame.outputs['depth'])
                 for frame in replayed if 'depth' in frame.outputs}
    from_bag = densified_depth(reference)
    assert len(from_node) == 3 and sorted(from_node) == sorted(from_bag)
    for stamp, depth in from_node.items():
        np.testing.assert_array_equal(np.isnan(depth), np.isnan(from_bag[stamp]))
        np.testing.assert_allclose(from_bag[stamp], depth, rtol=0, atol=1e-6, equal_nan=True)
        assert np.isfinite(depth).mean() > 0.5


def test_an_interrupted_run_resumes_without_redoing_finished_frames(
        model_dir, reference, tmp_path):
    def stop_after_one(result):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_densify(options(model_dir, tmp_path), on_frame=stop_after_one)
    assert not (tmp_path / BAG.name).exists()
    assert sorted(p.name for p in (tmp_path / '.partial' / BAG.name).iterdir()) == [
        '0.npz', 'chunk-0.pt']
    with pytest.raises(ConfigError, match='--resume') as refused:
        run_densify(options(model_dir, tmp_path))
    assert refused.value.field == '--resume'
    with pytest.raises(ConfigError, match='iterations'):  # a resume with other settings
        run_densify(DensifyOptions((BAG,), tmp_path, {**PARAMETERS, 'model': str(model_dir),
                                                      'iterations': 4}, resume=True))

    completed = []
    report = run_densify(options(model_dir, tmp_path, resume=True),
                         on_frame=lambda result: completed.append(result.index))
    assert completed == [1, 2] and (report.reused, report.completed) == (1, 2)
    # Frame 1 started from frame 0's stored warm state: the bag is the uninterrupted one.
    assert read_bag(tmp_path / BAG.name) == read_bag(reference)
    assert not (tmp_path / '.partial').exists()


def test_two_recordings_on_a_local_two_worker_ray_cluster_match_the_local_run(
        model_dir, reference, tmp_path):
    pytest.importorskip('ray', reason='Ray is not installed (the cluster extra)')
    from ray.cluster_utils import Cluster

    second = tmp_path / 'second'
    shutil.copytree(BAG, second)
    cluster = Cluster(initialize_head=True, head_node_args={'num_cpus': 2})
    try:
        report = run_densify(options(model_dir, tmp_path / 'out', bags=(BAG, second),
                                     ray_address=cluster.address, workers=2,
                                     storage='sqlite3'))
    finally:
        cluster.shutdown()
    assert len(report.workers) == 2 and report.completed == 6
    expected = densified_depth(reference)
    for name in (BAG.name, 'second'):
        assert [p.suffix for p in (tmp_path / 'out' / name).glob('*.db3')] == ['.db3']
        depth = densified_depth(tmp_path / 'out' / name)
        assert sorted(depth) == sorted(expected)
        for stamp, values in depth.items():
            np.testing.assert_array_equal(values, expected[stamp])


def test_max_frames_completes_the_first_frames_and_copies_all(model_dir, reference, tmp_path):
    report = run_densify(options(model_dir, tmp_path, max_frames=1))
    assert (report.frames, report.completed) == (1, 1)
    written = read_bag(tmp_path / BAG.name)
    original = read_bag(BAG)
    assert all(written[topic] == messages for topic, messages in original.items())
    first = densified_depth(tmp_path / BAG.name)
    assert len(first) == 1
    stamp, depth = next(iter(first.items()))
    np.testing.assert_array_equal(depth, densified_depth(reference)[stamp])


def test_clouds_are_moved_to_the_image_stamp_as_lrda_eval_moves_them(model_dir, tmp_path):
    # KITTI's bag has /tf_static only: the LiDAR's poses come from KISS-ICP, as in lrda eval.
    pytest.importorskip('kiss_icp', reason='KISS-ICP (the odometry extra) is not installed')
    from lrda_ros.datasets.rosbag import RosbagDataset
    from lrda_ros.densify.frames import FrameReader
    from lrda_ros.densify.recordings import open_recording
    from lrda_ros.messages.rosbag import BagTopics
    from lrda_ros.pipeline import prepare_frame
    from lrda_ros.settings import NodeSettings

    settings = NodeSettings.from_values({'motion.azimuth_times': True})
    recording = open_recording(BAG, BagTopics(), settings.sync_queue_size, settings.sync_slop,
                               None, settings.motion)
    assert recording.odometry
    reader = FrameReader(settings)
    reader.start(recording.odometry)
    evaluated = RosbagDataset(BAG, projection=settings.projection, holdout_fraction=0.0,
                              poses='lidar_odometry', motion=settings.motion)
    notes = []
    for frame, scored in zip(recording.read(recording.chunks(0, 0)[0]), evaluated):
        sparse = prepare_frame(reader.inputs(frame), settings.projection).sparse_depth
        notes.append(reader.motion)
        assert reader.motion == scored.notes['motion_alignment']
        # The same registration of the same clouds: the same map, to KISS-ICP's reductions.
        same = np.isclose(sparse, scored.sparse_depth, rtol=1e-4, atol=0)
        assert same.mean() > 0.999, same.mean()
    # The first cloud has no velocity yet: the static extrinsic, as lrda eval counts it.
    assert notes == ['no_fixed_frame_pose', 'moved', 'moved']
    report = run_densify(DensifyOptions(
        (BAG,), tmp_path, {**PARAMETERS, 'model': str(model_dir), 'motion.azimuth_times': True},
        progress=False))
    assert report.motion == {'no_fixed_frame_pose': 1, 'moved': 2}


@pytest.mark.parametrize('arguments, message', [
    (['-p', 'time_budget:=0.5'], "parameter 'time_budget': is 0.5, but densifying runs every"),
    (['-p', 'temporal_fusion.weight:=0.5'],
     "parameter 'temporal_fusion.weight': is 0.5, but temporal fusion takes the camera pose"),
    (['-p', 'iteratons:=3'], "did you mean 'iterations'"),
    (['-p', 'point_topics:=[points, points_rear]'],
     "parameter 'point_topics': names the node's live topics; give the recording's point topics "
     'with --points-topic'),
    (['-p', 'iterations:=many'], "parameter 'iterations': expects an integer"),
    (['--workers', '2'], '--workers sets the Ray workers: give --ray ADDRESS too'),
    (['--namespace', '/kitti/..'], '--namespace must be an absolute ROS 2 namespace'),
    (['--resume', '--overwrite'], '--resume continues the run in --output, --overwrite deletes'),
])
def test_bad_options_end_in_one_line(arguments, message, tmp_path, capsys):
    code = lrda_main(['densify', str(BAG), '--output', str(tmp_path)] + arguments)
    error = capsys.readouterr().err.strip()
    assert code == 1 and len(error.splitlines()) == 1, error
    assert error.startswith('lrda densify: error: ') and message in error, error
