"""HDMM's marginals template under a Blowfish policy, in closed form.

A *marginals strategy* on a domain of shape ``(n_0, ..., n_{d-1})`` answers,
for every subset ``S`` of the axes, the marginal ``M_S`` (the counts of each
combination of values of the axes in ``S``) scaled by a weight
``theta_S >= 0``:

    A = stack over S of theta_S M_S,   M_S = kron over i of (I_{n_i} if i in S else 1^T)

(McKenna, Miklau, Hay, Machanavajjhala, PVLDB 11(10) 2018, Sec 5.3, the
"Marginals" parameterization).  Everything here works on the ``2^d``
weights, never on the dense ``N x N`` matrices:

* Eigen-structure.  With ``P1_i = J / n_i`` and ``Pp_i = I - P1_i``, the
  projectors ``P_T = kron_i (Pp_i if i in T else P1_i)`` split the
  histogram space, ``M_S^T M_S`` is ``prod_{i not in S} n_i`` on ``P_T``
  when ``T`` is a subset of ``S`` (else 0), so

      A^T A = sum_T lambda_T P_T,  lambda_T = sum_{S superset of T} theta_S^2 prod_{i not in S} n_i,

  and the error of the least squares reconstruction on a workload of Gram
  ``G`` is ``tr(G (A^T A)^+) = sum_T g_T / lambda_T`` with
  ``g_T = tr(G P_T)`` (:func:`eigen_traces`, :func:`marginals_error`).
* Sensitivity.  A record moving from ``u`` to ``v``, which differ on the
  axes ``D``, changes marginal ``S`` by ``2 theta_S`` in L1 when ``S``
  meets ``D`` and by 0 otherwise; the policy sensitivity is the largest
  such sum over the difference patterns ``D`` of the secret graph's edges
  (:func:`marginals_sensitivity`).
* Optimisation of ``sensitivity^2 * error`` over the weights
  (:func:`optimize_marginals`) and the measurement plan
  (:func:`plan_marginals`): exact discrete Laplace on the integer marginals,
  least squares through the eigen-structure in O(2^d N).

Under Blowfish neighbours the number of records ``n`` is public (a record
changes its value), so the total (``S = ()``) costs nothing and is not
measured: the component on ``P_()`` (the mean) is ``n / N`` exactly, as
with ``total="public"`` in :func:`._strategy.plan_strategy`.  Likewise the
marginal on the axes ``F`` that no edge of the secret graph changes (e.g.
an axis whose bins are wider than a distance threshold) is the same for
every two neighbours: it is released exactly and every component ``P_T``
with ``T`` a subset of ``F`` is known.  Under add/remove neighbours (the
DP baseline of :func:`marginals_sensitivity` and
:func:`optimize_marginals`) the total is measured like any marginal.
"""

from __future__ import annotations

import itertools
import math
import numbers
import time
from fractions import Fraction

import numpy as np

from ..._validation import check_epsilon
from ...errors import ParameterError
from ...noise import MAX_SCALE, calibrate, discrete_laplace_variance
from ...policy._policy import Policy
from ...policy.secrets import Attribute, Custom, DistanceThreshold, FullDomain
from ...workloads import Explicit, Identity, Kronecker, Marginals, Stack, Total, Workload
from ._strategy import LISTED_EDGE_DOMAIN, RESOLUTION, plain_policy
from ..histogram import HistogramRelease, shape_check
from ..plan import NoisePart, Plan, check_memory, int64_bytes

__all__ = [
    "eigen_traces",
    "marginals_error",
    "marginals_sensitivity",
    "optimize_marginals",
    "plan_marginals",
]

#: Most axes a marginals strategy handles (2^d weights, up to C(12, 6) = 924 edge patterns).
MAX_AXES = 12
#: The add/remove neighbour model (a DP baseline), accepted where a policy is.
ADD_REMOVE = "add_remove"

_CITATION = ("McKenna, Miklau, Hay, Machanavajjhala, 'Optimizing error of high-dimensional statistical queries "
             "under differential privacy', PVLDB 11(10) 2018, Sec 5.3 (the marginals template); He, "
             "Machanavajjhala, Ding, SIGMOD 2014 (000 Def 5.1, Thm 5.1: policy sensitivity); sampler: Canonne, "
             "Kamath, Steinke 2020 Alg. 2")


# ---------------------------------------------------------------------------
# subsets as bit masks: axis i <-> bit i


def _axes(mask: int, d: int) -> tuple[int, ...]:
    return tuple(i for i in range(d) if mask >> i & 1)


def _mask(axes) -> int:
    return sum(1 << int(a) for a in axes)


def _popcount_table(d: int) -> np.ndarray:
    return np.array([bin(m).count("1") for m in range(1 << d)], dtype=np.int64)


def _superset_sum(f: np.ndarray, d: int) -> np.ndarray:
    """out[T] = sum over S superset of T of f[S] (zeta transform), O(d 2^d)."""
    out = np.array(f, dtype=np.float64, copy=True)
    idx = np.arange(out.shape[0])
    for i in range(d):
        low = (idx >> i & 1) == 0
        out[low] += out[idx[low] | (1 << i)]
    return out


def _subset_sum(f: np.ndarray, d: int) -> np.ndarray:
    """out[S] = sum over T subset of S of f[T], O(d 2^d)."""
    out = np.array(f, dtype=np.float64, copy=True)
    idx = np.arange(out.shape[0])
    for i in range(d):
        high = (idx >> i & 1) == 1
        out[high] += out[idx[high] ^ (1 << i)]
    return out


def _outside_products(shape: tuple[int, ...]) -> np.ndarray:
    """c[S] = prod over i not in S of n_i (the eigenvalue of M_S^T M_S), float64."""
    d = len(shape)
    c = np.ones(1 << d)
    for m in range(1 << d):
        for i in range(d):
            if not m >> i & 1:
                c[m] *= shape[i]
    return c


def _projector_traces(shape: tuple[int, ...]) -> np.ndarray:
    """tr(P_T) = prod over i in T of (n_i - 1)."""
    d = len(shape)
    t = np.ones(1 << d)
    for m in range(1 << d):
        for i in range(d):
            if m >> i & 1:
                t[m] *= shape[i] - 1
    return t


def _eigenvalues(theta: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """lambda_T = sum over S superset of T of theta_S^2 prod_{i not in S} n_i."""
    return _superset_sum(theta * theta * _outside_products(shape), len(shape))


# ---------------------------------------------------------------------------
# inputs


def _check_shape(shape, name: str = "shape") -> tuple[int, ...]:
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


def _weights_vector(weights, shape: tuple[int, ...], name: str = "weights") -> np.ndarray:
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
        theta[_mask(key)] = w
    if not (theta > 0).any():
        raise ParameterError(name, f"{name}: at least one weight must be positive, got {weights!r}")
    return theta


def _weights_dict(theta: np.ndarray, d: int) -> dict:
    return {_axes(m, d): float(theta[m]) for m in range(1 << d) if theta[m] > 0}


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


def _traces(w, shape: tuple[int, ...]) -> np.ndarray:
    if isinstance(w, Identity):
        n = shape[0]
        return np.array([1.0, n - 1.0])
    if isinstance(w, Total):
        return np.array([float(shape[0]), 0.0])
    if isinstance(w, Marginals):
        d = len(shape)
        c = _outside_products(shape)
        tp = _projector_traces(shape)
        idx = np.arange(1 << d)
        counts = np.zeros(1 << d)
        for axes in w.axes_list:
            counts[_mask(axes)] += 1.0  # a repeated marginal counts twice
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
            parts.append(_traces(f, shape[start:start + k]))
            start += k
        return _kron_combine(parts)
    if isinstance(w, Stack):
        return sum(_traces(p, shape) for p in w.parts())
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
    w, shp = _as_workload(workload, shape)
    return _traces(w, shp)


def _as_workload(workload, shape) -> tuple[Workload, tuple[int, ...]]:
    if isinstance(workload, Workload):
        shp = _check_shape(workload.shape, "workload.shape")
        if shape is not None and _check_shape(shape) != shp:
            raise ParameterError("shape", f"shape {tuple(shape)} does not match workload.shape {shp}")
        return workload, shp
    if shape is None:
        raise ParameterError("shape", "shape is required when the workload is a matrix")
    shp = _check_shape(shape)
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


def _public_sets(d: int, fixed: int | None) -> np.ndarray:
    """public[T]: T is a subset of the axes no edge changes (their marginal is invariant), never under add/remove."""
    idx = np.arange(1 << d)
    if fixed is None:
        return np.zeros(1 << d, dtype=bool)
    return (idx & ~fixed) == 0


def _needed(g: np.ndarray, public: np.ndarray) -> np.ndarray:
    return (g > 1e-12 * max(1.0, float(np.abs(g).sum()))) & ~public


def _error_terms(g: np.ndarray, lam: np.ndarray, public: np.ndarray) -> float:
    """sum over T not public of g_T / lambda_T; inf when some such g_T > 0 has lambda_T = 0."""
    use = _needed(g, public)
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
    w, shp = _as_workload(workload, shape)
    theta = _weights_vector(weights, shp)
    pub = _public_sets(len(shp), 0 if total == "public" else None)
    return _error_terms(_traces(w, shp), _eigenvalues(theta, shp), pub)


# ---------------------------------------------------------------------------
# sensitivity


class _Sensitivity:
    """Delta(theta) = max over rows r of C[r] . theta (C has entries 0, 1 or 2), with how it was found."""

    def __init__(self, C: np.ndarray, patterns: list[int], how: str, add_remove: bool, d: int) -> None:
        self.C = C
        self.patterns = patterns
        self.how = how
        self.add_remove = add_remove
        changed = 0
        for D in patterns:
            changed |= D
        #: the axes no edge changes (None under add/remove): their marginal is the same for all neighbours
        self.fixed = None if add_remove else ((1 << d) - 1) & ~changed

    def exact(self, theta) -> float:
        if self.C.shape[0] == 0:
            return 0.0
        return float(np.max(self.C @ theta))

    def exact_int(self, theta_int) -> int:
        t = np.asarray(theta_int, dtype=np.int64)
        if self.C.shape[0] == 0:
            return 0
        if int(t.max(initial=0)) >= 2**40:
            raise ParameterError("weights", "weights: integer weights must stay below 2**40")
        return int(np.max(self.C.astype(np.int64) @ t))  # < 2 * 4096 * 2**40: exact in int64


def _pattern_rows(patterns: list[int], d: int) -> np.ndarray:
    """Row for pattern D: 2 on every S that meets D."""
    S = np.arange(1 << d)
    return np.array([2.0 * ((S & D) != 0) for D in patterns]).reshape(len(patterns), 1 << d)


def _maximal(patterns) -> list[int]:
    ps = sorted(set(int(p) for p in patterns), key=lambda p: -bin(p).count("1"))
    out: list[int] = []
    for p in ps:
        if not any(p & q == p for q in out):
            out.append(p)
    return sorted(out)


def _edge_patterns(policy) -> tuple[list[int], str]:
    """The maximal difference patterns D (axes where u and v differ) over the secret graph's edges."""
    domain, graph = policy.domain, policy.secrets
    shape = tuple(int(n) for n in domain.shape)
    d = len(shape)
    U = _mask(i for i in range(d) if shape[i] >= 2)
    if not graph.has_edge(domain) or U == 0:
        return [], "exact: the secret graph has no edge on this domain"
    if isinstance(graph, FullDomain):
        return [U], ("exact: complete graph, an edge can change every axis of length >= 2 at once "
                     "(2 * the sum of theta_S over the S meeting them)")
    if isinstance(graph, Attribute):
        k = min(graph.c, bin(U).count("1"))
        axes = _axes(U, d)
        pats = [_mask(c) for c in itertools.combinations(axes, k)]
        return pats, (f"exact: Attribute(c={graph.c}) edges change 1 .. {graph.c} axes of length >= 2; the "
                      f"largest is over the {len(pats)} sets of {k} such axes (2 * the sum of theta_S over the "
                      "S meeting the set)")
    if isinstance(graph, DistanceThreshold):
        # translation invariant, metric monotone in |code differences|: pattern D is realised iff the
        # unit steps (code 0 -> 1 on every axis of D) are an edge
        strides = np.array(domain.strides, dtype=np.int64)
        cand = [m for m in range(1, 1 << d) if m & ~U == 0]
        j = np.array([sum(int(strides[i]) for i in _axes(m, d)) for m in cand], dtype=np.int64)
        ok = graph.edge_mask(domain, np.zeros_like(j), j)
        pats = [m for m, e in zip(cand, ok) if e]
        return _maximal(pats), (f"exact: {graph!r} is translation invariant with a metric monotone in each "
                                "coordinate's difference, so the axes an edge can change together are those "
                                "whose unit steps together are an edge")
    N = int(domain.size)
    if isinstance(graph, Custom) or N <= LISTED_EDGE_DOMAIN:
        I, J = graph.iter_edges(domain, limit=max(N, 1))
        if I.shape[0] == 0:
            return [], "exact: the secret graph has no edge on this domain"
        ci = np.stack(np.unravel_index(I, shape), axis=1)
        cj = np.stack(np.unravel_index(J, shape), axis=1)
        bits = ((ci != cj) * (1 << np.arange(d))[None, :]).sum(axis=1)
        return _maximal(np.unique(bits).tolist()), f"exact: difference patterns of the {I.shape[0]} listed edges"
    raise ParameterError("policy", f"policy: the marginals strategy's sensitivity needs the axes each edge can "
                                   f"change; it is known for FullDomain, Attribute, DistanceThreshold, Custom and "
                                   f"any graph on at most {LISTED_EDGE_DOMAIN} values, not for {graph!r} on "
                                   f"{N} values")


def _sensitivity_model(policy, shape: tuple[int, ...] | None = None) -> _Sensitivity:
    if isinstance(policy, str):
        if policy != ADD_REMOVE:
            raise ParameterError("policy", f"policy must be a Policy or {ADD_REMOVE!r}, got {policy!r}")
        if shape is None:
            raise ParameterError("shape", "shape is required with policy='add_remove'")
        d = len(shape)
        return _Sensitivity(np.ones((1, 1 << d)), [],
                            "exact: add/remove neighbours, one record adds 1 to one cell of every marginal "
                            "(the sum of every theta_S, the total included)", True, d)
    policy = plain_policy(policy)
    shp = _check_shape(policy.domain.shape, "policy.domain.shape")
    if shape is not None and tuple(shape) != shp:
        raise ParameterError("shape", f"shape {tuple(shape)} does not match the policy's domain shape {shp}")
    pats, how = _edge_patterns(policy)
    return _Sensitivity(_pattern_rows(pats, len(shp)), pats, how, False, len(shp))


def marginals_sensitivity(weights, policy, *, shape=None) -> tuple:
    """The sensitivity of the marginals strategy ``stack theta_S M_S`` under a policy, in closed form.

    A record moving from ``u`` to ``v`` (which differ exactly on the axes
    ``D``) changes marginal ``S`` in two cells by ``theta_S`` when ``S``
    meets ``D`` (the cells ``u_S != v_S``) and not at all otherwise, so an
    edge of pattern ``D`` changes the answers by
    ``2 sum_{S meets D} theta_S`` in L1, and the sensitivity is the largest
    of these over the patterns of the graph's edges:

    * ``FullDomain``: ``D`` = every axis of length >= 2;
    * ``Attribute(c)``: the sets of ``min(c, d')`` axes of length >= 2 (an
      edge changes 1 .. c attributes; axes of length 1 never change);
    * ``DistanceThreshold``: the sets of axes whose unit steps together
      are an edge (the metric is monotone in each coordinate difference
      and translation invariant, so every pattern an edge realises is
      realised by unit steps);
    * ``Custom`` graphs and any graph on at most 4096 values: the patterns
      of the listed edges;
    * ``"add_remove"`` (a DP baseline): one record adds 1 to one cell of
      every marginal: ``sum_S theta_S`` (the total included).

    Parameters
    ----------
    weights : dict
        ``{sorted tuple of axes: theta_S >= 0}``.
    policy : Policy or "add_remove"
        A policy without constraints, or the add/remove model (then
        ``shape`` is required).
    shape : tuple of int, optional

    Returns
    -------
    value : int or float
        An int when every weight is an integer (exact), else a float.
    how : str
        Starts with ``"exact"``.

    Raises
    ------
    ParameterError, TypeError
        Invalid weights or policy; a graph whose edge patterns are not
        known (a large ``Partition``, an ``Intersection``) is refused.

    Privacy
    -------
    None by itself (nothing is released).

    Sensitivity
    -----------
    Exact for non-negative weights (the formula above is the L1 change of
    every edge of a pattern, and the maximum is over the realised patterns).

    Runtime
    -------
    O(patterns * 2^d), at most C(12, 6) * 4096 (plus the edge listing for
    the listed graphs).

    References
    ----------
    .. [1] He, Machanavajjhala, Ding. *Blowfish Privacy.* SIGMOD 2014 (000), Def 5.1, Thm 5.1.
    .. [2] McKenna, Miklau, Hay, Machanavajjhala. *Optimizing error of high-dimensional statistical queries
       under differential privacy.* PVLDB 11(10), 2018, Sec 5.3.
    """
    if isinstance(policy, Policy):
        shp = _check_shape(policy.domain.shape, "policy.domain.shape")
    else:
        shp = _check_shape(shape) if shape is not None else None
    model = _sensitivity_model(policy, shp)
    theta = _weights_vector(weights, shp)
    if np.all(theta == np.round(theta)):
        return model.exact_int([int(t) for t in theta]), model.how
    return model.exact(theta), model.how


# ---------------------------------------------------------------------------
# optimisation


class _Objective:
    """log(s(x)^2 * E(x)) over the free weights x (smooth max of the pattern sums with a p-norm)."""

    def __init__(self, g, shape, model: _Sensitivity, free: np.ndarray) -> None:
        d = len(shape)
        self.d = d
        self.shape = shape
        self.free = free  # bit masks of the optimised weights
        self.c = _outside_products(shape)
        use = _needed(g, _public_sets(d, model.fixed))
        self.g = np.where(use, g, 0.0)
        self.use = use
        self.C = model.C[:, free]
        self.model = model

    def full(self, x):
        theta = np.zeros(1 << self.d)
        theta[self.free] = x
        return theta

    def error_and_grad(self, x):
        theta = self.full(x)
        lam = _superset_sum(theta * theta * self.c, self.d)
        lu = lam[self.use]
        E = float(np.sum(self.g[self.use] / lu))
        h = np.zeros_like(lam)
        h[self.use] = self.g[self.use] / (lu * lu)
        dE = -2.0 * theta * self.c * _subset_sum(h, self.d)  # d/dtheta_S: -sum_{T subset S} g_T/lam_T^2 2 theta_S c_S
        return E, dE[self.free]

    def smooth_max(self, x, p):
        s = self.C @ x
        m = float(s.max())
        if m <= 0:
            return 0.0, np.zeros_like(x)
        r = s / m
        rp = r ** p
        tot = float(rp.sum())
        val = m * tot ** (1.0 / p)
        wts = r ** (p - 1) / tot ** ((p - 1.0) / p)
        return val, self.C.T @ wts

    def __call__(self, x, p):
        s, ds = self.smooth_max(x, p) if self.C.shape[0] > 1 else (float(self.C[0] @ x), self.C[0].copy())
        E, dE = self.error_and_grad(x)
        return 2.0 * math.log(s) + math.log(E), 2.0 * ds / s + dE / E

    def exact(self, x) -> float:
        theta = self.full(x)
        lam = _superset_sum(theta * theta * self.c, self.d)
        if (lam[self.use] <= 0).any():
            return math.inf
        s = float(np.max(self.C @ x))
        return s * s * float(np.sum(self.g[self.use] / lam[self.use]))


_POWERS = (16.0, 128.0)


def optimize_marginals(workload, policy, *, shape=None, restarts: int = 3, seed: int = 0, maxiter: int = 500,
                       init=None) -> tuple[dict, dict]:
    """HDMM's marginals template fitted to a workload under a policy's sensitivity.

    Minimises ``Delta(theta)^2 * sum_T g_T / lambda_T(theta)`` over
    ``theta >= 0`` (scale invariant; the result is scaled so that its
    largest weight is 1) with scipy's L-BFGS-B on the logarithm, with the
    analytic gradient, from warm starts (the identity ``theta_all = 1``;
    the workload's own marginals with equal weights, for a
    :class:`~blowfish_privacy.workloads.Marginals` workload, else the
    maximal sets ``T`` with ``g_T > 0``; ``init`` when given) and
    ``restarts`` random starts, keeping the best by the exact objective.
    The maximum over the edge patterns of :func:`marginals_sensitivity`
    (``Attribute(c)`` with several patterns) is smoothed by a p-norm
    (p = 16, then 128 from there) during the optimisation; every candidate
    is compared by its exact value, warm starts included, so the result is
    never worse than a warm start.

    Under a Blowfish policy the total, and the marginals on the axes no
    edge changes, are public: their weights are not optimised (they are 0)
    and their components ``T`` are left out of the error.  Under
    ``"add_remove"`` the total is a weight like the others.

    Parameters
    ----------
    workload : Workload or array_like (q, N)
    policy : Policy or "add_remove"
    shape : tuple of int, optional
        Required for a matrix workload with ``"add_remove"``.
    restarts : int
        Random starts (weights uniform on [0, 1), numpy seeded by ``seed``:
        public randomness, no data).
    seed : int
    maxiter : int
        L-BFGS-B iterations per start and smoothing stage.
    init : dict, optional
        Another warm start ``{axes: weight}``.

    Returns
    -------
    weights : dict
        ``{sorted tuple of axes: theta_S}``, positive weights only, the
        largest 1.
    info : dict
        ``objective`` (``Delta^2 * ||W A^+||_F^2``, exact: multiply by the
        noise variance per unit sensitivity for the expected error),
        ``sensitivity``, ``error`` (``||W A^+||_F^2``), ``candidates``
        (exact objective of every start after optimisation, and of each
        warm start as given), ``chosen``, ``seconds``, ``evaluations``.

    Raises
    ------
    ParameterError, TypeError
        A workload of another shape, invalid policy or ``init``,
        ``restarts < 0``, a workload with nothing to estimate.

    Privacy
    -------
    None: nothing is released (public inputs only).

    Sensitivity
    -----------
    The closed form of :func:`marginals_sensitivity` (exact).

    Runtime
    -------
    O(d 2^d + patterns 2^d) per evaluation, times the iterations and starts.

    References
    ----------
    .. [1] McKenna, Miklau, Hay, Machanavajjhala. *Optimizing error of high-dimensional statistical queries
       under differential privacy.* PVLDB 11(10), 2018, Sec 5.3 and 6 (the optimisation).
    """
    from scipy.optimize import minimize

    start_time = time.perf_counter()
    if isinstance(policy, Policy):
        w, shp = _as_workload(workload, shape if shape is not None else policy.domain.shape)
    else:
        w, shp = _as_workload(workload, shape)
    model = _sensitivity_model(policy, shp)
    if isinstance(restarts, bool) or not isinstance(restarts, (int, np.integer)) or restarts < 0:
        raise ParameterError("restarts", f"restarts must be an integer >= 0, got {restarts!r}")
    if isinstance(maxiter, bool) or not isinstance(maxiter, (int, np.integer)) or maxiter < 1:
        raise ParameterError("maxiter", f"maxiter must be an integer >= 1, got {maxiter!r}")
    d = len(shp)
    g = _traces(w, shp)
    U = _mask(i for i in range(d) if shp[i] >= 2)
    public = _public_sets(d, model.fixed)
    # weights on marginals that no edge changes are not optimised: those marginals are public (exact)
    free = np.array([m for m in range(1 << d) if m & ~U == 0 and not public[m]], dtype=np.int64)
    obj = _Objective(g, shp, model, free)
    if not obj.use.any():
        raise ParameterError("workload", "workload: nothing to estimate (every query is a function of the public "
                                         "total or of a marginal no edge changes, or the workload is zero)")
    if model.C.shape[0] == 0:
        raise ParameterError("policy", "policy: the secret graph has no edge on this domain; nothing needs noise")
    index = {int(m): k for k, m in enumerate(free)}

    def vec(theta_full):
        return np.array([theta_full[m] for m in free], dtype=np.float64)

    warm = {}
    ident = np.zeros(1 << d)
    ident[U] = 1.0
    warm["identity"] = vec(ident)
    own = np.zeros(1 << d)
    if isinstance(w, Marginals):
        for axes in w.axes_list:
            own[_mask(axes) & U] = 1.0
    else:
        sup = [int(T) for T in np.flatnonzero(obj.use)]
        for T in _maximal(sup):
            own[T] = 1.0
    own[public] = 0.0
    if own[free].any():
        warm["workload marginals"] = vec(own)
    if init is not None:
        th = _weights_vector(init, shp, "init")
        if (th[[m for m in range(1 << d) if m not in index]] > 0).any():
            raise ParameterError("init", "init: weights on the total, on marginals no edge changes (both public "
                                         "under Blowfish neighbours) or on axes of length 1 are not optimised; "
                                         "leave them out")
        warm["init"] = vec(th)
    rng = np.random.default_rng(seed)
    starts = dict(warm)
    for k in range(int(restarts)):
        starts[f"random {k}"] = rng.random(free.shape[0])
    lower = 1e-9  # the box's floor: every eigenvalue stays positive during the search
    candidates, best = {}, (math.inf, None, None)
    evaluations = 0
    for name, x0 in warm.items():
        val = obj.exact(x0)
        candidates[name + " (as given)"] = val
        if val < best[0]:
            best = (val, x0, name + " (as given)")
    for name, x0 in starts.items():
        x = np.maximum(np.asarray(x0, dtype=np.float64), lower) / max(float(np.max(x0)), 1e-300)
        powers = _POWERS if obj.C.shape[0] > 1 else (1.0,)
        for p in powers:
            res = minimize(obj, x, args=(p,), jac=True, method="L-BFGS-B",
                           bounds=[(lower, None)] * free.shape[0],
                           options={"maxiter": int(maxiter)})
            evaluations += int(res.nfev)
            x = np.maximum(res.x, 0.0)
            x = x / float(np.max(x))
        cut = np.where(x < 1e-7, 0.0, x)  # the floor of the box is no weight at all (kept only when not worse)
        val, val_cut = obj.exact(x), obj.exact(cut)
        if val_cut <= val:
            x, val = cut, val_cut
        candidates[name + " (optimised)"] = val
        if val < best[0]:
            best = (val, x, name + " (optimised)")
    val, x, chosen = best
    if x is None:
        raise ParameterError("workload", "workload: no start gave a strategy that determines the workload")
    x = x / float(np.max(x))
    theta = obj.full(x)
    sens = model.exact(theta)
    err = _error_terms(g, _eigenvalues(theta, shp), public)
    info = {"objective": sens * sens * err, "sensitivity": sens, "error": err, "candidates": candidates,
            "chosen": chosen, "seconds": time.perf_counter() - start_time, "evaluations": evaluations,
            "sensitivity_how": model.how}
    return _weights_dict(theta, d), info


# ---------------------------------------------------------------------------
# least squares through the eigen-structure


def _spectral(arr: np.ndarray, axes: tuple[int, ...], coef: np.ndarray) -> np.ndarray:
    """sum over T subset of axes of coef[T] P_T arr, for arr on the marginal of ``axes`` (mean / deviation splits)."""
    out = np.zeros(arr.shape)

    def rec(X, k, bits):
        if k == len(axes):
            c = coef[bits]
            if c != 0:
                np.add(out, c * X, out=out)
            return
        m = X.mean(axis=k, keepdims=True)
        rec(m, k + 1, bits)
        rec(X - m, k + 1, bits | 1 << axes[k])

    rec(arr, 0, 0)
    return out


def _reconstruct(answers: dict, theta: np.ndarray, shape: tuple[int, ...], n=None, *, fixed: int = 0,
                 fixed_marginal=None) -> np.ndarray:
    """(A^T A)^+ A^T y through the eigen-structure, with the known components exact.

    ``answers[mask]`` holds y_S (marginal shape) for every S with theta_S > 0, in units of theta_S M_S x.
    With ``n`` the total is known: the mean component is n / N.  With ``fixed_marginal`` (the exact
    marginal on the axes of ``fixed``) every component P_T, T a subset of ``fixed``, is known: it is
    that marginal spread evenly over the other axes (M_F^T m_F / prod_{i not in F} n_i); least squares
    on the answers gives the others.
    """
    d = len(shape)
    lam = _eigenvalues(theta, shape)
    inv = np.where(lam > 0, 1.0 / np.where(lam > 0, lam, 1.0), 0.0)  # the pseudo-inverse on the unmeasured
    if fixed_marginal is None and n is not None:
        fixed, fixed_marginal = 0, np.asarray(float(n))
    if fixed_marginal is not None:
        inv[_public_sets(d, fixed)] = 0.0
    x = np.zeros(shape)
    for S, y in answers.items():
        axes = _axes(S, d)
        z = _spectral(np.asarray(y, dtype=np.float64).reshape([shape[i] for i in axes]), axes, inv)
        bshape = [shape[i] if S >> i & 1 else 1 for i in range(d)]
        x += theta[S] * z.reshape(bshape)
    if fixed_marginal is not None:
        bshape = [shape[i] if fixed >> i & 1 else 1 for i in range(d)]
        x += np.asarray(fixed_marginal, dtype=np.float64).reshape(bshape) / _outside_products(shape)[fixed]
    return x


def _marginal(hist: np.ndarray, S: int, d: int) -> np.ndarray:
    other = tuple(i for i in range(d) if not S >> i & 1)
    return hist.sum(axis=other) if other else hist


# ---------------------------------------------------------------------------
# plan_marginals


def plan_marginals(workload, policy, epsilon, *, weights=None, restarts: int = 3, seed: int = 0,
                   maxiter: int = 500) -> Plan:
    """Plan HDMM's marginals strategy under a policy: exact discrete Laplace on the marginals, least squares.

    The weights (given, or from :func:`optimize_marginals`) are scaled so
    that the largest is 1 and put on the grid of multiples of ``1 / K``,
    ``K = 2**20``, rounded *down* (so the sensitivity never exceeds that of
    the weights asked); the noisy stage is the integer queries
    ``K theta_S M_S x`` plus exact discrete Laplace noise calibrated to
    their exact sensitivity (:func:`marginals_sensitivity` of the integer
    weights); the estimate is least squares through the eigen-structure,
    with the public total.  ``K`` is halved (from public inputs) while the
    noise scale would exceed a quarter of the sampler's largest scale, as
    in :func:`._strategy.plan_strategy`.

    Parameters
    ----------
    workload : Workload or array_like (q, N)
        The queries the strategy is optimised for and whose expected error
        is reported; of the policy's domain shape.
    policy : Policy
        Without constraints; secrets as :func:`marginals_sensitivity`.
    epsilon : float or Fraction, > 0
    weights : dict, optional
        ``{sorted tuple of distinct axes: theta_S >= 0}`` (finite, one
        positive at least); default: optimised.  Weights on the total
        (``()``) and on marginals of axes no edge changes are ignored: those
        are public under Blowfish neighbours (released exactly).
    restarts, seed, maxiter
        As :func:`optimize_marginals` (unused with ``weights``).

    Returns
    -------
    Plan
        ``measure(hist, generator)`` returns a :class:`HistogramRelease`
        whose ``histogram`` (float64, the domain's shape) is the least
        squares estimate (the minimum-norm one when the marginals do not
        determine every cell: then unbiased for the workload, not for every
        cell); ``params["answers"]`` maps each measured ``S`` to its noisy
        marginal in units of ``theta_S M_S x``.  ``options`` holds
        ``weights`` (the rounded ones), ``resolution``, ``public_marginal``
        (the axes no edge changes, of length >= 2: their marginal is kept
        exactly; a second, zero-epsilon part of the plan when not empty),
        ``histogram_determined`` and ``optimisation``
        (:func:`optimize_marginals`'s info, or None).

    Raises
    ------
    ParameterError, TypeError
        Invalid weights, workload or policy; weights that do not determine
        the workload (after rounding); an epsilon that is not positive.

    Privacy
    -------
    (epsilon, P)-Blowfish privacy for P = ``policy`` (000 Thm 5.1): the
    noisy stage is an integer linear query plus exact discrete Laplace
    noise of scale ``Delta / epsilon`` rounded up (the spend is at most
    epsilon); the least squares uses public inputs only (the weights, the
    number of records ``n`` and the marginal on the axes no edge changes:
    both are the same for every two neighbours, sensitivity 0, and are
    released exactly).

    Sensitivity
    -----------
    :func:`marginals_sensitivity` of the integer weights, exact.

    Runtime
    -------
    Planning: the optimisation (see :func:`optimize_marginals`) and
    O(d 2^d); measurement O(2^d N) (the marginals, one batch of draws, the
    per-axis projections).

    Utility
    -------
    Expected total squared error ``v sum_T g_T / lambda_T`` over the
    workload (``v`` the discrete Laplace variance over ``K^2``), and for
    the cells ``v sum_T tr(P_T) / lambda_T`` when the marginals determine
    every cell (McKenna et al. 2018, Sec 3 and 5.3).

    References
    ----------
    .. [1] McKenna, Miklau, Hay, Machanavajjhala. *Optimizing error of high-dimensional statistical queries
       under differential privacy.* PVLDB 11(10), 2018, Sec 5.3.
    .. [2] He, Machanavajjhala, Ding. *Blowfish Privacy.* SIGMOD 2014 (000), Def 5.1, Thm 5.1.
    .. [3] Canonne, Kamath, Steinke. *The Discrete Gaussian for Differential Privacy.* NeurIPS 2020, Alg. 2.
    """
    policy = plain_policy(policy)
    eps = check_epsilon(epsilon)
    shp = _check_shape(policy.domain.shape, "policy.domain.shape")
    d, N = len(shp), math.prod(shp)
    w, _ = _as_workload(workload, shp)
    model = _sensitivity_model(policy, shp)
    g = _traces(w, shp)
    if weights is None:
        wts, info = optimize_marginals(w, policy, restarts=restarts, seed=seed, maxiter=maxiter)
        theta = _weights_vector(wts, shp)
    else:
        theta, info = _weights_vector(weights, shp), None
    fixed = model.fixed  # the axes no edge changes (at least those of length 1)
    public = _public_sets(d, fixed)
    fixed_axes = tuple(i for i in _axes(fixed, d) if shp[i] >= 2)
    theta[public] = 0.0  # the total and the marginals no edge changes are public: released exactly, not measured
    if not (theta > 0).any():
        if model.C.shape[0] == 0:
            raise ParameterError("policy", "policy: the secret graph has no edge on this domain: every marginal "
                                           "is public, there is nothing to measure with noise")
        raise ParameterError("weights", f"weights: only the total or marginals on axes no edge changes "
                                        f"{fixed_axes} have a weight, and they are public: nothing to measure")
    theta = theta / float(theta.max())
    sizes = {S: math.prod(shp[i] for i in _axes(S, d)) for S in range(1 << d)}
    m = sum(sizes[S] for S in range(1 << d) if theta[S] > 0)
    memory = check_memory(int64_bytes(4 * m + (d + 4) * N), size=N, parameter="policy", mechanism="marginals")
    K = RESOLUTION
    while True:
        t_int = [int(math.floor(t * K)) for t in theta]  # rounded down: the sensitivity never grows
        sens = model.exact_int(t_int)
        if K > 1 and Fraction(sens) / eps > MAX_SCALE // 4:
            K //= 2
            continue
        break
    theta_q = np.array(t_int, dtype=np.float64) / K
    lam = _eigenvalues(theta_q, shp)
    err_units = _error_terms(g, lam, public)
    if not err_units < math.inf:
        need = _needed(g, public)
        bad = [_axes(T, d) for T in range(1 << d) if need[T] and lam[T] <= 0]
        raise ParameterError("weights", f"weights: the marginals measured (after rounding to multiples of 1/{K}) "
                                        f"do not determine the workload: no measured marginal contains the axes "
                                        f"{bad[0]} (a marginal on a superset of them is needed)")
    cal = calibrate(sens, eps)
    var = discrete_laplace_variance(cal.scale) / (K * K)
    tp = _projector_traces(shp)
    U = _mask(i for i in range(d) if shp[i] >= 2)
    cells = [T for T in range(1 << d) if T & ~U == 0 and not public[T]]
    determined = all(lam[T] > 0 for T in cells)
    expected = {"per_answer_variance": var, "workload_total_squared_error": var * err_units,
                "cells_total_variance": var * float(sum(tp[T] / lam[T] for T in cells if lam[T] > 0))}
    if determined:
        expected["cells_total_squared_error"] = expected["cells_total_variance"]
    measured = [S for S in range(1 << d) if t_int[S] > 0]
    how = model.how + (f" (weights on the grid 1/{K}: the queries are {K} theta_S M_S x)" if K > 1 else "")
    parts = (NoisePart("answers", cal.sensitivity, True, how, cal.epsilon_exact, cal.scale, m),)
    fixed_size = math.prod(shp[i] for i in fixed_axes)
    if fixed_axes:
        zero = calibrate(0, eps)
        parts += (NoisePart("public marginal", zero.sensitivity, True,
                            f"exact: no edge of {policy.secrets!r} changes the axes {fixed_axes}, so their marginal "
                            "is the same for every two neighbours (released without noise)",
                            zero.epsilon_exact, zero.scale, fixed_size),)
    scale = cal.scale
    max_entry = max(t_int)
    weights_out = {_axes(S, d): t_int[S] / K for S in measured}

    def run(plan, hist, gen):
        n = int(hist.sum())  # public: Blowfish neighbours keep the number of records
        if max_entry * max(n, 1) >= 2**62:
            raise ValueError(f"hist: the total count times the largest integer weight ({max_entry}) must stay "
                             "below 2**62")
        exact = np.concatenate([t_int[S] * _marginal(hist, S, d).reshape(-1) for S in measured]).astype(np.int64)
        noisy = exact.copy() if scale == 0 else gen.add_discrete_laplace(exact, scale)
        answers, pos = {}, 0
        for S in measured:
            k = sizes[S]
            answers[S] = noisy[pos:pos + k].astype(np.float64).reshape([shp[i] for i in _axes(S, d)]) / K
            pos += k
        # public: Blowfish neighbours keep n and the marginal on the axes no edge changes
        est = _reconstruct(answers, theta_q, shp, fixed=fixed, fixed_marginal=_marginal(hist, fixed, d))
        return HistogramRelease(
            histogram=est, mechanism=plan.mechanism, epsilon=float(plan.epsilon_exact),
            epsilon_exact=plan.epsilon_exact, epsilon_parts={p.name: p.epsilon for p in plan.parts},
            guarantee=repr(policy.secrets), secure=gen.is_secure,
            expected_squared_error=expected.get("cells_total_squared_error"),
            params={"answers": {_axes(S, d): a for S, a in answers.items()}, "scale": scale, "resolution": K},
            plan=plan)

    return Plan(
        mechanism="marginals", policy=policy,
        guarantee=f"(epsilon, P)-Blowfish privacy for P = {policy!r} (000 Thm 5.1; least squares is "
                  "post-processing)",
        citation=_CITATION, epsilon_requested=eps, parts=parts,
        aggregate=f"int64 histogram of shape {shp}", aggregate_shape=shp,
        expected_error=expected, memory_bytes=memory,
        runtime="O(2^d N): the measured marginals, one batch of exact discrete Laplace draws, least squares by "
                "per-axis projections",
        options={"weights": weights_out, "resolution": K, "total": "public", "public_marginal": fixed_axes,
                 "histogram_determined": determined, "optimisation": info},
        check=shape_check(shp), run=run)
