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

from ._scan import KMeansSensitivity
from ..plan import Release

__all__ = ["CentroidRelease", "KMeansIteration", "KMeansResult"]

GUARANTEE = ("(epsilon, P)-Blowfish privacy: every round's noisy sizes and sums are calibrated to their "
              "sensitivity given that round's public centroids (000 Thm 5.1, with the cross-cluster correction "
              "of DESIGN.md sec 5); the rounds compose sequentially (000 Thm 4.1)")
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
    epsilon : float
        Epsilon actually spent (``<=`` the epsilon asked).
    epsilon_exact : fractions.Fraction
        The same, exactly (what a ledger charges).
    secure : bool
        False when the generator was seeded (not for real releases).
    plan : Plan
        The plan that made it.
    """

    epsilon: float
    epsilon_exact: Fraction
    secure: bool
    plan: Any = field(default=None, repr=False, compare=False)

    _values_field = "centroids"


@dataclass(frozen=True)
class KMeansResult(CentroidRelease):
    """The result of :func:`kmeans` (a :class:`~.plan.Release`).

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
    epsilon, epsilon_exact, secure, plan
        As :class:`CentroidRelease`; ``epsilon_exact`` is the sum of every
        round's spends (at most the plan's).
    """

    centroids: np.ndarray
    initial_centroids: np.ndarray
    history: list = field(repr=False)
    sensitivities: list

    @property
    def mechanism(self) -> str:
        return "kmeans"

    @property
    def all_exact(self) -> bool:
        """Whether every sensitivity used was exact (not only a bound)."""
        return all(h.sensitivity.size_exact and h.sensitivity.sum_exact for h in self.history)

    def _common(self) -> dict:
        parts, scales, sens = {}, {}, {}
        for i, h in enumerate(self.history, 1):
            parts[f"sizes[{i}]"], parts[f"sums[{i}]"] = h.epsilon_sizes, h.epsilon_sums
            scales[f"sizes[{i}]"], scales[f"sums[{i}]"] = h.scale_sizes, h.scale_sums
            sens[f"sizes[{i}]"], sens[f"sums[{i}]"] = h.sensitivity.size, h.sensitivity.sum
        guarantee = self.plan.guarantee if self.plan is not None else GUARANTEE
        return {"epsilon_parts": parts, "scales": scales, "sensitivity": sens, "guarantee": guarantee,
                "expected_error": {"note": ERROR_NOTE}}
