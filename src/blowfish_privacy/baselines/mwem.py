"""MWEM (Hardt, Ligett, McSherry, NeurIPS 2012) for range workloads: a DP baseline.

Multiplicative weights over the histogram, guided by the worst answered
query of a public workload (1-D ranges here, rectangles in
:mod:`.mwem_2d`), chosen by report-noisy-max with the library's discrete
Laplace noise in place of the exponential mechanism (so no real-valued
sampling reaches a release), each chosen query measured with discrete
Laplace noise, and after every round many multiplicative-weights passes
over every measurement so far (the paper's practical improvement, as
DPBench's reference MWEM runs it: 10 rounds, half the budget to the
selections, 100 passes).  Bounded differential privacy, i.e.
(epsilon, FullDomain)-Blowfish privacy with n public, as every DP
baseline of the DPBench protocol (:mod:`blowfish_privacy.baselines`,
which exports ``plan_mwem`` and ``mwem``).

The shared core (:func:`plan_boxes`) works on boxes of any dimension:
answers from d-dimensional prefix sums, updates on array slices.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from .._typing import Real
from .._validation import as_int, check_epsilon
from ..noise import Generator, calibration, discrete_laplace_variance
from ..mechanisms._dp import DP, dp_shape, release
from ..mechanisms.histogram import shape_check as check_hist
from ..mechanisms._docs import guarantee_of, not_a_release
from ..mechanisms.histogram import HistogramRelease
from ..mechanisms.plan import NoisePart, Plan, check_memory, int64_bytes
from ..policy._policy import Policy

__all__ = ["MAX_ROUNDS", "MAX_PASSES", "MAX_UPDATES", "dyadic_range_count", "dyadic_ranges", "plan_mwem", "mwem"]

#: Most rounds a plan accepts (each round adds two noise parts and the
#: update passes over every measurement so far: the measurement is
#: O(P T^2 |T|) for P passes).
MAX_ROUNDS = 10_000

#: Most multiplicative-weights passes over the measurements a round accepts.
MAX_PASSES = 10_000

#: Most multiplicative-weights updates a plan accepts in all, P T (T + 1) / 2 (the defaults make 5,500).
MAX_UPDATES = 10**8

#: DPBench's reference MWEM (``mwemND_engine``): rounds, share of epsilon for the selections, passes per round.
DEFAULT_ROUNDS, SELECT_SHARE, DEFAULT_PASSES = 10, Fraction(1, 2), 100

#: Bound on a multiplicative-weights exponent (a guard for tiny n with large noise; inactive otherwise).
_EXP_CAP = 50.0


_CITE_MWEM = ("Hardt, Ligett, McSherry, 'A simple and practical algorithm for differentially private data release', "
              "NIPS 2012 (MWEM); report-noisy-max: Dwork, Roth 2014 Sec 3.3")


@not_a_release(
    'O(|T| log |T|) (the removal of repeated rows sorts them).',
    'Hay, Rastogi, Miklau, Suciu. *Boosting the Accuracy of Differentially Private Histograms Through Consistency.* PVLDB 3(1), 2010 (the binary tree of ranges).',
    'Hardt, Ligett, McSherry. *A Simple and Practical Algorithm for Differentially Private Data Release.* NeurIPS 2012 (MWEM answers a given workload of queries). ',
)
def dyadic_ranges(size: int) -> npt.NDArray[np.int64]:
    """Every distinct node of a binary tree over ``size`` values as an inclusive range, root first.

    MWEM's default workload: a public set of ranges of which every range
    of the domain is a sum of at most 2 log2 |T|.

    Parameters
    ----------
    size : int >= 1
        The number of values |T|.

    Returns
    -------
    numpy.ndarray of int64, shape (q, 2)
        Rows (lo, hi), 0 <= lo <= hi < size, level by level from the root
        (0, size - 1) down to the single values; a short last node that
        repeats on an upper level appears once, so q <= 2 |T| - 1.
    """
    N = as_int(size, "size", minimum=1)
    check_memory(int64_bytes(8 * dyadic_range_count(N)), size=N, parameter="size", mechanism="dyadic_ranges")
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


def dyadic_range_count(size: int) -> int:
    """Rows of :func:`dyadic_ranges` (size) in closed form, O(log size), without listing them.

    Level by level (node width w = 1, 2, 4, ... up to the first w >= size)
    every node but the last is a full range of width w, found on no other
    level; the last node of a level is (((size - 1) // w) w, size - 1), and
    the last nodes of two levels are one row exactly when they start at the
    same value.
    """
    N = as_int(size, "size", minimum=1)
    count, starts, w = 0, set(), 1
    while True:
        count += -(-N // w) - 1
        starts.add(((N - 1) // w) * w)
        if w >= N:
            return count + len(starts)
        w *= 2


def check_boxes(
    boxes: npt.ArrayLike, shape: Sequence[int], name: str,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(lo, hi) int64 arrays of shape (q, d) from rows of inclusive bounds per axis, checked inside ``shape``.

    A row is (lo, hi) in 1-D and (r1, r2, c1, c2) in 2-D: per axis, its
    first and last index.
    """
    d = len(shape)
    r = np.asarray(boxes)
    if r.ndim != 2 or r.shape[1] != 2 * d or r.shape[0] < 1 or r.dtype.kind not in "iu":
        raise ValueError(f"{name} must be an integer array of shape (q, {2 * d}) with q >= 1, got shape {r.shape}"
                         + ("" if r.dtype.kind in "iu" else f" and dtype {r.dtype}"))
    r = r.astype(np.int64)
    lo, hi = r[:, 0::2], r[:, 1::2]
    if (lo < 0).any() or (lo > hi).any() or (hi >= np.asarray(shape, dtype=np.int64)).any():
        axes = " and ".join(f"0 <= lo <= hi < {k}" for k in shape)
        raise ValueError(f"{name} must hold inclusive bounds {axes} on {'each axis' if d > 1 else 'the axis'}")
    return np.ascontiguousarray(lo), np.ascontiguousarray(hi)


def _prefix(x: np.ndarray) -> np.ndarray:
    """The d-dimensional prefix sums of ``x``, with a leading zero on every axis (shape + 1)."""
    P = np.zeros(tuple(k + 1 for k in x.shape), dtype=x.dtype)
    c = x
    for a in range(x.ndim):
        c = np.cumsum(c, axis=a)
    P[(slice(1, None),) * x.ndim] = c
    return P


def _box_sums(P: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Sums of the boxes [lo, hi] (inclusive, rows of shape (q, d)) from prefix sums, by inclusion-exclusion."""
    d = lo.shape[1]
    out = np.zeros(lo.shape[0], dtype=P.dtype)
    for corner in itertools.product((0, 1), repeat=d):
        idx = tuple(hi[:, a] + 1 if c else lo[:, a] for a, c in enumerate(corner))
        if (d - sum(corner)) % 2:
            out -= P[idx]
        else:
            out += P[idx]
    return out


def _mw_passes(A: npt.NDArray[np.float64], views: list[tuple[slice, ...]], measured: list[int], n: int,
               passes: int) -> None:
    """``passes`` multiplicative-weights passes over every (box, measurement), in order, in place.

    Each update is the paper's A <- A * exp(q * (m - q(A)) / (2 n)),
    renormalised to the public total n.  The renormalisation is a scalar
    factor, kept as the running total S of the unnormalised A (so an update
    touches only its box) and applied at the end of each pass.
    """
    S = float(A.sum())
    for _ in range(passes):
        for sl, m in zip(views, measured):
            v = A[sl]
            s = float(v.sum())
            e = (m - s * (n / S)) / (2.0 * n)
            f = math.exp(max(min(e, _EXP_CAP), -_EXP_CAP))
            v *= f
            S += (f - 1.0) * s
            if not 1e-200 < S < 1e200:   # extreme steps: renormalise now (S exact again)
                A *= n / A.sum()
                S = float(n)
        A *= n / A.sum()
        S = float(n)


def plan_boxes(
    shp: tuple[int, ...], pol: Policy | None, eps: Fraction, *, rounds: int, passes: int,
    boxes: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]
    | Callable[[], tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]],
    nq: int, average: bool, mechanism: str, workload: str, aggregate_words: int,
) -> Plan[HistogramRelease]:
    """The MWEM plan over a workload of boxes (1-D ranges, 2-D rectangles); see :func:`plan_mwem`.

    ``boxes`` is the checked (lo, hi) pair or a function of no argument
    that lists it from public inputs during the measurement (the default
    workloads); ``nq`` its number of rows.
    """
    T = as_int(rounds, "rounds")
    if not 1 <= T <= MAX_ROUNDS:
        raise ValueError(f"rounds must be an integer in [1, {MAX_ROUNDS}], got {rounds!r}")
    P = as_int(passes, "passes")
    if not 1 <= P <= MAX_PASSES:
        raise ValueError(f"passes must be an integer in [1, {MAX_PASSES}], got {passes!r}")
    if P * T * (T + 1) // 2 > MAX_UPDATES:
        raise ValueError(f"rounds and passes: {T} rounds of {P} passes make {P * T * (T + 1) // 2:,} "
                         f"multiplicative-weights updates, more than {MAX_UPDATES:,}; use fewer rounds or passes")
    if not isinstance(average, bool):
        raise TypeError(f"average must be a bool, got {average!r}")
    cells = math.prod(shp)
    memory = check_memory(int64_bytes(aggregate_words + 2 * len(shp) * nq + 4 * nq + 4 * T),
                          size=cells, parameter="size" if len(shp) == 1 else "shape", mechanism=mechanism)
    eps_s = eps * SELECT_SHARE / T
    eps_m = (eps - eps * SELECT_SHARE) / T
    cal_s, cal_m = calibration(2, eps_s), calibration(1, eps_m)
    s_scale, m_scale = cal_s.scale, cal_m.scale
    what = "range" if len(shp) == 1 else "rectangle"
    parts = []
    for t in range(T):
        parts.append(NoisePart(f"select_{t + 1}", Fraction(2), False,
                               f"report-noisy-max over scores |round(q(A)) - q(x)| of exact sensitivity 1 ({what} "
                               "counts under bounded DP), noise 2/eps (proof in plan_mwem's docstring): recorded "
                               "as 2 x 1", cal_s.epsilon_exact, s_scale, nq))
        parts.append(NoisePart(f"measure_{t + 1}", 1, True, f"bounded DP: a moved record changes a {what} count by "
                               "at most 1", cal_m.epsilon_exact, m_scale, 1))
    lowest = np.iinfo(np.int64).min

    def run(plan, hist, gen):
        lo, hi = boxes() if callable(boxes) else boxes
        d = lo.shape[1]
        n = int(hist.sum())                                  # public (bounded DP)
        truth = _box_sums(_prefix(hist.astype(np.int64)), lo, hi)
        A = np.full(hist.shape, n / cells, dtype=np.float64)
        acc = np.zeros(hist.shape, dtype=np.float64) if average else None
        open_ = np.ones(lo.shape[0], dtype=bool)             # not measured yet (public: from earlier choices)
        chosen, measured, views = [], [], []
        for _ in range(T):
            qa = _box_sums(_prefix(A), lo, hi)
            score = np.abs(np.rint(qa).astype(np.int64) - truth)
            noisy = gen.add_discrete_laplace(score, s_scale)
            if not open_.any():                              # every query measured: all are candidates again
                open_[:] = True
            i = int(np.argmax(np.where(open_, noisy, lowest)))   # first maximum: lowest index
            open_[i] = False
            m = int(gen.add_discrete_laplace(truth[i:i + 1], m_scale)[0])
            chosen.append(i)
            measured.append(m)
            views.append(tuple(slice(int(lo[i, a]), int(hi[i, a]) + 1) for a in range(d)))
            if n > 0:                                        # n is public
                _mw_passes(A, views, measured, n, P)
            if average:
                acc += A
        est = acc / T if average else A
        return release(plan, est, gen, {"rounds": T, "passes": P, "chosen": np.asarray(chosen),
                                         "measured": np.asarray(measured, dtype=np.int64),
                                         "select_scale": s_scale, "measure_scale": m_scale})

    return Plan(
        mechanism=mechanism, policy=pol,
        guarantee=DP + f"; {T} rounds of report-noisy-max and a Laplace measurement",
        citation=_CITE_MWEM, epsilon_requested=eps, parts=tuple(parts),
        aggregate=f"int64 histogram of shape {shp if len(shp) > 1 else '(%d,)' % shp[0]}", aggregate_shape=shp,
        expected_error={"measure_variance": discrete_laplace_variance(m_scale),
                        "note": "data dependent: no analytic error"},
        memory_bytes=memory, runtime="O(T (q + |T|) + P T^2 |T|)",
        options={"adaptive": True, "rounds": T, "passes": P, "queries": nq, "average": average,
                 "workload": workload},
        model="DP", check=check_hist(shp), run=run)


def plan_mwem(
    size: int | Policy, epsilon: Real, *, rounds: int = DEFAULT_ROUNDS, ranges: npt.ArrayLike | None = None,
    passes: int = DEFAULT_PASSES, average: bool = False,
) -> Plan[HistogramRelease]:
    """Plan MWEM (Hardt, Ligett, McSherry 2012) for a workload of 1-D range queries.

    T = ``rounds`` rounds, each with epsilon / T: half to select the worst
    answered range of the (public) workload by report-noisy-max, half to
    measure it with discrete Laplace noise; a measured range is no
    candidate again until every range has been measured.  After each round,
    ``passes`` multiplicative-weights passes over every measurement so far
    update the estimate A (total n, public; uniform at the start).  Returns
    the last A (as DPBench's MWEM), or the average of the T estimates
    (``average=True``, the paper's Fig. 1).  The defaults are DPBench's
    reference MWEM (``mwemND_engine``: 10 rounds, half of epsilon to the
    selections, 100 passes); give the workload to be answered as
    ``ranges`` (DPBench does): without it MWEM chooses among the dyadic
    ranges (:func:`dyadic_ranges`), a weaker variant kept for a
    workload-free use.

    Parameters
    ----------
    size : int >= 1 or a 1-D FullDomain Policy
        The number of values |T| (public).
    epsilon : float or Fraction, > 0
    rounds : int >= 1
        T.
    ranges : int array of shape (q, 2), optional
        The workload (inclusive ranges, public): MWEM's query set; default
        :func:`dyadic_ranges`.
    passes : int >= 1
        Multiplicative-weights passes over all measurements after each
        round (1: the paper's basic update with every measurement once).
    average : bool
        Release the average of the T estimates instead of the last.

    Returns
    -------
    Plan
        ``measure(hist, generator)`` takes int64 counts of shape (|T|,) and
        returns a :class:`HistogramRelease` whose ``histogram`` is the
        estimate A (float64, shape (|T|,), summing to n); ``params`` holds
        the chosen ranges (row indices) and their noisy measurements.

    Raises
    ------
    ValueError, TypeError
        A size < 1, a policy that is not 1-D ``FullDomain`` on an ordinal
        domain without constraints, an epsilon that is not positive and
        finite, rounds outside [1, :data:`MAX_ROUNDS`], passes outside
        [1, :data:`MAX_PASSES`], more than :data:`MAX_UPDATES` updates in
        all (P T (T + 1) / 2), ranges not of shape (q, 2) inside the
        domain, an ``average`` that is not a bool, or a domain whose
        measurement needs more memory than a plan may ask for.

    Privacy
    -------
    (epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-differential
    privacy with the number of records n public.  Round t spends
    eps_s = epsilon / (2T) on the selection, report-noisy-max with discrete
    Laplace noise of scale 2 / eps_s (proof in the Notes), and
    eps_m = epsilon / (2T) on the measurement, a range count with discrete
    Laplace noise of scale 1 / eps_m (scales rounded up: the epsilon spent
    is at most epsilon).  Each step reads the estimate A and the set of
    measured ranges, which are computed from earlier noisy outputs and n
    only, so the 2T steps compose adaptively (sequential composition): the
    spend is T (eps_s + eps_m) <= epsilon.  The update passes are
    post-processing.

    Sensitivity
    -----------
    Measurement: 1, exact: a record moved from u to v changes the count of
    a range R by 1_R(v) - 1_R(u), in {-1, 0, 1} (exactly one for a range
    holding one end of the move).  Selection: the integer scores
    s_i = |round(q_i(A)) - q_i(x)| have sensitivity 1 in every coordinate
    (q_i(x) moves by at most one, round(q_i(A)) is public and |c - .| is
    1-Lipschitz), in any directions; the noise is calibrated as for a
    sensitivity of 2 (recorded as 2 x 1, a bound), which the Notes show
    to suffice (the factor 2 of the exponential mechanism's exp(eps u / 2 Delta)
    for scores that are not monotone).

    Runtime
    -------
    O(T (q + |T|) + P T^2 |T|) for q ranges and P passes: per round, the q
    scores from prefix sums and P passes over the t measurements so far,
    each update touching its range only (the renormalisation to n is a
    scalar); O(|T| log |T|) more for the default workload.

    Notes
    -----
    Claim: report-noisy-max (ties to the lowest index) over the scores
    above with discrete Laplace noise of scale b = 2/eps_s is eps_s-DP.
    Fix the noise r_j of every j != i and let r* be the smallest integer
    with which i wins on x (the winning set of r_i is an upward-closed set
    of integers).  On a neighbour x', s_i' >= s_i - 1 and s_j' <= s_j + 1,
    so with r_i >= r* + 2, s_i' + r_i >= s_i + r* + 1, which beats (or ties
    with a higher index) every s_j + r_j + 1 >= s_j' + r_j: i wins on x'.
    Hence P[i | x', r_-i] >= P[Z >= r* + 2] and P[i | x, r_-i] = P[Z >= r*].
    For the discrete Laplace with P(z) proportional to exp(-|z|/b),
    P(z + 2) >= exp(-2/b) P(z) for every integer z (|z + 2| <= |z| + 2),
    so summing over z >= r*, P[Z >= r* + 2] >= exp(-2/b) P[Z >= r*].  With
    b = 2/eps_s: P[i | x'] >= exp(-eps_s) P[i | x] after averaging over
    r_-i, for every i and both directions.  (The proof of Dwork, Roth
    Claim 3.9 with the Laplace tail replaced by the discrete one.)  The
    measured ranges are left out of the argmax (a public restriction of
    the candidates: the same argument over the rest).
    ``test_dp_baselines`` checks the claim by exact enumeration on small
    score vectors and shows the factor 2 necessary.

    References
    ----------
    .. [1] Hardt, Ligett, McSherry. *A Simple and Practical Algorithm for Differentially Private Data
        Release.* NeurIPS 2012, Fig. 1 (MWEM) and its practical improvements (every measurement reused in
        repeated multiplicative-weights updates).
    .. [2] Dwork, Roth. *The Algorithmic Foundations of Differential Privacy.* Foundations and Trends in
        Theoretical Computer Science 9(3-4), 2014, Sec 3.3 (report noisy max, Claim 3.9).
    .. [3] Canonne, Kamath, Steinke. *The Discrete Gaussian for Differential Privacy.* NeurIPS 2020,
        Algorithm 2 (the exact discrete Laplace sampler).
    .. [4] Hay, Machanavajjhala, Miklau, Chen, Zhang. *Principled Evaluation of Differentially Private
        Algorithms using DPBench.* SIGMOD 2016 (MWEM among the 1-D and 2-D baselines, with the workload as
        its query set, 10 rounds and 100 update passes; the last estimate released).
    """
    shp, pol = dp_shape(size, dims=1)
    N = shp[0]
    eps = check_epsilon(epsilon)
    boxes: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | Callable[[], tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]]
    if ranges is None:
        nq = dyadic_range_count(N)   # the default workload is listed by the measurement (from the public N)

        def dyadic() -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
            W = dyadic_ranges(N)
            return np.ascontiguousarray(W[:, :1]), np.ascontiguousarray(W[:, 1:])
        boxes = dyadic
    else:
        boxes = check_boxes(ranges, (N,), "ranges")
        nq = int(boxes[0].shape[0])
    return plan_boxes(shp, pol, eps, rounds=rounds, passes=passes, boxes=boxes, nq=nq, average=average,
                       mechanism="mwem", workload="dyadic" if ranges is None else "given",
                       aggregate_words=4 * N)


@guarantee_of(plan_mwem)
def mwem(
    hist: npt.ArrayLike, epsilon: Real, generator: Generator | None = None, *, rounds: int = DEFAULT_ROUNDS,
    ranges: npt.ArrayLike | None = None, passes: int = DEFAULT_PASSES, average: bool = False,
) -> HistogramRelease:
    """MWEM for 1-D range workloads, with report-noisy-max over discrete Laplace noise.

    ``plan_mwem(hist.size, epsilon, ...).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, shape (|T|,)
        Exact non-negative counts of the 1-D ordinal domain.
    epsilon : float or Fraction, > 0
    generator : Generator, optional
    rounds, ranges, passes, average
        As :func:`plan_mwem`.

    Returns
    -------
    HistogramRelease
        The estimate (float64, shape (|T|,), summing to n).
    """
    h = np.asarray(hist)
    return plan_mwem(h.size, epsilon, rounds=rounds, ranges=ranges, passes=passes,
                     average=average).measure(h, generator)
