"""The Hilbert-curve order of a 2-D grid, and DAWA + Transformed on it under the grid policy.

A k x k grid (k a power of two) is laid out along the Hilbert curve
(:func:`hilbert_order`): consecutive cells of the curve are neighbours in
the grid, and every aligned 2^j x 2^j block is one run of the curve, so
DAWA's intervals of the 1-D order are compact regions of the grid.  This is
how DPBench runs DAWA on 2-D data (Hay et al., SIGMOD 2016, Sec 6; Li, Hay,
Miklau, Wang, PVLDB 2014, Sec 5.1 "multi-dimensional data").

``plan_grid_dawa_transformed``
    Blowfish, 001 Sec 4 + 5.1 on the grid: DAWA's private partition of the
    Hilbert order at eps1, then the bucket counts under the merged policy
    graph G' (the secret graph with every bucket merged; transformed
    Laplace on a spanning tree of G' or Laplace, whichever has the smaller
    variance given the public buckets) at eps2, uniform expansion.
Rectangles over the buckets of the order
    :func:`hilbert_runs`, :func:`bucket_workload_stats` and
    :func:`bucket_workload_matrix` map a workload of rectangles to runs of
    the curve and to queries over its buckets; the DP baseline
    :mod:`blowfish_privacy.baselines.dawa_hilbert` (DAWA on the Hilbert
    order, with its workload step) uses them.

Privacy guarantee
    ``plan_grid_dawa_transformed``: the partition is bounded eps1-DP, hence
    (eps1, G) for every secret graph G (reordering the cells is a fixed
    public bijection, so a bounded neighbour of the grid histogram is a
    bounded neighbour of the reordered one); the bucket counts are
    (eps2, G') and therefore (eps2, G) (001 Lemma 4.1); sequential
    composition gives (eps1 + eps2, G) for the grid policy G given.
Citation
    Hilbert, "Ueber die stetige Abbildung einer Linie auf ein
    Flaechenstueck", Math. Ann. 1891; Li et al. PVLDB 2014; 001 (Anuarbek)
    Sec 4-5.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

import numpy as np
import numpy.typing as npt

from ..._validation import check_epsilon
from ...noise import Generator, calibration
from ...policy._tree_embedding import spanning_tree_of_edges
from .._docs import guarantee_of, not_a_release
from ..data_dependent._merged import bucket_release as merged_bucket_release
from ..data_dependent._merged import counts_part
from ..data_dependent.dawa import partition_part, run_partition
from ._policies import grid_kind
from .grid import grid_edges
from ..histogram import HistogramRelease, check_policy, check_ratio, shape_check, uniform_expansion
from ..plan import Plan, check_memory, int64_bytes
from ..._typing import Real

if TYPE_CHECKING:
    from ...policy._policy import Policy

__all__ = ["check_side", "square_side", "hilbert_order", "hilbert_cell", "hilbert_runs", "check_rectangles",
           "bucket_workload_stats", "bucket_coverage", "bucket_workload_matrix", "plan_grid_dawa_transformed", "bucket_release",
           "grid_dawa_transformed"]


def check_side(k) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1 or (int(k) & (int(k) - 1)):
        raise ValueError(f"side must be a power of two >= 1 (the Hilbert curve fills 2^j x 2^j grids), got {k!r}")
    return int(k)


def hilbert_cell(d, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of position ``d`` (int array, 0 <= d < k^2) on the Hilbert curve of the k x k grid.

    The classic iterative construction: at each scale s = 1, 2, 4, ... the
    two bits of d at that scale pick a quadrant; the lower-order part is
    reflected/transposed so that the curve enters and leaves every quadrant
    at corners adjacent to the next one.  O(log k) vector operations.
    """
    k = check_side(k)
    t = np.asarray(d, dtype=np.int64).copy()
    x = np.zeros_like(t)
    y = np.zeros_like(t)
    s = 1
    while s < k:
        rx = (t // 2) & 1
        ry = (t ^ rx) & 1
        flip = (ry == 0) & (rx == 1)
        x = np.where(flip, s - 1 - x, x)
        y = np.where(flip, s - 1 - y, y)
        swap = ry == 0
        x, y = np.where(swap, y, x), np.where(swap, x, y)
        x = x + s * rx
        y = y + s * ry
        t //= 4
        s *= 2
    return x, y


@not_a_release(
    'O(k^2 log k).',
    'Hilbert, "Ueber die stetige Abbildung einer Linie auf ein Flaechenstueck", Mathematische Annalen 1891.',
)
def hilbert_order(k: int) -> np.ndarray:
    """Flat row-major cell index (row * k + col) of every position of the Hilbert curve.

    Parameters
    ----------
    k : int
        Side of the k x k grid, a power of two.

    Returns
    -------
    numpy.ndarray of int64, shape (k^2,)
        A permutation of 0..k^2-1; consecutive entries are L1 neighbours.

    Raises
    ------
    ValueError
        k not a power of two >= 1.
    """
    k = check_side(k)
    r, c = hilbert_cell(np.arange(k * k, dtype=np.int64), k)
    return r * k + c


def square_side(shape) -> int:
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"the Hilbert order needs a square k x k grid, got shape {tuple(shape)}")
    return check_side(shape[0])


def hilbert_runs(rectangles, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct maximal runs of the Hilbert curve that tile the given rectangles.

    ``rectangles`` is an int array (q, 4) of inclusive (r1, r2, c1, c2)
    (DPBench's 2-D random ranges).  Each rectangle is the disjoint union of
    the runs [lo, hi] of consecutive curve positions it holds; returns the
    distinct runs over all rectangles as two int64 arrays (lo, hi),
    sorted.  O(sum of areas log area).
    """
    k = check_side(k)
    r1, r2, c1, c2 = check_rectangles(rectangles, k).T
    pos = np.empty(k * k, dtype=np.int64)
    pos[hilbert_order(k)] = np.arange(k * k, dtype=np.int64)
    P = pos.reshape(k, k)
    los, his = [], []
    for a, b, c, d in zip(r1.tolist(), r2.tolist(), c1.tolist(), c2.tolist()):
        p = np.sort(P[a:b + 1, c:d + 1].ravel())
        br = np.flatnonzero(np.diff(p) > 1)
        los.append(p[np.r_[0, br + 1]])
        his.append(p[np.r_[br, p.size - 1]])
    runs = np.unique(np.column_stack([np.concatenate(los), np.concatenate(his)]), axis=0)
    return runs[:, 0].copy(), runs[:, 1].copy()

def plan_grid_dawa_transformed(policy: Policy, epsilon: Real, *, ratio: float = 0.5) -> Plan[HistogramRelease]:
    """Plan DAWA + Transformed on a k x k grid, partitioning the Hilbert order.

    Parameters
    ----------
    policy : Policy
        A k x k ordinal domain (k a power of two), no constraints, secrets
        other than FullDomain (e.g. ``grid.grid_policy(k, k)``: the grid
        DistanceThreshold(1), L1) whose edges are listable.
    epsilon : float or Fraction, > 0
        The budget: ``ratio * epsilon`` for the partition along the Hilbert
        order, the rest for the bucket counts.
    ratio : float in (0, 1)
        The partition's share (001 uses 0.5).

    Returns
    -------
    Plan
        ``measure(hist, generator)`` takes non-negative int64 counts of
        shape (k, k) and releases a :class:`~.histogram.HistogramRelease`
        with a float64 (k, k) ``histogram`` (uniform expansion of the
        buckets), the ``buckets`` and the merged graph's ``stretch``.

    Raises
    ------
    ValueError
        Complete secret graphs (FullDomain: bounded DP; use
        :func:`blowfish_privacy.baselines.dawa_hilbert.plan_dawa_hilbert`), a disconnected
        secret graph, a grid that is not square with a power-of-two side.

    Privacy
    -------
    (epsilon, G)-Blowfish privacy for the policy's secret graph G: DAWA's
    partition at eps1 is bounded eps1-DP, hence (eps1, G); the bucket
    counts are (eps2, G') for the merged graph G' (every bucket one
    vertex), hence (eps2, G) (001 Lemma 4.1); sequential composition.

    Sensitivity
    -----------
    Partition: DAWA's report-noisy-min bound (scale 8/eps1).  Bucket
    counts: the stretch l' of a BFS spanning tree of G', computed exactly
    over G''s edges (a move along an edge of G changes two buckets adjacent
    in G', so x_T on at most l' tree edges), scale l'/eps2; or 2 (plain
    Laplace on the bucket counts), whichever gives the smaller variance for
    the public buckets.

    Runtime
    -------
    O(|T| log |T|) for the partition on typical counts, O(|E| + |T|) for the
    merged graph and its tree; |T| = k^2, |E| = 2 k (k - 1) for the grid.

    References
    ----------
    Anuarbek, "Data-dependent Blowfish private algorithm for histogram
    queries" (001), Sec 4-5 (Lemma 4.1); Haney, Machanavajjhala, Ding,
    "Design of policy-aware differentially private algorithms", VLDB 2015
    (transformational equivalence); Li, Hay, Miklau, Wang, PVLDB 2014
    (DAWA); Hilbert, "Ueber die stetige Abbildung einer Linie auf ein
    Flaechenstueck", Mathematische Annalen 1891.
    """
    check_policy(policy)
    shp = tuple(int(d) for d in policy.domain.shape)
    k = square_side(shp)
    eps = check_epsilon(epsilon)
    r = check_ratio(ratio)
    N = k * k
    if policy.secrets.is_complete():
        raise ValueError("policy: the complete graph is bounded DP; use plan_dawa_hilbert")
    eps1, eps2 = eps * r, eps * (1 - r)
    penalty = float(calibration(2, eps2).scale)
    first, cal_p = partition_part(N, eps1)  # DAWA's report-noisy-min over the intervals of the Hilbert order
    # before the edges are listed: their lists, the partition and the buckets are O(|T|)
    memory = check_memory(int64_bytes(2 * first.count + 20 * N), size=N, parameter="policy",
                          mechanism="grid_dawa_transformed")
    # refuse a disconnected secret graph before anything is spent: in closed form for the grid graphs,
    # by a spanning tree of the listed edges otherwise
    kind = grid_kind(policy)
    edges = {}
    if kind == "rowline" and k > 1:
        raise ValueError("policy: the secret graph is not connected (its moves never leave a row); "
                         "transformational equivalence needs a connected graph")
    if kind not in ("grid", "king", "rowline"):
        edges["lo"], edges["hi"] = grid_edges(policy)
        spanning_tree_of_edges(N, edges["lo"], edges["hi"])

    def run(plan, hist, gen):
        if "lo" not in edges:  # the grid's edges, listed by the measurement (O(|T|) there)
            edges["lo"], edges["hi"] = grid_edges(policy)
        lo, hi = edges["lo"], edges["hi"]
        order = hilbert_order(k)  # from the public side k, listed by the measurement
        flat = hist.ravel()
        part = run_partition(flat[order], cal_p.scale, first.epsilon, penalty, gen)
        buckets = np.empty(N, dtype=np.int64)
        buckets[order] = part.buckets
        noisy, _spent, how, err, stretch = merged_bucket_release(flat, buckets, part.n_buckets, None, eps2, gen,
                                                                 edges=(lo, hi))
        return HistogramRelease(
            histogram=uniform_expansion(noisy, buckets).reshape(shp), secure=gen.is_secure,
            buckets=buckets.reshape(shp), stretch=stretch, expected_squared_error=err,
            params={"ratio": float(r), "n_buckets": part.n_buckets, "counts_by": how, "order": "hilbert"},
            plan=plan)

    return Plan(
        mechanism="grid_dawa_transformed", policy=policy,
        guarantee=(f"(epsilon, P)-Blowfish privacy for P = {policy!r}, epsilon the plan's total (DAWA partition of "
                   f"the Hilbert order at {first.epsilon}, bucket counts under the merged graph at {eps2}, "
                   "Section 4 of the data-dependent Blowfish report)"),
        citation=("Anuarbek, Data-Dependent Blowfish Private Algorithm for Histogram Queries, Sections 4-5 "
                  "(Lemma 4.1); "
                  "Li et al. PVLDB 2014 (DAWA); Hilbert order as in DPBench"),
        epsilon_requested=eps, parts=(first, counts_part(eps2)),
        aggregate=f"int64 histogram of shape {shp}, non-negative", aggregate_shape=shp,
        expected_error={}, memory_bytes=memory,
        runtime="O(|T| log^2 |T|) for the partition, O(|E|) for the merged graph",
        options={"ratio": r, "penalty": penalty, "order": "hilbert"},
        check=shape_check(shp), run=run)


def bucket_release(flat, buckets, nb, lo, hi, eps2, gen):
    """Bucket counts under (eps2, G'), G' the secret graph (edges lo, hi) with every bucket merged.

    :func:`.._merged.bucket_release` on the listed edges of the grid:
    transformed Laplace on a BFS spanning tree of G' or Laplace on the
    bucket counts, whichever has the smaller total variance given the
    public buckets.  Returns (noisy counts, method, noise variance summed
    over cells, stretch).  ``eps2`` is checked here (the plan's measurement,
    whose epsilon its plan checked, calls the merged release directly).
    """
    eps2 = check_epsilon(eps2)
    noisy, _spent, how, err, stretch = merged_bucket_release(flat, buckets, nb, None, eps2, gen, edges=(lo, hi))
    return noisy, how, err, stretch

# ---------------------------------------------------------------------------
# Rectangles over the buckets of the Hilbert order


def check_rectangles(workload, k: int) -> np.ndarray:
    """``workload`` as an int64 (q, 4) array of inclusive rectangles (r1, r2, c1, c2) inside the k x k grid."""
    R = np.asarray(workload)
    if R.ndim != 2 or R.shape[1] != 4 or R.shape[0] < 1 or R.dtype.kind not in "iu":
        raise ValueError(f"workload must be an integer array of shape (q, 4) with q >= 1, got shape {R.shape}")
    R = R.astype(np.int64)
    r1, r2, c1, c2 = R.T
    if (r1 < 0).any() or (c1 < 0).any() or (r2 >= k).any() or (c2 >= k).any() or (r1 > r2).any() or (c1 > c2).any():
        raise ValueError(f"workload rectangles (r1, r2, c1, c2) must satisfy 0 <= r1 <= r2 < {k}, 0 <= c1 <= c2 < {k}")
    return R


def bucket_workload_stats(rectangles, position, bucket_of, sizes, height: int) -> tuple[np.ndarray, float]:
    """What the share search needs of a rectangle workload over the buckets of the Hilbert order.

    Under uniform expansion a rectangle is the query sum_j f_j y_j over the
    bucket counts y, f_j = |rectangle ∩ bucket j| / |bucket j| (DAWA Sec 4's
    workload reduction, as DPBench maps the rectangles to the Hilbert order).
    The buckets it holds entirely (f_j = 1) form runs of consecutive
    buckets; each run is a range of the leaves of the binary hierarchy over
    the buckets and splits into canonical dyadic nodes.  Returns
    ``(nodes, f2)``: ``nodes[l]`` the number of canonical nodes of level l
    (0 = root, ``height`` = the buckets) over all rectangles, ``f2`` the sum
    of f_j^2 over the partly held buckets.  O(total area + q log m).

    Parameters
    ----------
    rectangles : int64 array (q, 4), inclusive (r1, r2, c1, c2)
    position : int64 array (k, k), the Hilbert position of every cell
    bucket_of : int64 array (k^2,), the bucket of every Hilbert position
    sizes : int64 array (m,), the cells per bucket
    height : int, ceil(log2 m) (at least 1)
    """
    los, his = [], []
    f2 = 0.0
    for rect in rectangles.tolist():
        first, cnt = bucket_coverage(rect, position, bucket_of)
        sz = sizes[first:first + cnt.size]
        full = cnt == sz
        part = (cnt > 0) & ~full
        if part.any():
            f2 += float(np.sum((cnt[part] / sz[part]) ** 2))
        f = np.flatnonzero(full) + first
        if f.size:
            br = np.flatnonzero(np.diff(f) > 1)
            los.append(f[np.r_[0, br + 1]])
            his.append(f[np.r_[br, f.size - 1]])
    nodes = np.zeros(height + 1, dtype=np.int64)
    if los:
        lo = np.concatenate(los)
        hi = np.concatenate(his) + 1  # exclusive
        level = height
        while lo.size:  # canonical dyadic nodes of every run at once, level by level (bottom-up)
            odd = (lo & 1) == 1
            nodes[level] += int(odd.sum())
            lo = lo + odd
            odd = ((hi & 1) == 1) & (lo < hi)
            nodes[level] += int(odd.sum())
            hi = hi - odd
            lo, hi = lo >> 1, hi >> 1
            keep = lo < hi
            lo, hi = lo[keep], hi[keep]
            level -= 1
    return nodes, f2


def bucket_coverage(rect, position, bucket_of) -> tuple[int, np.ndarray]:
    """The buckets an inclusive rectangle (r1, r2, c1, c2) touches: the first one and the cells it covers in
    each bucket from there on (int64 counts; buckets it skips count 0)."""
    a, b, c, d = rect
    bk = bucket_of[position[a:b + 1, c:d + 1].ravel()]
    first = int(bk.min())
    return first, np.bincount(bk - first)


def bucket_workload_matrix(rectangles, position, bucket_of, sizes, width: int) -> np.ndarray:
    """Dense workload over the buckets of the Hilbert order: float64 (q, width), entry (i, j) = f_ij.

    f_ij = |rectangle i ∩ bucket j| / |bucket j|: under uniform expansion
    rectangle i is the query sum_j f_ij y_j over the bucket counts y (DAWA
    Sec 4's workload reduction; DPBench maps the rectangles to the Hilbert
    order the same way).  Columns from m = len(sizes) to ``width`` (the
    padding of the binary hierarchy) are zero.  O(total area + q width).

    Parameters
    ----------
    rectangles : int64 array (q, 4), inclusive (r1, r2, c1, c2)
    position : int64 array (k, k), the Hilbert position of every cell
    bucket_of : int64 array (k^2,), the bucket of every Hilbert position
    sizes : int64 array (m,), the cells per bucket
    width : int >= m
    """
    out = np.zeros((rectangles.shape[0], width))
    for i, rect in enumerate(rectangles.tolist()):
        first, cnt = bucket_coverage(rect, position, bucket_of)
        out[i, first:first + cnt.size] = cnt / sizes[first:first + cnt.size]
    return out


@guarantee_of(plan_grid_dawa_transformed)
def grid_dawa_transformed(
    hist: npt.ArrayLike, policy: Policy, epsilon: Real, generator: Generator | None = None, **options: Any,
) -> HistogramRelease:
    """DAWA + Transformed on a grid: ``plan_grid_dawa_transformed(policy, epsilon, **options).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, shape (k, k), non-negative
    policy : Policy
    **options
        ``ratio`` as in :func:`plan_grid_dawa_transformed`.

    Returns
    -------
    HistogramRelease
        float64 ``histogram`` of shape (k, k).
    """
    return plan_grid_dawa_transformed(policy, epsilon, **options).measure(np.asarray(hist), generator)
