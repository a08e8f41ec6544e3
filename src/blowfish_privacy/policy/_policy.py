"""Blowfish policies and their policy-specific sensitivity (000 Sec 3.3, Sec 5).

A policy ``P = (T, G, I_Q)`` (000 Def 3.1) pairs a domain ``T``, a secret
graph ``G`` and public constraints ``Q``.  Without constraints two datasets
are neighbours when one individual's value moves along one edge of ``G``,
so for a query ``f(D) = sum_t g(t)`` the policy-specific global sensitivity
(000 Def 5.1) is

    S(f, P) = max over edges (x, y) of ||g(x) - g(y)||_1,

and the Laplace mechanism calibrated to it gives ``(epsilon, P)``-Blowfish
privacy (000 Thm 5.1).

Public count constraints change the neighbours (000 Def 4.1, Sec 8).  For
the complete histogram the value calibrated with is proven safe under Def
4.1 read literally (see Corrections to the papers,
docs/explanation/corrections.md): the bound of the complete secret graph
``K`` (``S(h, (T, G, Q)) <= S(h, (T, K, Q))``), computed by Thm 8.2 from an
exact search of the policy graph of ``(T, K, Q)`` when ``Q`` is sparse
w.r.t. ``K``, or the corrected Cor 8.3 bound ``2 (|Q| + 1)``.  Overlapping
constraints with no proven bound are refused.  The 004 add/remove move
model for exact cuboids is available as ``neighbours="moves"``
(004 Lemma 4.2).  See :meth:`Policy.sensitivity_report`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import constraints as _constraints
from ._explanation import Explanation, describe_policy
from .constraints import Constraint, Marginal, NoProvenSensitivityError
from .domain import Domain, Ordinal
from .secrets import EDGE_LIMIT, DistanceThreshold, SecretGraph

__all__ = ["Policy", "Sensitivity", "SensitivityReport", "W_LIMIT", "require_policy"]
_NEIGHBOURS = ("blowfish", "moves")

#: Largest domain for which an explicit query matrix ``W`` is accepted.
W_LIMIT = EDGE_LIMIT
_QUERIES = ("histogram", "cumulative", "sum")
_CHUNK_ELEMENTS = 1 << 22


@dataclass(frozen=True)
class Sensitivity:
    """A policy-specific sensitivity and how it was obtained.

    Attributes
    ----------
    value : int or float
        The sensitivity (a Python int when integral).
    exact : bool
        True when ``value`` is the exact maximum; False when it is a proven
        upper bound (safe to calibrate with, possibly loose).
    note : str
        How the value was obtained when it is not exact, else "".
    """

    value: int | float
    exact: bool
    note: str = ""


@dataclass(frozen=True)
class SensitivityReport:
    """How a sensitivity under public constraints was obtained.

    Attributes
    ----------
    value : int
        The sensitivity to calibrate with (proven upper bound).
    rule : str
        The rule used, with its citation.
    tight : bool
        True when ``value`` is known to be attained by some neighbour pair
        (for databases large enough); False when it is only an upper bound.
    exact_search : bool or None
        For the policy-graph rule: whether the longest cycle/path search
        finished (True) or the safe bound was used (False); None otherwise.
    alpha, xi : int or None
        Longest simple cycle and v+ to v- path of the policy graph of
        ``(T, K, Q)`` when searched exactly.
    num_queries : int
        ``|Q|``, the number of count queries.
    neighbours : str
        ``"blowfish"`` (000 Def 4.1) or ``"moves"`` (004 add/remove moves).
    """

    value: int
    rule: str
    tight: bool
    exact_search: bool | None
    alpha: int | None
    xi: int | None
    num_queries: int
    neighbours: str


def _number(value: Any) -> int | float:
    if isinstance(value, (numbers.Integral, np.integer)):
        return int(value)
    value = float(value)
    return int(value) if value.is_integer() else value


class Policy:
    """A Blowfish policy ``(T, G, I_Q)`` (000 Def 3.1).

    Parameters
    ----------
    domain : Domain
        The domain ``T``.
    secrets : SecretGraph
        The discriminative secret graph ``G``; checked against ``domain``.
    constraints : sequence of Constraint, default ()
        Public count constraints ``Q`` (:class:`~blowfish_privacy.policy.constraints.CountQuery`,
        :class:`~blowfish_privacy.policy.constraints.RangeCount`,
        :class:`~blowfish_privacy.policy.constraints.Marginal`).
    neighbours : {"blowfish", "moves"}, default "blowfish"
        ``"blowfish"``: neighbours of 000 Def 4.1.  ``"moves"``: the exact
        cuboid model of 004 Sec 3-4 (tables are neighbours when no proper
        part of the minimal add/remove move sequence between them keeps the
        cuboids); needs one or two :class:`Marginal` constraints and ignores
        ``secrets``.  It is a different privacy notion, named as such in
        every report.

    Raises
    ------
    TypeError
        If ``domain`` or ``secrets`` has the wrong type.
    ValueError
        If the secret graph does not fit the domain.

    Examples
    --------
    >>> from blowfish_privacy.policy.domain import Domain
    >>> from blowfish_privacy.policy.secrets import DistanceThreshold
    >>> p = Policy(Domain.ordinal("age", 0, 99), DistanceThreshold(5))
    >>> p.sensitivity("cumulative"), p.distance(0, 12)
    (5, 3)
    """

    def __init__(
        self, domain: Domain, secrets: SecretGraph, constraints: Iterable[Any] = (), neighbours: str = "blowfish"
    ) -> None:
        if not isinstance(domain, Domain):
            raise TypeError(f"domain must be a Domain, got {domain!r} of type {type(domain).__name__}")
        if not isinstance(secrets, SecretGraph):
            raise TypeError(
                f"secrets must be a SecretGraph (FullDomain, Attribute, Partition, DistanceThreshold, Line, "
                f"Custom), got {secrets!r} of type {type(secrets).__name__}"
            )
        if isinstance(constraints, (str, bytes)) or not isinstance(constraints, Iterable):
            raise TypeError(f"constraints must be a sequence of constraints, got {constraints!r}")
        constraints = tuple(constraints)
        secrets.validate(domain)
        for k, c in enumerate(constraints):
            if not isinstance(c, Constraint):
                raise TypeError(
                    f"constraints[{k}] must be a CountQuery, RangeCount or Marginal, got {c!r} of type "
                    f"{type(c).__name__}"
                )
            c.num_queries(domain)
            if not isinstance(c, Marginal):
                c.mask(domain)
            else:
                c.public_answers(domain)
        if neighbours not in _NEIGHBOURS:
            raise ValueError(f"neighbours must be one of {list(_NEIGHBOURS)}, got {neighbours!r}")
        if neighbours == "moves" and (
            not 1 <= len(constraints) <= 2 or not all(isinstance(c, Marginal) for c in constraints)
        ):
            raise ValueError(
                "neighbours='moves' (Lemma 4.2 of the exact-cuboids draft) needs one or two Marginal constraints, "
                f"got {list(constraints)!r}"
            )
        self.neighbours = neighbours
        self.domain = domain
        self.secrets = secrets
        self.constraints: tuple[Constraint, ...] = constraints

    @classmethod
    def from_bounds(cls, bounds: tuple[float | Sequence[float] | np.ndarray, float | Sequence[float] | np.ndarray], *,
                    theta: float = 1, metric: str = "l1", names: Sequence[str] | None = None) -> Policy:
        """The policy of a box of integer bounds: ordinal attributes and a distance threshold.

        As ``bounds=`` of diffprivlib's estimators: ``bounds = (lower,
        upper)``, one integer each per feature (scalars for one feature).
        The domain is the ordinal attributes ``x0 .. x{d-1}`` (or ``names``)
        over ``lower[a] .. upper[a]`` (unit bins); the secrets are
        ``DistanceThreshold(theta, metric)``: an individual's value is
        protected against an adversary telling it from any value within
        distance theta.  The bounds must be public (chosen without looking
        at the data): values outside them are not in the domain.

        Raises
        ------
        TypeError, ValueError
            ``bounds`` not a pair of equal-length sequences of integers
            with ``lower <= upper``, ``names`` not ``d`` names, or a bad
            ``theta`` or ``metric`` (as :class:`DistanceThreshold`).

        Examples
        --------
        >>> p = Policy.from_bounds(([0, 0], [255, 99]), theta=4)
        >>> p.domain.names, p.domain.shape, p.secrets
        (('x0', 'x1'), (256, 100), DistanceThreshold(theta=4, metric='l1'))
        """
        if isinstance(bounds, (str, bytes)) or not hasattr(bounds, "__len__") or len(bounds) != 2:
            raise TypeError(f"bounds must be a pair (lower, upper) of integers or of sequences of integers, one per "
                            f"feature, got {bounds!r}")
        ends = []
        for which, value in zip(("lower", "upper"), bounds):
            arr = np.atleast_1d(np.asarray(value))
            if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iuf":
                raise TypeError(f"bounds: {which} must be an integer or a 1-D sequence of integers, got {value!r}")
            if arr.dtype.kind == "f" and not (np.isfinite(arr).all() and (arr == np.round(arr)).all()):
                raise ValueError(f"bounds: {which} must hold integers (the domain's values are integers), got "
                                 f"{arr.tolist()}")
            ends.append([int(v) for v in arr.tolist()])
        lower, upper = ends
        if len(lower) != len(upper):
            raise ValueError(f"bounds: lower and upper must have one value per feature each, got {len(lower)} and "
                             f"{len(upper)}")
        d = len(lower)
        if names is None:
            names = [f"x{a}" for a in range(d)]
        elif isinstance(names, str) or len(list(names)) != d:
            raise ValueError(f"names must be {d} attribute names (one per feature of bounds), got {names!r}")
        bad = [a for a in range(d) if lower[a] > upper[a]]
        if bad:
            raise ValueError(f"bounds: lower must be <= upper for every feature, got lower={lower[bad[0]]} > "
                             f"upper={upper[bad[0]]} for feature {bad[0]}")
        domain = Domain([Ordinal(str(n), lo, hi) for n, lo, hi in zip(names, lower, upper)])
        return cls(domain, DistanceThreshold(theta, metric))

    def __repr__(self) -> str:
        extra = "" if self.neighbours == "blowfish" else f", neighbours={self.neighbours!r}"
        return f"Policy({self.domain!r}, {self.secrets!r}, constraints={list(self.constraints)!r}{extra})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Policy)
            and self.domain == other.domain
            and self.secrets == other.secrets
            and self.constraints == other.constraints
            and self.neighbours == other.neighbours
        )

    __hash__ = None  # type: ignore[assignment]

    def explain(self, epsilon: float = 1.0) -> Explanation:
        """What this policy protects, in plain words and tables.

        The secret graph in words (:meth:`SecretGraph.describe`), example
        pairs of values with their distance d_G and guarantee
        e^(epsilon d_G) (000 eq. 9), and the sensitivity of common queries
        against plain differential privacy.  The expected errors of the
        range-query mechanisms come from the mechanisms' plans, a layer
        above policies: :func:`blowfish_privacy.explain.explain` adds them.

        Returns
        -------
        blowfish_privacy.explain.Explanation
        """
        return describe_policy(self, epsilon)

    # -- the graph on flat indices ------------------------------------------
    def is_edge(self, i: Any, j: Any) -> bool | np.ndarray:
        """Whether flat indices ``i`` and ``j`` are joined by a secret edge.

        Returns a bool for scalars, else a bool array of the broadcast shape.
        """
        mask = self.secrets.edge_mask(self.domain, i, j)
        return bool(mask) if mask.ndim == 0 else mask

    def distance(self, i: Any, j: Any) -> int | float | np.ndarray:
        """Shortest-path length ``d_G`` between flat indices (000 eq. 9).

        Returns an int (or ``math.inf`` when disconnected) for scalars, else
        a float64 array with ``inf`` where disconnected.
        """
        dist = self.secrets.distance_index(self.domain, i, j)
        if dist.ndim == 0:
            value = float(dist)
            return math.inf if math.isinf(value) else int(value)
        return dist

    def guarantee(self, i: Any, j: Any, epsilon: float) -> float | np.ndarray:
        """Bound on ``|log(P[M(D1) in S] / P[M(D2) in S])|`` when one individual's value is ``i`` vs ``j``.

        An ``(epsilon, P)``-Blowfish private mechanism without constraints
        satisfies ``epsilon * d_G(i, j)`` here (000 eq. 9); ``inf`` means
        the policy lets ``i`` and ``j`` be told apart.

        Parameters
        ----------
        i, j : int or array_like of int
            Flat indices.
        epsilon : float
            Finite and ``> 0``.
        """
        if isinstance(epsilon, (bool, np.bool_)) or not isinstance(epsilon, (numbers.Real, np.number)):
            raise TypeError(f"epsilon must be a finite number > 0, got {epsilon!r}")
        eps = float(epsilon)
        if not math.isfinite(eps) or eps <= 0:
            raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}")
        dist = self.secrets.distance_index(self.domain, i, j)
        out = np.where(dist == 0, 0.0, eps * dist)
        return float(out) if out.ndim == 0 else out

    # -- sensitivity ----------------------------------------------------------
    def sensitivity(self, query: Any, *, attribute: str | None = None) -> int | float:
        """Policy-specific global sensitivity ``S(f, P)`` (000 Def 5.1).

        Parameters
        ----------
        query : {"histogram", "cumulative", "sum"} or numpy.ndarray
            ``"histogram"``: the complete histogram (``2`` with an edge,
            else ``0``).  ``"cumulative"``: the cumulative histogram of a
            1-D ordinal domain (``max |bin(x) - bin(y)|`` over edges).
            ``"sum"``: sums of ordinal attribute values (one attribute with
            ``attribute=name``, else the vector of all ordinal attributes'
            sums; bin values are the lower edges).  An array ``W`` of shape
            ``(q, |T|)``: the linear query ``W @ histogram`` (``|T| <=``
            :data:`W_LIMIT`).
        attribute : str, optional
            Only for ``"sum"``: the ordinal attribute to sum.

        Returns
        -------
        int or float
            Exact where the :class:`Sensitivity` from
            :meth:`sensitivity_info` says so, otherwise a proven upper bound.
        """
        return self.sensitivity_info(query, attribute=attribute).value

    def sensitivity_info(self, query: Any, attribute: str | None = None) -> Sensitivity:
        """Like :meth:`sensitivity`, also saying whether the value is exact."""
        graph, domain = self.secrets, self.domain
        if self.constraints:
            if not (isinstance(query, str) and query == "histogram") or attribute is not None:
                raise NoProvenSensitivityError(
                    "query must be 'histogram' for a policy with public constraints "
                    "(Section 8 of the Blowfish paper proves bounds "
                    f"only for the complete histogram), got query={query!r}"
                )
            rep = self.sensitivity_report("histogram")
            return Sensitivity(rep.value, rep.tight, rep.rule)
        if isinstance(query, np.ndarray):
            self._no_attribute(attribute, "a matrix W")
            return self._matrix_sensitivity(query)
        if not isinstance(query, str) or query not in _QUERIES:
            raise ValueError(
                f"query must be one of {list(_QUERIES)} or a numpy array W of shape (q, {domain.size}), got {query!r}"
            )
        if query == "histogram":
            self._no_attribute(attribute, "'histogram'")
            return Sensitivity(2 if graph.has_edge(domain) else 0, True)
        if query == "cumulative":
            self._no_attribute(attribute, "'cumulative'")
            if domain.ndim != 1 or not isinstance(domain.attributes[0], Ordinal):
                raise ValueError(f"query 'cumulative' needs a 1-D ordinal domain, got {domain!r}")
            scale = [1]
        else:
            scale = self._sum_scale(attribute)
        value, exact, note = graph.max_weighted_l1(domain, scale)
        return Sensitivity(int(value), exact, note)

    @staticmethod
    def _no_attribute(attribute: Any, what: str) -> None:
        if attribute is not None:
            raise ValueError(f"attribute applies only to query 'sum', got attribute={attribute!r} with {what}")

    def _sum_scale(self, attribute: str | None) -> list[int]:
        domain = self.domain
        ordinal = [a for a in domain.attributes if isinstance(a, Ordinal)]
        if attribute is None:
            if not ordinal:
                raise ValueError(
                    f"query 'sum' needs an ordinal attribute, but every attribute of the domain is categorical: "
                    f"{list(domain.names)}"
                )
            return [a.bin_width if isinstance(a, Ordinal) else 0 for a in domain.attributes]
        if not isinstance(attribute, str) or attribute not in domain.names:
            raise ValueError(f"attribute must be one of the attribute names {list(domain.names)}, got {attribute!r}")
        target = domain.attribute(attribute)
        if not isinstance(target, Ordinal):
            raise ValueError(
                f"attribute {attribute!r} is categorical; query 'sum' needs an ordinal attribute, one of "
                f"{[a.name for a in ordinal]}"
            )
        return [a.bin_width if a is target else 0 for a in domain.attributes]

    def _matrix_sensitivity(self, W: np.ndarray) -> Sensitivity:
        domain, graph = self.domain, self.secrets
        if domain.size > W_LIMIT:
            raise ValueError(
                f"W: a query matrix is supported only for domains of at most {W_LIMIT} values, "
                f"got |T| = {domain.size}"
            )
        if W.dtype.kind == "b":
            W = W.astype(np.int64)
        if W.dtype.kind not in "iuf":
            raise TypeError(f"W must be a real numeric array, got dtype {W.dtype}")
        if W.ndim != 2 or W.shape[1] != domain.size:
            raise ValueError(f"W must have shape (q, {domain.size}) with q >= 1, got shape {W.shape}")
        if W.shape[0] == 0:
            raise ValueError(f"W must have shape (q, {domain.size}) with q >= 1, got shape {W.shape}")
        exact = True
        note = ""
        if W.dtype.kind == "f":
            if not np.isfinite(W).all():
                raise ValueError("W must hold finite numbers, got NaN or infinity")
            work = W.astype(np.float64)
        else:
            peak = int(np.abs(W.astype(object)).max()) if W.dtype == np.uint64 else int(np.abs(W).max())
            if 2 * peak * W.shape[0] < 2**62:
                work = W.astype(np.int64)
            else:
                work = W.astype(np.float64)
                exact = False
                note = "integer entries too large for exact int64 sums; computed in float64"
        cols = np.ascontiguousarray(work.T)  # one row per domain value
        q = cols.shape[1]
        best = 0
        per_chunk = max(1, _CHUNK_ELEMENTS // q)
        for i, j in graph.edge_chunks(domain, per_chunk):
            for start in range(0, i.shape[0], per_chunk):
                a, b = i[start : start + per_chunk], j[start : start + per_chunk]
                diff = np.abs(cols[a] - cols[b]).sum(axis=1)
                if diff.shape[0]:
                    best = max(best, diff.max().item())
        return Sensitivity(_number(best), exact, note)

    # -- public constraints (000 Sec 8, 004 Sec 4) ------------------------------
    def sensitivity_report(self, query: str = "histogram") -> SensitivityReport:
        """Sensitivity of the complete histogram and how it was obtained.

        Rules, in order (each proven; see Corrections to the papers,
        docs/explanation/corrections.md):

        1. No secret edges: no neighbours, ``0``.  A marginal over every
           attribute makes the histogram public: every feasible database has
           the same histogram, ``0``.
        2. ``neighbours="moves"``: 004 Lemma 4.2, ``2`` for one cuboid and
           ``2 min(size(C1 - C2), size(C2 - C1))`` for two.
        3. One marginal ``C`` with ``[C]`` a proper subset of the
           attributes: ``2 size(C)`` (000 Thm 8.4 for the complete graph;
           for any other secret graph an upper bound, since
           ``S(h, (T, G, Q)) <= S(h, (T, K, Q))``).  Tight for full-domain
           secrets.
        4. Otherwise ``Q`` must be sparse w.r.t. the complete graph ``K``
           (else :class:`~blowfish_privacy.policy.constraints.NotSparseError`); then
           ``2 max(alpha, xi)`` of the policy graph of ``(T, K, Q)`` (000
           Thm 8.2 under ``K``) from the exact search, or, when the graph has
           more than :data:`~blowfish_privacy.policy.constraints.EXACT_VERTEX_LIMIT`
           vertices or the search hits its work limit, the bound
           ``2 max(|Q|, 1)`` when ``v+`` has no edge but ``(v+, v-)`` and
           ``2 (|Q| + 1)`` otherwise (Cor 8.3 corrected: ``xi <= |Q| + 1``).
           Claimed tight only for full-domain secrets when a neighbour pair
           attaining it is built from the longest cycle or path
           (:func:`~blowfish_privacy.policy.constraints.complete_graph_witness`).

        "Tight" means attained for databases with at least ``value / 2``
        tuples.

        Parameters
        ----------
        query : {"histogram"}
            The complete histogram, the only query with proven bounds here.

        Raises
        ------
        NoProvenSensitivityError
            For another query, or constraints with no proven bound.
        """
        if query != "histogram":
            raise NoProvenSensitivityError(
                f"query must be 'histogram' for a policy with public constraints, got {query!r}"
            )
        domain, constraints = self.domain, self.constraints
        nq = sum(c.num_queries(domain) for c in constraints)

        def report(value, rule, tight, exact=None, alpha=None, xi=None):
            return SensitivityReport(int(value), rule, tight, exact, alpha, xi, nq, self.neighbours)

        if not constraints:
            value = 2 if self.secrets.has_edge(domain) else 0
            return report(value, "no constraints: max over secret edges of ||h(x) - h(y)||_1 "
                                 "(Section 5 of the Blowfish paper)", True)
        if any(isinstance(c, Marginal) and len(c.attributes) == domain.ndim for c in constraints):
            return report(0, "a marginal over every attribute makes the histogram public", True)
        if self.neighbours == "moves":
            if len(constraints) == 1:
                return report(2, "Lemma 4.2(i) of the exact-cuboids draft, add/remove move model, "
                                 "one exact cuboid", True)
            a, b = (set(c.attributes) for c in constraints)
            size = {n: s for n, s in zip(domain.names, domain.shape)}
            s_ab = int(np.prod([size[n] for n in a - b], dtype=np.int64))
            s_ba = int(np.prod([size[n] for n in b - a], dtype=np.int64))
            return report(
                2 * min(s_ab, s_ba),
                "Lemma 4.2(ii) of the exact-cuboids draft, add/remove move model, two exact cuboids: "
                "2 min(size(C1-C2), size(C2-C1))",
                True,
            )
        if not self.secrets.has_edge(domain):
            return report(0, "the secret graph has no edge: no neighbours "
                             "(condition 2 of Definition 4.1 of the Blowfish paper)", True)
        if len(constraints) == 1 and isinstance(constraints[0], Marginal):
            full = self.secrets.is_complete()
            return report(
                2 * max(nq, 1),
                "Theorem 8.4 of the Blowfish paper (one marginal, complete secret graph): 2 size(C)"
                + ("" if full else "; an upper bound for this secret graph since S(h,(T,G,Q)) <= S(h,(T,K,Q))"),
                full,
            )
        groups = _constraints.group_values(domain, constraints)
        if groups.labels.shape[0] > _constraints.GROUP_LIMIT:
            single = (groups.labels >= 0).sum(axis=1)
            if (single == 1).all():
                return report(
                    2 * max(nq, 1),
                    "every value satisfies exactly one query: Q is sparse w.r.t. K, alpha <= |Q|, xi = 1 "
                    "(Theorem 8.2 of the Blowfish paper under the complete graph)",
                    False,
                    False,
                )
            raise NoProvenSensitivityError(
                f"the constraints split the domain into {groups.labels.shape[0]} groups of values, more than the "
                f"{_constraints.GROUP_LIMIT} for which sparsity is checked; no sensitivity is proven. Use disjoint "
                f"constraints or pass an explicit sensitivity you take responsibility for"
            )
        pg = _constraints.policy_graph(domain, constraints, groups)
        plus_edges = sum(1 for u, _ in pg.edges if u == pg.v_plus)
        fallback = 2 * max(nq, 1) if plus_edges == 1 else 2 * (nq + 1)
        if nq + 2 > _constraints.EXACT_VERTEX_LIMIT:
            return report(
                fallback,
                f"safe bound (policy graph of {nq + 2} vertices is beyond the exact search limit "
                f"{_constraints.EXACT_VERTEX_LIMIT}): alpha <= |Q|, xi <= |Q| + 1 "
                "(Theorem 8.2 of the Blowfish paper, Corollary 8.3 corrected) "
                f"under the complete graph",
                False,
                False,
            )
        alpha, xi, exact, witnessed = _constraints.complete_graph_witness(pg, groups)
        if not exact:
            return report(
                fallback,
                "safe bound (exact search hit its work limit): alpha <= |Q|, xi <= |Q| + 1 "
                "(Theorem 8.2 of the Blowfish paper, Corollary 8.3 corrected) under the complete graph",
                False,
                False,
            )
        full = self.secrets.is_complete()
        return report(
            2 * max(alpha, xi),
            "Theorem 8.2 of the Blowfish paper under the complete secret graph (Q sparse w.r.t. K), "
            "exact longest cycle/path search; "
            + (
                "attained by a neighbour pair built from the longest cycle/path (Direction II)"
                if full and witnessed
                else "an upper bound for this secret graph since S(h,(T,G,Q)) <= S(h,(T,K,Q))"
            ),
            full and witnessed,
            True,
            alpha,
            xi,
        )


def require_policy(policy: Any, name: str = "policy") -> Policy:
    """``policy`` itself if it is a :class:`Policy`, else TypeError naming ``name`` and the type found."""
    if not isinstance(policy, Policy):
        raise TypeError(f"{name} must be a blowfish_privacy.Policy, got {type(policy).__name__}")
    return policy
