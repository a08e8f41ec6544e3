"""Privacy budget accounting: sequential and parallel composition.

Sequential composition (000 Thm 4.1): running (eps_1, P)- and
(eps_2, P)-Blowfish private mechanisms on the same data, the second possibly
depending on the first's output, is (eps_1 + eps_2, P)-Blowfish private.

Parallel composition with a cardinality constraint (000 Thm 4.2): for a
policy without constraints other than the known number of tuples,
mechanisms run on *disjoint* subsets of individuals cost the maximum of
their epsilons, not the sum.  With general public constraints this can fail
(000 Sec 4.1, the gender example), so parallel groups are refused for
policies that carry constraints.

All arithmetic is exact (fractions): a float epsilon is read as the exact
binary value it holds, so the ledger never rounds a spend down.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from fractions import Fraction
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ._validation import as_fraction
from ._typing import Real
from .errors import BudgetExceededError, ParameterError, UnsupportedPolicyError

if TYPE_CHECKING:
    from .mechanisms.plan import Release
    from .policy import Policy


def _spend_value(epsilon, name: str = "epsilon") -> Fraction:
    """Exact epsilon of a number, a decimal string or a result object.

    A result object's ``epsilon_exact`` is used as is.  A float is taken at
    its exact binary value (0.1 is slightly more than 1/10, so ten float
    spends of 0.1 exceed a total of 1); a string such as ``"0.1"`` is read as
    the exact decimal.
    """
    exact = getattr(epsilon, "epsilon_exact", None)
    if exact is not None:
        return as_fraction(exact, name, allow_zero=True)
    if isinstance(epsilon, str):
        try:
            epsilon = Fraction(epsilon)
        except (ValueError, ZeroDivisionError):  # "1/0" is a fraction with a zero denominator
            raise ValueError(f"{name} must be a number or a decimal string (e.g. 0.5 or \"0.5\"), "
                             f"got {epsilon!r}") from None
    return as_fraction(epsilon, name, allow_zero=True)


def composed_cost(rows: Iterable[tuple[Fraction | float | str, object]]) -> Fraction:
    """Budget used by ``(epsilon, parallel group or None)`` rows: the one composition rule.

    Sequential spends add up (000 Thm 4.1); the spends of one parallel
    group, over disjoint groups of individuals with no secret edge between
    them, cost their largest epsilon (000 Thm 4.2).  Used by the
    :class:`Accountant`, the release specs and the SQLite ledger alike.
    """
    total = Fraction(0)
    groups: dict = {}
    for eps, group in rows:
        eps = Fraction(eps)
        if group is None:
            total += eps
        else:
            groups[group] = max(groups.get(group, Fraction(0)), eps)
    return total + sum(groups.values(), Fraction(0))


@dataclass(frozen=True)
class Entry:
    """One line of the ledger: a sequential spend or a closed parallel group."""

    epsilon: Fraction
    label: str
    kind: str  # "sequential" or "parallel"
    parts: tuple[tuple[str, Fraction], ...] = ()


class Accountant:
    """Tracks epsilon spent against a total budget.

    Parameters
    ----------
    total_epsilon : float or Fraction, > 0
        The whole budget.
    policy : Policy, optional
        The policy the spends are under; parallel composition is refused
        when it has public constraints (000 Thm 4.3 would be needed).

    Examples
    --------
    >>> from blowfish_privacy import Accountant
    >>> acct = Accountant(1.0)
    >>> acct.spend(0.25, label="cdf")
    >>> with acct.parallel(label="by region") as group:
    ...     group.spend(0.5, ids=[0, 1, 2])
    ...     group.spend(0.5, ids=[3, 4])
    >>> acct.spent
    0.75
    """

    def __init__(self, total_epsilon: Real | str, *, policy: Policy | None = None) -> None:
        try:
            total: Fraction | None = _spend_value(total_epsilon, "total_epsilon")
        except ParameterError:  # worded with a spend's rule (>= 0); a budget's rule is > 0
            total = None
        if not total:
            raise ParameterError("total_epsilon", f"total_epsilon must be a finite number > 0 (the whole budget), "
                                                  f"got {total_epsilon!r}")
        self._total = total
        self._spent = Fraction(0)
        self._entries: list[Entry] = []
        self._policy = policy
        self._lock = threading.Lock()

    # -- state ---------------------------------------------------------------
    @property
    def total(self) -> float:
        return float(self._total)

    @property
    def spent(self) -> float:
        return float(self._spent)

    @property
    def remaining(self) -> float:
        return float(self._total - self._spent)

    @property
    def spent_exact(self) -> Fraction:
        return self._spent

    @property
    def remaining_exact(self) -> Fraction:
        return self._total - self._spent

    @property
    def entries(self) -> list[Entry]:
        return list(self._entries)

    def __repr__(self) -> str:
        return f"Accountant(total={self.total}, spent={self.spent}, remaining={self.remaining})"

    # -- spending ------------------------------------------------------------
    def _charge(self, amount: Fraction, what: str) -> None:
        # caller holds the lock
        if self._spent + amount > self._total:
            raise BudgetExceededError(
                f"{what} needs epsilon {float(amount):.6g} but only "
                f"{float(self._total - self._spent):.6g} of {float(self._total):.6g} remains "
                f"(spent {float(self._spent):.6g}); nothing was spent"
            )
        self._spent += amount

    def check(self, epsilon: Real | str | Release) -> None:
        """Raise BudgetExceededError if spending ``epsilon`` now would overspend."""
        eps = _spend_value(epsilon)
        if self._spent + eps > self._total:
            raise BudgetExceededError(
                f"epsilon {float(eps):.6g} exceeds the remaining budget "
                f"{float(self._total - self._spent):.6g}"
            )

    def spend(self, epsilon: Real | str | Release, *, label: str = "") -> None:
        """Record a sequential spend (000 Thm 4.1).

        ``epsilon`` is a number or a mechanism result (its exact spend is
        used).  Raises BudgetExceededError, spending nothing, if the total
        would be exceeded.
        """
        eps = _spend_value(epsilon)
        with self._lock:
            self._charge(eps, f"spend {label!r}" if label else "this spend")
            self._entries.append(Entry(eps, str(label), "sequential"))

    def parallel(self, *, label: str = "") -> "ParallelGroup":
        """A group of spends on disjoint subsets of individuals (000 Thm 4.2).

        The group costs the largest epsilon spent in it.  Use as a context
        manager; see the class example.
        """
        constraints = getattr(self._policy, "constraints", ())
        if constraints:
            raise UnsupportedPolicyError(
                "parallel composition under public constraints needs Theorem 4.3 of the Blowfish paper "
                "(constraints affecting disjoint subsets), which is not supported; "
                "spend sequentially instead"
            )
        return ParallelGroup(self, str(label))


@dataclass
class ParallelGroup:
    """Spends on pairwise disjoint id subsets; costs their maximum."""

    accountant: Accountant
    label: str
    _max: Fraction = Fraction(0)
    _parts: list = field(default_factory=list)
    _ids: list = field(default_factory=list)
    _closed: bool = False

    def __enter__(self) -> "ParallelGroup":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def spend(self, epsilon: Real | str | Release, *, ids: npt.ArrayLike, label: str = "") -> None:
        """Spend ``epsilon`` on the individuals ``ids`` (1-D array-like of ids).

        Raises ValueError if ``ids`` overlaps an earlier subset of this group
        (the theorem needs disjoint subsets), BudgetExceededError if the
        group's new maximum would overspend.
        """
        if self._closed:
            raise ValueError("this parallel group is closed; open a new one with Accountant.parallel()")
        eps = _spend_value(epsilon)
        arr = np.asarray(ids)
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError(f"ids must be a non-empty 1-D array-like of individual ids, got shape {arr.shape}")
        if len(np.unique(arr)) != arr.size:
            raise ValueError("ids contains repeated ids; give each individual once")
        for prev in self._ids:
            overlap = np.intersect1d(prev, arr)
            if overlap.size:
                raise ValueError(
                    f"ids overlaps an earlier subset of this parallel group (e.g. id {overlap[0]!r}); "
                    "parallel composition needs disjoint subsets of individuals"
                )
        acct = self.accountant
        with acct._lock:
            if eps > self._max:
                acct._charge(eps - self._max, f"parallel spend {label or self.label!r}")
                self._max = eps
            self._ids.append(arr)
            self._parts.append((str(label), eps))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._parts:
            with self.accountant._lock:
                self.accountant._entries.append(
                    Entry(self._max, self.label, "parallel", tuple(self._parts))
                )
