"""DAWA on 2-D data through a Hilbert-curve order, under DP and under the grid policy.

A k x k grid (k a power of two) is laid out along the Hilbert curve
(:func:`hilbert_order`): consecutive cells of the curve are neighbours in
the grid, and every aligned 2^j x 2^j block is one run of the curve, so
DAWA's intervals of the 1-D order are compact regions of the grid.  This is
how DPBench runs DAWA on 2-D data (Hay et al., SIGMOD 2016, Sec 6; Li, Hay,
Miklau, Wang, PVLDB 2014, Sec 5.1 "multi-dimensional data").

``plan_dawa_hilbert``
    DP baseline: :func:`~.dawa.plan_dawa` (identity workload) on the
    histogram read in Hilbert order, the estimate mapped back to the grid;
    with a workload of rectangles, DAWA's workload step as DPBench runs it
    in 2-D: the rectangles become queries over the buckets of the Hilbert
    order, and the bucket counts come from a binary hierarchy over the
    buckets with GreedyH's per-node budget shares chosen for those queries
    (Li et al. Sec 4; per-level shares with ``weights="level"``), then
    least squares.
``plan_grid_dawa_transformed``
    Blowfish, 001 Sec 4 + 5.1 on the grid: DAWA's private partition of the
    Hilbert order at eps1, then the bucket counts under the merged policy
    graph G' (the secret graph with every bucket merged; transformed
    Laplace on a spanning tree of G' or Laplace, whichever has the smaller
    variance given the public buckets) at eps2, uniform expansion.

Privacy guarantee
    Reordering the cells is a fixed public bijection, so a bounded
    neighbour of the grid histogram is a bounded neighbour of the reordered
    one: ``plan_dawa_hilbert`` is (epsilon, FullDomain)-Blowfish (bounded
    epsilon-DP, n public) exactly as DAWA (:mod:`.dawa`).
    ``plan_grid_dawa_transformed``: the partition is bounded eps1-DP, hence
    (eps1, G) for every secret graph G; the bucket counts are (eps2, G')
    and therefore (eps2, G) (001 Lemma 4.1); sequential composition gives
    (eps1 + eps2, G) for the grid policy G given.
Citation
    Hilbert, "Ueber die stetige Abbildung einer Linie auf ein
    Flaechenstueck", Math. Ann. 1891; Li et al. PVLDB 2014; 001 (Anuarbek)
    Sec 4-5.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..._validation import check_epsilon
from ...noise import Generator, calibrate
from ...policy.secrets import FullDomain
from ...policy._tree_embedding import spanning_tree_of_edges
from .._dp import dp_shape
from .._docs import guarantee_of, not_a_release
from ..data_dependent._merged import bucket_release as _merged_bucket_release
from ..data_dependent._merged import counts_part
from ..data_dependent._dawa_partition import memory_bytes as _partition_memory
from ..data_dependent._greedy_nodes import node_calibrations, node_greedy, node_hierarchy_estimate
from .._trees import hierarchy_estimate
from ..data_dependent.dawa import partition_part, run_partition, plan_dawa
from ._policies import grid_kind
from .grid import grid_edges
from ..histogram import HistogramRelease, check_policy, check_ratio, shape_check, uniform_expansion
from ..plan import NoisePart, Plan, check_memory, int64_bytes

__all__ = ["hilbert_order", "hilbert_cell", "hilbert_runs", "plan_dawa_hilbert", "dawa_hilbert",
           "plan_grid_dawa_transformed", "grid_dawa_transformed"]


def _check_side(k) -> int:
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
    k = _check_side(k)
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
    k = _check_side(k)
    r, c = hilbert_cell(np.arange(k * k, dtype=np.int64), k)
    return r * k + c


def _square_side(shape) -> int:
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"the Hilbert order needs a square k x k grid, got shape {tuple(shape)}")
    return _check_side(shape[0])


def hilbert_runs(rectangles, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct maximal runs of the Hilbert curve that tile the given rectangles.

    ``rectangles`` is an int array (q, 4) of inclusive (r1, r2, c1, c2)
    (DPBench's 2-D random ranges).  Each rectangle is the disjoint union of
    the runs [lo, hi] of consecutive curve positions it holds; returns the
    distinct runs over all rectangles as two int64 arrays (lo, hi),
    sorted.  O(sum of areas log area).
    """
    k = _check_side(k)
    r1, r2, c1, c2 = _check_rectangles(rectangles, k).T
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


def plan_dawa_hilbert(shape, epsilon, *, ratio=0.25, workload=None, integer=None, weights="node") -> Plan:
    """Plan DAWA over the Hilbert order of a k x k grid (the DP baseline DPBench runs in 2-D).

    Parameters
    ----------
    shape : (k, k) with k a power of two, or a 2-D FullDomain Policy
    epsilon : float or Fraction, > 0
    ratio : float in (0, 1)
        Share of epsilon for the partition (DAWA's 0.25).  The partition's
        noise here is proven at twice the scale DPBench's reference uses
        (see Sensitivity), so ``ratio=0.5`` gives it the reference's noise
        level (the DPBench benchmark entry uses 0.5).
    workload : None or int array (q, 4) of rectangles (r1, r2, c1, c2), inclusive
        None: DAWA's identity workload (Laplace bucket counts).  Rectangles:
        DAWA's workload step (Li et al. Sec 4) as DPBench runs it in 2-D:
        each rectangle becomes a query over the buckets of the Hilbert
        order (bucket j weighted by the share of its cells the rectangle
        holds, :func:`bucket_workload_matrix`), and the bucket counts are
        released through a binary hierarchy over the buckets with budget
        shares of eps2 chosen for that workload (see ``weights``), then
        least squares with the public total n at the root.
    integer : None, "round" or "truncate"
        Post-processing of the released estimate: None keeps the float
        estimate; "truncate" casts every cell toward zero, as DPBench's
        reference implementation does (its 2-D DAWA returns an int32
        array); "round" rounds every cell to the nearest integer (the
        counts are integers; the benchmark entry uses it).  Either is
        post-processing of the release (no privacy cost).
    weights : "node" or "level"
        With a workload: GreedyH's one share per node of the bucket
        hierarchy (the default; Li et al. Sec 4, :func:`._greedy_nodes.node_greedy`
        on the rectangles' fractional coverage of the buckets, as 1-D
        :func:`~.dawa.plan_dawa` does), or one share per level searched on a
        grid (:func:`greedy_bucket_shares`, the earlier simplification).

    Returns
    -------
    Plan
        ``measure(hist, generator)`` takes non-negative int64 counts of
        shape (k, k) and releases a :class:`~.histogram.HistogramRelease`
        with a float64 (k, k) ``histogram`` and the (k, k) ``buckets``.

    Raises
    ------
    ValueError
        A shape that is not square with a power-of-two side; a bad
        workload, ratio or ``integer``.

    Privacy
    -------
    (epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-DP with n
    public: reordering the cells is a fixed public bijection, so the
    partition is DAWA's on the reordered histogram (report-noisy-min at
    ratio * epsilon); the bucket counts (or the nodes of the bucket
    hierarchy) spend at most the rest; sequential (adaptive) composition.

    Sensitivity
    -----------
    Partition: under bounded DP one record leaves cell u for cell v, so a
    partition's cost sum_B dev(B) changes in the buckets holding u and v,
    each by less than 2 - 2/|B| (the value by 1, the mean by 1/|B|): less
    than 4 in all.  The costs of two partitions can move in opposite
    directions, so report-noisy-min needs noise of scale 2 x 4 / eps1 =
    8/eps1 per candidate interval (the one-coordinate shift argument of
    DAWA Sec 3 / 001 Thm 5.2 doubled for non-monotone costs), which is
    :func:`~.dawa.dawa_partition`'s.  DPBench's reference adds noise of
    scale about 2/eps1' at its add/remove epsilon eps1' = eps1/2, i.e.
    about 4/eps1 here, and none to one-cell intervals: half the proven
    scale, so it is not used.  Bucket counts: 2, exact (two bucket counts
    change by one).  With a workload, ``weights="node"``: node v measured
    at scale 2/(eps2 w_v) spends e_v <= eps2 w_v; a bounded neighbour
    moves one record from bucket a to bucket b, changing by one the nodes
    on the root-to-leaf paths of a and b below their common ancestor, so
    its privacy loss is at most (P_a + P_b)/2 <= max_leaf P_leaf, P the
    sum of e_v along a root-to-leaf path; the shares sum to at most 1 along
    every path, so max P <= eps2, and the release reports max P.
    ``weights="level"``: 2 per level of the hierarchy (each level's nodes
    partition the domain).

    Runtime
    -------
    O(|T| log |T|) for the partition on typical counts, O(|T|) otherwise;
    with a workload, O(total rectangle area + q M log M) more for the
    workload step with ``weights="node"`` (q rectangles, M < 2m the padded
    number of buckets m; the dense workload matrix takes 8 q M bytes),
    O(total rectangle area + q log |T|) with ``weights="level"``;
    |T| = k^2.

    References
    ----------
    Li, Hay, Miklau, Wang, "A data- and workload-aware algorithm for range
    queries under differential privacy", PVLDB 2014, Sec 3-4 and 5.1; Hay,
    Machanavajjhala, Miklau, Chen, Zhang, "Principled evaluation of
    differentially private algorithms using DPBench", SIGMOD 2016 (2-D
    DAWA on the Hilbert order); Hilbert, "Ueber die stetige Abbildung einer Linie auf ein
    Flaechenstueck", Mathematische Annalen 1891.
    """
    shp, pol = dp_shape(shape, dims=2)
    k = _square_side(shp)
    check_memory(int64_bytes(13 * k * k), size=k * k, parameter="shape", mechanism="dawa_hilbert")
    finish = _integer_output(integer)
    if weights not in ("node", "level"):
        raise ValueError(f"weights must be 'node' or 'level', got {weights!r}")
    if workload is not None:
        return _plan_dawa_hilbert_workload(shp, pol, k, epsilon, ratio, _check_rectangles(workload, k), finish,
                                           integer, weights)
    inner = plan_dawa(k * k, epsilon, ratio=ratio)
    memory = check_memory(inner.memory_bytes + int64_bytes(3 * k * k), size=k * k, parameter="shape",
                          mechanism="dawa_hilbert")

    def run(plan, hist, gen):
        order = hilbert_order(k)  # from the public side k, listed by the measurement
        rel = inner.run(inner, inner.check(hist.ravel()[order]), gen)
        est = np.empty(k * k, dtype=np.float64)
        est[order] = finish(rel.histogram)
        buckets = np.empty(k * k, dtype=np.int64)
        buckets[order] = rel.buckets
        return HistogramRelease(
            histogram=est.reshape(shp), mechanism="dawa_hilbert", epsilon=rel.epsilon,
            epsilon_exact=rel.epsilon_exact, epsilon_parts=rel.epsilon_parts, guarantee="FullDomain",
            secure=gen.is_secure, buckets=buckets.reshape(shp), stretch=1,
            expected_squared_error=rel.expected_squared_error,
            params={**rel.params, "order": "hilbert", "integer": integer}, plan=plan)

    return Plan(
        mechanism="dawa_hilbert", policy=pol, guarantee=inner.guarantee + "; cells read in Hilbert order",
        citation=inner.citation + "; Hilbert-curve order for 2-D data as in DPBench (Hay et al. SIGMOD 2016)",
        epsilon_requested=inner.epsilon_requested, parts=inner.parts,
        aggregate=f"int64 histogram of shape {shp}, non-negative", aggregate_shape=shp,
        expected_error=inner.expected_error, memory_bytes=memory,
        runtime=inner.runtime, options={**inner.options, "order": "hilbert", "integer": integer},
        check=shape_check(shp), run=run)


def plan_grid_dawa_transformed(policy, epsilon, *, ratio=0.5) -> Plan:
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
        FullDomain secrets (use :func:`plan_dawa_hilbert`), a disconnected
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
    k = _square_side(shp)
    eps = check_epsilon(epsilon)
    r = check_ratio(ratio)
    N = k * k
    if isinstance(policy.secrets, FullDomain):
        raise ValueError("policy: the complete graph is bounded DP; use plan_dawa_hilbert")
    eps1, eps2 = eps * r, eps * (1 - r)
    penalty = float(calibrate(2, eps2).scale)
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
        noisy, how, err, stretch = bucket_release(flat, buckets, part.n_buckets, lo, hi, eps2, gen)
        total = plan.epsilon_exact
        return HistogramRelease(
            histogram=uniform_expansion(noisy, buckets).reshape(shp), mechanism="grid_dawa_transformed",
            epsilon=float(total), epsilon_exact=total,
            epsilon_parts={"partition": part.epsilon_exact, "counts": eps2}, guarantee=repr(policy.secrets),
            secure=gen.is_secure, buckets=buckets.reshape(shp), stretch=stretch, expected_squared_error=err,
            params={"ratio": float(r), "n_buckets": part.n_buckets, "counts_by": how, "order": "hilbert"},
            plan=plan)

    return Plan(
        mechanism="grid_dawa_transformed", policy=policy,
        guarantee=(f"(epsilon, P)-Blowfish privacy for P = {policy!r}, epsilon the plan's total (DAWA partition of "
                   f"the Hilbert order at {first.epsilon}, bucket counts under the merged graph at {eps2}, 001 Sec 4)"),
        citation="001 (Anuarbek) Sec 4-5 (Lemma 4.1); Li et al. PVLDB 2014 (DAWA); Hilbert order as in DPBench",
        epsilon_requested=eps, parts=(first, counts_part(eps2)),
        aggregate=f"int64 histogram of shape {shp}, non-negative", aggregate_shape=shp,
        expected_error={}, memory_bytes=memory,
        runtime="O(|T| log^2 |T|) for the partition, O(|E|) for the merged graph",
        options={"ratio": r, "penalty": penalty, "order": "hilbert"},
        check=shape_check(shp), run=run)


def bucket_release(flat, buckets, nb, lo, hi, eps2, gen):
    """Bucket counts under (eps2, G'), G' the secret graph (edges lo, hi) with every bucket merged.

    :func:`._merged._bucket_release` on the listed edges of the grid:
    transformed Laplace on a BFS spanning tree of G' or Laplace on the
    bucket counts, whichever has the smaller total variance given the
    public buckets.  Returns (noisy counts, method, noise variance summed
    over cells, stretch).
    """
    noisy, _spent, how, err, stretch = _merged_bucket_release(flat, buckets, nb, None, eps2, gen, edges=(lo, hi))
    return noisy, how, err, stretch


# ---------------------------------------------------------------------------
# DAWA's workload step over the Hilbert buckets


#: Relative level weights the share search tries (0: the level is not measured), a grid of ratios 2^(j/2).
_WEIGHT_GRID = (0.0,) + tuple(2.0 ** (j / 2.0) for j in range(-14, 9))
#: Exact shares are rounded down to multiples of 1 / _SHARE_DENOMINATOR (their sum stays <= 1).
_SHARE_DENOMINATOR = 10 ** 9


def _check_rectangles(workload, k: int) -> np.ndarray:
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
        first, cnt = _bucket_coverage(rect, position, bucket_of)
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


def _bucket_coverage(rect, position, bucket_of) -> tuple[int, np.ndarray]:
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
        first, cnt = _bucket_coverage(rect, position, bucket_of)
        out[i, first:first + cnt.size] = cnt / sizes[first:first + cnt.size]
    return out


def level_share_error(weights, nodes, f2: float) -> float:
    """Workload error (up to the factor 8 / eps2^2) of per-level weights of the bucket hierarchy.

    Level l (1..h) measured with share s_l = w_l / sum(w) has variance
    proportional to 1 / s_l^2 (inf when w_l = 0); the up-pass estimate of a
    node holding only real buckets has variance V_l = 1 / (1/v_l + 1/(2 V_{l+1})),
    V_h = v_h; the criterion is sum_l nodes[l] V_l + f2 V_h, the expected
    squared error when every rectangle sums the up-pass estimates of its
    canonical nodes and its partial buckets (an upper bound for the least
    squares estimate, the best linear unbiased one).  The root (n) is exact.
    """
    tot = float(sum(weights))
    h = len(weights)
    v = [np.inf if w == 0 else (tot / w) ** 2 for w in weights]
    V = v[h - 1]
    err = (float(nodes[h]) + f2) * V
    for level in range(h - 1, 0, -1):
        child = 2.0 * V
        V = child if v[level - 1] == np.inf else 1.0 / (1.0 / v[level - 1] + 1.0 / child)
        err += float(nodes[level]) * V
    return err


def greedy_bucket_shares(nodes, f2: float, height: int) -> list[Fraction]:
    """Per-level shares of eps2 for the bucket hierarchy, searched level by level (GreedyH-style).

    Start with every weight on the buckets (level h); sweep the levels above
    them bottom-up three times, giving each the weight of
    :data:`_WEIGHT_GRID` (relative to the buckets') of least
    :func:`level_share_error`.  The paper's GreedyH weighs every node (Li et
    al. PVLDB 2014 Sec 4); one weight per level is our simplification.
    Returns exact shares rounded down to 1e-9 (sum <= 1, the buckets' > 0).
    """
    w = [0.0] * (height - 1) + [1.0]
    best = level_share_error(w, nodes, f2)
    for _ in range(3):
        changed = False
        for level in range(height - 1, 0, -1):
            for g in _WEIGHT_GRID:
                trial = list(w)
                trial[level - 1] = g
                e = level_share_error(trial, nodes, f2)
                if e < best * (1 - 1e-12):
                    best, w, changed = e, trial, True
        if not changed:
            break
    tot = math.fsum(w)
    # the buckets' weight is 1 and no weight exceeds 16, so their share (>= 1 / (16 h)) stays positive
    return [Fraction(math.floor(x / tot * _SHARE_DENOMINATOR), _SHARE_DENOMINATOR) for x in w]


def _integer_output(integer):
    """The post-processing of ``integer`` (None, "round" or "truncate") as a function of the estimate."""
    if integer is None:
        return lambda a: a
    if integer == "round":
        return np.rint
    if integer == "truncate":
        return np.trunc
    raise ValueError(f"integer must be None, 'round' or 'truncate', got {integer!r}")


def _plan_dawa_hilbert_workload(shp, pol, k: int, epsilon, ratio, rects: np.ndarray, finish, integer,
                                weights) -> Plan:
    """:func:`plan_dawa_hilbert` with a rectangle workload (DAWA's steps 1-3 with its workload step)."""
    N = k * k
    eps = check_epsilon(epsilon)
    r = check_ratio(ratio)
    eps1, eps2 = eps * r, eps * (1 - r)
    penalty = float(calibrate(2, eps2).scale)  # expected error of one bucket count (DAWA's step-1 penalty)
    first, cal_p = partition_part(N, eps1)
    # weights="node": the dense workload over the (padded) buckets, q x M with M <= N, and GreedyH's
    # 512-row working blocks
    dense = int64_bytes((rects.shape[0] + 1024) * N) if weights == "node" else 0
    memory = check_memory(int64_bytes(20 * N) + _partition_memory(N) + dense, size=N, parameter="shape",
                          mechanism="dawa_hilbert")
    counts = NoisePart("counts", Fraction(2), True,
                       ("binary hierarchy over the buckets (in Hilbert order) with one greedy share per node "
                        "(GreedyH), chosen from the released buckets and the public rectangles: a bounded neighbour "
                        "changes the counts of the nodes on two root-to-leaf paths by one each, node scale "
                        "2/(eps2 share) and the shares sum to at most 1 along every path") if weights == "node" else
                       "binary hierarchy over the buckets (in Hilbert order): each level's nodes partition the "
                       "domain, so a bounded neighbour changes two nodes per level by one; level l at scale "
                       "2/(eps2 share_l), shares (summing to at most 1) chosen from the released buckets and the "
                       "public rectangles", eps2, None, None)
    first_eps = first.epsilon

    def run(plan, hist, gen):
        order = hilbert_order(k)  # from the public side k, listed by the measurement
        x1 = hist.ravel()[order]
        part = run_partition(x1, cal_p.scale, first_eps, penalty, gen)
        starts, m = part.starts, part.n_buckets
        sizes = np.diff(starts, append=N)
        bcounts = np.add.reduceat(x1, starts)
        params = {"ratio": float(r), "n_buckets": m, "order": "hilbert", "workload_rectangles": int(rects.shape[0]),
                  "integer": integer}
        spent2 = Fraction(0)
        params["weights"] = weights
        if m == 1:  # one bucket: its count is the public n
            noisy = bcounts.astype(np.float64)
            if weights == "level":
                params["level_shares"] = []
        elif weights == "node":
            position = np.empty(N, dtype=np.int64)
            position[order] = np.arange(N, dtype=np.int64)
            Q = bucket_workload_matrix(rects, position.reshape(k, k), part.buckets, sizes,
                                       1 << (m - 1).bit_length())
            node_w, collapsed, _err = node_greedy(Q, m)
            del Q
            scales, _spends, spent2 = node_calibrations(node_w, eps2)  # the largest root-to-leaf path sum
            if spent2 > eps2:  # node_greedy's shares sum to at most 1 along every path; never release above eps2
                raise AssertionError("GreedyH node shares exceed the counts budget")
            noisy = node_hierarchy_estimate(bcounts, scales, collapsed, gen)
        else:
            h = (m - 1).bit_length()
            position = np.empty(N, dtype=np.int64)
            position[order] = np.arange(N, dtype=np.int64)
            nodes, f2 = bucket_workload_stats(rects, position.reshape(k, k), part.buckets, sizes, h)
            shares = greedy_bucket_shares(nodes, f2, h)
            cals = [None if s == 0 else calibrate(2, eps2 * s) for s in shares]
            spent2 = sum((c.epsilon_exact for c in cals if c is not None), Fraction(0))
            noisy = hierarchy_estimate(bcounts, [None if c is None else c.scale for c in cals], gen)
            params["level_shares"] = [float(s) for s in shares]
        est = np.empty(N, dtype=np.float64)
        est[order] = finish((noisy / sizes)[part.buckets])
        total = plan.epsilon_exact
        return HistogramRelease(
            histogram=est.reshape(shp), mechanism="dawa_hilbert", epsilon=float(total), epsilon_exact=total,
            epsilon_parts={"partition": first_eps, "counts": spent2}, guarantee="FullDomain",
            secure=gen.is_secure, buckets=_grid_buckets(part.buckets, order, shp), stretch=1,
            expected_squared_error=None, params=params, plan=plan)

    return Plan(
        mechanism="dawa_hilbert", policy=pol,
        guarantee=("(epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-differential privacy with n public; "
                   "epsilon the plan's total (partition + counts); cells read in Hilbert order"),
        citation=("Li, Hay, Miklau, Wang, PVLDB 2014 Sec 3-4 (partition, workload-aware hierarchy over the "
                  "buckets); Hilbert-curve order for 2-D data as in DPBench (Hay et al. SIGMOD 2016)"),
        epsilon_requested=eps, parts=(first, counts),
        aggregate=f"int64 histogram of shape {shp}, non-negative", aggregate_shape=shp,
        expected_error={}, memory_bytes=memory,
        runtime=("O(|T| log |T|) for the partition, O(total rectangle area + q M log M) for the workload step "
                 "(M < 2m, m buckets)" if weights == "node" else
                 "O(|T| log |T|) for the partition, O(total rectangle area + q log |T|) for the workload step"),
        options={"ratio": r, "penalty": penalty, "order": "hilbert", "workload_rectangles": int(rects.shape[0]),
                 "integer": integer, "weights": weights},
        check=shape_check(shp), run=run)


def _grid_buckets(buckets: np.ndarray, order: np.ndarray, shp) -> np.ndarray:
    out = np.empty(buckets.size, dtype=np.int64)
    out[order] = buckets
    return out.reshape(shp)


@guarantee_of(plan_dawa_hilbert)
def dawa_hilbert(hist, epsilon, generator: Generator | None = None, **options) -> HistogramRelease:
    """DAWA over the Hilbert order: ``plan_dawa_hilbert(hist.shape, epsilon, **options).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, shape (k, k), non-negative
    **options
        ``ratio``, ``workload``, ``integer``, ``weights`` as in :func:`plan_dawa_hilbert`.

    Returns
    -------
    HistogramRelease
        float64 ``histogram`` of shape (k, k).
    """
    h = np.asarray(hist)
    return plan_dawa_hilbert(h.shape, epsilon, **options).measure(h, generator)


@guarantee_of(plan_grid_dawa_transformed)
def grid_dawa_transformed(hist, policy, epsilon, generator: Generator | None = None, **options) -> HistogramRelease:
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
