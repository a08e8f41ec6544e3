"""Cumulative histograms: the input checks and the released type.

Shared by the cumulative mechanisms of :mod:`.cumulative` (ordered,
ordered hierarchical, hierarchical, identity; He, Machanavajjhala, Ding,
Blowfish Privacy, SIGMOD 2014, 000 Sec 7) and by the ordered hierarchical
engine :mod:`._oh`: the histogram and policy checks, the tree height, the
result type :class:`CumulativeRelease` (re-exported by :mod:`.cumulative`)
and the exact mean squared range error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from collections.abc import Sequence
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from ...policy._policy import require_policy
from ..histogram import check_histogram
from ..plan import Release

__all__ = ["CumulativeRelease", "DP_SENSITIVITY", "cumulative_theta", "policy_guarantee"]

# One domain value (or bin index), as :meth:`CumulativeRelease.range_query` takes it.
_Value = int | float | np.integer[Any] | np.floating[Any]
# Several of them: a sequence or an array (a 0-d array is answered as one value, a float).
_Values = Sequence[Any] | npt.NDArray[Any]


# ---------------------------------------------------------------------------
# input checks


def as_histogram(hist, size: int | None = None) -> np.ndarray:
    """:func:`.histogram.check_histogram` (of ``size`` bins when given): non-negative, total fits int64.

    The total n and every cumulative count are computed in int64; the
    messages name the shape, the dtype or the limit, never a count.
    """
    return check_histogram(hist, "hist", size)


def cumulative_theta(policy):
    """Cumulative sensitivity (in bins) of a 1-D ordinal policy, its domain and the sensitivity a reader is told.

    The last is a plan's ``release_sensitivity``: theta, whether it is
    exact, and how it was obtained.
    """
    require_policy(policy)
    domain = policy.domain
    if domain.ndim != 1:
        raise ValueError(
            f"cumulative mechanisms need a 1-D ordinal domain, got {domain.ndim} attributes {domain.names}"
        )
    info = policy.sensitivity_info("cumulative")
    theta = int(info.value)
    stated = {"value": theta, "exact": bool(info.exact),
              "how": "cumulative sensitivity of the policy in bins, theta (Section 7 of the Blowfish paper); "
                     "the sensitivity of every "
                     "noisy node class is in noise_parts"}
    return theta, domain, stated


#: The sensitivity a DP cumulative baseline states (its node classes' are in its noise parts).
DP_SENSITIVITY = {"value": 2, "exact": True,
                  "how": "bounded differential privacy: one changed record moves two counts by 1 (the sensitivity "
                         "of every noisy node class is in noise_parts)"}


def policy_guarantee(policy) -> str:
    """The guarantee of a cumulative mechanism under ``policy`` (n public: bounded neighbours)."""
    return f"(epsilon, P)-Blowfish privacy for P = {policy!r}; the number of records n is public (bounded neighbours)"


# ---------------------------------------------------------------------------
# result


@dataclass(frozen=True, init=False)
class CumulativeRelease(Release):
    """A released cumulative histogram and everything needed to use it.

    Attributes
    ----------
    cumulative : numpy.ndarray of float64, shape (|T|,)
        s_j = estimated number of records with value <= x_j, after
        inference: non-decreasing, within [0, n], and s_|T| = n.
    n : int
        The public number of records.
    secure : bool
        False when a seeded generator was used (not for real releases).
    params : dict
        theta (in bins), block length, fan-out, tree height.
    noisy_cumulative : numpy.ndarray or None
        The pre-inference cumulative estimates, when ``keep_noisy=True``.
    domain : Domain or None
        The domain of the values (None: bin indices).
    plan : Plan
        The plan that made it: ``mechanism``, ``epsilon``,
        ``epsilon_exact``, ``epsilon_parts`` (how the budget was split, e.g.
        ``{"S": ..., "H": ...}``), ``scales`` and ``sensitivities`` (per
        node class) are read from it.
    """

    cumulative: npt.NDArray[np.float64]
    n: int
    secure: bool
    params: dict[str, Any]
    noisy_cumulative: npt.NDArray[np.float64] | None
    domain: object
    plan: Any = field(repr=False, compare=False)

    _values_field = "cumulative"

    def __init__(self, cumulative: npt.NDArray[np.float64], n: int, secure: bool, params: dict[str, Any],
                 noisy_cumulative: npt.NDArray[np.float64] | None = None, domain: object = None,
                 plan: Any = None) -> None:
        if plan is None:
            raise TypeError("CumulativeRelease needs the plan that made it")
        for name, value in (("cumulative", cumulative), ("n", n), ("secure", secure), ("params", params),
                            ("noisy_cumulative", noisy_cumulative), ("domain", domain), ("plan", plan)):
            object.__setattr__(self, name, value)

    @property
    def histogram(self) -> npt.NDArray[np.float64]:
        """Per-bin counts: differences of the cumulative counts (never negative)."""
        return np.diff(self.cumulative, prepend=0.0)

    def _bins(self, values, name: str) -> np.ndarray:
        """Bin indices of ``values`` (domain values, or bin indices without a domain).

        A message names ``name``, the attribute and the rule broken, never
        the value nor its position.
        """
        arr = np.asarray(values)
        if self.domain is None:
            if arr.dtype.kind not in "iu":
                raise TypeError(f"{name} must be integer bin indices, got dtype {arr.dtype}")
            idx = arr.astype(np.int64)
            if ((idx < 0) | (idx >= self.cumulative.size)).any():  # uint64 beyond int64 wraps below 0
                raise ValueError(f"{name} must be bin indices in [0, {self.cumulative.size - 1}]: an index lies "
                                 "outside; the index and its position are not shown")
            return idx
        if self.domain.ndim == 1:
            return self.domain.attributes[0].codes_of(arr.reshape(-1), param=name).reshape(arr.shape)
        return self.domain.encode(arr.reshape(-1)).reshape(arr.shape)

    @overload
    def range_query(self, lo: _Value, hi: _Value, *, inferred: bool = True) -> float: ...
    @overload
    def range_query(self, lo: _Values, hi: _Value | _Values, *, inferred: bool = True) -> npt.NDArray[np.float64]: ...
    @overload
    def range_query(self, lo: _Value, hi: _Values, *, inferred: bool = True) -> npt.NDArray[np.float64]: ...

    def range_query(self, lo: _Value | _Values, hi: _Value | _Values, *,
                    inferred: bool = True) -> float | npt.NDArray[np.float64]:
        """Answer q[x_lo, x_hi] = s_hi - s_{lo-1} (inclusive bounds, 000 Def 7.2).

        Parameters
        ----------
        lo, hi : scalar or array_like
            Domain values (bin indices when the release has no domain);
            broadcast against each other; lo <= hi.  A value outside the
            domain is refused with a message naming the parameter and the
            domain's range, never the value.
        inferred : bool
            Use the post-inference cumulative counts (default) or the noisy
            pre-inference ones (needs ``keep_noisy=True``).

        Returns
        -------
        float or numpy.ndarray of float64
        """
        c = self.cumulative if inferred else self.noisy_cumulative
        if c is None:
            raise ValueError("inferred=False needs a release made with keep_noisy=True")
        i = self._bins(lo, "lo")
        j = self._bins(hi, "hi")
        i, j = np.broadcast_arrays(i, j)
        bad = np.flatnonzero((i > j).ravel())
        if bad.size:  # the caller's own query, public: quoted
            lo_v = np.broadcast_to(np.asarray(lo), i.shape).ravel()[bad[0]]
            hi_v = np.broadcast_to(np.asarray(hi), i.shape).ravel()[bad[0]]
            more = f" ({bad.size} of {i.size} ranges are reversed)" if i.size > 1 else ""
            raise ValueError(f"range ({np.asarray(lo_v).item()!r}, {np.asarray(hi_v).item()!r}) is reversed: lo must "
                             f"be <= hi{more}")
        before = np.where(i > 0, c[np.maximum(i - 1, 0)], 0.0)
        out = c[j] - before
        return float(out) if out.ndim == 0 else out

    @overload
    def quantile(self, p: float) -> int: ...
    @overload
    def quantile(self, p: Sequence[float] | npt.NDArray[Any]) -> npt.NDArray[np.int64]: ...

    def quantile(self, p: float | Sequence[float] | npt.NDArray[Any]) -> int | npt.NDArray[np.int64]:
        """Smallest value x with estimated CDF(x) >= p, for p in [0, 1]."""
        q = np.asarray(p, dtype=np.float64)
        if np.isnan(q).any() or (q < 0).any() or (q > 1).any():
            raise ValueError(f"p must lie in [0, 1], got {p!r}")
        idx = np.searchsorted(self.cumulative, q * self.n, side="left")
        idx = np.minimum(idx, self.cumulative.size - 1)
        if self.domain is not None:
            vals = self.domain.values(idx.reshape(-1))[0].reshape(idx.shape)
        else:
            vals = idx
        return vals.item() if vals.ndim == 0 else vals

    def expected_range_error(self) -> float:
        """Exact mean squared error of a uniformly random range query (the plan's).

        Averaged over all |T|(|T|+1)/2 ranges, for the noisy release
        *before* inference (000 eq. 13-15 give the asymptotic form of this
        quantity for OH; eq. 12 bounds it by 4/eps^2 per range for the
        ordered mechanism on the line).  Uses the exact discrete Laplace
        variance 2p/(1-p)^2, p = exp(-1/scale).
        """
        return self.plan.expected_error.get("range_query_mse_before_inference", math.nan)


def range_error(nodes_var_a: list[tuple[float, np.ndarray]], n_bins: int) -> float:
    """Mean over all ranges of Var(C(j) - C(i)), 0 <= i < j <= n_bins.

    C(j) = sum of the noisy nodes a pre-inference estimator uses; a node
    used by A of the n_bins + 1 cumulative positions contributes
    var * A * (n_bins + 1 - A) to the sum over all pairs.
    """
    total = 0.0
    for var, a in nodes_var_a:
        a = a.astype(np.float64)
        total += var * float(np.sum(a * (n_bins + 1 - a)))
    return total / (n_bins * (n_bins + 1) / 2)
