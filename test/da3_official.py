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
The official Depth Anything 3 code (``depth-anything-3`` from PyPI) for the tests.

Its install pulls xformers, open3d, pycolmap, gradio and more; CI installs it with
``--no-deps`` and the few packages its model, configuration and weights modules import
(addict, einops, omegaconf, imageio: the Makefile). ``depth_anything_3.api``, whose
``DepthAnything3`` writes the published checkpoint layout (``save_pretrained``), also imports
the exporters (moviepy), pose alignment (evo) and the input processor (torchvision, which
cannot be installed beside this torch): those three modules, which saving and running the
network never call, are replaced by empty modules while it imports. The input processor's
resize rule is read from its own source (:func:`official_resize`), with torchvision stubbed
only for that import.
"""

from __future__ import annotations

from contextlib import contextmanager
import importlib
from pathlib import Path
import sys
import types

import numpy as np
import pytest

#: Modules of depth_anything_3.api that the weights path never calls, and what they define.
_UNUSED_BY_WEIGHTS = {'depth_anything_3.utils.export': ('export',),
                      'depth_anything_3.utils.pose_align': ('align_poses_umeyama',),
                      'depth_anything_3.utils.io.input_processor': ('InputProcessor',)}


def official_package():
    """Return the official package, or skip the test saying how to install it."""
    return pytest.importorskip(
        'depth_anything_3.cfg',
        reason='the official Depth Anything 3 code is not installed: pip install --no-deps '
               'depth-anything-3==0.1.1 addict einops omegaconf imageio')


def config_path(name: str) -> Path:
    """Return the official yaml of a model name (``depth_anything_3/configs/<name>.yaml``)."""
    package = official_package()
    return Path(package.__file__).parent / 'configs' / f'{name}.yaml'


def official_network(name: str, edit=None):
    """Build the official ``DepthAnything3Net`` of a config (``edit`` may change it first)."""
    cfg = official_package()
    config = cfg.load_config(str(config_path(name)))
    if edit is not None:
        edit(config)
    return cfg.create_object(config).eval()


@contextmanager
def _modules_replaced(modules: dict[str, types.ModuleType]):
    """Put ``modules`` in sys.modules for the block, then restore what was there."""
    saved = {name: sys.modules.get(name) for name in modules}
    sys.modules.update(modules)
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def _empty_module(name: str, **attributes) -> types.ModuleType:
    module = types.ModuleType(name)
    for attribute, value in attributes.items():
        setattr(module, attribute, value)
    return module


def official_api():
    """Import ``depth_anything_3.api`` with its three non-weights modules left empty."""
    official_package()
    empty = {name: _empty_module(name, **{a: type(a, (), {}) for a in attributes})
             for name, attributes in _UNUSED_BY_WEIGHTS.items()}
    with _modules_replaced(empty):
        return importlib.import_module('depth_anything_3.api')


def official_resize(rgb: np.ndarray, process_res: int) -> np.ndarray:
    """
    Resize an image as the official ``InputProcessor`` (``upper_bound_resize``) does.

    Its own methods run (OpenCV and PIL); torchvision, which it imports for its tensor
    conversion only, is a stub during the import.
    """
    official_package()
    pytest.importorskip('cv2', reason='OpenCV runs the official resize')
    from PIL import Image

    transforms = _empty_module('torchvision.transforms', Normalize=lambda **_: None,
                               ToTensor=lambda: None)
    stubs = {'torchvision': _empty_module('torchvision', transforms=transforms),
             'torchvision.transforms': transforms}
    with _modules_replaced(stubs):
        processor_module = importlib.import_module('depth_anything_3.utils.io.input_processor')
    processor = processor_module.InputProcessor.__new__(processor_module.InputProcessor)
    image = processor._resize_image(Image.fromarray(rgb), process_res, 'upper_bound_resize')
    image = processor._make_divisible_by_resize(image, processor.PATCH_SIZE)
    return np.asarray(image)
