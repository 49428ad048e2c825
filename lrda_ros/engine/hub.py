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
The Hugging Face hub without torch: what its local cache holds and whether the hub answers.

The loader (:mod:`lrda_ros.engine.loading`) asks here before it asks the hub, and so do nodes
and commands before torch loads (:func:`~lrda_ros.engine.names.check_model_path`): ``model
'auto'`` on an offline machine without the model in its cache is refused in a fraction of a
second, not after torch's and transformers' imports.
"""

from __future__ import annotations

import os
import socket
import threading
from urllib.parse import urlparse

from .errors import ModelLoadError

#: Seconds the hub probe waits for a TCP connection (DNS included).
HUB_PROBE_TIMEOUT_S = 1.5


def _offline_flag() -> bool:
    try:
        from huggingface_hub import constants
    except ImportError:
        return True
    # constants reads the variable at import; a later os.environ change must count too.
    return bool(constants.HF_HUB_OFFLINE) or os.environ.get('HF_HUB_OFFLINE', '').strip().upper() \
        in ('1', 'ON', 'YES', 'TRUE')


def hub_unreachable_reason(timeout_s: float = HUB_PROBE_TIMEOUT_S) -> str:
    """Return why the Hugging Face hub cannot be reached ('' when it accepts a connection)."""
    if _offline_flag():
        return 'HF_HUB_OFFLINE is set'
    from huggingface_hub import constants

    url = urlparse(constants.ENDPOINT)
    address = (url.hostname, url.port or (443 if url.scheme == 'https' else 80))
    outcome: list[str] = []

    def probe() -> None:
        try:
            with socket.create_connection(address, timeout=timeout_s):
                outcome.append('')
        except OSError as error:
            outcome.append(f'{address[0]}:{address[1]} is unreachable ({error})')

    # A thread bounds the name lookup too, which the socket timeout does not cover.
    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout_s + 0.5)
    if not outcome:
        return f'{address[0]}:{address[1]} did not answer within {timeout_s:.1f} s'
    return outcome[0]


def config_is_cached(hub_id: str) -> bool:
    """
    Return whether the local cache holds ``hub_id``'s config.json (its main revision).

    huggingface_hub's own lookup, the one transformers makes with ``local_files_only``: the
    same folder (``HF_HUB_CACHE``, ``HF_HOME``) and the same revision.
    """
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    return isinstance(try_to_load_from_cache(hub_id, 'config.json'), str)


def auto_model_error(reason: str) -> ModelLoadError:
    """Return the error of ``model 'auto'`` that cannot load the default model, saying why."""
    return ModelLoadError(
        f"model 'auto': {reason}. Set 'model' to a local Hugging Face directory, an official "
        "depth_anything_v2_*.pth file or a cached hub id, or to 'demo' for the demonstration "
        'prior (synthetic scenes only, not for real images)')


def not_cached_and_offline(hub_id: str, offline: str) -> str:
    """Return the reason for a hub id missing from the cache while the hub is ``offline``."""
    return f'{hub_id} is not in the local Hugging Face cache and {offline}'


def why_it_cannot_load(hub_id: str) -> str:
    """Return why ``hub_id`` cannot load at all ('' where it may): not cached, hub unreachable."""
    if config_is_cached(hub_id):
        return ''
    offline = hub_unreachable_reason()
    return not_cached_and_offline(hub_id, offline) if offline else ''
