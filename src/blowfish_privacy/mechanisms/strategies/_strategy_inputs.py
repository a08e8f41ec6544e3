"""Inputs of the linear-strategy mechanisms: a strategy matrix, a workload's Gram matrix, a plain policy.

Checked once here and shared by the sensitivity scans (:mod:`._strategy_sensitivity`), the plans
(:mod:`._strategy`, :mod:`._kron`, :mod:`._marginals_plan`) and the optimisers (:mod:`.optimized`).
"""

from __future__ import annotations

import numpy as np

from ...policy._policy import require_policy

__all__ = ["Gram", "as_strategy", "plain_policy", "workload_gram"]


def as_strategy(A, name: str = "A") -> np.ndarray:
    try:
        arr = np.asarray(A)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 2-D numeric matrix (m, N)") from None
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"{name} must be a 2-D matrix of shape (m, N) with m, N >= 1, got shape {arr.shape}")
    if arr.dtype.kind not in "iuf" or arr.dtype == bool:
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise ValueError(f"{name} must hold finite numbers")
    return arr


def workload_matrix(workload, size: int, name: str = "workload") -> np.ndarray:
    W = workload.matrix() if hasattr(workload, "matrix") and callable(workload.matrix) else workload
    W = np.asarray(W, dtype=np.float64)
    if W.ndim != 2 or W.shape[1] != size:
        raise ValueError(f"{name} must be a matrix of shape (q, {size}) (or have .matrix() giving one), "
                         f"got shape {W.shape}")
    if not np.isfinite(W).all():
        raise ValueError(f"{name} must hold finite numbers")
    return W


def workload_gram(workload, size: int, name: str = "workload") -> np.ndarray:
    if hasattr(workload, "gram") and callable(workload.gram):
        G = np.asarray(workload.gram(), dtype=np.float64)
        if G.shape != (size, size):
            raise ValueError(f"{name}.gram() must have shape ({size}, {size}), got {G.shape}")
        return G
    W = workload_matrix(workload, size, name)
    return W.T @ W


class Gram:
    """A workload known by its Gram matrix only."""

    def __init__(self, G: np.ndarray) -> None:
        self._G = G

    def gram(self) -> np.ndarray:
        return self._G


def plain_policy(policy):
    policy = require_policy(policy)
    if getattr(policy, "constraints", ()):
        raise ValueError("policy: public count constraints are not supported here (the sensitivity of a strategy "
                         "under constraints needs the policy graph of Section 8 of the Blowfish paper)")
    if getattr(policy, "neighbours", "blowfish") != "blowfish":
        raise ValueError(f"policy: only Blowfish neighbours are supported, got {policy.neighbours!r}")
    return policy
