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
A small reader of MATLAB level-5 ``.mat`` files (no SciPy needed).

Two benchmark files come in this format: NYUv2's ``splits.mat`` (``trainNdxs`` / ``testNdxs``)
and iBims-1's per-image ``ibims1_core_mat/<name>.mat`` (a struct ``data`` with ``rgb``,
``depth``, ``mask_invalid``, ``mask_transp``, ``calib``, ...). Layout from MathWorks'
"MAT-File Format" (level 5): a 128-byte header (text, subsystem offset, version 0x0100, the
endian indicator ``IM``/``MI``), then data elements, each an 8-byte tag (type, byte count) or a
4-byte "small element" tag, padded to 8 bytes; ``miCOMPRESSED`` elements are zlib streams of
further elements. Arrays are stored column-major and are returned as numpy arrays in their MATLAB
class (logical as bool, char as str); structs as ``dict`` (1x1) or a list of dicts; cells as a
list. Sparse and object arrays are not supported (an error names the variable). MATLAB 7.3 files
are HDF5 and are read with h5py instead (NYUv2's ``nyu_depth_v2_labeled.mat``).
"""

from __future__ import annotations

from pathlib import Path
import struct
from typing import Any
import zlib

import numpy as np

from ..errors import InputError

# Data element types (MAT-File Format, table 1-1).
_MI_DTYPES = {1: 'i1', 2: 'u1', 3: 'i2', 4: 'u2', 5: 'i4', 6: 'u4', 7: 'f4', 9: 'f8', 12: 'i8',
              13: 'u8', 16: 'u1', 17: 'u2', 18: 'u4'}
_MI_MATRIX, _MI_COMPRESSED = 14, 15
# Array classes (table 1-3) and the numpy type MATLAB gives them.
_MX_CELL, _MX_STRUCT, _MX_OBJECT, _MX_CHAR, _MX_SPARSE = 1, 2, 3, 4, 5
_MX_NUMERIC = {6: 'f8', 7: 'f4', 8: 'i1', 9: 'u1', 10: 'i2', 11: 'u2', 12: 'i4', 13: 'u4',
               14: 'i8', 15: 'u8'}
_LOGICAL_FLAG, _COMPLEX_FLAG = 0x02, 0x08


class MatFileError(InputError):
    """A ``.mat`` file cannot be read; the message names the file (``field``: the variable)."""


class _Reader:
    def __init__(self, data: bytes, order: str, path: Path) -> None:
        self.data, self.order, self.path = data, order, path

    def error(self, message: str, variable: str | None = None) -> MatFileError:
        where = f' (variable {variable!r})' if variable else ''
        return MatFileError(f'{self.path}: {message}{where}', field=variable)

    def element(self, pos: int) -> tuple[int, bytes, int]:
        """Return (type, payload, position of the next element) of the element at ``pos``."""
        if pos + 8 > len(self.data):
            raise self.error(f'truncated data element at byte {pos}')
        first, second = struct.unpack_from(self.order + 'II', self.data, pos)
        if first >> 16:  # small data element: type and size packed in the first word
            kind, size = first & 0xFFFF, first >> 16
            if size > 4:
                raise self.error(f'bad small data element at byte {pos}')
            return kind, self.data[pos + 4:pos + 4 + size], pos + 8
        kind, size = first, second
        end = pos + 8 + size
        if end > len(self.data):
            raise self.error(f'truncated data element at byte {pos} ({size} bytes announced)')
        # Compressed elements are not padded; all others end on an 8-byte boundary.
        following = end if kind == _MI_COMPRESSED else pos + 8 + ((size + 7) // 8) * 8
        return kind, self.data[pos + 8:end], following

    def numbers(self, kind: int, payload: bytes) -> np.ndarray:
        if kind not in _MI_DTYPES:
            raise self.error(f'unsupported data type {kind}')
        return np.frombuffer(payload, dtype=np.dtype(_MI_DTYPES[kind]).newbyteorder(self.order))

    def matrix(self, payload: bytes) -> tuple[str, Any]:
        """Decode an ``miMATRIX`` payload into (name, value)."""
        if not payload:
            return '', np.zeros((0, 0))
        sub = _Reader(payload, self.order, self.path)
        kind, flags_raw, pos = sub.element(0)
        flags = sub.numbers(kind, flags_raw)
        mx_class, flag_bits = int(flags[0]) & 0xFF, (int(flags[0]) >> 8) & 0xFF
        kind, dims_raw, pos = sub.element(pos)
        dims = tuple(int(d) for d in sub.numbers(kind, dims_raw))
        kind, name_raw, pos = sub.element(pos)
        name = bytes(name_raw).decode('ascii', 'replace')
        count = int(np.prod(dims)) if dims else 0
        if mx_class in _MX_NUMERIC:
            kind, real, pos = sub.element(pos)
            values = sub.numbers(kind, real).astype(_MX_NUMERIC[mx_class])
            if flag_bits & _COMPLEX_FLAG:
                kind, imag, pos = sub.element(pos)
                values = values + 1j * sub.numbers(kind, imag)
            if flag_bits & _LOGICAL_FLAG:
                values = values != 0
            return name, self._shape(values, dims, name)
        if mx_class == _MX_CHAR:
            kind, chars, pos = sub.element(pos)
            codes = sub.numbers(kind, chars)
            if kind == 16:  # UTF-8 bytes
                return name, bytes(codes).decode('utf-8', 'replace')
            grid = self._shape(codes, dims, name)
            rows = np.atleast_2d(grid)
            return name, '\n'.join(''.join(chr(c) for c in row) for row in rows)
        if mx_class == _MX_STRUCT:
            kind, length_raw, pos = sub.element(pos)
            length = int(sub.numbers(kind, length_raw)[0])
            kind, names_raw, pos = sub.element(pos)
            raw = bytes(names_raw)
            fields = [raw[i:i + length].split(b'\0')[0].decode('ascii', 'replace')
                      for i in range(0, len(raw), length)] if length else []
            records = []
            for _ in range(count):
                record = {}
                for field_name in fields:
                    kind, field_payload, pos = sub.element(pos)
                    if kind != _MI_MATRIX:
                        raise self.error(f'struct field {field_name!r} is not an array', name)
                    record[field_name] = sub.matrix(field_payload)[1]
                records.append(record)
            return name, records[0] if count == 1 else records
        if mx_class == _MX_CELL:
            cells = []
            for _ in range(count):
                kind, cell_payload, pos = sub.element(pos)
                cells.append(sub.matrix(cell_payload)[1])
            return name, cells
        raise self.error(f'unsupported array class {mx_class} (sparse/object arrays are not '
                         'read)', name)

    def _shape(self, values: np.ndarray, dims: tuple[int, ...], name: str) -> np.ndarray:
        if values.size != int(np.prod(dims)):
            raise self.error(f'{values.size} values for an array of size {dims}', name)
        return values.reshape(dims, order='F')


def read_mat(path: str | Path) -> dict[str, Any]:
    """
    Read every variable of a MATLAB level-5 ``.mat`` file into ``{name: value}``.

    :raises MatFileError: (an :class:`InputError` naming the file) for a file that is not
        level 5 (e.g. MATLAB 7.3/HDF5: use h5py), is truncated, or holds an unsupported type.
    """
    path = Path(path)
    data = path.read_bytes()
    if data[:8] == b'\x89HDF\r\n\x1a\n' or data[512:520] == b'\x89HDF\r\n\x1a\n':
        raise MatFileError(f'{path}: a MATLAB 7.3 (HDF5) file; read it with h5py', field=None)
    if len(data) < 128 or data[126:128] not in (b'IM', b'MI'):
        raise MatFileError(f'{path}: not a MATLAB level-5 .mat file (no endian indicator at '
                           'byte 126)')
    order = '<' if data[126:128] == b'IM' else '>'
    reader = _Reader(data, order, path)
    variables: dict[str, Any] = {}
    pos = 128
    while pos + 8 <= len(data):
        kind, payload, pos = reader.element(pos)
        if kind == _MI_COMPRESSED:
            try:
                inner = zlib.decompress(payload)
            except zlib.error as error:
                raise reader.error(f'corrupt compressed element: {error}') from None
            kind, payload, _ = _Reader(inner, order, path).element(0)
            reader_inner = _Reader(inner, order, path)
            name, value = reader_inner.matrix(payload)
        elif kind == _MI_MATRIX:
            name, value = reader.matrix(payload)
        else:
            continue  # subsystem data and the like carry no variables
        variables[name] = value
    return variables
