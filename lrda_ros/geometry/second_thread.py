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
The thread that runs a frame's whole-image steps beside the caller's, on the second core.

OpenCV and numpy release the GIL in their whole-array operations, so two threads use two
cores. Whoever runs frames one after another (the node's pipeline, a benchmark) keeps one
:func:`new_second_thread` and passes it in: starting a thread per frame measured about 0.5 ms
more per confidence map at KITTI size, at 1920x1200 as well. Without one, a call starts and
ends its own.
"""

from __future__ import annotations

from concurrent.futures import Executor, Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, Callable, Iterator


def new_second_thread() -> ThreadPoolExecutor:
    """Return a one-thread executor for the geometry's steps beside the caller's."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix='lrda_beside')


class SameThread(Executor):
    """
    An executor that runs each call at once on the caller's thread.

    For a step that splits its work with a second thread while that thread is busy with other
    work: the split parts would queue behind it, so the caller does them all itself.
    """

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        """Run ``fn(*args, **kwargs)`` now; return its finished Future."""
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as error:  # delivered by result(), as a thread's would be
            future.set_exception(error)
        return future


@contextmanager
def second_thread(given: Executor | None) -> Iterator[Executor]:
    """Yield ``given``, or an executor of its own for this call (ended after it)."""
    if given is not None:
        yield given
        return
    with new_second_thread() as own:
        yield own
