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

"""What the library says about inputs it cannot use, and about a model shared by completers."""

import warnings

from conftest import smooth_image
from lrda_ros.engine import (
    CompletionStatus, DepthCompleter, InputTypeError, InsufficientSparseDepthError, TTOConfig)
from lrda_ros.errors import ConfigError, InputError
import numpy as np
import pytest
import torch


@pytest.fixture
def completer(tiny_model):
    return DepthCompleter(tiny_model, TTOConfig(iterations=1, device='cpu'))


def frame(height: int = 60, width: int = 80) -> tuple[np.ndarray, np.ndarray]:
    """Return an image and a sparse map of metres (every 4th pixel, 3 to 9 m)."""
    sparse = np.zeros((height, width), np.float32)
    sparse[::4, ::4] = np.linspace(3, 9, sparse[::4, ::4].size).reshape(sparse[::4, ::4].shape)
    return smooth_image(0, height, width), sparse


def test_torch_tensors_and_images_get_a_type_error_naming_the_conversion(completer):
    rgb, sparse = frame()
    with pytest.raises(TypeError, match=r'rgb must be a NumPy array.*torch\.Tensor.*numpy\(\)'):
        completer.complete(torch.from_numpy(rgb), sparse)
    with pytest.raises(InputTypeError, match=r'sparse_depth must be a NumPy array.*list'):
        completer.complete(rgb, sparse.tolist())
    from PIL import Image

    with pytest.raises(TypeError, match=r'rgb must be a NumPy array.*PIL.*np\.asarray'):
        completer.complete(Image.fromarray(rgb), sparse)


def test_a_sparse_map_with_a_channel_axis_is_named_as_such(completer):
    rgb, sparse = frame()
    with pytest.raises(InputError, match=r'must be \(H, W\), got shape \(60, 80, 1\): drop the '
                                         r'channel axis'):
        completer.complete(rgb, sparse[..., None])


@pytest.mark.parametrize('scale,reading', [(1000, '6 m as millimetres'),
                                           (256, '6 m as KITTI PNG values')])
def test_integer_sparse_depth_is_refused_with_its_likely_scale(completer, scale, reading):
    rgb, sparse = frame()
    encoded = np.round(sparse * scale).astype(np.uint16)  # how depth PNGs store it
    with pytest.raises(InputError, match='sparse depth is uint16, not metres') as raised:
        completer.complete(rgb, encoded)
    assert reading in str(raised.value)
    assert '/ 256 (or / 1000)' in str(raised.value)
    # Converted as the message says, the same frame completes.
    result = completer.complete(rgb, encoded.astype(np.float32) / scale)
    assert result.status is CompletionStatus.OPTIMIZED


def test_float_millimetres_are_named_as_the_likely_unit(completer):
    rgb, sparse = frame()
    hint = r'beyond 250.0 m: if they are millimetres, divide by 1000'
    with pytest.raises(InsufficientSparseDepthError, match=hint):
        completer.complete(rgb, sparse * 1000)


@pytest.mark.parametrize('value', [np.inf, -np.inf])
def test_infinite_sparse_depths_are_named_as_such_not_as_a_unit(completer, value):
    rgb, sparse = frame()
    with pytest.raises(InsufficientSparseDepthError) as raised:
        completer.complete(rgb, np.where(sparse > 0, np.float32(value), np.float32(0)))
    message = str(raised.value)
    assert f'{np.count_nonzero(sparse)} are infinite' in message
    assert 'millimetres' not in message and 'beyond' not in message


def test_read_only_arrays_complete_without_a_warning(completer):
    rgb, sparse = frame()
    rgb.flags.writeable = False
    sparse.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        result = completer.complete(rgb, sparse)
    assert np.isfinite(result.depth).any()


def test_a_second_completer_on_one_model_is_refused_in_one_sentence(tiny_model):
    rgb, sparse = frame()
    first = DepthCompleter(tiny_model, TTOConfig(iterations=1, device='cpu'))
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # refused before peft warns
        with pytest.raises(ConfigError, match=r'already carries the adapters of another '
                                              r'DepthCompleter.*load the model again') as raised:
            DepthCompleter(tiny_model, TTOConfig(iterations=2, device='cpu'))
    message = str(raised.value)
    assert message.count('. ') == 0 and '\n' not in message
    assert first.complete(rgb, sparse).status is CompletionStatus.OPTIMIZED
