"""DAWA on 2-D data through the Hilbert-curve order: the DP baseline DPBench runs in 2-D.

``plan_dawa_hilbert``
    :func:`~blowfish_privacy.mechanisms.data_dependent.dawa.plan_dawa`
    (identity workload) on the histogram read in Hilbert order
    (:func:`~blowfish_privacy.mechanisms.grids.hilbert.hilbert_order`), the
    estimate mapped back to the grid; with a workload of rectangles, DAWA's
    workload step as DPBench runs it in 2-D: the rectangles become queries
    over the buckets of the Hilbert order, and the bucket counts come from a
    binary hierarchy over the buckets with GreedyH's per-node budget shares
    chosen for those queries (Li et al. Sec 4; per-level shares with
    ``weights="level"``, searched by :func:`greedy_bucket_shares`), then
    least squares.

Privacy guarantee
    Reordering the cells is a fixed public bijection, so a bounded
    neighbour of the grid histogram is a bounded neighbour of the reordered
    one: ``plan_dawa_hilbert`` is (epsilon, FullDomain)-Blowfish (bounded
    epsilon-DP, n public) exactly as DAWA.
Citation
    Li, Hay, Miklau, Wang, PVLDB 2014 (DAWA); Hay et al. SIGMOD 2016
    (DPBench, 2-D DAWA on the Hilbert order); Hilbert, "Ueber die stetige
    Abbildung einer Linie auf ein Flaechenstueck", Math. Ann. 1891.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Literal

import numpy as np
import numpy.typing as npt

from .._typing import Real
from .._validation import check_epsilon
from ..noise import Generator, calibration
from ..mechanisms._dp import dp_shape
from ..mechanisms._docs import guarantee_of
from ..mechanisms._trees import hierarchy_estimate
from ..mechanisms.data_dependent._dawa_partition import memory_bytes as partition_memory
from ..mechanisms.data_dependent._greedy_nodes import node_calibrations, node_greedy, node_hierarchy_estimate
from ..mechanisms.data_dependent.dawa import partition_part, plan_dawa, run_partition
from ..mechanisms.grids.hilbert import (
    bucket_workload_matrix,
    bucket_workload_stats,
    check_rectangles,
    hilbert_order,
    square_side,
)
from ..mechanisms.histogram import HistogramRelease, check_ratio, shape_check
from ..mechanisms.plan import NoisePart, Plan, check_memory, int64_bytes
from ..policy._policy import Policy

__all__ = ["plan_dawa_hilbert", "dawa_hilbert", "level_share_error", "greedy_bucket_shares"]


def plan_dawa_hilbert(
    shape: tuple[int, ...] | Policy, epsilon: Real, *, ratio: float = 0.25, workload: npt.ArrayLike | None = None,
    integer: Literal["round", "truncate"] | None = None, weights: Literal["node", "level"] = "node",
) -> Plan[HistogramRelease]:
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
        holds, :func:`~blowfish_privacy.mechanisms.grids.hilbert.bucket_workload_matrix`), and the bucket counts are
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
    k = square_side(shp)
    check_memory(int64_bytes(13 * k * k), size=k * k, parameter="shape", mechanism="dawa_hilbert")
    finish = _integer_output(integer)
    if weights not in ("node", "level"):
        raise ValueError(f"weights must be 'node' or 'level', got {weights!r}")
    if workload is not None:
        return _plan_dawa_hilbert_workload(shp, pol, k, epsilon, ratio, check_rectangles(workload, k), finish,
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
            histogram=est.reshape(shp), secure=gen.is_secure, buckets=buckets.reshape(shp), stretch=1,
            expected_squared_error=rel.expected_squared_error,
            params={**rel.params, "order": "hilbert", "integer": integer}, plan=plan, spent_parts=rel.spent_parts)

    return Plan(
        mechanism="dawa_hilbert", policy=pol, guarantee=inner.guarantee + "; cells read in Hilbert order",
        citation=inner.citation + "; Hilbert-curve order for 2-D data as in DPBench (Hay et al. SIGMOD 2016)",
        epsilon_requested=inner.epsilon_requested, parts=inner.parts,
        aggregate=f"int64 histogram of shape {shp}, non-negative", aggregate_shape=shp,
        expected_error=inner.expected_error, memory_bytes=memory,
        runtime=inner.runtime, options={**inner.options, "order": "hilbert", "integer": integer},
        model="DP", check=shape_check(shp), run=run)

# ---------------------------------------------------------------------------
# DAWA's workload step over the Hilbert buckets


#: Relative level weights the share search tries (0: the level is not measured), a grid of ratios 2^(j/2).
_WEIGHT_GRID = (0.0,) + tuple(2.0 ** (j / 2.0) for j in range(-14, 9))
#: Exact shares are rounded down to multiples of 1 / _SHARE_DENOMINATOR (their sum stays <= 1).
_SHARE_DENOMINATOR = 10 ** 9

def level_share_error(weights: Sequence[float], nodes: Sequence[int] | npt.NDArray[np.int64], f2: float) -> float:
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


def greedy_bucket_shares(nodes: Sequence[int] | npt.NDArray[np.int64], f2: float, height: int) -> list[Fraction]:
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


def _integer_output(integer: str | None) -> Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]]:
    """The post-processing of ``integer`` (None, "round" or "truncate") as a function of the estimate."""
    if integer is None:
        return lambda a: a
    if integer == "round":
        return np.rint
    if integer == "truncate":
        return np.trunc
    raise ValueError(f"integer must be None, 'round' or 'truncate', got {integer!r}")


def _plan_dawa_hilbert_workload(
    shp: tuple[int, ...], pol: Policy | None, k: int, epsilon: Real, ratio: float, rects: npt.NDArray[np.int64],
    finish: Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]], integer: str | None, weights: str,
) -> Plan[HistogramRelease]:
    """:func:`plan_dawa_hilbert` with a rectangle workload (DAWA's steps 1-3 with its workload step)."""
    N = k * k
    eps = check_epsilon(epsilon)
    r = check_ratio(ratio)
    eps1, eps2 = eps * r, eps * (1 - r)
    penalty = float(calibration(2, eps2).scale)  # expected error of one bucket count (DAWA's step-1 penalty)
    first, cal_p = partition_part(N, eps1)
    # weights="node": the dense workload over the (padded) buckets, q x M with M <= N, and GreedyH's
    # 512-row working blocks
    dense = int64_bytes((rects.shape[0] + 1024) * N) if weights == "node" else 0
    memory = check_memory(int64_bytes(20 * N) + partition_memory(N) + dense, size=N, parameter="shape",
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
            cals = [None if s == 0 else calibration(2, eps2 * s) for s in shares]
            spent2 = sum((c.epsilon_exact for c in cals if c is not None), Fraction(0))
            noisy = hierarchy_estimate(bcounts, [None if c is None else c.scale for c in cals], gen)
            params["level_shares"] = [float(s) for s in shares]
        est = np.empty(N, dtype=np.float64)
        est[order] = finish((noisy / sizes)[part.buckets])
        return HistogramRelease(
            histogram=est.reshape(shp), secure=gen.is_secure, buckets=_grid_buckets(part.buckets, order, shp),
            stretch=1, expected_squared_error=None, params=params, plan=plan,
            spent_parts={"partition": first_eps, "counts": spent2})  # the greedy shares may spend below eps2

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
        model="DP", check=shape_check(shp), run=run)


def _grid_buckets(buckets: npt.NDArray[np.int64], order: npt.NDArray[np.int64], shp: tuple[int, ...]) -> npt.NDArray[np.int64]:
    out = np.empty(buckets.size, dtype=np.int64)
    out[order] = buckets
    return out.reshape(shp)


@guarantee_of(plan_dawa_hilbert)
def dawa_hilbert(
    hist: npt.ArrayLike, epsilon: Real, generator: Generator | None = None, *, ratio: float = 0.25,
    workload: npt.ArrayLike | None = None, integer: Literal["round", "truncate"] | None = None,
    weights: Literal["node", "level"] = "node",
) -> HistogramRelease:
    """DAWA over the Hilbert order: ``plan_dawa_hilbert(hist.shape, epsilon, ...).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, shape (k, k), non-negative
    epsilon : float or Fraction, > 0
    generator : Generator, optional
    ratio, workload, integer, weights
        As in :func:`plan_dawa_hilbert`.

    Returns
    -------
    HistogramRelease
        float64 ``histogram`` of shape (k, k).
    """
    h = np.asarray(hist)
    return plan_dawa_hilbert(h.shape, epsilon, ratio=ratio, workload=workload, integer=integer,
                             weights=weights).measure(h, generator)
