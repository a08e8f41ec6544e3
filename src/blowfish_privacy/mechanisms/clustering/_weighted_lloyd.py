"""Weighted k-means on a released grid: k-means++ seeding and Lloyd, post-processing of :mod:`.kmeans_grid`.

The node positions and their noisy weights are public (the release), and
the seed is derived from the release by the caller, so nothing here sees
the data or draws from the mechanism's generator.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["kmeans_plus_plus", "squared_distances", "weighted_kmeans"]


def weighted_kmeans(P: np.ndarray, noisy: np.ndarray, k: int, iterations: int, restarts: int,
                    seed: int) -> tuple[np.ndarray, float]:
    """Weighted k-means++ and Lloyd on the clipped release; never raises."""
    rng = np.random.default_rng(seed)
    w = np.maximum(noisy, 0).astype(np.float64)
    keep = w > 0
    X, w = P[keep], w[keep]
    if X.shape[0] == 0:  # nothing positive released: k random node positions
        return P[rng.integers(0, P.shape[0], k)].copy(), 0.0
    best, best_obj = None, math.inf
    for _ in range(restarts):
        C = kmeans_plus_plus(X, w, k, rng)
        for _ in range(iterations):
            d2 = squared_distances(X, C)
            lab = d2.argmin(axis=1)
            sw = np.bincount(lab, weights=w, minlength=k)
            new = C.copy()
            for a in range(X.shape[1]):
                sx = np.bincount(lab, weights=w * X[:, a], minlength=k)
                ok = sw > 0
                new[ok, a] = sx[ok] / sw[ok]
            if np.allclose(new, C):
                C = new
                break
            C = new
        obj = float((w * squared_distances(X, C).min(axis=1)).sum())
        if obj < best_obj:
            best, best_obj = C, obj
    return best, best_obj


def squared_distances(X: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Squared Euclidean distance of every row of ``X`` to every row of ``C``, shape (len(X), len(C))."""
    return ((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)


def kmeans_plus_plus(X: np.ndarray, w: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k starting centres from the rows of ``X`` by weighted k-means++ seeding (weights ``w`` > 0)."""
    C = [X[rng.choice(X.shape[0], p=w / w.sum())]]
    dmin = ((X - C[0]) ** 2).sum(axis=1)
    for _ in range(1, k):
        p = w * dmin
        tot = p.sum()
        idx = rng.choice(X.shape[0], p=p / tot) if tot > 0 else rng.integers(0, X.shape[0])
        C.append(X[idx])
        dmin = np.minimum(dmin, ((X - X[idx]) ** 2).sum(axis=1))
    return np.array(C, dtype=np.float64)
