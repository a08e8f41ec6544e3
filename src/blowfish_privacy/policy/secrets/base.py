"""The base class :class:`SecretGraph` and the record helpers it uses.

Records are what users pass without a domain: a scalar (1-D) or a tuple of
per-attribute values; a list or array holds several.  The helpers here turn
them into 2-D arrays (numeric when possible, exact Python integers where
int64 could overflow).  :class:`SecretGraph` defines the questions every
graph answers, on records and, bound to a :class:`~blowfish_privacy.policy.domain.Domain`,
vectorised on flat indices, and caches the per-domain tables each graph
builds in ``_bind``.
"""

from __future__ import annotations

import abc
import math
import numbers
from collections.abc import Iterator, Sequence
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


def _is_single(value: Any) -> bool:
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
        if all(abs(v) < _limits._SAFE for v in flat):
            return np.array(flat, dtype=np.int64).reshape(len(tuples), m)
    elif all(isinstance(v, (numbers.Real, np.floating, np.integer)) and not isinstance(v, bool) for v in flat):
        return np.array(flat, dtype=np.float64).reshape(len(tuples), m)
    out = np.empty((len(tuples), m), dtype=object)
    for k, t in enumerate(tuples):
        for a, v in enumerate(t):
            out[k, a] = v
    return out


def as_rows(value: Any, name: str) -> np.ndarray:
    if _is_single(value):
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


def _pair_rows(x: Any, y: Any) -> tuple[bool, np.ndarray, np.ndarray]:
    single = _is_single(x) and _is_single(y)
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


def _scalar_distance(value: float) -> int | float:
    return math.inf if math.isinf(value) else int(value)


class SecretGraph(abc.ABC):
    """A discriminative secret graph on the values of a domain (000 Sec 3.1).

    Record-level methods (:meth:`is_edge`, :meth:`distance`) need no
    domain; the index-level methods take the :class:`Domain` the graph is
    used with and check that the graph makes sense on it first
    (:meth:`validate`).  Graphs are immutable; per-domain tables are cached.
    """

    #: The graph's name in release specs (``secrets = "..."``), or None.
    spec_name: str | None = None

    def __init__(self) -> None:
        self._bindings: dict[Domain, Any] = {}
        self._record_cache: dict = {}

    # -- identity ----------------------------------------------------------
    @abc.abstractmethod
    def _key(self) -> tuple:
        """Parameters that identify the graph."""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._key() == self._key()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))

    # -- record level --------------------------------------------------------
    def is_edge(self, x: Any, y: Any, *, domain: Domain | None = None) -> bool | np.ndarray:
        """Whether ``(x, y)`` is an edge.

        Parameters
        ----------
        x, y : record or array of records
            A record is a scalar (1-D) or a tuple of per-attribute values
            (bin values for ordinal attributes, labels for categorical ones).
            A list or numpy array holds several records (a 1-D array:
            scalar records; a 2-D array: one record per row).
        domain : Domain, optional
            When given, records are located in it (bins apply) and the
            index-level rules are used.

        Returns
        -------
        bool, or numpy.ndarray of bool for arrays of records.
        """
        if domain is not None:
            single, i, j = self._encode_pair(domain, x, y)
            mask = self.edge_mask(domain, i, j)
            return bool(mask[0]) if single else mask
        single, X, Y = _pair_rows(x, y)
        mask = self._record_edge(X, Y)
        return bool(mask[0]) if single else mask

    def distance(self, x: Any, y: Any, *, domain: Domain | None = None) -> int | float | np.ndarray:
        """Shortest-path length ``d_G(x, y)`` (000 eq. 9).

        Returns
        -------
        int or math.inf for one pair (0 when ``x == y``); a float64 array
        (``inf`` where disconnected) for arrays of records.
        """
        if domain is not None:
            single, i, j = self._encode_pair(domain, x, y)
            dist = self.distance_index(domain, i, j)
            return _scalar_distance(float(dist[0])) if single else dist
        single, X, Y = _pair_rows(x, y)
        dist = self._record_distance(X, Y)
        dist = np.where(differ(X, Y).any(axis=1), dist, 0.0)
        return _scalar_distance(float(dist[0])) if single else dist

    @staticmethod
    def _encode_pair(domain: Domain, x: Any, y: Any) -> tuple[bool, np.ndarray, np.ndarray]:
        if not isinstance(domain, Domain):
            raise TypeError(f"domain must be a Domain, got {domain!r}")
        single = _is_single(x) and _is_single(y)
        out = []
        for value in (x, y):
            if _is_single(value):
                out.append(np.array([domain.index_of(value)], dtype=np.int64))
            else:
                out.append(domain.encode(value))
        i, j = np.broadcast_arrays(*out)
        return single, i, j

    @abc.abstractmethod
    def _record_edge(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray: ...

    @abc.abstractmethod
    def _record_distance(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray: ...

    # -- domain level ----------------------------------------------------------
    def validate(self, domain: Domain) -> None:
        """Check that the graph is well defined on ``domain``.

        Raises
        ------
        TypeError
            If ``domain`` is not a Domain.
        ValueError
            If the graph does not fit the domain (the message says why).
        """
        self._binding(domain)

    def describe(self, domain: Domain) -> str:
        """What stays secret under this graph on ``domain``, in plain words.

        One or two sentences, as :func:`blowfish_privacy.explain.explain`
        prints them: which pairs of one individual's values an adversary
        cannot tell apart better than ``e^epsilon`` (the edges), how pairs
        farther apart are protected (``e^(epsilon d_G)``, 000 eq. 9) and
        which pairs are not protected at all (``d_G = inf``).  Every graph
        class here says it in its own terms; this default speaks of edges.

        Parameters
        ----------
        domain : Domain
            The domain the graph is used with (checked as by :meth:`validate`).

        Returns
        -------
        str

        Raises
        ------
        TypeError, ValueError
            As :meth:`validate`, when the graph does not fit ``domain``.
        """
        self._binding(domain)
        return "Pairs of values joined by an edge are secret; others are protected by e^(epsilon d_G)."

    def _binding(self, domain: Domain) -> Any:
        if not isinstance(domain, Domain):
            raise TypeError(f"domain must be a Domain, got {domain!r} of type {type(domain).__name__}")
        bound = self._bindings.get(domain)
        if bound is None:
            bound = self._bind(domain)
            if len(self._bindings) >= 8:
                self._bindings.pop(next(iter(self._bindings)))
            self._bindings[domain] = bound
        return bound

    @abc.abstractmethod
    def _bind(self, domain: Domain) -> Any:
        """Validate against ``domain`` and return per-domain tables (never None)."""

    def _pair(self, domain: Domain, i: Any, j: Any) -> tuple[Any, np.ndarray, np.ndarray]:
        bound = self._binding(domain)
        i = domain.check_indices(i, "i")
        j = domain.check_indices(j, "j")
        try:
            i, j = np.broadcast_arrays(i, j)
        except ValueError:
            raise ValueError(f"i and j must have broadcastable shapes, got {i.shape} and {j.shape}") from None
        return bound, i, j

    def edge_mask(self, domain: Domain, i: Any, j: Any) -> np.ndarray:
        """Vectorised edge test on flat indices.

        Parameters
        ----------
        domain : Domain
        i, j : array_like of int
            Flat indices, broadcast together.

        Returns
        -------
        numpy.ndarray of bool, the broadcast shape.
        """
        bound, i, j = self._pair(domain, i, j)
        shape = i.shape
        mask = self._edge_mask(domain, bound, i.reshape(-1), j.reshape(-1))
        return mask.reshape(shape)

    def distance_index(self, domain: Domain, i: Any, j: Any) -> np.ndarray:
        """Vectorised ``d_G`` on flat indices: float64, ``inf`` where disconnected."""
        bound, i, j = self._pair(domain, i, j)
        shape = i.shape
        i, j = i.reshape(-1), j.reshape(-1)
        dist = self._distance_index(domain, bound, i, j)
        dist[i == j] = 0.0
        return dist.reshape(shape)

    def has_edge(self, domain: Domain) -> bool:
        """Whether the graph has at least one edge on ``domain``."""
        return bool(self._has_edge(domain, self._binding(domain)))

    def is_tree(self, domain: Domain) -> bool:
        """Whether the graph on ``domain`` is a tree (connected, ``|E| = |T| - 1``)."""
        return bool(self._is_tree(domain, self._binding(domain)))

    def iter_edges(self, domain: Domain, limit: int = _limits.EDGE_LIMIT) -> tuple[np.ndarray, np.ndarray]:
        """All edges ``(i, j)``, ``i < j``, as two int64 arrays (small domains only).

        Raises
        ------
        ValueError
            If ``domain.size`` exceeds ``limit``.
        """
        bound = self._binding(domain)
        if not is_int(limit) or limit < 1:
            raise ValueError(f"limit must be an int >= 1, got {limit!r}")
        if domain.size > limit:
            raise ValueError(
                f"iter_edges lists edges only for domains of at most limit={limit} values, got |T| = {domain.size}"
            )
        parts = list(self._edge_chunks(domain, bound, _limits._PAIRS_PER_CHUNK))
        if not parts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    def _edge_chunks(self, domain: Domain, bound: Any, max_pairs: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        size = domain.size
        rows = max(1, max_pairs // max(size, 1))
        cols = np.arange(size, dtype=np.int64)
        for start in range(0, size, rows):
            ii = np.arange(start, min(size, start + rows), dtype=np.int64)
            I = np.repeat(ii, size)
            J = np.tile(cols, ii.shape[0])
            keep = J > I
            I, J = I[keep], J[keep]
            mask = self._edge_mask(domain, bound, I, J)
            if mask.any():
                yield I[mask], J[mask]

    @abc.abstractmethod
    def _edge_mask(self, domain: Domain, bound: Any, i: np.ndarray, j: np.ndarray) -> np.ndarray: ...

    @abc.abstractmethod
    def _distance_index(self, domain: Domain, bound: Any, i: np.ndarray, j: np.ndarray) -> np.ndarray: ...

    @abc.abstractmethod
    def _has_edge(self, domain: Domain, bound: Any) -> bool: ...

    def _is_tree(self, domain: Domain, bound: Any) -> bool:
        # Default for graphs made of cliques: a clique is a tree only on <= 2
        # vertices, and two cliques are disconnected.
        return domain.size == 1 or (domain.size == 2 and self._has_edge(domain, bound))

    @abc.abstractmethod
    def _max_weighted_l1(self, domain: Domain, bound: Any, scale: Sequence[int]) -> tuple[int, bool, str]:
        """``max`` over edges of ``sum_a scale[a] * |code_a(x) - code_a(y)|`` (0 without edges)."""


def listing(values: Sequence[Any], limit: int = 6) -> str:
    """``a, b and c`` (at most ``limit`` items, then ``...``) for descriptions."""
    shown = [str(v) for v in values[:limit]]
    if len(values) > limit:
        return ", ".join(shown) + f", ... ({len(values)} in all)"
    if len(shown) <= 1:
        return "".join(shown)
    return ", ".join(shown[:-1]) + " and " + shown[-1]


NO_EDGES = (
    "The graph has no edge on this domain: no pair of values is secret, so an adversary may tell "
    "any two values of one individual apart (nothing is protected)."
)

ONE_VALUE = "The domain has a single value: there is nothing to tell apart."


def ranges(domain: Domain, scale: Sequence[int]) -> list[int]:
    return [s * (n - 1) for s, n in zip(scale, domain.shape)]
