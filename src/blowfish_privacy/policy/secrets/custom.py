"""Explicit secret graphs: :class:`Custom` (an undirected edge list, small domains)."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from . import limits as _limits
from .base import NO_EDGES, SecretGraph, ranges
from .records import encode_values, norm_record, row_keys

if TYPE_CHECKING:
    from ..domain import Domain


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


def bfs(indptr: np.ndarray, adj: np.ndarray, start: int) -> np.ndarray:
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


def _component_count(bound: _CustomBinding) -> int:
    """Connected components among the values that lie on an edge (union-find, O(|E|))."""
    parent = list(range(bound.verts.shape[0]))

    def find(v: int) -> int:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    count = len(parent)
    a = np.searchsorted(bound.verts, bound.lo).tolist()
    b = np.searchsorted(bound.verts, bound.hi).tolist()
    for x, y in zip(a, b):
        rx, ry = find(x), find(y)
        if rx != ry:
            parent[rx] = ry
            count -= 1
    return count


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
            x, y = (norm_record(v) for v in edge)
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

    def lists_edges(self) -> bool:
        return True

    def __repr__(self) -> str:
        if len(self.edges) <= 12:
            return f"Custom({list(self.edges)!r})"
        return f"Custom(<{len(self.edges)} edges>)"

    def describe(self, domain: Domain) -> str:
        bound = self._binding(domain)
        edges = bound.lo.shape[0]
        if edges == 0:
            return NO_EDGES
        parts = _component_count(bound)
        text = (
            f"Pairs of values joined by one of the {edges} listed edges are secret: an adversary cannot "
            f"tell them apart better than e^epsilon. Other pairs are protected by e^(epsilon d_G), d_G "
            f"the fewest edges between them."
        )
        alone = domain.size - bound.verts.shape[0]
        if alone:
            text += f" {alone} of the {domain.size} values are on no edge: they are NOT protected at all."
        if parts > 1:
            text += (f" The edges form {parts} separate groups: values in different groups are NOT "
                     f"protected from each other.")
        return text

    # -- record level ----------------------------------------------------------
    def _record_edge(self, X, Y):
        return np.array(
            [y in self._adj.get(x, ()) for x, y in zip(row_keys(X), row_keys(Y))], dtype=bool
        )

    def _record_distance(self, X, Y):
        out = np.empty(X.shape[0])
        for k, (x, y) in enumerate(zip(row_keys(X), row_keys(Y))):
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
        flat = encode_values(domain, ends, "edges must join values of the domain")
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
            dist = bfs(bound.indptr, bound.adj, s)[vj[rows]]
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
        weights = np.array(scale, dtype=object if sum(ranges(domain, scale)) >= _limits.SAFE else np.int64)
        return int(max((delta @ weights).tolist())), True, ""
