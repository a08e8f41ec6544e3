"""Graphs by how many attributes an edge changes: :class:`FullDomain` and :class:`Attribute`.

``FullDomain`` joins every two distinct values (any number of attributes
change: bounded differential privacy, 000 eq. 4); ``Attribute(c)`` joins
values that differ in at most ``c`` attributes (000 eq. 5 for ``c = 1``;
002 "attribute" policies ``G^{attr,c}``).
"""

from __future__ import annotations

from itertools import combinations
from typing import TYPE_CHECKING, Any

import numpy as np

from ..domain import is_int
from .base import ONE_VALUE, SecretGraph, SpecParameter, listing, ranges
from .records import differ
from .lattice import ceil_div

if TYPE_CHECKING:
    from ..domain import Domain


class FullDomain(SecretGraph):
    """The complete graph: every two distinct values (000 eq. 4).

    With no constraints this is bounded differential privacy (000 Sec 4.2).
    ``d_G(x, y) = 1`` for ``x != y``.
    """

    spec_name = "full_domain"

    def _key(self) -> tuple:
        return ()

    def __repr__(self) -> str:
        return "FullDomain()"

    def describe(self, domain: Domain) -> str:
        self._binding(domain)
        if domain.size < 2:
            return ONE_VALUE
        return (
            "Every two values of one individual are secret (the complete graph): an adversary cannot "
            "tell any two of them apart better than e^epsilon. This is bounded differential privacy."
        )

    def is_complete(self) -> bool:
        return True

    def agreement_cliques(self, domain: Domain) -> list[tuple[int, ...]] | None:
        self._binding(domain)
        return [()]

    def block_ids(self, domain: Domain, indices: Any = None) -> np.ndarray | None:
        self._binding(domain)
        if indices is None:
            return np.zeros(domain.size, dtype=np.int64)
        return np.zeros(domain.check_indices(indices, "indices").shape, dtype=np.int64)

    def _record_edge(self, X, Y):
        return differ(X, Y).any(axis=1)

    def _record_distance(self, X, Y):
        return differ(X, Y).any(axis=1).astype(np.float64)

    def _bind(self, domain):
        return True

    def _edge_mask(self, domain, bound, i, j):
        return i != j

    def _distance_index(self, domain, bound, i, j):
        return (i != j).astype(np.float64)

    def _has_edge(self, domain, bound):
        return domain.size >= 2

    def _max_weighted_l1(self, domain, bound, scale):
        if domain.size < 2:
            return 0, True, ""
        return sum(ranges(domain, scale)), True, ""


class Attribute(SecretGraph):
    """Values that differ in between 1 and ``c`` attributes (000 eq. 5 for ``c = 1``).

    ``d_G(x, y) = ceil(h / c)`` with ``h`` the number of differing attributes.

    Parameters
    ----------
    c : int, default 1
        Largest number of attributes an edge may change, ``>= 1``.
    """

    spec_name = "attribute"
    spec_parameters = (SpecParameter("c", (int,), "an integer >= 1", default=1),)

    def __init__(self, c: int = 1) -> None:
        super().__init__()
        if not is_int(c):
            raise TypeError(f"c must be an int >= 1, got {c!r} of type {type(c).__name__}")
        if c < 1:
            raise ValueError(f"c must be an int >= 1, got {c}")
        self.c = int(c)

    def _key(self) -> tuple:
        return (self.c,)

    def __repr__(self) -> str:
        return f"Attribute(c={self.c})"

    def describe(self, domain: Domain) -> str:
        self._binding(domain)
        if domain.size < 2:
            return ONE_VALUE
        names = listing(domain.names)
        if self.c >= domain.ndim:
            return (
                f"Values that differ in up to {self.c} attributes are secret, and the domain has "
                f"{domain.ndim} ({names}): every two values are secret (the complete graph), i.e. "
                f"bounded differential privacy."
            )
        which = "one attribute" if self.c == 1 else f"at most {self.c} attributes"
        d_g = "d_G = h" if self.c == 1 else f"d_G = ceil(h / {self.c})"
        return (
            f"Values of one individual that differ in {which} (of {names}) are secret: an adversary "
            f"cannot tell them apart better than e^epsilon. Values differing in h attributes are "
            f"protected by e^(epsilon d_G) with {d_g}, so changes of many attributes at once are "
            f"protected less."
        )

    def agreement_cliques(self, domain: Domain) -> list[tuple[int, ...]] | None:
        self._binding(domain)
        d = domain.ndim
        if self.c >= d:
            return [()]
        # an edge leaves at most c attributes free: the cliques agree on the others
        return [tuple(a for a in range(d) if a not in free) for free in combinations(range(d), self.c)]

    def _record_edge(self, X, Y):
        h = differ(X, Y).sum(axis=1)
        return (h >= 1) & (h <= self.c)

    def _record_distance(self, X, Y):
        h = differ(X, Y).sum(axis=1)
        return ceil_div(h, self.c).astype(np.float64)

    def _bind(self, domain):
        return True

    def _hamming(self, domain, i, j):
        return (domain._codes_unchecked(i) != domain._codes_unchecked(j)).sum(axis=-1)

    def _edge_mask(self, domain, bound, i, j):
        h = self._hamming(domain, i, j)
        return (h >= 1) & (h <= self.c)

    def _distance_index(self, domain, bound, i, j):
        return ceil_div(self._hamming(domain, i, j), self.c).astype(np.float64)

    def _has_edge(self, domain, bound):
        return domain.size >= 2

    def _max_weighted_l1(self, domain, bound, scale):
        if domain.size < 2:
            return 0, True, ""
        return sum(sorted(ranges(domain, scale), reverse=True)[: self.c]), True, ""
