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
One worker thread per purpose and process, for the steps that run beside the caller's thread.

OpenCV and numpy release the GIL in their whole-array operations, so a second thread uses the
CPU's second core. The thread is started on first use and kept (a pool per frame costs a
thread start each time); a forked child starts its own, as it has none of its parent's threads.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
import os

#: Each purpose's worker, per process id.
_WORKERS: dict[tuple[str, int], ThreadPoolExecutor] = {}


def worker(purpose: str) -> ThreadPoolExecutor:
    """Return this process's worker thread for ``purpose`` (one task at a time)."""
    key = (purpose, os.getpid())
    found = _WORKERS.get(key)
    if found is None:
        # Two first callers at once may both build one: setdefault keeps the first (a pool
        # starts its thread only with its first task).
        found = _WORKERS.setdefault(key, ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=f'lrda_{purpose}'))
    return found
