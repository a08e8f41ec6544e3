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

import numpy as np

from .. import _core
from .._validation import check_epsilon
from ..noise import Generator, as_generator, discrete_laplace_variance
from .histogram import HistogramRelease, check_histogram
from .laplace import calibrate

__all__ = ["privelet", "privelet_variance"]


def _height(n: int) -> int:
    h = 0
    while (1 << h) < n:
        h += 1
    return h


def privelet_variance(size: int, epsilon) -> float:
    """Exact per-value variance of :func:`privelet` on ``size`` values."""
    h = _height(int(size))
    if h == 0:
        return 0.0
    var = discrete_laplace_variance(calibrate(2 * h, check_epsilon(epsilon)).scale)
    v = 0.0
    for _ in range(h):
        v = (v + var) / 4.0
    return v


def privelet(hist, epsilon, generator: Generator | None = None) -> HistogramRelease:
    """Release a histogram with Privelet's Haar-wavelet noise.

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
    hist = check_histogram(hist)
    eps = check_epsilon(epsilon)
    gen = as_generator(generator)
    N = hist.size
    h = _height(N)
    n = int(hist.sum())
    if h == 0:  # one value: its count is the public total
        return HistogramRelease(hist.astype(np.float64), "privelet", 0.0, eps * 0, {"coefficients": eps * 0},
                                "FullDomain", gen.is_secure, expected_squared_error=0.0)
    cal = calibrate(2 * h, eps)
    m = 1 << h
    padded = np.zeros(m, dtype=np.int64)
    padded[:N] = hist
    levels = _core.tree_levels(padded, 2, h)  # levels[0] = [n], levels[h] = leaves
    # Haar differences of every internal node, level by level; the sampler
    # draws the whole noise vector before it reads them.
    diffs = np.concatenate([levels[L + 1][0::2] - levels[L + 1][1::2] for L in range(h)])
    noisy = gen.add_discrete_laplace(diffs, cal.scale)
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
        histogram=est[:N].copy(),
        mechanism="privelet",
        epsilon=cal.epsilon,
        epsilon_exact=cal.epsilon_exact,
        epsilon_parts={"coefficients": cal.epsilon_exact},
        guarantee="FullDomain",
        secure=gen.is_secure,
        expected_squared_error=N * privelet_variance(N, eps),
        params={"height": h, "scale": cal.scale},
    )
