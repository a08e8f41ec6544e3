"""Finite data domains and their flat (mixed-radix) index.

A tuple of a dataset takes its value in a domain ``T = A_1 x ... x A_m``
(000 Sec 2).  Each attribute here is either *ordinal* (an integer range,
optionally grouped into bins of equal width) or *categorical* (a list of
labels).  Every value of the domain has a flat index in ``[0, |T|)``: the
per-attribute codes read as a mixed-radix number with the first attribute
most significant, exactly as :func:`numpy.ravel_multi_index` does in C
order.

``|T|`` may be large (10^8 values and more): nothing here allocates one
object per domain value; per-attribute tables are at most the size of one
attribute.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["Ordinal", "Categorical", "Domain", "Attribute"]

#: Bound on the magnitude of ordinal endpoints, so that differences of two
#: values (and the value arithmetic of metrics) stay exact in int64.
VALUE_BOUND = 2**62 - 1
_INT64_MAX = 2**63 - 1
_SHOW_LABELS = 8


def _is_int(value: Any) -> bool:
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


def _labels_text(labels: Sequence[Hashable]) -> str:
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
            if not _is_int(value):
                raise TypeError(f"{pname} must be an int (not bool), got {value!r} of type {type(value).__name__}")
        low, high, bin_width = int(low), int(high), int(bin_width)
        for pname, value in (("low", low), ("high", high)):
            if abs(value) > VALUE_BOUND:
                raise ValueError(f"{pname} must be an int in [-(2**62 - 1), 2**62 - 1], got {value}")
        if low > high:
            raise ValueError(f"low must be <= high, got low={low}, high={high}")
        if bin_width < 1:
            raise ValueError(f"bin_width must be an int >= 1, got {bin_width}")
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

        Raises
        ------
        ValueError
            If a value is not an integer (an integral float is accepted) or
            lies outside ``[low, high]``.
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
        allowed = f"integers in [{self.low}, {self.high}]"
        if arr.size == 0:
            return np.zeros(0, dtype=np.int64)
        if kind == "u":
            top = int(arr.max())
            if top > self.high:
                k = int(np.argmax(arr > self.high)) if top <= _INT64_MAX else int(np.argmax(arr))
                self._out_of_range(param, arr[k], k, allowed)
            arr = arr.astype(np.int64)
            kind = "i"
        if kind == "i":
            ints = arr.astype(np.int64, copy=False)
        elif kind == "f":
            finite_integral = np.isfinite(arr) & (arr == np.floor(arr))
            if not finite_integral.all():
                k = int(np.argmin(finite_integral))
                raise ValueError(
                    f"{param}: attribute {self.name!r} takes {allowed}, "
                    f"got non-integral value {_show(arr[k])} (record {k})"
                )
            bad = (arr < -(2.0**62)) | (arr > 2.0**62)
            if bad.any():
                k = int(np.argmax(bad))
                self._out_of_range(param, arr[k], k, allowed)
            ints = arr.astype(np.int64)
        elif kind == "O":
            ints = self._object_to_int(arr, param, allowed)
        else:
            raise ValueError(
                f"{param}: attribute {self.name!r} takes {allowed}, got value {_show(arr[0])} of dtype {arr.dtype}"
            )
        lo, hi = int(ints.min()), int(ints.max())
        if lo < self.low or hi > self.high:
            bad = (ints < self.low) | (ints > self.high)
            k = int(np.argmax(bad))
            self._out_of_range(param, ints[k], k, allowed)
        codes = ints - self.low
        if self.bin_width != 1:
            codes //= self.bin_width
        return codes

    def _object_to_int(self, arr: np.ndarray, param: str, allowed: str) -> np.ndarray:
        out = np.empty(arr.shape[0], dtype=np.int64)
        for k, value in enumerate(arr.tolist()):
            if _is_int(value):
                number = int(value)
            elif isinstance(value, (float, np.floating)) and math.isfinite(value) and float(value).is_integer():
                number = int(value)
            else:
                raise ValueError(
                    f"{param}: attribute {self.name!r} takes {allowed}, got {value!r} (record {k})"
                )
            if number < self.low or number > self.high:
                self._out_of_range(param, value, k, allowed)
            out[k] = number
        return out

    def _out_of_range(self, param: str, value: Any, k: int, allowed: str) -> None:
        raise ValueError(
            f"{param}: attribute {self.name!r} value {_show(value)} (record {k}) is outside the domain; allowed: {allowed}"
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
        if all(_is_int(v) and abs(int(v)) <= _INT64_MAX for v in labels):
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

        Raises
        ------
        ValueError
            If a value is not one of the labels.
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
                    k = int(np.argmin(ok))
                    self._unknown(param, arr[k], k)
                return codes
        codes = np.empty(n, dtype=np.int64)
        for k, value in enumerate(arr.tolist()):
            code = self.code_of(value)
            if code is None:
                self._unknown(param, value, k)
            codes[k] = code
        return codes

    def _fast_codes(self, arr: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        sorted_labels, order = self._sorted
        kind = arr.dtype.kind
        if sorted_labels.dtype.kind == "U" and kind == "U":
            probe = arr
        elif sorted_labels.dtype.kind == "i" and kind in "iu":
            if kind == "u" and int(arr.max()) > _INT64_MAX:
                return None
            probe = arr.astype(np.int64, copy=False)
        else:
            return None
        pos = np.searchsorted(sorted_labels, probe)
        pos = np.minimum(pos, len(sorted_labels) - 1)
        ok = sorted_labels[pos] == probe
        return order[pos], ok

    def _unknown(self, param: str, value: Any, k: int) -> None:
        raise ValueError(
            f"{param}: attribute {self.name!r} value {_show(value)} (record {k}) is not one of the labels "
            f"{_labels_text(self.labels)}"
        )


Attribute = Ordinal | Categorical


class Domain:
    """The data domain ``T = A_1 x ... x A_m`` (000 Sec 2).

    Parameters
    ----------
    attributes : sequence of Ordinal or Categorical
        Non-empty, with distinct names.  Their order fixes the flat index:
        the first attribute is the most significant digit.

    Attributes
    ----------
    attributes : tuple
        The attributes.
    names : tuple of str
        Their names.
    ndim : int
        Number of attributes ``m``.
    shape : tuple of int
        Number of values (bins or labels) of each attribute.
    size : int
        ``|T|``, the product of ``shape`` (a Python int, at most 2**63 - 1).

    Examples
    --------
    >>> d = Domain([Ordinal("age", 0, 99, bin_width=10), Categorical("sex", ["f", "m"])])
    >>> d.shape, d.size
    ((10, 2), 20)
    >>> int(d.encode([(35, "m")])[0])
    7
    """

    __slots__ = ("_attributes", "_names", "_shape", "_size", "_strides", "_position")

    def __init__(self, attributes: Sequence[Attribute]) -> None:
        if isinstance(attributes, (str, bytes, Ordinal, Categorical)) or not isinstance(attributes, Iterable):
            raise TypeError(
                f"attributes must be a sequence of Ordinal or Categorical attributes, got {attributes!r}"
            )
        attributes = tuple(attributes)
        if not attributes:
            raise ValueError("attributes must be a non-empty sequence of Ordinal or Categorical attributes, got []")
        position: dict[str, int] = {}
        for k, attr in enumerate(attributes):
            if not isinstance(attr, (Ordinal, Categorical)):
                raise TypeError(
                    f"attributes must hold Ordinal or Categorical attributes, got {attr!r} at position {k}"
                )
            if attr.name in position:
                raise ValueError(
                    f"attributes must have distinct names, got {attr.name!r} at positions {position[attr.name]} and {k}"
                )
            position[attr.name] = k
        shape = tuple(a.size for a in attributes)
        size = math.prod(shape)
        if size > _INT64_MAX:
            raise ValueError(
                f"attributes span {size} values; the domain size must be at most 2**63 - 1 so flat indices fit int64"
            )
        strides = [1] * len(shape)
        for a in range(len(shape) - 2, -1, -1):
            strides[a] = strides[a + 1] * shape[a + 1]
        self._attributes = attributes
        self._names = tuple(position)
        self._shape = shape
        self._size = size
        self._strides = tuple(strides)
        self._position = position

    @classmethod
    def ordinal(cls, name: str, low: int, high: int, bin_width: int = 1) -> Domain:
        """One-attribute ordinal domain ``low..high`` in bins of ``bin_width``."""
        return cls([Ordinal(name, low, high, bin_width)])

    # -- properties ---------------------------------------------------------
    @property
    def attributes(self) -> tuple[Attribute, ...]:
        return self._attributes

    @property
    def names(self) -> tuple[str, ...]:
        return self._names

    @property
    def ndim(self) -> int:
        return len(self._attributes)

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def size(self) -> int:
        return self._size

    @property
    def strides(self) -> tuple[int, ...]:
        """Flat-index weight of each attribute's code."""
        return self._strides

    def attribute(self, name: str) -> Attribute:
        """The attribute called ``name``."""
        return self._attributes[self.position(name)]

    def position(self, name: str) -> int:
        """Position of the attribute called ``name``."""
        try:
            return self._position[name]
        except (KeyError, TypeError):
            raise ValueError(f"name must be one of the attribute names {list(self._names)}, got {name!r}") from None

    def is_ordinal(self) -> bool:
        """True when every attribute is ordinal."""
        return all(isinstance(a, Ordinal) for a in self._attributes)

    # -- identity -----------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        return isinstance(other, Domain) and self._attributes == other._attributes

    def __hash__(self) -> int:
        return hash(self._attributes)

    def __repr__(self) -> str:
        return f"Domain([{', '.join(repr(a) for a in self._attributes)}])"

    # -- indices ------------------------------------------------------------
    def check_indices(self, indices: Any, name: str = "indices") -> np.ndarray:
        """Flat indices as an int64 array (same shape), checked to lie in ``[0, size)``.

        Raises
        ------
        TypeError
            If the values are not integers.
        ValueError
            If one lies outside ``[0, size)``.
        """
        allowed = f"integers in [0, {self._size})"
        if isinstance(indices, (bool, np.bool_)):
            raise TypeError(f"{name} must be {allowed}, got {indices!r}")
        arr = indices if isinstance(indices, np.ndarray) else np.asarray(indices)
        if arr.dtype.kind == "O" and arr.size and all(_is_int(v) for v in arr.reshape(-1).tolist()):
            for value in arr.reshape(-1).tolist():
                if not 0 <= value < self._size:
                    raise ValueError(f"{name} must be {allowed}, got {value!r}")
            arr = arr.astype(np.int64)
        if arr.dtype.kind not in "iu":
            if arr.size == 0:
                return np.zeros(arr.shape, dtype=np.int64)
            raise TypeError(f"{name} must be {allowed}, got values of dtype {arr.dtype}")
        if arr.size:
            lo, hi = arr.min(), arr.max()
            if lo < 0 or hi >= self._size:
                bad = (arr < 0) | (arr >= self._size)
                value = arr.reshape(-1)[int(np.argmax(bad.reshape(-1)))]
                raise ValueError(f"{name} must be {allowed}, got {_show(value)}")
        return arr.astype(np.int64, copy=False)

    def codes(self, indices: Any) -> np.ndarray:
        """Per-attribute codes (bin or label positions) of flat indices.

        Parameters
        ----------
        indices : int or array_like of int
            Flat indices in ``[0, size)``.

        Returns
        -------
        numpy.ndarray of int64
            Shape ``indices.shape + (ndim,)``, like a stacked
            :func:`numpy.unravel_index`.
        """
        idx = self.check_indices(indices)
        return self._codes_unchecked(idx)

    def _codes_unchecked(self, idx: np.ndarray) -> np.ndarray:
        out = np.empty(idx.shape + (self.ndim,), dtype=np.int64)
        rest = idx.astype(np.int64, copy=True)
        for a in range(self.ndim - 1, 0, -1):
            rest, out[..., a] = np.divmod(rest, self._shape[a])
        out[..., 0] = rest
        return out

    def values(self, indices: Any) -> list[np.ndarray]:
        """Per-attribute values of flat indices.

        Returns
        -------
        list of numpy.ndarray
            One array per attribute, each of ``indices``' shape: bin lower
            edges (int64) for ordinal attributes, labels for categorical ones.
        """
        codes = self.codes(indices)
        return [attr.value_of_codes(codes[..., a]) for a, attr in enumerate(self._attributes)]

    def encode(self, records: Any) -> np.ndarray:
        """Flat indices of records.

        Parameters
        ----------
        records : array_like, mapping or table
            A 2-D array-like of shape ``(n, ndim)`` (a list of tuples is
            fine; mixed types are read column by column), or for a 1-D domain
            a 1-D array-like of values (a pandas or Polars Series, a pyarrow
            array), or a mapping ``{name: column}`` with one column per
            attribute, or a table: a pandas or Polars DataFrame or a pyarrow
            Table, whose columns are taken by attribute name (other columns
            are ignored; integer columns are read without a copy).

        Returns
        -------
        numpy.ndarray of int64, shape (n,)

        Raises
        ------
        ValueError
            If the shape is wrong or a value lies outside the domain (the
            message names the attribute, the first offending value and what is
            allowed).  For a table the message names the attribute, the
            column and what is allowed, never a value or a row: use
            :func:`blowfish_privacy.histogram` with ``invalid="clamp"`` or
            ``"drop"`` to count a table with such values.

        Examples
        --------
        >>> import pandas as pd                                                # doctest: +SKIP
        >>> d = Domain([Categorical("sex", ["f", "m"]), Ordinal("age", 0, 99)])  # doctest: +SKIP
        >>> d.encode(pd.DataFrame({"age": [35, 7], "sex": ["m", "f"]})).tolist()  # doctest: +SKIP
        [135, 7]
        """
        from . import frames

        if frames.is_table(records):
            return self._encode_table(records, frames)
        columns = self._columns(records)
        n = len(columns[0]) if columns else 0
        flat: np.ndarray | None = None
        for a, (attr, column) in enumerate(zip(self._attributes, columns)):
            codes = attr.codes_of(column)
            if codes.shape[0] != n:
                raise ValueError(f"records: all columns must have the same length, got {codes.shape[0]} and {n}")
            if flat is None:
                flat = codes if self._strides[a] == 1 else codes * self._strides[a]
            elif self._strides[a] == 1:
                flat += codes
            else:
                flat += codes * self._strides[a]
        assert flat is not None
        return flat

    def _encode_table(self, table: Any, frames: Any) -> np.ndarray:
        """Flat indices of a DataFrame's rows; errors name attribute and column, never a value."""
        columns = frames.table_columns(table, self._names, param="records")
        n = len(columns[self._names[0]])
        flat = np.zeros(n, dtype=np.int64)
        for attr, stride in zip(self._attributes, self._strides):
            try:
                codes = attr.codes_of(columns[attr.name])
            except (ValueError, TypeError, OverflowError):
                if isinstance(attr, Ordinal):
                    rule = f"has values outside the domain or not integers (allowed: integers in [{attr.low}, {attr.high}])"
                else:
                    rule = f"has values that are not among the labels {_labels_text(attr.labels)}"
                raise frames.TableError(
                    f"records: attribute {attr.name!r}: column {attr.name!r} {rule}; values not shown (they come "
                    "from the data); blowfish_privacy.histogram(table, domain, invalid='clamp' or 'drop') counts "
                    "such a table"
                ) from None
            flat += codes if stride == 1 else codes * stride
        return flat

    def _columns(self, records: Any) -> list[Any]:
        from .frames import _series_kind, column_array

        m = self.ndim
        if m == 1 and _series_kind(records) is not None:
            return [column_array(records)]
        if isinstance(records, Mapping):
            keys = set(records)
            if keys != set(self._names):
                raise ValueError(
                    f"records as a mapping must have exactly the keys {list(self._names)}, got {sorted(map(str, keys))}"
                )
            columns = [column_array(c) if _series_kind(c) is not None else c for c in (records[n] for n in self._names)]
            lengths = {len(c) for c in columns}
            if len(lengths) != 1:
                raise ValueError(f"records: all columns must have the same length, got lengths {sorted(lengths)}")
            return columns
        if isinstance(records, np.ndarray):
            if records.ndim == 1 and m == 1:
                return [records]
            if records.ndim == 2 and records.shape[1] == m:
                return [records[:, a] for a in range(m)]
            raise ValueError(
                f"records must have shape (n, {m})" + (" or (n,)" if m == 1 else "") + f", got shape {records.shape}"
            )
        if isinstance(records, (str, bytes)) or not isinstance(records, Iterable):
            raise TypeError(f"records must be an array-like of records or a mapping of columns, got {records!r}")
        seq = records if isinstance(records, Sequence) else list(records)
        if len(seq) == 0:
            return [np.zeros(0, dtype=np.int64) for _ in range(m)]
        if m == 1 and not isinstance(seq[0], (tuple, list, np.ndarray)):
            return [seq]
        if self.is_ordinal():
            try:
                arr = np.asarray(seq)
            except (ValueError, OverflowError):
                arr = None
            if arr is not None and arr.dtype.kind in "iuf" and arr.ndim == 2 and arr.shape[1] == m:
                return [arr[:, a] for a in range(m)]
        for k, record in enumerate(seq):
            if not isinstance(record, (tuple, list, np.ndarray)) or len(record) != m:
                raise ValueError(f"records must hold records of {m} values each, got {record!r} (record {k})")
        return [list(column) for column in zip(*seq)]

    def index_of(self, record: Any) -> int:
        """Flat index of one record (a scalar for a 1-D domain, or a tuple)."""
        if self.ndim == 1 and not isinstance(record, (tuple, list, np.ndarray)):
            record = (record,)
        if not isinstance(record, (tuple, list, np.ndarray)) or len(record) != self.ndim:
            raise ValueError(f"record must have {self.ndim} values, got {record!r}")
        flat = 0
        for attr, stride, value in zip(self._attributes, self._strides, record):
            column = np.empty(1, dtype=object)
            column[0] = value
            flat += int(attr.codes_of(column, param="record")[0]) * stride
        return flat

    def record_of(self, index: Any) -> Any:
        """The record at one flat index: a scalar for a 1-D domain, else a tuple."""
        if not _is_int(index):
            raise TypeError(f"index must be an int flat index in [0, {self._size}), got {index!r}")
        idx = self.check_indices(index, name="index")
        codes = self._codes_unchecked(idx.reshape(1))[0]
        values = tuple(
            attr.value_of_codes(codes[a : a + 1])[0].item() if isinstance(attr, Ordinal) else attr.labels[codes[a]]
            for a, attr in enumerate(self._attributes)
        )
        return values[0] if self.ndim == 1 else values
