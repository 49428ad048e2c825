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
Fast DDS settings for megabyte images and clouds between processes on one host.

Two environment variables, each set only when the user has not chosen already (other RMWs
ignore both):

* ``FASTDDS_BUILTIN_TRANSPORTS=LARGE_DATA``: shared memory + TCP for data, so reliable
  readers get large samples without UDP fragment loss.
* ``FASTDDS_DEFAULT_PROFILES_FILE`` = :data:`LARGE_SAMPLES_PROFILE`: a shared-memory segment of
  32 MiB instead of 512 KiB. Fast DDS puts a sample into the *publisher's* segment; one larger
  than the segment never reaches a best-effort reader on the same host (measured: 0 of 20
  1242x375 32FC1 depth images at 2 Hz reached a best-effort subscriber, 20 of 20 with the
  profile). ``ros2 topic hz`` and ``ros2 topic echo`` subscribe best effort, as does the node
  by default (sensor-data QoS), so this is what lets them see ``depth`` and replayed images.

This module imports nothing of ROS: the launch file uses it too.
"""

from __future__ import annotations

import os
from pathlib import Path
import shutil
from typing import Mapping

#: Fast DDS profile with the large shared-memory segment (installed with the package).
LARGE_SAMPLES_PROFILE = Path(__file__).with_name('fastdds_large_samples.xml')
#: Its segment size; the profile is skipped where /dev/shm has less than a few of them free.
SEGMENT_BYTES = 32 * 1024 * 1024
_PROFILE_VARIABLES = ('FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE')


def _shared_memory_free_bytes(path: str = '/dev/shm') -> int:
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return 0


def large_sample_environment(environ: Mapping[str, str],
                             shm_free_bytes: int | None = None) -> dict[str, str]:
    """
    Return the variables to add to ``environ`` for large samples (none the user set).

    The profile is left out when the user names a profiles file of their own, or when
    /dev/shm (64 MiB in a default Docker container) could not hold four segments: Fast DDS
    maps the segment lazily, and a full /dev/shm would end the process with SIGBUS.
    """
    variables = {}
    if 'FASTDDS_BUILTIN_TRANSPORTS' not in environ:
        variables['FASTDDS_BUILTIN_TRANSPORTS'] = 'LARGE_DATA'
    if shm_free_bytes is None:
        shm_free_bytes = _shared_memory_free_bytes()
    if (not any(name in environ for name in _PROFILE_VARIABLES)
            and shm_free_bytes >= 4 * SEGMENT_BYTES and LARGE_SAMPLES_PROFILE.is_file()):
        variables['FASTDDS_DEFAULT_PROFILES_FILE'] = str(LARGE_SAMPLES_PROFILE)
    return variables


def prefer_large_sample_transport() -> None:
    """Set :func:`large_sample_environment` in this process, before its first participant."""
    os.environ.update(large_sample_environment(os.environ))
