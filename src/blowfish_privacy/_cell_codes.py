"""Cells to domain codes: one column of a batch read under its attribute's rule for values outside the domain.

:func:`parse_column` is the per-cell half of the map step
(:func:`blowfish_privacy._aggregate.partition_aggregates`): an ordinal
column's cells become integers (saturated, clamped into ``[low, high]`` or
marked), a categorical column's cells become label codes, and the rows to
drop under ``"drop"`` (or ``"clamp"`` for unknown labels) are marked.
Under ``"clamp"`` an ordinal cell that is not an integer (empty, text,
``7.5``, ``nan``, ``inf``, undecodable bytes) counts as the attribute's
``low``.  A column that breaks its rule under ``"error"`` raises
:class:`~blowfish_privacy.errors.InvalidColumn`, whose entry names the
attribute, the column and the rule, never a value.
"""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np

from .errors import InvalidColumn
from .policy._domain_attributes import MISSING_TEXT, is_missing
from .policy.domain import Ordinal

__all__ = ["TEXT_CELL_CHARS", "column_values", "parse_column"]

#: Text cells longer than this (characters) are read one by one, not through a fixed-width numpy text array:
#: such an array is as wide as its longest cell, so one long cell among many short ones would cost the
#: number of cells times its length.
TEXT_CELL_CHARS = 64

# Saturation bound for ordinal values: beyond every domain bound (|bound| <= 2**62 - 1).
_SAT = 2**62


def _labels_shown(attr) -> str:
    """A categorical attribute's labels as messages show them: listed up to 8, else their number."""
    labels = list(attr.labels)
    return repr(labels) if len(labels) <= 8 else f"{len(labels)} labels"


def _rule(attr) -> str:
    if isinstance(attr, Ordinal):
        return f"has values outside the domain or not integers (allowed: integers in [{attr.low}, {attr.high}])"
    return f"has values that are not among the labels {_labels_shown(attr)}"


def _missing_rule(attr) -> str:
    """The rule broken by missing cells: said apart, since "outside the domain" misleads about a NaN or null."""
    if isinstance(attr, Ordinal):
        return f"has missing values (NaN/null, or empty cells; allowed: integers in [{attr.low}, {attr.high}])"
    # worded as the labels rule begins: the hint for unknown labels (drop or clamp) applies to missing cells too
    return f"has values that are not among the labels {_labels_shown(attr)}: missing values (NaN/null, or empty cells)"


def _missing_cells(arr: np.ndarray) -> np.ndarray:
    """A mask of the missing cells of a column (see :func:`~blowfish_privacy.policy._domain_attributes.is_missing`)."""
    if arr.dtype.kind == "f":
        return np.isnan(arr)
    if arr.dtype.kind == "U":
        return np.isin(np.char.lower(np.char.strip(arr)), MISSING_TEXT)
    if arr.dtype.kind in "OS":
        return np.fromiter((is_missing(v) for v in arr.tolist()), dtype=bool, count=arr.size)
    return np.zeros(arr.shape, dtype=bool)


def _broken_rules(attr, arr: np.ndarray, bad) -> list:
    """The rules an invalid column breaks: missing values, other values outside the domain, or both.

    Only called once the column is known to be invalid (the error path);
    ``bad`` marks malformed rows, whose placeholder cells are not data.
    """
    missing = _missing_cells(arr)
    if not isinstance(attr, Ordinal):
        unknown = _categorical_codes(attr, arr)[1]
        missing &= np.zeros(arr.shape, dtype=bool) if unknown is None else unknown  # a label "NA" is no missing cell
    if bad is not None:
        missing &= ~bad
    if not missing.any():
        return [_rule(attr)]
    rest = arr[~missing if bad is None else ~(missing | bad)]
    if isinstance(attr, Ordinal):
        other = bool(rest.size) and _ordinal_codes(attr, rest, "error")[3]
    else:
        other = bool(rest.size) and _categorical_codes(attr, rest)[1] is not None
    return [_missing_rule(attr)] + ([_rule(attr)] if other else [])


def _parse_int(v):
    """An integer cell as an int (saturated to +-2**62), or None (missing, not a number, not integral)."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return max(-_SAT, min(_SAT, v))
    if isinstance(v, Decimal):  # a decimal column (e.g. DECIMAL(10,0) from a database): integral values count
        return max(-_SAT, min(_SAT, int(v))) if v.is_finite() and v == v.to_integral_value() else None
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
            floats = arr.astype(np.float64)
        except (ValueError, TypeError, OverflowError):
            pass
        else:
            ints, bad = _ordinal_ints(floats)
            # a float holds integers exactly only below 2**53: larger cells are read one by one, as alone
            # (a cell's value never depends on the other cells of its batch)
            wide = np.flatnonzero(np.abs(floats) >= 2.0**53)
            if wide.size:
                bad = np.zeros(arr.size, dtype=bool) if bad is None else bad
                for i in wide.tolist():
                    v = _parse_int(arr[i])
                    bad[i] = v is None
                    ints[i] = 0 if v is None else v
                bad = bad if bad.any() else None
            return ints, bad
    elif kind == "O":
        vals = arr.tolist()
        if vals and all(type(v) is str for v in vals):
            long = _long_cells(vals)
            if long is None:
                return _ordinal_ints(np.array(vals, dtype=str))
            ints = np.zeros(len(vals), dtype=np.int64)
            bad = np.zeros(len(vals), dtype=bool)
            short = np.ones(len(vals), dtype=bool)
            short[long] = False
            rest = np.flatnonzero(short)
            if rest.size:
                got, not_int = _ordinal_ints(np.array([vals[i] for i in rest.tolist()], dtype=str))
                ints[rest] = got
                if not_int is not None:
                    bad[rest] = not_int
            for i in long.tolist():  # one at a time: a cell's text is held once
                v = _parse_int(vals[i])
                if v is None:
                    bad[i] = True
                else:
                    ints[i] = v
            return ints, bad if bad.any() else None
    parsed = [_parse_int(v) for v in arr.tolist()]
    bad = np.fromiter((v is None for v in parsed), dtype=bool, count=len(parsed))
    ints = np.fromiter((0 if v is None else v for v in parsed), dtype=np.int64, count=len(parsed))
    return ints, bad if bad.any() else None


def _long_cells(vals: list):
    """Positions of the cells (a list of str) longer than :data:`TEXT_CELL_CHARS`, or None when there are none."""
    lengths = np.fromiter(map(len, vals), dtype=np.int64, count=len(vals))
    if not lengths.size or int(lengths.max()) <= TEXT_CELL_CHARS:
        return None
    return np.flatnonzero(lengths > TEXT_CELL_CHARS)


def _ordinal_codes(attr, arr: np.ndarray, mode: str, bad=None):
    """``(clamped values, codes, rows to drop or None, whether a cell is invalid)`` of an ordinal column.

    A cell that is not an integer counts as ``low`` (``"clamp"``) or drops
    its row (``"drop"``); so do the rows of ``bad`` (malformed rows, a
    boolean mask or None), whose placeholder cells are not data: they never
    make the column invalid (the caller reports malformed rows apart).
    """
    ints, not_int = _ordinal_ints(arr)
    low, high = attr.low, attr.high
    real = not_int  # cells of real rows that are not integers
    if bad is not None:
        if not_int is not None:
            real = not_int & ~bad
            if not real.any():
                real = None
        not_int = bad if not_int is None else not_int | bad
    if not_int is not None:
        ints = np.where(not_int, low, ints)
    out = None
    if ints.size and (int(ints.min()) < low or int(ints.max()) > high):
        out = (ints < low) | (ints > high)
        ints = np.clip(ints, low, high)
    invalid = real is not None or out is not None
    drop = None
    if mode == "drop":
        drop = not_int
        if out is not None:
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
        code = None if n is None else attr.code_of(n)
        if code is None and v.strip() != v:  # surrounding spaces, as the text path strips them
            code = attr.code_of(v.strip())
        return code
    if isinstance(v, int):
        return attr.code_of(str(v))
    return None


def _categorical_codes(attr, arr: np.ndarray):
    """``(codes, rows to drop or None)`` of a categorical column."""
    labels = attr.labels
    str_labels = all(type(v) is str for v in labels)
    int_labels = all(type(v) is int for v in labels)
    kind = arr.dtype.kind
    long_codes = None
    if kind == "O":
        vals = arr.tolist()
        if vals and all(type(v) is str for v in vals):
            long = _long_cells(vals)
            if long is not None:  # looked up one at a time, as the lookup below would (exact, then stripped)
                long_codes = {}
                for i in long.tolist():
                    v = vals[i]
                    code = _label_code(attr, v)
                    long_codes[i] = code if code is not None else _label_code(attr, v.strip())
                    vals[i] = ""
            arr, kind = np.array(vals, dtype=str), "U"
    if long_codes is not None:
        codes, drop = _categorical_codes(attr, arr)
        ok = np.ones(len(codes), dtype=bool) if drop is None else ~drop
        for i, code in long_codes.items():
            ok[i] = code is not None
            codes[i] = 0 if code is None else code
        return (codes, None) if ok.all() else (np.where(ok, codes, 0), ~ok)
    text = None  # the cells as text, when they were parsed as floats (wide ones are read again from it)
    if int_labels and kind in "US":
        for dtype in (np.int64, np.float64):
            try:
                arr, kind, text = arr.astype(dtype), np.dtype(dtype).kind, (arr if dtype is np.float64 else None)
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
        if kind == "f":  # beyond 2**53 a float equals several integers: such cells are looked up one by one
            for i in np.flatnonzero(np.abs(arr) >= 2.0**53).tolist():
                code = _label_code(attr, float(arr[i]) if text is None else text[i])
                ok[i] = code is not None
                codes[i] = 0 if code is None else code
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


def parse_column(attr, col: str, values, mode: str, bad=None):
    """``(values, codes, rows to drop or None)`` of one column under ``mode``; ``bad``: malformed rows or None."""
    arr = np.asarray(column_values(values)).reshape(-1)
    if isinstance(attr, Ordinal):
        ints, codes, drop, invalid = _ordinal_codes(attr, arr, mode, bad)
    else:
        ints, (codes, drop) = None, _categorical_codes(attr, arr)
        invalid = drop is not None and (bad is None or bool((drop & ~bad).any()))
        if bad is not None:
            drop = bad if drop is None else drop | bad
    if invalid and mode == "error":
        raise InvalidColumn([(attr.name, col, rule) for rule in _broken_rules(attr, arr, bad)])
    return ints, codes, drop


def column_values(col):
    """A column as numpy (a pandas or Polars series through its ``to_numpy``), else as given."""
    to_numpy = getattr(col, "to_numpy", None)
    return to_numpy() if to_numpy is not None else col
