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
2-D (Xiao, Wang, Gehrke, ICDE 2010 Sec 5; TKDE 2011): the tensor product
    of the 1-D transform, one Haar transform along the rows and one along
    the columns of the padded m1 x m2 grid (m_i = 2^{h_i}); every
    coefficient but the total gets discrete Laplace noise of one scale
    S2/epsilon (Privelet's weights W(c) = W_1(c) W_2(c) make the noise of
    the unnormalised coefficients equal), then the inverse transform.  S2
    (:func:`privelet_2d_sensitivity`) is the bounded-DP form of the
    generalised sensitivity (1 + h1)(1 + h2) of the paper.
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
import numpy.typing as npt

from ... import _tree
from ..._validation import check_epsilon
from ...noise import Generator, calibration, discrete_laplace_variance
from .._dp import dp_shape
from ..histogram import HistogramRelease, check_histogram, check_size, shape_check
from ..plan import NoisePart, Plan, int64_bytes
from .._docs import guarantee_of
from .._trees import tree_height
from ..._typing import Real

__all__ = ["plan_privelet", "privelet", "privelet_variance", "privelet_2d_sensitivity"]

_GUARANTEE = ("(epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-differential privacy with n public, "
              "hence (epsilon, G) for every secret graph G")
_CITATION = ("Xiao, Wang, Gehrke, ICDE 2010, Section 3 (1-D Haar wavelet); "
             "a baseline of Section 6 of the data-dependent "
             "Blowfish report")
_CITATION_2D = ("Xiao, Wang, Gehrke, ICDE 2010 Sec 5 / TKDE 2011 (multi-dimensional Privelet: the Haar transform "
                "per dimension); a 2-D baseline of DPBench (Hay et al., SIGMOD 2016)")


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
    return _per_value_variance(h, discrete_laplace_variance(calibration(2 * h, check_epsilon(epsilon)).scale))


def plan_privelet(size: int, epsilon: Real) -> Plan[HistogramRelease]:
    """Plan Privelet on a histogram of ``size`` cells, from public inputs.

    Parameters
    ----------
    size : int >= 1, or (rows, cols)
        |T| (1-D), or the public shape of a 2-D histogram (the tensor
        product of the Haar transform per axis; see the module docstring
        and :func:`privelet_2d_sensitivity`).
    epsilon : float or Fraction, > 0

    Returns
    -------
    Plan
        ``measure(hist, generator)`` takes the int64 histogram of shape
        (|T|,) (or (rows, cols)) and releases a :class:`HistogramRelease`
        (float64, same shape; the padded grid sums to n, so the released
        cells do when no side is padded).

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
    In 2-D, S2 = :func:`privelet_2d_sensitivity` (h1, h2), exact, for
    h_i = ceil(log2 side_i): 2((h1 + 1)(h2 + 1) - 2) when both axes have
    two values or more (the L1 change of the tensor coefficients when one
    record moves; the total is public and unchanged).

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
    if isinstance(size, (tuple, list)) and len(size) == 2:
        return _plan_privelet_2d(size, epsilon)
    if isinstance(size, (tuple, list)) and len(size) == 1:
        size = size[0]
    N = check_size(size)
    eps = check_epsilon(epsilon)
    h = tree_height(N, 2)
    m = 1 << h
    if h == 0:
        scale, spent, sens = Fraction(0), Fraction(0), Fraction(0)
    else:
        cal = calibration(2 * h, eps)
        scale, spent, sens = cal.scale, cal.epsilon_exact, cal.sensitivity
    part = NoisePart("coefficients", sens, True,
                     "moving one record changes the lowest common ancestor's difference by 2 and one difference "
                     "per level below it on each path by 1: 2h (Xiao et al. Sec 3, bounded form)",
                     spent, scale, m - 1)
    per_value = _per_value_variance(h, discrete_laplace_variance(scale)) if h else 0.0

    def run(plan, hist, gen):
        n = int(hist.sum())
        if h == 0:  # one value: its count is the public total
            return HistogramRelease(histogram=hist.astype(np.float64), secure=gen.is_secure, expected_squared_error=0.0,
                                    plan=plan)
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
        return HistogramRelease(histogram=est[:N].copy(), secure=gen.is_secure, expected_squared_error=N * per_value,
                                params={"height": h, "scale": scale}, plan=plan)

    return Plan(
        mechanism="privelet", policy=None, guarantee=_GUARANTEE, citation=_CITATION,
        epsilon_requested=eps, parts=(part,),
        aggregate=f"int64 histogram of shape ({N},), non-negative", aggregate_shape=(N,),
        expected_error={"per_value_variance": per_value, "total_squared_error": N * per_value},
        memory_bytes=int64_bytes(6 * m + 2 * N), runtime="O(|T|): level sums, one draw per internal node, top-down",
        options={"height": h}, model="DP", check=lambda hist: check_histogram(hist, "hist", N), run=run,
    )


@guarantee_of(plan_privelet)
def privelet(hist: npt.ArrayLike, epsilon: Real, generator: Generator | None = None) -> HistogramRelease:
    """Release a histogram with Privelet's Haar-wavelet noise.

    ``plan_privelet(len(hist), epsilon).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, shape (|T|,) or (rows, cols)
    epsilon : float
        As (epsilon, FullDomain)-Blowfish (bounded DP).
    generator : Generator, optional

    Returns
    -------
    HistogramRelease
        float64 estimates (halves of noisy integers), summing to n.
    """
    hist = np.asarray(hist)  # checked once, by the plan's measure
    return plan_privelet(hist.shape if hist.ndim == 2 else hist.size, epsilon).measure(hist, generator)


# ---------------------------------------------------------------------------
# 2-D: the tensor product of the Haar transform (Xiao, Wang, Gehrke Sec 5)


def privelet_2d_sensitivity(h1: int, h2: int) -> int:
    """L1 sensitivity, under moving one record, of 2-D Privelet's unnormalised coefficients.

    The coefficients are C = H1 X H2^T with H_i the unnormalised Haar
    analysis matrix of 2^{h_i} values (a row of ones for the total, then one
    row of +1/-1 per internal node).  A record moving from (a, b) to
    (a', b') changes C by u v^T - u' v'^T, u = H1 e_a, v = H2 e_b.  Let the
    lowest common ancestor of a and a' have l1 internal nodes above it (and
    l2 for b, b').  Rows where u = u' (the total and the l1 nodes above)
    contribute ||v - v'||_1 = 2 (h2 - l2) each; the ancestor's row, where
    u = -u', contributes ||v + v'||_1 = 2 h2; the 2 (h1 - l1 - 1) rows
    below it, where only one of u, u' is non-zero, contribute ||v||_1 =
    1 + h2 each.  The sum, 2(1 + l1)(h2 - l2) + 2 h2 + 2(h1 - l1 - 1)(1 + h2),
    is largest at l1 = l2 = 0: 2((h1 + 1)(h2 + 1) - 2).  A record moving
    within a row (a = a') changes C by u (v - v')^T: at most
    2 h2 (1 + h1), and symmetrically 2 h1 (1 + h2) within a column.  The
    maximum of the three cases is returned; it is attained (the axes have
    more than 2^{h_i - 1} values, so a pair split at the root exists), so
    it is exact.  Bounded DP's total n is public: the (total, total)
    coefficient never changes and is not released.

    Parameters
    ----------
    h1, h2 : int >= 0
        Levels of the two axes (ceil(log2 side)).

    Returns
    -------
    int
        The sensitivity (0 for a single cell).

    Privacy
    -------
    Not a release: calibrates :func:`plan_privelet` in 2-D.

    Sensitivity
    -----------
    This is the sensitivity; ``tests/mechanisms/test_privelet.py`` checks it
    by brute force over every move on small grids.

    Runtime
    -------
    O(1).

    References
    ----------
    .. [1] Xiao, Wang, Gehrke. *Differential Privacy via Wavelet Transforms.* ICDE 2010, Sec 5 (multi-dimensional
        Privelet; generalised sensitivity (1 + h1)(1 + h2) under unbounded DP; here the bounded form).
    """
    h1, h2 = int(h1), int(h2)
    if h1 < 0 or h2 < 0:
        raise ValueError(f"h1 and h2 must be >= 0, got {h1}, {h2}")
    cases = [2 * h2 * (1 + h1), 2 * h1 * (1 + h2)]
    if h1 and h2:
        cases.append(2 * ((h1 + 1) * (h2 + 1) - 2))
    return max(cases)


def _haar_forward(a: np.ndarray, axis: int, h: int) -> np.ndarray:
    """Unnormalised Haar coefficients along ``axis`` (length 2^h): [total, level 0, level 1, ...].

    Level L holds the 2^L differences (left half sum - right half sum) of
    the nodes at depth L, left to right.  Exact in the input's dtype.
    """
    cur = np.moveaxis(a, axis, 0)
    pieces = []
    for _ in range(h):
        left, right = cur[0::2], cur[1::2]
        pieces.append(left - right)
        cur = left + right
    out = np.concatenate([cur] + pieces[::-1], axis=0)
    return np.moveaxis(out, 0, axis)


def _haar_inverse(c: np.ndarray, axis: int, h: int) -> np.ndarray:
    """Inverse of :func:`_haar_forward` (float64): top down, left = (parent + d)/2, right = (parent - d)/2."""
    cc = np.moveaxis(np.asarray(c, dtype=np.float64), axis, 0)
    est = cc[0:1]
    k = 1
    for level in range(h):
        half = 1 << level
        d = cc[k : k + half]
        k += half
        nxt = np.empty((2 * half,) + cc.shape[1:], dtype=np.float64)
        nxt[0::2] = (est + d) / 2.0
        nxt[1::2] = (est - d) / 2.0
        est = nxt
    return np.moveaxis(est, 0, axis)


def _squared_inverse_weights(h: int) -> float:
    """Sum of the squared entries of one row of the 1-D inverse Haar matrix (the total's 4^-h included)."""
    return _per_value_variance(h, 1.0) + 0.25**h


def _plan_privelet_2d(shape, epsilon) -> Plan:
    shp, _ = dp_shape(tuple(shape), dims=2)
    eps = check_epsilon(epsilon)
    R, C = shp
    h1, h2 = tree_height(R, 2), tree_height(C, 2)
    m1, m2 = 1 << h1, 1 << h2
    sens = privelet_2d_sensitivity(h1, h2)
    if sens == 0:
        scale, spent, sens_f = Fraction(0), Fraction(0), Fraction(0)
    else:
        cal = calibration(sens, eps)
        scale, spent, sens_f = cal.scale, cal.epsilon_exact, cal.sensitivity
    count = m1 * m2 - 1
    part = NoisePart("coefficients", sens_f, True,
                     "tensor Haar coefficients, one record moved: at most 2((h1+1)(h2+1)-2) when both axes split, "
                     "2 h2 (1+h1) within a row, 2 h1 (1+h2) within a column; the total n is public "
                     "(Xiao et al. Sec 5, bounded form)", spent, scale, count)
    var_d = discrete_laplace_variance(scale) if sens else 0.0
    per_cell = var_d * (_squared_inverse_weights(h1) * _squared_inverse_weights(h2) - 0.25 ** (h1 + h2))

    def run(plan, hist, gen):
        padded = np.zeros((m1, m2), dtype=np.int64)
        padded[:R, :C] = hist
        coef = _haar_forward(_haar_forward(padded, 1, h2), 0, h1)
        flat = coef.reshape(-1)
        n = int(flat[0])  # the public total
        # one draw per coefficient but the total, the whole vector at once
        noisy = gen.add_discrete_laplace(flat[1:], scale) if count else flat[1:]
        est_coef = np.empty(m1 * m2, dtype=np.float64)
        est_coef[0] = n
        est_coef[1:] = noisy
        est = _haar_inverse(_haar_inverse(est_coef.reshape(m1, m2), 0, h1), 1, h2)[:R, :C]
        return HistogramRelease(histogram=np.ascontiguousarray(est), secure=gen.is_secure,
                                expected_squared_error=R * C * per_cell, params={"heights": (h1, h2), "scale": scale},
                                plan=plan)

    return Plan(
        mechanism="privelet", policy=None, guarantee=_GUARANTEE, citation=_CITATION_2D,
        epsilon_requested=eps, parts=(part,),
        aggregate=f"int64 2-D histogram of shape {shp}, non-negative", aggregate_shape=shp,
        expected_error={"per_value_variance": per_cell, "total_squared_error": R * C * per_cell},
        memory_bytes=int64_bytes(8 * m1 * m2 + 2 * R * C),
        runtime="O(m1 m2): one Haar transform per axis, one draw per coefficient, the inverse transforms",
        options={"heights": (h1, h2)}, model="DP", check=shape_check(shp), run=run,
    )
