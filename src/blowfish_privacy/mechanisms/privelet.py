"""Privelet (Xiao, Wang, Gehrke, ICDE 2010): Haar wavelet noise, a DP baseline.

The histogram is padded with zeros to m = 2^h values.  Every internal node
of the binary tree over the padded domain releases the difference
d = (sum of its left half) - (sum of its right half) with discrete Laplace
noise of scale 2h/epsilon; the total n is public.  Reconstruction from the
root down: left = (parent + d)/2, right = (parent - d)/2.

In Privelet's normalised form the Haar coefficient of a node with 2s leaves
is c = d / (2s) and gets Laplace noise of scale lambda / W(c) with weight
W(c) = 2s: that is noise of scale lambda on every d, the form used here.

Privacy guarantee
    (epsilon, FullDomain)-Blowfish (bounded DP, n public), hence
    (epsilon, G) for every G.  Moving one record from value a to value b
    leaves every node above their lowest common ancestor unchanged, changes
    the LCA's d by 2 and, on each of the two paths below it, one d per level
    by 1: the L1 change of the d vector is at most 2h, the sensitivity used.
Citation
    Xiao, Wang, Gehrke, "Differential Privacy via Wavelet Transforms", ICDE
    2010, Sec 3 (1-D Haar, generalised sensitivity 1 + log2 m under
    unbounded DP; here the bounded-DP form with a public total); a baseline
    of 001 (via Haney et al. 2015).
Runtime
    O(|T|): level sums and the top-down reconstruction are vectorised.
Utility
    Unbiased; every value has the same variance V_h where V_0 = 0 and
    V_k = (V_{k-1} + Var(d)) / 4, Var(d) the discrete Laplace variance of
    scale 2h/epsilon (so V_h -> Var(d)/3).  ``expected_squared_error`` is
    |T| V_h.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .. import _tree
from .._validation import check_epsilon
from ..noise import Generator, calibrate, discrete_laplace_variance
from .histogram import HistogramRelease, check_histogram, check_size
from .plan import NoisePart, Plan, int64_bytes
from ._docs import guarantee_of
from ._trees import tree_height

__all__ = ["plan_privelet", "privelet", "privelet_variance"]

_GUARANTEE = ("(epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-differential privacy with n public, "
              "hence (epsilon, G) for every secret graph G")
_CITATION = "Xiao, Wang, Gehrke, ICDE 2010 Sec 3 (1-D Haar wavelet); a baseline of 001 Sec 6"


def _per_value_variance(h: int, var_d: float) -> float:
    v = 0.0
    for _ in range(h):
        v = (v + var_d) / 4.0
    return v


def privelet_variance(size: int, epsilon) -> float:
    """Exact per-value variance of :func:`privelet` on ``size`` values."""
    h = tree_height(check_size(size), 2)
    if h == 0:
        return 0.0
    return _per_value_variance(h, discrete_laplace_variance(calibrate(2 * h, check_epsilon(epsilon)).scale))


def plan_privelet(size, epsilon) -> Plan:
    """Plan Privelet on a histogram of ``size`` cells, from public inputs.

    Parameters
    ----------
    size : int >= 1
        |T|.
    epsilon : float or Fraction, > 0

    Returns
    -------
    Plan

    Returns
    -------
    Plan
        ``measure(hist, generator)`` takes the int64 histogram of shape
        (|T|,) and releases a :class:`HistogramRelease` (float64, summing
        to n).

    Privacy
    -------
    (epsilon, FullDomain)-Blowfish (bounded epsilon-DP, n public), hence
    (epsilon, G) for every G: the Haar differences of the 2^h - 1
    internal nodes have L1 sensitivity 2h under moving one record, and
    each gets discrete Laplace noise of scale 2h/epsilon (000 Thm 5.1).
    One cell (h = 0) releases only the public total and spends nothing.

    Sensitivity
    -----------
    2h, exact, for h = ceil(log2 |T|) levels: moving one record changes the
    d of its values' lowest common ancestor by 2 and one d per level below it
    on each of the two paths by 1 (module docstring).

    Runtime
    -------
    O(|T|): level sums and the top-down reconstruction, vectorised.

    References
    ----------
    .. [1] Xiao, Wang, Gehrke. *Differential Privacy via Wavelet Transforms.* ICDE 2010 (Privelet), Sec 3 (here
        the bounded-DP form with a public total).
    .. [2] He, Machanavajjhala, Ding. *Blowfish Privacy: Tuning Privacy-Utility Trade-offs using Policies.*
        SIGMOD 2014 (paper 000), Thm 5.1.
    .. [3] Haney, Machanavajjhala, Ding. *Design of Policy-Aware Differentially Private Algorithms.* PVLDB 9(4),
        2015 (transformational equivalence) (a baseline of paper 001).
    """
    N = check_size(size)
    eps = check_epsilon(epsilon)
    h = tree_height(N, 2)
    m = 1 << h
    if h == 0:
        scale, spent, sens = Fraction(0), Fraction(0), Fraction(0)
    else:
        cal = calibrate(2 * h, eps)
        scale, spent, sens = cal.scale, cal.epsilon_exact, cal.sensitivity
    part = NoisePart("coefficients", sens, True,
                     "moving one record changes the lowest common ancestor's difference by 2 and one difference "
                     "per level below it on each path by 1: 2h (Xiao et al. Sec 3, bounded form)",
                     spent, scale, m - 1)
    per_value = _per_value_variance(h, discrete_laplace_variance(scale)) if h else 0.0

    def run(plan, hist, gen):
        n = int(hist.sum())
        if h == 0:  # one value: its count is the public total
            return HistogramRelease(hist.astype(np.float64), "privelet", 0.0, spent, {"coefficients": spent},
                                    "FullDomain", gen.is_secure, expected_squared_error=0.0, plan=plan)
        padded = np.zeros(m, dtype=np.int64)
        padded[:N] = hist
        levels = _tree.tree_levels(padded, 2, h)  # levels[0] = [n], levels[h] = leaves
        # Haar differences of every internal node, level by level; the sampler
        # draws the whole noise vector before it reads them.
        diffs = np.concatenate([levels[L + 1][0::2] - levels[L + 1][1::2] for L in range(h)])
        noisy = gen.add_discrete_laplace(diffs, scale)
        est = np.array([float(n)])
        k = 0
        for level in range(h):
            half = levels[level + 1].size // 2
            d = noisy[k : k + half]
            k += half
            nxt = np.empty(2 * half, dtype=np.float64)
            nxt[0::2] = (est + d) / 2.0
            nxt[1::2] = (est - d) / 2.0
            est = nxt
        return HistogramRelease(
            histogram=est[:N].copy(), mechanism="privelet", epsilon=float(spent), epsilon_exact=spent,
            epsilon_parts={"coefficients": spent}, guarantee="FullDomain", secure=gen.is_secure,
            expected_squared_error=N * per_value, params={"height": h, "scale": scale}, plan=plan)

    return Plan(
        mechanism="privelet", policy=None, guarantee=_GUARANTEE, citation=_CITATION,
        epsilon_requested=eps, parts=(part,),
        aggregate=f"int64 histogram of shape ({N},), non-negative", aggregate_shape=(N,),
        expected_error={"per_value_variance": per_value, "total_squared_error": N * per_value},
        memory_bytes=int64_bytes(6 * m + 2 * N), runtime="O(|T|): level sums, one draw per internal node, top-down",
        options={"height": h}, check=lambda hist: check_histogram(hist, "hist", N), run=run,
    )


@guarantee_of(plan_privelet)
def privelet(hist, epsilon, generator: Generator | None = None) -> HistogramRelease:
    """Release a histogram with Privelet's Haar-wavelet noise.

    ``plan_privelet(len(hist), epsilon).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, shape (|T|,)
    epsilon : float
        As (epsilon, FullDomain)-Blowfish (bounded DP).
    generator : Generator, optional

    Returns
    -------
    HistogramRelease
        float64 estimates (halves of noisy integers), summing to n.
    """
    hist = np.asarray(hist)  # checked once, by the plan's measure
    return plan_privelet(hist.size, epsilon).measure(hist, generator)
