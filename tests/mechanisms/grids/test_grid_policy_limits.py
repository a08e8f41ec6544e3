"""What the 2-D grid policy cannot buy: brute-force sensitivities of the DP strategies that win in 2-D.

Under the grid policy (L1 distance threshold 1: a record may move to an
adjacent cell) a linear release A x has sensitivity max over grid edges
(x, y) of ||A[:, x] - A[:, y]||_1, under bounded DP the maximum over all
pairs.  For the strategy families that give the best DP error on 2-D range
queries (DPBench; Qardaji, Yang, Li ICDE 2013: UGrid and AGrid release the
counts of a partition into rectangles; quadtrees and hierarchies release
nested rectangles) the two maxima are equal: some grid edge already crosses
every boundary that the worst DP pair crosses.  So any mechanism built on
these strategies pays the same noise under the grid policy as under DP, and
a gain over the best DP baseline can only come from strategies outside
them (the DPBench page of the documentation, docs/experiments/dpbench.md, gives the measured ratios).
"""

from __future__ import annotations

import numpy as np
import pytest

from blowfish_privacy.mechanisms.grids._policies import grid_edges, grid_policy

SIDE = 8


def _sensitivities(A: np.ndarray) -> tuple[int, int]:
    lo, hi = grid_edges(grid_policy(SIDE, SIDE))
    grid = int(np.abs(A[:, lo] - A[:, hi]).sum(axis=0).max())
    dp = max(int(np.abs(A[:, [x]] - A).sum(axis=0).max()) for x in range(A.shape[1]))
    return grid, dp


def _partition_matrix(labels: np.ndarray) -> np.ndarray:
    regions = np.unique(labels)
    return (labels.reshape(1, -1) == regions.reshape(-1, 1)).astype(np.int64)


def _rect_partition(row_cuts, col_cuts) -> np.ndarray:
    r = np.searchsorted(np.asarray(row_cuts), np.arange(SIDE), side="right")
    c = np.searchsorted(np.asarray(col_cuts), np.arange(SIDE), side="right")
    return (r[:, None] * (len(col_cuts) + 1) + c[None, :]).reshape(-1)


@pytest.mark.parametrize("m", [2, 4, 8])
def test_uniform_grid_counts_cost_the_same_under_the_grid_policy(m):
    # UGrid with an m x m grid of equal cells
    cuts = list(range(SIDE // m, SIDE, SIDE // m))
    grid, dp = _sensitivities(_partition_matrix(_rect_partition(cuts, cuts)))
    assert grid == dp == 2


def test_any_rectangle_partition_costs_the_same_under_the_grid_policy():
    # AGrid-like: random cuts per axis, then random second-level cuts per cell
    rng = np.random.default_rng(3)
    for _ in range(50):
        rows = sorted(rng.choice(np.arange(1, SIDE), size=rng.integers(1, 4), replace=False))
        cols = sorted(rng.choice(np.arange(1, SIDE), size=rng.integers(0, 4), replace=False))
        labels = _rect_partition(rows, cols).reshape(SIDE, SIDE).copy()
        # split one first-level cell again along a random row
        target = labels[0, 0]
        r = rng.integers(1, SIDE)
        labels[(labels == target) & (np.arange(SIDE)[:, None] >= r)] = labels.max() + 1
        grid, dp = _sensitivities(_partition_matrix(labels.reshape(-1)))
        assert grid == dp == 2


def test_quadtree_costs_the_same_under_the_grid_policy():
    # every level below the root: 2^l x 2^l blocks; the edge across the
    # centre lines next to the middle crosses a boundary at every level
    rows_ = np.arange(SIDE)[:, None]
    cols_ = np.arange(SIDE)[None, :]
    A = []
    levels = int(np.log2(SIDE))
    for level in range(1, levels + 1):
        w = SIDE >> level
        labels = ((rows_ // w) * (SIDE // w) + cols_ // w).reshape(-1)
        A.append(_partition_matrix(labels))
    grid, dp = _sensitivities(np.vstack(A))
    assert grid == dp == 2 * levels


def test_one_dimensional_contrast_cumulative_counts_are_cheap_on_a_line():
    # the contrast that makes 1-D work: prefix counts on a line cost 1 per
    # move instead of n - 1 (a 2-D prefix-sum strategy is not cheap: below)
    n = SIDE
    A = np.tril(np.ones((n, n), dtype=np.int64))
    line = int(np.abs(A[:, :-1] - A[:, 1:]).sum(axis=0).max())
    dp = max(int(np.abs(A[:, [x]] - A).sum(axis=0).max()) for x in range(n))
    assert (line, dp) == (1, n - 1)
    # 2-D prefix sums P(i, j) = count of [0, i] x [0, j]: one grid move
    # changes a whole row (or column) of them
    P = np.zeros((SIDE * SIDE, SIDE * SIDE), dtype=np.int64)
    for i in range(SIDE):
        for j in range(SIDE):
            block = np.zeros((SIDE, SIDE), dtype=np.int64)
            block[: i + 1, : j + 1] = 1
            P[i * SIDE + j] = block.reshape(-1)
    grid, _ = _sensitivities(P)
    assert grid == SIDE


@pytest.mark.parametrize("metric", ["l1", "l2", "linf"])
@pytest.mark.parametrize("theta", [1, 1.2, 1.41, 1.4142135623730951, 1.5, 1.99, 2, 2.5])
def test_closed_form_edge_lists_are_the_secret_graphs_edges(metric, theta):
    # the mechanisms calibrate on grid_edges; it must list exactly the
    # secret graph's edges (a threshold of 1.5 in l2 includes diagonals)
    from blowfish_privacy import Domain, Ordinal, Policy, secrets

    pol = Policy(Domain([Ordinal("row", 0, 3), Ordinal("col", 0, 4)]), secrets.DistanceThreshold(theta, metric))
    lo, hi = grid_edges(pol)
    got = {frozenset(e) for e in zip(lo.tolist(), hi.tolist())}
    elo, ehi = pol.secrets.iter_edges(pol.domain)
    want = {frozenset(e) for e in zip(np.asarray(elo).tolist(), np.asarray(ehi).tolist())}
    assert got == want
