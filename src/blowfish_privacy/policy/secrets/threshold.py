"""Distance-threshold secrets: :class:`DistanceThreshold` (000 eq. 7) and :class:`Line`.

``G^{d,theta}`` joins values whose L1, L2 or Linf distance (on the bin values
of ordinal attributes) is at most ``theta``; ``Line`` is ``theta = 1`` on a
1-D domain of unit bins.  The lattice arithmetic behind their distances and
sensitivities is in :mod:`.lattice`.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..domain import Ordinal, is_int
from . import limits as _limits
from .base import NO_EDGES, ONE_VALUE, SecretGraph, SpecParameter, bin_widths, listing
from .records import norm_value
from .lattice import ThresholdSteps, lattice_distance, max_gain, maximal_steps, within, within_float

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..domain import Domain


_METRICS = ("l1", "l2", "linf")
_METRIC_WORDS = {"l1": "L1", "l2": "L2 (Euclidean)", "linf": "Linf (largest change of one attribute)"}


def _check_theta(theta: Any) -> tuple[Any, Fraction]:
    if isinstance(theta, (bool, np.bool_)) or not isinstance(theta, (numbers.Real, np.integer, np.floating)):
        raise TypeError(f"theta must be a finite number >= 0, got {theta!r} of type {type(theta).__name__}")
    theta = norm_value(theta)
    if isinstance(theta, float) and not math.isfinite(theta):
        raise ValueError(f"theta must be a finite number >= 0, got {theta!r}")
    exact = Fraction(theta)
    if exact < 0:
        raise ValueError(f"theta must be a finite number >= 0, got {theta!r}")
    return theta, exact


class _GridBinding:
    def __init__(self, widths: list[int], shape: list[int], caps: list[int], vmax: int) -> None:
        self.widths = widths
        self.shape = shape
        self.caps = caps  # most bins one edge can move along each axis alone
        self.vmax = vmax
        self.tables: dict = {}


class DistanceThreshold(SecretGraph):
    """Values ``x != y`` with ``d(x, y) <= theta`` (000 eq. 7, the graph ``G^{d,theta}``).

    ``d`` is the L1, L2 or Linf metric on the values of ordinal attributes
    (bin lower edges).  ``d_G(x, y)`` is the fewest steps, each of metric
    length at most ``theta``, from ``x`` to ``y``.

    Parameters
    ----------
    theta : float
        Threshold, finite and ``>= 0`` (0 gives a graph with no edges).
    metric : {"l1", "l2", "linf"}, default "l1"

    Notes
    -----
    Distances: as every metric here is monotone in the absolute coordinate
    differences, shortest paths can be taken monotone, so ``d_G`` is the
    fewest integer steps (in bins) summing to the difference.  Closed forms
    cover Linf, 1-D, single-attribute differences and L1 with equal bin
    widths; L1 with mixed widths and L2 in several dimensions use an exact
    dynamic program over the box of differences (at most
    :data:`_limits.DP_CELL_LIMIT` cells, else ValueError).

    Without a domain, records are points of the integer lattice (unit bins).
    """

    spec_name = "distance_threshold"
    spec_parameters = (
        SpecParameter("theta", (int, float), "a number >= 0", required=True),
        SpecParameter("metric", (str,), "\"l1\", \"l2\" or \"linf\"", default="l1"),
    )

    def __init__(self, theta: float, metric: str = "l1") -> None:
        super().__init__()
        self.theta, self._theta = _check_theta(theta)
        if metric not in _METRICS:
            raise ValueError(f"metric must be one of {list(_METRICS)}, got {metric!r}")
        self.metric = metric

    def _key(self) -> tuple:
        return (self._theta, self.metric)

    def __repr__(self) -> str:
        return f"DistanceThreshold(theta={self.theta!r}, metric={self.metric!r})"

    # -- capabilities ----------------------------------------------------------
    def edge_threshold(self) -> tuple[str, Any] | None:
        return self.metric, self.theta

    def threshold_steps(self, domain: Domain) -> ThresholdSteps | None:
        bound = self._binding(domain)
        return ThresholdSteps(self.metric, self._theta, tuple(bound.widths), tuple(int(c) for c in bound.caps))

    def on_bins(self, domain: Domain) -> tuple[SecretGraph, str]:
        widths = bin_widths(domain)
        extra = [w - 1 for w in widths]
        if not any(extra):
            return self, ""
        # two raw values within theta lie in bins whose lower edges differ by up to bin_width - 1 more
        # per attribute: widen by the metric of those extras
        if self.metric == "l1":
            grow = sum(extra)
        elif self.metric == "linf":
            grow = max(extra)
        else:
            grow = math.isqrt(sum(e * e for e in extra))
            grow += grow * grow < sum(e * e for e in extra)  # ceiling of the norm
        theta = self.theta
        wide = DistanceThreshold(theta + grow, self.metric)
        return wide, (f"theta {theta} ({self.metric}) speaks of raw values; on the bins (lower edges, bin widths "
                      f"{widths}) it is widened to {theta + grow} so that every pair of raw values within {theta} "
                      "stays secret")

    def within(self, diffs: npt.ArrayLike) -> np.ndarray:
        """Whether each row of non-negative value differences is within the threshold.

        ``metric(row) <= theta``, exactly (Python integers where int64
        could overflow); ``diffs`` has shape (m, d), the result (m,) bool.
        """
        vals = np.asarray(diffs)
        return within(vals, self.metric, self._theta, int(vals.max()) if vals.size else 0)

    def maximal_steps(self, widths: Sequence[int], caps: Sequence[int]) -> np.ndarray:
        """Pareto-maximal lattice steps ``s`` (``0 <= s <= caps``) with ``metric(widths * s) <= theta``."""
        return maximal_steps(widths, caps, self.metric, self._theta)

    def describe(self, domain: Domain) -> str:
        bound = self._binding(domain)
        if not self._has_edge(domain, bound):
            return NO_EDGES
        theta = self.theta
        if domain.ndim == 1:
            where = f"Values of {domain.names[0]} within {theta} of each other"
        else:
            where = (f"Values within {theta} of each other in the {_METRIC_WORDS[self.metric]} distance "
                     f"over ({', '.join(domain.names)})")
        text = (
            f"{where} are secret (distance threshold {theta}): an adversary cannot tell them apart "
            f"better than e^epsilon. Values farther apart are protected less, by e^(epsilon d_G) where "
            f"d_G is the number of threshold-sized steps between them."
        )
        if any(w != 1 for w in bound.widths):
            text += " Distances are measured between the lower edges of the bins."
        dead = [n for n, cap, size in zip(domain.names, bound.caps, bound.shape) if cap == 0 and size >= 2]
        if dead:
            text += (f" The bins of {listing(dead)} are wider than {theta}: a change of "
                     f"{'that attribute' if len(dead) == 1 else 'those attributes'} is NOT protected.")
        return text

    # -- record level ----------------------------------------------------------
    def _numeric(self, X: np.ndarray, name: str) -> np.ndarray:
        if X.dtype.kind == "O" and all(is_int(v) for v in X.reshape(-1).tolist()):
            return X  # Python integers too large for int64: exact object arithmetic
        if X.dtype.kind not in "iuf":
            raise TypeError(f"{name} must hold numeric records for {type(self).__name__}, got {X.dtype} values")
        return X

    def _record_diff(self, X, Y):
        X, Y = self._numeric(X, "x"), self._numeric(Y, "y")
        if "f" in (X.dtype.kind, Y.dtype.kind):
            return np.abs(X.astype(np.float64) - Y.astype(np.float64))
        peak = max((max(abs(int(A.min())), abs(int(A.max()))) for A in (X, Y) if A.size), default=0)
        if peak >= _limits.SAFE:  # exact Python integers where int64 could overflow
            return np.abs(X.astype(object) - Y.astype(object))
        return np.abs(X.astype(np.int64) - Y.astype(np.int64))

    def _record_edge(self, X, Y):
        diff = self._record_diff(X, Y)
        if diff.dtype.kind == "f":
            return within_float(diff, self.metric, float(self._theta)) & (diff > 0).any(axis=1)
        vmax = int(diff.max()) if diff.size else 0
        return within(diff, self.metric, self._theta, vmax) & (diff > 0).any(axis=1)

    def _record_distance(self, X, Y):
        diff = self._record_diff(X, Y)
        if diff.dtype.kind == "f":
            if not (np.isfinite(diff) & (diff == np.floor(diff))).all():
                raise ValueError(
                    "x and y: distances without a domain need integer values (points of the unit lattice); "
                    "pass domain=... for binned values"
                )
            diff = diff.astype(np.int64)
        elif diff.dtype.kind == "O":
            if diff.size and int(diff.max()) >= _limits.SAFE:
                raise ValueError("x and y: coordinate differences must be below 2**62 for distances")
            diff = diff.astype(np.int64)
        return lattice_distance(diff, [1] * diff.shape[1], self.metric, self._theta, self._record_cache)

    # -- domain level ----------------------------------------------------------
    def _bind(self, domain):
        for attr in domain.attributes:
            if not isinstance(attr, Ordinal):
                raise ValueError(
                    f"domain: {type(self).__name__} needs ordinal attributes, got categorical attribute {attr.name!r}"
                )
        widths = [a.bin_width for a in domain.attributes]
        shape = list(domain.shape)
        caps = [min(self._theta // w, n - 1) for w, n in zip(widths, shape)]
        vmax = max(a.span for a in domain.attributes)
        return _GridBinding(widths, shape, caps, vmax)

    def _bin_delta(self, domain, i, j):
        return np.abs(domain._codes_unchecked(i) - domain._codes_unchecked(j))

    def _edge_mask(self, domain, bound, i, j):
        delta = self._bin_delta(domain, i, j)
        vals = delta * np.array(bound.widths, dtype=np.int64)
        return within(vals, self.metric, self._theta, bound.vmax) & (delta > 0).any(axis=1)

    def _distance_index(self, domain, bound, i, j):
        delta = self._bin_delta(domain, i, j)
        return lattice_distance(delta, bound.widths, self.metric, self._theta, bound.tables)

    def _has_edge(self, domain, bound):
        return max(bound.caps) >= 1

    def _is_tree(self, domain, bound):
        live = [a for a, n in enumerate(bound.shape) if n >= 2]
        if not live:
            return True
        # two live axes with unit steps always close a 4-cycle; a dead axis disconnects
        return len(live) == 1 and bound.caps[live[0]] == 1

    def _max_weighted_l1(self, domain, bound, scale):
        if not self._has_edge(domain, bound):
            return 0, True, ""
        return max_gain(bound.widths, bound.caps, scale, self.metric, self._theta)


class Line(DistanceThreshold):
    """The line graph on a 1-D ordinal domain: ``DistanceThreshold(1, "l1")``.

    Consecutive values are joined; ``d_G(x, y) = |x - y|``.  The domain must
    have unit bins (with wider bins no two values are within distance 1; use
    ``DistanceThreshold(theta=bin_width)`` to join consecutive bins).
    """

    spec_name = "line"
    spec_parameters = ()

    def __init__(self) -> None:
        super().__init__(1, "l1")

    def _key(self) -> tuple:
        return ()

    def __repr__(self) -> str:
        return "Line()"

    @classmethod
    def from_spec(cls) -> Line:
        return cls()

    def on_bins(self, domain: Domain) -> tuple[SecretGraph, str]:
        return self, ""  # Line refuses bins wider than 1 when bound: nothing to widen

    def describe(self, domain: Domain) -> str:
        self._binding(domain)
        if domain.size < 2:
            return ONE_VALUE
        name = domain.names[0]
        return (
            f"Consecutive values of {name} are secret (the line graph, distance threshold 1): an "
            f"adversary cannot tell x from x + 1 better than e^epsilon, and x from y better than "
            f"e^(epsilon |x - y|), so values far apart are protected less."
        )

    def _record_diff(self, X, Y):
        if X.shape[1] != 1:
            raise ValueError(f"x must hold 1-D records for Line, got records of {X.shape[1]} values")
        return super()._record_diff(X, Y)

    def _bind(self, domain):
        if domain.ndim != 1 or not isinstance(domain.attributes[0], Ordinal):
            raise ValueError(f"domain: Line needs a 1-D ordinal domain, got {domain!r}")
        width = domain.attributes[0].bin_width
        if width != 1:
            raise ValueError(
                f"domain: Line needs bin_width 1 (no two bins of width {width} are within distance 1); "
                f"use DistanceThreshold(theta={width}) to join consecutive bins"
            )
        return super()._bind(domain)
