"""k-means under a policy: SuLQ iterations with the policy's sensitivity (000 Sec 6) and the one-shot grid mechanism."""

from .kmeans import KMeansIteration, KMeansResult, KMeansSensitivity, kmeans, kmeans_objective, kmeans_sensitivity, lloyd, plan_kmeans
from .kmeans_grid import KMeansGridResult, choose_cell, grid_sensitivity, kmeans_grid, plan_kmeans_grid

__all__ = ["KMeansIteration", "KMeansResult", "KMeansSensitivity", "kmeans", "kmeans_objective", "kmeans_sensitivity", "lloyd", "plan_kmeans", "KMeansGridResult", "choose_cell", "grid_sensitivity", "kmeans_grid", "plan_kmeans_grid"]
