"""Subtree variances of a binary hierarchy over m leaves padded to a power of two, in O(height).

The up-pass (weighted least squares from the leaves) gives every node an
estimate of its subtree's total; its variance depends only on the node's
kind (full, partial, padding) and level.  :func:`.dawa.workload_error`
(DAWA's range-workload step) and :mod:`blowfish_privacy.baselines.greedyh`
sum these variances over a query's canonical nodes.
"""

from __future__ import annotations

import numpy as np

from ... import _tree

__all__ = ["SubtreeVariances"]


class SubtreeVariances:
    """Up-pass variances of the subtree estimates of a binary hierarchy over m leaves padded to 2^h, in O(h).

    A level has at most three kinds of node: full ones (every leaf below
    is real: one variance per level), at most one partial node (it holds
    the last real leaf and some padding) and padding (known zeros,
    variance 0).  Each kind's variance is computed once per level with the
    same per-node arithmetic as the array pass (``_tree.wls_up_level``),
    so ``of(level, index)`` equals the array version's entry.

    Parameters
    ----------
    obs : list of float
        Observation variance of a real node per level (0 = root), from
        :func:`.dawa.level_variances`.
    m : int
        Real leaves, 1 <= m <= 2^h with h = len(obs) - 1.
    """

    def __init__(self, obs, m: int):
        h = len(obs) - 1
        self.h, self.m = h, m
        self.full = [0.0] * (h + 1)
        self.partial = [0.0] * (h + 1)
        self.full[h] = float(obs[h])
        self.partial[h] = float(obs[h])  # no partial leaf: unused
        for level in range(h - 1, -1, -1):
            width = 1 << (h - level)
            self.full[level] = self._up(obs[level], self.full[level + 1], self.full[level + 1])
            j = m // width  # the node holding leaf m (if m is not a multiple of the width, it is partial)
            if m % width:
                half = width // 2
                left_end = j * width + half  # end of its left child
                left = self._kind(level + 1, 2 * j, left_end - half, left_end)
                right = self._kind(level + 1, 2 * j + 1, left_end, left_end + half)
                self.partial[level] = self._up(obs[level], left, right)

    def _kind(self, level, index, a, b) -> float:
        if a >= self.m:
            return 0.0
        if b <= self.m:
            return self.full[level]
        return self.partial[level]

    @staticmethod
    def _up(v_obs, v_left, v_right) -> float:
        z = np.zeros(1)
        v = np.array([float(v_obs)])
        _tree.wls_up_level(np.zeros(2), np.array([float(v_left), float(v_right)]), z, v, 2)
        return float(v[0])

    def of(self, level: int, index: int) -> float:
        """Subtree variance of node ``index`` of ``level``."""
        width = 1 << (self.h - level)
        return self._kind(level, index, index * width, (index + 1) * width)
