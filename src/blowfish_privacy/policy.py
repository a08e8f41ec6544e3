"""Blowfish policies and their policy-specific sensitivity (000 Sec 3.3, Sec 5).

A policy ``P = (T, G, I_Q)`` (000 Def 3.1) pairs a domain ``T``, a secret
graph ``G`` and public constraints ``Q``.  Without constraints two datasets
are neighbours when one individual's value moves along one edge of ``G``,
so for a query ``f(D) = sum_t g(t)`` the policy-specific global sensitivity
(000 Def 5.1) is

    S(f, P) = max over edges (x, y) of ||g(x) - g(y)||_1,

and the Laplace mechanism calibrated to it gives ``(epsilon, P)``-Blowfish
privacy (000 Thm 5.1).  Public constraints change the neighbours (000
Sec 8) and are not supported here yet.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .domain import Domain, Ordinal
from .errors import UnsupportedPolicyError
from .secrets import EDGE_LIMIT, SecretGraph

__all__ = ["Policy", "Sensitivity", "W_LIMIT"]

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
    constraints : sequence, default ()
        Public constraints ``Q``.  Only the empty sequence is supported for
        now.

    Raises
    ------
    TypeError
        If ``domain`` or ``secrets`` has the wrong type.
    ValueError
        If the secret graph does not fit the domain.
    UnsupportedPolicyError
        If ``constraints`` is not empty.

    Examples
    --------
    >>> from blowfish_privacy.domain import Domain
    >>> from blowfish_privacy.secrets import DistanceThreshold
    >>> p = Policy(Domain.ordinal("age", 0, 99), DistanceThreshold(5))
    >>> p.sensitivity("cumulative"), p.distance(0, 12)
    (5, 3)
    """

    def __init__(self, domain: Domain, secrets: SecretGraph, constraints: Iterable[Any] = ()) -> None:
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
        if constraints:
            raise UnsupportedPolicyError(
                f"public constraints are not supported yet: constraints={constraints!r}; "
                f"only constraints=() (no public constraints) is allowed"
            )
        self.domain = domain
        self.secrets = secrets
        self.constraints = constraints

    def __repr__(self) -> str:
        return f"Policy({self.domain!r}, {self.secrets!r}, constraints={list(self.constraints)!r})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Policy)
            and self.domain == other.domain
            and self.secrets == other.secrets
            and self.constraints == other.constraints
        )

    __hash__ = None  # type: ignore[assignment]

    def explain(self, epsilon=1.0):
        """What this policy protects, in plain words and tables (see :mod:`.explain`)."""
        from .explain import explain

        return explain(self, epsilon)

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
        value, exact, note = graph._max_weighted_l1(domain, graph._binding(domain), scale)
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
        bound = graph._binding(domain)
        per_chunk = max(1, _CHUNK_ELEMENTS // q)
        for i, j in graph._edge_chunks(domain, bound, per_chunk):
            for start in range(0, i.shape[0], per_chunk):
                a, b = i[start : start + per_chunk], j[start : start + per_chunk]
                diff = np.abs(cols[a] - cols[b]).sum(axis=1)
                if diff.shape[0]:
                    best = max(best, diff.max().item())
        return Sensitivity(_number(best), exact, note)
