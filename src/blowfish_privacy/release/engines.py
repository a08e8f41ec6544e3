"""Exact aggregation engines: the local one (numpy, chunked) and Dask.

Both compute the same exact aggregates with the same map step,
:func:`partition_aggregates` (per partition: encode the rows into flat
domain indices and ``numpy.bincount`` them), and a sum as the reduce step,
so their results are identical.  Noise is never added here: the driver
adds it once, after the budget is spent.
"""

from __future__ import annotations

import csv
import gzip
import io
import re
import sys
from importlib import resources
from pathlib import Path

import numpy as np

from .._progress import progress_bar
from ..domain import Domain, Ordinal

__all__ = ["DataError", "Need", "LocalEngine", "DaskEngine", "partition_aggregates", "read_table"]

_CHUNK_ROWS = 1 << 22


class DataError(ValueError):
    """The data do not match the spec (a missing column, a value outside the domain)."""


# A need is ("histogram", attribute names) or ("column", (attribute name,)).
Need = tuple


def column_array(attr, values) -> np.ndarray:
    """A table column as the numpy array ``attr.codes_of`` expects."""
    arr = np.asarray(values)
    if isinstance(attr, Ordinal):
        if arr.dtype.kind in "iuf":
            return arr
        try:
            return arr.astype(np.int64)
        except (ValueError, TypeError, OverflowError):
            pass
        try:
            return arr.astype(np.float64)  # codes_of reports the first non-integral value
        except (ValueError, TypeError, OverflowError):
            bad = next(v for v in arr.tolist() if not _is_number(v))
            raise ValueError(f"attribute {attr.name!r} takes integers in [{attr.low}, {attr.high}], got {bad!r}") from None
    labels = attr.labels
    if all(isinstance(v, str) for v in labels):
        return arr.astype(str) if arr.dtype.kind != "U" else arr
    if all(isinstance(v, int) and not isinstance(v, bool) for v in labels) and arr.dtype.kind not in "iu":
        try:
            return arr.astype(np.int64)
        except (ValueError, TypeError):
            return arr
    return arr


def _is_number(v) -> bool:
    try:
        float(v)
        return True
    except (TypeError, ValueError):
        return False


def partition_aggregates(columns: dict, plan: list) -> list:
    """The map step: exact aggregates of one partition.

    ``columns`` maps column names to arrays (or a pandas DataFrame);
    ``plan`` lists ``(need, domain, column names, filters)``, each filter
    ``(attribute, column name, code)`` keeping the rows whose attribute has
    that code (every value is checked against the domain first).  A histogram need gives
    an int64 array of ``domain.size`` counts, a column need the column's
    values (checked against the domain) as float64.
    """
    out = []
    for need, domain, cols, filters in plan:
        data = {a.name: column_array(a, _values(columns[c])) for a, c in zip(domain.attributes, cols)}
        if filters:
            keep = None
            for attr, col, code in filters:
                hit = attr.codes_of(column_array(attr, _values(columns[col]))) == code
                keep = hit if keep is None else keep & hit
            data = {k: v[keep] for k, v in data.items()}
        if need[0] == "histogram":
            idx = _fast_index(domain, data)
            if idx is None:  # the general path, which also reports values outside the domain
                idx = domain.encode(data)
            out.append(np.bincount(idx, minlength=domain.size).astype(np.int64, copy=False))
        else:
            domain.encode(data)  # checks the values against the domain
            out.append(np.asarray(data[domain.names[0]], dtype=np.float64))
    return out


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


def plan_for(domain: Domain, columns: dict, needs) -> list:
    """The map plan of ``needs`` over ``domain``: ``(need, sub-domain, column names, filters)`` each.

    A need is ``(aggregate, attribute names)`` or ``(aggregate, attribute
    names, where)`` with ``where`` a tuple of ``(attribute name, value)``.
    """
    plan = []
    for need in needs:
        where = need[2] if len(need) > 2 else ()
        filters = []
        for name, value in where:
            attr = domain.attribute(name)
            filters.append((attr, columns[name], int(attr.codes_of([value])[0])))
        plan.append((need, Domain([domain.attribute(a) for a in need[1]]), tuple(columns[a] for a in need[1]),
                     tuple(filters)))
    return plan


def _plan(spec, needs) -> list:
    return plan_for(spec.domain, spec.columns, needs)


def _bundled_text(name: str) -> str:
    from .spec import BUNDLED

    raw = resources.files("blowfish_privacy").joinpath("data", BUNDLED[name]).read_bytes()
    return gzip.decompress(raw).decode("utf-8")


def read_table(spec, columns: list[str]) -> dict:
    """Read ``columns`` of the spec's table into numpy arrays (the local engine)."""
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


def _wrap(spec, need_attrs, exc, offset: int | None = None) -> DataError:
    attr = need_attrs[0] if len(need_attrs) == 1 else ", ".join(need_attrs)
    text = str(exc)
    for name in need_attrs:
        if f"attribute {name!r}" in text:
            attr = name
    if offset is None:
        text = re.sub(r"\(record (\d+)\)", r"(record \1 of its partition)", text)
    else:
        text = re.sub(r"\(record (\d+)\)", lambda m: f"(data row {int(m.group(1)) + offset + 1})", text)
    text = text.removeprefix("records: ")
    return DataError(f"{spec.path}: domain.{attr}: the data in {_source_text(spec)} do not fit the domain: {text}")


class LocalEngine:
    """Aggregates on this machine: the table in memory, counted in chunks."""

    name = "local"

    def __init__(self, *, progress: bool | None = None) -> None:
        self.progress = progress

    def aggregate(self, spec, needs: list) -> dict:
        plan = _plan(spec, needs)
        columns = sorted({c for _, _, cols, flt in plan for c in cols + tuple(f[1] for f in flt)})
        table = read_table(spec, columns)
        try:
            return dict(zip(needs, self.aggregate_table(table, plan)))
        except _ChunkError as exc:
            raise _wrap(spec, _attrs_in(plan, exc.error), exc.error, exc.offset) from None

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
                try:
                    agg = partition_aggregates(part, plan)
                except ValueError as exc:
                    raise _ChunkError(exc, start) from None
                result = agg if result is None else combine(result, agg)
                bar.advance()
        return result


class _ChunkError(Exception):
    def __init__(self, error: ValueError, offset: int) -> None:
        super().__init__(str(error))
        self.error = error
        self.offset = offset


def _attrs_in(plan, exc) -> tuple:
    names = [a for _, d, _, flt in plan for a in d.names + tuple(f[0].name for f in flt)]
    hit = [a for a in names if f"attribute {a!r}" in str(exc)]
    return tuple(hit[:1] or names)


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
            return dd.read_csv(src["path"], usecols=columns, blocksize=None if gz else "64MB", dtype=str)
        import pyarrow.parquet as pq

        path = Path(src["path"])
        names = pq.read_schema(path).names if path.is_file() else pq.ParquetDataset(str(path)).schema.names
        _check_columns(columns, names, spec, repr(src["path"]))
        return dd.read_parquet(src["path"], columns=columns)

    def aggregate(self, spec, needs: list) -> dict:
        import dask
        from distributed import Client, LocalCluster

        plan = _plan(spec, needs)
        columns = sorted({c for _, _, cols, flt in plan for c in cols + tuple(f[1] for f in flt)})
        frame = self._frame(spec, columns)
        parts = frame.to_delayed()
        mapped = [dask.delayed(partition_aggregates)(p, plan) for p in parts]
        while len(mapped) > 1:  # tree reduce
            mapped = [dask.delayed(combine)(mapped[i], mapped[i + 1]) if i + 1 < len(mapped) else mapped[i]
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
                result = future.result()
            except ValueError as exc:
                raise _wrap(spec, _attrs_in(plan, exc), exc) from None
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
        return dict(zip(needs, result))
