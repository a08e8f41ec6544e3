"""Reading X for the estimators of :mod:`blowfish_privacy.sklearn`: arrays, tables, feature names, refusals.

The messages follow scikit-learn's wording where its estimator checks
match it; none quotes a data value.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from . import frames
from ._spark_frames import is_spark_frame

__all__ = ["array_columns", "feature_names", "names_mismatch", "on_grid", "refuse_non_finite", "refuse_sparse",
           "spark_on_grid", "table_array"]


def on_grid(col) -> np.ndarray:
    """A column put on the domain's integer grid: floats rounded to the nearest integer, bools as 0/1.

    The one convention of every path of ``fit`` (a policy, public bounds,
    bounds read from the data): the grid has granularity 1 in the units of
    the bounds, so a float stands for its nearest grid value (``np.rint``,
    halves to even).  NaN and infinity stay as they are (invalid values);
    integer and other columns are returned unchanged.
    """
    col = np.asarray(col)
    if col.dtype.kind == "f":
        return np.rint(col)
    if col.dtype.kind == "b":
        return col.astype(np.int64)
    return col


def spark_on_grid(X, names):
    """``on_grid`` of a Spark DataFrame's feature columns, in Spark (floats rounded, booleans as 0/1)."""
    kinds = dict(X.dtypes)
    wanted = set(names)
    cols = []
    for c in X.columns:
        kind = kinds.get(c, "")
        if c in wanted and (kind in ("float", "double") or kind.startswith("decimal")):
            cols.append(_spark_rint(X[c]).alias(c))
        elif c in wanted and kind == "boolean":
            cols.append(X[c].cast("long").alias(c))
        else:
            cols.append(X[c])
    return X.select(*cols)


def _spark_rint(col):
    # optional (the spark extra): only reached with a Spark DataFrame in hand
    from pyspark.sql import functions

    return functions.rint(col)


def feature_names(X) -> list[str] | None:
    """The column names of a table when they are all strings (scikit-learn's rule for feature names), else None."""
    if is_spark_frame(X):
        return list(X.columns)
    if not (frames.is_table(X) or isinstance(X, Mapping)):
        return None
    names = frames.column_names(X)
    return names if names and all(isinstance(n, str) for n in names) else None


def refuse_non_finite(cols: dict, invalid: str) -> None:
    """Under ``invalid="error"``, NaN or infinity in a training column is refused (never quoted)."""
    if invalid != "error":
        return
    for name, col in cols.items():
        col = np.asarray(col)
        if col.dtype.kind == "f" and not np.isfinite(col).all():
            raise ValueError(f"X: attribute {name!r} holds NaN or infinity, which are not values of the "
                             "domain (values not shown); pass invalid='drop' to drop such rows")


def refuse_sparse(X) -> None:
    if type(X).__module__.startswith("scipy.sparse"):  # before Mapping: a dok_matrix is a dict
        raise TypeError("X: sparse input is not supported: dense data is required (rows of values of the "
                        "policy's domain); use X.toarray()")


def table_array(X) -> np.ndarray:
    """A table's columns by position, as one 2-D array."""
    if hasattr(X, "to_numpy"):  # pandas, Polars
        return np.asarray(X.to_numpy())
    cols = frames.table_columns(X, frames.column_names(X), param="X")
    return np.column_stack([frames.column_array(c) for c in cols.values()]) if cols else np.zeros((0, 0))


def names_mismatch(fitted: list, given: list) -> str:
    """scikit-learn's message for feature names that differ from those of fit (its checks match it)."""
    head = "The feature names should match those that were passed during fit.\n"
    if set(fitted) == set(given):
        return head + "Feature names must be in the same order as they were in fit.\n"
    out = head
    for title, names in (("Feature names unseen at fit time:", sorted(set(given) - set(fitted), key=str)),
                         ("Feature names seen at fit time, yet now missing:", sorted(set(fitted) - set(given),
                                                                                      key=str))):
        if names:
            out += title + "\n" + "".join(f"- {n}\n" for n in names[:5]) + ("- ...\n" if len(names) > 5 else "")
    return out


def array_columns(X, names, who: str, *, fitting: bool = False, missing_ok: bool = False) -> tuple[dict, int]:
    """``({name: column}, n)`` of a 2-D numeric array with one column per name, checked as scikit-learn checks X.

    None in an object array is a missing value: refused (naming its
    column, never its row), or read as NaN when ``missing_ok`` (``fit``
    under ``invalid="clamp"`` or ``"drop"``, which drops such rows);
    ``fitting`` chooses the advice of the refusal.
    """
    d = len(names)
    arr = np.asarray(X)
    if arr.dtype.kind == "c":
        raise ValueError("X: Complex data not supported; X must hold numbers")
    if arr.dtype.kind == "O":
        absent = np.vectorize(lambda v: v is None, otypes=[bool])(arr) if arr.size else np.zeros(arr.shape, bool)
        if absent.any() and not missing_ok:
            where = (f"X: attribute {names[int(np.flatnonzero(absent.any(axis=0))[0])]!r}"
                     if arr.ndim == 2 and arr.shape[1] == d else "X")
            raise ValueError(f"{where} has missing values (None; allowed: numbers), values not shown; "
                             + ("pass invalid='drop' to fit without such rows, or fill them in" if fitting else
                                "fill them in: nearest centroids need a value in every column"))
        if absent.any():
            arr = np.where(absent, np.nan, arr)
        try:  # a TypeError (an object that is not a number) names its type only, and goes through
            arr = arr.astype(np.float64)
        except ValueError:  # a string that is not a number: not quoted
            raise ValueError("X must be a numeric array: it holds strings that are not numbers") from None
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"X must be a numeric array, got dtype {arr.dtype}")
    if arr.ndim == 2 and arr.shape[1] == 0:
        # scikit-learn's own wording (its checks match it); X is the caller's array in hand
        raise ValueError(f"Found array with 0 feature(s) (shape={arr.shape}) while a minimum of 1 is required "
                         f"(the estimator has {d})")
    if arr.ndim != 2:
        raise ValueError(f"Expected 2D array, got {arr.ndim}D array instead: X must have shape (n_samples, "
                         f"{d}). Reshape your data with X.reshape(-1, 1) if it has a single feature")
    if arr.shape[1] != d:
        raise ValueError(f"X has {arr.shape[1]} features, but {who} is expecting {d} features "
                         f"as input (the attributes {list(names)} of the policy's domain)")
    if arr.shape[0] < 1:
        raise ValueError(f"Found array with 0 sample(s) (shape={arr.shape}) while a minimum of 1 is required")
    return {name: arr[:, a] for a, name in enumerate(names)}, arr.shape[0]
