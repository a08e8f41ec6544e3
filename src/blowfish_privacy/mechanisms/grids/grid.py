"""Mechanisms for 2-D ordinal domains (spatial data), DP and Blowfish.

Every mechanism here releases a linear strategy ``A x`` of the 2-D
histogram ``x`` with exact discrete Laplace noise of one scale, calibrated
to the *exact* policy-specific sensitivity of ``A``

    S(A, G) = max over secret edges (u, v) of ||A (e_u - e_v)||_1

(000 Def 5.1, Thm 5.1: bounded neighbours move one record along one edge),
then post-processes (least squares, inverse transforms) into a 2-D
estimate.  The sensitivity is the exact maximum over the edges of the
secret graph, not a bound: in closed form for the graphs a 2-D benchmark
uses (the complete graph by its worst pair; the grid ``DistanceThreshold(1)``
(L1), its L-infinity variant and the row-line graph of
:func:`axis_line_policy` by their worst unit steps, equal to the scan of
every edge, O(h^2) whatever the domain), otherwise by scanning every edge
from ``iter_edges`` (small domains).

``plan_grid_hierarchical``
    Noisy counts of rectangles of a 2-D hierarchy: ``levels="tensor"``
    releases every product of a row interval and a column interval of two
    fan-out-f trees (the 2-D "H"/"HB" strategy), ``levels="quadtree"`` only
    the square nodes (a quadtree when f = 2).  Least squares by Hay et al.'s
    two passes (separable for the tensor product: (H ⊗ H)^+ = H^+ ⊗ H^+).
    Under the complete graph this is the DP baseline; under the grid it
    pays only for levels an edge crosses, so its scale is smaller.
``plan_grid_transformed``
    Transformed + Laplace (001 Sec 3) on a comb spanning tree of the grid
    (spine on the middle row, columns hanging off it); the stretch is
    recomputed against the policy's edges.  Any spanning tree of a k x k
    grid has stretch of order k, so this is a reference, not a contender.
``plan_axis_cumulative``
    Row-wise cumulative counts P[a, j] = x[a, 0..j], and over the rows of
    every column j of P a fan-out-f hierarchy, least squares; a rectangle is
    two column-ranges of P.  A move along a row (the row-line policy of
    :func:`axis_line_policy`) changes exactly one entry of P by one, so the
    sensitivity is the tree height + 1, and a rectangle costs what a 1-D
    range costs under DP.  Under the full grid a vertical move changes a
    whole suffix of two rows of P: the exact sensitivity (order k) is used
    and the mechanism is then poor.

Privacy guarantee (all three)
    (epsilon, P)-Blowfish privacy for the policy P given to the plan
    (without constraints): the released vector is ``A x`` + discrete
    Laplace noise of scale >= S(A, G)/epsilon on every entry, and for
    neighbours x' = x - e_u + e_v, (u, v) an edge of G,
    ||A x - A x'||_1 <= S(A, G), so every output's probability changes by
    at most exp(epsilon) (000 Thm 5.1; exact discrete Laplace: Canonne,
    Kamath, Steinke 2020).  Everything returned is computed from the noisy
    vector and public inputs (shape, fan-out, n is never used).  The
    tests audit every plan exactly (``audit.exact``, 2 x 3 domain) and check
    the sensitivities against ||A(e_u - e_v)||_1 with A built as a matrix.
    Each plan's docstring names its papers.
"""

from __future__ import annotations

from fractions import Fraction

from typing import TYPE_CHECKING
from typing import Any

import numpy as np
import numpy.typing as npt

from ..._validation import check_epsilon
from ...noise import Generator, calibration, discrete_laplace_variance
from ...policy.transform import inverse, transform, tree_from_parent
from ._policies import (  # noqa: F401  (policies and edges re-exported)
    axis_sensitivity,
    check_2d,
    hier_sensitivity,
    grid_kind,
    axis_line_policy,
    grid_edges,
    grid_policy,
)
from ..histogram import HistogramRelease, shape_check
from ..plan import NoisePart, Plan, check_memory, int64_bytes
from .._docs import guarantee_of
from .._trees import check_fanout, tree_height
from ..._typing import Real

if TYPE_CHECKING:
    from ...policy._policy import Policy

__all__ = [
    "axis_line_policy",
    "grid_policy",
    "grid_edges",
    "plan_axis_cumulative",
    "plan_grid_hierarchical",
    "plan_grid_transformed",
    "grid_hierarchical",
    "grid_transformed",
    "axis_cumulative",
]

_CITATION = ("He, Machanavajjhala, Ding, Blowfish Privacy, SIGMOD 2014, Section 5 (Theorem 5.1, "
             "policy-specific sensitivity); Hay et al. VLDB 2010 (least squares); "
             "Qardaji, Yang, Li VLDB 2013 / ICDE 2013 (2-D hierarchies); "
             "Section 3 of the data-dependent Blowfish report (transformed Laplace)")


# ---------------------------------------------------------------------------
# 1-D tree helpers


def sum_level(arr: np.ndarray, axis: int, f: int, h: int, level: int) -> np.ndarray:
    """Sum a padded axis of length f**h into f**level nodes."""
    shape = list(arr.shape)
    n = f ** level
    shape[axis:axis + 1] = [n, f ** (h - level)]
    return arr.reshape(shape).sum(axis=axis + 1)


def _noisy_parts(parts: list, scale: Fraction, gen: Generator) -> list:
    """All parts with one discrete Laplace draw of ``scale`` each, in one vector (noise drawn first)."""
    flat = np.concatenate([np.asarray(p, dtype=np.int64).ravel() for p in parts])
    noisy = gen.add_discrete_laplace(flat, scale) if scale != 0 else flat.copy()
    out, off = [], 0
    for p in parts:
        out.append(noisy[off:off + p.size].reshape(p.shape).astype(np.float64))
        off += p.size
    return out


def _hay(levels: list, F: int, childsum, expand) -> np.ndarray:
    """Least squares (= pseudo-inverse) leaf estimates of a complete fan-out-F tree.

    ``levels[d]`` holds the noisy nodes at depth d (0 = root, last =
    leaves), all with the same noise variance; Hay et al. VLDB 2010 Sec 4.
    """
    h = len(levels) - 1
    z = [None] * (h + 1)
    z[h] = levels[h].astype(np.float64)
    for d in range(h - 1, -1, -1):
        ell = h - d + 1
        a = (F ** ell - F ** (ell - 1)) / (F ** ell - 1)
        b = (F ** (ell - 1) - 1) / (F ** ell - 1)
        z[d] = a * levels[d] + b * childsum(z[d + 1])
    x = z[0]
    for d in range(1, h + 1):
        x = z[d] + expand(x - childsum(z[d])) / F
    return x


def _hay_axis(levels: list, f: int, axis: int) -> np.ndarray:
    def childsum(a):
        shape = list(a.shape)
        shape[axis:axis + 1] = [a.shape[axis] // f, f]
        return a.reshape(shape).sum(axis=axis + 1)

    def expand(a):
        return np.repeat(a, f, axis=axis)

    return _hay(levels, f, childsum, expand)


def _hay_quad(levels: list, f: int) -> np.ndarray:
    def childsum(a):
        n = a.shape[0] // f
        return a.reshape(n, f, n, f).sum(axis=(1, 3))

    def expand(a):
        return np.repeat(np.repeat(a, f, axis=0), f, axis=1)

    return _hay(levels, f * f, childsum, expand)


# ---------------------------------------------------------------------------
# hierarchical


def _pairs(levels: str, hr: int, hc: int) -> list[tuple[int, int]]:
    if levels == "tensor":
        return [(i, j) for i in range(hr + 1) for j in range(hc + 1)]
    return [(i, i) for i in range(max(hr, hc) + 1)]


def plan_grid_hierarchical(
    policy: Policy, epsilon: Real, *, fanout: int = 2, levels: str = "tensor",
) -> Plan[HistogramRelease]:
    """Plan a 2-D hierarchy of noisy rectangle counts with least squares.

    Parameters
    ----------
    policy : Policy
        2-D ordinal domain, no constraints.
    epsilon : float
    fanout : int >= 2
        Fan-out of each axis' tree (axes padded to a power of it).
    levels : "tensor" or "quadtree"
        Every (row level, column level) pair, or the square levels only.

    Returns
    -------
    Plan
        ``measure(hist2d, generator)`` takes int64 counts of shape
        ``policy.domain.shape`` and returns a :class:`HistogramRelease`
        whose ``histogram`` is the 2-D least-squares estimate.

    Privacy
    -------
    (epsilon, P)-Blowfish privacy for ``policy`` (FullDomain: bounded
    epsilon-DP): one noise scale S/epsilon for every released node, S
    the exact max over secret edges of the number of released nodes
    whose count changes (module docstring, 000 Thm 5.1).

    Sensitivity
    -----------
    S = the exact maximum over the secret edges (u, v) of ||A (e_u - e_v)||_1
    for the released strategy A, every edge scanned (closed-form edge lists for
    the complete graph, the grid, its L-infinity variant and the row-line
    graph; ``iter_edges`` otherwise), 000 Def 5.1: the number of released rectangles whose count a move
    changes.

    Runtime
    -------
    O(|T| + nodes): one draw per released node, two least-squares passes
    per axis (Hay et al.), plus the edge scan when planning.

    References
    ----------
    .. [1] He, Machanavajjhala, Ding. *Blowfish Privacy: Tuning Privacy-Utility Trade-offs using Policies.*
        SIGMOD 2014 (paper 000), Sec 5, Thm 5.1.
    .. [2] Hay, Rastogi, Miklau, Suciu. *Boosting the Accuracy of Differentially Private Histograms Through
        Consistency.* PVLDB 3(1), 2010 (least squares).
    .. [3] Qardaji, Yang, Li. *Understanding Hierarchical Methods for Differentially Private Histograms.* PVLDB
        6(14), 2013 (2-D hierarchies).
    """
    shape = check_2d(policy)
    eps = check_epsilon(epsilon)
    f = check_fanout(fanout)
    if levels not in ("tensor", "quadtree"):
        raise ValueError(f"levels must be 'tensor' or 'quadtree', got {levels!r}")
    rows, cols = shape
    hr, hc = tree_height(rows, f), tree_height(cols, f)
    if levels == "quadtree":
        hr = hc = max(hr, hc)
    pairs = _pairs(levels, hr, hc)
    count = sum(f ** lr * f ** lc for lr, lc in pairs)
    name = "grid_hierarchical" if levels == "tensor" else "grid_quadtree"
    memory = check_memory(int64_bytes(4 * count + 4 * rows * cols), size=rows * cols, parameter="policy",
                          mechanism=name)
    kind = grid_kind(policy)
    sens, how = hier_sensitivity(policy, kind, shape, f, hr, hc, pairs)
    if sens == 0:
        scale, spent = Fraction(0), Fraction(0)
    else:
        cal = calibration(sens, eps)
        scale, spent = cal.scale, cal.epsilon_exact
    var = discrete_laplace_variance(scale)
    part = NoisePart("nodes", Fraction(sens), True, how, spent, scale, count)

    def run(plan, hist, gen):
        R, C = f ** hr, f ** hc
        pad = np.zeros((R, C), dtype=np.int64)
        pad[:rows, :cols] = hist
        if levels == "tensor":
            # noise for every node first (one vector), then the counts
            nodes = [sum_level(sum_level(pad, 0, f, hr, lr), 1, f, hc, lc) for lr, lc in pairs]
            noisy = _noisy_parts(nodes, scale, gen)
            by_row: list[list] = [[None] * (hc + 1) for _ in range(hr + 1)]
            for (lr, lc), node in zip(pairs, noisy):
                by_row[lr][lc] = node
            per_row = [_hay_axis(by_row[lr], f, 1) for lr in range(hr + 1)]
            est = _hay_axis(per_row, f, 0)
        else:
            h = hr
            lv_nodes = _noisy_parts([sum_level(sum_level(pad, 0, f, h, lv), 1, f, h, lv) for lv in range(h + 1)],
                                    scale, gen)
            est = _hay_quad(lv_nodes, f)
        est = est[:rows, :cols]
        return HistogramRelease(
            histogram=est, secure=gen.is_secure,
            params={"scale": scale, "fanout": f, "levels": levels, "sensitivity": sens}, plan=plan)

    return Plan(
        mechanism=name, policy=policy,
        guarantee=f"(epsilon, P)-Blowfish privacy for P = {policy!r}; one scale S/epsilon, S = {sens} exact",
        citation=_CITATION, epsilon_requested=eps, parts=(part,),
        aggregate=f"int64 2-D histogram of shape {shape}", aggregate_shape=tuple(shape),
        expected_error={"per_node_variance": var},
        memory_bytes=memory,
        runtime="O(nodes): one draw per node, two least-squares passes per axis",
        options={"fanout": f, "levels": levels, "sensitivity": sens}, check=shape_check(shape), run=run)


# ---------------------------------------------------------------------------
# transformed Laplace on a comb tree


def comb_tree(rows: int, cols: int):
    """Spanning tree of the rows x cols grid: the middle row is the spine, every column a path off it."""
    mid = (rows - 1) // 2
    idx = np.arange(rows * cols, dtype=np.int64).reshape(rows, cols)
    parent = np.empty((rows, cols), dtype=np.int64)
    parent[:mid, :] = idx[1:mid + 1, :]          # above the spine: towards it
    parent[mid + 1:, :] = idx[mid:rows - 1, :]   # below the spine: towards it
    parent[mid, 1:] = idx[mid, :-1]              # spine: towards column 0
    parent[mid, 0] = -1
    return tree_from_parent(parent.ravel())


def comb_stretch(rows: int, cols: int, kind: str) -> int | None:
    """Stretch of :func:`comb_tree` (rows x cols) in closed form, or None when the graph has none here.

    The spine is row ``mid = (rows - 1) // 2``; a vertex of row r hangs at
    depth |r - mid| below the spine, at most ``d = max(mid, rows - 1 - mid)``.
    Complete graph (``kind="dp"``): the tree's diameter, two deepest
    vertices of the first and last columns, ``2 d + cols - 1`` (``rows - 1``
    for one column).  Grid (L1, theta = 1): vertical steps are tree edges,
    a horizontal step in row r climbs to the spine and back,
    ``2 |r - mid| + 1``; the worst is ``2 d + 1`` (1 for one column).  A
    single cell has no edge (0).
    """
    if rows * cols == 1:
        return 0
    mid = (rows - 1) // 2
    d = max(mid, rows - 1 - mid)
    if kind == "dp":
        return rows - 1 if cols == 1 else 2 * d + cols - 1
    if kind == "grid":
        return 1 if cols == 1 else 2 * d + 1
    return None


def plan_grid_transformed(policy: Policy, epsilon: Real) -> Plan[HistogramRelease]:
    """Plan Transformed + Laplace on a comb spanning tree of the 2-D domain.

    Returns
    -------
    Plan
        ``measure(hist2d, generator)`` takes int64 counts of shape
        ``policy.domain.shape`` and releases a :class:`HistogramRelease`: the
        inverse transform of the noisy x_T, reshaped to 2-D, summing to n.

    Privacy
    -------
    (epsilon, P)-Blowfish privacy: a move along an edge (u, v) of the
    secret graph changes x_T on the d_T(u, v) tree edges of its path, so
    the L1 sensitivity of x_T is the stretch max d_T(u, v), recomputed
    here over every edge (the tree diameter for FullDomain); noise of
    scale stretch/epsilon on every non-root entry (001 Sec 3, 000 Thm
    5.1).  The root entry is n, public under bounded neighbours.

    Sensitivity
    -----------
    The stretch of the comb tree against the secret graph, max over edges
    of d_T(u, v), recomputed over every edge (the tree's diameter for
    FullDomain): the L1 sensitivity of x_T (001 Sec 3).

    Runtime
    -------
    O(|T|): transform, noise and inverse (subtree sums), plus the edge
    scan when planning.

    References
    ----------
    .. [1] Haney, Machanavajjhala, Ding. *Design of Policy-Aware Differentially Private Algorithms.* PVLDB 9(4),
        2015 (transformational equivalence), Sec 3.
    .. [2] Anuarbek. *Data-Dependent Blowfish Private Algorithm for Histogram Queries.* Student report (paper
        001), Sec 3.
    .. [3] He, Machanavajjhala, Ding. *Blowfish Privacy: Tuning Privacy-Utility Trade-offs using Policies.*
        SIGMOD 2014 (paper 000), Thm 5.1.
    """
    shape = check_2d(policy)
    eps = check_epsilon(epsilon)
    rows, cols = shape
    memory = check_memory(int64_bytes(8 * rows * cols), size=rows * cols, parameter="policy",
                          mechanism="grid_transformed")
    kind = grid_kind(policy)
    stretch = comb_stretch(rows, cols, kind)
    built = {}
    if stretch is None:  # no closed form for this graph: its edges are listed against the tree (small domains)
        built["tree"] = tree = comb_tree(rows, cols)
        lo, hi = grid_edges(policy)
        stretch = int(tree.distances(lo, hi).max()) if lo.size else 0

    def get_tree():  # built by the measurement when the stretch has a closed form
        if "tree" not in built:
            built["tree"] = comb_tree(rows, cols)
        return built["tree"]
    if stretch == 0:
        scale, spent = Fraction(0), Fraction(0)
    else:
        cal = calibration(stretch, eps)
        scale, spent = cal.scale, cal.epsilon_exact
    N = rows * cols
    part = NoisePart("tree_edges", Fraction(stretch), True,
                     "exact: stretch of the comb tree, max over every secret edge of its tree distance "
                     "(Section 3 of the data-dependent Blowfish report)",
                     spent, scale, N - 1)

    def run(plan, hist, gen):
        flat = hist.ravel()
        tree = get_tree()
        nonroot = tree.parent >= 0
        xg = transform(flat, tree).copy()
        if scale != 0:
            xg[nonroot] = gen.add_discrete_laplace(xg[nonroot], scale)
        est = inverse(xg, tree).astype(np.float64).reshape(shape)
        return HistogramRelease(
            histogram=est, secure=gen.is_secure, stretch=max(stretch, 1),
            params={"scale": scale, "tree": "comb (middle-row spine)"}, plan=plan)

    return Plan(
        mechanism="grid_transformed", policy=policy,
        guarantee=f"(epsilon, P)-Blowfish privacy for P = {policy!r}; Laplace of scale stretch/epsilon on x_T, "
                  f"stretch {stretch}",
        citation=("Anuarbek, Data-Dependent Blowfish Private Algorithm for Histogram Queries, Section 3 "
                  "(transformational "
                  "equivalence); Haney, Machanavajjhala, Ding, VLDB 2015"),
        epsilon_requested=eps, parts=(part,), aggregate=f"int64 2-D histogram of shape {shape}",
        aggregate_shape=tuple(shape), expected_error={"per_noisy_value_variance": discrete_laplace_variance(scale)},
        memory_bytes=memory, runtime="O(|T|)", options={"stretch": stretch},
        check=shape_check(shape), run=run)


# ---------------------------------------------------------------------------
# row-cumulative with a hierarchy over rows


def plan_axis_cumulative(policy: Policy, epsilon: Real, *, fanout: int = 2) -> Plan[HistogramRelease]:
    """Plan row-wise cumulative counts with a hierarchy over the rows, least squares.

    Releases, for every column j, a fan-out-f hierarchy of noisy sums over
    row intervals of P[., j], P[a, j] = x[a, 0] + ... + x[a, j].  A
    rectangle [r1, r2] x [c1, c2] is (rows r1..r2 of P[., c2]) minus (rows
    r1..r2 of P[., c1 - 1]): two 1-D range queries.

    Returns
    -------
    Plan
        ``measure(hist2d, generator)`` takes int64 counts of shape
        ``policy.domain.shape`` and releases a :class:`HistogramRelease`
        whose ``histogram`` is the 2-D estimate recovered from the consistent
        row-wise cumulative counts.

    Privacy
    -------
    (epsilon, P)-Blowfish privacy for ``policy``: the scale is S/epsilon,
    S = max over secret edges of ||A(e_u - e_v)||_1 computed exactly.
    Under :func:`axis_line_policy` (moves along a row) a move changes one
    entry of P by one, which sits in h + 1 released nodes: S = h + 1.
    Under the grid, a vertical move changes every P[a, j], j >= b, of two
    rows: S is of order k (the mechanism stays private, but poor).

    Sensitivity
    -----------
    S = the exact maximum over the secret edges (u, v) of ||A (e_u - e_v)||_1
    for the released strategy A, every edge scanned (closed-form edge lists for
    the complete graph, the grid, its L-infinity variant and the row-line
    graph; ``iter_edges`` otherwise), 000 Def 5.1; h + 1 under :func:`axis_line_policy`.

    Runtime
    -------
    O(|T|): row-wise cumulative sums, one draw per node of the row
    hierarchies, least squares per column.

    References
    ----------
    .. [1] He, Machanavajjhala, Ding. *Blowfish Privacy: Tuning Privacy-Utility Trade-offs using Policies.*
        SIGMOD 2014 (paper 000), Sec 5 and Sec 7 (cumulative counts along an order).
    .. [2] Hay, Rastogi, Miklau, Suciu. *Boosting the Accuracy of Differentially Private Histograms Through
        Consistency.* PVLDB 3(1), 2010 (least squares).
    """
    shape = check_2d(policy)
    eps = check_epsilon(epsilon)
    f = check_fanout(fanout)
    rows, cols = shape
    h = tree_height(rows, f)
    count = sum(f ** lv for lv in range(h + 1)) * cols
    memory = check_memory(int64_bytes(4 * count + 4 * rows * cols), size=rows * cols, parameter="policy",
                          mechanism="axis_cumulative")
    kind = grid_kind(policy)
    sens, how = axis_sensitivity(policy, kind, shape, f, h)
    if sens == 0:
        scale, spent = Fraction(0), Fraction(0)
    else:
        cal = calibration(sens, eps)
        scale, spent = cal.scale, cal.epsilon_exact
    part = NoisePart("row_tree_of_cumulative", Fraction(sens), True, how, spent, scale, count)

    def run(plan, hist, gen):
        R = f ** h
        P = np.zeros((R, cols), dtype=np.int64)
        P[:rows] = np.cumsum(hist, axis=1)
        lv_nodes = _noisy_parts([sum_level(P, 0, f, h, lv) for lv in range(h + 1)], scale, gen)
        Phat = _hay_axis(lv_nodes, f, 0)[:rows]
        est = np.diff(Phat, axis=1, prepend=0.0)
        return HistogramRelease(
            histogram=est, secure=gen.is_secure,
            params={"scale": scale, "fanout": f, "sensitivity": sens}, plan=plan)

    return Plan(
        mechanism="axis_cumulative", policy=policy,
        guarantee=f"(epsilon, P)-Blowfish privacy for P = {policy!r}; one scale S/epsilon, S = {sens} exact",
        citation=_CITATION, epsilon_requested=eps, parts=(part,),
        aggregate=f"int64 2-D histogram of shape {shape}", aggregate_shape=tuple(shape),
        expected_error={"per_node_variance": discrete_laplace_variance(scale)},
        memory_bytes=memory, runtime="O(|T|)",
        options={"fanout": f, "sensitivity": sens}, check=shape_check(shape), run=run)


# ---------------------------------------------------------------------------
# functional API


@guarantee_of(plan_grid_hierarchical)
def grid_hierarchical(
    hist: npt.ArrayLike, policy: Policy, epsilon: Real, generator: Generator | None = None, **options: Any,
) -> HistogramRelease:
    """Noisy 2-D hierarchy of rectangle counts with least squares.

    ``plan_grid_hierarchical(policy, epsilon, **options).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, shape (rows, cols)
        Exact counts on the policy's 2-D ordinal domain.
    policy : Policy
    epsilon : float
    generator : Generator, optional
    **options
        ``fanout``, ``levels`` as :func:`plan_grid_hierarchical`.

    Returns
    -------
    HistogramRelease
        The 2-D least-squares estimate (float64, shape of the domain).
    """
    return plan_grid_hierarchical(policy, epsilon, **options).measure(hist, generator)


@guarantee_of(plan_grid_transformed)
def grid_transformed(
    hist: npt.ArrayLike, policy: Policy, epsilon: Real, generator: Generator | None = None,
) -> HistogramRelease:
    """Transformed + Laplace on a comb spanning tree of the 2-D domain.

    ``plan_grid_transformed(policy, epsilon).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int
        The exact 2-D histogram, shaped as ``policy.domain``.
    policy : Policy
        Its secret graph is measured against the comb tree.
    epsilon, generator
        As for :func:`grid_hierarchical`.

    Returns
    -------
    HistogramRelease
        The 2-D estimate (inverse transform of the noisy x_T), summing to n.
    """
    return plan_grid_transformed(policy, epsilon).measure(hist, generator)


@guarantee_of(plan_axis_cumulative)
def axis_cumulative(
    hist: npt.ArrayLike, policy: Policy, epsilon: Real, generator: Generator | None = None, **options: Any,
) -> HistogramRelease:
    """Row-wise cumulative counts with a hierarchy over the rows, least squares.

    ``plan_axis_cumulative(policy, epsilon, **options).measure(hist, generator)``.

    Parameters
    ----------
    hist, policy, epsilon, generator
        As for :func:`grid_hierarchical`; the row-line policy of
        :func:`axis_line_policy` is the one this mechanism suits.
    **options
        ``fanout`` as :func:`plan_axis_cumulative`.

    Returns
    -------
    HistogramRelease
        The 2-D estimate recovered from the consistent cumulative counts.
    """
    return plan_axis_cumulative(policy, epsilon, **options).measure(hist, generator)
