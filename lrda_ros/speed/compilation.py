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

"""``lrda speed --compile``: an Inductor cache of the run's own, and the compilation's times."""

from __future__ import annotations

from contextlib import contextmanager
import math
import os
import tempfile
from typing import Iterator


@contextmanager
def compilation_cache(compile_steps: bool) -> Iterator[None]:
    """
    With compile, give this run's processes an Inductor cache of their own, empty at first.

    The first process of each configuration then compiles from nothing and the later ones
    start from its cache, as a second start of the node would: both times are reported. A
    cache the user named (TORCHINDUCTOR_CACHE_DIR) is kept.
    """
    if not compile_steps or 'TORCHINDUCTOR_CACHE_DIR' in os.environ:
        yield
        return
    with tempfile.TemporaryDirectory(prefix='lrda-inductor-') as folder:
        os.environ['TORCHINDUCTOR_CACHE_DIR'] = folder
        try:
            yield
        finally:
            del os.environ['TORCHINDUCTOR_CACHE_DIR']


def compile_times(rows: list[dict], frames: int) -> str:
    """Say each configuration's warm-up frame, compiled from nothing and from the cache."""
    lines = ["Compilation is paid in each fresh process's untimed warm-up frame (which does a "
             "frame's work too): the first process compiles, the later ones read the cache."]
    for row in rows:
        if not math.isfinite(row['warm_up_first_s']):  # a method without the network
            continue
        cached = (f'{row["warm_up_cached_s"]:.1f} s from the cache' if frames > 1
                  else 'from the cache: needs --frames 2 or more')
        lines.append(f'- {row["backbone"]} {row["resolution"]} {row["method"]}: warm-up frame '
                     f'{row["warm_up_first_s"]:.1f} s compiling, {cached}; a timed frame '
                     f'{row["seconds"]:.2f} s')
    return '\n'.join(lines) + '\n'
