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

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from ._aggregate import AGGREGATION_ERRORS, FoldMap, fold_table, plan_columns, plan_for, reduce, unwrap
from ._spark_frames import is_spark_frame, map_frame
from .policy._tables import (  # noqa: F401  (the table helpers are re-exported from here)
    series_kind,
    column_array,
    column_names,
    is_table,
    table_columns,
    table_kind,
)
from .policy.domain import Domain
from .errors import DataError, InvalidColumn, TableError  # noqa: F401  (TableError re-exported)
from ._validation import check_memory
from .policy._policy import Policy

__all__ = ["histogram", "column_array", "column_names", "is_table", "table_columns", "table_kind", "TableError"]

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
    if series_kind(table) is not None and domain.ndim == 1:
        return {domain.names[0]: column_array(table)}
    arr = np.asarray(table)
    m = domain.ndim
    if arr.ndim == 1 and m == 1:
        return {domain.names[0]: arr}
    if arr.ndim == 2 and arr.shape[1] == m:
        return {name: arr[:, a] for a, name in enumerate(domain.names)}
    raise ValueError(f"table must be a DataFrame, a pyarrow Table, a mapping of columns or an array of shape (n, {m})"
                     + (" or (n,)" if m == 1 else "") + f", got an array with {arr.ndim} dimensions"
                     + (f" and {arr.shape[1]} columns" if arr.ndim == 2 else ""))  # never the row count


def histogram(table: Any, domain: Domain | Policy, *, invalid: str = "error",
              columns: Mapping[str, str] | None = None) -> npt.NDArray[np.int64]:
    """The exact histogram of a table's rows over ``domain``.

    Parameters
    ----------
    table : DataFrame, Table or mapping
        A pandas or Polars DataFrame (or LazyFrame), a pyarrow Table or
        RecordBatch, a Spark DataFrame, a mapping ``{column name: array}``,
        or a numpy array of shape ``(n, ndim)`` (columns in the domain's
        attribute order; a 1-D array for a one-attribute domain).  Columns
        are found by attribute name unless ``columns`` says otherwise.
        Integer columns are used in place (no copy).  A Spark DataFrame is
        counted in Spark, where its partitions live: each partition's Arrow
        batches are counted on an executor and the partial histograms are
        added in an ordered tree; only the histogram reaches the driver.
    domain : Domain or Policy
        The domain (a policy's domain when a Policy is given).
    invalid : {"error", "clamp", "drop"} or mapping, default "error"
        What to do with a value outside its attribute's domain, as
        ``dataset.invalid`` in a release spec: ``"error"`` raises
        :class:`TableError` (before anything is spent; the message names
        the attribute, the column and the rule, never a value);
        ``"clamp"`` moves ordinal values into ``[low, high]`` and counts an
        ordinal cell that is not an integer as ``low`` (an unknown label is
        dropped); ``"drop"`` drops the row.  A mapping gives a mode per attribute name (others:
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
    ValueError
        A domain whose histogram (8 bytes per cell) would not fit in the
        memory available, refused before anything is read or allocated.

    Privacy
    -------
    None: the counts are exact and spend nothing.  They are the aggregate
    a mechanism takes (``plan.measure(hist, generator)``); only the
    mechanism's output is private.

    Sensitivity
    -----------
    Not calibrated here.  Under a policy with secret graph G a record moving
    along an edge changes two counts by 1 (He, Machanavajjhala, Ding,
    "Blowfish Privacy", SIGMOD 2014, Sec 5); the mechanisms' plans state
    theirs.

    Runtime
    -------
    O(rows + |T|): one pass over the columns in chunks, then a bincount
    into the |T| cells.  A Spark DataFrame: one pass per partition on the
    executors, then O(|T|) per partition in the reduce tree.

    References
    ----------
    He, Machanavajjhala, Ding, "Blowfish Privacy: Tuning Privacy-Utility
    Trade-offs using Policies", SIGMOD 2014, Sec 5 (histograms and their
    policy-specific sensitivity).

    Examples
    --------
    >>> import numpy as np
    >>> from blowfish_privacy import Domain, histogram
    >>> histogram({"x": np.array([0, 2, 2, 9])}, Domain.ordinal("x", 0, 3), invalid="clamp").tolist()
    [1, 0, 2, 1]
    """
    domain = _domain_of(domain)
    colmap = _column_map(domain, columns)
    # before a row is read or a cell allocated: the limit and wording of every plan's memory check
    check_memory(8 * domain.size, size=domain.size, parameter="domain", mechanism="histogram() (8 bytes per cell)")
    if is_spark_frame(table):
        return _spark_histogram(table, domain, colmap, invalid)
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
        raise _invalid(exc) from None
    except AGGREGATION_ERRORS as exc:
        raise _uncounted(domain, type(exc).__name__) from None
    return hist


def _invalid(exc: InvalidColumn) -> TableError:
    return TableError(f"table: {exc}; pass invalid='clamp' or invalid='drop', or correct the data")


def _uncounted(domain, why: str) -> TableError:
    return TableError(f"table: the data could not be counted over {list(domain.names)} ({why}; details withheld: "
                      "they may quote the data)")


def _spark_histogram(frame, domain, colmap: dict, invalid) -> np.ndarray:
    """:func:`histogram` of a Spark DataFrame, counted on the executors (:func:`._spark_frames.map_frame`)."""
    available = list(frame.columns)
    for c in dict.fromkeys(colmap.values()):
        if c not in available:
            shown = available if len(available) <= 50 else available[:50] + ["..."]
            raise TableError(f"table: column {c!r} not found in the Spark DataFrame; its columns are {shown}")
        if available.count(c) > 1:
            raise TableError(f"table: column {c!r} appears more than once in the Spark DataFrame")
    plan = plan_for(domain, colmap, [("histogram", domain.names)], invalid)
    fold_map = FoldMap(plan, plan_columns(plan))
    try:
        result = map_frame(frame, fold_map.columns, fold_map, reduce, result_bytes=fold_map.result_bytes)
    except Exception as exc:  # noqa: BLE001 - a failed Spark job: its text may quote the data
        raise TableError(f"table: the Spark job counting {list(domain.names)} failed ({type(exc).__name__}: an "
                         "executor was lost or a task failed; details withheld: they may quote the data)") from None
    try:
        (hist,) = unwrap(result)
    except InvalidColumn as exc:
        raise _invalid(exc) from None
    except DataError as exc:
        raise _uncounted(domain, str(exc)) from None
    return hist
