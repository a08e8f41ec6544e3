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

Records and indices given here may be data: a message about them names the
parameter, the attribute and the rule broken, never an offending value, the
position of a record or how many records there are.

The attributes themselves (:class:`Ordinal`, :class:`Categorical`) live in
:mod:`._domain_attributes`; every name is importable from here.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ._domain_attributes import (  # noqa: F401  (Attribute, Categorical, Ordinal: public names of this module)
    INT64_MAX,
    Attribute,
    Categorical,
    MissingValues,
    Ordinal,
    int_text,
    is_int,
    labels_text,
)
from ._tables import series_kind, column_array, is_table, table_columns
from ..errors import TableError

__all__ = ["Ordinal", "Categorical", "Domain", "Attribute"]


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
        if size > INT64_MAX:
            raise ValueError(
                f"attributes span {int_text(size)} values; the domain size must be at most 2**63 - 1 so flat indices "
                "fit int64"
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
            If one lies outside ``[0, size)``.  Messages never quote an index
            nor its position (indices may be data).
        """
        allowed = f"integers in [0, {self._size})"
        if isinstance(indices, (bool, np.bool_)):
            raise TypeError(f"{name} must be {allowed}, got a bool")
        try:
            arr = indices if isinstance(indices, np.ndarray) else np.asarray(indices)
        except (ValueError, TypeError, OverflowError):
            raise TypeError(f"{name} must be {allowed}, got an object that is not an array of integers") from None
        if arr.dtype.kind == "O" and arr.size and all(is_int(v) for v in arr.reshape(-1).tolist()):
            for value in arr.reshape(-1).tolist():
                if not 0 <= value < self._size:
                    raise ValueError(f"{name} must be {allowed}: an index lies outside; the index and its position "
                                     "are not shown")
            arr = arr.astype(np.int64)
        if arr.dtype.kind not in "iu":
            if arr.size == 0:
                return np.zeros(arr.shape, dtype=np.int64)
            raise TypeError(f"{name} must be {allowed}, got values of dtype {arr.dtype}")
        if arr.size:
            lo, hi = int(arr.min()), int(arr.max())
            if lo < 0 or hi >= self._size:
                raise ValueError(f"{name} must be {allowed}: an index lies outside; the index and its position "
                                 "are not shown")
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

    def encode(self, records: Any) -> npt.NDArray[np.int64]:
        """Flat indices of records.

        Parameters
        ----------
        records : array_like, mapping or table
            A 2-D array-like of shape ``(n, ndim)`` (a list of tuples is
            fine; mixed types are read column by column), or for a 1-D domain
            a 1-D array-like of values (a pandas or Polars Series, a pyarrow
            array), or a mapping ``{name: column}`` with one column per
            attribute, or a table: a pandas or Polars DataFrame, a pyarrow
            Table or a Spark DataFrame, whose columns are taken by attribute
            name (other columns are ignored; integer columns are read without
            a copy).  A Spark DataFrame's attribute columns are collected to
            this process (one index per row is the answer); to count its rows
            without collecting them, use :func:`blowfish_privacy.histogram`.

        Returns
        -------
        numpy.ndarray of int64, shape (n,)

        Raises
        ------
        ValueError
            If the shape is wrong or a value lies outside the domain.  The
            message names the attribute and the rule broken (e.g. "a value
            of attribute 'age' lies outside [17, 90]", "a record has 3
            values, the domain has 2 attributes"), never an offending value,
            the position of a record or the number of records.  For a table
            it also names the column: use :func:`blowfish_privacy.histogram`
            with ``invalid="clamp"`` or ``"drop"`` to count a table with such
            values.

        Examples
        --------
        >>> import pandas as pd                                                # doctest: +SKIP
        >>> d = Domain([Categorical("sex", ["f", "m"]), Ordinal("age", 0, 99)])  # doctest: +SKIP
        >>> d.encode(pd.DataFrame({"age": [35, 7], "sex": ["m", "f"]})).tolist()  # doctest: +SKIP
        [135, 7]
        """
        if is_table(records):
            return self._encode_table(records)
        columns = self._columns(records)
        n = len(columns[0]) if columns else 0
        flat: np.ndarray | None = None
        for a, (attr, column) in enumerate(zip(self._attributes, columns)):
            codes = attr.codes_of(column)
            if codes.shape[0] != n:
                raise ValueError("records: all columns must have the same length; the lengths are not shown")
            if flat is None:
                flat = codes if self._strides[a] == 1 else codes * self._strides[a]
            elif self._strides[a] == 1:
                flat += codes
            else:
                flat += codes * self._strides[a]
        assert flat is not None
        return flat

    def _encode_table(self, table: Any) -> np.ndarray:
        """Flat indices of a DataFrame's rows; errors name attribute and column, never a value."""
        columns = table_columns(table, self._names, param="records")
        n = len(columns[self._names[0]])
        flat = np.zeros(n, dtype=np.int64)
        for attr, stride in zip(self._attributes, self._strides):
            try:
                codes = attr.codes_of(columns[attr.name])
            except (ValueError, TypeError, OverflowError) as exc:
                if isinstance(attr, Ordinal):
                    allowed = f"integers in [{attr.low}, {attr.high}]"
                    rule = f"has values outside the domain or not integers (allowed: {allowed})"
                else:
                    allowed = f"one of the labels {labels_text(attr.labels)}"
                    rule = f"has values that are not among the labels {labels_text(attr.labels)}"
                if isinstance(exc, MissingValues):  # NaN, None, pandas' NA: not "outside the domain"
                    rule = f"has missing values (NaN/null; allowed: {allowed})"
                raise TableError(
                    f"records: attribute {attr.name!r}: column {attr.name!r} {rule}; values not shown (they come "
                    "from the data); blowfish_privacy.histogram(table, domain, invalid='clamp' or 'drop') counts "
                    "such a table"
                ) from None
            flat += codes if stride == 1 else codes * stride
        return flat

    def _columns(self, records: Any) -> list[Any]:
        m = self.ndim
        if m == 1 and series_kind(records) is not None:
            return [column_array(records)]
        if isinstance(records, Mapping):
            keys = set(records)
            if keys != set(self._names):
                raise ValueError(
                    f"records as a mapping must have exactly the keys {list(self._names)}, got {sorted(map(str, keys))}"
                )
            columns = [column_array(c) if series_kind(c) is not None else c for c in (records[n] for n in self._names)]
            lengths = {len(c) for c in columns}
            if len(lengths) != 1:
                raise ValueError("records: all columns must have the same length; the lengths are not shown")
            return columns
        if isinstance(records, np.ndarray):
            if records.ndim == 1 and m == 1:
                return [records]
            if records.ndim == 2 and records.shape[1] == m:
                return [records[:, a] for a in range(m)]
            got = f"{records.ndim}-D array" + (f" of {records.shape[1]} columns" if records.ndim == 2 else "")
            raise ValueError(f"records must have shape (n, {m})" + (" or (n,)" if m == 1 else "") + f", got a {got}")
        if isinstance(records, (str, bytes)) or not isinstance(records, Iterable):
            raise TypeError(
                f"records must be an array-like of records or a mapping of columns, got {_kind(records)}"
            )
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
        for record in seq:
            self._check_record(record, "records")
        return [list(column) for column in zip(*seq)]

    def _check_record(self, record: Any, param: str) -> None:
        """A record is a tuple, list or array of ``ndim`` values; the message never quotes it."""
        m = self.ndim
        if not isinstance(record, (tuple, list, np.ndarray)):
            raise ValueError(
                f"{param}: every record must be a tuple, list or array of {m} values (one per attribute), got "
                f"{_kind(record)}"
            )
        if len(record) != m:
            raise ValueError(
                f"{param}: a record has {len(record)} value{'s' if len(record) != 1 else ''}, the domain has {m} "
                f"attribute{'s' if m != 1 else ''} {list(self._names)}; the record and its position are not shown"
            )

    def index_of(self, record: Any) -> int:
        """Flat index of one record (a scalar for a 1-D domain, or a tuple).

        Raises
        ------
        ValueError
            If the record does not have one value per attribute or a value
            breaks its attribute's rule; the message names the rule, never
            the record or its values.
        """
        if self.ndim == 1 and not isinstance(record, (tuple, list, np.ndarray)):
            record = (record,)
        self._check_record(record, "record")
        flat = 0
        for attr, stride, value in zip(self._attributes, self._strides, record):
            column = np.empty(1, dtype=object)
            column[0] = value
            flat += int(attr.codes_of(column, param="record")[0]) * stride
        return flat

    def record_of(self, index: int) -> Hashable | tuple[Hashable, ...]:
        """The record at one flat index: a scalar for a 1-D domain, else a tuple."""
        if not is_int(index):
            raise TypeError(f"index must be an int flat index in [0, {self._size}), got {_kind(index)}")
        idx = self.check_indices(index, name="index")
        codes = self._codes_unchecked(idx.reshape(1))[0]
        values = tuple(
            attr.value_of_codes(codes[a : a + 1])[0].item() if isinstance(attr, Ordinal) else attr.labels[codes[a]]
            for a, attr in enumerate(self._attributes)
        )
        return values[0] if self.ndim == 1 else values


def _kind(obj: Any) -> str:
    """What an object is, by its type alone (an argument may be data: its value is never shown)."""
    return f"an object of type {type(obj).__name__}"
