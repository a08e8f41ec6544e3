"""Two-dimensional grids: axis-wise cumulative counts, hierarchical and transformed grids, DAWA+Transformed on a Hilbert order."""

from .grid import axis_cumulative, grid_hierarchical, grid_transformed, plan_axis_cumulative, plan_grid_hierarchical, plan_grid_transformed
from .hilbert import grid_dawa_transformed, hilbert_order, plan_grid_dawa_transformed

__all__ = ["axis_cumulative", "grid_hierarchical", "grid_transformed", "plan_axis_cumulative", "plan_grid_hierarchical", "plan_grid_transformed", "grid_dawa_transformed", "hilbert_order", "plan_grid_dawa_transformed"]
