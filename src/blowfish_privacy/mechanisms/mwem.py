"""MWEM (Hardt, Ligett, McSherry, NeurIPS 2012) for 1-D range workloads: a DP baseline.

Multiplicative weights over the histogram, guided by the worst answered
range of a public workload, chosen by report-noisy-max with the library's
discrete Laplace noise in place of the exponential mechanism (so no
real-valued sampling reaches a release).  Bounded differential privacy,
i.e. (epsilon, FullDomain)-Blowfish privacy with n public, as every DP
baseline of the DPBench protocol (:mod:`.baselines`, which re-exports
every name here).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .._validation import as_int, check_epsilon
from ..noise import Generator, calibrate, discrete_laplace_variance
from ._baselines_common import _DP, _check_hist, _dp_shape, _release
from ._docs import guarantee_of, not_a_release
from .histogram import HistogramRelease
from .plan import NoisePart, Plan, check_memory, int64_bytes

__all__ = ["MAX_ROUNDS", "dyadic_range_count", "dyadic_ranges", "plan_mwem", "mwem"]

#: Most rounds a plan accepts (each round adds two noise parts and a pass
#: over every measurement so far: the measurement is O(T^2 |T|)).
MAX_ROUNDS = 10_000


_CITE_MWEM = ("Hardt, Ligett, McSherry, 'A simple and practical algorithm for differentially private data release', "
              "NIPS 2012 (MWEM); report-noisy-max: Dwork, Roth 2014 Sec 3.3")


@not_a_release(
    'O(|T| log |T|) (the removal of repeated rows sorts them).',
    'Hay, Rastogi, Miklau, Suciu. *Boosting the Accuracy of Differentially Private Histograms Through Consistency.* PVLDB 3(1), 2010 (the binary tree of ranges).',
    'Hardt, Ligett, McSherry. *A Simple and Practical Algorithm for Differentially Private Data Release.* NeurIPS 2012 (MWEM answers a given workload of queries). ',
)
def dyadic_ranges(size) -> np.ndarray:
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
    measurement so far (the paper's practical variant).  Returns the last
    A (as DPBench's MWEM), or the average of the T estimates
    (``average=True``, the paper's Fig. 1).

    Parameters
    ----------
    size : int >= 1 or a 1-D FullDomain Policy
        The number of values |T| (public).
    epsilon : float or Fraction, > 0
    rounds : int >= 1
        T.
    ranges : int array of shape (q, 2), optional
        The workload (inclusive ranges, public); default
        :func:`dyadic_ranges`.
    average : bool
        Release the average of the T estimates instead of the last.

    Returns
    -------
    Plan
        ``measure(hist, generator)`` takes int64 counts of shape (|T|,) and
        returns a :class:`HistogramRelease` whose ``histogram`` is the
        estimate A (float64, shape (|T|,), summing to n); ``params`` holds
        the chosen ranges and their noisy measurements.

    Raises
    ------
    ValueError, TypeError
        A size < 1, a policy that is not 1-D ``FullDomain`` on an ordinal
        domain without constraints, an epsilon that is not positive and
        finite, rounds outside [1, :data:`MAX_ROUNDS`], ranges not of shape
        (q, 2) inside the domain, an ``average`` that is not a bool, or a
        domain whose measurement needs more memory than a plan may ask for.

    Privacy
    -------
    (epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-differential
    privacy with the number of records n public.  Each of the 2T steps is
    (epsilon / 2T)-DP: the selection is report-noisy-max with discrete
    Laplace noise of scale 2 / eps_s (proof in the Notes of
    :func:`plan_mwem`), the measurement a range count with discrete
    Laplace noise of scale 1 / eps_m (scales rounded up: the epsilon spent
    is at most epsilon).  Each step reads the estimate A, which is computed
    from earlier noisy outputs and n only, so the steps compose adaptively
    (sequential composition): the spend is the sum, at most epsilon.

    Sensitivity
    -----------
    Measurement: 1, exact: a moved record changes a range count by at most
    one (exactly one for a range holding one end of the move).  Selection:
    the integer scores s_i = |round(q_i(A)) - q_i(x)| have sensitivity 1
    in every coordinate (q_i(x) moves by at most one and |c - .| is
    1-Lipschitz), in any directions; the noise is calibrated as for a
    sensitivity of 2 (recorded as 2 x 1, a bound), which the Notes of
    :func:`plan_mwem` show to suffice.

    Runtime
    -------
    O(T (q + T |T|)) for q ranges: per round, the q scores from prefix sums
    and the multiplicative-weights updates with every measurement so far;
    O(|T| log |T|) more for the default workload.

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
    Claim 3.9 with the Laplace tail replaced by the discrete one.)
    ``test_dp_baselines`` checks the claim by exact enumeration on small
    score vectors and shows the factor 2 necessary.

    References
    ----------
    .. [1] Hardt, Ligett, McSherry. *A Simple and Practical Algorithm for Differentially Private Data
        Release.* NeurIPS 2012, Fig. 1 (MWEM) and its practical improvements (every measurement reused in
        each update).
    .. [2] Dwork, Roth. *The Algorithmic Foundations of Differential Privacy.* Foundations and Trends in
        Theoretical Computer Science 9(3-4), 2014, Sec 3.3 (report noisy max, Claim 3.9).
    .. [3] Canonne, Kamath, Steinke. *The Discrete Gaussian for Differential Privacy.* NeurIPS 2020,
        Algorithm 2 (the exact discrete Laplace sampler).
    .. [4] Hay, Machanavajjhala, Miklau, Chen, Zhang. *Principled Evaluation of Differentially Private
        Algorithms using DPBench.* SIGMOD 2016 (MWEM among the 1-D baselines; the last estimate released).
    """
    shp, pol = _dp_shape(size, dims=1)
    N = shp[0]
    eps = check_epsilon(epsilon)
    T = as_int(rounds, "rounds")
    if not 1 <= T <= MAX_ROUNDS:
        raise ValueError(f"rounds must be an integer in [1, {MAX_ROUNDS}], got {rounds!r}")
    if not isinstance(average, bool):
        raise TypeError(f"average must be a bool, got {average!r}")
    # the default workload is listed by the measurement (from the public N); here only counted
    Q = None if ranges is None else _check_ranges(ranges, N)
    nq = dyadic_range_count(N) if Q is None else int(Q.shape[0])
    memory = check_memory(int64_bytes(4 * N + 8 * nq), size=N, parameter="size", mechanism="mwem")
    eps_round = eps / T
    cal_s, cal_m = calibrate(2, eps_round / 2), calibrate(1, eps_round / 2)
    s_scale, m_scale = cal_s.scale, cal_m.scale
    parts = []
    for t in range(T):
        parts.append(NoisePart(f"select_{t + 1}", Fraction(2), False,
                               "report-noisy-max over scores of exact sensitivity 1, noise 2/eps (proof in "
                               "plan_mwem's docstring): recorded as 2 x 1", cal_s.epsilon_exact, s_scale, nq))
        parts.append(NoisePart(f"measure_{t + 1}", 1, True, "bounded DP: a moved record changes a range count by "
                               "at most 1", cal_m.epsilon_exact, m_scale, 1))
    def run(plan, hist, gen):
        W = dyadic_ranges(N) if Q is None else Q  # the default workload is listed only now, from the public N
        lo, hi = W[:, 0], W[:, 1]
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
        memory_bytes=memory, runtime="O(T (q + T |T|))",
        options={"adaptive": True, "rounds": T, "queries": nq, "average": average,
                 "workload": "dyadic" if ranges is None else "given"},
        check=_check_hist(shp), run=run)


@guarantee_of(plan_mwem)
def mwem(hist, epsilon, generator: Generator | None = None, **options) -> HistogramRelease:
    """MWEM for 1-D range workloads, with report-noisy-max over discrete Laplace noise.

    ``plan_mwem(hist.size, epsilon, **options).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, shape (|T|,)
        Exact non-negative counts of the 1-D ordinal domain.
    **options
        ``rounds``, ``ranges``, ``average`` as :func:`plan_mwem`.

    Returns
    -------
    HistogramRelease
        The estimate (float64, shape (|T|,), summing to n).
    """
    h = np.asarray(hist)
    return plan_mwem(h.size, epsilon, **options).measure(h, generator)
