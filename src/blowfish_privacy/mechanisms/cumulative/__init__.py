"""Range queries and CDFs on an ordered domain: the ordered and ordered-hierarchical mechanisms for distance-threshold secrets (000 Sec 7) and their DP comparisons (identity, hierarchical, Privelet)."""

from .cumulative import (
    CumulativeRelease,
    hierarchical,
    identity,
    ordered_hierarchical,
    plan_hierarchical,
    plan_identity,
    plan_ordered_hierarchical,
)
from .ordered import ordered, plan_ordered
from .privelet import plan_privelet, privelet

__all__ = ["CumulativeRelease", "hierarchical", "identity", "ordered", "ordered_hierarchical", "plan_hierarchical",
           "plan_identity", "plan_ordered", "plan_ordered_hierarchical", "plan_privelet", "privelet"]
