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

"""A frame's uploads and its one read-back (engine/transfers.py)."""

from __future__ import annotations

from lrda_ros.engine.transfers import to_device, to_host
import numpy as np
import pytest
import torch

DEVICES = ['cpu'] + (['cuda'] if torch.cuda.is_available() else [])


@pytest.mark.parametrize('device', DEVICES)
def test_arrays_go_up_and_come_back_unchanged(device):
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (5, 7, 3), dtype=np.uint8)[:, ::-1]  # not contiguous
    depth = rng.uniform(0.5, 80.0, 300).astype(np.float32)
    uploaded = [to_device(image, torch.device(device)), to_device(depth, torch.device(device))]
    assert [tensor.device.type for tensor in uploaded] == [device, device]
    mask = uploaded[1] > 40.0
    back = to_host(uploaded[0], None, uploaded[1], mask)
    np.testing.assert_array_equal(back[0], image)
    assert back[1] is None
    np.testing.assert_array_equal(back[2], depth)
    np.testing.assert_array_equal(back[3], depth > 40.0)
    assert [array.dtype for array in back if array is not None] == [np.uint8, np.float32, bool]


@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA device')
def test_uploads_and_read_back_make_no_implicit_synchronization():
    # PyTorch's sync debug mode raises on every operation that makes the host wait for the
    # device on its own (a pageable copy, .cpu(), .item()); to_host's one explicit wait at
    # the end is not one of them.
    device = torch.device('cuda')
    depth = np.linspace(1.0, 2.0, 1000, dtype=np.float32)
    torch.cuda.set_sync_debug_mode('error')
    try:
        uploaded = to_device(depth, device)
        (back,) = to_host(uploaded * 2.0)
    finally:
        torch.cuda.set_sync_debug_mode('default')
    np.testing.assert_allclose(back, depth * 2.0)
