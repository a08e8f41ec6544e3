"""Exact aggregation engines: the local one (numpy, chunked) and Dask.

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
from importlib import resources
from pathlib import Path

import numpy as np

from .._progress import progress_bar
from ..domain import Domain, Ordinal

__all__ = ["DataError", "InvalidColumn", "INVALID_MODES", "Need", "LocalEngine", "DaskEngine",
           "partition_aggregates", "read_table"]

_CHUNK_ROWS = 1 << 22


class DataError(ValueError):
    """The data do not match the spec (a missing column, a value outside the domain).

    Messages name the file, the key, the column and the rule broken; never a
    value or a row of the data.
    """


# A need is ("histogram", attribute names) or ("column", (attribute name,)).
Need = tuple

#: What to do with a value outside its attribute's domain (``dataset.invalid``).
INVALID_MODES = ("error", "clamp", "drop")

# Saturation bound for ordinal values: beyond every domain bound (|bound| <= 2**62 - 1).
_SAT = 2**62


class InvalidColumn(ValueError):
    """Columns hold values outside their attributes' domains, under ``invalid = "error"``.

    ``entries`` are ``(attribute, column, rule)``, all from the spec: the
    message never holds a value, a row or a count, and does not depend on
    the order of the rows.
    """

    def __init__(self, entries) -> None:
        self.entries = tuple(sorted(set(entries)))
        super().__init__(self.entries)

    def __str__(self) -> str:
        return "; ".join(f"attribute {a!r}: column {c!r} {r}" for a, c, r in self.entries)


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


def partition_aggregates(columns: dict, plan: list) -> list:
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
    """
    out = []
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
                out.append(np.bincount(idx, minlength=domain.size).astype(np.int64, copy=False))
                continue
        got = [parse(attr, col, mode) for attr, col, _, mode in filters]
        got += [parse(a, c, m) for a, c, m in zip(domain.attributes, cols, modes)]
        if any(g is None for g in got):
            out.append(None)
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
            out.append(np.bincount(flat, minlength=domain.size).astype(np.int64, copy=False))
        else:
            values = got[0][0]
            if values is None:  # a categorical column: its codes
                values = got[0][1]
            out.append(np.asarray(values if keep is None else values[keep], dtype=np.float64))
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
        if low == 0 and width == 1:
            codes = arr
        else:
            codes = arr.astype(np.int64) - low
            if width != 1:
                codes //= width
        if flat is None:
            flat = codes if stride == 1 else codes.astype(np.int64) * stride
        elif stride == 1:
            flat = flat + codes
        else:
            flat = flat + codes.astype(np.int64) * stride
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


def _bundled_text(name: str) -> str:
    from .spec import BUNDLED

    raw = resources.files("blowfish_privacy").joinpath("data", BUNDLED[name]).read_bytes()
    return gzip.decompress(raw).decode("utf-8")


def read_table(spec, columns: list[str]) -> dict:
    """Read ``columns`` of the spec's table into numpy arrays (the local engine)."""
    try:
        return _read_table(spec, columns)
    except (DataError, FileNotFoundError, PermissionError):
        raise
    except (ValueError, EOFError, OSError, csv.Error) as exc:  # decoding and parsing errors may quote the data
        raise _unreadable(spec, exc) from None


def _unreadable(spec, exc) -> DataError:
    return DataError(f"{spec.path}: dataset: cannot read the data in {_source_text(spec)} "
                     f"({type(exc).__name__}; details withheld: they may quote the data)")


def _read_table(spec, columns: list[str]) -> dict:
    src = spec.source
    if "bundled" in src:
        return _read_csv(io.StringIO(_bundled_text(src["bundled"])), columns, spec, f"bundled dataset {src['bundled']!r}")
    if src["format"] == "csv":
        path = Path(src["path"])
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rt", newline="", encoding="utf-8") as fh:
            return _read_csv(fh, columns, spec, repr(str(path)))
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError(
            f"{spec.path}: dataset.path: reading Parquet needs pyarrow: pip install 'blowfish-privacy[dask]'"
        ) from None
    try:
        schema_names = pq.read_schema(src["path"]).names if Path(src["path"]).is_file() else \
            pq.ParquetDataset(src["path"]).schema.names
    except Exception as exc:  # pyarrow raises many kinds
        raise DataError(f"{spec.path}: dataset.path: cannot read Parquet {src['path']!r}: {exc}") from None
    _check_columns(columns, schema_names, spec, repr(src["path"]))
    table = pq.read_table(src["path"], columns=columns)
    return {c: table.column(c).to_numpy() for c in columns}


def _check_columns(columns, available, spec, what) -> None:
    for c in columns:
        if c not in available:
            attr = next((a for a, col in spec.columns.items() if col == c), c)
            raise DataError(f"{spec.path}: domain.{attr}: column {c!r} not found in {what}; "
                            f"its columns are {list(available)}")


def _read_csv(fh, columns, spec, what) -> dict:
    reader = csv.reader(fh)
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise DataError(f"{spec.path}: dataset.path: {what} is empty") from None
    _check_columns(columns, header, spec, what)
    pos = [header.index(c) for c in columns]
    cols = [[] for _ in columns]
    for row in reader:
        if not row:
            continue
        for k, p in enumerate(pos):
            cols[k].append(row[p].strip() if p < len(row) else "")
    return {c: np.array(v) for c, v in zip(columns, cols)}


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
    """Aggregates on this machine: the table in memory, counted in chunks."""

    name = "local"

    def __init__(self, *, progress: bool | None = None) -> None:
        self.progress = progress

    def aggregate(self, spec, needs: list) -> dict:
        plan = _plan(spec, needs)
        table = read_table(spec, _plan_columns(plan))
        try:
            return dict(zip(needs, self.aggregate_table(table, plan)))
        except _AGGREGATION_ERRORS as exc:
            raise _data_error(spec, plan, exc) from None

    def aggregate_table(self, table: dict, plan: list) -> list:
        """Exact aggregates of in-memory columns (``{column name: array}``), in chunks.

        ``plan`` is as in :func:`partition_aggregates`.
        """
        n = len(next(iter(table.values()))) if table else 0
        result = None
        steps = max(1, -(-n // _CHUNK_ROWS))
        # shown on a terminal for runs of several chunks, unless progress=False
        show = None if self.progress is not False and steps > 1 else False
        with progress_bar(steps, "aggregating", enabled=show) as bar:
            for start in range(0, max(n, 1), _CHUNK_ROWS):
                part = {c: v[start:start + _CHUNK_ROWS] for c, v in table.items()}
                agg = _map(part, plan)  # every chunk is read, whatever an earlier one held
                result = agg if result is None else _reduce(result, agg)
                bar.advance()
        return _unwrap(result)


class DaskEngine:
    """Aggregates on a Dask cluster: map per partition, tree-sum reduce.

    Parameters
    ----------
    scheduler : str, optional
        Address of a running scheduler; without it a ``LocalCluster`` is
        started (``workers`` processes, one thread each) and closed after.
    """

    name = "dask"

    def __init__(self, scheduler: str | None = None, *, workers: int | None = None, progress: bool | None = None):
        try:
            import dask  # noqa: F401
            import dask.dataframe  # noqa: F401
            import distributed  # noqa: F401
        except ImportError:
            raise DataError("--engine dask needs Dask: pip install 'blowfish-privacy[dask]'") from None
        self.scheduler = scheduler
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
            head = pd.read_csv(src["path"], nrows=0)
            _check_columns(columns, [c.strip() for c in head.columns], spec, repr(src["path"]))
            gz = src["path"].endswith(".gz")
            # cells as text, as the local reader sees them (no NA guessing)
            return dd.read_csv(src["path"], usecols=columns, blocksize=None if gz else "64MB", dtype=str,
                               keep_default_na=False, na_filter=False, skipinitialspace=True)
        import pyarrow.parquet as pq

        path = Path(src["path"])
        names = pq.read_schema(path).names if path.is_file() else pq.ParquetDataset(str(path)).schema.names
        _check_columns(columns, names, spec, repr(src["path"]))
        return dd.read_parquet(src["path"], columns=columns)

    def aggregate(self, spec, needs: list) -> dict:
        import dask
        from distributed import Client, LocalCluster

        plan = _plan(spec, needs)
        try:
            frame = self._frame(spec, _plan_columns(plan))
        except (DataError, FileNotFoundError, PermissionError):
            raise
        except _AGGREGATION_ERRORS + (OSError,) as exc:
            raise _unreadable(spec, exc) from None
        parts = frame.to_delayed()
        mapped = [dask.delayed(_map)(p, plan) for p in parts]
        while len(mapped) > 1:  # tree reduce
            mapped = [dask.delayed(_reduce)(mapped[i], mapped[i + 1]) if i + 1 < len(mapped) else mapped[i]
                      for i in range(0, len(mapped), 2)]
        cluster = None
        if self.scheduler:
            client = Client(self.scheduler)
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
            except _AGGREGATION_ERRORS + (OSError,) as exc:  # partition_aggregates', or reading a partition
                raise _data_error(spec, plan, exc) from None
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
        return dict(zip(needs, result))
