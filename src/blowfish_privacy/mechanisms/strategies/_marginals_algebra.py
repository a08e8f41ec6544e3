"""The eigen-structure of HDMM's marginals template: weights, traces and the least-squares error.

A marginals strategy ``A = stack over S of theta_S M_S`` is known by its
``2^d`` weights (a vector indexed by bit mask, axis i <-> bit i).  With
``P1_i = J / n_i`` and ``Pp_i = I - P1_i``, the projectors ``P_T = kron_i
(Pp_i if i in T else P1_i)`` split the histogram space and

    A^T A = sum_T lambda_T P_T,  lambda_T = sum_{S superset of T} theta_S^2 prod_{i not in S} n_i,

so the error of least squares on a workload of Gram ``G`` is
``tr(G (A^T A)^+) = sum_T g_T / lambda_T`` with ``g_T = tr(G P_T)``
(:func:`eigen_traces`, :func:`marginals_error`; McKenna, Miklau, Hay,
Machanavajjhala, PVLDB 11(10) 2018, Sec 5.3).  Components the public
inputs fix (the total under Blowfish neighbours, the marginal on the axes
no edge changes) are left out of the error.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ...errors import ParameterError
from ...workloads import Explicit, Identity, Kronecker, Marginals, Stack, Total, Workload

__all__ = [
    "MAX_AXES",
    "as_workload",
    "axes_mask",
    "check_shape",
    "eigen_traces",
    "eigenvalues",
    "error_terms",
    "marginals_error",
    "mask_axes",
    "maximal_sets",
    "needed",
    "outside_products",
    "projector_traces",
    "public_sets",
    "subset_sum",
    "superset_sum",
    "traces",
    "weights_dict",
    "weights_vector",
]

#: Most axes a marginals strategy handles (2^d weights, up to C(12, 6) = 924 edge patterns).
MAX_AXES = 12


# ---------------------------------------------------------------------------
# subsets as bit masks: axis i <-> bit i


def mask_axes(mask: int, d: int) -> tuple[int, ...]:
    return tuple(i for i in range(d) if mask >> i & 1)


def axes_mask(axes) -> int:
    return sum(1 << int(a) for a in axes)


def _popcount_table(d: int) -> np.ndarray:
    return np.array([bin(m).count("1") for m in range(1 << d)], dtype=np.int64)


def superset_sum(f: np.ndarray, d: int) -> np.ndarray:
    """out[T] = sum over S superset of T of f[S] (zeta transform), O(d 2^d)."""
    out = np.array(f, dtype=np.float64, copy=True)
    idx = np.arange(out.shape[0])
    for i in range(d):
        low = (idx >> i & 1) == 0
        out[low] += out[idx[low] | (1 << i)]
    return out


def subset_sum(f: np.ndarray, d: int) -> np.ndarray:
    """out[S] = sum over T subset of S of f[T], O(d 2^d)."""
    out = np.array(f, dtype=np.float64, copy=True)
    idx = np.arange(out.shape[0])
    for i in range(d):
        high = (idx >> i & 1) == 1
        out[high] += out[idx[high] ^ (1 << i)]
    return out


def maximal_sets(patterns) -> list[int]:
    """The masks of ``patterns`` that are no subset of another, sorted."""
    ps = sorted(set(int(p) for p in patterns), key=lambda p: -bin(p).count("1"))
    out: list[int] = []
    for p in ps:
        if not any(p & q == p for q in out):
            out.append(p)
    return sorted(out)


def outside_products(shape: tuple[int, ...]) -> np.ndarray:
    """c[S] = prod over i not in S of n_i (the eigenvalue of M_S^T M_S), float64."""
    d = len(shape)
    c = np.ones(1 << d)
    for m in range(1 << d):
        for i in range(d):
            if not m >> i & 1:
                c[m] *= shape[i]
    return c


def projector_traces(shape: tuple[int, ...]) -> np.ndarray:
    """tr(P_T) = prod over i in T of (n_i - 1)."""
    d = len(shape)
    t = np.ones(1 << d)
    for m in range(1 << d):
        for i in range(d):
            if m >> i & 1:
                t[m] *= shape[i] - 1
    return t


def eigenvalues(theta: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """lambda_T = sum over S superset of T of theta_S^2 prod_{i not in S} n_i."""
    return superset_sum(theta * theta * outside_products(shape), len(shape))


# ---------------------------------------------------------------------------
# inputs


def check_shape(shape, name: str = "shape") -> tuple[int, ...]:
    try:
        shp = tuple(int(n) for n in shape)
    except (TypeError, ValueError):
        raise ParameterError(name, f"{name} must be a tuple of axis lengths >= 1, got {shape!r}") from None
    if not shp or any(n < 1 for n in shp) or any(int(n) != n for n in shape):
        raise ParameterError(name, f"{name} must be a non-empty tuple of axis lengths >= 1, got {shape!r}")
    if len(shp) > MAX_AXES:
        raise ParameterError(name, f"{name} has {len(shp)} axes: the marginals template handles at most "
                                   f"{MAX_AXES} (2^d weights), got shape {shp}")
    return shp


def weights_vector(weights, shape: tuple[int, ...], name: str = "weights") -> np.ndarray:
    """A dict {sorted tuple of distinct axes: weight >= 0} as a float64 vector indexed by bit mask."""
    d = len(shape)
    if isinstance(weights, dict):
        items = weights
    else:
        raise TypeError(f"{name} must be a dict {{sorted tuple of axes: weight}}, e.g. {{(0, 1): 1.0}}, "
                        f"got {type(weights).__name__}")
    theta = np.zeros(1 << d)
    for key, w in items.items():
        if (not isinstance(key, tuple)
                or any(isinstance(a, bool) or not isinstance(a, (numbers.Integral, np.integer)) for a in key)):
            raise ParameterError(name, f"{name}: key {key!r} must be a tuple of axis numbers (e.g. (0, 2))")
        if any(not 0 <= a < d for a in key) or len(set(key)) != len(key) or list(key) != sorted(key):
            raise ParameterError(name, f"{name}: key {key!r} must be a sorted tuple of distinct axes in "
                                       f"0 .. {d - 1} (domain of shape {shape})")
        if isinstance(w, bool) or not isinstance(w, (numbers.Real, np.integer, np.floating)):
            raise TypeError(f"{name}[{key!r}] must be a real number >= 0, got {w!r}")
        w = float(w)
        if not math.isfinite(w) or w < 0:
            raise ParameterError(name, f"{name}[{key!r}] must be finite and >= 0, got {w!r}")
        theta[axes_mask(key)] = w
    if not (theta > 0).any():
        raise ParameterError(name, f"{name}: at least one weight must be positive, got {weights!r}")
    return theta


def weights_dict(theta: np.ndarray, d: int) -> dict:
    return {mask_axes(m, d): float(theta[m]) for m in range(1 << d) if theta[m] > 0}


# ---------------------------------------------------------------------------
# g_T = tr(G P_T)


def _traces_from_gram(G: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """tr(G P_T) for every T, contracting one pair of axes (row, column) at a time: O(N^2)."""
    d = len(shape)
    N = math.prod(shape)
    level = {0: G.reshape(N, N)}  # bits of the axes done so far -> the (R, R) remaining matrix
    rest = N
    for i, n in enumerate(shape):
        rest //= n
        nxt = {}
        for bits, X in level.items():
            X4 = X.reshape(n, rest, n, rest)
            s = X4.sum(axis=(0, 2)) / n  # tr over axis i of X P1_i
            t = np.einsum("arab->rb", X4)  # tr over axis i of X
            nxt[bits] = s
            nxt[bits | 1 << i] = t - s  # tr of X Pp_i
        level = nxt
    out = np.zeros(1 << d)
    for bits, X in level.items():
        out[bits] = float(X.reshape(-1)[0])
    return out


def _traces_from_rows(W: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """tr(W^T W P_T) = sum over rows w of ||P_T w||^2, splitting each axis into mean and deviation."""
    d = len(shape)
    q = W.shape[0]
    out = np.zeros(1 << d)

    def rec(X, i, bits, mult):
        if i == d:
            out[bits] += mult * float(np.sum(X * X))
            return
        m = X.mean(axis=i + 1, keepdims=True)
        rec(m, i + 1, bits, mult * shape[i])  # ||P1 w||^2 = n_i ||mean||^2
        rec(X - m, i + 1, bits | 1 << i, mult)

    rec(W.reshape(q, *shape), 0, 0, 1.0)
    return out


def _kron_combine(parts: list[np.ndarray]) -> np.ndarray:
    """g of a Kronecker product: the factors' traces multiplied, factor k's bits above factor k-1's."""
    out = np.ones(1)
    for g in parts:
        out = np.outer(g, out).reshape(-1)
    return out


def traces(w, shape: tuple[int, ...]) -> np.ndarray:
    if isinstance(w, Identity):
        n = shape[0]
        return np.array([1.0, n - 1.0])
    if isinstance(w, Total):
        return np.array([float(shape[0]), 0.0])
    if isinstance(w, Marginals):
        d = len(shape)
        c = outside_products(shape)
        tp = projector_traces(shape)
        idx = np.arange(1 << d)
        counts = np.zeros(1 << d)
        for axes in w.axes_list:
            counts[axes_mask(axes)] += 1.0  # a repeated marginal counts twice
        # marginal K: per axis i in K, tr(I P1) = 1 and tr(I Pp) = n_i - 1; outside K, tr(J P1) = n_i and
        # tr(J Pp) = 0: g_T = tr(P_T) prod_{i not in K} n_i for T a subset of K, else 0
        out = np.zeros(1 << d)
        for K in np.flatnonzero(counts):
            sub = (idx & ~int(K)) == 0
            out[sub] += counts[K] * c[K] * tp[sub]
        return out
    if isinstance(w, Kronecker):
        parts, start = [], 0
        for f in w.factors():
            k = len(f.shape)
            parts.append(traces(f, shape[start:start + k]))
            start += k
        return _kron_combine(parts)
    if isinstance(w, Stack):
        return sum(traces(p, shape) for p in w.parts())
    if len(shape) == 1:  # tr(G P1) = ||W 1||^2 / n, tr(G) = ||W||_F^2: no Gram needed
        ones = w.answer(np.ones(shape[0]))
        s = float(ones @ ones) / shape[0]
        return np.array([s, float(w.frobenius_squared()) - s])
    N = math.prod(shape)
    if w.n_queries < N:
        return _traces_from_rows(w.matrix(), shape)
    return _traces_from_gram(w.gram(), shape)


def eigen_traces(workload, shape=None) -> np.ndarray:
    """``g_T = tr(W^T W P_T)`` for every subset ``T`` of the axes, indexed by bit mask (axis i <-> bit i).

    Closed forms for :class:`~blowfish_privacy.workloads.Marginals`,
    :class:`~blowfish_privacy.workloads.Identity`,
    :class:`~blowfish_privacy.workloads.Total` and 1-D workloads
    (``tr(G P1) = ||W 1||^2 / n``, ``tr(G) = ||W||_F^2``); products over
    the factors of a :class:`~blowfish_privacy.workloads.Kronecker` workload
    (the trace of a Kronecker product factorises) and sums over the parts
    of a :class:`~blowfish_privacy.workloads.Stack`; otherwise from the
    dense query matrix or Gram matrix (whichever is smaller), projecting
    axis by axis (means and deviations), never through an ``N x N``
    projector.

    Parameters
    ----------
    workload : Workload or array_like (q, N)
    shape : tuple of int, optional
        The domain shape; required for an array, checked against a
        workload's ``shape`` when both are given.

    Returns
    -------
    numpy.ndarray of float64, shape (2^d,)
        ``g[mask]`` for ``T`` the axes of the bits of ``mask``; the sum is
        ``||W||_F^2``.

    Raises
    ------
    ParameterError, TypeError
        A shape that does not match, more than 12 axes.
    WorkloadTooLargeError
        When a dense matrix is needed and does not fit.

    Privacy
    -------
    None: nothing is released (public inputs only).

    Sensitivity
    -----------
    None used.

    Runtime
    -------
    O(2^d * number of marginals) for marginals, O(sum of the factors') for
    Kronecker products, O(min(q, N) N) otherwise.

    References
    ----------
    .. [1] McKenna, Miklau, Hay, Machanavajjhala. *Optimizing error of high-dimensional statistical queries
       under differential privacy.* PVLDB 11(10), 2018, Sec 5.3 (marginals: the eigen-decomposition).
    """
    w, shp = as_workload(workload, shape)
    return traces(w, shp)


def as_workload(workload, shape) -> tuple[Workload, tuple[int, ...]]:
    if isinstance(workload, Workload):
        shp = check_shape(workload.shape, "workload.shape")
        if shape is not None and check_shape(shape) != shp:
            raise ParameterError("shape", f"shape {tuple(shape)} does not match workload.shape {shp}")
        return workload, shp
    if shape is None:
        raise ParameterError("shape", "shape is required when the workload is a matrix")
    shp = check_shape(shape)
    try:
        W = np.asarray(workload)
    except (TypeError, ValueError):
        raise TypeError(f"workload must be a Workload or a (q, N) matrix, got {type(workload).__name__}") from None
    if W.ndim != 2 or W.shape[1] != math.prod(shp):
        raise ParameterError("workload", f"workload must be a (q, {math.prod(shp)}) matrix for shape {shp}, "
                                         f"got shape {W.shape}")
    return Explicit(W, shp), shp


# ---------------------------------------------------------------------------
# error


def public_sets(d: int, fixed: int | None) -> np.ndarray:
    """public[T]: T is a subset of the axes no edge changes (their marginal is invariant), never under add/remove."""
    idx = np.arange(1 << d)
    if fixed is None:
        return np.zeros(1 << d, dtype=bool)
    return (idx & ~fixed) == 0


def needed(g: np.ndarray, public: np.ndarray) -> np.ndarray:
    return (g > 1e-12 * max(1.0, float(np.abs(g).sum()))) & ~public


def error_terms(g: np.ndarray, lam: np.ndarray, public: np.ndarray) -> float:
    """sum over T not public of g_T / lambda_T; inf when some such g_T > 0 has lambda_T = 0."""
    use = needed(g, public)
    if (lam[use] <= 0).any():
        return math.inf
    return float(np.sum(g[use] / lam[use]))


def marginals_error(weights, workload, *, shape=None, total: str = "public") -> float:
    """``||W A^+||_F^2 = sum_T g_T / lambda_T`` for the marginals strategy of ``weights``.

    The expected total squared error per unit noise variance of least
    squares on the answers of ``A = stack theta_S M_S``; with
    ``total="public"`` the total ``n`` is known (Blowfish neighbours) and
    the mean component ``T = ()`` is exact, as with
    :func:`._strategy.strategy_error`'s ``total="public"``.

    Parameters
    ----------
    weights : dict
        ``{sorted tuple of axes: theta_S >= 0}``; missing subsets weigh 0.
    workload : Workload or array_like (q, N)
    shape : tuple of int, optional
        Required for a matrix workload.
    total : {"public", "none"}

    Returns
    -------
    float
        ``math.inf`` when the strategy does not determine the workload
        (some ``g_T > 0`` has ``lambda_T = 0``).

    Raises
    ------
    ParameterError, TypeError
        Invalid weights (negative, not finite, keys not sorted tuples of
        distinct axes), a workload of another shape, another ``total``.

    Privacy
    -------
    None: nothing is released (public inputs only).

    Sensitivity
    -----------
    None used.

    Runtime
    -------
    O(d 2^d) after :func:`eigen_traces`.

    References
    ----------
    .. [1] McKenna, Miklau, Hay, Machanavajjhala. *Optimizing error of high-dimensional statistical queries
       under differential privacy.* PVLDB 11(10), 2018, Sec 3 and 5.3.
    """
    if total not in ("public", "none"):
        raise ParameterError("total", f"total must be 'public' or 'none', got {total!r}")
    w, shp = as_workload(workload, shape)
    theta = weights_vector(weights, shp)
    pub = public_sets(len(shp), 0 if total == "public" else None)
    return error_terms(traces(w, shp), eigenvalues(theta, shp), pub)
