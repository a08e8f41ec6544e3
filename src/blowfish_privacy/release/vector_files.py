"""The files of a release's long vectors: CSV (through Arrow when pyarrow is installed) and Parquet.

Vectors longer than the runner's inline limit are written beside the JSON
document, one column per vector, one row per index; the text (or the
Parquet bytes) depends on the vectors alone, so ``blowfish ledger export``
writes the same files again.
"""

from __future__ import annotations

import codecs
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..errors import ExportError

__all__ = ["ARROW_CSV_ROWS", "CSV_ROWS", "CSV_THREADS", "PARQUET_ROWS", "write_csv", "write_csv_reference",
           "write_parquet"]

#: Rows per row group of a Parquet vectors file.
PARQUET_ROWS = 1 << 20

#: Rows per block of the reference (pure Python) CSV writer: each column is
#: formatted a block at a time, from Python numbers (``tolist``) rather than
#: numpy scalars.
CSV_ROWS = 1 << 16

#: Rows per block of the Arrow CSV writer (about 20 MB of text per column).
ARROW_CSV_ROWS = 1 << 20

#: Blocks the Arrow CSV writer formats at the same time.
CSV_THREADS = 2

# The CSV writer.  The text is fixed (the reference writer below says what it
# is: integer-valued floats as integers, other floats by ``repr``), the way
# of producing it is chosen by measurement (benchmarks/bench_release.py).
# Arrow's cast of float64 to string gives the same shortest round-trip
# digits as ``repr`` but other notation: exponents as ``e-7`` (``repr``:
# ``e-07``), ``0.00001`` (``repr``: ``1e-05``), ``1e+15`` and
# ``9.007199254740994e+15`` for integer-valued floats (``repr(int(v))``: all
# digits), ``-0`` (``0``); it writes integer-valued floats without ``.0``, as
# ``repr(int(v))`` does.  So a float column is cast once and only the cells
# whose text holds an ``e``, is ``-0``, is not finite, or is a fraction below
# 1e-4 are formatted again in Python (none in a CDF of counts); a column of
# integer-valued floats below 2^63 is cast as int64 (3x faster than the float
# cast), and a column made of runs of equal values (a CDF's flats after
# isotonic regression) is cast once per run and expanded with ``take``.
# Measured, 10^7 values, 2 shared cores (loaded), best of 3, against
# ``pyarrow.csv.write_csv`` of the same float64 vector: the reference writer
# (``repr`` per value) 5.1x (integer-valued) and 4.7x (fractional, all
# distinct) its time; this writer 0.51x and 1.18x (Arrow's float cast is
# most of both).  The whole ``blowfish release`` of a CDF over 10^7 cells from
# 10^6 rows went from 5.2x to 1.4x an insecure pyarrow + numpy script writing
# the same CSV.  pyarrow is optional: the reference writer is used without
# it, and for columns of other kinds (labels, objects).


def write_csv(fh, vectors: dict) -> None:
    """One column per vector, one row per index (shorter vectors leave empty
    cells); integer-valued floats as integers, other floats by ``repr``.

    The same text as :func:`write_csv_reference`, through Arrow when
    pyarrow is installed and every vector holds numbers or booleans.
    """
    cols = [np.asarray(vectors[n]) for n in vectors]
    if not cols or any(c.dtype.kind not in "fiub" for c in cols):
        return write_csv_reference(fh, vectors)
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.csv as pcsv

        options = pcsv.WriteOptions(include_header=False, quoting_style="none")
    except (ImportError, TypeError):  # no pyarrow (it comes with the dask / test extras), or one too old
        return write_csv_reference(fh, vectors)
    length = max(c.size for c in cols)
    fh.write(",".join(vectors) + "\n")
    flat = [c.reshape(-1) for c in cols]
    names = [f"c{j}" for j in range(len(cols))]  # never written (no header): any distinct names
    raw = getattr(fh, "buffer", None)  # bytes straight to the file when its text is UTF-8 (Arrow's is ASCII)
    if raw is not None and codecs.lookup(getattr(fh, "encoding", None) or "ascii").name not in ("utf-8", "ascii"):
        raw = None

    def block(i0):
        i1 = min(i0 + ARROW_CSV_ROWS, length)
        table = pa.table([_arrow_cells(c[i0:i1], i1 - i0, pa, pc) for c in flat], names=names)
        sink = pa.BufferOutputStream()
        pcsv.write_csv(table, sink, options)
        return sink.getvalue()

    def put(data):
        if raw is not None:
            fh.flush()
            raw.write(memoryview(data))
        else:  # a text stream without a byte buffer (io.StringIO): ASCII text either way
            fh.write(data.to_pybytes().decode("ascii"))

    # two blocks formatted at a time (Arrow's casts release the GIL), written in order: at most three
    # blocks of text in memory
    with ThreadPoolExecutor(max_workers=CSV_THREADS) as pool:
        pending: deque = deque()
        for i0 in range(0, length, ARROW_CSV_ROWS):
            pending.append(pool.submit(block, i0))
            if len(pending) > CSV_THREADS:
                put(pending.popleft().result())
        while pending:
            put(pending.popleft().result())


def _arrow_cells(part: np.ndarray, rows: int, pa, pc):
    """The CSV cells of ``part`` as an Arrow string array of ``rows`` entries (nulls, written empty, past
    ``part``'s end): the text of :func:`_cells`."""
    if part.dtype.kind == "b":
        cells = pc.if_else(pa.array(part), "True", "False")
    elif part.dtype.kind in "iu":
        cells = pc.cast(pa.array(part), pa.string())
    else:
        x = part.astype(np.float64, copy=False)
        starts = np.empty(x.size, dtype=bool)
        starts[:1] = True
        np.not_equal(x[1:], x[:-1], out=starts[1:])  # -0.0 == 0.0: both are written 0; NaN starts a run
        if x.size >= 1024 and 4 * np.count_nonzero(starts) <= x.size:  # runs of equal values (a CDF's flats)
            cells = pc.take(_arrow_float_cells(x[starts], pa, pc), pa.array(np.cumsum(starts) - 1))
        else:
            cells = _arrow_float_cells(x, pa, pc)
    if len(cells) < rows:
        cells = pa.concat_arrays([cells, pa.nulls(rows - len(cells), pa.string())])
    return cells


def _arrow_float_cells(x: np.ndarray, pa, pc):
    """The cells of the float64 vector ``x`` (Arrow strings): Arrow's text, with the cells where it is not
    ``repr``'s (see the comment above :func:`write_csv`) formatted by :func:`_cell`."""
    finite = np.isfinite(x)
    whole = finite & (np.floor(x) == x)
    if whole.all() and (x.size == 0 or np.abs(x).max() < 2.0**63):
        return pc.cast(pa.array(x.astype(np.int64)), pa.string())
    cells = pc.cast(pa.array(x), pa.string())
    offsets = np.frombuffer(cells.buffers()[1], dtype=np.int32, count=len(cells) + 1, offset=cells.offset * 4)
    text = np.frombuffer(cells.buffers()[2], dtype=np.uint8, count=int(offsets[-1]))
    at = np.flatnonzero(text == ord("e"))
    fix = ~finite  # inf, -inf, nan: Arrow's text is repr's, but a handful of cells is not worth a doubt
    if at.size:  # the rows whose text has an exponent
        fix[np.searchsorted(offsets, at, side="right") - 1] = True
    with np.errstate(invalid="ignore"):
        mag = np.abs(x)
        fix |= (x == 0) & np.signbit(x)  # Arrow: -0
        fix |= whole & (mag >= 2.0**53)  # the exact integer, not the shortest digits
        fix |= ~whole & (mag < 1e-4)  # repr: 1e-05, Arrow: 0.00001
    rows = np.flatnonzero(fix)
    if rows.size == 0:
        return cells
    again = pa.array([_cell(v) for v in x[rows].tolist()], pa.string())
    return pc.replace_with_mask(cells, pa.array(fix), again)


def write_parquet(fh, vectors: dict) -> None:
    """One column per vector (named as in the CSV), one row per index; shorter vectors padded with nulls.

    Numbers and booleans keep their type (float64 values exactly, not as
    text); other kinds are written as the CSV's text.  Snappy-compressed row
    groups of :data:`PARQUET_ROWS` rows; the bytes depend on the vectors and
    the pyarrow version only, so ``blowfish ledger export`` writes the same
    file again.  pyarrow is checked when the spec is read (``run.vectors``).
    """
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:  # a ledger export on a machine without pyarrow
        raise ExportError("--out: this run's long vectors are Parquet (run.vectors = \"parquet\"), which needs "
                          "pyarrow: pip install 'blowfish-privacy[parquet]'; nothing of them was written") from None
    cols = {n: np.asarray(v).reshape(-1) for n, v in vectors.items()}
    length = max(c.size for c in cols.values())
    arrays = []
    for c in cols.values():
        arr = pa.array(c) if c.dtype.kind in "fiub" else pa.array(_cells(c, 0, c.size), pa.string())
        if len(arr) < length:
            arr = pa.concat_arrays([arr, pa.nulls(length - len(arr), arr.type)])
        arrays.append(arr)
    pq.write_table(pa.table(arrays, names=list(cols)), fh, compression="snappy", row_group_size=PARQUET_ROWS)


def write_csv_reference(fh, vectors: dict) -> None:
    """The CSV text, one Python string per cell (:func:`_cells`): the writer without pyarrow, the oracle of
    the Arrow writer's tests."""
    names = list(vectors)
    cols = [np.asarray(vectors[n]) for n in names]
    length = max(c.size for c in cols)
    fh.write(",".join(names) + "\n")
    for i0 in range(0, length, CSV_ROWS):
        i1 = min(i0 + CSV_ROWS, length)
        parts = [_cells(c, i0, i1) for c in cols]
        fh.write("\n".join(map(",".join, zip(*parts))) + "\n")


def _cells(c: np.ndarray, i0: int, i1: int) -> list:
    """The CSV cells of c[i0:i1] (empty beyond c's end)."""
    part = c.reshape(-1)[i0:i1]
    pad = [""] * (i1 - i0 - part.size)
    if part.dtype.kind == "f":
        vals = part.tolist()
        out = list(map(repr, vals))
        for j in np.flatnonzero(np.isfinite(part) & (np.floor(part) == part)).tolist():
            out[j] = repr(int(vals[j]))
        return out + pad
    if part.dtype.kind in "iub":
        return list(map(str, part.tolist())) + pad
    return [_cell(v) for v in part.tolist()] + pad


def _cell(v) -> str:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float):
        return repr(int(v)) if v.is_integer() else repr(v)
    return str(v)
