"""DAWA (Li, Hay, Miklau, Wang, PVLDB 2014) for the identity workload: a DP baseline.

Step 1, private partition (:func:`dawa_partition`): every interval whose
length is a power of two is a candidate bucket with cost
dev(B) = sum_{i in B} |x_i - mean(B)| plus integer discrete Laplace noise,
clipped at 0, plus a penalty (the expected error of the bucket's noisy count
in step 2); the partition of least total noisy cost is found by dynamic
programming over end points (C kernel, csrc/dawa.c).  Step 2, bucket counts
with Laplace noise.  Step 3, uniform expansion inside every bucket.

Privacy guarantee
    ``dawa_partition(hist, eps)`` and ``dawa(hist, eps)`` are
    (eps, FullDomain)-Blowfish, i.e. bounded eps-DP, hence
    (eps, G)-Blowfish for every secret graph G.  Partition: under adding or
    removing one record (unbounded DP) every partition has exactly one bucket
    containing the changed value, and dev of one bucket moves by at most
    2 - 2/|B| < 2 (the value moves by 1, the mean by 1/|B|); the
    report-noisy-min argument of 001 Thm 5.2 / DAWA Sec 3 with independent
    noise per bucket then needs noise of scale 2 * 2 / eps_u for eps_u-DP.
    Every candidate bucket has its noise, the one-value buckets too (their
    deviation is 0, but the argument moves the noise of the output's bucket
    that holds the changed value: a one-value bucket without noise lets the
    loss grow with |T|, which an earlier version allowed).
    A bounded neighbour (one value changed) is two unbounded steps, so
    eps_u = eps1 / 2 and the scale is 8 / eps1 (the "eps1/2 of DP" of 001 Sec
    5.1).  The argument only uses tail ratios P(Z > a + 4) >= e^{-4/t} P(Z > a),
    which the discrete Laplace of scale t satisfies for every real a, so
    integer noise on real-valued costs keeps the guarantee.  Counts: a
    bounded neighbour changes at most two bucket counts by one each
    (sensitivity 2, scale 2 / eps2).  Total eps1 + eps2 = eps.
Citation
    Li et al. PVLDB 2014 Sec 3 (L1 partition, dyadic-length approximation)
    and Sec 4; used as the DP baseline of 001 Sec 6 (Fig 4) at eps/2-DP,
    which is this module's (eps, FullDomain).
Runtime
    The dynamic program runs in chunks of end points (``_dawa.DawaStream``,
    csrc/dawa.h, driven by :mod:`._dawa_partition`): per length L = 2^k a
    sliding window keeps the window's count per distinct value when the
    counts take at most ``_dawa.FEW`` (4096) values, else its set of ranks
    (positions in the sorted counts) in a 64-ary bit tree with block sums;
    either way a window step costs O(log_64 |T|) plus the values its threshold
    (the window mean) crosses, at most O(64 log_64 |T|), so O(|T| log |T|)
    in all whatever the values; short lengths scan the window.  The noise
    of each interval is drawn when its chunk is scored: for
    ``dawa_n_intervals(|T|) >= noise.BATCH_PARALLEL_MIN`` the generator's
    child-stream keys are read first (before the data) and each length
    regenerates the ``noise.BATCH_CHUNK``-value child chunks it reaches, so
    the noise is exactly that of ``generator.discrete_laplace(scale, N)``;
    smaller vectors are drawn whole, before the data.  Memory: about 25
    bytes a cell with few distinct counts, 40 bytes a cell plus |T|/4
    bytes per length above 64 otherwise (the ranks and sorted counts).
Utility
    Per cell, uniform-expansion bias (the bucket's deviation) plus noise of
    variance Var/|B|^2; ``expected_squared_error`` reports the noise part.
    Step 2 for the identity workload (the default) is Laplace on the bucket
    counts.  For a workload of ranges, ``dawa(..., workload=(lo, hi))``
    releases a binary hierarchy over the buckets with DAWA's GreedyH
    (Li et al. Sec 4): one share of eps2 per node, chosen greedily for the
    workload mapped onto the buckets (a range counts a bucket it covers
    partly by the covered fraction), then weighted least squares
    (:func:`._greedy_nodes.node_greedy`); the shares sum to at most 1 along
    every root-to-leaf path and a bounded neighbour changes the nodes of
    two paths by one each, so the step spends at most eps2.  This
    workload step, not the partition, is what makes DAWA accurate at large
    n (with plain Laplace on near-singleton buckets it was 1.5 times the
    DPBench reference's error at 10^7 records).  ``weights="level"`` keeps
    the earlier one-share-per-level simplification.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from ... import _dawa, _tree
from ..._validation import as_fraction, check_epsilon
from ...noise import Generator, as_generator, calibrate, calibration, discrete_laplace_variance
from ._dawa_partition import (
    buckets_from_starts,
    exact_partition,
    memory_bytes,
    partition_cost,
    partition_run,
    partition_with_noise,
)
from .._docs import guarantee_of
from ._greedy_nodes import node_calibrations, node_greedy, node_hierarchy_estimate, range_workload_matrix
from ._subtree_variances import SubtreeVariances
from .._trees import greedy_level_shares, level_hierarchy_estimate
from ..histogram import HistogramRelease, check_histogram, check_ratio, check_size
from ..plan import NoisePart, Plan, check_memory
from ..._typing import Real

__all__ = [
    "DawaPartition",
    "check_range_workload",
    "dawa",
    "dawa_partition",
    "exact_partition",
    "greedy_shares",
    "partition_cost",
    "partition_with_noise",
    "plan_dawa",
    "workload_error",
]

_CITATION = "Li, Hay, Miklau, Wang, PVLDB 2014, Sections 3-4; the DP baseline of the data-dependent Blowfish report"

#: Sensitivity of one bucket's deviation under adding/removing a record,
#: times 2 for the noisy-min argument (see the module docstring).
NOISY_MIN_SENSITIVITY = 4


@dataclass(frozen=True)
class DawaPartition:
    """A private partition of the domain into intervals.

    Attributes
    ----------
    starts : numpy.ndarray of int64
        First value of every bucket, increasing, starting at 0.
    buckets : numpy.ndarray of int64, shape (|T|,)
        Bucket of every value.
    epsilon_exact : fractions.Fraction
        Epsilon spent, as (epsilon, FullDomain)-Blowfish.
    scale : fractions.Fraction
        Discrete Laplace scale of the cost noise.
    penalty : float
    """

    starts: np.ndarray
    buckets: np.ndarray
    epsilon_exact: Fraction
    scale: Fraction
    penalty: float

    @property
    def n_buckets(self) -> int:
        return int(self.starts.size)


def partition_part(size: int, epsilon: Fraction) -> tuple[NoisePart, object]:
    """The partition's noise, fixed from |T| and its epsilon alone."""
    cal = calibration(NOISY_MIN_SENSITIVITY, epsilon / 2)
    part = NoisePart(
        "partition", Fraction(2 * NOISY_MIN_SENSITIVITY), False,
        "report-noisy-min over interval costs: one bucket's deviation moves by < 2 per added/removed record "
        "(noise sensitivity 4 for the noisy-min argument, DAWA Section 3, Theorem 5.2 of the data-dependent "
        "Blowfish report); a bounded neighbour is two such steps",
        2 * cal.epsilon_exact, cal.scale, _dawa.dawa_n_intervals(size) + size)
    return part, cal


def run_partition(hist: np.ndarray, scale: Fraction, spent: Fraction, penalty: float, gen: Generator) -> "DawaPartition":
    starts = partition_run(hist, scale, penalty, gen)
    return DawaPartition(starts, buckets_from_starts(starts, hist.size), spent, scale, penalty)


def dawa_partition(
    hist: npt.ArrayLike, epsilon: Real, generator: Generator | None = None, *, penalty: float
) -> DawaPartition:
    """DAWA's private L1 partition (step 1) over dyadic-length intervals.

    Parameters
    ----------
    hist : array_like of int, shape (|T|,)
        Non-negative counts.
    epsilon : float
        Spent as (epsilon, FullDomain)-Blowfish (epsilon/2 unbounded DP).
    generator : Generator, optional
    penalty : float >= 0
        Added to every bucket's cost: the expected absolute error of one
        noisy bucket count in the next step.

    Returns
    -------
    DawaPartition
        The released partition: ``starts`` (int64, increasing, from 0) and
        ``buckets`` (int64, shape (|T|,)), with the epsilon spent and the
        noise scale.

    Privacy
    -------
    (epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-DP with n
    public, hence (epsilon, G)-Blowfish for every secret graph G:
    report-noisy-min over every candidate interval's cost.

    Sensitivity
    -----------
    Proven bound: adding or removing one record moves one bucket's deviation
    by less than 2 (the value by 1, the mean by 1/|B|); the noisy-min
    argument doubles it to 4 for epsilon/2 unbounded DP, and a bounded
    neighbour is two such steps, so the discrete Laplace scale is
    8/epsilon, rounded up by the exact sampler's calibration (module
    docstring).

    Runtime
    -------
    O(|T| log |T|) time whatever the counts (one sliding window per length
    2^k: counts per distinct value, or a rank set in a 64-ary bit tree
    when there are more than 4096 distinct counts); memory at most about
    40 bytes a cell plus |T|/4 bytes per length above 64; the noise of the
    dawa_n_intervals(|T|) intervals is drawn chunk by chunk.

    References
    ----------
    The private partition of Li, Hay, Miklau, Wang (DAWA), PVLDB 2014,
    Sec 3, restricted to dyadic lengths; the report-noisy-min argument as
    in 001 Thm 5.2 (docs/papers.md).
    """
    hist = check_histogram(hist)
    eps = check_epsilon(epsilon)
    pen = float(as_fraction(penalty, "penalty", allow_zero=True))
    gen = as_generator(generator)
    part, cal = partition_part(hist.size, eps)
    return run_partition(hist, cal.scale, part.epsilon, pen, gen)


def plan_dawa(
    size: int, epsilon: Real, *, ratio: float = 0.25, workload: npt.ArrayLike | None = None, weights: str = "node",
) -> Plan[HistogramRelease]:
    """Plan DAWA (the data-dependent DP baseline) from public inputs.

    Parameters
    ----------
    size : int >= 1
        |T|, the number of histogram cells.
    epsilon : float or Fraction, > 0
    ratio : float in (0, 1)
        Share of epsilon for the partition (001 Sec 6 uses 0.25).
    workload : None, (lo, hi) pair of int arrays or int array of shape (q, 2)
        As in :func:`dawa`; checked against ``size`` here.
    weights : "node" or "level"
        With a workload: GreedyH's one share per node (default) or one per
        level of the bucket hierarchy.

    Returns
    -------
    Plan
        ``measure(hist, generator)`` takes int64 counts of shape (|T|,) and
        releases a :class:`~.histogram.HistogramRelease`: ``histogram``
        float64 (|T|,), each bucket's noisy count spread uniformly over its
        values, and ``buckets`` int64 (|T|,), the released partition.  The
        partition's noise is fixed (one draw per candidate interval); the
        number of bucket counts depends on the released partition
        (``count=None``); with a range workload the per-level scales are
        chosen from the released buckets (``scale=None``) and spend at
        most eps2.

    Raises
    ------
    ValueError
        A bad size, epsilon, ratio or workload.

    Privacy
    -------
    (epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-DP with n
    public, hence (epsilon, G)-Blowfish for every secret graph G: the
    partition at eps1 = ratio * epsilon (report-noisy-min) and the bucket
    counts at eps2 = epsilon - eps1, sequentially composed.  The plan's
    epsilon is what the release reports.

    Sensitivity
    -----------
    Partition: a proven bound, scale 8/eps1 (see :func:`dawa_partition`).
    Bucket counts: 2, exact: a bounded neighbour changes at most two bucket
    counts by one each (scale 2/eps2; with a range workload, two nodes per
    level of the bucket hierarchy, level l at scale 2/(eps2 share_l)).

    Runtime
    -------
    Plan O(1) (O(q) for q workload ranges); measurement O(|T| log |T|)
    for the partition whatever the counts, O(|T|) for the bucket counts
    (O(q log |T|) more with a workload).

    References
    ----------
    Li, Hay, Miklau, Wang, "A data- and workload-aware algorithm for range
    queries under differential privacy", PVLDB 2014, Sec 3 (the L1
    partition; its dyadic-length approximation) and Sec 4; He,
    Machanavajjhala, Ding, "Blowfish privacy", SIGMOD 2014 (000), for the
    (epsilon, G) reading; DAWA is the DP baseline of 001 Sec 6, Fig 4
    (docs/papers.md).
    """
    N = check_size(size)
    memory = check_memory(memory_bytes(N), size=N, parameter="size", mechanism="dawa")
    eps = check_epsilon(epsilon)
    r = check_ratio(ratio)
    lo = hi = None
    if workload is not None:
        lo, hi = check_range_workload(workload, N)
    if weights not in ("node", "level"):
        raise ValueError(f"weights must be 'node' or 'level', got {weights!r}")
    eps1, eps2 = eps * r, eps * (1 - r)
    cal2 = calibration(2, eps2)
    penalty = float(cal2.scale)
    first, cal_p = partition_part(N, eps1)
    if workload is None:
        counts = NoisePart("counts", Fraction(2), True,
                           "a bounded neighbour changes at most two bucket counts by one each",
                           cal2.epsilon_exact, cal2.scale, None)
        expected = {"noise_variance_per_bucket_count": discrete_laplace_variance(cal2.scale)}
    else:
        counts = NoisePart("counts", Fraction(2), True,
                           ("binary hierarchy over the buckets with one greedy share per node (GreedyH), chosen from "
                            "the released buckets and the public workload: a bounded neighbour changes the counts "
                            "of the nodes on two root-to-leaf paths by one each, node scale 2/(eps2 share) and the "
                            "shares sum to at most 1 along every path") if weights == "node" else
                           ("binary hierarchy over the buckets: a bounded neighbour changes at most two nodes per "
                            "level by one; level l gets scale 2/(eps2 share_l) with greedy shares summing to 1, "
                            "chosen from the released buckets"),
                           eps2, None, None)
        expected = {}
    parts = (first, counts)
    first_eps = first.epsilon

    def run(plan, hist, gen):
        part = run_partition(hist, cal_p.scale, first_eps, penalty, gen)
        bcounts = np.add.reduceat(hist, part.starts)
        sizes = np.diff(part.starts, append=hist.size)
        params = {"ratio": float(r), "n_buckets": part.n_buckets}
        if workload is None or part.n_buckets == 1:
            if part.n_buckets == 1 and workload is not None:  # one bucket: its count is the public n
                noisy, err = bcounts.astype(np.float64), 0.0
            else:
                noisy = gen.add_discrete_laplace(bcounts, cal2.scale)
                err = float(np.sum(discrete_laplace_variance(cal2.scale) / sizes))
        elif weights == "node":
            mb = part.n_buckets
            Q = range_workload_matrix(lo, hi, part.starts, hist.size, 1 << max(1, (mb - 1).bit_length()))
            node_w, collapsed, _err = node_greedy(Q, mb)
            del Q
            scales, _spends, _spent2 = node_calibrations(node_w, eps2)  # _spent2 <= eps2 (path sums)
            noisy = node_hierarchy_estimate(bcounts, scales, collapsed, gen)
            err = None
            params["weights"] = "node"
        else:
            queries = _bucket_workload(part.starts, hist.size, lo, hi)
            shares = greedy_shares(part.n_buckets, queries, eps2)
            noisy, _spent2 = level_hierarchy_estimate(bcounts, shares, eps2, gen)
            err = None
            params["level_shares"] = [float(s) for s in shares]
            params["workload_error_bound"] = workload_error(shares, part.n_buckets, queries, eps2)
        del bcounts
        # uniform expansion, one bucket-sized array at a time: count / size
        # per bucket, then gathered (the same divisions as uniform_expansion)
        per_value = noisy.astype(np.float64)
        del noisy
        per_value /= sizes
        del sizes
        return HistogramRelease(histogram=per_value[part.buckets], secure=gen.is_secure, buckets=part.buckets,
                                expected_squared_error=err, params=params, plan=plan)

    return Plan(
        mechanism="dawa", policy=None,
        guarantee=("(epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-differential privacy with n public, "
                   "hence (epsilon, G) for every secret graph G; epsilon the plan's total (partition + counts)"),
        citation=_CITATION, epsilon_requested=eps, parts=parts,
        aggregate=f"int64 histogram of shape ({N},), non-negative", aggregate_shape=(N,),
        expected_error=expected,
        memory_bytes=memory,
        runtime="O(|T| log |T|) for the partition whatever the counts, O(|T|) for the bucket counts",
        options={"ratio": r, "penalty": penalty, "workload_ranges": 0 if lo is None else int(lo.size),
                 "weights": weights},
        model="DP", check=lambda h: check_histogram(h, "hist", N), run=run,
    )


@guarantee_of(plan_dawa)
def dawa(
    hist: npt.ArrayLike, epsilon: Real, generator: Generator | None = None, *, ratio: float = 0.25,
    workload: npt.ArrayLike | None = None, weights: str = "node"
) -> HistogramRelease:
    """DAWA for the identity workload: the data-dependent DP baseline.

    ``plan_dawa(len(hist), epsilon, ratio=ratio, workload=workload, weights=weights).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, shape (|T|,)
    epsilon : float
        Total, as (epsilon, FullDomain)-Blowfish (bounded DP).
    generator : Generator, optional
    ratio : float in (0, 1)
        Share of epsilon for the partition (001 Sec 6 uses 0.25 for DAWA).
    workload : None or (lo, hi) pair of int arrays
        None: the identity workload (one query per value), answered from
        Laplace bucket counts.  Otherwise inclusive domain ranges
        [lo[k], hi[k]]: the bucket counts come from a binary hierarchy over
        the buckets whose budget shares (per node or per level) are chosen greedily for
        this workload, with least-squares consistency; the total n is
        public.  An int64 array of rows (lo, hi) is taken too.
    weights : "node" or "level"
        GreedyH's one share per node (:func:`._greedy_nodes.node_greedy`, the
        default) or one per level (:func:`greedy_shares`).

    Returns
    -------
    HistogramRelease
        ``histogram``: float64, shape (|T|,), each bucket's noisy count
        spread uniformly over its values; ``buckets``: int64, shape (|T|,),
        the released partition.  The module docstring gives the privacy
        argument and the utility.
    """
    hist = np.asarray(hist)  # checked once, by the plan's measure
    return plan_dawa(hist.size, epsilon, ratio=ratio, workload=workload, weights=weights).measure(hist, generator)


def check_range_workload(workload, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``workload`` = (lo, hi), inclusive domain ranges [lo[k], hi[k]] of |T| = ``size``, as two int64 arrays.

    Also takes a numpy integer array of shape (q, 2) with rows (lo, hi), as DPBench's harness passes
    them (a 2 x 2 array too: rows; give a tuple (lo, hi) for the pair form).

    Raises TypeError or ValueError naming the parameter and what is allowed.
    """
    arr = workload if isinstance(workload, np.ndarray) else None
    if arr is not None and arr.ndim == 2 and arr.shape[1] == 2:
        workload = (arr[:, 0], arr[:, 1])  # rows (lo, hi), as DPBench's harness passes them
    try:
        lo, hi = workload
    except (TypeError, ValueError):
        raise TypeError(f"workload must be None or a pair (lo, hi) of integer arrays, "
                        f"got {type(workload).__name__}") from None
    lo, hi = np.asarray(lo), np.asarray(hi)
    if lo.shape != hi.shape or lo.ndim != 1 or lo.size == 0 or lo.dtype.kind not in "iu" or hi.dtype.kind not in "iu":
        raise ValueError(f"workload (lo, hi) must be two non-empty 1-D integer arrays of one length, got shapes {lo.shape} and {hi.shape}")
    bad = (lo < 0) | (hi >= size) | (lo > hi)
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError(f"workload range {k} is [{int(lo[k])}, {int(hi[k])}]; ranges must satisfy 0 <= lo <= hi < {size}")
    return lo.astype(np.int64), hi.astype(np.int64)


# ---------------------------------------------------------------------------
# step 2 for a range workload: a greedily weighted hierarchy over the buckets


def _bucket_workload(starts: np.ndarray, n: int, lo: np.ndarray, hi: np.ndarray):
    """Each domain range [lo, hi] as (first full bucket, last full bucket,
    partial buckets with their covered fractions) under uniform expansion."""
    ends = np.r_[starts[1:], n]  # exclusive
    sizes = ends - starts
    out = []
    for a, b in zip(lo.tolist(), hi.tolist()):
        ja = int(np.searchsorted(starts, a, side="right") - 1)
        jb = int(np.searchsorted(starts, b, side="right") - 1)
        parts = []
        if ja == jb:
            parts.append((ja, (b - a + 1) / sizes[ja]))
            out.append((1, 0, parts))  # no full buckets
            continue
        full_lo, full_hi = ja, jb
        if a != starts[ja]:
            parts.append((ja, (ends[ja] - a) / sizes[ja]))
            full_lo = ja + 1
        if b != ends[jb] - 1:
            parts.append((jb, (b - starts[jb] + 1) / sizes[jb]))
            full_hi = jb - 1
        out.append((full_lo, full_hi, parts))
    return out


def _canonical_nodes(lo: int, hi: int, h: int) -> list[tuple[int, int]]:
    """Maximal dyadic nodes (level, index) covering leaves lo..hi of a binary tree of height h."""
    nodes = []
    level, a, b = h, lo, hi + 1
    while a < b:
        if a & 1:
            nodes.append((level, a))
            a += 1
        if b & 1:
            b -= 1
            nodes.append((level, b))
        a >>= 1
        b >>= 1
        level -= 1
    return nodes


def _subtree_variances(node_var: list[np.ndarray]) -> list[np.ndarray]:
    """Up-pass variances of every node's subtree estimate (level 0 = root)."""
    h = len(node_var) - 1
    out = [None] * (h + 1)
    out[h] = node_var[h].copy()
    for level in range(h - 1, -1, -1):
        z = np.zeros(node_var[level].size)
        v = node_var[level].copy()
        _tree.wls_up_level(np.zeros(out[level + 1].size), out[level + 1], z, v, 2)
        out[level] = v
    return out


def level_variances(shares, eps) -> list[float]:
    """Observation variance of a real node of every level (0 = the public root, exact) of a binary hierarchy.

    ``shares[l - 1]`` is the share of ``eps`` spent on level l with
    sensitivity 2; a share of 0 leaves the level unobserved (inf).
    """
    out = [0.0]
    for s in shares:
        s = Fraction(s)
        out.append(np.inf if s == 0 else discrete_laplace_variance(calibrate(2, eps * s).scale))
    return out


def workload_error(shares, m: int, queries, eps2) -> float:
    """Expected squared error of the workload when every query sums the up-pass
    subtree estimates of its canonical nodes (independent: disjoint subtrees).

    ``shares[l - 1]`` is the share of eps2 spent on level l (1 = children of
    the public root, h = buckets); a share of 0 leaves the level unobserved.
    The least-squares estimate used by :func:`dawa` is the best linear
    unbiased one, so its error is at most this.  O(h + q h) for q queries,
    whatever m (:class:`SubtreeVariances`).
    """
    h = len(shares)
    sub = SubtreeVariances(level_variances(shares, eps2), m)
    total = 0.0
    for full_lo, full_hi, parts in queries:
        for j, frac in parts:
            total += frac * frac * sub.of(h, j)
        if full_lo <= full_hi:
            for level, idx in _canonical_nodes(full_lo, full_hi, h):
                total += sub.of(level, idx)
        if total == np.inf:
            return np.inf
    return float(total)


GREEDY_CHOICES = (Fraction(0), Fraction(1, 8), Fraction(1, 4), Fraction(1, 2), Fraction(1))


def greedy_shares(m: int, queries, eps2) -> list[Fraction]:
    """Per-level budget shares for the bucket hierarchy, chosen greedily.

    Start with everything on the buckets (level h); then, bottom-up, give
    each level a weight from :data:`GREEDY_CHOICES` relative to the buckets'
    weight, keeping the choice of least :func:`workload_error` (the shares
    are the weights normalised to sum 1).  In the spirit of DAWA's GreedyH
    (Li et al. 2014 Sec 4), restricted to one weight per level.
    """
    h = max(1, (m - 1).bit_length())
    return greedy_level_shares(h, lambda shares: workload_error(shares, m, queries, eps2), GREEDY_CHOICES)

