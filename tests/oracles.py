"""Brute-force oracles for secret graphs and policy sensitivities.

Everything here is written from the definitions (000 Sec 3.1, Def 5.1) on
explicit domain values, without calling the library's edge, distance or
encoding code: the domain is enumerated with :func:`itertools.product` from
the attributes' public parameters (first attribute most significant, so the
position in the enumeration is the flat index), edges are tested pair by
pair from each graph's defining rule, distances come from breadth-first
search, and sensitivities are ``max over edges ||W[:, x] - W[:, y]||_1``.

Meant for tiny domains (``|T| <= 12`` for sensitivities; a few hundred
values for distances).
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from fractions import Fraction
from typing import Any

import numpy as np


# ---------------------------------------------------------------------------
# domain enumeration
# ---------------------------------------------------------------------------
def attribute_values(attr: Any) -> list:
    """The values of one attribute in code order (bin lower edges or labels)."""
    if hasattr(attr, "labels"):
        return list(attr.labels)
    return list(range(attr.low, attr.high + 1, attr.bin_width))


def enumerate_domain(domain: Any) -> list[tuple]:
    """All values of the domain as tuples, in flat-index order."""
    return list(itertools.product(*[attribute_values(a) for a in domain.attributes]))


def is_ordinal(attr: Any) -> bool:
    return not hasattr(attr, "labels")


# ---------------------------------------------------------------------------
# edge rules, from the definitions
# ---------------------------------------------------------------------------
def _metric(x: tuple, y: tuple, metric: str) -> Fraction:
    diffs = [abs(Fraction(a) - Fraction(b)) for a, b in zip(x, y)]
    if metric == "l1":
        return sum(diffs, Fraction(0))
    if metric == "linf":
        return max(diffs)
    return sum((d * d for d in diffs), Fraction(0))  # squared L2


def edge_rule(domain: Any, graph: Any):
    """A function ``(x, y) -> bool`` deciding edges from the graph's definition."""
    kind = type(graph).__name__
    ndim = len(domain.attributes)

    def scalar(v: tuple) -> Any:
        return v[0] if ndim == 1 else v

    if kind == "FullDomain":
        return lambda x, y: x != y
    if kind == "Attribute":
        c = graph.c
        return lambda x, y: 1 <= sum(a != b for a, b in zip(x, y)) <= c
    if kind in ("DistanceThreshold", "Line"):
        theta = Fraction(graph.theta)
        metric = graph.metric
        bound = theta * theta if metric == "l2" else theta
        return lambda x, y: x != y and _metric(x, y, metric) <= bound
    if kind == "Custom":
        pairs = set()
        for a, b in graph.edges:
            pairs.add((a, b))
            pairs.add((b, a))
        return lambda x, y: (scalar(x), scalar(y)) in pairs
    if kind == "Partition":
        if graph.mode == "blocks":
            block = {}
            for k, members in enumerate(graph.blocks):
                for v in members:
                    block[v] = k
            return lambda x, y: x != y and block[scalar(x)] == block[scalar(y)]
        if graph.mode == "attributes":
            names = [a.name for a in domain.attributes]
            pos = [n if isinstance(n, int) else names.index(n) for n in graph.names]
            return lambda x, y: x != y and all(x[p] == y[p] for p in pos)
        bounds = [Fraction(b) for b in graph.boundaries]

        def interval(v: Any) -> int:
            for k in range(len(bounds) - 1):
                if bounds[k] <= v < bounds[k + 1]:
                    return k
            return -1

        return lambda x, y: x != y and interval(x[0]) == interval(y[0]) >= 0
    raise TypeError(f"oracle does not know graph {graph!r}")


def oracle_edges(domain: Any, graph: Any) -> set[tuple[int, int]]:
    """All edges ``(i, j)``, ``i < j``, of ``graph`` on ``domain`` by brute force."""
    values = enumerate_domain(domain)
    rule = edge_rule(domain, graph)
    return {
        (i, j)
        for i, j in itertools.combinations(range(len(values)), 2)
        if rule(values[i], values[j])
    }


def bfs_distances(size: int, edges: set[tuple[int, int]]) -> np.ndarray:
    """All-pairs shortest-path lengths (float, ``inf`` when disconnected)."""
    adj: list[list[int]] = [[] for _ in range(size)]
    for i, j in edges:
        adj[i].append(j)
        adj[j].append(i)
    out = np.full((size, size), math.inf)
    for s in range(size):
        out[s, s] = 0
        queue = deque([s])
        while queue:
            v = queue.popleft()
            for w in adj[v]:
                if math.isinf(out[s, w]):
                    out[s, w] = out[s, v] + 1
                    queue.append(w)
    return out


def oracle_is_tree(size: int, edges: set[tuple[int, int]]) -> bool:
    """Connected and ``|E| = |V| - 1``."""
    return len(edges) == size - 1 and bool(np.isfinite(bfs_distances(size, edges)[0]).all())


# ---------------------------------------------------------------------------
# sensitivities
# ---------------------------------------------------------------------------
def oracle_sensitivity(edges: set[tuple[int, int]], W: np.ndarray):
    """``max over edges ||W[:, x] - W[:, y]||_1`` (0 without edges), exactly."""
    best = 0
    for i, j in edges:
        total = sum(abs(Fraction(a) - Fraction(b)) for a, b in zip(W[:, i].tolist(), W[:, j].tolist()))
        best = max(best, total)
    return int(best) if Fraction(best).denominator == 1 else float(best)


def histogram_matrix(size: int) -> np.ndarray:
    """The complete histogram: one count per value."""
    return np.eye(size, dtype=np.int64)


def cumulative_matrix(size: int) -> np.ndarray:
    """Cumulative counts ``c_i = #{t <= value i}``: row i has ones on values 0..i."""
    return np.tril(np.ones((size, size), dtype=np.int64))


def sum_matrix(domain: Any, attribute: str | None = None) -> np.ndarray:
    """Per-attribute sums of values: one row per ordinal attribute (or just ``attribute``)."""
    values = enumerate_domain(domain)
    rows = []
    for a, attr in enumerate(domain.attributes):
        if not is_ordinal(attr):
            continue
        if attribute is not None and attr.name != attribute:
            continue
        rows.append([v[a] for v in values])
    return np.array(rows, dtype=np.int64)
