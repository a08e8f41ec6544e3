"""k-means under a policy: SuLQ iterations with the policy's sensitivity (000 Sec 6) and the one-shot grid mechanism; :func:`kmeans` picks one by name."""

from ._points import kmeans_objective, lloyd
from ._results import KMeansIteration, KMeansResult
from ._scan import KMeansSensitivity
from .kmeans import kmeans_sensitivity, plan_kmeans
from .kmeans_grid import KMeansGridResult, choose_cell, grid_sensitivity, kmeans_grid, plan_kmeans_grid
# last, so that the package's name ``kmeans`` is the function, not the submodule of SuLQ
from .methods import kmeans

__all__ = ["KMeansIteration", "KMeansResult", "KMeansSensitivity", "kmeans", "kmeans_objective", "kmeans_sensitivity", "lloyd", "plan_kmeans", "KMeansGridResult", "choose_cell", "grid_sensitivity", "kmeans_grid", "plan_kmeans_grid"]
