"""The exact sensitivity of HDMM's marginals template under a policy, from the secret graph's edge patterns.

A record moving from ``u`` to ``v``, which differ on the axes ``D``,
changes marginal ``S`` by ``2 theta_S`` in L1 when ``S`` meets ``D`` and by
0 otherwise; the policy sensitivity is the largest such sum over the
difference patterns ``D`` of the secret graph's edges
(:func:`marginals_sensitivity`).  The axes no edge changes are found on the
way: their marginal is the same for every two neighbours.
"""

from __future__ import annotations

import numpy as np

from ...errors import ParameterError
from ...policy._policy import Policy
from ._marginals_algebra import axes_mask, check_shape, mask_axes, maximal_sets, weights_vector
from ._strategy_inputs import plain_policy
from ._strategy_sensitivity import LISTED_EDGE_DOMAIN

__all__ = ["ADD_REMOVE", "Sensitivity", "marginals_sensitivity", "sensitivity_model"]

#: The add/remove neighbour model (a DP baseline), accepted where a policy is.
ADD_REMOVE = "add_remove"


# ---------------------------------------------------------------------------
# sensitivity


class Sensitivity:
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


def _edge_patterns(policy) -> tuple[list[int], str]:
    """The maximal difference patterns D (axes where u and v differ) over the secret graph's edges."""
    domain, graph = policy.domain, policy.secrets
    shape = tuple(int(n) for n in domain.shape)
    d = len(shape)
    U = axes_mask(i for i in range(d) if shape[i] >= 2)
    if not graph.has_edge(domain) or U == 0:
        return [], "exact: the secret graph has no edge on this domain"
    if graph.is_complete():
        return [U], ("exact: complete graph, an edge can change every axis of length >= 2 at once "
                     "(2 * the sum of theta_S over the S meeting them)")
    cliques = graph.agreement_cliques(domain)
    if cliques is not None:
        # an edge joins two values that agree on every axis of one F: it changes any non-empty set of the others
        pats = maximal_sets(U & ~axes_mask(F) for F in cliques)
        pats = sorted(pats, key=lambda m: mask_axes(m, d))  # in the order of the axes, as combinations list them
        return pats, (f"exact: the edges of {graph!r} join the values that agree on every attribute of one of "
                      f"{len(cliques)} sets; the largest change is over the {len(pats)} maximal sets of the other "
                      "axes of length >= 2 (2 * the sum of theta_S over the S meeting the set)")
    if graph.threshold_steps(domain) is not None:
        # translation invariant, metric monotone in |code differences|: pattern D is realised iff the
        # unit steps (code 0 -> 1 on every axis of D) are an edge
        strides = np.array(domain.strides, dtype=np.int64)
        cand = [m for m in range(1, 1 << d) if m & ~U == 0]
        j = np.array([sum(int(strides[i]) for i in mask_axes(m, d)) for m in cand], dtype=np.int64)
        ok = graph.edge_mask(domain, np.zeros_like(j), j)
        pats = [m for m, e in zip(cand, ok) if e]
        return maximal_sets(pats), (f"exact: {graph!r} is translation invariant with a metric monotone in each "
                                    "coordinate's difference, so the axes an edge can change together are those "
                                    "whose unit steps together are an edge")
    N = int(domain.size)
    if graph.lists_edges() or N <= LISTED_EDGE_DOMAIN:
        I, J = graph.iter_edges(domain, limit=max(N, 1))
        if I.shape[0] == 0:
            return [], "exact: the secret graph has no edge on this domain"
        ci = np.stack(np.unravel_index(I, shape), axis=1)
        cj = np.stack(np.unravel_index(J, shape), axis=1)
        bits = ((ci != cj) * (1 << np.arange(d))[None, :]).sum(axis=1)
        return maximal_sets(np.unique(bits).tolist()), f"exact: difference patterns of the {I.shape[0]} listed edges"
    raise ParameterError("policy", f"policy: the marginals strategy's sensitivity needs the axes each edge can "
                                   f"change; it is known for complete graphs, unions of agreement "
                                   f"cliques (Attribute, Partition.by_attributes), distance thresholds, edge lists "
                                   f"(Custom) and any graph on at most {LISTED_EDGE_DOMAIN} values, not for "
                                   f"{graph!r} on {N} values")


def sensitivity_model(policy, shape: tuple[int, ...] | None = None) -> Sensitivity:
    if isinstance(policy, str):
        if policy != ADD_REMOVE:
            raise ParameterError("policy", f"policy must be a Policy or {ADD_REMOVE!r}, got {policy!r}")
        if shape is None:
            raise ParameterError("shape", "shape is required with policy='add_remove'")
        d = len(shape)
        return Sensitivity(np.ones((1, 1 << d)), [],
                            "exact: add/remove neighbours, one record adds 1 to one cell of every marginal "
                            "(the sum of every theta_S, the total included)", True, d)
    policy = plain_policy(policy)
    shp = check_shape(policy.domain.shape, "policy.domain.shape")
    if shape is not None and tuple(shape) != shp:
        raise ParameterError("shape", f"shape {tuple(shape)} does not match the policy's domain shape {shp}")
    pats, how = _edge_patterns(policy)
    return Sensitivity(_pattern_rows(pats, len(shp)), pats, how, False, len(shp))


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
      edge changes 1 .. c attributes; axes of length 1 never change); in
      general, for a graph of
      :meth:`~blowfish_privacy.policy.secrets.SecretGraph.agreement_cliques`
      ``F``, the axes of length >= 2 outside each ``F``;
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
        shp = check_shape(policy.domain.shape, "policy.domain.shape")
    else:
        shp = check_shape(shape) if shape is not None else None
    model = sensitivity_model(policy, shp)
    theta = weights_vector(weights, shp)
    if np.all(theta == np.round(theta)):
        return model.exact_int([int(t) for t in theta]), model.how
    return model.exact(theta), model.how
