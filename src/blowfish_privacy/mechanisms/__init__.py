"""Mechanisms: each takes an exact aggregate, a policy or sensitivity, an
epsilon and a :class:`~blowfish_privacy.Generator`, and returns a result
object carrying the released values, the epsilon actually spent, the
sensitivity used and the expected error."""

from .cumulative import CumulativeRelease, hierarchical, identity, ordered, ordered_hierarchical
from .kmeans import KMeansIteration, KMeansResult, KMeansSensitivity, kmeans, kmeans_objective, kmeans_sensitivity, lloyd
from .laplace import LaplaceResult, calibrate, laplace

__all__ = [
    "CumulativeRelease",
    "KMeansIteration",
    "KMeansResult",
    "KMeansSensitivity",
    "LaplaceResult",
    "calibrate",
    "hierarchical",
    "identity",
    "kmeans",
    "kmeans_objective",
    "kmeans_sensitivity",
    "laplace",
    "lloyd",
    "ordered",
    "ordered_hierarchical",
]
