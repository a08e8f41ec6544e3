"""The policy sensitivity of a Kronecker strategy ``A = A_1 (x) ... (x) A_d``, without building ``A``.

Moving one record by the cell offset ``d`` changes ``A x`` by ``A (e_u -
e_{u+d})``.  For a unit offset along axis ``a`` the difference is the
Kronecker product of ``A_a (e_i - e_{i+1})`` with columns of the other
factors, and the L1 norm of a Kronecker product is the product of the
norms, so

    Delta = max over axes a with unit edges of  L_a * prod_{b != a} c_b

with ``c_b`` the largest column L1 norm of ``A_b`` and ``L_a`` the largest
L1 norm of a difference of adjacent columns of ``A_a``.  This is exact for
every graph whose edges are unit moves along one axis (the 2-D grid, the
L1 distance threshold 1 with unit bins, ``Line`` in 1-D).  For any other
offset, a path of ``|d_1| + ... + |d_k|`` unit steps and the triangle
inequality give the safe bound ``sum_a |d_a| L_a prod_{b != a} c_b``; and
every graph is bounded by ``2 prod_b c_b`` (``||a_u - a_v|| <= ||a_u|| +
||a_v||``).  Under add/remove DP (the DP side of HDMM) it is ``prod_b c_b``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ._strategy_inputs import as_strategy, plain_policy
from ._strategy_sensitivity import strategy_sensitivity, threshold_offsets

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ...policy._policy import Policy

__all__ = ["check_factors", "col_max", "kronecker_sensitivity"]

#: Largest dense Kronecker product (entries) whose sensitivity is scanned edge by edge when no closed form applies.
_DENSE_SCAN_ENTRIES = 1 << 22



def col_max(A: np.ndarray) -> float:
    return float(np.abs(A).sum(axis=0).max(initial=0.0))


def _adjacent_max(A: np.ndarray) -> float:
    if A.shape[1] < 2:
        return 0.0
    return float(np.abs(A[:, :-1] - A[:, 1:]).sum(axis=0).max(initial=0.0))


def _pair_max(A: np.ndarray) -> float:
    """max over u != v of ||A e_u - A e_v||_1 (exact, O(m n^2))."""
    n = A.shape[1]
    if n < 2:
        return 0.0
    At = A.T
    best = 0.0
    for u in range(n - 1):
        best = max(best, float(np.abs(At[u + 1:] - At[u]).sum(axis=1).max()))
    return best


def check_factors(factors, shape=None) -> list[np.ndarray]:
    if isinstance(factors, np.ndarray) or not hasattr(factors, "__len__") or len(factors) < 1:
        raise ValueError("factors must be a non-empty sequence of 2-D matrices (m_a, n_a), one per axis")
    out = [as_strategy(F, f"factors[{i}]") for i, F in enumerate(factors)]
    if shape is not None:
        got = tuple(F.shape[1] for F in out)
        if got != tuple(shape):
            raise ValueError(f"factors must have {len(shape)} matrices with n_a columns = the domain shape "
                             f"{tuple(shape)}, got column counts {got}")
    return out


def kronecker_sensitivity(factors: Sequence[npt.ArrayLike], policy: Policy, *,
                          neighbours: str = "blowfish") -> tuple[Any, str]:
    """The policy sensitivity of ``A = factors[0] (x) factors[1] (x) ...``, without building ``A``.

    Parameters
    ----------
    factors : sequence of array_like
        Axis ``a``'s strategy, shape ``(m_a, n_a)`` with ``n_a`` the size of
        axis ``a`` of ``policy.domain``.
    policy : Policy
        Without constraints.
    neighbours : {"blowfish", "add_remove"}
        ``"add_remove"``: the sensitivity under add/remove DP (one record
        added or removed), ``prod_a c_a``; the policy's graph is then not
        used (for DP baselines).

    Returns
    -------
    value : int or float
        An int when every factor has integer entries.
    how : str
        ``"exact ..."`` or ``"upper bound ..."``, with the reason.

    Privacy
    -------
    None by itself; Laplace noise of scale ``value / epsilon`` on ``A x`` is
    (epsilon, P)-Blowfish private (000 Thm 5.1).

    Sensitivity
    -----------
    Exact (closed form, module docstring) when the graph's edges are unit
    moves along one axis (found from the graph's own ``edge_mask`` over the
    translation offsets); for other distance thresholds the path bound
    ``max over offsets d of sum_a |d_a| L_a prod_{b != a} c_b`` capped by
    ``2 prod c``; for ``FullDomain`` ``min(2 prod c, sum_a D_a prod_{b != a}
    c_b)`` with ``D_a`` the largest pair difference of ``A_a`` (a telescoping
    bound, exact for one axis); for other graphs ``2 prod c``.  Where no
    closed form applies and the product has at most 2**22 entries, it is
    built and its sensitivity scanned edge by edge
    (:func:`._strategy_sensitivity.strategy_sensitivity`: exact where that is).

    Runtime
    -------
    O(sum_a m_a n_a) (plus O(m_a n_a^2) per axis for ``FullDomain``).

    References
    ----------
    .. [1] He, Machanavajjhala, Ding. *Blowfish Privacy.* SIGMOD 2014 (000), Def 5.1, Thm 5.1.
    .. [2] McKenna, Miklau, Hay, Machanavajjhala. *Optimizing error of high-dimensional statistical queries
       under differential privacy.* PVLDB 11(10), 2018, Sec 5.3 (the column norm of a Kronecker product).
    """
    policy = plain_policy(policy)
    domain, graph = policy.domain, policy.secrets
    F = check_factors(factors, domain.shape)
    if neighbours not in ("blowfish", "add_remove"):
        raise ValueError(f"neighbours must be 'blowfish' or 'add_remove', got {neighbours!r}")
    integral = all(f.dtype.kind in "iu" or bool(np.all(f == np.round(f))) for f in F)
    G = [f.astype(np.float64) for f in F]
    c = [col_max(f) for f in G]
    L = [_adjacent_max(f) for f in G]
    prod_c = math.prod(c)

    def rest(a: int) -> float:
        return math.prod(c[b] for b in range(len(c)) if b != a)

    def done(value: float, how: str):
        return (int(round(value)) if integral else float(value)), how

    if neighbours == "add_remove":
        return done(prod_c, "exact: add/remove DP, the largest column norm of the product (prod_a c_a)")
    if not graph.has_edge(domain):
        return done(0.0, "exact: the secret graph has no edge on this domain")
    bound, bound_how = 2 * prod_c, f"upper bound 2 prod_a c_a (edges of {graph!r} not in closed form)"
    offsets = threshold_offsets(graph, domain)
    if offsets is not None:
        shape = [int(s) for s in domain.shape]
        best, unit = 0.0, True
        for off, U, V in offsets:
            if U.size == 0:
                continue
            # the cell offset of this translation, recovered from one edge
            d = np.array(np.unravel_index(int(V[0]), shape)) - np.array(np.unravel_index(int(U[0]), shape))
            steps = np.abs(d)
            unit = unit and int(steps.sum()) == 1
            best = max(best, sum(int(steps[a]) * L[a] * rest(a) for a in range(len(G)) if steps[a]))
        if unit:
            return done(best, "exact: max over axes a with unit edges of L_a prod_{b!=a} c_b (Kronecker "
                              "closed form; L_a the largest adjacent-column difference)")
        if best < bound:
            bound, bound_how = best, ("upper bound: a path of unit steps per edge offset (sum_a |d_a| L_a "
                                      "prod_{b!=a} c_b)")
    if graph.is_complete():
        D = [_pair_max(f) for f in G]
        if len(G) == 1:
            return done(D[0], "exact: scan of all pairs of columns (one axis)")
        tele = sum(D[a] * rest(a) for a in range(len(G)))
        bound, bound_how = ((tele, "upper bound sum_a D_a prod_{b!=a} c_b (pairs changed one axis at a time)")
                            if tele < bound else (bound, "upper bound 2 prod_a c_a (complete graph)"))
    N = math.prod(f.shape[1] for f in G)
    if math.prod(f.shape[0] for f in G) * N <= _DENSE_SCAN_ENTRIES:
        # no closed form, but small enough to build the product and scan the graph's own edges
        dense = G[0]
        for f in G[1:]:
            dense = np.kron(dense, f)
        value, how = strategy_sensitivity(np.rint(dense) if integral else dense, policy)
        if how.startswith("exact") or float(value) < bound:
            return done(float(value), how + " (the Kronecker product built densely: a small domain)")
    return done(bound, bound_how)
