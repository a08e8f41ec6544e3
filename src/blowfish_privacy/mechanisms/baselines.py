"""DP baselines of the DPBench protocol (Hay et al., SIGMOD 2016) not elsewhere in the library.

Every plan here is a bounded differential privacy baseline, i.e.
(epsilon, FullDomain)-Blowfish privacy: two datasets are neighbours when
one record changes its value, so the number of records n is public (000
Sec 2).  A plan's first argument is the public size (1-D: an int), shape
(2-D: a pair) or a :class:`~blowfish_privacy.Policy` whose secrets are
``FullDomain`` (the shape is then its domain's; this lets ``audit.exact``
call the plan with a policy).  ``measure`` adds integer noise from the
library's exact discrete Laplace sampler only; post-processing is float.

``plan_uniform``
    The estimate n / |T| in every cell.  Under bounded DP n is public, so
    the default spends nothing (epsilon 0: the output is the same for all
    neighbours).  ``noisy_total=True`` is DPBench's Uniform, which works
    under unbounded DP and measures the total with noise of scale 1/eps
    (sensitivity 1 under add/remove; under bounded DP the total does not
    change at all, so 1 is an upper bound).
``plan_hb`` / ``plan_hb2d``
    HB (Qardaji, Yang, Li, VLDB 2013): the hierarchical method with the
    branching factor b chosen from the domain size to minimise the average
    variance of a random range query, QYL eq. 3,
    V(b) = (b - 1) h^3 - 2 (b + 1) h^2 / 3, h = ceil(log_b |T|), minimised
    over b = 2..|T| (:func:`hb_branching`; this is also DPBench's rule).
    1-D: :func:`~blowfish_privacy.mechanisms.plan_hierarchical` with
    ``fanout=b`` (least-squares consistency, public root).  2-D: the tensor
    product of two b-ary trees (:func:`grid.plan_grid_hierarchical`,
    ``levels="tensor"``); QYL's model applied to it (:func:`hb2d_branching`):
    a rectangle costs (nodes per row range) x (nodes per column range) noisy
    nodes, each of variance proportional to the square of the number of
    released level pairs ((h + 1)^2 - 1), so b minimises
    ((h + 1)^2 - 1)^2 * max(1, (b - 1) h - 2 (b + 1) / 3)^2 over the side k
    (QYL's per-range node count is V(b) / h^2).  This extension of eq. 3 to
    the tensor strategy is ours, not the paper's.
``plan_ugrid``
    UGrid (Qardaji, Yang, Li, ICDE 2013): an m x m uniform grid,
    m = floor(sqrt(n eps / c)), c = 10, clipped to [1, side]; noisy cell
    counts spread uniformly over their cells.  n is read at measurement
    (public under bounded DP) unless ``cells`` fixes m in the plan.
``plan_agrid``
    AGrid (Qardaji, Yang, Li, ICDE 2013): a first-level m1 x m1 grid,
    m1 = max(10, ceil(sqrt(n eps / c) / 4)), measured with alpha * eps; each
    first-level cell with noisy count N' gets an m2 x m2 second-level grid,
    m2 = ceil(sqrt(N' (1 - alpha) eps / c2)), c2 = c / 2, measured with
    (1 - alpha) eps; then constrained inference (the cell count and the sum
    of its sub-cells combined by inverse variance, the difference spread
    equally over the sub-cells) and uniform expansion.
``plan_mwem``
    MWEM (Hardt, Ligett, McSherry, NIPS 2012) for 1-D range workloads,
    with the exponential mechanism replaced by report-noisy-max with the
    library's discrete Laplace noise (eps-DP: the proof is in the
    docstring), so no real-valued sampling reaches a release.

Privacy (every plan)
    Each noisy stage is the histogram of a partition of the domain into
    cells (UGrid's cells, AGrid's first level, AGrid's second level for any
    value of the first level's *noisy* output) or the set of nodes of a
    hierarchy.  A bounded neighbour moves one record from one value to
    another: a partition's counts change in at most two cells, by one each,
    so the L1 sensitivity is 2 (exactly 2 as soon as the partition has two
    cells), and the discrete Laplace of scale >= 2/eps_i gives eps_i
    (000 Thm 5.1; exact sampler: Canonne, Kamath, Steinke 2020).  AGrid's
    second stage is chosen from the first stage's noisy counts only, so the
    two stages compose adaptively: eps_1 + eps_2 <= epsilon.  UGrid's and
    AGrid's grid sizes read n, which is the same for every neighbour.
    ``tests/mechanisms/test_dp_baselines.py`` audits the plans exactly with
    ``audit.exact`` on tiny domains (AGrid with fixed second-level
    granularities, its adaptive composition is argued above).  MWEM is not
    auditable by ``audit.exact``, which prices the release of the whole
    noisy stage (every noisy score), while MWEM releases only its argmax:
    its selection step is checked by exact enumeration of the
    report-noisy-max output distribution instead.

UGrid and AGrid live in :mod:`._baselines_grid`, the shared checks in
:mod:`._baselines_common`; every name is importable from here.
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

import numpy as np

from .._validation import as_int, check_epsilon
from ..domain import Domain, Ordinal
from ..noise import Generator, discrete_laplace_variance
from ..policy import Policy
from ..secrets import FullDomain
from .cumulative import plan_hierarchical
from .grid import plan_grid_hierarchical
from .histogram import HistogramRelease
from .laplace import calibrate
from .plan import NoisePart, Plan, int64_bytes
from ._baselines_common import (
    _CITE_HB,
    _CITE_UNIFORM,
    _DP,
    _check_hist,
    _dp_shape,
    _release,
)
from ._baselines_grid import (  # noqa: F401  (ugrid_cells, agrid_first_cells re-exported)
    agrid_first_cells,
    plan_agrid,
    plan_ugrid,
    ugrid_cells,
)

__all__ = [
    "hb_branching",
    "hb2d_branching",
    "plan_uniform",
    "plan_hb",
    "plan_hb2d",
    "plan_ugrid",
    "plan_agrid",
    "plan_mwem",
    "dyadic_ranges",
    "uniform",
    "hb",
    "hb2d",
    "ugrid",
    "agrid",
    "mwem",
]


# ---------------------------------------------------------------------------
# Uniform


def plan_uniform(shape, epsilon, *, noisy_total: bool = False) -> Plan:
    """Plan Uniform: the total spread evenly over every cell (DPBench's plainest baseline).

    Privacy guarantee
        Bounded DP (``FullDomain``).  Default: the estimate n / |T| reads only
        the public n and spends nothing (epsilon 0).  ``noisy_total=True``:
        DPBench's Uniform, the total with discrete Laplace noise of scale
        1/epsilon (its unbounded-DP sensitivity 1; under bounded DP the total
        never changes, so 1 is an upper bound), clipped at 0.
    Citation
        Hay et al., SIGMOD 2016 (DPBench).
    """
    shp, pol = _dp_shape(shape)
    eps = check_epsilon(epsilon)
    if not isinstance(noisy_total, bool):
        raise TypeError(f"noisy_total must be a bool, got {noisy_total!r}")
    cells = int(np.prod(shp, dtype=np.int64))
    if noisy_total:
        cal = calibrate(1, eps)
        scale = cal.scale
        parts = (NoisePart("total", 1, False, "upper bound: add/remove one record changes the total by 1 "
                           "(DPBench's Uniform); under bounded DP the total is public and does not change",
                           cal.epsilon_exact, scale, 1),)
        var = discrete_laplace_variance(scale)
    else:
        scale, parts, var = Fraction(0), (), 0.0

    def run(plan, hist, gen):
        n = int(hist.sum())
        if noisy_total:
            total = max(float(gen.add_discrete_laplace(np.array([n], dtype=np.int64), scale)[0]), 0.0)
        else:
            total = float(n)
        est = np.full(shp, total / cells, dtype=np.float64)
        return _release(plan, est, gen, {"noisy_total": noisy_total, "scale": scale})

    return Plan(
        mechanism="uniform", policy=pol,
        guarantee=_DP + ("; the total measured with noise of scale 1/epsilon" if noisy_total
                         else "; reads only n, spends epsilon 0"),
        citation=_CITE_UNIFORM, epsilon_requested=eps, parts=parts,
        aggregate=f"int64 histogram of shape {shp}", aggregate_shape=shp,
        expected_error={"total_variance": var, "note": "plus the data-dependent bias of uniform spreading"},
        memory_bytes=int64_bytes(2 * cells), runtime="O(|T|)",
        options={"noisy_total": noisy_total}, check=_check_hist(shp), run=run)


# ---------------------------------------------------------------------------
# HB


def _height(k: int, b: int) -> int:
    h, cap = 0, 1
    while cap < k:
        cap *= b
        h += 1
    return h


def hb_branching(size) -> int:
    """QYL VLDB 2013 eq. 3: the b in 2..size minimising (b - 1) h^3 - 2 (b + 1) h^2 / 3, h = ceil(log_b size).

    Exact integer arithmetic (3 V(b) compared); ties go to the smaller b.
    For 4096 this is 16, for 256 it is 16 (h = 2), for small sizes the
    flat tree b = size (h = 1).
    """
    N = as_int(size, "size")
    if N < 1:
        raise ValueError(f"size must be >= 1, got {N}")
    if N <= 2:
        return 2
    best, best_v = 2, None
    for b in range(2, N + 1):
        h = _height(N, b)
        v3 = 3 * (b - 1) * h ** 3 - 2 * (b + 1) * h ** 2
        if best_v is None or v3 < best_v:
            best, best_v = b, v3
    return best


def hb2d_branching(side) -> int:
    """Branching of the 2-D tensor HB: minimises ((h+1)^2 - 1)^2 * max(1, (b-1) h - 2(b+1)/3)^2 (module docstring)."""
    k = as_int(side, "side")
    if k < 1:
        raise ValueError(f"side must be >= 1, got {k}")
    if k <= 2:
        return 2
    best, best_v = 2, None
    for b in range(2, k + 1):
        h = _height(k, b)
        nodes3 = max(3, 3 * (b - 1) * h - 2 * (b + 1))      # 3 x QYL's nodes per range, at least one node
        v = ((h + 1) ** 2 - 1) ** 2 * nodes3 ** 2
        if best_v is None or v < best_v:
            best, best_v = b, v
    return best


def plan_hb(size, epsilon, *, keep_noisy: bool = False) -> Plan:
    """Plan HB (Qardaji, Yang, Li, VLDB 2013) in 1-D: the hierarchical method with b = :func:`hb_branching`.

    Privacy guarantee
        Bounded DP, as :func:`~blowfish_privacy.mechanisms.plan_hierarchical`
        (public root; the h levels below it each get noise of scale 2h/eps:
        one changed record changes two nodes per level).  The branching
        factor depends on the size only.
    """
    shp, pol = _dp_shape(size, dims=1)
    N = shp[0]
    b = hb_branching(N)
    p = plan_hierarchical(N, epsilon, fanout=b, keep_noisy=keep_noisy)
    return replace(p, mechanism="hb", policy=pol, citation=_CITE_HB,
                   options={**p.options, "branching": b,
                            "branching_rule": "QYL VLDB 2013 eq. 3 minimised over b = 2..|T|"})


def plan_hb2d(shape, epsilon) -> Plan:
    """Plan HB in 2-D: the tensor product of two b-ary trees, b = :func:`hb2d_branching` of the longer side.

    Privacy guarantee
        Bounded DP, as :func:`grid.plan_grid_hierarchical` under the complete
        graph: one scale S/eps for every node, S = 2 x (released level pairs
        that separate some two values), exact.
    """
    shp, pol = _dp_shape(shape, dims=2)
    if pol is None:
        pol = Policy(Domain([Ordinal("row", 0, shp[0] - 1), Ordinal("col", 0, shp[1] - 1)]), FullDomain())
    b = hb2d_branching(max(shp))
    p = plan_grid_hierarchical(pol, epsilon, fanout=b, levels="tensor")
    return replace(p, mechanism="hb2d", citation=_CITE_HB,
                   options={**p.options, "branching": b,
                            "branching_rule": "QYL eq. 3's model applied per axis to the tensor strategy"})


# ---------------------------------------------------------------------------
# MWEM


_CITE_MWEM = ("Hardt, Ligett, McSherry, 'A simple and practical algorithm for differentially private data release', "
              "NIPS 2012 (MWEM); report-noisy-max: Dwork, Roth 2014 Sec 3.3")


def dyadic_ranges(size) -> np.ndarray:
    """Every distinct node of a binary tree over ``size`` values as an inclusive range (lo, hi), root first."""
    N = as_int(size, "size")
    out = []
    w = 1
    while True:
        lo = np.arange(0, N, w, dtype=np.int64)
        out.append(np.column_stack([lo, np.minimum(lo + w, N) - 1]))
        if w >= N:
            break
        w *= 2
    rows = np.concatenate(out[::-1])
    _, first = np.unique(rows, axis=0, return_index=True)   # a short last node repeats on upper levels
    return rows[np.sort(first)]


def _check_ranges(ranges, N) -> np.ndarray:
    r = np.asarray(ranges)
    if r.ndim != 2 or r.shape[1] != 2 or r.shape[0] < 1 or r.dtype.kind not in "iu":
        raise ValueError(f"ranges must be an integer array of shape (q, 2) with q >= 1, got shape {r.shape}")
    r = r.astype(np.int64)
    if (r[:, 0] < 0).any() or (r[:, 1] >= N).any() or (r[:, 0] > r[:, 1]).any():
        raise ValueError(f"ranges must hold inclusive ranges 0 <= lo <= hi < {N}")
    return r


def plan_mwem(size, epsilon, *, rounds: int = 10, ranges=None, average: bool = False) -> Plan:
    """Plan MWEM (Hardt, Ligett, McSherry 2012) for a workload of 1-D range queries.

    T = ``rounds`` rounds, each with epsilon / T: half to select the worst
    answered range of the (public) workload by report-noisy-max, half to
    measure it with discrete Laplace noise; after each round, multiplicative
    weights updates of the estimate A (total n, public) with every
    measurement so far (the paper's practical variant, Sec 4).  Returns the
    last A (as DPBench's MWEM), or the average of the T estimates
    (``average=True``, the paper's Fig. 1).

    Privacy guarantee
        Bounded DP.  Measurement: a range count changes by at most 1 when a
        record moves (exactly 1 for a range holding one end of the move):
        sensitivity 1, scale 1/eps_m.  Selection: the exponential mechanism
        is replaced by report-noisy-max over the integer scores
        s_i = |round(q_i(A)) - q_i(x)| (A is public: it is computed from
        earlier noisy outputs), with discrete Laplace noise of scale
        2/eps_s and ties to the lowest index.

        Claim: this is eps_s-DP.  The scores have sensitivity 1 (q_i(x)
        moves by at most 1 and |c - .| is 1-Lipschitz), in any directions.
        Fix the noise r_j of every j != i and let r* be the smallest integer
        with which i wins on x (it exists: the winning set of r_i is an
        upward-closed set of integers).  On a neighbour x', s_i' >= s_i - 1
        and s_j' <= s_j + 1, so with r_i >= r* + 2, s_i' + r_i >= s_i + r* + 1,
        which beats (or ties with a higher index) every s_j + r_j + 1 >=
        s_j' + r_j: i wins on x'.  Hence P[i | x', r_-i] >= P[Z >= r* + 2] and
        P[i | x, r_-i] = P[Z >= r*].  For the discrete Laplace with
        P(z) proportional to exp(-|z|/b), P(z + 2) >= exp(-2/b) P(z) for every
        integer z (|z + 2| <= |z| + 2), so summing over z >= r*,
        P[Z >= r* + 2] >= exp(-2/b) P[Z >= r*].  With b = 2/eps_s:
        P[i | x'] >= exp(-eps_s) P[i | x] after averaging over r_-i, for every
        i and both directions.  (The proof of Dwork, Roth Claim 3.9 with a
        Laplace tail replaced by the discrete one.)  ``test_dp_baselines``
        checks the claim by exact enumeration on small score vectors.
        Composition over 2T steps: the spend is the sum, at most epsilon.

    Parameters
    ----------
    size : int or 1-D FullDomain Policy
    epsilon : float
    rounds : int >= 1
    ranges : int array (q, 2), optional
        The workload (inclusive ranges); default :func:`dyadic_ranges`, a
        public set from which every range is a sum of at most 2 log2 |T|.
    average : bool
    """
    shp, pol = _dp_shape(size, dims=1)
    N = shp[0]
    eps = check_epsilon(epsilon)
    T = as_int(rounds, "rounds")
    if T < 1:
        raise ValueError(f"rounds must be an integer >= 1, got {rounds!r}")
    if not isinstance(average, bool):
        raise TypeError(f"average must be a bool, got {average!r}")
    Q = dyadic_ranges(N) if ranges is None else _check_ranges(ranges, N)
    eps_round = eps / T
    cal_s, cal_m = calibrate(2, eps_round / 2), calibrate(1, eps_round / 2)
    s_scale, m_scale = cal_s.scale, cal_m.scale
    parts = []
    for t in range(T):
        parts.append(NoisePart(f"select_{t + 1}", Fraction(2), False,
                               "report-noisy-max over scores of exact sensitivity 1, noise 2/eps (proof in "
                               "plan_mwem's docstring): recorded as 2 x 1", cal_s.epsilon_exact, s_scale, Q.shape[0]))
        parts.append(NoisePart(f"measure_{t + 1}", 1, True, "bounded DP: a moved record changes a range count by "
                               "at most 1", cal_m.epsilon_exact, m_scale, 1))
    lo, hi = Q[:, 0], Q[:, 1]

    def run(plan, hist, gen):
        n = int(hist.sum())
        C = np.concatenate([[0], np.cumsum(hist)])
        truth = C[hi + 1] - C[lo]
        A = np.full(N, n / N, dtype=np.float64)
        acc = np.zeros(N, dtype=np.float64)
        chosen, measured = [], []
        for _ in range(T):
            CA = np.concatenate([[0.0], np.cumsum(A)])
            qa = CA[hi + 1] - CA[lo]
            score = np.abs(np.rint(qa).astype(np.int64) - truth)
            i = int(np.argmax(gen.add_discrete_laplace(score, s_scale)))   # first maximum: lowest index
            m = float(gen.add_discrete_laplace(truth[i:i + 1], m_scale)[0])
            chosen.append(i)
            measured.append(m)
            if n > 0:  # n is public
                for j, mj in zip(chosen, measured):
                    sl = slice(int(lo[j]), int(hi[j]) + 1)
                    qj = A[sl].sum()
                    A[sl] *= math.exp(max(min((mj - qj) / (2.0 * n), 50.0), -50.0))
                    A *= n / A.sum()
            acc += A
        est = acc / T if average else A.copy()
        return _release(plan, est, gen, {"rounds": T, "chosen": np.asarray(chosen), "measured": np.asarray(measured),
                                         "select_scale": s_scale, "measure_scale": m_scale})

    return Plan(
        mechanism="mwem", policy=pol, guarantee=_DP + f"; {T} rounds of report-noisy-max and a Laplace measurement",
        citation=_CITE_MWEM, epsilon_requested=eps, parts=tuple(parts),
        aggregate=f"int64 histogram of shape ({N},)", aggregate_shape=(N,),
        expected_error={"measure_variance": discrete_laplace_variance(m_scale),
                        "note": "data dependent: no analytic error"},
        memory_bytes=int64_bytes(4 * N + 4 * Q.shape[0]), runtime="O(T (q + T |T|))",
        options={"rounds": T, "queries": int(Q.shape[0]), "average": average,
                 "workload": "dyadic" if ranges is None else "given"},
        check=_check_hist(shp), run=run)


# ---------------------------------------------------------------------------
# functional API


def uniform(hist, epsilon, generator: Generator | None = None, **options) -> HistogramRelease:
    """``plan_uniform(hist.shape, epsilon, **options).measure(hist, generator)``."""
    h = np.asarray(hist)
    return plan_uniform(h.shape, epsilon, **options).measure(h, generator)


def hb(hist, epsilon, generator: Generator | None = None, **options):
    """``plan_hb(hist.size, epsilon, **options).measure(hist, generator)``."""
    h = np.asarray(hist)
    return plan_hb(h.size, epsilon, **options).measure(h, generator)


def hb2d(hist, epsilon, generator: Generator | None = None) -> HistogramRelease:
    """``plan_hb2d(hist.shape, epsilon).measure(hist, generator)``."""
    h = np.asarray(hist)
    return plan_hb2d(h.shape, epsilon).measure(h, generator)


def ugrid(hist, epsilon, generator: Generator | None = None, **options) -> HistogramRelease:
    """``plan_ugrid(hist.shape, epsilon, **options).measure(hist, generator)``."""
    h = np.asarray(hist)
    return plan_ugrid(h.shape, epsilon, **options).measure(h, generator)


def agrid(hist, epsilon, generator: Generator | None = None, **options) -> HistogramRelease:
    """``plan_agrid(hist.shape, epsilon, **options).measure(hist, generator)``."""
    h = np.asarray(hist)
    return plan_agrid(h.shape, epsilon, **options).measure(h, generator)


def mwem(hist, epsilon, generator: Generator | None = None, **options) -> HistogramRelease:
    """``plan_mwem(hist.size, epsilon, **options).measure(hist, generator)``."""
    h = np.asarray(hist)
    return plan_mwem(h.size, epsilon, **options).measure(h, generator)
