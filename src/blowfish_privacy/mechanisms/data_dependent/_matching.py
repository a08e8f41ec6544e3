"""The matching engine of Matching + Transformed (001 Sec 5.2): minimum-cost pairs of values.

Private (:func:`min_cost_pairs` is re-exported by :mod:`.transformed`):
the exact minimum-cost pairing of values into buckets of at most two, and
the literal method's exact search over all matchings of the noisy edge
costs (Anuarbek, Data-Dependent Blowfish Private Algorithm for Histogram
Queries, 001 Sec 5.2).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np


__all__ = ["min_cost_pairs"]


def min_cost_pairs(values, penalty: float) -> np.ndarray:
    """Exact minimum-cost partition of ``values`` into singletons and pairs.

    Cost of a pair {i, j}: |v_i - v_j| + penalty; of a singleton: penalty
    (001 Sec 5.2).  Some optimal partition pairs only neighbours in sorted
    order (uncrossing a crossing or nested pair, or a pair around a
    singleton, never raises the cost), so a dynamic program over the sorted
    values is exact: O(n log n).  Returns the bucket id of every value.
    """
    v = np.asarray(values, dtype=np.float64)
    n = v.size
    order = np.argsort(v, kind="stable")
    s = v[order]
    best = np.zeros(n + 1)
    take_pair = np.zeros(n + 1, dtype=bool)
    best[1] = penalty
    for i in range(2, n + 1):
        single = best[i - 1] + penalty
        pair = best[i - 2] + (s[i - 1] - s[i - 2]) + penalty
        if pair < single:
            best[i], take_pair[i] = pair, True
        else:
            best[i] = single
    bucket_sorted = np.empty(n, dtype=np.int64)
    i, b = n, 0
    groups = []
    while i > 0:
        if take_pair[i]:
            groups.append((i - 2, i))
            i -= 2
        else:
            groups.append((i - 1, i))
            i -= 1
    for b, (lo, hi) in enumerate(reversed(groups)):
        bucket_sorted[lo:hi] = b
    buckets = np.empty(n, dtype=np.int64)
    buckets[order] = bucket_sorted
    return _canonical(buckets)


def _canonical(buckets: np.ndarray) -> np.ndarray:
    """Renumber buckets in order of their first value."""
    _, first = np.unique(buckets, return_index=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    return rank[buckets]


def exact_noisy_matching(hist: np.ndarray, penalty: float, noise: dict) -> np.ndarray:
    """Exact least noisy-cost partition into pairs and singletons (all matchings, memoised)."""
    n = hist.size
    x = hist.astype(np.float64)
    full = (1 << n) - 1

    @lru_cache(maxsize=None)
    def f(mask: int) -> tuple[float, tuple]:
        if mask == full:
            return 0.0, ()
        i = (~mask & (mask + 1)).bit_length() - 1  # lowest free value
        c, rest = f(mask | (1 << i))
        best = (c + penalty, ((i,),) + rest)
        for j in range(i + 1, n):
            if not mask >> j & 1:
                c, rest = f(mask | (1 << i) | (1 << j))
                cand = c + abs(x[i] - x[j]) + penalty + noise[(i, j)]
                if cand < best[0]:
                    best = (cand, ((i, j),) + rest)
        return best

    _, groups = f(0)
    buckets = np.empty(n, dtype=np.int64)
    for b, grp in enumerate(groups):
        buckets[list(grp)] = b
    return _canonical(buckets)
