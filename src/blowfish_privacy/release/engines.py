"""Exact aggregation engines: the local one (streaming, bounded batches) and Dask.

Both compute the same exact aggregates with the same map step,
:func:`partition_aggregates` (per partition: encode the rows into flat
domain indices and ``numpy.bincount`` them), and a sum as the reduce step,
so their results are identical.  Noise is never added here: the driver
adds it once, after the budget is spent.

Values outside the domain are clamped, dropped or refused as the spec's
``invalid`` says (:func:`partition_aggregates`); no message made from the
data quotes a value, a row number or a count.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import sys
import zlib
from importlib import resources
from pathlib import Path

import numpy as np

from .._progress import progress_bar
from ..domain import Domain, Ordinal
from ..errors import DataError, InvalidColumn  # noqa: F401  (re-exported)

__all__ = ["DataError", "InvalidColumn", "INVALID_MODES", "Need", "LocalEngine", "DaskEngine",
           "partition_aggregates", "read_table"]

_CHUNK_ROWS = 1 << 22


# A need is ("histogram", attribute names) or ("column", (attribute name,)).
Need = tuple

#: What to do with a value outside its attribute's domain (``dataset.invalid``).
INVALID_MODES = ("error", "clamp", "drop")

# Saturation bound for ordinal values: beyond every domain bound (|bound| <= 2**62 - 1).
_SAT = 2**62


def _rule(attr) -> str:
    if isinstance(attr, Ordinal):
        return f"has values outside the domain or not integers (allowed: integers in [{attr.low}, {attr.high}])"
    labels = list(attr.labels)
    shown = repr(labels) if len(labels) <= 8 else f"{len(labels)} labels"
    return f"has values that are not among the labels {shown}"


def _parse_int(v):
    """An integer cell as an int (saturated to +-2**62), or None (missing, not a number, not integral)."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return max(-_SAT, min(_SAT, v))
    if isinstance(v, bytes):
        v = v.decode("utf-8", "replace")
    if isinstance(v, str):
        try:
            return max(-_SAT, min(_SAT, int(v.strip())))
        except ValueError:
            try:
                v = float(v)
            except ValueError:
                return None
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        return int(max(-float(_SAT), min(float(_SAT), v)))
    return None


def _ordinal_ints(arr: np.ndarray):
    """``(int64 values, mask of cells that are not integers or None)``; placeholders are 0."""
    kind = arr.dtype.kind
    if kind == "i":
        return arr.astype(np.int64, copy=False), None
    if kind == "u":
        return (np.minimum(arr, np.uint64(_SAT)) if arr.dtype == np.uint64 else arr).astype(np.int64), None
    if kind == "f":
        ok = np.isfinite(arr)
        ok &= arr == np.floor(np.where(ok, arr, 0.0))
        ints = np.clip(np.where(ok, arr, 0.0), -float(_SAT), float(_SAT)).astype(np.int64)
        return ints, None if ok.all() else ~ok
    if kind in "US":
        try:
            return _ordinal_ints(arr.astype(np.int64))
        except (ValueError, TypeError, OverflowError):
            pass
        try:
            return _ordinal_ints(arr.astype(np.float64))
        except (ValueError, TypeError, OverflowError):
            pass
    elif kind == "O":
        vals = arr.tolist()
        if vals and all(type(v) is str for v in vals):
            return _ordinal_ints(np.array(vals, dtype=str))
    parsed = [_parse_int(v) for v in arr.tolist()]
    bad = np.fromiter((v is None for v in parsed), dtype=bool, count=len(parsed))
    ints = np.fromiter((0 if v is None else v for v in parsed), dtype=np.int64, count=len(parsed))
    return ints, bad if bad.any() else None


def _ordinal_codes(attr, arr: np.ndarray, mode: str):
    """``(clamped values, codes, rows to drop or None)`` of an ordinal column."""
    ints, not_int = _ordinal_ints(arr)
    low, high = attr.low, attr.high
    if not_int is not None:
        ints = np.where(not_int, low, ints)
    out = None
    if ints.size and (int(ints.min()) < low or int(ints.max()) > high):
        out = (ints < low) | (ints > high)
        ints = np.clip(ints, low, high)
    invalid = not_int is not None or out is not None
    drop = not_int
    if mode == "drop" and out is not None:
        drop = out if drop is None else drop | out
    codes = ints if low == 0 and attr.bin_width == 1 else ints - low
    if attr.bin_width != 1:
        codes = codes // attr.bin_width
    return ints, codes, drop, invalid


def _label_code(attr, v):
    """The code of one cell of a categorical column, or None."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bool):
        return None
    if isinstance(v, float) and not math.isfinite(v):
        return None
    code = attr.code_of(v)
    if code is not None:
        return code
    if isinstance(v, str):
        n = _parse_int(v)
        return None if n is None else attr.code_of(n)
    if isinstance(v, int):
        return attr.code_of(str(v))
    return None


def _categorical_codes(attr, arr: np.ndarray):
    """``(codes, rows to drop or None)`` of a categorical column."""
    labels = attr.labels
    str_labels = all(type(v) is str for v in labels)
    int_labels = all(type(v) is int for v in labels)
    kind = arr.dtype.kind
    if kind == "O":
        vals = arr.tolist()
        if vals and all(type(v) is str for v in vals):
            arr, kind = np.array(vals, dtype=str), "U"
    if int_labels and kind in "US":
        for dtype in (np.int64, np.float64):
            try:
                arr, kind = arr.astype(dtype), np.dtype(dtype).kind
                break
            except (ValueError, TypeError, OverflowError):
                pass
    if str_labels and kind in "iu":
        arr, kind = arr.astype(str), "U"
    if arr.dtype == np.uint64:
        arr = np.minimum(arr, np.uint64(_SAT)).astype(np.int64)
    if (str_labels and kind == "U") or (int_labels and kind in "iuf"):
        lab = np.array(labels, dtype=str if str_labels else np.int64)
        order = np.argsort(lab, kind="stable")
        srt = lab[order]

        def lookup(probe):
            pos = np.minimum(np.searchsorted(srt, probe), len(srt) - 1) if probe.size else np.zeros(0, np.int64)
            return order[pos].astype(np.int64), srt[pos] == probe

        codes, ok = lookup(arr)
        if kind == "U" and not ok.all():  # cells with surrounding spaces (the local CSV reader strips them)
            miss = ~ok
            codes[miss], ok[miss] = lookup(np.char.strip(arr[miss]))
    else:
        cache: dict = {}
        found = []
        for v in arr.tolist():
            try:
                key = (type(v), v)  # True and 1 are equal keys, but not the same cell
                code = cache[key] if key in cache else cache.setdefault(key, _label_code(attr, v))
            except TypeError:  # unhashable
                code = None
            found.append(code)
        ok = np.fromiter((c is not None for c in found), dtype=bool, count=len(found))
        codes = np.fromiter((0 if c is None else c for c in found), dtype=np.int64, count=len(found))
    if ok.all():
        return codes, None
    return np.where(ok, codes, 0), ~ok


def _parse_column(attr, col: str, values, mode: str):
    """``(values, codes, rows to drop or None)`` of one column under ``mode``."""
    arr = np.asarray(_values(values)).reshape(-1)
    if isinstance(attr, Ordinal):
        ints, codes, drop, invalid = _ordinal_codes(attr, arr, mode)
    else:
        ints, (codes, drop) = None, _categorical_codes(attr, arr)
        invalid = drop is not None
    if invalid and mode == "error":
        raise InvalidColumn([(attr.name, col, _rule(attr))])
    return ints, codes, drop


def _fold_counts(acc: np.ndarray, flat: np.ndarray) -> None:
    """Add the counts of the flat indices ``flat`` into the histogram ``acc``, in place."""
    if flat.size * 4 >= acc.size:
        acc += np.bincount(flat, minlength=acc.size).astype(np.int64, copy=False)
    elif flat.size:
        np.add.at(acc, flat, 1)  # a small batch into a large domain: no temporary of the domain's size


def partition_aggregates(columns: dict, plan: list, *, into: list | None = None) -> list:
    """The map step: exact aggregates of one partition.

    ``columns`` maps column names to arrays (or a pandas DataFrame);
    ``plan`` lists ``(need, domain, column names, filters, modes)`` (see
    :func:`plan_for`), each filter ``(attribute, column name, code, mode)``
    keeping the rows whose attribute has that code.  Every value of every
    column a need uses is checked against its attribute under its mode
    (``"error"``: :class:`InvalidColumn`; ``"clamp"``: ordinal values into
    ``[low, high]``, other invalid cells dropped; ``"drop"``: the row
    dropped), so a row invalid only in a column a need does not use never
    affects it.  A histogram need gives an int64 array of ``domain.size``
    counts, a column need the column's (clamped) values as float64.

    With ``into`` (the streaming reader's accumulators, one per need: an
    int64 histogram, or a list of float64 arrays for a column need) the
    partition is folded into them in place and ``into`` is returned; a
    histogram then costs no temporary of the domain's size for a small
    partition.  After an :class:`InvalidColumn` the accumulators are
    partly updated and must be discarded.
    """
    out = []

    def emit_hist(flat, size):
        if into is None:
            out.append(np.bincount(flat, minlength=size).astype(np.int64, copy=False))
        else:
            _fold_counts(into[len(out)], flat)
            out.append(into[len(out)])

    def emit_column(values):
        if into is not None:
            into[len(out)].append(values)
            values = into[len(out)]
        out.append(values)

    parsed: dict = {}
    failed: list = []

    def parse(attr, col, mode):
        key = (attr, col, mode)
        if key not in parsed:
            try:
                parsed[key] = _parse_column(attr, col, columns[col], mode)
            except InvalidColumn as exc:  # go on: report every invalid column, not the first
                failed.extend(exc.entries)
                parsed[key] = None
        return parsed[key]

    for need, domain, cols, filters, modes in plan:
        if need[0] == "histogram" and not filters:
            idx = _fast_index(domain, {a.name: _values(columns[c]) for a, c in zip(domain.attributes, cols)})
            if idx is not None:  # integer columns, every value inside the domain
                emit_hist(idx, domain.size)
                continue
        got = [parse(attr, col, mode) for attr, col, _, mode in filters]
        got += [parse(a, c, m) for a, c, m in zip(domain.attributes, cols, modes)]
        if any(g is None for g in got):
            out.append(None if into is None else into[len(out)])
            continue
        keep = None
        for (_, _, code, _), (_, codes, _) in zip(filters, got):
            keep = codes == code if keep is None else keep & (codes == code)
        for _, _, drop in got:
            if drop is not None:
                keep = ~drop if keep is None else keep & ~drop
        got = got[len(filters):]
        if need[0] == "histogram":
            flat = None
            for (_, codes, _), stride in zip(got, domain.strides):
                term = codes if stride == 1 else codes.astype(np.int64) * stride
                flat = term if flat is None else flat + term
            if keep is not None:
                flat = flat[keep]
            emit_hist(flat, domain.size)
        else:
            values = got[0][0]
            if values is None:  # a categorical column: its codes
                values = got[0][1]
            emit_column(np.asarray(values if keep is None else values[keep], dtype=np.float64))
    if failed:
        raise InvalidColumn(failed)
    return out


def _map(columns: dict, plan: list):
    """:func:`partition_aggregates`, with invalid columns as a value: ``("ok", list)`` or ``("invalid", entries)``."""
    try:
        return "ok", partition_aggregates(columns, plan)
    except InvalidColumn as exc:
        return "invalid", exc.entries


def _reduce(a, b):
    """:func:`combine` of two :func:`_map` results; the invalid columns of every partition are kept."""
    if a[0] == b[0] == "ok":
        return "ok", combine(a[1], b[1])
    return "invalid", tuple(sorted(set((a[1] if a[0] == "invalid" else ()) + (b[1] if b[0] == "invalid" else ()))))


def _unwrap(result) -> list:
    if result[0] == "invalid":
        raise InvalidColumn(result[1])
    return result[1]


def _int_range(attr):
    """``(low, high, bin_width)`` when the attribute's codes are integer arithmetic on its values."""
    if isinstance(attr, Ordinal):
        return attr.low, attr.high, attr.bin_width
    labels = attr.labels
    if all(type(v) is int for v in labels) and labels == tuple(range(labels[0], labels[0] + len(labels))):
        return labels[0], labels[-1], 1
    return None


def _fast_index(domain: Domain, data: dict):
    """Flat indices of integer columns by range checks and arithmetic, or None.

    None (the caller then uses :meth:`Domain.encode`) when a column is not
    an integer array, an attribute is not an integer range, or a value lies
    outside the domain.
    """
    flat = None
    owned = False  # flat is an array of ours (not a column of the data): added into in place
    for attr, stride in zip(domain.attributes, domain.strides):
        arr = data[attr.name]
        rng = _int_range(attr)
        if rng is None or not isinstance(arr, np.ndarray) or arr.dtype.kind not in "iu" or arr.size == 0:
            return None
        low, high, width = rng
        if int(arr.min()) < low or int(arr.max()) > high:
            return None
        if arr.dtype == np.uint64:
            arr = arr.astype(np.int64)  # in range, so exact
        fresh = False  # codes is an array of ours
        if low == 0 and width == 1:
            codes = arr
        else:
            codes, fresh = np.subtract(arr, low, dtype=np.int64), True
            if width != 1:
                codes //= width
        if stride != 1:
            if fresh:
                codes *= stride
            else:
                codes, fresh = np.multiply(codes, stride, dtype=np.int64), True
        # no copies beyond one int64 array per column (at most): these run on every batch of every row
        if flat is None:
            flat, owned = codes, fresh
        elif owned:
            np.add(flat, codes, out=flat, casting="unsafe")  # both integers inside the domain: exact
        elif fresh:
            np.add(codes, flat, out=codes, casting="unsafe")
            flat, owned = codes, True
        else:
            flat, owned = np.add(flat, codes, dtype=np.int64), True
    return flat


def _values(col):
    to_numpy = getattr(col, "to_numpy", None)
    return to_numpy() if to_numpy is not None else col


def combine(a: list, b: list) -> list:
    """The reduce step: add histograms, concatenate columns."""
    return [x + y if x.dtype == np.int64 else np.concatenate([x, y]) for x, y in zip(a, b)]


def plan_for(domain: Domain, columns: dict, needs, invalid="error") -> list:
    """The map plan of ``needs`` over ``domain``: ``(need, sub-domain, column names, filters, modes)`` each.

    A need is ``(aggregate, attribute names)`` or ``(aggregate, attribute
    names, where)`` with ``where`` a tuple of ``(attribute name, value)``.
    ``invalid`` is one of :data:`INVALID_MODES` for every attribute, or a
    mapping from attribute names to modes (missing names: ``"error"``).
    """
    def mode(name):
        m = invalid if isinstance(invalid, str) else invalid.get(name, "error")
        if m not in INVALID_MODES:
            raise ValueError(f"invalid must be one of {list(INVALID_MODES)}, got {m!r}")
        return m

    plan = []
    for need in needs:
        where = need[2] if len(need) > 2 else ()
        filters = []
        for name, value in where:
            attr = domain.attribute(name)
            filters.append((attr, columns[name], int(attr.codes_of([value])[0]), mode(name)))
        plan.append((need, Domain([domain.attribute(a) for a in need[1]]), tuple(columns[a] for a in need[1]),
                     tuple(filters), tuple(mode(a) for a in need[1])))
    return plan


def _plan(spec, needs) -> list:
    return plan_for(spec.domain, spec.columns, needs, getattr(spec, "invalid", None) or "error")


def _plan_columns(plan) -> list:
    return sorted({c for _, _, cols, flt, _ in plan for c in cols + tuple(f[1] for f in flt)})


# -- reading the data in bounded batches ---------------------------------------------------------------
#
# The local engine never holds the table: the needed columns are read in
# batches and folded into the aggregates (``partition_aggregates(...,
# into=...)``), so its peak memory is the aggregates plus one batch,
# whatever the number of rows.  A "column" need (pufferfish_sum) keeps the
# column's values, 8 bytes a row: only histograms are bounded.

#: Rows per batch of the Parquet reader and of the stdlib CSV reader (a few MiB of int64 columns).
BATCH_ROWS = 1 << 18
#: Bytes of CSV text per block of pyarrow's streaming CSV reader.  Its I/O thread reads up to 32 blocks
#: ahead of the parser, whatever we consume (a fixed queue, not an option: ARROW-12090), and page-cached
#: text arrives faster than it is parsed: with 16 MiB blocks that queue alone held up to 512 MiB, the
#: peak then growing with the file up to that size.  1 MiB blocks bound it to 32 MiB and parse as fast.
CSV_BLOCK_BYTES = 1 << 20
#: Bytes the Parquet reader reads at a time inside a column chunk (``ParquetFile(buffer_size=...)``):
#: pages are streamed, so a file written as one huge row group is bounded too.
PARQUET_BUFFER_BYTES = 1 << 20
#: Data smaller than this is read without a progress bar.
PROGRESS_MIN_BYTES = 1 << 26
#: Seconds to wait for a Dask scheduler (``--scheduler``) before giving up.
SCHEDULER_TIMEOUT = 5.0
#: Bytes of CSV text per Dask partition (the Dask engine's per-task bound).
DASK_CSV_BLOCKSIZE = "16MB"

_GZIP_PROBLEM = "is not a readable gzip file (truncated, damaged or not gzip-compressed)"


class _Fallback(Exception):
    """pyarrow's typed CSV reading met a cell or a row it does not take: read again with the stdlib reader."""


#: What :class:`_Table` yields, as ``(RESTART, 0)``, before reading a CSV file again from its start with the
#: stdlib reader after pyarrow's reader met a cell it does not take: whatever was folded so far is discarded.
RESTART = None


def _bundled_file(name: str):
    """A context manager giving the path of a bundled dataset (a gzip CSV)."""
    from .spec import BUNDLED

    return resources.as_file(resources.files("blowfish_privacy").joinpath("data", BUNDLED[name]))


def _bundled_text(name: str) -> str:
    from .spec import BUNDLED

    raw = resources.files("blowfish_privacy").joinpath("data", BUNDLED[name]).read_bytes()
    return gzip.decompress(raw).decode("utf-8-sig")


def _problem(spec, what: str, problem: str, key: str = "dataset.path") -> DataError:
    return DataError(f"{spec.path}: {key}: {what} {problem}")


def _have_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
        import pyarrow.csv  # noqa: F401
    except ImportError:
        return False
    return True


def _to_numpy(arr) -> np.ndarray:
    """A pyarrow array as numpy, as ``ChunkedArray.to_numpy`` gives it (nulls of an int column: NaN)."""
    import pyarrow as pa

    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    dtype = _NUMERIC.get(str(arr.type))
    if dtype is not None and arr.null_count == 0:
        # a read-only view of the values; to_numpy (even zero_copy_only=True) imports pandas: 0.25 s, 50 MiB
        data = arr.buffers()[1]
        return np.frombuffer(data, dtype=dtype, count=len(arr), offset=arr.offset * dtype.itemsize)
    return arr.to_numpy(zero_copy_only=False)


_NUMERIC = {name: np.dtype(name) for name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                              "uint64")}
_NUMERIC.update({"float": np.dtype(np.float32), "double": np.dtype(np.float64)})


def _arrow_ints(col):
    """A pyarrow text column of plain integers as int64, else :class:`_Fallback` (the text path reads it).

    pyarrow's integer parser takes what Python's ``int`` takes but for
    surrounding spaces, underscores and a ``+`` (refused: the text path
    then reads them as ``int`` does) and hexadecimal, ``0x1f`` (taken as
    31: refused here, as any cell with an ``x``, so that the value is read
    as the text path reads it, and refused).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    text = col.buffers()[2]
    if text is not None and ((np.frombuffer(text, dtype=np.uint8) | 0x20) == ord("x")).any():
        raise _Fallback()
    return pc.cast(col, pa.int64())  # a cell that is not an integer: ArrowInvalid, then _Fallback


class _Table:
    """The needed columns of a spec's table, read in batches of bounded size.

    Iterating gives ``({column name: numpy array}, bytes read so far)``;
    ``total`` is the size in bytes of what is read (the progress bar's scale).
    Every failure to read is a :class:`DataError` naming the spec file, the
    data file and the problem, never a value or a row.
    ``int_columns`` are read as int64 by pyarrow when every cell is a plain
    integer (else the file is read again as text, as the stdlib reader sees
    it); ``batch_rows`` and ``block_bytes`` bound a batch.
    """

    def __init__(self, spec, columns, *, int_columns=(), batch_rows=None, block_bytes=None, arrow=None):
        self.spec = spec
        self.columns = list(columns)
        self.int_columns = set(int_columns)
        self.batch_rows = batch_rows or BATCH_ROWS
        self.block_bytes = block_bytes or CSV_BLOCK_BYTES
        self.arrow = _have_pyarrow() if arrow is None else arrow
        src = spec.source
        if "bundled" in src:
            self.kind, self.what, self.key = "csv", f"bundled dataset {src['bundled']!r}", "dataset.bundled"
            with _bundled_file(src["bundled"]) as p:
                self.total = Path(p).stat().st_size
        else:
            self.kind, self.what, self.key = src["format"], repr(src["path"]), "dataset.path"
            if self.kind == "csv":
                self.total = Path(src["path"]).stat().st_size
            else:
                self.parts = _parquet_parts(spec, self.columns)
                self.total = sum(size for _, _, size in self.parts)

    def __iter__(self):
        if self.kind == "parquet":
            return self._parquet()
        return self._csv()

    # -- CSV --------------------------------------------------------------------------------------------
    def _csv(self):
        src = self.spec.source
        if "bundled" in src:
            with _bundled_file(src["bundled"]) as p:
                yield from self._csv_file(Path(p), True)
        else:
            path = Path(src["path"])
            yield from self._csv_file(path, path.name.lower().endswith(".gz"))

    def _csv_file(self, path: Path, gz: bool):
        header = self._header(path, gz)
        _check_columns(self.columns, header, self.spec, self.what)
        if self.arrow:
            started = False
            try:
                for item in self._csv_arrow(path, gz, header):
                    started = True
                    yield item
                return
            except _Fallback:
                if started:  # batches already given hold rows the stdlib reader reads again
                    yield RESTART, 0
        yield from self._csv_stdlib(path, gz, header)

    def _fail(self, problem: str) -> DataError:
        return _problem(self.spec, self.what, problem, self.key)

    def _read_error(self, exc, gz: bool) -> DataError:
        if isinstance(exc, UnicodeDecodeError):
            return self._fail("is not UTF-8 text (UnicodeDecodeError); save it as UTF-8")
        if gz and isinstance(exc, (OSError, EOFError, zlib.error)) and not isinstance(exc, PermissionError):
            return self._fail(_GZIP_PROBLEM)
        if isinstance(exc, csv.Error):
            return self._fail(f"is not well-formed CSV ({type(exc).__name__}; details withheld: they may quote "
                              "the data)")
        return self._fail(f"cannot be read ({type(exc).__name__}; details withheld: they may quote the data)")

    def _header(self, path: Path, gz: bool) -> list[str]:
        try:
            with open(path, "rb") as raw:
                if gz and raw.read(2) != b"\x1f\x8b":
                    raise self._fail("is named .gz but is not gzip-compressed")
                raw.seek(0)
                fh = gzip.GzipFile(fileobj=raw) if gz else raw
                line = fh.readline(1 << 20)
        except DataError:
            raise
        except (OSError, EOFError, zlib.error) as exc:
            if isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError)):
                raise self._fail(f"cannot be opened ({exc.strerror or type(exc).__name__})") from None
            raise self._read_error(exc, gz) from None
        if not line.strip(b"\r\n\t \xef\xbb\xbf"):
            raise self._fail("is empty (not even a header line)")
        if line.startswith((b"\xff\xfe", b"\xfe\xff")):
            raise self._fail("is UTF-16 text; save it as UTF-8")
        if b"\x00" in line:
            raise self._fail("is not CSV text (it holds NUL bytes: binary data, or UTF-16 without a byte-order mark)")
        try:
            text = line.decode("utf-8-sig")  # a byte-order mark (Excel) is not part of the first name
        except UnicodeDecodeError as exc:
            raise self._read_error(exc, gz) from None
        try:
            return [h.strip() for h in next(csv.reader([text]))]
        except (csv.Error, StopIteration) as exc:
            raise self._read_error(exc if isinstance(exc, csv.Error) else csv.Error(), gz) from None

    def _csv_arrow(self, path: Path, gz: bool, header: list[str]):
        import pyarrow as pa
        import pyarrow.csv as pcsv

        names = [f"c{i}" for i in range(len(header))]  # distinct, whatever the header holds
        pick = {c: names[header.index(c)] for c in self.columns}
        # every column as text: pyarrow's int64 parser also takes hexadecimal ('0x1f' is 31), which the text
        # path refuses; integer columns are cast below once no cell holds an x
        types = {pick[c]: pa.string() for c in self.columns}
        read = pcsv.ReadOptions(column_names=names, skip_rows=1, block_size=self.block_bytes, use_threads=True)
        parse = pcsv.ParseOptions(newlines_in_values=True)
        convert = pcsv.ConvertOptions(include_columns=list(dict.fromkeys(pick.values())), column_types=types,
                                      null_values=[], true_values=[], false_values=[], strings_can_be_null=False,
                                      quoted_strings_can_be_null=False)
        try:
            raw = pa.OSFile(str(path))
        except OSError as exc:
            raise self._read_error(exc, gz) from None
        try:
            try:
                stream = pa.CompressedInputStream(raw, "gzip") if gz else raw
                reader = pcsv.open_csv(stream, read_options=read, parse_options=parse, convert_options=convert)
                for batch in reader:
                    cols = {c: _to_numpy(_arrow_ints(batch.column(pick[c])) if c in self.int_columns
                                         else batch.column(pick[c])) for c in self.columns}
                    del batch  # only the numpy views (zero-copy) keep the batch's buffers alive
                    yield cols, raw.tell()
                    del cols
            except pa.ArrowInvalid:  # a cell that is not a plain integer, a short row, bad UTF-8 ...
                raise _Fallback() from None
            except (OSError, EOFError, pa.ArrowException) as exc:
                raise self._read_error(exc, gz) from None
        finally:
            raw.close()

    def _csv_stdlib(self, path: Path, gz: bool, header: list[str]):
        pos = [header.index(c) for c in self.columns]
        rows = self.batch_rows

        def batch(cols):
            return {c: np.array(v, dtype=str) for c, v in zip(self.columns, cols)}

        try:
            with open(path, "rb") as raw:
                fh = gzip.GzipFile(fileobj=raw) if gz else raw
                reader = csv.reader(io.TextIOWrapper(fh, encoding="utf-8-sig", newline=""))
                next(reader, None)  # the header
                cols, k = [[] for _ in pos], 0
                for row in reader:
                    if not row:
                        continue
                    for j, p in enumerate(pos):
                        cols[j].append(row[p].strip() if p < len(row) else "")
                    k += 1
                    if k == rows:
                        yield batch(cols), raw.tell()
                        cols, k = [[] for _ in pos], 0
                if k:
                    yield batch(cols), raw.tell()
        except (ValueError, EOFError, OSError, csv.Error, zlib.error) as exc:  # UnicodeDecodeError is a ValueError
            raise self._read_error(exc, gz) from None

    # -- Parquet ----------------------------------------------------------------------------------------
    def _parquet(self):
        import pyarrow as pa
        import pyarrow.parquet as pq

        done = 0
        for path, keys, size in self.parts:
            what = repr(path)
            try:
                pf = _parquet_file(pq, path)
                present = [c for c in self.columns if c not in keys]
                n_rows = max(pf.metadata.num_rows, 1)
                seen = 0
                for batch in pf.iter_batches(batch_size=self.batch_rows, columns=present, use_threads=True):
                    cols = {c: _to_numpy(batch.column(c)) for c in present}
                    for c in self.columns:
                        if c in keys:  # a hive partition key (folder name k=v): the same text on every row
                            cols[c] = np.full(batch.num_rows, keys[c])
                    seen += batch.num_rows
                    yield cols, done + size * min(seen, n_rows) // n_rows
            except (OSError, EOFError, ValueError, pa.ArrowException) as exc:
                raise _problem(self.spec, what, "holds damaged Parquet data (a page or its header cannot be "
                               f"decoded: {type(exc).__name__}; details withheld: they may quote the data)") from None
            done += size


def _parquet_file(pq, path):
    """A ``ParquetFile`` that streams: no pre-buffering, column chunks read ``PARQUET_BUFFER_BYTES`` at a time.

    pyarrow (>= 15) pre-buffers by default: ``iter_batches`` then first
    reads every requested column chunk of the whole file into memory.
    """
    kw = {"pre_buffer": False, "buffer_size": PARQUET_BUFFER_BYTES}
    try:
        return pq.ParquetFile(path, page_checksum_verification=True, **kw)
    except TypeError:  # an older pyarrow
        return pq.ParquetFile(path, **kw)


def _parquet_parts(spec, columns) -> list:
    """``(file, hive partition keys, size)`` of every file of the spec's Parquet source, each checked.

    Every file's footer is read here, before any row: a truncated or
    non-Parquet file and a file that lacks a needed column are reported
    with the file's name.
    """
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError(
            f"{spec.path}: dataset.path: reading Parquet needs pyarrow: pip install 'blowfish-privacy[dask]'"
        ) from None
    root = Path(spec.source["path"])
    if root.is_file():
        files = [(root, {})]
    elif root.is_dir():
        files = []
        for p in sorted(root.rglob("*")):
            rel = p.relative_to(root).parts
            if not p.is_file() or any(part.startswith(("_", ".")) for part in rel):
                continue  # metadata and hidden files, as pyarrow skips them
            keys = dict(part.split("=", 1) for part in rel[:-1] if "=" in part)
            files.append((p, keys))
        if not files:
            raise _problem(spec, repr(str(root)), "holds no Parquet files")
    else:
        raise _problem(spec, repr(str(root)), "cannot be opened (no such file or folder)")
    parts = []
    for p, keys in files:
        try:
            names = _parquet_file(pq, p).schema_arrow.names
            size = p.stat().st_size
        except PermissionError as exc:
            raise _problem(spec, repr(str(p)), f"cannot be opened ({exc.strerror})") from None
        except Exception:  # pyarrow raises many kinds; their text may quote the file
            raise _problem(spec, repr(str(p)), "is not a readable Parquet file (truncated, damaged or not "
                           "Parquet)") from None
        _check_columns(columns, list(names) + [k for k in keys if k not in names], spec, repr(str(p)))
        parts.append((str(p), {k: v for k, v in keys.items() if k not in names}, size))
    return parts


def _int_columns(plan) -> set:
    """Columns that only integer attributes read (ordinals, integer labels): pyarrow may read them as int64."""
    ints, other = set(), set()
    for _, domain, cols, filters, _ in plan:
        for attr, col in list(zip(domain.attributes, cols)) + [(f[0], f[1]) for f in filters]:
            integer = isinstance(attr, Ordinal) or all(type(v) is int for v in attr.labels)
            (ints if integer else other).add(col)
    return ints - other


def _fold(batches, plan, columns, bar=None) -> list:
    """The aggregates of ``plan`` over every batch of ``batches`` (``(columns, bytes read)`` pairs).

    Every batch is read, whatever an earlier one held, so the invalid
    columns reported do not depend on where the rows are.
    """
    acc = None
    invalid: set = set()
    last = 0
    for cols, done in batches:
        if cols is RESTART:  # the source is read again from its start
            acc = None
            invalid.clear()
            continue
        if acc is None:
            acc = [np.zeros(d.size, np.int64) if need[0] == "histogram" else [] for need, d, *_ in plan]
        try:
            partition_aggregates(cols, plan, into=acc)
        except InvalidColumn as exc:
            invalid.update(exc.entries)
        cols = None  # not kept alive while the next batch is read
        if bar is not None:
            mib = int(done) >> 20
            if mib > last:
                bar.advance(mib - last)
                last = mib
    if invalid:
        raise InvalidColumn(invalid)
    if acc is None:  # no rows: zero histograms, empty columns (through the map step, as any batch)
        return partition_aggregates({c: np.array([], dtype=str) for c in columns}, plan)
    return [a if isinstance(a, np.ndarray) else
            (np.concatenate(a) if a else np.zeros(0, np.float64)) for a in acc]


def _prefetch(batches, depth: int = 2):
    """The items of ``batches``, produced on a helper thread at most ``depth`` items ahead.

    Decoding the next batch (pyarrow, without the GIL) then overlaps the
    fold of this one (numpy): pyarrow's Parquet reader decodes only when
    asked.  Memory: ``depth + 2`` batches.  An exception of the producer is
    raised here; when the consumer stops early the producer stops too and
    closes ``batches``' iterator.
    """
    import queue
    import threading

    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(msg) -> bool:
        while not stop.is_set():
            try:
                q.put(msg, timeout=0.05)
                return True
            except queue.Full:
                pass
        return False

    def produce():
        it = iter(batches)
        try:
            for item in it:
                if not put(("item", item)):
                    return
            put(("end", None))
        except BaseException as exc:  # handed to the consumer, raised there
            put(("error", exc))
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()

    worker = threading.Thread(target=produce, name="blowfish-read", daemon=True)
    worker.start()
    try:
        while True:
            kind, item = q.get()
            if kind == "item":
                yield item
            elif kind == "end":
                return
            else:
                raise item
    finally:
        stop.set()
        worker.join()


def read_table(spec, columns: list[str]) -> dict:
    """Read ``columns`` of the spec's whole table into numpy arrays (the engines stream instead)."""
    got = {c: [] for c in columns}
    for cols, _ in _Table(spec, columns):
        if cols is RESTART:
            got = {c: [] for c in columns}
            continue
        for c in columns:
            got[c].append(cols[c])
    return {c: np.concatenate(v) if v else np.array([], dtype=str) for c, v in got.items()}


def _unreadable(spec, exc) -> DataError:
    return DataError(f"{spec.path}: dataset: cannot read the data in {_source_text(spec)} "
                     f"({type(exc).__name__}; details withheld: they may quote the data)")


def _check_columns(columns, available, spec, what) -> None:
    # the header is not quoted back: in a file without one, it is the first record
    available = list(available)
    for c in columns:
        attr = next((a for a, col in spec.columns.items() if col == c), c)
        if c not in available:
            raise DataError(f"{spec.path}: domain.{attr}: column {c!r} not found in {what} (the header is not "
                            "shown: in a file without one it would be data); check the header line, "
                            f"domain.{attr}.column and dataset.columns")
        if available.count(c) > 1:
            raise DataError(f"{spec.path}: domain.{attr}: column {c!r} appears more than once in the header of "
                            f"{what}; rename one of them")


def _source_text(spec) -> str:
    src = spec.source
    return f"bundled dataset {src['bundled']!r}" if "bundled" in src else repr(src["path"])


def _invalid_error(spec, exc: InvalidColumn) -> DataError:
    parts = [f"domain.{a}: column {c!r} {r}" for a, c, r in exc.entries]
    labels_only = all(r.startswith("has values that are not among") for _, _, r in exc.entries)
    hint = ('set dataset.invalid = "drop" (or "clamp", which drops unknown labels too)' if labels_only
            else 'set dataset.invalid = "clamp" or "drop"')
    return DataError(f"{spec.path}: {'; '.join(parts)} (the data in {_source_text(spec)}); {hint}, "
                     "or correct the data")


def _data_error(spec, plan, exc) -> DataError:
    """A value-free message for an error raised while aggregating the data."""
    if isinstance(exc, InvalidColumn):
        return _invalid_error(spec, exc)
    names = sorted({a for _, d, _, flt, _ in plan for a in d.names + tuple(f[0].name for f in flt)})
    return DataError(f"{spec.path}: domain: the data in {_source_text(spec)} could not be aggregated over "
                     f"{names} ({type(exc).__name__}; details withheld: they may quote the data)")


_AGGREGATION_ERRORS = (ValueError, TypeError, OverflowError, ArithmeticError, KeyError, IndexError)


class LocalEngine:
    """Aggregates on this machine, streaming: the table is read in bounded batches.

    Peak memory is the aggregates plus a bounded read window, whatever the
    number of rows: one batch of ``BATCH_ROWS`` rows of Parquet (pages read
    ``PARQUET_BUFFER_BYTES`` at a time, no pre-buffering of the file), or
    pyarrow's CSV read-ahead of at most 32 blocks of ``CSV_BLOCK_BYTES`` of
    text (``benchmarks/bench_scaling.py``: at most about 100 MiB above the
    interpreter from 10^6 to 10^8 rows).  A ``column`` need
    (pufferfish_sum) keeps its column, 8 bytes a row.  ``batch_rows`` and
    ``block_bytes`` override those bounds.
    """

    name = "local"

    def __init__(self, *, progress: bool | None = None, batch_rows: int | None = None,
                 block_bytes: int | None = None) -> None:
        self.progress = progress
        self.batch_rows = batch_rows
        self.block_bytes = block_bytes

    def aggregate(self, spec, needs: list) -> dict:
        plan = _plan(spec, needs)
        columns = _plan_columns(plan)
        try:
            table = _Table(spec, columns, int_columns=_int_columns(plan), batch_rows=self.batch_rows,
                           block_bytes=self.block_bytes)
        except (DataError, PermissionError):
            raise
        except OSError as exc:
            raise _problem(spec, _source_text(spec), f"cannot be opened ({exc.strerror or type(exc).__name__})") \
                from None
        # shown on a terminal when the data are larger than a few batches, unless progress=False
        show = None if self.progress is not False and table.total > PROGRESS_MIN_BYTES else False
        try:
            with progress_bar(max(1, table.total >> 20), "reading (MiB)", enabled=show) as bar:
                return dict(zip(needs, _fold(_prefetch(table), plan, columns, bar)))
        except DataError:
            raise
        except _AGGREGATION_ERRORS as exc:
            raise _data_error(spec, plan, exc) from None

    def aggregate_table(self, table: dict, plan: list) -> list:
        """Exact aggregates of in-memory columns (``{column name: array}``), in chunks.

        ``plan`` is as in :func:`partition_aggregates`.
        """
        n = len(next(iter(table.values()))) if table else 0
        step = self.batch_rows or _CHUNK_ROWS
        batches = (({c: v[s:s + step] for c, v in table.items()}, 0) for s in range(0, n, step))
        return _fold(batches, plan, list(table))


def _stream_map(spec, plan, columns, int_columns):
    """A whole source streamed by one task (a Dask worker): :func:`_map`'s result."""
    try:
        return "ok", _fold(_Table(spec, columns, int_columns=int_columns), plan, columns)
    except InvalidColumn as exc:
        return "invalid", exc.entries


class DaskEngine:
    """Aggregates on a Dask cluster: map per partition, tree-sum reduce.

    Parameters
    ----------
    scheduler : str, optional
        Address of a running scheduler; without it a ``LocalCluster`` is
        started (``workers`` processes, one thread each) and closed after.
        An unreachable scheduler is a :class:`DataError` after ``timeout``
        seconds (default :data:`SCHEDULER_TIMEOUT`).

    Per-worker memory is bounded by the partition: CSV blocks of
    :data:`DASK_CSV_BLOCKSIZE`, Parquet as Dask splits it (a file, or its
    row groups for large files); a gzip CSV, which cannot be split, is
    streamed by one task in bounded batches.
    """

    name = "dask"

    def __init__(self, scheduler: str | None = None, *, workers: int | None = None, progress: bool | None = None,
                 timeout: float | None = None):
        try:
            import dask  # noqa: F401
            import dask.dataframe  # noqa: F401
            import distributed  # noqa: F401
        except ImportError:
            raise DataError("--engine dask needs Dask: pip install 'blowfish-privacy[dask]'") from None
        self.scheduler = scheduler
        self.timeout = SCHEDULER_TIMEOUT if timeout is None else timeout
        self.workers = workers
        self.progress = progress

    def _frame(self, spec, columns):
        import dask.dataframe as dd
        import pandas as pd

        src = spec.source
        if "bundled" in src:
            df = pd.read_csv(io.StringIO(_bundled_text(src["bundled"])), usecols=columns, skipinitialspace=True)
            return dd.from_pandas(df, npartitions=4)
        if src["format"] == "csv":
            header = _Table(spec, columns)._header(Path(src["path"]), False)  # encoding, BOM, binary: one line
            _check_columns(columns, header, spec, repr(src["path"]))
            # cells as text, as the local reader sees them (no NA guessing); blocks of DASK_CSV_BLOCKSIZE
            return dd.read_csv(src["path"], usecols=columns, blocksize=DASK_CSV_BLOCKSIZE, dtype=str,
                               keep_default_na=False, na_filter=False, skipinitialspace=True, encoding="utf-8-sig")
        _parquet_parts(spec, columns)  # every file's footer and columns checked before any row is read
        return dd.read_parquet(src["path"], columns=columns)

    def aggregate(self, spec, needs: list) -> dict:
        import dask
        from distributed import Client, LocalCluster

        plan = _plan(spec, needs)
        columns = _plan_columns(plan)
        src = spec.source
        if src.get("format") == "csv" and src["path"].lower().endswith(".gz"):
            # gzip cannot be split: one task streams the file in bounded batches (memory bounded, one worker)
            _Table(spec, columns)._header(Path(src["path"]), True)
            mapped = [dask.delayed(_stream_map)(spec, plan, columns, _int_columns(plan))]
        else:
            try:
                frame = self._frame(spec, columns)
            except (DataError, FileNotFoundError, PermissionError):
                raise
            except _AGGREGATION_ERRORS + (OSError,) as exc:
                raise _unreadable(spec, exc) from None
            mapped = [dask.delayed(_map)(p, plan) for p in frame.to_delayed()]
        while len(mapped) > 1:  # tree reduce
            mapped = [dask.delayed(_reduce)(mapped[i], mapped[i + 1]) if i + 1 < len(mapped) else mapped[i]
                      for i in range(0, len(mapped), 2)]
        cluster = None
        if self.scheduler:
            try:
                client = Client(self.scheduler, timeout=self.timeout)
            except (OSError, ValueError, TypeError) as exc:  # TimeoutError is an OSError
                why = f"no answer within {self.timeout:g} s" if isinstance(exc, OSError) else type(exc).__name__
                raise DataError(f"{spec.path}: --scheduler: cannot reach the Dask scheduler at {self.scheduler!r} "
                                f"({why}); start it, check the address, or drop --scheduler to use a local "
                                "cluster") from None
        else:
            cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1, processes=True,
                                   dashboard_address=":0")
            client = Client(cluster)
        try:
            try:
                future = client.compute(mapped[0])
                if self.progress is not False and sys.stderr.isatty():
                    from distributed import progress

                    progress(future)
                result = _unwrap(future.result())
            except DataError:  # raised by a worker reading the data: already value-free
                raise
            except _AGGREGATION_ERRORS + (OSError,) as exc:  # partition_aggregates', or reading a partition
                raise _data_error(spec, plan, exc) from None
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
        return dict(zip(needs, result))
