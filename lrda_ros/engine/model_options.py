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

"""Which engine options a model runs: checked when a completer is built and on every change."""

from __future__ import annotations

from .config import TTOConfig
from .model import DepthModel
from ..errors import ConfigError


def model_option_notices(model: DepthModel, config: TTOConfig) -> list[str]:
    """
    Raise ConfigError for an option of ``config`` the model cannot honour; return notices.

    The sparse head and tail strips are built on Depth Anything V2's DPT decoder. Without the
    sparse head the steps decode the full depth map (same result, more time), so it is only
    noted; tail strips are asked for to bound memory, so their absence is an error.
    """
    if model.dpt_decoder:
        return []
    name = type(model).__name__
    if config.schedule == 'fast':
        raise ConfigError(
            f"schedule 'fast': its coarse steps pool Depth Anything V2's encoder tokens, "
            f"which {name} does not have; use 'adaptive' or 'paper'", field='schedule')
    if config.tail_strips > 1:
        raise ConfigError(
            f'tail_strips={config.tail_strips}: decoder tail strips exist only for '
            f"Depth Anything V2's DPT decoder, not for {name}; set tail_strips to 1 "
            '(or lower processing_size to save memory)', field='tail_strips')
    if config.sparse_head:
        return [f"sparse_head: Depth Anything V2's sparse head does not apply to {name}; "
                'the optimization steps decode the full depth map']
    return []
