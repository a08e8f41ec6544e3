"""The attributes of a domain: :class:`Ordinal` (integer ranges in bins) and :class:`Categorical`.

Each attribute maps its values to codes ``0..size-1`` (an ordinal value to
its bin, a label to its position) and back, checking values once with
messages that name the parameter, the attribute and the rule broken: the
values checked may be data, so a message never quotes an offending value
nor says where in the column it lies.
:class:`~blowfish_privacy.policy.domain.Domain` (He, Machanavajjhala, Ding,
Blowfish Privacy, SIGMOD 2014, 000 Sec 2) is their product; every name here
is re-exported by :mod:`blowfish_privacy.policy.domain`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable, Iterable, Sequence
from decimal import Decimal
from typing import Any

import numpy as np

__all__ = ["Ordinal", "Categorical", "Attribute", "VALUE_BOUND"]

#: Bound on the magnitude of ordinal endpoints, so that differences of two
#: values (and the value arithmetic of metrics) stay exact in int64.
VALUE_BOUND = 2**62 - 1
INT64_MAX = 2**63 - 1
_SHOW_LABELS = 8
#: Said by every message about a value that breaks its attribute's rule.
_NOT_SHOWN = "the value and its position are not shown"


#: Text cells read as missing values (compared stripped and in lower case), as pandas and Polars read them.
MISSING_TEXT = ("", "nan", "null", "none", "na", "<na>")


class MissingValues(ValueError):
    """A column holds missing values (None, NaN, pandas' NA): said apart from values outside the domain."""


def is_missing(value: Any) -> bool:
    """Whether one cell is a missing value: None, NaN, pandas' NA or NaT, or an empty or "nan"/"null" text."""
    if value is None:
        return True
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value != value
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        return value.strip().lower() in MISSING_TEXT
    return type(value).__name__ in ("NAType", "NaTType")  # pandas' missing values, without importing pandas


def is_int(value: Any) -> bool:
    """True for Python and numpy integers, False for bools."""
    return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, (bool, np.bool_))


def _check_name(name: Any) -> str:
    if not isinstance(name, str):
        raise TypeError(f"name must be a non-empty str, got {name!r} of type {type(name).__name__}")
    if not name:
        raise ValueError("name must be a non-empty str, got ''")
    return name


def _show(value: Any) -> str:
    """repr of a value, with numpy scalars shown as plain Python numbers."""
    if isinstance(value, np.generic):
        value = value.item()
    return repr(value)


def int_text(value: int) -> str:
    """An integer as written, or in 6 significant digits past 20 digits (1e300's 301 digits help no reader)."""
    if abs(value) < 10**20:
        return str(value)
    return f"{Decimal(value):.5e} (an integer of {len(str(abs(value)))} digits)"


def labels_text(labels: Sequence[Hashable]) -> str:
    if len(labels) <= _SHOW_LABELS:
        return repr(list(labels))
    shown = ", ".join(repr(v) for v in labels[:_SHOW_LABELS])
    return f"[{shown}, ...] ({len(labels)} labels)"


class Ordinal:
    """An ordinal attribute: the integers ``low..high``, in bins of ``bin_width``.

    Bin ``k`` covers ``low + k*bin_width .. low + (k+1)*bin_width - 1`` (the
    last bin may be partial) and is represented by its lower edge
    ``low + k*bin_width``: that is the *value* metrics and sums use.

    Parameters
    ----------
    name : str
        Attribute name, non-empty.
    low, high : int
        Inclusive range, ``low <= high``, both within ``+-(2**62 - 1)``.
    bin_width : int, default 1
        Width of each bin, ``>= 1``.

    Attributes
    ----------
    size : int
        Number of bins, ``ceil((high - low + 1) / bin_width)``.
    """

    __slots__ = ("name", "low", "high", "bin_width", "size")
    kind = "ordinal"

    def __init__(self, name: str, low: int, high: int, bin_width: int = 1) -> None:
        self.name = _check_name(name)
        for pname, value in (("low", low), ("high", high), ("bin_width", bin_width)):
            if not is_int(value):
                raise TypeError(f"{pname} must be an int (not bool), got {value!r} of type {type(value).__name__}")
        low, high, bin_width = int(low), int(high), int(bin_width)
        for pname, value in (("low", low), ("high", high)):
            if abs(value) > VALUE_BOUND:
                raise ValueError(f"{pname} must be an int in [-(2**62 - 1), 2**62 - 1], got {int_text(value)}")
        if low > high:
            raise ValueError(f"low must be <= high, got low={low}, high={high}")
        if not 1 <= bin_width <= VALUE_BOUND:  # wider than any span is one bin, and this keeps messages short
            raise ValueError(f"bin_width must be an int in [1, 2**62 - 1], got {int_text(bin_width)}")
        self.low = low
        self.high = high
        self.bin_width = bin_width
        self.size = -(-(high - low + 1) // bin_width)

    # -- identity -------------------------------------------------------
    def _key(self) -> tuple:
        return ("ordinal", self.name, self.low, self.high, self.bin_width)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Ordinal) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        width = f", bin_width={self.bin_width}" if self.bin_width != 1 else ""
        return f"Ordinal({self.name!r}, {self.low}, {self.high}{width})"

    # -- values ------------------------------------------------------------
    @property
    def last_value(self) -> int:
        """Lower edge of the last bin."""
        return self.low + (self.size - 1) * self.bin_width

    @property
    def span(self) -> int:
        """Largest difference between two bin values, ``bin_width * (size - 1)``."""
        return self.bin_width * (self.size - 1)

    def value_of_codes(self, codes: np.ndarray) -> np.ndarray:
        """Bin values (lower edges) of bin codes, as int64."""
        codes = np.asarray(codes, dtype=np.int64)
        if self.bin_width == 1:
            return codes + self.low
        return codes * self.bin_width + self.low

    def bin_values(self) -> np.ndarray:
        """All bin values, ``low, low + w, ...``, as an int64 array of length ``size``."""
        return self.value_of_codes(np.arange(self.size, dtype=np.int64))

    def codes_of(self, column: Any, *, param: str = "records") -> np.ndarray:
        """Bin codes of a column of values (vectorised).

        Parameters
        ----------
        column : array_like
            The values.
        param : str, default "records"
            The name messages give the values.

        Returns
        -------
        numpy.ndarray of int64

        Raises
        ------
        ValueError
            If a value is not an integer (an integral float is accepted) or
            lies outside ``[low, high]``.  The message names ``param``, the
            attribute and the rule broken, never the value nor its position.
        """
        if isinstance(column, np.ndarray):
            arr = column.reshape(-1)
        else:
            try:
                arr = np.asarray(column).reshape(-1)
            except (ValueError, TypeError, OverflowError):
                arr = None
            if arr is None or arr.dtype.kind not in "iuf":
                values = list(column)
                arr = np.empty(len(values), dtype=object)
                for k, value in enumerate(values):
                    arr[k] = value
        kind = arr.dtype.kind
        if arr.size == 0:
            return np.zeros(0, dtype=np.int64)
        if kind == "u":
            if int(arr.max()) > self.high:
                self._out_of_range(param)
            arr = arr.astype(np.int64)
            kind = "i"
        if kind == "i":
            ints = arr.astype(np.int64, copy=False)
        elif kind == "f":
            if not (np.isfinite(arr) & (arr == np.floor(arr))).all():
                if np.isnan(arr).any():
                    self._missing(param)
                self._not_integer(param)
            if ((arr < -(2.0**62)) | (arr > 2.0**62)).any():
                self._out_of_range(param)
            ints = arr.astype(np.int64)
        elif kind == "O":
            ints = self._object_to_int(arr, param)
        else:
            raise ValueError(
                f"{param}: attribute {self.name!r} takes {self._allowed()}, got values of dtype {arr.dtype}"
            )
        if int(ints.min()) < self.low or int(ints.max()) > self.high:
            self._out_of_range(param)
        codes = ints - self.low
        if self.bin_width != 1:
            codes //= self.bin_width
        return codes

    def _allowed(self) -> str:
        return f"integers in [{self.low}, {self.high}]"

    def _object_to_int(self, arr: np.ndarray, param: str) -> np.ndarray:
        out = np.empty(arr.shape[0], dtype=np.int64)
        for k, value in enumerate(arr.tolist()):
            if is_int(value):
                number = int(value)
            elif isinstance(value, (float, np.floating)) and math.isfinite(value) and float(value).is_integer():
                number = int(value)
            elif is_missing(value):
                self._missing(param)
            else:
                self._not_integer(param)
            if number < self.low or number > self.high:
                self._out_of_range(param)
            out[k] = number
        return out

    def _not_integer(self, param: str) -> None:
        raise ValueError(
            f"{param}: a value of attribute {self.name!r} is not an integer (allowed: {self._allowed()}); {_NOT_SHOWN}"
        )

    def _missing(self, param: str) -> None:
        raise MissingValues(
            f"{param}: attribute {self.name!r} has missing values (NaN/null; allowed: {self._allowed()}); "
            f"{_NOT_SHOWN}"
        )

    def _out_of_range(self, param: str) -> None:
        raise ValueError(
            f"{param}: a value of attribute {self.name!r} lies outside [{self.low}, {self.high}] (allowed: "
            f"{self._allowed()}); {_NOT_SHOWN}"
        )


class Categorical:
    """A categorical attribute: a finite list of distinct hashable labels.

    Parameters
    ----------
    name : str
        Attribute name, non-empty.
    labels : sequence of hashable
        The labels, non-empty and distinct.  The code of a label is its
        position in ``labels``.
    """

    __slots__ = ("name", "labels", "size", "_index", "_label_array", "_sorted")
    kind = "categorical"

    def __init__(self, name: str, labels: Sequence[Hashable]) -> None:
        self.name = _check_name(name)
        if isinstance(labels, (str, bytes)) or not isinstance(labels, Iterable):
            raise TypeError(f"labels must be a sequence of hashable labels, got {labels!r}")
        labels = tuple(labels)
        if not labels:
            raise ValueError(f"labels must be a non-empty sequence of distinct labels, got {list(labels)!r}")
        index: dict[Hashable, int] = {}
        for code, label in enumerate(labels):
            if isinstance(label, np.generic):
                label = label.item()
            try:
                seen = label in index
            except TypeError:
                raise TypeError(
                    f"labels must be hashable, got {label!r} of type {type(label).__name__} at position {code}"
                ) from None
            if seen:
                raise ValueError(
                    f"labels must be distinct, got {label!r} at positions {index[label]} and {code}"
                )
            index[label] = code
        self.labels = tuple(index)
        self.size = len(self.labels)
        self._index = index
        self._label_array = self._make_label_array()
        self._sorted = self._make_sorted()

    def _make_label_array(self) -> np.ndarray:
        labels = self.labels
        if all(type(v) is str for v in labels):
            arr = np.array(labels, dtype=str)
            if arr.tolist() == list(labels):  # numpy strings drop trailing NULs
                return arr
        if all(is_int(v) and abs(int(v)) <= INT64_MAX for v in labels):
            return np.array(labels, dtype=np.int64)
        if all(type(v) is float for v in labels):
            return np.array(labels, dtype=np.float64)
        arr = np.empty(len(labels), dtype=object)
        for k, v in enumerate(labels):
            arr[k] = v
        return arr

    def _make_sorted(self) -> tuple[np.ndarray, np.ndarray] | None:
        if self._label_array.dtype.kind not in "Ui":
            return None
        order = np.argsort(self._label_array, kind="stable")
        return self._label_array[order], order.astype(np.int64)

    def _key(self) -> tuple:
        return ("categorical", self.name, self.labels)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Categorical) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Categorical({self.name!r}, {list(self.labels)!r})"

    def code_of(self, label: Any) -> int | None:
        """Code of one label, or None when it is not a label."""
        if isinstance(label, np.generic):
            label = label.item()
        try:
            return self._index.get(label)
        except TypeError:
            return None

    def value_of_codes(self, codes: np.ndarray) -> np.ndarray:
        """Labels of codes, as a numpy array (str, int64, float64 or object)."""
        return self._label_array[np.asarray(codes, dtype=np.int64)]

    def codes_of(self, column: Any, *, param: str = "records") -> np.ndarray:
        """Codes of a column of labels.

        Parameters
        ----------
        column : array_like
            The labels.
        param : str, default "records"
            The name messages give the values.

        Returns
        -------
        numpy.ndarray of int64

        Raises
        ------
        ValueError
            If a value is not one of the labels.  The message names
            ``param``, the attribute and the labels, never the value nor its
            position.
        """
        if isinstance(column, np.ndarray):
            arr = column.reshape(-1)
        else:
            values = list(column)
            arr = np.empty(len(values), dtype=object)
            for k, value in enumerate(values):
                arr[k] = value
        n = arr.shape[0]
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        if self._sorted is not None:
            fast = self._fast_codes(arr)
            if fast is not None:
                codes, ok = fast
                if not ok.all():
                    self._unknown(param)
                return codes
        codes = np.empty(n, dtype=np.int64)
        for k, value in enumerate(arr.tolist()):
            code = self.code_of(value)
            if code is None:
                if is_missing(value):
                    raise MissingValues(f"{param}: attribute {self.name!r} has missing values (NaN/null; allowed: "
                                        f"one of the labels {labels_text(self.labels)}); {_NOT_SHOWN}")
                self._unknown(param)
            codes[k] = code
        return codes

    def _fast_codes(self, arr: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        sorted_labels, order = self._sorted
        kind = arr.dtype.kind
        if sorted_labels.dtype.kind == "U" and kind == "U":
            probe = arr
        elif sorted_labels.dtype.kind == "i" and kind in "iu":
            if kind == "u" and int(arr.max()) > INT64_MAX:
                return None
            probe = arr.astype(np.int64, copy=False)
        else:
            return None
        pos = np.searchsorted(sorted_labels, probe)
        pos = np.minimum(pos, len(sorted_labels) - 1)
        ok = sorted_labels[pos] == probe
        return order[pos], ok

    def _unknown(self, param: str) -> None:
        raise ValueError(
            f"{param}: a value of attribute {self.name!r} is not one of the labels {labels_text(self.labels)}; "
            f"{_NOT_SHOWN}"
        )


Attribute = Ordinal | Categorical
