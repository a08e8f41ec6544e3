"""pyarrow columns as numpy arrays, as the map step reads them (text that is not UTF-8 kept as lone surrogates)."""

from __future__ import annotations

import numpy as np

from ._cell_codes import TEXT_CELL_CHARS

__all__ = ["Fallback", "arrow_ints", "text_cells", "to_numpy"]


class Fallback(Exception):
    """pyarrow's typed CSV reading met a cell or a row it does not take: read again with the stdlib reader.

    The stdlib reader takes every record pyarrow takes and more (malformed
    rows, undecodable text, cells that are not plain integers), giving the
    same cells, so which reader read a file never shows in the result.
    """


def to_numpy(arr) -> np.ndarray:
    """A pyarrow array as numpy, as ``ChunkedArray.to_numpy`` gives it, but an int column with nulls exactly.

    An integer column holding nulls is an object array of Python ints and
    None (``to_numpy`` would give floats, which round integers beyond 2**53
    and read differently as labels: a cell's value would depend on whether
    its batch holds a null).  A text column holding bytes that are not
    UTF-8 (a Parquet writer need not check) gives them as lone surrogates,
    as the CSV reader does: an invalid cell, never a failure to read.
    """
    import pyarrow as pa

    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    dtype = _NUMERIC.get(str(arr.type))
    if dtype is not None and arr.null_count == 0:
        # a read-only view of the values; to_numpy (even zero_copy_only=True) imports pandas: 0.25 s, 50 MiB
        data = arr.buffers()[1]
        return np.frombuffer(data, dtype=dtype, count=len(arr), offset=arr.offset * dtype.itemsize)
    if pa.types.is_integer(arr.type):
        return np.array(arr.to_pylist(), dtype=object)
    try:
        return arr.to_numpy(zero_copy_only=False)
    except (pa.ArrowException, UnicodeDecodeError):
        text = {str(pa.string()): pa.binary(), str(pa.large_string()): pa.large_binary()}.get(str(arr.type))
        if text is None:
            raise
        return np.array([None if v is None else v.decode("utf-8", "surrogateescape")
                         for v in arr.view(text).to_pylist()], dtype=object)


def text_cells(col) -> np.ndarray:
    """A pyarrow text column (valid UTF-8, no nulls; plain or dictionary) as a numpy text array.

    The cells are what ``to_numpy`` gives (one str each) put in a numpy
    text array, as the map step does with them: each distinct value is
    made a str once (the CSV reader parses text columns as dictionaries),
    not each cell.  Cells longer than :data:`TEXT_CELL_CHARS` (which the
    map step reads one by one) keep the per-cell path.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(col.type):
        enc = col
    elif pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        enc = pc.dictionary_encode(col)
    else:
        return to_numpy(col)
    if len(col) == 0 or col.null_count:
        return to_numpy(col)
    values = enc.dictionary
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        return to_numpy(col)
    if len(values) and pc.max(pc.utf8_length(values)).as_py() > TEXT_CELL_CHARS:
        return to_numpy(col)
    table = np.array(values.to_pylist(), dtype=str)
    return table[to_numpy(enc.indices)]


_NUMERIC = {name: np.dtype(name) for name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                              "uint64")}
_NUMERIC.update({"float": np.dtype(np.float32), "double": np.dtype(np.float64)})


def arrow_ints(col, check: bool = True):
    """A pyarrow text column of plain integers as int64, else :class:`Fallback` (the text path reads it).

    pyarrow's integer parser takes what Python's ``int`` takes but for
    surrounding spaces, underscores and a ``+`` (refused: the text path
    then reads them as ``int`` does) and hexadecimal, ``0x1f`` (taken as
    31: refused here, as any cell with an ``x``, so that the value is read
    as the text path reads it, and refused).  ``check=False`` when the
    text the column was parsed from holds no ``0x`` nor ``0X`` (see
    :class:`Feed`): no cell can then be read as hexadecimal.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if check and _has_x(col.buffers()[2]):
        raise Fallback()
    return pc.cast(col, pa.int64())  # a cell that is not an integer: ArrowInvalid, then Fallback


#: Bytes of a text buffer looked at a time by :func:`_has_x`: its temporaries stay this small.
_X_SCAN_BYTES = 1 << 16


def _has_x(buf) -> bool:
    """Whether a buffer (a pyarrow text column's data) holds an ``x`` or an ``X``, without copying it."""
    if buf is None or not buf.size:
        return False
    view = np.frombuffer(buf, dtype=np.uint8)
    tmp = np.empty(min(view.size, _X_SCAN_BYTES), dtype=np.uint8)
    for start in range(0, view.size, _X_SCAN_BYTES):
        part = view[start:start + _X_SCAN_BYTES]
        low = np.bitwise_or(part, 0x20, out=tmp[:part.size])
        if (low == 0x78).any():
            return True
    return False


