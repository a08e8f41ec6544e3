"""Mechanisms: each takes an exact aggregate, a policy or sensitivity, an
epsilon and a :class:`~blowfish_privacy.Generator`, and returns a result
object carrying the released values, the epsilon actually spent, the
sensitivity used and the expected error."""

from .constrained import ConstrainedRelease, consistent_estimate, constrained_histogram, plan_constrained_histogram
from .cumulative import (
    CumulativeRelease,
    hierarchical,
    identity,
    ordered,
    ordered_hierarchical,
    plan_hierarchical,
    plan_identity,
    plan_ordered,
    plan_ordered_hierarchical,
)
from .dawa import DawaPartition, dawa, dawa_partition, plan_dawa
from .histogram import HistogramRelease
from .kmeans import (
    KMeansIteration,
    KMeansResult,
    KMeansSensitivity,
    kmeans,
    kmeans_objective,
    kmeans_sensitivity,
    lloyd,
    plan_kmeans,
)
from .kmeans_grid import KMeansGridResult, choose_cell, grid_sensitivity, kmeans_grid, plan_kmeans_grid
from .laplace import LaplaceResult, calibrate, laplace, plan_histogram, plan_laplace
from .plan import NoisePart, Plan, Release
from .pufferfish import PufferfishSum, plan_pufferfish_sum, pufferfish_sum
from .privelet import plan_privelet, privelet
from .transformed import (
    dawa_transformed,
    matching_transformed,
    plan_dawa_transformed,
    plan_matching_transformed,
    plan_transformed_laplace,
    transformed_laplace,
)

__all__ = [
    "ConstrainedRelease",
    "CumulativeRelease",
    "consistent_estimate",
    "constrained_histogram",
    "DawaPartition",
    "HistogramRelease",
    "KMeansGridResult",
    "KMeansIteration",
    "KMeansResult",
    "KMeansSensitivity",
    "LaplaceResult",
    "NoisePart",
    "Plan",
    "Release",
    "plan_constrained_histogram",
    "plan_dawa",
    "plan_dawa_transformed",
    "plan_hierarchical",
    "plan_histogram",
    "plan_identity",
    "plan_kmeans",
    "plan_kmeans_grid",
    "plan_matching_transformed",
    "plan_ordered",
    "plan_ordered_hierarchical",
    "plan_privelet",
    "plan_pufferfish_sum",
    "plan_transformed_laplace",
    "plan_laplace",
    "calibrate",
    "dawa",
    "dawa_partition",
    "dawa_transformed",
    "hierarchical",
    "identity",
    "choose_cell",
    "grid_sensitivity",
    "kmeans",
    "kmeans_grid",
    "kmeans_objective",
    "kmeans_sensitivity",
    "laplace",
    "matching_transformed",
    "lloyd",
    "ordered",
    "ordered_hierarchical",
    "PufferfishSum",
    "pufferfish_sum",
    "privelet",
    "transformed_laplace",
]
