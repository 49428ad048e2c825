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
Depth Anything 3 (Lin et al., 2025) on one view: the any-view, metric and mono networks.

Written for this package from the official code (``depth_anything_3`` 0.1.1, Apache-2.0);
official checkpoints load by name (:mod:`.loading`). Licences of the weights differ per model
(:data:`.config.PRESETS`).
"""

from .config import DA3Config, DA3ConfigError, HUB_IDS, preset, PRESETS
from .loading import is_da3_source, load_da3_network
from .model import da3_processing_shape, DA3Features, DA3Model, MissingIntrinsicsError
from .network import DA3Network

__all__ = ['DA3Config', 'DA3ConfigError', 'DA3Features', 'DA3Model', 'DA3Network',
           'da3_processing_shape', 'HUB_IDS', 'is_da3_source', 'load_da3_network',
           'MissingIntrinsicsError', 'preset', 'PRESETS']
