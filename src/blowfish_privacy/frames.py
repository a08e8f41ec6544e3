"""DataFrame frontends: pandas, Polars and pyarrow tables as input.

Tables are read column by column, by attribute name (or by the column names
given in ``columns``).  None of the table libraries is a dependency: a table
is recognised by the module of its type, and nothing is imported from them.
Integer columns without missing values are passed on without a copy
(``numpy`` views of the table's buffers; Polars and pyarrow give read-only
views, which are never written to).

:func:`histogram` counts the rows of a table over a domain with the map
step of the release product's engines
(:func:`blowfish_privacy._aggregate.partition_aggregates`), so values
outside the domain are handled exactly as ``dataset.invalid`` handles them
in a release spec (docs/spec.md, "Values outside the domain"):
``"error"`` refuses, ``"clamp"`` moves ordinal values into ``[low, high]``
(and drops cells that are not integers or not among the labels), ``"drop"``
drops the row.  No error message quotes a data value, a row number or a
count.

>>> import pandas as pd                                   # doctest: +SKIP
>>> from blowfish_privacy import Domain, histogram
>>> df = pd.DataFrame({"age": [31, 45, 45]})               # doctest: +SKIP
>>> histogram(df, Domain.ordinal("age", 0, 99))[45]       # doctest: +SKIP
2
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

import numpy as np

from ._aggregate import AGGREGATION_ERRORS, fold_table, plan_for
from .domain import Domain
from .errors import InvalidColumn, TableError  # noqa: F401  (TableError re-exported)
from .policy import Policy

__all__ = ["histogram", "column_array", "column_names", "is_table", "table_columns", "table_kind", "TableError"]

#: ``(module prefix, type name pattern, kind)`` of the tables and of the columns (series) recognised.
_TABLE_TYPES = (("pandas", "DataFrame", "pandas"), ("polars", "DataFrame", "polars"),
                ("polars", "LazyFrame", "polars-lazy"), ("pyarrow", "Table", "pyarrow"),
                ("pyarrow", "RecordBatch", "pyarrow"))
_SERIES_TYPES = (("pandas", "Series", "pandas"), ("polars", "Series", "polars"), ("pyarrow", "*Array", "pyarrow"))


def _kind(obj: Any, types) -> str | None:
    mod, name = type(obj).__module__ or "", type(obj).__name__
    return next((kind for lib, pattern, kind in types if mod.startswith(lib) and fnmatchcase(name, pattern)), None)


def table_kind(obj: Any) -> str | None:
    """``"pandas"``, ``"polars"``, ``"polars-lazy"``, ``"pyarrow"`` or None (not a table)."""
    return _kind(obj, _TABLE_TYPES)


def _series_kind(obj: Any) -> str | None:
    return _kind(obj, _SERIES_TYPES)


def is_table(obj: Any) -> bool:
    """True for a pandas or Polars DataFrame (or LazyFrame) and a pyarrow Table or RecordBatch."""
    return table_kind(obj) is not None


def _names_of(table: Any, kind: str) -> list:
    if kind == "pandas":
        return list(table.columns)
    if kind == "polars-lazy":
        return list(table.collect_schema().names())
    if kind == "polars":
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
    column's memory (no copy).  Missing values become NaN in numeric
    columns (invalid in the domain) and None in others.
    """
    kind = _series_kind(col)
    if kind == "pandas":
        dtype = col.dtype
        if getattr(dtype, "kind", "O") in "iuf" and not isinstance(dtype, np.dtype):  # nullable Int64, Float64...
            if col.isna().any():
                return col.to_numpy(dtype=np.float64, na_value=np.nan)
            return col.to_numpy(dtype=dtype.numpy_dtype)
        return col.to_numpy()
    if kind == "polars":
        return col.to_numpy()
    if kind == "pyarrow":
        if type(col).__name__ == "ChunkedArray":
            if col.num_chunks == 1:
                col = col.chunk(0)
            else:
                return col.to_numpy()
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


def _domain_of(domain):
    if isinstance(domain, Policy):
        return domain.domain
    if isinstance(domain, Domain):
        return domain
    raise TypeError(f"domain must be a Domain or a Policy, got {type(domain).__name__}")


def _column_map(domain, columns) -> dict:
    if columns is None:
        return {a: a for a in domain.names}
    if not isinstance(columns, Mapping):
        raise TypeError(f"columns must be a mapping from attribute names to column names, got {columns!r}")
    unknown = [a for a in columns if a not in domain.names]
    if unknown:
        raise ValueError(f"columns: {unknown} are not attributes of the domain; its attributes are {list(domain.names)}")
    out = {}
    for a in domain.names:
        c = columns.get(a, a)
        if not isinstance(c, str):
            raise TypeError(f"columns[{a!r}] must be a column name (str), got {c!r}")
        out[a] = c
    return out


def _positional(table, domain) -> dict | None:
    """Columns of a numpy array or a list of records, by position (None for tables and mappings)."""
    if is_table(table) or isinstance(table, Mapping):
        return None
    if _series_kind(table) is not None and domain.ndim == 1:
        return {domain.names[0]: column_array(table)}
    arr = np.asarray(table)
    m = domain.ndim
    if arr.ndim == 1 and m == 1:
        return {domain.names[0]: arr}
    if arr.ndim == 2 and arr.shape[1] == m:
        return {name: arr[:, a] for a, name in enumerate(domain.names)}
    raise ValueError(f"table must be a DataFrame, a pyarrow Table, a mapping of columns or an array of shape (n, {m})"
                     + (" or (n,)" if m == 1 else "") + f", got an array of shape {arr.shape}")


def histogram(table: Any, domain, *, invalid="error", columns: Mapping[str, str] | None = None) -> np.ndarray:
    """The exact histogram of a table's rows over ``domain``.

    Parameters
    ----------
    table : DataFrame, Table or mapping
        A pandas or Polars DataFrame (or LazyFrame), a pyarrow Table or
        RecordBatch, a mapping ``{column name: array}``, or a numpy array of
        shape ``(n, ndim)`` (columns in the domain's attribute order; a 1-D
        array for a one-attribute domain).  Columns are found by attribute
        name unless ``columns`` says otherwise.  Integer columns are used in
        place (no copy).
    domain : Domain or Policy
        The domain (a policy's domain when a Policy is given).
    invalid : {"error", "clamp", "drop"} or mapping, default "error"
        What to do with a value outside its attribute's domain, as
        ``dataset.invalid`` in a release spec: ``"error"`` raises
        :class:`TableError` (before anything is spent; the message names
        the attribute, the column and the rule, never a value);
        ``"clamp"`` moves ordinal values into ``[low, high]`` and drops rows
        whose cell is not an integer (or not a label); ``"drop"`` drops the
        row.  A mapping gives a mode per attribute name (others:
        ``"error"``).
    columns : mapping, optional
        ``{attribute name: column name}`` for columns named differently.

    Returns
    -------
    numpy.ndarray of int64, shape (domain.size,)
        Counts per flat domain index (C order: ``.reshape(domain.shape)``
        gives one axis per attribute), the aggregate the mechanisms take.

    Raises
    ------
    TableError
        A missing column, or values outside the domain under ``"error"``.

    Examples
    --------
    >>> import numpy as np
    >>> from blowfish_privacy import Domain, histogram
    >>> histogram({"x": np.array([0, 2, 2, 9])}, Domain.ordinal("x", 0, 3), invalid="clamp").tolist()
    [1, 0, 2, 1]
    """
    domain = _domain_of(domain)
    colmap = _column_map(domain, columns)
    data = _positional(table, domain)
    if data is None:
        data = table_columns(table, list(dict.fromkeys(colmap.values())))
    elif columns is not None:
        raise ValueError("columns applies only to tables and mappings, not to arrays (their columns are positional)")
    else:
        data = {colmap[a]: v for a, v in data.items()}
    plan = plan_for(domain, colmap, [("histogram", domain.names)], invalid)
    try:
        (hist,) = fold_table(data, plan)
    except InvalidColumn as exc:
        raise TableError(f"table: {exc}; pass invalid='clamp' or invalid='drop', or correct the data") from None
    except AGGREGATION_ERRORS as exc:
        raise TableError(f"table: the data could not be counted over {list(domain.names)} ({type(exc).__name__}; "
                         "details withheld: they may quote the data)") from None
    return hist
