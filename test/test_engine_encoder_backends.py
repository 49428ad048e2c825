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

"""The encoder on ONNX Runtime (CPU provider) against the PyTorch encoder."""

from __future__ import annotations

import copy

from conftest import smooth_image, tiny_network
from lrda_ros.engine import DepthCompleter, DepthModel, TTOConfig, UniDepthModel
from lrda_ros.engine.encoder_backends import OnnxEncoder
from lrda_ros.errors import ConfigError
import numpy as np
import pytest
import torch
from unidepth_tiny import tiny_unidepth_network

# The onnx extra: without it this module skips instead of failing the whole collection.
onnx = pytest.importorskip('onnx', reason="onnx is not installed (pip install 'lrda_ros[onnx]')")
onnxruntime = pytest.importorskip(
    'onnxruntime', reason="onnxruntime is not installed (pip install 'lrda_ros[onnx]')")

#: Feature tolerance, ONNX Runtime against PyTorch, both float32 on the CPU: the same
#: operations in a different order (fused attention, layer norm kernels).
FEATURE_ATOL = 1e-4
#: Completed depth after 3 small steps: the small feature differences pass through the steps.
DEPTH_RTOL = 1e-3

BASE_NETWORK = tiny_network(seed=0)


def sparse_for(depth: np.ndarray, count: int = 200, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    sparse = np.zeros_like(depth)
    index = rng.choice(depth.size, count, replace=False)
    sparse.flat[index] = depth.flat[index]
    return sparse


def test_onnx_features_match_torch_and_are_cached(tmp_path):
    model = DepthModel(copy.deepcopy(BASE_NETWORK))
    encoder = OnnxEncoder(model.network.backbone, 'onnxruntime', model.device, tmp_path)
    assert encoder.providers == ['CPUExecutionProvider']
    pixel_values = model.preprocess(smooth_image(1, 42, 70), None)
    with torch.inference_mode():
        expected = model.network.backbone(pixel_values).feature_maps
    features = encoder(pixel_values)
    assert len(features) == len(expected) == 4
    for ours, theirs in zip(features, expected):
        assert ours.shape == theirs.shape and ours.dtype == torch.float32
        torch.testing.assert_close(ours, theirs, atol=FEATURE_ATOL, rtol=0)
    path = encoder.path_for(tuple(pixel_values.shape))
    assert path.name.endswith('-42x70.onnx')
    onnx.checker.check_model(str(path))  # a valid ONNX file, read by onnx itself
    session = onnxruntime.InferenceSession(str(path), providers=['CPUExecutionProvider'])
    assert [i.shape for i in session.get_inputs()] == [[1, 3, 42, 70]]
    # A second encoder of the same weights reuses the file; other weights get their own.
    stamp = path.stat().st_mtime_ns
    OnnxEncoder(model.network.backbone, 'onnxruntime', model.device, tmp_path)(pixel_values)
    assert path.stat().st_mtime_ns == stamp
    other = OnnxEncoder(tiny_network(seed=5).backbone, 'onnxruntime', model.device, tmp_path)
    assert other.path_for(tuple(pixel_values.shape)) != path


def test_onnx_outputs_are_written_into_device_tensors_without_a_host_round_trip(
        tmp_path, monkeypatch):
    # I/O binding: ONNX Runtime writes into tensors allocated on the model's device, the
    # results of its plain run (numpy arrays on the host), which is never called.
    model = DepthModel(copy.deepcopy(BASE_NETWORK))
    encoder = OnnxEncoder(model.network.backbone, 'onnxruntime', model.device, tmp_path)
    pixel_values = model.preprocess(smooth_image(3, 42, 56), None)
    session = encoder._session(tuple(pixel_values.shape))
    expected = session.run(None, {'pixel_values': pixel_values.numpy()})
    written = []
    bind_output = onnxruntime.IOBinding.bind_output

    def recorded(binding, name, device_type, device_id, element_type, shape, pointer):
        written.append(pointer)
        return bind_output(binding, name, device_type, device_id, element_type, shape, pointer)

    monkeypatch.setattr(onnxruntime.IOBinding, 'bind_output', recorded)
    monkeypatch.setattr(onnxruntime.InferenceSession, 'run', None)  # no host round trip
    features = encoder(pixel_values)
    assert [feature.data_ptr() for feature in features] == written
    for ours, theirs in zip(features, expected):
        assert ours.device == model.device
        np.testing.assert_array_equal(ours.numpy(), theirs)


def test_completion_with_the_onnx_encoder_matches_torch(tmp_path):
    image = smooth_image(2, 56, 84)
    truth = (1.0 / (DepthModel(copy.deepcopy(BASE_NETWORK)).predict(image) + 0.2)).astype(
        np.float32)
    sparse = sparse_for(truth)
    results = {}
    for backend in ('torch', 'onnxruntime'):
        config = TTOConfig(device='cpu', iterations=3, learning_rate=1e-3, min_depth=0.01,
                           encoder_backend=backend,
                           encoder_cache_dir=str(tmp_path), dtype='float32')
        completer = DepthCompleter(DepthModel(copy.deepcopy(BASE_NETWORK)), config)
        results[backend] = completer.complete(image, sparse)
    assert results['onnxruntime'].status == results['torch'].status
    assert results['onnxruntime'].iterations == results['torch'].iterations > 0
    np.testing.assert_allclose(results['onnxruntime'].depth, results['torch'].depth,
                               rtol=DEPTH_RTOL)
    assert len(list(tmp_path.glob('*-56x84.onnx'))) == 1


@pytest.mark.parametrize('scope', ['encoder_lora', 'full_lora', 'prompt'])
def test_scopes_that_reencode_are_rejected(scope, tmp_path):
    with pytest.raises(ConfigError) as error:
        DepthCompleter(DepthModel(copy.deepcopy(BASE_NETWORK)), TTOConfig(
            device='cpu', scope=scope, encoder_backend='onnxruntime',
            encoder_cache_dir=str(tmp_path)))
    assert error.value.field == 'encoder_backend'
    assert 're-encodes with autograd' in str(error.value)


def test_unidepth_and_missing_tensorrt_are_rejected_with_a_reason(tmp_path):
    with pytest.raises(ConfigError) as error:
        DepthCompleter(UniDepthModel(tiny_unidepth_network()), TTOConfig(
            device='cpu', sparse_head=False, encoder_backend='onnxruntime'))
    assert error.value.field == 'encoder_backend'
    assert 'UniDepthModel' in str(error.value) and 'encoder_backend: torch' in str(error.value)
    if 'TensorrtExecutionProvider' in onnxruntime.get_available_providers():
        pytest.skip('this ONNX Runtime has TensorRT')
    with pytest.raises(ConfigError) as error:
        DepthCompleter(DepthModel(copy.deepcopy(BASE_NETWORK)), TTOConfig(
            device='cpu', encoder_backend='tensorrt'))
    assert error.value.field == 'encoder_backend' and 'TensorRT' in str(error.value)
    with pytest.raises(ConfigError) as error:
        TTOConfig(encoder_backend='openvino')
    assert error.value.field == 'encoder_backend'
