"""What private k-means releases: one round (:class:`KMeansIteration`) and the result.

The result types of :func:`.kmeans.kmeans` (SuLQ k-means under a Blowfish
policy, He, Machanavajjhala, Ding, Blowfish Privacy, SIGMOD 2014, 000 Sec 6);
:mod:`.kmeans` re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from ._scan import KMeansSensitivity
from ..plan import Release

__all__ = ["CentroidRelease", "KMeansIteration", "KMeansResult"]

ERROR_NOTE = ("data dependent: a centroid coordinate errs by about S_sum / (eps_sums * size) per round, with "
               "the per-round sensitivities in the history")


@dataclass(frozen=True)
class KMeansIteration:
    """One round of private k-means: what it started from and what it released.

    Attributes
    ----------
    centroids : ndarray of float64, shape (k, d)
        Public centroids the round assigned points to.
    references : ndarray of int64, shape (k, d)
        Public reference points (the centroids rounded to the grid); the
        sums are released relative to them.
    sensitivity : KMeansSensitivity
    epsilon_sizes, epsilon_sums : fractions.Fraction
        Epsilon actually spent on the sizes and on the sums (0 when the
        sensitivity is 0: released without noise).
    scale_sizes, scale_sums : fractions.Fraction
        Discrete Laplace scales used (0: no noise).
    noisy_sizes : ndarray of int64, shape (k,)
    noisy_sums : ndarray of int64, shape (k, d)
    """

    centroids: np.ndarray
    references: np.ndarray
    sensitivity: KMeansSensitivity
    epsilon_sizes: Fraction
    epsilon_sums: Fraction
    scale_sizes: Fraction
    scale_sums: Fraction
    noisy_sizes: np.ndarray
    noisy_sums: np.ndarray


@dataclass(frozen=True, kw_only=True)
class CentroidRelease(Release):
    """What every k-means release carries besides its centroids (keyword fields).

    Attributes
    ----------
    secure : bool
        False when the generator was seeded (not for real releases).
    plan : Plan
        The plan that made it; ``epsilon`` and ``epsilon_exact`` (what a
        ledger charges, ``<=`` the epsilon asked) and the other privacy
        fields are read from it.
    """

    secure: bool
    plan: Any = field(repr=False, compare=False)

    _values_field = "centroids"


@dataclass(frozen=True)
class KMeansResult(CentroidRelease):
    """The result of :func:`kmeans` (a :class:`~.plan.Release`).

    The rounds' sensitivities and spends are fixed during the measurement
    from the public centroids of each round (the plan bounds them), so they
    are read from the released ``history``, not from the plan.

    Attributes
    ----------
    centroids : ndarray of float64, shape (k, d)
        Final centroids (inside the domain's bounding box).
    initial_centroids : ndarray of float64, shape (k, d)
        The data-independent start (pass it to :func:`lloyd` to compare).
    history : list of KMeansIteration
        Every round, in order.
    sensitivities : list of (int, int)
        ``(size_sensitivity, sum_sensitivity)`` of every round.
    epsilon, epsilon_exact
        The sum of every round's spends (at most the plan's).
    secure, plan
        As :class:`CentroidRelease`.
    """

    centroids: npt.NDArray[np.float64]
    initial_centroids: npt.NDArray[np.float64]
    history: list[KMeansIteration] = field(repr=False)

    @property
    def epsilon_exact(self) -> Fraction:
        return sum((h.epsilon_sizes + h.epsilon_sums for h in self.history), Fraction(0))

    @property
    def sensitivities(self) -> list[Any]:  # type: ignore[override]
        return [(h.sensitivity.size, h.sensitivity.sum) for h in self.history]

    @property
    def all_exact(self) -> bool:
        """Whether every sensitivity used was exact (not only a bound)."""
        return all(h.sensitivity.size_exact and h.sensitivity.sum_exact for h in self.history)

    @property
    def epsilon_parts(self) -> dict[str, Any]:
        return self._per_round(lambda h: (h.epsilon_sizes, h.epsilon_sums))

    @property
    def scales(self) -> dict[str, Any]:
        return self._per_round(lambda h: (h.scale_sizes, h.scale_sums))

    def _per_round(self, pair) -> dict:
        out = {}
        for i, h in enumerate(self.history, 1):
            out[f"sizes[{i}]"], out[f"sums[{i}]"] = pair(h)
        return out

    def summary(self) -> dict[str, Any]:
        out = super().summary()
        out["sensitivity"] = self._per_round(lambda h: (h.sensitivity.size, h.sensitivity.sum))
        return out
