"""Discriminative secret graphs (000 Sec 3.1, DESIGN sec 2).

A secret graph ``G = (T, E)`` lists the pairs of domain values ``(x, y)``
that an adversary must not tell apart for any one individual: for every
edge, every individual ``i``, the secrets ``t_i = x`` and ``t_i = y`` form a
discriminative pair.  Blowfish privacy without constraints then bounds the
log-ratio of output probabilities for two values of one individual by
``epsilon * d_G(x, y)`` (000 eq. 9), ``d_G`` the shortest-path length.

Graphs here:

``FullDomain()``
    The complete graph (000 eq. 4): bounded differential privacy.
``Attribute(c=1)``
    Values differing in at most ``c`` attributes (000 eq. 5 for ``c = 1``).
``Partition(blocks)``
    A clique on each block of a partition of the domain (000 eq. 6); also
    :meth:`Partition.by_attributes` and :meth:`Partition.intervals`.
``DistanceThreshold(theta, metric)``
    Values at distance ``0 < d(x, y) <= theta`` (000 eq. 7), ``d`` the L1,
    L2 or Linf metric on the (bin) values of ordinal attributes.
``Line()``
    ``DistanceThreshold(1, "l1")`` on a 1-D ordinal domain of unit bins.
``Custom(edges)``
    An explicit undirected edge list.

Each graph answers questions on *records* without a domain
(:meth:`SecretGraph.is_edge`, :meth:`SecretGraph.distance`) and, bound to a
:class:`~blowfish_privacy.domain.Domain`, vectorised questions on flat
indices (:meth:`SecretGraph.edge_mask`, :meth:`SecretGraph.distance_index`,
...).  Nothing builds a ``|T| x |T|`` object; explicit edge lists exist only
for small domains (:meth:`SecretGraph.iter_edges`).
"""

from __future__ import annotations

import abc
import math
import numbers
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from .domain import Domain, Ordinal, _is_int

__all__ = [
    "SecretGraph",
    "FullDomain",
    "Attribute",
    "Partition",
    "DistanceThreshold",
    "Line",
    "Custom",
    "DP_CELL_LIMIT",
    "ENUM_LIMIT",
    "KNAPSACK_LIMIT",
    "EDGE_LIMIT",
    "SIGN_LIMIT",
]

#: Largest box (in cells) over which shortest-path lengths of a
#: DistanceThreshold graph are computed by dynamic programming.
DP_CELL_LIMIT = 2_000_000
#: Largest number of difference vectors enumerated for a sensitivity.
ENUM_LIMIT = 2_000_000
#: Largest number of elementary steps of the knapsack dynamic program.
KNAPSACK_LIMIT = 50_000_000
#: Default largest domain for explicit edge lists.
EDGE_LIMIT = 4096
#: Largest (sign vectors x domain values) for the exact widest-block search
#: of a listed Partition.
SIGN_LIMIT = 200_000_000

_METRICS = ("l1", "l2", "linf")
_SAFE = 2**62
_PAIRS_PER_CHUNK = 1 << 20


# ---------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------
def _norm_value(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _norm_record(record: Any) -> Any:
    """A hashable form of one record: a scalar, or a tuple of >= 2 values."""
    if isinstance(record, np.ndarray):
        record = record.tolist()
    if isinstance(record, (tuple, list)):
        values = tuple(_norm_value(v) for v in record)
        return values[0] if len(values) == 1 else values
    return _norm_value(record)


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
    if all(_is_int(v) for v in flat):
        if all(abs(v) < _SAFE for v in flat):
            return np.array(flat, dtype=np.int64).reshape(len(tuples), m)
    elif all(isinstance(v, (numbers.Real, np.floating, np.integer)) and not isinstance(v, bool) for v in flat):
        return np.array(flat, dtype=np.float64).reshape(len(tuples), m)
    out = np.empty((len(tuples), m), dtype=object)
    for k, t in enumerate(tuples):
        for a, v in enumerate(t):
            out[k, a] = v
    return out


def _as_rows(value: Any, name: str) -> np.ndarray:
    if _is_single(value):
        return _rows([_norm_record(value)], name)
    if isinstance(value, np.ndarray):
        arr = value
        if arr.ndim == 1 and arr.dtype.kind == "O":
            return _rows([_norm_record(v) for v in arr.tolist()], name)
        if arr.ndim == 1:
            return arr[:, None]
        if arr.ndim == 2:
            return arr
        raise ValueError(f"{name} must be one record or a 1-D/2-D array of records, got shape {arr.shape}")
    return _rows([_norm_record(v) for v in value], name)


def _pair_rows(x: Any, y: Any) -> tuple[bool, np.ndarray, np.ndarray]:
    single = _is_single(x) and _is_single(y)
    X, Y = _as_rows(x, "x"), _as_rows(y, "y")
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


def _differ(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    return np.asarray(X != Y, dtype=bool)


def _row_keys(X: np.ndarray) -> list[Any]:
    return [_norm_record(row) for row in X.tolist()]


def _scalar_distance(value: float) -> int | float:
    return math.inf if math.isinf(value) else int(value)


def _check_theta(theta: Any) -> tuple[Any, Fraction]:
    if isinstance(theta, (bool, np.bool_)) or not isinstance(theta, (numbers.Real, np.integer, np.floating)):
        raise TypeError(f"theta must be a finite number >= 0, got {theta!r} of type {type(theta).__name__}")
    theta = _norm_value(theta)
    if isinstance(theta, float) and not math.isfinite(theta):
        raise ValueError(f"theta must be a finite number >= 0, got {theta!r}")
    exact = Fraction(theta)
    if exact < 0:
        raise ValueError(f"theta must be a finite number >= 0, got {theta!r}")
    return theta, exact


# ---------------------------------------------------------------------------
# metric arithmetic (exact on integers)
# ---------------------------------------------------------------------------
def _within(vals: np.ndarray, metric: str, theta: Fraction, vmax: int) -> np.ndarray:
    """``metric(row) <= theta`` for each row of non-negative integer differences.

    ``vmax`` bounds the entries; the arithmetic switches to Python integers
    when int64 could overflow, so the comparison is always exact.
    """
    m = vals.shape[-1]
    if metric == "linf":
        limit = math.floor(theta)
        total = vals.max(axis=-1)
    elif metric == "l1":
        limit = math.floor(theta)
        total = vals.sum(axis=-1) if vmax * m < _SAFE else vals.astype(object).sum(axis=-1)
    else:
        limit = math.floor(theta * theta)
        if vmax * vmax * m < _SAFE:
            total = (vals * vals).sum(axis=-1)
        else:
            obj = vals.astype(object)
            total = (obj * obj).sum(axis=-1)
    total = np.asarray(total)
    if total.dtype != object:
        return total <= min(limit, 2**63 - 1)
    return np.array([t <= limit for t in total.reshape(-1).tolist()], dtype=bool).reshape(total.shape)


def _within_float(vals: np.ndarray, metric: str, theta: float) -> np.ndarray:
    if metric == "linf":
        return vals.max(axis=-1) <= theta
    if metric == "l1":
        return vals.sum(axis=-1) <= theta
    return (vals * vals).sum(axis=-1) <= theta * theta


def _ceil_div(a: np.ndarray, b: int) -> np.ndarray:
    return -((-a) // b)


def _maximal_steps(widths: Sequence[int], caps: Sequence[int], metric: str, theta: Fraction) -> np.ndarray:
    """Pareto-maximal lattice steps ``s`` with ``0 <= s <= caps`` and ``metric(w*s) <= theta``."""
    shape = tuple(c + 1 for c in caps)
    grid = np.indices(shape, dtype=np.int64).reshape(len(shape), -1).T
    vmax = max(w * c for w, c in zip(widths, caps))
    feasible = _within(grid * np.array(widths, dtype=object if vmax >= _SAFE else np.int64), metric, theta, vmax)
    feasible = np.asarray(feasible, dtype=bool).reshape(shape)
    maximal = feasible.copy()
    for a in range(len(shape)):
        up = np.zeros_like(feasible)
        src = [slice(None)] * len(shape)
        dst = [slice(None)] * len(shape)
        src[a] = slice(1, None)
        dst[a] = slice(None, -1)
        up[tuple(dst)] = feasible[tuple(src)]
        maximal &= ~up
    steps = np.argwhere(maximal)
    return steps[steps.any(axis=1)]


class _ReachTable:
    """Shortest-path lengths of a threshold graph on a box, by dynamic programming.

    Paths may be taken monotone (every metric here is monotone in the
    absolute coordinates), so the length from ``0`` to ``delta`` is the
    fewest steps ``s >= 0`` with ``metric(w*s) <= theta`` summing to
    ``delta``.  The sets ``R_k`` of points reachable in ``k`` steps are
    down-closed, so each is stored as a staircase: for every position ``u``
    on all axes but the longest, the largest reachable coordinate ``h_k(u)``
    on the longest axis.  ``h_{k+1}(u) = max_s h_k(max(u - s_u, 0)) + s_L``
    over the maximal steps ``s``.
    """

    def __init__(self, widths: Sequence[int], box: Sequence[int], metric: str, theta: Fraction) -> None:
        cells = math.prod(box)
        if cells > DP_CELL_LIMIT:
            raise ValueError(
                f"the exact distance needs a dynamic program over {cells} cells (box {tuple(box)} in bins), "
                f"more than the limit of {DP_CELL_LIMIT}; it is too costly to compute exactly"
            )
        self.box = tuple(box)
        caps = [min(theta // w, b - 1) for w, b in zip(widths, box)]
        if min(caps) < 1:
            raise ValueError("internal: every axis of the reach table needs a unit step")
        steps = _maximal_steps(widths, caps, metric, theta)
        last = int(np.argmax(box))
        self.last = last
        self.rest = [a for a in range(len(box)) if a != last]
        rest_box = tuple(box[a] for a in self.rest)
        top = box[last] - 1
        h = np.full(rest_box, -1, dtype=np.int64)
        h[(0,) * len(rest_box)] = 0
        moves = []
        for s in steps:
            index = np.ix_(*[np.maximum(np.arange(box[a]) - s[a], 0) for a in self.rest])
            moves.append((index, int(s[last])))
        layers = [h]
        while not (h == top).all():
            new = h.copy()
            for index, rise in moves:
                src = h[index]
                np.maximum(new, np.where(src >= 0, np.minimum(src + rise, top), -1), out=new)
            if np.array_equal(new, h):
                break
            layers.append(new)
            h = new
        self.rest_box = rest_box
        self.layers = np.stack(layers).reshape(len(layers), -1)

    def covers(self, box: Sequence[int]) -> bool:
        return all(b <= c for b, c in zip(box, self.box))

    def lookup(self, delta: np.ndarray) -> np.ndarray:
        """Distances for rows of ``delta`` (non-negative, inside the box)."""
        n = delta.shape[0]
        x = delta[:, self.last]
        if self.rest:
            pos = np.ravel_multi_index(tuple(delta[:, a] for a in self.rest), self.rest_box)
        else:
            pos = np.zeros(n, dtype=np.int64)
        top = self.layers.shape[0] - 1
        out = np.full(n, np.inf)
        ok = self.layers[top, pos] >= x
        lo = np.zeros(n, dtype=np.int64)
        hi = np.full(n, top, dtype=np.int64)
        while True:
            active = ok & (lo < hi)
            if not active.any():
                break
            mid = (lo + hi) // 2
            reach = self.layers[mid, pos] >= x
            hi = np.where(active & reach, mid, hi)
            lo = np.where(active & ~reach, mid + 1, lo)
        out[ok] = lo[ok]
        return out


def _lattice_distance(
    delta: np.ndarray, widths: Sequence[int], metric: str, theta: Fraction, cache: dict
) -> np.ndarray:
    """Shortest-path lengths in a threshold graph for rows of bin differences.

    Parameters
    ----------
    delta : (n, m) int64 array
        Absolute per-attribute differences in bins.
    widths : sequence of int
        Bin width of each attribute.
    cache : dict
        Reach tables already built, reused when their box is large enough.

    Returns
    -------
    (n,) float64 array, ``inf`` where no path exists.
    """
    n, m = delta.shape
    out = np.zeros(n)
    if n == 0:
        return out
    steps = [theta // w for w in widths]
    nonzero = delta > 0
    dead = np.zeros(n, dtype=bool)
    for a in range(m):
        if steps[a] == 0:
            dead |= nonzero[:, a]
    count = nonzero.sum(axis=1)
    simple = ~dead & ((count <= 1) | (metric == "linf"))
    if simple.any():
        best = np.zeros(int(simple.sum()), dtype=np.int64)
        for a in range(m):
            if steps[a] > 0:
                best = np.maximum(best, _ceil_div(delta[simple, a], min(steps[a], _SAFE)))
        out[simple] = best
    out[dead] = np.inf
    rest = ~dead & ~simple
    if not rest.any():
        return out
    axes = [a for a in range(m) if nonzero[rest, a].any()]
    sub = delta[np.ix_(rest, axes)]
    sub_widths = [widths[a] for a in axes]
    if metric == "l1" and len(set(sub_widths)) == 1:
        out[rest] = _ceil_div(sub.sum(axis=1), min(steps[axes[0]], _SAFE))
        return out
    box = [int(sub[:, k].max()) + 1 for k in range(len(axes))]
    key = tuple(axes)
    table = cache.get(key)
    if table is None or not table.covers(box):
        if table is not None:
            union = [max(b, c) for b, c in zip(box, table.box)]
            if math.prod(union) <= DP_CELL_LIMIT:
                box = union
        table = _ReachTable(sub_widths, box, metric, theta)
        cache[key] = table
    out[rest] = table.lookup(sub)
    return out


def _max_gain(
    widths: Sequence[int], caps: Sequence[int], scale: Sequence[int], metric: str, theta: Fraction
) -> tuple[int, bool, str]:
    """``max scale . s`` over integer ``0 <= s <= caps`` with ``metric(w*s) <= theta``.

    Exact by closed form, enumeration or a group-knapsack dynamic program;
    when all of those are too large, a proven upper bound (``exact=False``).
    """
    sel = [a for a in range(len(widths)) if scale[a] > 0 and caps[a] > 0]
    if not sel:
        return 0, True, ""
    w = [widths[a] for a in sel]
    u = [caps[a] for a in sel]
    g = [scale[a] for a in sel]
    full = sum(gi * ui for gi, ui in zip(g, u))
    if metric == "linf" or len(sel) == 1:
        return full, True, ""
    limit = math.floor(theta) if metric == "l1" else math.floor(theta * theta)

    def cost(wi: int, si: int) -> int:
        return wi * si if metric == "l1" else (wi * si) ** 2

    total_cost = sum(cost(wi, ui) for wi, ui in zip(w, u))
    if total_cost <= limit:
        return full, True, ""
    # Enumerate every attribute but the one with the most steps; for that
    # one the best step given the others is max s with cost(s) <= budget left.
    last = max(range(len(sel)), key=lambda k: u[k])
    others = [k for k in range(len(sel)) if k != last]
    count = math.prod(u[k] + 1 for k in others)
    if count <= ENUM_LIMIT:
        big = total_cost >= _SAFE or full >= _SAFE
        dtype = object if big else np.int64
        grid = np.indices(tuple(u[k] + 1 for k in others), dtype=np.int64).reshape(len(others), -1).T
        spent = np.zeros(grid.shape[0], dtype=dtype)
        gain = np.zeros(grid.shape[0], dtype=dtype)
        for col, k in enumerate(others):
            step = grid[:, col].astype(dtype)
            spent = spent + (step * w[k] if metric == "l1" else (step * w[k]) ** 2)
            gain = gain + step * g[k]
        budget = limit - spent
        ok = budget >= 0
        budget = budget[ok]
        if metric == "l1":
            reach = budget // w[last]
        elif big:
            reach = np.array([math.isqrt(b) // w[last] for b in budget.tolist()], dtype=object)
        else:
            root = np.floor(np.sqrt(budget.astype(np.float64))).astype(np.int64)
            root -= root * root > budget  # correct float rounding of the square root
            root += (root + 1) * (root + 1) <= budget
            reach = root // w[last]
        reach = np.minimum(reach, u[last])
        best = gain[ok] + reach * g[last]
        return int(max(best.tolist(), default=0)), True, ""
    work = (limit + 1) * sum(u)
    if work <= KNAPSACK_LIMIT and full < _SAFE:
        best = np.zeros(limit + 1, dtype=np.int64)
        for wi, ui, gi in zip(w, u, g):
            new = best.copy()
            for si in range(1, ui + 1):
                c = cost(wi, si)
                if c > limit:
                    break
                np.maximum(new[c:], best[: limit + 1 - c] + gi * si, out=new[c:])
            best = new
        return int(best[limit]), True, ""
    ratios = [Fraction(gi, wi) for gi, wi in zip(g, w)]
    if metric == "l1":
        bound = math.floor(max(ratios) * theta)
        how = "max_a(scale_a / w_a) * theta"
    else:
        bound = math.isqrt(math.floor(sum(r * r for r in ratios) * theta * theta))
        how = "sqrt(sum_a (scale_a / w_a)^2) * theta (Cauchy-Schwarz)"
    return (
        min(bound, full),
        False,
        f"exact search too large ({count} difference vectors); upper bound {how}",
    )


# ---------------------------------------------------------------------------
# the base class
# ---------------------------------------------------------------------------
class SecretGraph(abc.ABC):
    """A discriminative secret graph on the values of a domain (000 Sec 3.1).

    Record-level methods (:meth:`is_edge`, :meth:`distance`) need no
    domain; the index-level methods take the :class:`Domain` the graph is
    used with and check that the graph makes sense on it first
    (:meth:`validate`).  Graphs are immutable; per-domain tables are cached.
    """

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
        dist = np.where(_differ(X, Y).any(axis=1), dist, 0.0)
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

    def iter_edges(self, domain: Domain, limit: int = EDGE_LIMIT) -> tuple[np.ndarray, np.ndarray]:
        """All edges ``(i, j)``, ``i < j``, as two int64 arrays (small domains only).

        Raises
        ------
        ValueError
            If ``domain.size`` exceeds ``limit``.
        """
        bound = self._binding(domain)
        if not _is_int(limit) or limit < 1:
            raise ValueError(f"limit must be an int >= 1, got {limit!r}")
        if domain.size > limit:
            raise ValueError(
                f"iter_edges lists edges only for domains of at most limit={limit} values, got |T| = {domain.size}"
            )
        parts = list(self._edge_chunks(domain, bound, _PAIRS_PER_CHUNK))
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


def _ranges(domain: Domain, scale: Sequence[int]) -> list[int]:
    return [s * (n - 1) for s, n in zip(scale, domain.shape)]


# ---------------------------------------------------------------------------
# FullDomain and Attribute
# ---------------------------------------------------------------------------
class FullDomain(SecretGraph):
    """The complete graph: every two distinct values (000 eq. 4).

    With no constraints this is bounded differential privacy (000 Sec 4.2).
    ``d_G(x, y) = 1`` for ``x != y``.
    """

    def _key(self) -> tuple:
        return ()

    def __repr__(self) -> str:
        return "FullDomain()"

    def _record_edge(self, X, Y):
        return _differ(X, Y).any(axis=1)

    def _record_distance(self, X, Y):
        return _differ(X, Y).any(axis=1).astype(np.float64)

    def _bind(self, domain):
        return True

    def _edge_mask(self, domain, bound, i, j):
        return i != j

    def _distance_index(self, domain, bound, i, j):
        return (i != j).astype(np.float64)

    def _has_edge(self, domain, bound):
        return domain.size >= 2

    def _max_weighted_l1(self, domain, bound, scale):
        if domain.size < 2:
            return 0, True, ""
        return sum(_ranges(domain, scale)), True, ""


class Attribute(SecretGraph):
    """Values that differ in between 1 and ``c`` attributes (000 eq. 5 for ``c = 1``).

    ``d_G(x, y) = ceil(h / c)`` with ``h`` the number of differing attributes.

    Parameters
    ----------
    c : int, default 1
        Largest number of attributes an edge may change, ``>= 1``.
    """

    def __init__(self, c: int = 1) -> None:
        super().__init__()
        if not _is_int(c):
            raise TypeError(f"c must be an int >= 1, got {c!r} of type {type(c).__name__}")
        if c < 1:
            raise ValueError(f"c must be an int >= 1, got {c}")
        self.c = int(c)

    def _key(self) -> tuple:
        return (self.c,)

    def __repr__(self) -> str:
        return f"Attribute(c={self.c})"

    def _record_edge(self, X, Y):
        h = _differ(X, Y).sum(axis=1)
        return (h >= 1) & (h <= self.c)

    def _record_distance(self, X, Y):
        h = _differ(X, Y).sum(axis=1)
        return _ceil_div(h, self.c).astype(np.float64)

    def _bind(self, domain):
        return True

    def _hamming(self, domain, i, j):
        return (domain._codes_unchecked(i) != domain._codes_unchecked(j)).sum(axis=-1)

    def _edge_mask(self, domain, bound, i, j):
        h = self._hamming(domain, i, j)
        return (h >= 1) & (h <= self.c)

    def _distance_index(self, domain, bound, i, j):
        return _ceil_div(self._hamming(domain, i, j), self.c).astype(np.float64)

    def _has_edge(self, domain, bound):
        return domain.size >= 2

    def _max_weighted_l1(self, domain, bound, scale):
        if domain.size < 2:
            return 0, True, ""
        return sum(sorted(_ranges(domain, scale), reverse=True)[: self.c]), True, ""


# ---------------------------------------------------------------------------
# Partition
# ---------------------------------------------------------------------------
class _BlocksBinding:
    """Block id of every flat index, for explicitly listed blocks."""

    def __init__(self, block_of: np.ndarray, sizes: np.ndarray) -> None:
        self.block_of = block_of
        self.sizes = sizes


class Partition(SecretGraph):
    """A clique on each block of a partition of the domain (000 eq. 6).

    Two distinct values are an edge iff they lie in the same block;
    ``d_G`` is 1 inside a block and ``inf`` across blocks (000 Sec 4).

    Parameters
    ----------
    blocks : sequence of sequences of records
        Disjoint, non-empty blocks.  Bound to a domain they must cover it
        exactly: a value left out would have no secret at all and so no
        protection, which is refused rather than assumed.

    Attributes
    ----------
    mode : {"blocks", "attributes", "intervals"}
        How the partition was described.
    blocks : tuple of tuples or None
        The listed blocks (records normalised: scalars in 1-D, else tuples).
    names : tuple or None
        For :meth:`by_attributes`, the attribute names or positions.
    boundaries : tuple or None
        For :meth:`intervals`, the interval boundaries.

    See Also
    --------
    Partition.by_attributes, Partition.intervals :
        Partitions described without listing the values (any domain size).
    """

    def __init__(self, blocks: Sequence[Sequence[Any]]) -> None:
        super().__init__()
        if isinstance(blocks, (str, bytes)) or not isinstance(blocks, Iterable):
            raise TypeError(f"blocks must be a sequence of blocks (sequences of records), got {blocks!r}")
        blocks = list(blocks)
        if not blocks:
            raise ValueError("blocks must be a non-empty sequence of blocks, got []")
        normalised: list[tuple] = []
        where: dict[Any, int] = {}
        for b, block in enumerate(blocks):
            if isinstance(block, (str, bytes)) or not isinstance(block, Iterable):
                raise TypeError(f"blocks[{b}] must be a sequence of records, got {block!r}")
            records = tuple(_norm_record(r) for r in block)
            if not records:
                raise ValueError(f"blocks[{b}] must be a non-empty sequence of records, got []")
            for record in records:
                try:
                    other = where.get(record)
                except TypeError:
                    raise TypeError(f"blocks[{b}] holds an unhashable record {record!r}") from None
                if other is not None:
                    raise ValueError(
                        f"blocks must be disjoint, got value {record!r} in blocks[{other}] and blocks[{b}]"
                    )
                where[record] = b
            normalised.append(records)
        self.mode = "blocks"
        self.blocks: tuple[tuple, ...] | None = tuple(normalised)
        self.names: tuple | None = None
        self.boundaries: tuple | None = None
        self._where = where

    @classmethod
    def by_attributes(cls, names: Sequence[str | int]) -> Partition:
        """Blocks of values that agree on the attributes ``names``.

        Parameters
        ----------
        names : sequence of str or int
            Attribute names (or positions, usable without a domain).  An
            empty sequence gives one block, the complete graph.
        """
        if isinstance(names, (str, bytes)) or not isinstance(names, Iterable):
            raise TypeError(f"names must be a sequence of attribute names or positions, got {names!r}")
        names = tuple(_norm_value(n) for n in names)
        for n in names:
            if not (isinstance(n, str) or _is_int(n)):
                raise TypeError(f"names must hold attribute names (str) or positions (int), got {n!r}")
            if _is_int(n) and n < 0:
                raise ValueError(f"names: attribute positions must be >= 0, got {n}")
        if len(set(names)) != len(names):
            raise ValueError(f"names must be distinct, got {list(names)!r}")
        self = cls.__new__(cls)
        SecretGraph.__init__(self)
        self.mode = "attributes"
        self.blocks = None
        self.names = names
        self.boundaries = None
        return self

    @classmethod
    def intervals(cls, boundaries: Sequence[float]) -> Partition:
        """Blocks ``[b_k, b_{k+1})`` of a 1-D ordinal domain.

        Parameters
        ----------
        boundaries : sequence of numbers
            At least two, strictly increasing and finite.  Bound to a domain
            they must cover it: ``b_0 <= low`` and ``b_last >`` the last bin
            value.
        """
        if isinstance(boundaries, (str, bytes)) or not isinstance(boundaries, Iterable):
            raise TypeError(f"boundaries must be a sequence of numbers, got {boundaries!r}")
        values = []
        for b in boundaries:
            b = _norm_value(b)
            if isinstance(b, bool) or not isinstance(b, numbers.Real):
                raise TypeError(f"boundaries must hold finite numbers, got {b!r}")
            if isinstance(b, float) and not math.isfinite(b):
                raise ValueError(f"boundaries must hold finite numbers, got {b!r}")
            values.append(b)
        if len(values) < 2:
            raise ValueError(f"boundaries must hold at least 2 numbers, got {values!r}")
        for a, b in zip(values, values[1:]):
            if not a < b:
                raise ValueError(f"boundaries must be strictly increasing, got {a!r} before {b!r}")
        self = cls.__new__(cls)
        SecretGraph.__init__(self)
        self.mode = "intervals"
        self.blocks = None
        self.names = None
        self.boundaries = tuple(values)
        return self

    # -- identity ----------------------------------------------------------
    def _key(self) -> tuple:
        return (self.mode, self.blocks, self.names, self.boundaries)

    def __repr__(self) -> str:
        if self.mode == "attributes":
            return f"Partition.by_attributes({list(self.names)!r})"
        if self.mode == "intervals":
            return f"Partition.intervals({list(self.boundaries)!r})"
        count = sum(len(b) for b in self.blocks)
        if count <= 20:
            return f"Partition({[list(b) for b in self.blocks]!r})"
        return f"Partition(<{len(self.blocks)} blocks, {count} values>)"

    # -- record level --------------------------------------------------------
    def _record_blocks(self, X: np.ndarray) -> np.ndarray:
        if self.mode == "blocks":
            return np.array([self._where.get(k, -1) for k in _row_keys(X)], dtype=np.int64)
        if X.shape[1] != 1 or X.dtype.kind not in "iuf":
            raise ValueError(f"Partition.intervals works on 1-D numeric records, got records of {X.shape[1]} values")
        bounds = np.array(self.boundaries, dtype=np.float64)
        block = np.searchsorted(bounds, X[:, 0], side="right") - 1
        return np.where((block >= 0) & (block < len(bounds) - 1), block, -1)

    def _record_same(self, X, Y):
        if self.mode == "attributes":
            for n in self.names:
                if isinstance(n, str):
                    raise ValueError(
                        f"names: Partition.by_attributes({list(self.names)!r}) names attributes, so it needs a "
                        f"domain to find them; pass domain=... or give attribute positions"
                    )
                if n >= X.shape[1]:
                    raise ValueError(f"names: attribute position {n} is out of range for records of {X.shape[1]} values")
            pos = list(self.names)
            return ~_differ(X[:, pos], Y[:, pos]).any(axis=1)
        bx, by = self._record_blocks(X), self._record_blocks(Y)
        return (bx == by) & (bx >= 0)

    def _record_edge(self, X, Y):
        return self._record_same(X, Y) & _differ(X, Y).any(axis=1)

    def _record_distance(self, X, Y):
        return np.where(self._record_same(X, Y), 1.0, np.inf)

    # -- domain level ----------------------------------------------------------
    def _bind(self, domain):
        if self.mode == "attributes":
            positions = []
            for n in self.names:
                if isinstance(n, str):
                    if n not in domain.names:
                        raise ValueError(f"names must be attribute names of the domain {list(domain.names)}, got {n!r}")
                    positions.append(domain.position(n))
                else:
                    if n >= domain.ndim:
                        raise ValueError(f"names: attribute position {n} is out of range for a domain of {domain.ndim} attributes")
                    positions.append(int(n))
            if len(set(positions)) != len(positions):
                raise ValueError(f"names must name distinct attributes, got {list(self.names)!r}")
            return tuple(positions)
        if self.mode == "intervals":
            if domain.ndim != 1 or not isinstance(domain.attributes[0], Ordinal):
                raise ValueError(f"domain: Partition.intervals needs a 1-D ordinal domain, got {domain!r}")
            attr = domain.attributes[0]
            if not (self.boundaries[0] <= attr.low and self.boundaries[-1] > attr.last_value):
                raise ValueError(
                    f"boundaries must cover the domain, i.e. b_0 <= {attr.low} and b_last > {attr.last_value}, "
                    f"got [{self.boundaries[0]!r}, ..., {self.boundaries[-1]!r}] (values left out would lose all protection)"
                )
            # first bin code of each interval: ceil((b - low) / w), clipped to [0, size]
            starts = [min(max(math.ceil((Fraction(b) - attr.low) / attr.bin_width), 0), attr.size) for b in self.boundaries]
            return np.array(starts, dtype=np.int64)
        records = [r for block in self.blocks for r in block]
        ids = np.repeat(np.arange(len(self.blocks), dtype=np.int64), [len(b) for b in self.blocks])
        try:
            if domain.ndim == 1:
                flat = domain.encode(records)
            else:
                flat = domain.encode([r if isinstance(r, tuple) else (r,) for r in records])
        except ValueError as exc:
            raise ValueError(f"blocks must hold values of the domain: {exc}") from None
        block_of = np.full(domain.size, -1, dtype=np.int64)
        order = np.argsort(flat, kind="stable")
        sorted_flat = flat[order]
        dup = np.flatnonzero(sorted_flat[1:] == sorted_flat[:-1])
        if dup.size:
            k1, k2 = order[dup[0]], order[dup[0] + 1]
            raise ValueError(
                f"blocks must be disjoint, got {records[k1]!r} (blocks[{ids[k1]}]) and {records[k2]!r} "
                f"(blocks[{ids[k2]}]) which are the same domain value {domain.record_of(int(flat[k1]))!r}"
            )
        block_of[flat] = ids
        if flat.shape[0] != domain.size:
            missing = int(np.argmax(block_of < 0))
            raise ValueError(
                f"blocks must cover the domain, got no block for value {domain.record_of(missing)!r} "
                f"(values left out would lose all protection)"
            )
        sizes = np.bincount(ids, minlength=len(self.blocks))
        return _BlocksBinding(block_of, sizes)

    def _block_ids(self, domain, bound, i):
        if self.mode == "blocks":
            return bound.block_of[i]
        if self.mode == "intervals":
            return np.searchsorted(bound, i, side="right") - 1
        if not bound:
            return np.zeros(i.shape[0], dtype=np.int64)
        codes = domain._codes_unchecked(i)[:, list(bound)]
        return np.ravel_multi_index(tuple(codes.T), tuple(domain.shape[p] for p in bound))

    def _edge_mask(self, domain, bound, i, j):
        return (self._block_ids(domain, bound, i) == self._block_ids(domain, bound, j)) & (i != j)

    def _distance_index(self, domain, bound, i, j):
        same = self._block_ids(domain, bound, i) == self._block_ids(domain, bound, j)
        return np.where(same, 1.0, np.inf)

    def _block_sizes(self, domain, bound) -> Iterable[int]:
        if self.mode == "blocks":
            return bound.sizes.tolist()
        if self.mode == "intervals":
            return np.diff(bound).tolist()
        free = [n for p, n in enumerate(domain.shape) if p not in bound]
        return [math.prod(free)]

    def _has_edge(self, domain, bound):
        return max(self._block_sizes(domain, bound)) >= 2

    def _edge_chunks(self, domain, bound, max_pairs):
        ids = self._block_ids(domain, bound, np.arange(domain.size, dtype=np.int64))
        order = np.argsort(ids, kind="stable")
        starts = np.flatnonzero(np.r_[True, ids[order][1:] != ids[order][:-1]])
        ends = np.r_[starts[1:], order.shape[0]]
        for s, e in zip(starts.tolist(), ends.tolist()):
            members = np.sort(order[s:e])
            if members.shape[0] >= 2:
                a, b = np.triu_indices(members.shape[0], k=1)
                yield members[a], members[b]

    def _max_weighted_l1(self, domain, bound, scale):
        if not self._has_edge(domain, bound):
            return 0, True, ""
        if self.mode == "attributes":
            return sum(r for p, r in enumerate(_ranges(domain, scale)) if p not in bound), True, ""
        if self.mode == "intervals":
            widest = max(int(e - s) - 1 for s, e in zip(bound[:-1], bound[1:]))
            return scale[0] * max(widest, 0), True, ""
        return self._listed_max(domain, bound, scale)

    def _listed_max(self, domain, bound, scale):
        sel = [a for a in range(domain.ndim) if scale[a] > 0 and domain.shape[a] > 1]
        if not sel:
            return 0, True, ""
        size = domain.size
        order = np.argsort(bound.block_of, kind="stable")
        starts = np.flatnonzero(np.r_[True, bound.block_of[order][1:] != bound.block_of[order][:-1]])
        flat = order.astype(np.int64)
        coords = []
        for a in sel:
            code = (flat // domain.strides[a]) % domain.shape[a]
            coords.append(code * scale[a])

        def spread(values: np.ndarray) -> np.ndarray:
            return np.maximum.reduceat(values, starts) - np.minimum.reduceat(values, starts)

        if sum(_ranges(domain, scale)) >= _SAFE:
            coords = [c.astype(object) for c in coords]
        signs = 2 ** (len(sel) - 1)
        if signs * size <= SIGN_LIMIT:
            best = 0
            for bits in range(signs):
                proj = coords[0].copy()
                for k in range(1, len(sel)):
                    proj = proj - coords[k] if (bits >> (k - 1)) & 1 else proj + coords[k]
                best = max(best, int(spread(proj).max()))
            return best, True, ""
        total = sum(spread(c) for c in coords)
        return (
            int(total.max()),
            False,
            f"upper bound: per block, the sum of the attributes' ranges ({len(sel)} attributes are too many "
            f"for the exact search over 2^{len(sel) - 1} sign vectors)",
        )


# ---------------------------------------------------------------------------
# DistanceThreshold and Line
# ---------------------------------------------------------------------------
class _GridBinding:
    def __init__(self, widths: list[int], shape: list[int], caps: list[int], vmax: int) -> None:
        self.widths = widths
        self.shape = shape
        self.caps = caps  # most bins one edge can move along each axis alone
        self.vmax = vmax
        self.tables: dict = {}


class DistanceThreshold(SecretGraph):
    """Values ``x != y`` with ``d(x, y) <= theta`` (000 eq. 7, the graph ``G^{d,theta}``).

    ``d`` is the L1, L2 or Linf metric on the values of ordinal attributes
    (bin lower edges).  ``d_G(x, y)`` is the fewest steps, each of metric
    length at most ``theta``, from ``x`` to ``y``.

    Parameters
    ----------
    theta : float
        Threshold, finite and ``>= 0`` (0 gives a graph with no edges).
    metric : {"l1", "l2", "linf"}, default "l1"

    Notes
    -----
    Distances: as every metric here is monotone in the absolute coordinate
    differences, shortest paths can be taken monotone, so ``d_G`` is the
    fewest integer steps (in bins) summing to the difference.  Closed forms
    cover Linf, 1-D, single-attribute differences and L1 with equal bin
    widths; L1 with mixed widths and L2 in several dimensions use an exact
    dynamic program over the box of differences (at most
    :data:`DP_CELL_LIMIT` cells, else ValueError).

    Without a domain, records are points of the integer lattice (unit bins).
    """

    def __init__(self, theta: float, metric: str = "l1") -> None:
        super().__init__()
        self.theta, self._theta = _check_theta(theta)
        if metric not in _METRICS:
            raise ValueError(f"metric must be one of {list(_METRICS)}, got {metric!r}")
        self.metric = metric

    def _key(self) -> tuple:
        return (self._theta, self.metric)

    def __repr__(self) -> str:
        return f"DistanceThreshold(theta={self.theta!r}, metric={self.metric!r})"

    # -- record level ----------------------------------------------------------
    def _numeric(self, X: np.ndarray, name: str) -> np.ndarray:
        if X.dtype.kind == "O" and all(_is_int(v) for v in X.reshape(-1).tolist()):
            return X  # Python integers too large for int64: exact object arithmetic
        if X.dtype.kind not in "iuf":
            raise TypeError(f"{name} must hold numeric records for {type(self).__name__}, got {X.dtype} values")
        return X

    def _record_diff(self, X, Y):
        X, Y = self._numeric(X, "x"), self._numeric(Y, "y")
        if "f" in (X.dtype.kind, Y.dtype.kind):
            return np.abs(X.astype(np.float64) - Y.astype(np.float64))
        peak = max((max(abs(int(A.min())), abs(int(A.max()))) for A in (X, Y) if A.size), default=0)
        if peak >= _SAFE:  # exact Python integers where int64 could overflow
            return np.abs(X.astype(object) - Y.astype(object))
        return np.abs(X.astype(np.int64) - Y.astype(np.int64))

    def _record_edge(self, X, Y):
        diff = self._record_diff(X, Y)
        if diff.dtype.kind == "f":
            return _within_float(diff, self.metric, float(self._theta)) & (diff > 0).any(axis=1)
        vmax = int(diff.max()) if diff.size else 0
        return _within(diff, self.metric, self._theta, vmax) & (diff > 0).any(axis=1)

    def _record_distance(self, X, Y):
        diff = self._record_diff(X, Y)
        if diff.dtype.kind == "f":
            if not (np.isfinite(diff) & (diff == np.floor(diff))).all():
                raise ValueError(
                    "x and y: distances without a domain need integer values (points of the unit lattice); "
                    "pass domain=... for binned values"
                )
            diff = diff.astype(np.int64)
        elif diff.dtype.kind == "O":
            if diff.size and int(diff.max()) >= _SAFE:
                raise ValueError("x and y: coordinate differences must be below 2**62 for distances")
            diff = diff.astype(np.int64)
        return _lattice_distance(diff, [1] * diff.shape[1], self.metric, self._theta, self._record_cache)

    # -- domain level ----------------------------------------------------------
    def _bind(self, domain):
        for attr in domain.attributes:
            if not isinstance(attr, Ordinal):
                raise ValueError(
                    f"domain: {type(self).__name__} needs ordinal attributes, got categorical attribute {attr.name!r}"
                )
        widths = [a.bin_width for a in domain.attributes]
        shape = list(domain.shape)
        caps = [min(self._theta // w, n - 1) for w, n in zip(widths, shape)]
        vmax = max(a.span for a in domain.attributes)
        return _GridBinding(widths, shape, caps, vmax)

    def _bin_delta(self, domain, i, j):
        return np.abs(domain._codes_unchecked(i) - domain._codes_unchecked(j))

    def _edge_mask(self, domain, bound, i, j):
        delta = self._bin_delta(domain, i, j)
        vals = delta * np.array(bound.widths, dtype=np.int64)
        return _within(vals, self.metric, self._theta, bound.vmax) & (delta > 0).any(axis=1)

    def _distance_index(self, domain, bound, i, j):
        delta = self._bin_delta(domain, i, j)
        return _lattice_distance(delta, bound.widths, self.metric, self._theta, bound.tables)

    def _has_edge(self, domain, bound):
        return max(bound.caps) >= 1

    def _is_tree(self, domain, bound):
        live = [a for a, n in enumerate(bound.shape) if n >= 2]
        if not live:
            return True
        # two live axes with unit steps always close a 4-cycle; a dead axis disconnects
        return len(live) == 1 and bound.caps[live[0]] == 1

    def _max_weighted_l1(self, domain, bound, scale):
        if not self._has_edge(domain, bound):
            return 0, True, ""
        return _max_gain(bound.widths, bound.caps, scale, self.metric, self._theta)


class Line(DistanceThreshold):
    """The line graph on a 1-D ordinal domain: ``DistanceThreshold(1, "l1")``.

    Consecutive values are joined; ``d_G(x, y) = |x - y|``.  The domain must
    have unit bins (with wider bins no two values are within distance 1; use
    ``DistanceThreshold(theta=bin_width)`` to join consecutive bins).
    """

    def __init__(self) -> None:
        super().__init__(1, "l1")

    def _key(self) -> tuple:
        return ()

    def __repr__(self) -> str:
        return "Line()"

    def _record_diff(self, X, Y):
        if X.shape[1] != 1:
            raise ValueError(f"x must hold 1-D records for Line, got records of {X.shape[1]} values")
        return super()._record_diff(X, Y)

    def _bind(self, domain):
        if domain.ndim != 1 or not isinstance(domain.attributes[0], Ordinal):
            raise ValueError(f"domain: Line needs a 1-D ordinal domain, got {domain!r}")
        width = domain.attributes[0].bin_width
        if width != 1:
            raise ValueError(
                f"domain: Line needs bin_width 1 (no two bins of width {width} are within distance 1); "
                f"use DistanceThreshold(theta={width}) to join consecutive bins"
            )
        return super()._bind(domain)


# ---------------------------------------------------------------------------
# Custom
# ---------------------------------------------------------------------------
class _CustomBinding:
    def __init__(self, lo: np.ndarray, hi: np.ndarray, size: int) -> None:
        self.lo, self.hi = lo, hi
        self.size = size
        self.keys = lo * size + hi if size <= 3_000_000_000 else None
        self.pairs = None if self.keys is not None else set(zip(lo.tolist(), hi.tolist()))
        verts = np.unique(np.concatenate([lo, hi]))
        self.verts = verts
        a = np.searchsorted(verts, lo)
        b = np.searchsorted(verts, hi)
        src = np.concatenate([a, b])
        dst = np.concatenate([b, a])
        order = np.argsort(src, kind="stable")
        self.indptr = np.r_[0, np.cumsum(np.bincount(src, minlength=verts.shape[0]))]
        self.adj = dst[order]


def _bfs(indptr: np.ndarray, adj: np.ndarray, start: int) -> np.ndarray:
    dist = np.full(indptr.shape[0] - 1, -1, dtype=np.int64)
    dist[start] = 0
    queue = deque([start])
    adj_list = adj
    while queue:
        v = queue.popleft()
        for w in adj_list[indptr[v] : indptr[v + 1]].tolist():
            if dist[w] < 0:
                dist[w] = dist[v] + 1
                queue.append(w)
    return dist


class Custom(SecretGraph):
    """An explicit undirected secret graph.

    Parameters
    ----------
    edges : sequence of pairs of records
        Each pair joins two different values; order and repeats do not
        matter.  Bound to a domain, every endpoint must be a domain value.
    """

    def __init__(self, edges: Sequence[tuple[Any, Any]]) -> None:
        super().__init__()
        if isinstance(edges, (str, bytes)) or not isinstance(edges, Iterable):
            raise TypeError(f"edges must be a sequence of pairs of records, got {edges!r}")
        pairs: dict[frozenset, tuple] = {}
        for k, edge in enumerate(edges):
            if isinstance(edge, (str, bytes)) or not isinstance(edge, Iterable):
                raise TypeError(f"edges[{k}] must be a pair of records, got {edge!r}")
            edge = list(edge)
            if len(edge) != 2:
                raise ValueError(f"edges[{k}] must be a pair of records, got {len(edge)} items: {edge!r}")
            x, y = (_norm_record(v) for v in edge)
            try:
                same = x == y
                key = frozenset((x, y))
            except TypeError:
                raise TypeError(f"edges[{k}] holds an unhashable record: {edge!r}") from None
            if same:
                raise ValueError(f"edges must join two different values, got ({x!r}, {y!r}) at edges[{k}]")
            pairs.setdefault(key, (x, y))
        self.edges: tuple[tuple, ...] = tuple(pairs.values())
        self._adj: dict[Any, list] = {}
        for x, y in self.edges:
            self._adj.setdefault(x, []).append(y)
            self._adj.setdefault(y, []).append(x)

    def _key(self) -> tuple:
        return (frozenset(frozenset(e) for e in self.edges),)

    def __repr__(self) -> str:
        if len(self.edges) <= 12:
            return f"Custom({list(self.edges)!r})"
        return f"Custom(<{len(self.edges)} edges>)"

    # -- record level ----------------------------------------------------------
    def _record_edge(self, X, Y):
        return np.array(
            [y in self._adj.get(x, ()) for x, y in zip(_row_keys(X), _row_keys(Y))], dtype=bool
        )

    def _record_distance(self, X, Y):
        out = np.empty(X.shape[0])
        for k, (x, y) in enumerate(zip(_row_keys(X), _row_keys(Y))):
            if x == y:
                out[k] = 0.0
                continue
            dist = self._record_cache.get(x)
            if dist is None:
                dist = {x: 0}
                queue = deque([x])
                while queue:
                    v = queue.popleft()
                    for w in self._adj.get(v, ()):
                        if w not in dist:
                            dist[w] = dist[v] + 1
                            queue.append(w)
                if len(self._record_cache) > 1024:
                    self._record_cache.clear()
                self._record_cache[x] = dist
            out[k] = dist.get(y, math.inf)
        return out

    # -- domain level ----------------------------------------------------------
    def _bind(self, domain):
        if not self.edges:
            empty = np.zeros(0, dtype=np.int64)
            return _CustomBinding(empty, empty, domain.size)
        ends = [v for e in self.edges for v in e]
        try:
            if domain.ndim == 1:
                flat = domain.encode(ends)
            else:
                flat = domain.encode([v if isinstance(v, tuple) else (v,) for v in ends])
        except ValueError as exc:
            raise ValueError(f"edges must join values of the domain: {exc}") from None
        a, b = flat[0::2], flat[1::2]
        loop = np.flatnonzero(a == b)
        if loop.size:
            x, y = self.edges[int(loop[0])]
            raise ValueError(
                f"edges must join two different values, got ({x!r}, {y!r}) which fall in the same bin of the domain"
            )
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        pairs = np.unique(np.stack([lo, hi], axis=1), axis=0)
        return _CustomBinding(pairs[:, 0].copy(), pairs[:, 1].copy(), domain.size)

    def _edge_mask(self, domain, bound, i, j):
        lo, hi = np.minimum(i, j), np.maximum(i, j)
        if bound.keys is None:
            return np.array([p in bound.pairs for p in zip(lo.tolist(), hi.tolist())], dtype=bool)
        if bound.keys.shape[0] == 0:
            return np.zeros(i.shape[0], dtype=bool)
        keys = lo * bound.size + hi
        pos = np.minimum(np.searchsorted(bound.keys, keys), bound.keys.shape[0] - 1)
        return (bound.keys[pos] == keys) & (i != j)

    def _distance_index(self, domain, bound, i, j):
        out = np.full(i.shape[0], np.inf)
        if bound.verts.shape[0] == 0:
            return out
        vi = np.searchsorted(bound.verts, i)
        vj = np.searchsorted(bound.verts, j)
        vi = np.minimum(vi, bound.verts.shape[0] - 1)
        vj = np.minimum(vj, bound.verts.shape[0] - 1)
        in_i = bound.verts[vi] == i
        in_j = bound.verts[vj] == j
        ok = in_i & in_j
        for s in np.unique(vi[ok]).tolist():
            rows = ok & (vi == s)
            dist = _bfs(bound.indptr, bound.adj, s)[vj[rows]]
            out[rows] = np.where(dist >= 0, dist, np.inf)
        return out

    def _has_edge(self, domain, bound):
        return bound.lo.shape[0] > 0

    def _is_tree(self, domain, bound):
        if bound.lo.shape[0] != domain.size - 1:
            return False
        parent: dict[int, int] = {}

        def find(v: int) -> int:
            root = v
            while parent.get(root, root) != root:
                root = parent[root]
            while parent.get(v, v) != root:
                parent[v], v = root, parent[v]
            return root

        for a, b in zip(bound.lo.tolist(), bound.hi.tolist()):
            ra, rb = find(a), find(b)
            if ra == rb:
                return False
            parent[ra] = rb
        return True

    def _edge_chunks(self, domain, bound, max_pairs):
        for start in range(0, bound.lo.shape[0], max_pairs):
            yield bound.lo[start : start + max_pairs], bound.hi[start : start + max_pairs]

    def _max_weighted_l1(self, domain, bound, scale):
        if bound.lo.shape[0] == 0:
            return 0, True, ""
        delta = np.abs(domain._codes_unchecked(bound.lo) - domain._codes_unchecked(bound.hi))
        weights = np.array(scale, dtype=object if sum(_ranges(domain, scale)) >= _SAFE else np.int64)
        return int(max((delta @ weights).tolist())), True, ""
