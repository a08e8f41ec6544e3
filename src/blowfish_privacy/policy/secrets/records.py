"""Records without a domain: the forms users pass values in, made into arrays.

A record is a scalar (1-D) or a tuple of per-attribute values; a list or
array holds several.  These helpers normalise records (hashable forms),
turn them into 2-D arrays (numeric when possible, exact Python integers
where int64 could overflow) and locate a graph's listed values in a
domain.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ..domain import Domain, is_int
from . import limits as _limits


def norm_value(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def norm_record(record: Any) -> Any:
    """A hashable form of one record: a scalar, or a tuple of >= 2 values."""
    if isinstance(record, np.ndarray):
        record = record.tolist()
    if isinstance(record, (tuple, list)):
        values = tuple(norm_value(v) for v in record)
        return values[0] if len(values) == 1 else values
    return norm_value(record)


def is_single(value: Any) -> bool:
    if isinstance(value, np.ndarray):
        return value.ndim == 0
    return not isinstance(value, list)


def _rows(records: list[Any], name: str) -> np.ndarray:
    """Records (already normalised) as a 2-D array, numeric when possible."""
    tuples = [r if isinstance(r, tuple) else (r,) for r in records]
    widths = {len(t) for t in tuples}
    if len(widths) > 1:
        raise ValueError(f"{name} must hold records of equal length, got lengths {sorted(widths)}")
    m = widths.pop() if widths else 1
    flat = [v for t in tuples for v in t]
    if all(is_int(v) for v in flat):
        if all(abs(v) < _limits.SAFE for v in flat):
            return np.array(flat, dtype=np.int64).reshape(len(tuples), m)
    elif all(isinstance(v, (numbers.Real, np.floating, np.integer)) and not isinstance(v, bool) for v in flat):
        return np.array(flat, dtype=np.float64).reshape(len(tuples), m)
    out = np.empty((len(tuples), m), dtype=object)
    for k, t in enumerate(tuples):
        for a, v in enumerate(t):
            out[k, a] = v
    return out


def as_rows(value: Any, name: str) -> np.ndarray:
    if is_single(value):
        return _rows([norm_record(value)], name)
    if isinstance(value, np.ndarray):
        arr = value
        if arr.ndim == 1 and arr.dtype.kind == "O":
            return _rows([norm_record(v) for v in arr.tolist()], name)
        if arr.ndim == 1:
            return arr[:, None]
        if arr.ndim == 2:
            return arr
        raise ValueError(f"{name} must be one record or a 1-D/2-D array of records, got shape {arr.shape}")
    return _rows([norm_record(v) for v in value], name)


def pair_rows(x: Any, y: Any) -> tuple[bool, np.ndarray, np.ndarray]:
    single = is_single(x) and is_single(y)
    X, Y = as_rows(x, "x"), as_rows(y, "y")
    if X.shape[1] != Y.shape[1]:
        raise ValueError(f"y must have records of the same length as x ({X.shape[1]} values), got {Y.shape[1]}")
    if X.shape[0] != Y.shape[0]:
        if X.shape[0] == 1:
            X = np.broadcast_to(X, Y.shape)
        elif Y.shape[0] == 1:
            Y = np.broadcast_to(Y, X.shape)
        else:
            raise ValueError(f"x and y must hold the same number of records (or one), got {X.shape[0]} and {Y.shape[0]}")
    return single, X, Y


def encode_values(domain: Domain, values: list[Any], what: str) -> np.ndarray:
    """Flat indices of a graph's listed values (scalars on a 1-D domain, tuples otherwise).

    A value outside the domain raises ValueError starting with ``what``
    (the values are the policy's, public).
    """
    try:
        if domain.ndim == 1:
            return domain.encode(values)
        return domain.encode([v if isinstance(v, tuple) else (v,) for v in values])
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from None


def differ(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    return np.asarray(X != Y, dtype=bool)


def row_keys(X: np.ndarray) -> list[Any]:
    return [norm_record(row) for row in X.tolist()]
