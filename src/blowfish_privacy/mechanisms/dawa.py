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
    O(n log^2 n) for the costs of the O(n log n) candidate intervals (a
    sliding window over a Fenwick tree of ranks per length), O(n log n)
    for the dynamic program; memory O(n log n) doubles for the scores.
Utility
    Per cell, uniform-expansion bias (the bucket's deviation) plus noise of
    variance Var/|B|^2; ``expected_squared_error`` reports the noise part.
    Step 2 here answers the identity workload: DAWA's greedy hierarchical
    strategy (GreedyH) on the bucket counts is not implemented; for the
    identity workload every query is one cell, a fixed fraction of one
    bucket count, so the bucket level alone carries all the weight.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .. import _core
from .._validation import as_fraction, check_epsilon
from ..noise import Generator, as_generator, discrete_laplace_variance
from .histogram import HistogramRelease, check_histogram, check_ratio, uniform_expansion
from .laplace import calibrate

__all__ = ["DawaPartition", "dawa", "dawa_partition", "partition_cost", "exact_partition"]

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


def _buckets_from_starts(starts: np.ndarray, n: int) -> np.ndarray:
    marks = np.zeros(n, dtype=np.int64)
    marks[starts[1:]] = 1
    return np.cumsum(marks)


def _ranks(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(x, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(x.size, dtype=np.int64)
    return rank.astype(np.int64), np.ascontiguousarray(x[order])


def partition_with_noise(hist: np.ndarray, noise: np.ndarray, penalty: float) -> np.ndarray:
    """Bucket starts of the least-score dyadic partition given the noise of every interval.

    ``noise`` has ``_core.dawa_n_intervals(len(hist))`` entries (lengths 2,
    4, ... in order, by start).  With zero noise this is the exact
    minimum-cost partition into dyadic-length intervals.
    """
    if hist.size and int(hist.max()) * hist.size >= 2**62:
        raise ValueError(
            f"hist is too large for the exact integer comparisons of the partition kernel: "
            f"max count {int(hist.max())} times |T| = {hist.size} must stay below 2**62"
        )
    expected = _core.dawa_n_intervals(hist.size)
    if np.shape(noise) != (expected,):
        raise ValueError(f"noise must have one entry per candidate interval ({expected}), got shape {np.shape(noise)}")
    rank, sorted_vals = _ranks(hist)
    scores = np.ascontiguousarray(noise, dtype=np.float64).copy()
    return _core.dawa_partition(hist, rank, sorted_vals, scores, float(penalty))


def dawa_partition(
    hist, epsilon, generator: Generator | None = None, *, penalty
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
    """
    hist = check_histogram(hist)
    eps = check_epsilon(epsilon)
    pen = float(as_fraction(penalty, "penalty", allow_zero=True))
    gen = as_generator(generator)
    cal = calibrate(NOISY_MIN_SENSITIVITY, eps / 2)
    noise = gen.discrete_laplace(cal.scale, size=_core.dawa_n_intervals(hist.size))  # before the data
    starts = partition_with_noise(hist, noise, pen)
    return DawaPartition(starts, _buckets_from_starts(starts, hist.size), 2 * cal.epsilon_exact, cal.scale, pen)


def partition_cost(hist, starts, penalty: float) -> float:
    """Noise-free cost sum over buckets of (dev(B) + penalty) (O(n), a reference)."""
    x = np.asarray(hist, dtype=np.float64)
    bounds = list(np.asarray(starts).tolist()) + [x.size]
    total = 0.0
    for a, b in zip(bounds[:-1], bounds[1:]):
        seg = x[a:b]
        total += float(np.abs(seg - seg.mean()).sum()) + penalty
    return total


def exact_partition(hist, penalty: float) -> tuple[float, np.ndarray]:
    """O(n^2) dynamic-programming reference: least cost over dyadic-length partitions.

    Costs every candidate interval directly (numpy), for tests and
    benchmarks on small inputs.  Returns (cost, starts).
    """
    x = np.asarray(hist, dtype=np.float64)
    n = x.size
    best = np.full(n + 1, np.inf)
    back = np.zeros(n + 1, dtype=np.int64)
    best[0] = 0.0
    for e in range(1, n + 1):
        L = 1
        while L <= e:
            seg = x[e - L : e]
            c = best[e - L] + float(np.abs(seg - seg.mean()).sum()) + penalty
            if c <= best[e]:
                best[e], back[e] = c, e - L
            L *= 2
    starts = []
    e = n
    while e > 0:
        starts.append(int(back[e]))
        e = int(back[e])
    return float(best[n]), np.array(starts[::-1], dtype=np.int64)


def dawa(hist, epsilon, generator: Generator | None = None, *, ratio=0.25) -> HistogramRelease:
    """DAWA for the identity workload: the data-dependent DP baseline.

    Parameters
    ----------
    hist : array_like of int, shape (|T|,)
    epsilon : float
        Total, as (epsilon, FullDomain)-Blowfish (bounded DP).
    generator : Generator, optional
    ratio : float in (0, 1)
        Share of epsilon for the partition (001 Sec 6 uses 0.25 for DAWA).

    Returns
    -------
    HistogramRelease
        float64 histogram after uniform expansion; ``buckets`` the partition.

    Notes
    -----
    See the module docstring for the privacy argument, runtime and utility.
    """
    hist = check_histogram(hist)
    eps = check_epsilon(epsilon)
    r = check_ratio(ratio)
    gen = as_generator(generator)
    eps1, eps2 = eps * r, eps * (1 - r)
    cal2 = calibrate(2, eps2)
    part = dawa_partition(hist, eps1, gen, penalty=float(cal2.scale))
    counts = np.add.reduceat(hist, part.starts)
    noisy = gen.add_discrete_laplace(counts, cal2.scale)
    est = uniform_expansion(noisy, part.buckets)
    var = discrete_laplace_variance(cal2.scale)
    sizes = np.diff(np.r_[part.starts, hist.size])
    return HistogramRelease(
        histogram=est,
        mechanism="dawa",
        epsilon=float(part.epsilon_exact + cal2.epsilon_exact),
        epsilon_exact=part.epsilon_exact + cal2.epsilon_exact,
        epsilon_parts={"partition": part.epsilon_exact, "counts": cal2.epsilon_exact},
        guarantee="FullDomain",
        secure=gen.is_secure,
        buckets=part.buckets,
        stretch=1,
        expected_squared_error=float(np.sum(var / sizes)),
        params={"ratio": float(r), "n_buckets": part.n_buckets},
    )
