"""The public count constraints: count queries, range counts and marginals (000 Sec 8).

A constraint is a family of count queries whose answers are public.  Each
constraint here is a family of *disjoint* queries (a :class:`CountQuery` or
a :class:`RangeCount` is one query, a :class:`Marginal` is the
``size(C)`` cells of a cuboid), so a constraint labels every domain value
with the index of the one query it satisfies, or ``-1``.  Overlaps only
arise between constraints; sparsity and the policy graph, which look at
those overlaps, are in :mod:`blowfish_privacy.policy.constraints`, the
public import path of these classes too.
"""

from __future__ import annotations

import abc
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .domain import Domain, Ordinal

__all__ = ["Constraint", "CountQuery", "Marginal", "RangeCount", "show_value"]


def _check_name(name: Any) -> str | None:
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a str or None, got {name!r}")
    return name


_INT64_MAX = 2**63 - 1


def _check_answer(answer: Any) -> int | None:
    if answer is None:
        return None
    if (isinstance(answer, bool) or not isinstance(answer, (numbers.Integral, np.integer))
            or not 0 <= int(answer) <= _INT64_MAX):
        raise ValueError(f"answer must be an int in [0, 2**63 - 1] or None, got {show_value(answer)}")
    return int(answer)


def show_value(value: Any) -> str:
    """A short repr of a public argument for a message (a huge int by its size only)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and abs(int(value)) >= 10**20:
        return f"an int of {int(value).bit_length()} bits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _corner(value: Any, name: str) -> tuple[int, ...]:
    """A corner of a RangeCount: integers (numpy or Python, not bool), one per attribute."""
    try:
        arr = np.atleast_1d(np.asarray(value, dtype=object))
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an int or a sequence of ints (one per attribute), got {value!r}") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be an int or a flat, non-empty sequence of ints (one per attribute), got shape "
                         f"{arr.shape}")
    out = []
    for v in arr.tolist():
        if isinstance(v, bool) or not isinstance(v, (numbers.Integral, np.integer)):
            raise TypeError(f"{name} must hold ints (one per attribute), got a {type(v).__name__}")
        out.append(int(v))
    return tuple(out)


class Constraint(abc.ABC):
    """A family of disjoint public count queries.

    Subclasses implement :meth:`labels` and :meth:`num_queries`.
    """

    name: str | None

    @abc.abstractmethod
    def labels(self, domain: Domain) -> np.ndarray:
        """Index of the query each flat domain value satisfies, or -1 (int64, shape ``(|T|,)``)."""

    @abc.abstractmethod
    def num_queries(self, domain: Domain) -> int:
        """Number of count queries of this constraint on ``domain``."""

    @abc.abstractmethod
    def public_answers(self, domain: Domain) -> np.ndarray | None:
        """The public answers as an int64 array of length :meth:`num_queries`, or None."""

    def answers_of(self, domain: Domain, histogram: np.ndarray) -> np.ndarray:
        """The exact answers of the queries on a histogram over ``domain``."""
        lab = self.labels(domain)
        keep = lab >= 0
        return np.bincount(lab[keep], weights=np.asarray(histogram, dtype=np.float64).ravel()[keep],
                           minlength=self.num_queries(domain))


class CountQuery(Constraint):
    """One count query ``q_phi(D) = #{t in D : phi(t)}`` (000 eq. 16).

    Parameters
    ----------
    predicate : callable or array_like of bool
        Either a boolean mask of length ``|T|`` over flat indices, or a
        function called once with a dict mapping each attribute name to the
        array of the values of all domain points (flat-index order) and
        returning a boolean array of length ``|T|``.
    name : str, optional
        A label used in messages.
    answer : int, optional
        The public answer (needed only for consistency).
    """

    def __init__(self, predicate: Callable[[dict], Any] | Any, name: str | None = None, answer: Any = None) -> None:
        self.name = _check_name(name)
        self.answer = _check_answer(answer)
        if callable(predicate):
            self._predicate, self._mask = predicate, None
        else:
            mask = np.asarray(predicate)
            if mask.dtype != bool or mask.ndim != 1:
                raise TypeError(
                    f"predicate must be a callable or a one-dimensional boolean mask over the domain, "
                    f"got an array of dtype {mask.dtype} and shape {mask.shape}"
                )
            self._predicate, self._mask = None, mask

    def __repr__(self) -> str:
        return f"CountQuery(name={self.name!r}, answer={self.answer!r})"

    def mask(self, domain: Domain) -> np.ndarray:
        """The predicate as a boolean mask over flat indices."""
        if self._mask is not None:
            if self._mask.shape[0] != domain.size:
                raise ValueError(
                    f"CountQuery {self.name!r}: the mask has length {self._mask.shape[0]}, "
                    f"but the domain has |T| = {domain.size} values; a mask must have one entry per value"
                )
            return self._mask
        values = domain.values(np.arange(domain.size, dtype=np.int64))
        out = np.asarray(self._predicate(dict(zip(domain.names, values))))
        if out.dtype != bool or out.shape != (domain.size,):
            raise ValueError(
                f"CountQuery {self.name!r}: the predicate must return a boolean array of shape ({domain.size},), "
                f"got dtype {out.dtype} and shape {out.shape}"
            )
        return out

    def labels(self, domain: Domain) -> np.ndarray:
        return np.where(self.mask(domain), 0, -1).astype(np.int64)

    def num_queries(self, domain: Domain) -> int:
        return 1

    def public_answers(self, domain: Domain) -> np.ndarray | None:
        return None if self.answer is None else np.array([self.answer], dtype=np.int64)


class RangeCount(CountQuery):
    """A range count ``q_R`` for a rectangle ``R = [low_1, high_1] x ...`` (000 Sec 8.2.3).

    Parameters
    ----------
    low, high : int or sequence of int
        Inclusive corners, one value per attribute (a bare int for a 1-D
        domain).  Every attribute must be ordinal; values are compared with
        each bin's lower edge.
    name : str, optional
    answer : int, optional
    """

    def __init__(self, low: Any, high: Any, name: str | None = None, answer: Any = None) -> None:
        self.name = _check_name(name)
        self.answer = _check_answer(answer)
        self.low = _corner(low, "low")
        self.high = _corner(high, "high")
        if len(self.low) != len(self.high) or any(a > b for a, b in zip(self.low, self.high)):
            raise ValueError(
                f"low and high must have one value per attribute with low <= high, got low={list(self.low)!r}, "
                f"high={list(self.high)!r}"
            )
        self._predicate, self._mask = None, None

    def __repr__(self) -> str:
        return f"RangeCount({list(self.low)}, {list(self.high)}, name={self.name!r}, answer={self.answer!r})"

    def mask(self, domain: Domain) -> np.ndarray:
        if len(self.low) != domain.ndim:
            raise ValueError(
                f"RangeCount {self.name!r}: low/high have {len(self.low)} values but the domain has "
                f"{domain.ndim} attributes {list(domain.names)}"
            )
        bad = [a.name for a in domain.attributes if not isinstance(a, Ordinal)]
        if bad:
            raise ValueError(f"RangeCount {self.name!r} needs ordinal attributes, got categorical {bad}")
        values = domain.values(np.arange(domain.size, dtype=np.int64))
        out = np.ones(domain.size, dtype=bool)
        for v, lo, hi in zip(values, self.low, self.high):
            out &= (v >= lo) & (v <= hi)
        return out


class Marginal(Constraint):
    """A marginal (cuboid) ``C``: the ``size(C)`` counts grouped by ``attributes`` (000 Def 8.4).

    Parameters
    ----------
    attributes : sequence of str
        Distinct attribute names, at least one.
    answers : array_like of int, optional
        The public cuboid, shape = the sizes of ``attributes`` in the order
        given (needed only for consistency).
    name : str, optional
    """

    def __init__(self, attributes: Sequence[str], answers: Any = None, name: str | None = None) -> None:
        if isinstance(attributes, str):
            attributes = [attributes]
        attributes = tuple(attributes)
        if not attributes or len(set(attributes)) != len(attributes) or not all(isinstance(a, str) for a in attributes):
            raise ValueError(f"attributes must be a non-empty sequence of distinct attribute names, got {attributes!r}")
        self.attributes = attributes
        self.name = _check_name(name)
        if answers is not None:
            try:
                arr = np.asarray(answers)
            except (TypeError, ValueError):
                raise ValueError("answers must be an array of ints >= 0 (a regular, non-ragged array)") from None
            if arr.dtype.kind not in "iu":
                raise ValueError(f"answers must be an array of ints >= 0, got dtype {arr.dtype}")
            if arr.size and (int(arr.min()) < 0 or int(arr.max()) > _INT64_MAX):
                raise ValueError("answers must be an array of ints in [0, 2**63 - 1] (an unsigned value above the "
                                 "int64 maximum is refused, never wrapped)")
            answers = arr.astype(np.int64)
        self.answers = answers

    def __repr__(self) -> str:
        return f"Marginal({list(self.attributes)!r}, name={self.name!r})"

    def positions(self, domain: Domain) -> list[int]:
        unknown = [a for a in self.attributes if a not in domain.names]
        if unknown:
            raise ValueError(f"Marginal attributes {unknown} are not in the domain; allowed: {list(domain.names)}")
        return [domain.position(a) for a in self.attributes]

    def shape(self, domain: Domain) -> tuple[int, ...]:
        return tuple(domain.shape[p] for p in self.positions(domain))

    def labels(self, domain: Domain) -> np.ndarray:
        pos = self.positions(domain)
        codes = domain.codes(np.arange(domain.size, dtype=np.int64))
        out = np.zeros(domain.size, dtype=np.int64)
        for p in pos:
            out = out * domain.shape[p] + codes[:, p]
        return out

    def num_queries(self, domain: Domain) -> int:
        return int(np.prod(self.shape(domain)))

    def answers_of(self, domain: Domain, histogram: np.ndarray) -> np.ndarray:
        pos = self.positions(domain)
        cube = np.asarray(histogram, dtype=np.float64).reshape(domain.shape)
        m = cube.sum(axis=tuple(a for a in range(domain.ndim) if a not in pos))
        order = sorted(pos)
        return np.transpose(m, [order.index(p) for p in pos]).ravel()

    def public_answers(self, domain: Domain) -> np.ndarray | None:
        if self.answers is None:
            return None
        shape = self.shape(domain)
        if self.answers.shape != shape:
            raise ValueError(
                f"Marginal {list(self.attributes)}: answers must have shape {shape}, got {self.answers.shape}"
            )
        return self.answers.ravel()
