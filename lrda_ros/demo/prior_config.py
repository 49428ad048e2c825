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

"""What a training run of the demo prior sets (``lrda train-prior``); without torch."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class PriorTrainingConfig:
    """A training run of the demo prior (the defaults reproduce the shipped weights)."""

    #: The weights' folder; None: the package's embedded prior (engine/loading.py
    #: ``demo_prior_dir``).
    output: Path | None = None
    num_views: int = 4000
    width: int = 224
    height: int = 168
    steps: int = 700
    batch_size: int = 16
    learning_rate: float = 5e-4
    warmup_steps: int = 40
    weight_decay: float = 0.01
    indoor_fraction: float = 0.5
    seed: int = 0
    threads: int = 2
