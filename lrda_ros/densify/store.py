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
Finished frames on disk while a densify run goes on, so an interrupted run resumes.

``<output>/.partial/`` holds ``manifest.json`` (what the run was asked to do: a resume with
other settings is refused) and, per recording, one ``<index>.npz`` per finished frame and one
``chunk-<n>.pt`` per chunk: the last frame done in it and the warm state that frame left. A
frame is written before its chunk's progress, each by an atomic rename, so after any stop the
progress names frames that are all on disk, and the next frame starts from exactly the state
it would have had. A recording's folder goes once its output bag is written.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
import shutil
from typing import Any

import numpy as np

from .recordings import Chunk
from .worker import FrameResult
from ..errors import ConfigError

PARTIAL = '.partial'


def _atomic_write(path: Path, write) -> None:
    temporary = path.with_name(path.name + '.tmp')
    with open(temporary, 'wb') as stream:
        write(stream)
    os.replace(temporary, path)


def _differences(recorded: dict[str, Any], asked: dict[str, Any]) -> list[str]:
    """Return what differs between two manifests; parameters by name."""
    changed = []
    for key in sorted(set(recorded) | set(asked)):
        before, now = recorded.get(key), asked.get(key)
        if key == 'parameters' and before != now:
            names = sorted(name for name in set(before or {}) | set(now or {})
                           if (before or {}).get(name) != (now or {}).get(name))
            changed += [f'parameter {name}' for name in names]
        elif before != now:
            changed.append(key)
    return changed


class PartialStore:
    """The finished frames of the recordings of one run (see the module docstring)."""

    def __init__(self, output: Path, manifest: dict[str, Any], names: list[str],
                 resume: bool, overwrite: bool) -> None:
        self.output = Path(output)
        self.root = self.output / PARTIAL
        self.names = names
        manifest_path = self.root / 'manifest.json'
        written = [name for name in names if (self.output / name).exists()]
        if overwrite:
            shutil.rmtree(self.root, ignore_errors=True)
            for name in written:
                shutil.rmtree(self.output / name)
        elif manifest_path.exists():
            if not resume:
                raise ConfigError(f'{self.output} holds an interrupted run: pass --resume to '
                                  'continue it or --overwrite to start again', field='--resume')
            changed = _differences(json.loads(manifest_path.read_text()), manifest)
            if changed:
                raise ConfigError(f'the interrupted run in {self.output} was made with other '
                                  f'{", ".join(changed)}: give the same, or --overwrite',
                                  field='--resume')
        elif written and not resume:
            raise ConfigError(f'{self.output} already holds {", ".join(written)}: pass '
                              '--overwrite to replace, or another --output', field='--output')
        self.root.mkdir(parents=True, exist_ok=True)
        manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + '\n')

    def finished(self, name: str) -> bool:
        """Return whether the recording's output bag was written (nothing left to do)."""
        return (self.output / name).exists() and not (self.root / name).exists()

    def folder(self, name: str) -> Path:
        """Return (and create) the recording's folder of finished frames."""
        folder = self.root / name
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def progress(self, name: str, chunk: Chunk) -> tuple[int, bytes | None]:
        """Return (the chunk's first frame index left to do, the warm state to start from)."""
        path = self.root / name / f'chunk-{chunk.number}.pt'
        if not path.exists():
            return chunk.frames[0].index, None
        import torch

        saved = torch.load(path, weights_only=True)
        return int(saved['last']) + 1, saved['warm_state']

    def save(self, name: str, chunk: Chunk, result: FrameResult) -> None:
        """Write a finished frame, then the chunk's progress (see the module docstring)."""
        import torch

        folder = self.folder(name)
        arrays = {'dropped': np.array(result.dropped), 'message': np.array(result.message)}
        if result.depth is not None:
            arrays['depth'] = result.depth
        if result.confidence is not None:
            arrays['confidence'] = result.confidence
        _atomic_write(folder / f'{result.index}.npz', lambda stream: np.savez(stream, **arrays))
        _atomic_write(folder / f'chunk-{chunk.number}.pt', lambda stream: torch.save(
            {'last': result.index, 'warm_state': result.warm_state}, stream))

    def load(self, name: str, index: int) -> dict[str, Any]:
        """Return a finished frame: depth and confidence (absent when dropped), dropped."""
        with np.load(self.root / name / f'{index}.npz') as stored:
            return {key: stored[key] if stored[key].ndim else str(stored[key])
                    for key in stored.files}

    def discard(self, name: str) -> None:
        """Forget a recording's frames once its output bag is written."""
        shutil.rmtree(self.root / name, ignore_errors=True)

    def close(self) -> None:
        """Remove the partial folder once every recording is written."""
        if all(not (self.root / name).exists() for name in self.names):
            shutil.rmtree(self.root, ignore_errors=True)
