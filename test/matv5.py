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

"""A MATLAB level-5 writer for tests, byte by byte from MathWorks' "MAT-File Format"."""

from __future__ import annotations

from pathlib import Path
import struct
import zlib

import numpy as np

# (array class, data type) per numpy type; MATLAB often stores doubles in a smaller type.
_CLASSES = {np.float64: (6, 9), np.float32: (7, 7), np.uint8: (9, 2), np.uint16: (11, 4),
            np.int32: (12, 5)}
_STORAGE = {'u1': 2, 'u2': 4, 'i4': 5, 'f4': 7, 'f8': 9}


def _element(kind: int, payload: bytes) -> bytes:
    if 0 < len(payload) <= 4:  # small data element
        return struct.pack('<HH', kind, len(payload)) + payload.ljust(4, b'\0')
    return struct.pack('<II', kind, len(payload)) + payload + b'\0' * (-len(payload) % 8)


def _header(flags: int, shape: tuple[int, ...], name: str) -> bytes:
    return (_element(6, struct.pack('<II', flags, 0))
            + _element(5, np.array(shape, '<i4').tobytes())
            + _element(1, name.encode()))


def matrix(name: str, value, stored_as: str | None = None) -> bytes:
    """Return the miMATRIX element of a numpy array, a str or a dict (a 1x1 struct)."""
    if isinstance(value, dict):
        length = 32
        body = _header(2, (1, 1), name)
        body += _element(5, struct.pack('<i', length))
        body += _element(1, b''.join(f.encode().ljust(length, b'\0') for f in value))
        body += b''.join(matrix('', field) for field in value.values())
        return _element(14, body)
    if isinstance(value, str):
        codes = np.array([ord(c) for c in value], '<u2')
        return _element(14, _header(4, (1, len(value)), name) + _element(4, codes.tobytes()))
    array = np.asarray(value)
    logical = array.dtype == bool
    if logical:
        array = array.astype(np.uint8)
    mx_class, mi_type = _CLASSES[array.dtype.type]
    shape = array.shape if array.ndim >= 2 else (array.size, 1)
    data = array.reshape(shape)
    if stored_as is not None:
        data, mi_type = data.astype(stored_as), _STORAGE[stored_as]
    payload = np.asarray(data, dtype=data.dtype.newbyteorder('<')).tobytes(order='F')
    flags = mx_class | (0x0200 if logical else 0)
    return _element(14, _header(flags, shape, name) + _element(mi_type, payload))


def write_mat(path: Path, variables: dict, compress: bool = False,
              stored_as: dict | None = None) -> None:
    """Write ``variables`` (``{name: value}``) as a level-5 file, optionally zlib-compressed."""
    header = b'MATLAB 5.0 MAT-file, written by the lrda_ros tests'.ljust(116, b' ')
    header += b'\0' * 8 + struct.pack('<H', 0x0100) + b'IM'
    body = b''
    for name, value in variables.items():
        element = matrix(name, value, (stored_as or {}).get(name))
        if compress:
            packed = zlib.compress(element)
            element = struct.pack('<II', 15, len(packed)) + packed
        body += element
    Path(path).write_bytes(header + body)
