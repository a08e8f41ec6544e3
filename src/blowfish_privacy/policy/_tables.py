"""Tables and columns recognised by the module of their type (pandas, Polars, pyarrow, Spark).

None of the table libraries is imported: a DataFrame, a Polars LazyFrame,
a pyarrow Table or RecordBatch, and their columns (series), are recognised
by the module and name of their type, and read column by column into numpy
arrays (views of the column's memory where the dtype allows).  A Spark
DataFrame's needed columns are collected to the driver as one Arrow table
(``DataFrame.toArrow``): this is for the per-row answers (``encode``,
``predict``); counts of a Spark DataFrame are made in Spark
(:func:`blowfish_privacy.frames.histogram`), never collected.  Below both
:mod:`.domain` (``Domain.encode`` of a table) and :mod:`.frames`
(``histogram`` of a table), which re-exports these names.  Messages name
columns, never a value or a row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

import numpy as np

from ..errors import TableError

__all__ = ["column_array", "column_names", "is_table", "table_columns", "table_kind"]

#: ``(module prefix, type name pattern, kind)`` of the tables and of the columns (series) recognised.
_TABLE_TYPES = (("pandas", "DataFrame", "pandas"), ("polars", "DataFrame", "polars"),
                ("polars", "LazyFrame", "polars-lazy"), ("pyarrow", "Table", "pyarrow"),
                ("pyarrow", "RecordBatch", "pyarrow"), ("pyspark.sql", "DataFrame", "spark"))
_SERIES_TYPES = (("pandas", "Series", "pandas"), ("polars", "Series", "polars"), ("pyarrow", "*Array", "pyarrow"))


def _kind(obj: Any, types) -> str | None:
    mod, name = type(obj).__module__ or "", type(obj).__name__
    return next((kind for lib, pattern, kind in types if mod.startswith(lib) and fnmatchcase(name, pattern)), None)


def table_kind(obj: Any) -> str | None:
    """``"pandas"``, ``"polars"``, ``"polars-lazy"``, ``"pyarrow"`` or None (not a table)."""
    return _kind(obj, _TABLE_TYPES)


def series_kind(obj: Any) -> str | None:
    return _kind(obj, _SERIES_TYPES)


def is_table(obj: Any) -> bool:
    """True for a pandas or Polars DataFrame (or LazyFrame), a pyarrow Table or RecordBatch and a Spark DataFrame."""
    return table_kind(obj) is not None


def _names_of(table: Any, kind: str) -> list:
    if kind == "pandas":
        return list(table.columns)
    if kind == "polars-lazy":
        return list(table.collect_schema().names())
    if kind in ("polars", "spark"):
        return list(table.columns)
    return list(table.schema.names)


def column_names(table: Any) -> list:
    """The column names of a table (a DataFrame, a pyarrow Table or a mapping)."""
    kind = table_kind(table)
    if kind is None:
        if isinstance(table, Mapping):
            return list(table)
        raise TypeError(f"table must be a pandas or Polars DataFrame, a pyarrow Table or a mapping of column names "
                        f"to arrays, got {type(table).__name__}")
    return _names_of(table, kind)


def column_array(col: Any) -> np.ndarray:
    """One column (a pandas/Polars Series, a pyarrow (Chunked)Array, or array-like) as a 1-D numpy array.

    Integer and float columns without missing values are views of the
    column's memory (no copy).  Missing values become NaN in float columns
    (invalid in the domain) and None in others; an integer column with
    missing values is an object array of Python ints and None, so that
    each cell keeps its exact value whatever else its column holds (as
    floats, integers beyond 2**53 would round, and read differently as
    labels).
    """
    kind = series_kind(col)
    if kind == "pandas":
        dtype = col.dtype
        if getattr(dtype, "kind", "O") in "iuf" and not isinstance(dtype, np.dtype):  # nullable Int64, Float64...
            if col.isna().any():
                if dtype.kind == "f":
                    return col.to_numpy(dtype=np.float64, na_value=np.nan)
                return np.array([None if v is None else int(v) for v in col.to_numpy(dtype=object, na_value=None)],
                                dtype=object)
            return col.to_numpy(dtype=dtype.numpy_dtype)
        return col.to_numpy()
    if kind == "polars":
        if col.dtype.is_integer() and col.null_count():
            return np.array(col.to_list(), dtype=object)
        return col.to_numpy()
    if kind == "pyarrow":
        if type(col).__name__ == "ChunkedArray":
            col = col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
        if col.null_count and str(col.type).startswith(("int", "uint")):
            return np.array(col.to_pylist(), dtype=object)
        return col.to_numpy(zero_copy_only=False)
    if isinstance(col, np.ndarray):
        return col.reshape(-1)
    return np.asarray(col).reshape(-1)


def table_columns(table: Any, names: Sequence[str], *, param: str = "table") -> dict:
    """The columns ``names`` of ``table`` as ``{name: 1-D numpy array}``.

    ``table`` is a pandas or Polars DataFrame (a Polars LazyFrame is
    collected, selecting only these columns), a pyarrow Table or
    RecordBatch, or a mapping of column names to arrays.  A missing column
    raises :class:`TableError` naming it and the table's columns (names
    only, never values).
    """
    names = list(names)
    kind = table_kind(table)
    if kind is None and not isinstance(table, Mapping):
        raise TypeError(
            f"{param} must be a pandas or Polars DataFrame, a pyarrow Table or a mapping of column names to "
            f"arrays, got {type(table).__name__}"
        )
    available = column_names(table)
    for c in names:
        if c not in available:
            shown = available if len(available) <= 50 else available[:50] + ["..."]
            raise TableError(f"{param}: column {c!r} not found; its columns are {shown}")
    if kind == "polars-lazy":
        table, kind = table.select(list(dict.fromkeys(names))).collect(), "polars"
    elif kind == "spark":
        table, kind = _spark_arrow(table, names, available, param), "pyarrow"
    out = {}
    for c in names:
        if kind is None:
            col = table[c]
        elif kind == "pandas":
            col = table[c]
            if table_kind(col) == "pandas":  # duplicate column names
                raise TableError(f"{param}: column {c!r} appears more than once")
        elif kind == "polars":
            col = table.get_column(c)
        else:
            col = table.column(c)
        out[c] = column_array(col)
    lengths = {len(v) for v in out.values()}
    if len(lengths) > 1:
        raise TableError(f"{param}: all columns must have the same length, got lengths {sorted(lengths)}")
    return out


def _spark_arrow(frame: Any, names: list, available: list, param: str) -> Any:
    """The columns ``names`` of a Spark DataFrame collected to the driver as a pyarrow Table (rows in order)."""
    twice = sorted({c for c in names if available.count(c) > 1})
    if twice:
        raise TableError(f"{param}: columns {twice} appear more than once in the Spark DataFrame")
    wanted = list(dict.fromkeys(names))
    try:
        # renamed by position first: a name would be parsed (dots, backticks) and matched regardless of case
        renamed = frame.toDF(*[f"c{i}" for i in range(len(available))])
        table = renamed.select(*[f"c{available.index(c)}" for c in wanted]).toArrow()
        return table.rename_columns(wanted)
    except Exception as exc:  # noqa: BLE001 - a failed Spark job: its text may quote the data
        raise TableError(f"{param}: the Spark DataFrame's columns {wanted} could not be collected "
                         f"({type(exc).__name__}; details withheld: they may quote the data)") from None
