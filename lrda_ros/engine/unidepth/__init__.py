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
UniDepthV2 (Piccinelli et al.): metric depth and camera from one image, ViT-S/B/L.

Written for this package from the published architecture; the module tree and parameter names
are those of the official checkpoints (``lpiccinelli/unidepth-v2-vit{s,b,l}14``), which load by
name. The released weights are licensed CC BY-NC 4.0 (non-commercial use).
"""

from .config import HUB_IDS, UniDepthConfigError, UniDepthV2Config
from .loading import is_unidepth_source, load_unidepth_network
from .model import UniDepthModel
from .network import UniDepthV2Network

__all__ = ['HUB_IDS', 'is_unidepth_source', 'load_unidepth_network', 'UniDepthConfigError',
           'UniDepthModel', 'UniDepthV2Config', 'UniDepthV2Network']
