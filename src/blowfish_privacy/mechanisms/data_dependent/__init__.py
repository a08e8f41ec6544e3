"""Data-dependent histograms: DAWA (DP) and DAWA / Matching after the transformational equivalence of tree policy graphs (001 Sec 3-5)."""

from .dawa import DawaPartition, dawa, dawa_partition, plan_dawa
from .transformed import dawa_transformed, matching_transformed, plan_dawa_transformed, plan_matching_transformed, plan_transformed_laplace, transformed_laplace

__all__ = ["DawaPartition", "dawa", "dawa_partition", "plan_dawa", "dawa_transformed", "matching_transformed", "plan_dawa_transformed", "plan_matching_transformed", "plan_transformed_laplace", "transformed_laplace"]
