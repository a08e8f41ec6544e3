"""The 2-D policies of :mod:`.grid`, their secret edges and the exact sensitivities.

``grid_policy`` (the grid ``DistanceThreshold(1)``) and ``axis_line_policy``
(moves along a row only) build the policies a 2-D benchmark uses;
``grid_edges`` lists any 2-D policy's secret edges as flat indices, in
closed form for the complete graph, the grid, its L-infinity variant and
the row-line graph, else through ``iter_edges`` (small domains).  The
mechanisms of :mod:`.grid` and :mod:`.hilbert` scan these edges for an
exact sensitivity, max over edges of ||A (e_u - e_v)||_1 for the released
strategy A (He, Machanavajjhala, Ding, Blowfish Privacy, SIGMOD 2014, 000
Def 5.1): ``hier_sensitivity`` for the 2-D hierarchies,
``axis_sensitivity`` for the row-wise cumulative counts.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..._validation import as_int
from ...policy.domain import Domain, Ordinal
from ...errors import ParameterError
from ...policy._policy import Policy, require_policy
from ...policy.secrets import Custom, DistanceThreshold

__all__ = ["AXIS_LINE_EDGE_LIMIT", "axis_line_policy", "grid_edges", "grid_policy"]

#: Most edges :func:`axis_line_policy` lists (its graph is an explicit edge list).
AXIS_LINE_EDGE_LIMIT = 4_000_000


def grid_policy(rows: int, cols: int, *, metric: str = "l1"):
    """The grid policy on a rows x cols ordinal domain: ``DistanceThreshold(1, metric)``."""
    return Policy(Domain([Ordinal("row", 0, rows - 1), Ordinal("col", 0, cols - 1)]),
                  DistanceThreshold(1, metric))


def axis_line_policy(rows: int, cols: int):
    """Secrets move one step along a row only: (a, b) ~ (a, b+1).

    A weaker policy than the grid: the row of every record is not secret
    (e.g. a public region band), only its position along the row is.  Built
    as ``secrets.Custom`` on a rows x cols ordinal domain, so at most
    :data:`AXIS_LINE_EDGE_LIMIT` edges (else a ParameterError naming cols).
    """
    rows, cols = as_int(rows, "rows", minimum=1), as_int(cols, "cols", minimum=1)
    if rows * (cols - 1) > AXIS_LINE_EDGE_LIMIT:
        raise ParameterError("cols", f"rows, cols: the row-line graph of a {rows} x {cols} grid lists "
                             f"{rows * (cols - 1):,} edges, more than {AXIS_LINE_EDGE_LIMIT:,} (an explicit "
                             "edge list is for small domains); use a smaller grid")
    dom = Domain([Ordinal("row", 0, rows - 1), Ordinal("col", 0, cols - 1)])
    edges = [((a, b), (a, b + 1)) for a in range(rows) for b in range(cols - 1)]
    return Policy(dom, Custom(edges))


def check_2d(policy):
    require_policy(policy)
    dom = policy.domain
    if dom.ndim != 2 or not all(isinstance(a, Ordinal) for a in dom.attributes):
        raise ValueError(f"policy: these mechanisms need a 2-D ordinal domain, got {dom!r}")
    if getattr(policy, "constraints", None):
        raise ValueError("policy: public constraints are not supported by the 2-D mechanisms; "
                         "give a policy without constraints")
    return dom.shape


def grid_kind(policy) -> str:
    """'dp', 'grid', 'king', 'rowline' (closed-form edge lists) or 'listed'."""
    g = policy.secrets
    dom = policy.domain
    unit = all(getattr(a, "bin_width", 1) == 1 for a in dom.attributes)
    if g.is_complete():
        return "dp"
    threshold = g.edge_threshold()
    if threshold is not None and unit and 1 <= Fraction(threshold[1]) < 2:
        metric, theta = threshold[0], Fraction(threshold[1])
        # unit steps are at distance 1 in every metric; a diagonal step is at
        # 2 (l1), sqrt 2 (l2) or 1 (linf): compare theta^2 with 2 exactly
        diagonal = {"l1": False, "l2": theta ** 2 >= 2, "linf": True}.get(metric)
        if diagonal is not None:
            return "king" if diagonal else "grid"
    if g.lists_edges() and unit:
        # the row-line graph: exactly the pairs (a, b) ~ (a, b + 1), as flat indices of the row-major grid
        r, c = dom.shape
        lo, hi = g.iter_edges(dom, limit=max(dom.size, 1))
        idx = np.arange(r * c, dtype=np.int64).reshape(r, c)
        want = idx[:, :-1].ravel() * dom.size + idx[:, 1:].ravel()
        have = np.sort(lo * dom.size + hi)
        if have.shape == want.shape and np.array_equal(have, np.sort(want)):
            return "rowline"
    return "listed"


def grid_edges(policy) -> tuple[np.ndarray, np.ndarray]:
    """Every edge (lo, hi) of the policy's secret graph as flat indices (not for FullDomain)."""
    rows, cols = check_2d(policy)
    kind = grid_kind(policy)
    idx = np.arange(rows * cols, dtype=np.int64).reshape(rows, cols)
    parts = []
    if kind in ("grid", "king", "rowline"):
        parts.append((idx[:, :-1].ravel(), idx[:, 1:].ravel()))
    if kind in ("grid", "king"):
        parts.append((idx[:-1, :].ravel(), idx[1:, :].ravel()))
    if kind == "king":
        parts.append((idx[:-1, :-1].ravel(), idx[1:, 1:].ravel()))
        parts.append((idx[:-1, 1:].ravel(), idx[1:, :-1].ravel()))
    if kind == "dp":
        raise ValueError("grid_edges: the complete graph is handled in closed form, not listed")
    if kind == "listed":
        lo, hi = policy.secrets.iter_edges(policy.domain)
        return np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


# ---------------------------------------------------------------------------
# exact sensitivities of the 2-D strategies


def _node_ids(index: np.ndarray, f: int, h: int, level: int) -> np.ndarray:
    """Node of ``index`` at ``level`` (0 = root) of a fan-out-f tree of height h."""
    return index // (f ** (h - level))


def _max_step_levels(n: int, f: int, h: int) -> set:
    """Levels (0 = root .. h) of a fan-out-f tree of height h over n values whose nodes split a unit step the most.

    A step i -> i + 1 crosses a node boundary at level l exactly when
    f^(h - l) divides i + 1, so it splits the levels l >= h - v, v the
    multiplicity of f in i + 1; the step with the largest v (i + 1 = f^K,
    K the largest with f^K <= n - 1) splits a superset of every other
    step's levels.  Empty when n = 1 (no step).
    """
    if n < 2:
        return set()
    K, p = 0, f
    while p <= n - 1:
        K, p = K + 1, p * f
    return set(range(max(h - K, 0), h + 1))


def _unit_step_kinds(kind: str, rows: int, cols: int) -> list[tuple[bool, bool]]:
    """(moves a row, moves a column) of the unit steps of a closed-form 2-D graph that exist on rows x cols."""
    steps = []
    if kind in ("grid", "king", "rowline") and cols > 1:
        steps.append((False, True))
    if kind in ("grid", "king") and rows > 1:
        steps.append((True, False))
    if kind == "king" and rows > 1 and cols > 1:
        steps.append((True, True))
    return steps


def hier_sensitivity(policy, kind, shape, f, hr, hc, pairs) -> tuple[int, str]:
    rows, cols = shape
    if kind in ("grid", "king", "rowline"):
        # every edge is a unit step along a row, a column or a diagonal; the
        # steps whose split levels are largest (every level where any two
        # rows, or columns, are split) give the maximum, in O(h^2)
        sr, sc = _max_step_levels(rows, f, hr), _max_step_levels(cols, f, hc)
        best = 0
        for moves_row, moves_col in _unit_step_kinds(kind, rows, cols):
            best = max(best, sum(1 for lr, lc in pairs if (moves_row and lr in sr) or (moves_col and lc in sc)))
        return 2 * best, ("exact: max over the secret edges (unit steps) of the number of released nodes holding "
                          "exactly one end, times the two of them; the worst step of each axis crosses the most "
                          "node boundaries (closed form of the edge scan)")
    return _hier_sensitivity_scan(policy, kind, shape, f, hr, hc, pairs)


def _hier_sensitivity_scan(policy, kind, shape, f, hr, hc, pairs) -> tuple[int, str]:
    rows, cols = shape
    if kind == "dp":
        # u = (0, 0), v = (rows-1, cols-1) are in different nodes at every level
        # where any two rows (columns) are; no pair separates more node pairs.
        split_r = [rows > 1 and _node_ids(np.int64(0), f, hr, lr) != _node_ids(np.int64(rows - 1), f, hr, lr)
                   for lr in range(hr + 1)]
        split_c = [cols > 1 and _node_ids(np.int64(0), f, hc, lc) != _node_ids(np.int64(cols - 1), f, hc, lc)
                   for lc in range(hc + 1)]
        s = 2 * sum(1 for (lr, lc) in pairs if split_r[lr] or split_c[lc])
        return s, ("exact: the complete graph's worst pair (opposite corners) is in different nodes of every "
                   "pair of levels where any two values are; 2 per such released node "
                   "(Definition 5.1 of the Blowfish paper)")
    lo, hi = grid_edges(policy)
    if lo.size == 0:
        return 0, "no secret edge: nothing changes"
    ra, ca = np.divmod(lo, cols)
    rb, cb = np.divmod(hi, cols)
    count = np.zeros(lo.size, dtype=np.int64)
    for lr, lc in pairs:
        diff = ((_node_ids(ra, f, hr, lr) != _node_ids(rb, f, hr, lr))
                | (_node_ids(ca, f, hc, lc) != _node_ids(cb, f, hc, lc)))
        count += diff
    return 2 * int(count.max()), ("exact: max over every edge (u, v) of the secret graph of the number of "
                                  "released nodes holding exactly one of u, v, times the two of them")


def axis_sensitivity(policy, kind, shape, f, h) -> tuple[int, str]:
    rows, cols = shape
    if kind in ("grid", "king", "rowline"):
        # a step along a row changes one entry of P per column it spans (h + 1 nodes);
        # a step across rows (column j0 to j1) changes -e_a + e_a' in every column
        # j >= max(j0, j1) (two nodes per level that splits the rows) and one entry in
        # the columns between; the worst rows split the most levels (O(h))
        split = len(_max_step_levels(rows, f, h))
        best = 0
        for moves_row, moves_col in _unit_step_kinds(kind, rows, cols):
            if not moves_row:
                best = max(best, h + 1)
            elif not moves_col:
                best = max(best, cols * 2 * split)
            else:
                best = max(best, (cols - 1) * 2 * split + h + 1)
        return best, ("exact: max over every secret edge of ||A(e_u - e_v)||_1 for A = (row hierarchy) applied "
                      "to the row-wise cumulative counts (closed form of the edge scan: the worst rows split the "
                      "most levels)")
    return _axis_sensitivity_scan(policy, kind, shape, f, h)


def _axis_sensitivity_scan(policy, kind, shape, f, h) -> tuple[int, str]:
    rows, cols = shape
    if kind == "dp":
        # the complete graph: every pair (u, v) is an edge, scanned exactly on small domains
        us = np.repeat(np.arange(rows * cols, dtype=np.int64), rows * cols) if rows * cols <= 4096 else None
        if us is None:
            raise ValueError("plan_axis_cumulative: the complete graph is supported on domains of at most 4096 "
                             "values (its exact sensitivity is found by scanning every pair)")
        vs = np.tile(np.arange(rows * cols, dtype=np.int64), rows * cols)
        keep = us < vs
        lo, hi = us[keep], vs[keep]
    else:
        lo, hi = grid_edges(policy)
    if lo.size == 0:
        return 0, "no secret edge"
    ra, ca = np.divmod(lo, cols)
    rb, cb = np.divmod(hi, cols)
    same_row = ra == rb
    # same row: P[a, j] changes for j in [min(b), max(b)) -> that many columns, h + 1 nodes each
    s_same = np.where(same_row, np.abs(cb - ca) * (h + 1), 0)
    # different rows: columns j >= max(ca, cb) see -e_a + e_a' (nodes holding exactly one of them);
    # columns in [min, max) see one single change (h + 1 nodes)
    xor = np.zeros(lo.size, dtype=np.int64)
    for lv in range(h + 1):
        xor += _node_ids(ra, f, h, lv) != _node_ids(rb, f, h, lv)
    both = cols - np.maximum(ca, cb)
    one = np.abs(cb - ca)
    s_diff = np.where(same_row, 0, both * 2 * xor + one * (h + 1))
    s = int(np.maximum(s_same, s_diff).max())
    return s, ("exact: max over every secret edge of ||A(e_u - e_v)||_1 for A = (row hierarchy) applied to the "
               "row-wise cumulative counts")
