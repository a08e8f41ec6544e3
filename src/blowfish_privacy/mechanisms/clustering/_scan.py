"""The k-means sensitivity engine: scans of the domain for one round's sensitivity.

Given public centroids and reference points, the largest change of the
cluster sizes and sums (relative to the references) when one tuple moves
along one edge of the secret graph (the k-means erratum to 000 Lemma 6.1 of
He, Machanavajjhala, Ding, Blowfish Privacy, SIGMOD 2014; see the notes of
:mod:`.kmeans`): clique scans for FullDomain, Attribute and Partition, edge
offsets or the bisector bound for distance thresholds, an explicit edge
list on small domains, the complete-graph or box bound otherwise.

Private: :func:`.kmeans.kmeans_sensitivity` validates its arguments and
calls :func:`sensitivity_scan` with the work budgets of :mod:`.kmeans`
(read there at call time, as :class:`ScanLimits`); :class:`KMeansSensitivity`
is re-exported by :mod:`.kmeans`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ... import _kmeans
from ...policy.domain import Domain
from ...policy._policy import Policy
from ..plan import int64_bytes

__all__ = ["KMeansSensitivity"]

_MAX_K = _kmeans.KMEANS_MAXK


class ScanLimits(NamedTuple):
    """The scan budgets (documented at their definitions in :mod:`.kmeans`)."""

    offset: int  # OFFSET_SCAN_LIMIT
    table: int  # TABLE_SCAN_LIMIT
    edge: int  # EDGE_SCAN_LIMIT
    work: int  # SCAN_WORK_LIMIT
    projection: int  # PROJECTION_SCAN_LIMIT


@dataclass(frozen=True)
class KMeansSensitivity:
    """Sensitivities of one round's sizes and sums, given public centroids.

    Attributes
    ----------
    size, sum : int
        L1 sensitivities of the cluster sizes and of the cluster sums
        relative to the reference points (value units).
    size_exact, sum_exact : bool
        True for the exact maximum over neighbours; False for a proven upper
        bound.
    method : str
        How they were computed: "cliques", "cliques, bounded same-cluster
        part", "edge offsets", "edge list", "bisector bound",
        "complete-graph bound", "box bound" or "no edges".
    same_cluster, cross_cluster : int
        The two parts of ``sum``: largest change by an edge inside one
        cluster, and by an edge across two clusters (-1: no such edge).
        ``same_cluster`` is an upper bound when a clique scan exceeded
        :data:`.kmeans.PROJECTION_SCAN_LIMIT` (``sum`` is still exact when
        ``sum_exact``); both are upper bounds for "box bound".
    """

    size: int
    sum: int
    size_exact: bool
    sum_exact: bool
    method: str
    same_cluster: int
    cross_cluster: int


def _combine(same: int, cross: int, exact: bool, method: str, size_exact: bool | None = None) -> KMeansSensitivity:
    size = 2 if cross >= 0 else 0
    total = max(same, cross, 0)
    return KMeansSensitivity(
        size=size,
        sum=int(total),
        size_exact=exact if size_exact is None else size_exact,
        sum_exact=exact,
        method=method,
        same_cluster=int(same),
        cross_cluster=int(cross),
    )


def _clique_masks(policy: Policy) -> list[int] | None:
    """Fixed-axis masks whose blocks cover every edge with cliques, or None."""
    cliques = policy.secrets.agreement_cliques(policy.domain)
    if cliques is None:
        return None
    return [sum(1 << a for a in fixed) for fixed in cliques]


def _table_groups(labels: np.ndarray, cost: np.ndarray, blocks: np.ndarray, values: np.ndarray, k: int) -> tuple[int, int]:
    """Exact clique statistics from per-cell tables: blocks[cell] is a clique id."""
    key = blocks.astype(np.int64) * k + labels
    order = np.argsort(key, kind="stable")
    key_s = key[order]
    starts = np.flatnonzero(np.r_[True, key_s[1:] != key_s[:-1]])
    d = values.shape[1]
    same = 0
    for bits in range(1 << (d - 1)):
        proj = values[:, 0].copy()
        for a in range(1, d):
            proj = proj - values[:, a] if (bits >> (a - 1)) & 1 else proj + values[:, a]
        p = proj[order]
        spread = np.maximum.reduceat(p, starts) - np.minimum.reduceat(p, starts)
        same = max(same, int(spread.max()))
    maxc = np.maximum.reduceat(cost[order], starts)
    grp_block = key_s[starts] // k
    # top two per block over clusters (groups are sorted by block, then cluster)
    cross = -1
    bstart = np.flatnonzero(np.r_[True, grp_block[1:] != grp_block[:-1]])
    bend = np.r_[bstart[1:], grp_block.shape[0]]
    multi = np.flatnonzero(bend - bstart >= 2)
    for b in multi.tolist():
        vals = np.sort(maxc[bstart[b] : bend[b]])
        cross = max(cross, int(vals[-1] + vals[-2]))
    return same, cross


def _domain_values(domain: Domain) -> np.ndarray:
    idx = np.arange(domain.size, dtype=np.int64)
    return np.stack([np.asarray(v, dtype=np.int64) for v in domain.values(idx)], axis=1)


def _offsets(policy: Policy, limits: ScanLimits) -> tuple[np.ndarray, np.ndarray] | None:
    """Edge offsets (code deltas, one of each +-pair) of a distance threshold
    graph, with their L1 lengths in value units; None if too many."""
    steps = policy.secrets.threshold_steps(policy.domain)
    domain = policy.domain
    caps = list(steps.caps)
    box = math.prod(2 * c + 1 for c in caps)
    if box > 4_000_000 or domain.size * max(box // 2, 1) > limits.offset:
        return None
    ranges = [np.arange(-c, c + 1, dtype=np.int64) for c in caps]
    delta = np.stack(np.meshgrid(*ranges, indexing="ij"), axis=-1).reshape(-1, len(caps))
    # lexicographically positive half
    nz = delta != 0
    first = np.where(nz.any(axis=1), nz.argmax(axis=1), 0)
    positive = nz.any(axis=1) & (delta[np.arange(delta.shape[0]), first] > 0)
    delta = delta[positive]
    widths = np.array(steps.widths, dtype=np.int64)
    vals = np.abs(delta) * widths
    keep = steps.within(vals)
    delta, vals = delta[keep], vals[keep]
    return np.ascontiguousarray(delta), vals.sum(axis=1)


def _edge_radius(policy: Policy) -> tuple[float, int, bool]:
    """(Euclidean bound on an edge's length, max L1 edge length, exact?) in value units."""
    g, domain = policy.secrets, policy.domain
    steps = g.threshold_steps(domain)
    widths = [a.bin_width for a in domain.attributes]
    l1, exact, _ = g.max_weighted_l1(domain, widths)
    if steps.metric == "l2":
        radius = float(steps.theta)
    elif steps.metric == "linf":
        radius = math.sqrt(sum(float(w * c) ** 2 for w, c in zip(steps.widths, steps.caps)))
    else:
        radius = float(l1)  # ||v||_2 <= ||v||_1
    return radius * (1 + 1e-12), int(l1), exact



def _box_bound(policy: Policy, shape, low, width, r, masks) -> KMeansSensitivity:
    """A proven bound without scanning: every edge (x, y) lies in the domain's
    box, inside one clique block for ``masks``; an edge inside one cluster
    changes the sums by ||x - y||_1 <= the block's L1 diameter (for a
    distance threshold: its longest edge); across clusters i != j by
    ||x - r_i||_1 + ||y - r_j||_1 <= C_i + C_j, C_j the largest L1 distance
    from r_j to the box."""
    hi = low + (shape - 1) * width
    span = [int(shape[a] - 1) * int(width[a]) for a in range(shape.size)]
    if masks is not None:
        same = max(sum(span[a] for a in range(shape.size) if not (m >> a) & 1) for m in masks)
    elif policy.secrets.threshold_steps(policy.domain) is not None:
        same = _edge_radius(policy)[1]
    else:
        same = sum(span)
    far = sorted(sum(max(abs(int(low[a]) - int(rj[a])), abs(int(hi[a]) - int(rj[a]))) for a in range(shape.size))
                 for rj in r)
    cross = far[-1] + far[-2] if len(far) >= 2 else -1
    return _combine(same, cross, False, "box bound", size_exact=cross < 0)


def _scan_work(policy: Policy, k: int) -> int:
    """Steps of the labelling pass of the scan (cells * centroids * axes, per mask)."""
    masks = _clique_masks(policy)
    return policy.domain.size * k * policy.domain.ndim * (len(masks) if masks else 1)


def sensitivity_scan(policy: Policy, shape, low, width, c, r, limits: ScanLimits) -> KMeansSensitivity:
    domain, g = policy.domain, policy.secrets
    k = c.shape[0]
    masks = _clique_masks(policy)
    if _scan_work(policy, k) > limits.work:
        return _box_bound(policy, shape, low, width, r, masks)

    if masks is not None:
        same, cross, bounded = 0, -1, 0
        for m in masks:
            free = domain.ndim - bin(m).count("1")
            exact_part = domain.size * (1 << max(free - 1, 0)) <= limits.projection
            s, x = _kmeans.kmeans_clique_scan(shape, low, width, c, r, m, exact_part)
            cross = max(cross, x)
            if exact_part:
                same = max(same, s)
            else:
                bounded = max(bounded, s)
        exact = bounded <= max(same, cross)  # then the bounded part cannot change sum
        return _combine(max(same, bounded), cross, exact,
                        "cliques" if exact else "cliques, bounded same-cluster part", size_exact=True)

    blocks = g.block_ids(domain) if domain.size <= limits.table else None
    if blocks is not None:
        labels, cost = _kmeans.kmeans_grid_label_cost(shape, low, width, c, r)
        same, cross = _table_groups(labels, cost, blocks, _domain_values(domain), k)
        return _combine(same, cross, True, "cliques")

    if g.threshold_steps(domain) is not None:
        offs = _offsets(policy, limits) if domain.size <= limits.table else None
        if offs is not None:
            labels, cost = _kmeans.kmeans_grid_label_cost(shape, low, width, c, r)
            same, cross = _kmeans.kmeans_offset_scan(shape, labels, cost, offs[0], offs[1])
            return _combine(same, cross, True, "edge offsets")
        if k > _MAX_K:
            raise ValueError(f"k must be at most {_MAX_K} for the bisector bound on a large domain, got {k}")
        radius, l1, l1_exact = _edge_radius(policy)
        near, pair = _kmeans.kmeans_bisector_scan(shape, low, width, c, r, radius)
        cross = -1
        for i in range(k):
            for j in range(i + 1, k):
                if near[i, j] < 0 or near[j, i] < 0:
                    continue  # no cell of one side can reach the other
                cand = min(near[i, j] + near[j, i], pair[i, j] + l1, pair[j, i] + l1)
                cross = max(cross, int(cand))
        # no pair near a bisector proves that no edge crosses: S_size = 0 is then exact
        return _combine(l1, cross, False, "bisector bound", size_exact=cross < 0)

    if domain.size <= limits.edge:
        i, j = g.iter_edges(domain, limit=limits.edge)
        labels, cost = _kmeans.kmeans_grid_label_cost(shape, low, width, c, r)
        vals = _domain_values(domain)
        crossing = labels[i] != labels[j]
        same = int(np.abs(vals[i] - vals[j]).sum(axis=1)[~crossing].max(initial=0))
        cross = int((cost[i] + cost[j])[crossing].max(initial=-1))
        return _combine(same, cross, True, "edge list")
    # Every secret graph is a subgraph of the complete graph, so the complete
    # graph's (exact) value is a proven upper bound for any other graph.
    same, cross = _kmeans.kmeans_clique_scan(shape, low, width, c, r, 0,
                                           domain.size << max(domain.ndim - 1, 0) <= limits.projection)
    return _combine(same, cross, False, "complete-graph bound", size_exact=cross < 0)


# ---------------------------------------------------------------------------


def scan_memory(policy: Policy, k: int, limits: ScanLimits) -> tuple[int, str]:
    """Peak bytes of one round's sensitivity scan, and its method (public)."""
    domain, g = policy.domain, policy.secrets
    size, d = domain.size, domain.ndim
    small = int64_bytes(4 * k * k + 8 * k * d)
    if not g.has_edge(domain):
        return 0, "no edges"
    if _scan_work(policy, k) > limits.work:
        return small, "box bound"
    if _clique_masks(policy) is not None:
        return small, "cliques"
    if size <= limits.table and g.block_ids(domain, [0]) is not None:
        # label, cost, block id, values, sort key and order, projections
        return int64_bytes(size * (8 + d)) + small, "cliques"
    if g.threshold_steps(domain) is not None:
        offs = _offsets(policy, limits) if size <= limits.table else None
        if offs is not None:
            return int64_bytes(2 * size + 3 * offs[0].size) + small, "edge offsets"
        return small, "bisector bound"
    if size <= limits.edge:
        edges = size * (size - 1) // 2
        return int64_bytes(edges * (4 + d) + size * (2 + d)) + small, "edge list"
    return small, "complete-graph bound"
