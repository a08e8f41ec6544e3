"""Fan-out-f trees over a domain: the height, the fan-out check and the choices of a tree's shape.

Shared by the hierarchical mechanisms (the ordered hierarchical and
hierarchical mechanisms of :mod:`.cumulative`, the 2-D hierarchies of
:mod:`.grid`, Privelet's binary tree, the HB and GreedyH baselines): a
tree of fan-out f over ``size`` leaves has height ``h = ceil(log_f
size)``, the smallest h with ``f**h >= size`` (Hay, Rastogi, Miklau,
Suciu, Boosting the Accuracy of Differentially Private Histograms Through
Consistency, PVLDB 2010).  :func:`best_branching` is the search of HB's
branching factor, :func:`greedy_level_shares` GreedyH's search of the
per-level budget; both read public sizes only.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .. import _tree
from .._validation import as_int
from ..noise import Generator, calibration, discrete_laplace_variance

__all__ = ["best_branching", "check_fanout", "greedy_level_shares", "hierarchy_estimate", "level_hierarchy_estimate",
           "smallest_base", "tree_height"]


def check_fanout(fanout) -> int:
    """``fanout`` as an int >= 2 (ValueError or TypeError naming it otherwise)."""
    f = as_int(fanout, "fanout")
    if f < 2:
        raise ValueError(f"fanout must be an integer >= 2, got {f}")
    return f


def tree_height(size: int, fanout: int = 2) -> int:
    """The smallest h >= 0 with ``fanout**h >= size`` (exact integer arithmetic)."""
    h, cap = 0, 1
    while cap < size:
        cap *= fanout
        h += 1
    return h


def _iroot(n: int, h: int) -> int:
    """floor(n ** (1 / h)) for integers n >= 0, h >= 1, exactly (Newton's method on integers)."""
    if n < 2 or h == 1:
        return n
    x = 1 << -(-n.bit_length() // h)  # >= the root
    while True:
        y = ((h - 1) * x + n // x ** (h - 1)) // h
        if y >= x:
            return x
        x = y


def smallest_base(size: int, h: int) -> int:
    """The smallest integer b >= 2 with ``b**h >= size`` (exact: an integer h-th root rounded up)."""
    if h < 1:
        raise ValueError(f"h must be an integer >= 1, got {h}")
    if size <= 2:
        return 2
    b = _iroot(size, h)
    if b**h < size:
        b += 1
    return max(b, 2)


def best_branching(size: int, cost) -> int:
    """The fan-out b in 2..size of least ``cost(b, tree_height(size, b))``; ties go to the smaller b.

    2 for a size of 1 or 2.  ``cost`` returns exact integers (or anything
    ordered exactly), so the choice does not depend on rounding, and must
    not decrease in b for a fixed height (true of HB's eq. 3 and of its 2-D
    tensor form).  The b of one height h form an interval whose smallest
    member, :func:`smallest_base`, is then the best of its height, so only
    the ceil(log2 size) candidates b_h = ceil(size^(1/h)) are compared:
    O(log^2 size) integer work for any size, the same choice as trying
    every b.  The search of HB's branching rule (Qardaji, Yang, Li,
    Understanding Hierarchical Methods for Differentially Private
    Histograms, PVLDB 2013, eq. 3) and of its 2-D tensor form.
    """
    if size <= 2:
        return 2
    candidates = sorted({smallest_base(size, h) for h in range(1, tree_height(size, 2) + 1)})
    best, best_v = None, None
    for b in candidates:  # increasing b: a strict improvement keeps the smaller b on ties
        v = cost(b, tree_height(size, b))
        if best_v is None or v < best_v:
            best, best_v = b, v
    return best


def greedy_level_shares(h: int, error, choices) -> list:
    """Per-level budget shares of an h-level hierarchy, chosen greedily (in the spirit of GreedyH).

    Start with every weight on the leaves (level h); then, bottom-up, give
    each level above them a weight from ``choices[1:]`` relative to the
    leaves' weight, keeping a choice only when ``error(shares)`` (the
    weights normalised to sum 1) drops strictly.  Exact when the weights
    and ``error`` are exact (Fractions).  Li, Hay, Miklau, Wang, A Data-
    and Workload-Aware Algorithm for Range Queries under Differential
    Privacy, PVLDB 2014, Sec 4 (GreedyH).
    """
    weights = [Fraction(0)] * (h - 1) + [Fraction(1)]

    def shares_of(w):
        t = sum(w)
        return [x / t for x in w]

    best = error(shares_of(weights))
    for level in range(h - 1, 0, -1):
        for c in choices[1:]:
            trial = list(weights)
            trial[level - 1] = c
            err = error(shares_of(trial))
            if err < best:
                best, weights = err, trial
    return shares_of(weights)


def hierarchy_estimate(counts: np.ndarray, scales, gen: Generator) -> np.ndarray:
    """Noisy binary-tree levels with the given scales (None: level not measured), then least squares.

    ``counts`` (int64, shape (m,)) are the leaves; ``scales[l - 1]`` the
    discrete Laplace scale of level l = 1..h (h = ``len(scales)``, 2^h >= m);
    the root is the exact total (public).  Returns the float64 leaf
    estimates, shape (m,).  Noise is drawn level by level, root side first.
    """
    m = counts.size
    h = len(scales)
    leaves = np.zeros(1 << h, dtype=np.int64)
    leaves[:m] = counts
    levels = _tree.tree_levels(leaves, 2, h)
    z, v = [np.array([float(counts.sum())])], [np.zeros(1)]
    for level in range(1, h + 1):
        pad = (np.arange(1 << level) << (h - level)) >= m
        sc = scales[level - 1]
        if sc is None:
            z.append(np.zeros(1 << level))
            v.append(np.where(pad, 0.0, np.inf))
            continue
        noisy = gen.add_discrete_laplace(levels[level], sc).astype(np.float64)
        noisy[pad] = 0.0
        z.append(noisy)
        v.append(np.where(pad, 0.0, discrete_laplace_variance(sc)))
    for level in range(h - 1, -1, -1):
        _tree.wls_up_level(z[level + 1], v[level + 1], z[level], v[level], 2)
    for level in range(h):
        _tree.wls_down_level(z[level], z[level + 1], v[level + 1], 2)
    return z[h][:m]


def level_hierarchy_estimate(counts: np.ndarray, shares, eps2, gen: Generator):
    """:func:`hierarchy_estimate` with level l measured at epsilon ``eps2 * shares[l - 1]`` (sensitivity 2).

    Returns the leaf estimates and the epsilon spent (at most ``eps2``: the
    shares sum to at most 1; a zero share measures nothing).  ``eps2`` is a
    plan's checked epsilon (a Fraction): it is not checked again.
    """
    cals = [None if Fraction(sh) == 0 else calibration(2, eps2 * Fraction(sh)) for sh in shares]
    scales = [None if c is None else c.scale for c in cals]
    spent = sum((c.epsilon_exact for c in cals if c is not None), Fraction(0))
    return hierarchy_estimate(counts, scales, gen), spent
