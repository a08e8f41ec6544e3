"""The intersection of secret graphs: :class:`Intersection`.

A pair of values is an edge of ``Intersection([G_1, ..., G_k])`` iff it is
an edge of every ``G_i``.  Releases under policies ``G_1, ..., G_k`` are
each ``(eps_i, G)``-private for every subgraph ``G`` of their own graph, so
together they compose under the intersection (DESIGN sec 6).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..domain import Domain
from . import canonical as _canon
from . import limits as _limits
from .attribute import Attribute, FullDomain
from .base import NO_EDGES, SecretGraph, SpecParameter, listing
from .records import as_rows, differ, row_keys
from .custom import Custom, bfs
from .lattice import max_gain
from .partition import Partition
from .threshold import DistanceThreshold, Line


def _members(graphs: Any) -> tuple[SecretGraph, ...]:
    if isinstance(graphs, SecretGraph):
        raise TypeError(
            f"graphs must be a sequence of secret graphs, got the single graph {graphs!r}; "
            f"pass a list such as [{graphs!r}]"
        )
    if isinstance(graphs, (str, bytes)) or not isinstance(graphs, Iterable):
        raise TypeError(f"graphs must be a sequence of secret graphs, got {graphs!r} of type {type(graphs).__name__}")
    items = list(graphs)
    if not items:
        raise ValueError("graphs must be a non-empty sequence of secret graphs, got []")
    flat: list[SecretGraph] = []
    for k, g in enumerate(items):
        if not isinstance(g, SecretGraph):
            raise TypeError(f"graphs[{k}] must be a secret graph (a SecretGraph), got {g!r} of type {type(g).__name__}")
        flat.extend(g.graphs if isinstance(g, Intersection) else (g,))
    unique: list[SecretGraph] = []
    for g in flat:
        if g not in unique:
            unique.append(g)
    # the complete graph changes no intersection
    rest = [g for g in unique if type(g) is not FullDomain]
    return tuple(rest) if rest else (unique[0],)


class _IntersectionBinding:
    def __init__(self, members: tuple) -> None:
        self.members = members
        self.form: Any = None
        self.undecided: str | None = None
        self.edges: tuple[np.ndarray, np.ndarray] | None = None


class Intersection(SecretGraph):
    """The pairs of values that are an edge of every one of several secret graphs.

    Parameters
    ----------
    graphs : sequence of SecretGraph
        Non-empty.  Nested intersections are flattened, repeated graphs and
        :class:`FullDomain` (which changes no intersection) are dropped, and
        an intersection of one graph is that graph itself.

    Attributes
    ----------
    graphs : tuple of SecretGraph
        The member graphs (at least two).

    Raises
    ------
    TypeError
        If ``graphs`` is not a sequence of secret graphs.
    ValueError
        If ``graphs`` is empty.

    Notes
    -----
    Bound to a domain, every member must fit it.  ``d_G`` is the fewest
    steps along edges of the intersection: exact in closed form for
    intersections of :class:`FullDomain`, :class:`Attribute`,
    :meth:`Partition.by_attributes` and one threshold (or only Linf
    thresholds, or ``Attribute(1)``), for 1-D intervals within a threshold,
    and by breadth-first search when a member lists its edges
    (:class:`Custom`, listed :class:`Partition`) or the domain has at most
    :data:`limits.EDGE_LIMIT` values; otherwise ``distance`` raises
    NotImplementedError rather than give a length that is not proven.

    Examples
    --------
    >>> from blowfish_privacy.policy.domain import Domain, Ordinal
    >>> d = Domain([Ordinal("age", 0, 99), Ordinal("zip", 0, 9)])
    >>> g = Intersection([DistanceThreshold(5), Partition.by_attributes(["zip"])])
    >>> g.is_edge((30, 1), (34, 1), domain=d), g.is_edge((30, 1), (31, 2), domain=d)
    (True, False)
    >>> Intersection([Line()]) == Line()
    True
    """

    spec_name = "intersection"
    spec_parameters = (SpecParameter("of", (list,), "an array of strings", required=True, items=str),)
    graphs: tuple[SecretGraph, ...]

    def __new__(cls, graphs: Sequence[SecretGraph] | None = None) -> Any:
        if graphs is None:  # copy and unpickling build the instance from __reduce__
            self = super().__new__(cls)
            SecretGraph.__init__(self)
            self.graphs = ()
            return self
        members = _members(graphs)
        if len(members) == 1:
            return members[0]
        self = super().__new__(cls)
        SecretGraph.__init__(self)
        self.graphs = members
        return self

    def __init__(self, graphs: Sequence[SecretGraph] | None = None) -> None:
        pass  # built in __new__ (which may return a member instead)

    @classmethod
    def from_spec(cls, of) -> SecretGraph:
        """The intersection of the graphs ``of`` (a spec names policies; the caller resolves them to graphs)."""
        return cls(of)

    def __reduce__(self) -> tuple:
        return (Intersection, (list(self.graphs),))

    def _key(self) -> tuple:
        return (frozenset(self.graphs),)

    def __repr__(self) -> str:
        return f"Intersection([{', '.join(repr(g) for g in self.graphs)}])"

    def describe(self, domain: Domain) -> str:
        bound = self._binding(domain)
        if not self._has_edge(domain, bound):
            return NO_EDGES
        names = listing([repr(g) for g in self.graphs])
        return (
            f"Only pairs of values that are secret under every one of the {len(self.graphs)} graphs {names} "
            f"are secret (their intersection): an adversary cannot tell such a pair apart better than "
            f"e^epsilon. Other pairs are protected by e^(epsilon d_G), d_G the fewest such steps between "
            f"them, and pairs that no chain of such steps joins are NOT protected."
        )

    # -- record level ----------------------------------------------------------
    def _record_edge(self, X, Y):
        mask = np.ones(X.shape[0], dtype=bool)
        for g in self.graphs:
            rows = np.flatnonzero(mask)
            if rows.shape[0] == 0:
                break
            mask[rows] = g._record_edge(X[rows], Y[rows])
        return mask

    def _record_distance(self, X, Y):
        custom = [g for g in self.graphs if type(g) is Custom]
        if custom:
            return self._record_bfs(min(custom, key=lambda g: len(g.edges)), X, Y)
        form = self._record_mono()
        m = X.shape[1]
        if m != 1 and any(type(g) is Line for g in self.graphs):
            raise ValueError(f"x must hold 1-D records for Line, got records of {m} values")
        if form.thr:
            metric, theta = next(iter(form.thr.items()))
            delta = DistanceThreshold(theta, metric)._record_diff(X, Y)
            if delta.dtype.kind == "f":
                if not (np.isfinite(delta) & (delta == np.floor(delta))).all():
                    raise ValueError(
                        "x and y: distances without a domain need integer values (points of the unit lattice); "
                        "pass domain=... for binned values"
                    )
            elif delta.dtype.kind == "O" and delta.size and int(delta.max()) >= _limits.SAFE:
                raise ValueError("x and y: coordinate differences must be below 2**62 for distances")
            delta = delta.astype(np.int64)
            caps = [0 if a in form.fixed else min(int(t // 1) for t in form.thr.values()) for a in range(m)]
        else:
            delta = differ(X, Y).astype(np.int64)
            caps = [0 if a in form.fixed else None for a in range(m)]
        for a in form.fixed:
            if a >= m:
                raise ValueError(f"names: attribute position {a} is out of range for records of {m} values")
        out, todo = _canon.mono_distance(form, delta, caps)
        single = _canon.single_threshold(form)
        if todo.any() and single is not None:
            rows = todo & ((delta > 0).sum(axis=1) <= (form.c if form.c is not None else m))
            if rows.any():
                metric, theta = single
                out[rows] = DistanceThreshold(theta, metric)._record_distance(X[rows], Y[rows])
                todo &= ~rows
        if todo.any():
            raise NotImplementedError(
                f"the shortest-path length in {self!r} has no proven closed form for these records; pass "
                f"domain=... (small domains are searched exactly)"
            )
        return out

    def _record_mono(self) -> _canon.Mono:
        form = _canon.Mono()
        for g in self.graphs:
            kind = type(g)
            if kind is FullDomain:
                part = _canon.Mono()
            elif kind is Attribute:
                part = _canon.Mono(c=g.c)
            elif kind in (DistanceThreshold, Line):
                part = _canon.Mono(thr={g.metric: g._theta})
            elif kind is Partition and g.mode == "attributes":
                if any(isinstance(n, str) for n in g.names):
                    raise ValueError(
                        f"names: Partition.by_attributes({list(g.names)!r}) names attributes, so it needs a "
                        f"domain to find them; pass domain=... or give attribute positions"
                    )
                part = _canon.Mono(fixed=frozenset(g.names))
            else:
                raise NotImplementedError(
                    f"the shortest-path length in {self!r} without a domain is not available for member {g!r}; "
                    f"pass domain=..."
                )
            form = form.merge(part)
        return form

    def _record_bfs(self, base: Custom, X, Y):
        """Shortest paths over the edges of ``base`` that every member keeps (records, no domain)."""
        keep = [False] * len(base.edges)
        if base.edges:
            A = as_rows([e[0] for e in base.edges], "edges")
            B = as_rows([e[1] for e in base.edges], "edges")
            if A.shape[1] == X.shape[1]:  # edges of another record length never meet x or y
                keep = self._record_edge(A, B).tolist()
        adj: dict[Any, list] = {}
        for (x, y), k in zip(base.edges, keep):
            if k:
                adj.setdefault(x, []).append(y)
                adj.setdefault(y, []).append(x)
        out = np.empty(X.shape[0])
        for k, (x, y) in enumerate(zip(row_keys(X), row_keys(Y))):
            if x == y:
                out[k] = 0.0
                continue
            dist = {x: 0}
            queue = deque([x])
            while queue and y not in dist:
                v = queue.popleft()
                for w in adj.get(v, ()):
                    if w not in dist:
                        dist[w] = dist[v] + 1
                        queue.append(w)
            out[k] = dist.get(y, math.inf)
        return out

    # -- domain level ----------------------------------------------------------
    def _bind(self, domain):
        if not self.graphs:
            raise ValueError("graphs must be a non-empty sequence of secret graphs, got []")
        bounds = []
        for k, g in enumerate(self.graphs):
            try:
                bounds.append(g._binding(domain))
            except ValueError as exc:
                raise ValueError(f"graphs[{k}] {g!r}: {exc}") from None
        return _IntersectionBinding(tuple(bounds))

    def _form(self, domain: Domain, bound: _IntersectionBinding) -> Any:
        """The canonical form on ``domain``, or None when there is none (``bound.undecided`` says why)."""
        if bound.form is None and bound.undecided is None:
            try:
                bound.form = _canon.intersection_form(self, domain)
            except _canon.Undecided as exc:
                bound.undecided = str(exc)
        return bound.form

    def _edge_mask(self, domain, bound, i, j):
        mask = np.ones(i.shape[0], dtype=bool)
        for g, b in zip(self.graphs, bound.members):
            rows = np.flatnonzero(mask)
            if rows.shape[0] == 0:
                break
            mask[rows] = g._edge_mask(domain, b, i[rows], j[rows])
        return mask

    def _edge_chunks(self, domain, bound, max_pairs):
        form = self._form(domain, bound)
        if isinstance(form, _canon.Edges):
            for start in range(0, form.pu.shape[0], max_pairs):
                lo = np.minimum(form.pu[start : start + max_pairs], form.pv[start : start + max_pairs])
                hi = np.maximum(form.pu[start : start + max_pairs], form.pv[start : start + max_pairs])
                yield lo, hi
            return
        listed = [g for g in self.graphs if type(g) is Partition and g.mode == "blocks"]
        if listed:
            for block in _canon.blocks_of(listed[0], domain):
                for i, j in _canon.pair_chunks(block, max_pairs):
                    mask = self._edge_mask(domain, bound, i, j)
                    if mask.any():
                        lo, hi = np.minimum(i[mask], j[mask]), np.maximum(i[mask], j[mask])
                        yield lo, hi
            return
        yield from super()._edge_chunks(domain, bound, max_pairs)

    def _has_edge(self, domain, bound):
        form = self._form(domain, bound)
        if isinstance(form, _canon.Mono):
            return bool(form.live(domain))
        if form is not None:
            return form.has_edge()
        # no closed form: look for one edge within a bounded search; else assume one
        # (an edge that is not there only costs accuracy, a missed one would cost privacy)
        listed = [g for g in self.graphs if type(g) is Partition and g.mode == "blocks"]
        work = sum(b.shape[0] ** 2 for b in _canon.blocks_of(listed[0], domain)) if listed else domain.size ** 2
        if work > 2 * _limits.PAIR_LIMIT:
            return True
        for _ in self._edge_chunks(domain, bound, _limits.PAIRS_PER_CHUNK):
            return True
        return False

    def _listed_edges(self, domain, bound) -> tuple[np.ndarray, np.ndarray] | None:
        """All edges, when the domain is small enough to list them (else None)."""
        if bound.edges is None:
            form = self._form(domain, bound)
            if not isinstance(form, _canon.Edges) and domain.size > _limits.EDGE_LIMIT:
                return None
            parts = list(self._edge_chunks(domain, bound, _limits.PAIRS_PER_CHUNK))
            if parts:
                bound.edges = (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))
            else:
                bound.edges = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
        return bound.edges

    def _is_tree(self, domain, bound):
        size = domain.size
        if size == 1:
            return True
        form = self._form(domain, bound)
        if isinstance(form, _canon.Mono):
            caps = form.caps(domain)
            if any(n >= 2 and u == 0 for n, u in zip(domain.shape, caps)):
                return False  # an attribute that never changes splits the graph
            live = [a for a, u in enumerate(caps) if u >= 1]
            # two movable attributes close a 4-cycle of unit steps; steps of 2 close a triangle
            return len(live) == 1 and (caps[live[0]] == 1 or domain.shape[live[0]] == 2)
        if isinstance(form, _canon.Band):
            return form.starts.shape[0] == 2 and form.u >= 1 and (form.u == 1 or size == 2)
        edges = self._listed_edges(domain, bound)
        if edges is None:
            return False  # not known to be a tree
        lo, hi = edges
        if lo.shape[0] != size - 1:
            return False
        parent = np.arange(size)

        def find(v: int) -> int:
            while parent[v] != v:
                parent[v] = parent[parent[v]]
                v = parent[v]
            return v

        for a, b in zip(lo.tolist(), hi.tolist()):
            ra, rb = find(a), find(b)
            if ra == rb:
                return False
            parent[ra] = rb
        return True

    def _max_weighted_l1(self, domain, bound, scale):
        if not self._has_edge(domain, bound):
            return 0, True, ""
        form = self._form(domain, bound)
        if isinstance(form, _canon.Band):
            a, b, reach = form.spans()
            return max(scale[0], 0) * int(reach.max()), True, ""
        if isinstance(form, _canon.Edges):
            delta = np.abs(domain._codes_unchecked(form.pu) - domain._codes_unchecked(form.pv))
            weights = np.array(scale, dtype=object)
            return int(max((delta.astype(object) @ weights).tolist())), True, ""
        if isinstance(form, _canon.Mono):
            found = self._mono_max(domain, form, scale)
            if found is not None:
                return found
        # every edge is an edge of each member: the least of their maxima bounds ours
        values = [g._max_weighted_l1(domain, b, scale)[0] for g, b in zip(self.graphs, bound.members)]
        return (
            min(values),
            False,
            f"upper bound: the least of the members' maxima (the exact search over {self!r} is too large)",
        )

    def _mono_max(self, domain, form, scale):
        caps = form.caps(domain)
        live = [a for a in range(domain.ndim) if caps[a] >= 1 and scale[a] > 0]
        if not live:
            return 0, True, ""
        k = form.k(len([a for a in range(domain.ndim) if caps[a] >= 1]))
        if not (set(form.thr) - {"linf"}):
            gains = sorted((scale[a] * caps[a] for a in live), reverse=True)
            return sum(gains[:k]), True, ""
        single = _canon.single_threshold(form)
        if single is not None and (form.c is None or form.c >= len(live)):
            metric, theta = single
            return max_gain(_canon.widths_of(domain), caps, list(scale), metric, theta)
        try:
            rows = _canon.row_maxima(form, domain, _limits.ENUM_LIMIT)
        except _canon.Undecided:
            return None
        weights = np.array([max(s, 0) for s in scale], dtype=object)
        return int(max((rows.astype(object) @ weights).tolist(), default=0)), True, ""

    def _distance_index(self, domain, bound, i, j):
        form = self._form(domain, bound)
        n = i.shape[0]
        if isinstance(form, _canon.Band):
            gap = np.abs(i - j)
            same = form.interval(i) == form.interval(j)
            out = np.full(n, math.inf)
            if form.u >= 1:
                out[same] = _canon.ceil_div(gap[same], form.u)
            out[gap == 0] = 0.0
            return out
        if isinstance(form, _canon.Mono):
            delta = np.abs(domain._codes_unchecked(i) - domain._codes_unchecked(j))
            out, todo = _canon.mono_distance(form, delta, form.caps(domain))
            single = _canon.single_threshold(form)
            if todo.any() and single is not None:
                c = form.c if form.c is not None else domain.ndim
                rows = todo & ((delta > 0).sum(axis=1) <= c)
                if rows.any():
                    metric, theta = single
                    try:
                        out[rows] = DistanceThreshold(theta, metric).distance_index(domain, i[rows], j[rows])
                        todo &= ~rows
                    except ValueError:
                        pass  # the exact dynamic program is too large: search below or refuse
            if not todo.any():
                return out
            out[todo] = self._bfs_distance(domain, bound, i[todo], j[todo])
            return out
        return self._bfs_distance(domain, bound, i, j)

    def _bfs_distance(self, domain, bound, i, j):
        edges = self._listed_edges(domain, bound)
        if edges is None:
            raise NotImplementedError(
                f"the shortest-path length in {self!r} on a domain of {domain.size} values has no proven closed "
                f"form here and the domain is too large for an exact search (at most {_limits.EDGE_LIMIT} values)"
            )
        lo, hi = edges
        verts = np.unique(np.concatenate([lo, hi]))
        out = np.full(i.shape[0], math.inf)
        out[i == j] = 0.0
        if verts.shape[0] == 0:
            return out
        a, b = np.searchsorted(verts, lo), np.searchsorted(verts, hi)
        src, dst = np.concatenate([a, b]), np.concatenate([b, a])
        order = np.argsort(src, kind="stable")
        indptr = np.r_[0, np.cumsum(np.bincount(src, minlength=verts.shape[0]))]
        adj = dst[order]
        vi = np.minimum(np.searchsorted(verts, i), verts.shape[0] - 1)
        vj = np.minimum(np.searchsorted(verts, j), verts.shape[0] - 1)
        ok = (verts[vi] == i) & (verts[vj] == j) & (i != j)
        for s in np.unique(vi[ok]).tolist():
            rows = ok & (vi == s)
            dist = bfs(indptr, adj, s)[vj[rows]]
            out[rows] = np.where(dist >= 0, dist, math.inf)
        return out
