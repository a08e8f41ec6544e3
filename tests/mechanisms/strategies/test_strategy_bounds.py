"""Lower bounds on the error of data-independent linear mechanisms (mechanisms/strategies/_bounds.py and its edge sets).

Oracles: the exact expected error of concrete strategies (their exact policy
sensitivity by an edge scan, the least-squares error formula), dense
``W[:, u] - W[:, v]`` against the sparse transformed workload, the graph's own
edge test for every tree edge, and closed forms where the bound is tight.
"""

from __future__ import annotations

import math
import resource
import time

import numpy as np
import pytest

from blowfish_privacy import Policy, constraints
from blowfish_privacy import secrets as S
from blowfish_privacy import workloads as WL
from blowfish_privacy.policy.domain import Domain, Ordinal
from blowfish_privacy.errors import ParameterError
from blowfish_privacy.mechanisms.strategies import _bound_edge_sets as BE
from blowfish_privacy.mechanisms.strategies import _bound_transformed as BT
from blowfish_privacy.mechanisms.strategies import _bounds as B
from blowfish_privacy.mechanisms.strategies import _strategy as st
from blowfish_privacy.mechanisms.strategies import _strategy_sensitivity as ss
from blowfish_privacy.mechanisms.strategies import optimized as O
def _dom(*shape):
    if len(shape) == 1:
        return Domain.ordinal("x", 0, shape[0] - 1)
    return Domain([Ordinal(f"a{i}", 0, n - 1) for i, n in enumerate(shape)])


_POLICIES = {
    "full6": lambda: Policy(_dom(6), S.FullDomain()),
    "line7": lambda: Policy(_dom(7), S.Line()),
    "threshold2_7": lambda: Policy(_dom(7), S.DistanceThreshold(2)),
    "grid4x4": lambda: Policy(_dom(4, 4), S.DistanceThreshold(1)),
    "grid5x3": lambda: Policy(_dom(5, 3), S.DistanceThreshold(1)),
    "full3x3": lambda: Policy(_dom(3, 3), S.FullDomain()),
    "threshold2_4x3": lambda: Policy(_dom(4, 3), S.DistanceThreshold(2)),
}


def _workloads(shape, rng):
    if len(shape) == 1:
        n = shape[0]
        return [WL.AllRanges(n), WL.Prefix(n), WL.Identity(n), WL.RandomRanges(n, 9, rng),
                WL.Explicit(rng.normal(size=(4, n)))]
    return [WL.RandomRectangles(shape, 12, rng), WL.Kronecker(WL.Prefix(shape[0]), WL.AllRanges(shape[1])),
            WL.Marginals(shape, [(0,), (1,)]), WL.Explicit(rng.normal(size=(5, math.prod(shape))), shape=shape)]


def _strategies(N, gram, rng):
    out = {"identity": np.eye(N), "prefix": st.prefix_strategy(N), "hier2": st.hierarchical_strategy(N, 2),
           "hier4": st.hierarchical_strategy(N, 4)}
    for k in range(3):
        out[f"random{k}"] = rng.random((N + 2 + k, N))
    A, _, _ = O.optimize_p_identity(gram, "bounded", restarts=1, seed=1, maxiter=150)
    out["p-identity"] = A
    return out


def _exact_error(A, W, policy, total, eps):
    sens, how = ss.strategy_sensitivity(A, policy)
    assert how.startswith("exact"), how
    return st.strategy_error(A, W, total=total) * float(sens) ** 2 * 2.0 / eps**2


@pytest.mark.parametrize("name", sorted(_POLICIES))
def test_bound_below_exact_error_of_strategies(name):
    policy = _POLICIES[name]()
    rng = np.random.default_rng(sum(map(ord, name)))
    shape = tuple(policy.domain.shape)
    N = math.prod(shape)
    eps = 0.7
    checked = 0
    for W in _workloads(shape, rng):
        bound = B.linear_lower_bound(W, policy, eps)
        assert bound["value"] == pytest.approx(2 * bound["per_unit"] / eps**2)
        assert bound["value"] > 0 and bound["tree"] in bound["candidates"]
        for label, A in _strategies(N, W.gram(), rng).items():
            for total in ("public", "none"):
                try:
                    err = _exact_error(A, W, policy, total, eps)
                except ValueError:  # does not determine the histogram (prefix sums without the total)
                    assert label == "prefix" and total == "none"
                    continue
                assert bound["value"] <= err * (1 + 1e-9), (W, label, total, bound, err)
                checked += 1
    assert checked >= 50


@pytest.mark.parametrize("name", ["line7", "full6", "threshold2_7"])
def test_local_search_cannot_beat_the_bound(name):
    """An adversary: random-perturbation descent on the exact Blowfish error of a strategy stays above the bound."""
    policy = _POLICIES[name]()
    N = policy.domain.size
    rng = np.random.default_rng(17)
    W = WL.AllRanges(N)
    bound = B.linear_lower_bound(W, policy)["value"]

    def err(A):
        try:
            return _exact_error(A, W, policy, "public", 1.0)
        except ValueError:
            return np.inf

    A = rng.random((N + 3, N))
    start = best = err(A)
    for step in range(400):
        cand = A + rng.normal(scale=0.3 * 0.99**step, size=A.shape) * (rng.random(A.shape) < 0.2)
        e = err(cand)
        if e < best:
            A, best = cand, e
    assert bound <= best * (1 + 1e-9)
    assert best < 0.9 * start  # the search did descend


def test_dp_bound_below_exact_error_and_tight_for_identity():
    rng = np.random.default_rng(3)
    N = 8
    for W in (WL.AllRanges(N), WL.Prefix(N), WL.RandomRanges(N, 5, rng), WL.Explicit(rng.normal(size=(3, N)))):
        b = B.dp_lower_bound(W, 2.0)
        for A in (np.eye(N), st.hierarchical_strategy(N, 2), rng.random((N + 3, N)),
                  O.optimize_p_identity(W.gram(), "add_remove", restarts=1, maxiter=150)[0]):
            sens = float(np.abs(A).sum(axis=0).max())  # add/remove sensitivity
            err = st.strategy_error(A, W) * sens**2 * 2.0 / 4.0
            assert b["value"] <= err * (1 + 1e-9)
    # tight: the identity workload, answered by the identity (error 2 N / eps^2)
    b = B.dp_lower_bound(WL.Identity(N), 1.0)
    assert b["value"] == pytest.approx(2.0 * N, rel=1e-9)


@pytest.mark.parametrize("N", [5, 16, 64])
def test_prefix_under_line_is_tight(N):
    """W_T of the prefix workload under the line is the identity on the N - 1 cuts: the ordered mechanism is optimal."""
    policy = Policy(_dom(N), S.Line())
    b = B.linear_lower_bound(WL.Prefix(N), policy, 1.0)
    assert b["per_unit"] == pytest.approx(N - 1, rel=1e-9)
    ordered = st.strategy_error(st.prefix_strategy(N), WL.Prefix(N), total="public")
    assert ss.strategy_sensitivity(st.prefix_strategy(N), policy)[0] == 1
    assert ordered == pytest.approx(N - 1, rel=1e-9)
    assert b["value"] == pytest.approx(2.0 * ordered, rel=1e-9)
    M = BT.transformed_workload(WL.Prefix(N), BE.spanning_trees(policy)[0][1])
    assert np.array_equal(np.abs(M.toarray()), np.eye(N)[:, : N - 1])


def _random_grid_tree(shape, rng):
    """A random spanning tree of the grid (Kruskal on random weights)."""
    u, v = BE._grid_edges(shape)
    order = rng.permutation(u.size)
    comp = list(range(math.prod(shape)))

    def find(a):
        while comp[a] != a:
            comp[a] = comp[comp[a]]
            a = comp[a]
        return a

    keep = []
    for k in order:
        a, b = find(int(u[k])), find(int(v[k]))
        if a != b:
            comp[a] = b
            keep.append(k)
    keep = np.array(keep)
    flip = rng.random(keep.size) < 0.5
    return np.where(flip, v[keep], u[keep]), np.where(flip, u[keep], v[keep])


def test_sparse_transformed_workload_equals_dense():
    rng = np.random.default_rng(7)
    for n in (1, 2, 17):
        W = WL.Ranges(n, np.sort(rng.integers(0, n, size=(30, 2)), axis=1))
        dense = W.matrix()
        for u, v in [(np.arange(1, n), np.arange(n - 1)), (np.arange(n - 1), np.arange(1, n))]:
            M = BT.transformed_workload(W, (u, v))
            assert np.array_equal(M.toarray(), dense[:, u] - dense[:, v])
        for d in range(1, 5):  # edges of span d (distance-threshold graphs), both orientations, mixed
            u = np.arange(max(n - d, 0))
            flip = rng.random(u.size) < 0.5
            a, b = np.where(flip, u + d, u), np.where(flip, u, u + d)
            assert np.array_equal(BT.transformed_workload(W, (a, b)).toarray(), dense[:, a] - dense[:, b])
        if n > 1:
            pol = Policy(_dom(n), S.DistanceThreshold(3))
            u, v = pol.secrets.iter_edges(pol.domain)
            assert np.array_equal(BT.transformed_workload(W, (u, v)).toarray(), dense[:, u] - dense[:, v])
        parent = np.arange(-1, n - 1)
        assert np.array_equal(BT.transformed_workload(W, parent).toarray(), dense[:, 1:] - dense[:, :-1])
    for shape in ((6, 5), (1, 7), (7, 1), (4, 4)):
        W = WL.RandomRectangles(shape, 40, rng)
        dense = W.matrix()
        sets = [BE._grid_edges(shape)] + [_random_grid_tree(shape, rng) for _ in range(3)]
        pol = Policy(_dom(*shape), S.DistanceThreshold(1))
        sets += [BE.tree_edges(p) for _, p in BE.spanning_trees(pol)]
        for u, v in sets:
            M = BT.transformed_workload(W, (u, v))
            assert np.array_equal(M.toarray(), dense[:, u] - dense[:, v])
    with pytest.raises(ParameterError, match="axis-neighbour"):
        BT.transformed_workload(WL.RandomRectangles((3, 3), 4, rng), (np.array([0]), np.array([4])))


@pytest.mark.parametrize("shape", [(9,), (4, 5)])
def test_routes_agree_with_the_dense_computation(shape):
    """Every candidate's value equals svd_bound of the dense W D_E, whichever route computed it."""
    rng = np.random.default_rng(11)
    N = math.prod(shape)
    policy = Policy(_dom(*shape), S.FullDomain())
    W = WL.RandomRanges(shape[0], 6, rng) if len(shape) == 1 else WL.RandomRectangles(shape, 6, rng)
    dense = W.matrix()
    names = [n for n in ("path", "snake", "comb-rows", "comb-cols", "star:0", "star:3", "grid", "complete")
             if len(shape) == 2 or n not in ("snake", "comb-rows", "comb-cols", "grid")]
    for name in names:
        structured = B.linear_lower_bound(W, policy, trees=[name])
        explicit = B.linear_lower_bound(WL.Explicit(dense, shape=shape), policy, trees=[name])
        if name == "complete":
            iu, iv = np.triu_indices(N, 1)
        elif name == "grid":
            iu, iv = BE._grid_edges(shape)
        else:
            iu, iv = BE.tree_edges(BE._tree_parent(shape, name))
        ref = B.svd_bound(dense[:, iu] - dense[:, iv])
        assert structured["per_unit"] == pytest.approx(ref, rel=1e-9), name
        assert explicit["per_unit"] == pytest.approx(ref, rel=1e-9), name
    # the N-side Gram route, with more queries than cells
    W = WL.AllRanges(shape[0]) if len(shape) == 1 else WL.Kronecker(WL.AllRanges(shape[0]), WL.AllRanges(shape[1]))
    dense = W.matrix()
    for name in ("path", "star:2", "complete"):
        got = B.linear_lower_bound(W, policy, trees=[name])
        assert name == "complete" or "Gram" in got["route"], got["route"]
        if name == "complete":
            iu, iv = np.triu_indices(N, 1)
        else:
            iu, iv = BE.tree_edges(BE._tree_parent(shape, name))
        assert got["per_unit"] == pytest.approx(B.svd_bound(dense[:, iu] - dense[:, iv]), rel=1e-9)


_TREE_POLICIES = dict(_POLICIES, **{
    "grid_linf": lambda: Policy(_dom(4, 3), S.DistanceThreshold(1, "linf")),
    "attribute": lambda: Policy(_dom(3, 4), S.Attribute(1)),
    "full1": lambda: Policy(_dom(2), S.FullDomain()),
    "custom": lambda: Policy(_dom(6), S.Custom([(0, 3), (1, 5), (2, 4), (3, 4), (4, 5)])),
    "grid3d": lambda: Policy(_dom(2, 3, 2), S.DistanceThreshold(1)),
})


@pytest.mark.parametrize("name", sorted(_TREE_POLICIES))
def test_trees_are_spanning_trees_of_the_graph(name):
    policy = _TREE_POLICIES[name]()
    dom, g = policy.domain, policy.secrets
    N = dom.size
    trees = BE.spanning_trees(policy)
    assert trees
    for desc, parent in trees:
        assert parent.shape == (N,) and (parent == -1).sum() == 1, desc
        u, v = BE.tree_edges(parent)
        assert u.size == N - 1
        assert all(bool(g.edge_mask(dom, np.array([a]), np.array([b]))[0]) for a, b in zip(u, v)), desc
        seen = {int(np.flatnonzero(parent == -1)[0])}  # connected: every cell reaches the root
        adj = {k: [] for k in range(N)}
        for a, b in zip(u, v):
            adj[int(a)].append(int(b))
            adj[int(b)].append(int(a))
        stack = list(seen)
        while stack:
            for w in adj[stack.pop()]:
                if w not in seen:
                    seen.add(w)
                    stack.append(w)
        assert len(seen) == N, desc


def test_named_trees_by_policy():
    grid = Policy(_dom(4, 4), S.DistanceThreshold(1))
    names = [d for d, _ in BE.spanning_trees(grid)]
    assert len(names) == 3 and "snake" in names[0] and "comb" in names[1] and "comb" in names[2]
    full = [d for d, _ in BE.spanning_trees(Policy(_dom(4, 4), S.FullDomain()))]
    assert len(full) == 6 and any("star" in d for d in full)
    assert [d for d, _ in BE.spanning_trees(Policy(_dom(9), S.Line()))] == ["line path (8 edges)"]
    # a grid bound reports which candidate won, among the trees and the grid edges
    r = B.linear_lower_bound(WL.RandomRectangles((4, 4), 10, np.random.default_rng(0)), grid)
    assert set(r["candidates"]) == set(names) | {"all 24 axis-neighbour (grid) edges, uniform weights"}
    assert r["per_unit"] == max(r["candidates"].values())


def test_refusals():
    line = Policy(_dom(6), S.Line())
    with pytest.raises(ParameterError, match="not an edge"):
        B.linear_lower_bound(WL.AllRanges(6), line, trees=["star:2"])
    with pytest.raises(ParameterError, match="complete"):
        B.linear_lower_bound(WL.AllRanges(6), line, trees=["complete"])
    with pytest.raises(ParameterError, match="cycle"):
        B.linear_lower_bound(WL.AllRanges(6), line, trees=[("loop", np.array([1, 2, 0, 2, 3, 4]))])
    with pytest.raises(ParameterError, match="unknown tree"):
        B.linear_lower_bound(WL.AllRanges(6), line, trees=["spiral"])
    with pytest.raises(ValueError, match="constraints"):
        B.linear_lower_bound(WL.AllRanges(6), Policy(_dom(6), S.Line(), constraints=[constraints.RangeCount(0, 2)]))
    with pytest.raises(ParameterError, match="shape"):
        B.linear_lower_bound(WL.AllRanges(5), line)
    with pytest.raises(ParameterError, match="epsilon"):
        B.linear_lower_bound(WL.AllRanges(6), line, 0.0)
    with pytest.raises(ParameterError, match="Kronecker"):
        big = Policy(_dom(128, 128), S.DistanceThreshold(1))
        B.linear_lower_bound(WL.Kronecker(WL.Prefix(128), WL.Prefix(128)), big)
    with pytest.raises(ValueError, match="columns"):
        B.svd_bound(np.eye(3), gram=True)


@pytest.mark.parametrize("W", [WL.AllRanges(9), WL.RandomRanges(9, 4, np.random.default_rng(2)), WL.Prefix(9)])
def test_threshold_graph_candidates_match_dense(W):
    """All edges of G^{d,3} and its longest offsets: each candidate equals the dense SVD bound, whatever route."""
    policy = Policy(_dom(9), S.DistanceThreshold(3))
    r = B.linear_lower_bound(W, policy)
    dense = W.matrix()
    U, V = policy.secrets.iter_edges(policy.domain)
    names = {"all 21 edges of the graph, uniform weights": (U, V),
             "the 6 edges at offset 3, uniform weights": (np.arange(6), np.arange(3, 9)),
             "the 7 edges at offset 2, uniform weights": (np.arange(7), np.arange(2, 9)),
             "line path (8 edges)": (np.arange(1, 9), np.arange(8))}
    assert set(r["candidates"]) == set(names)
    for name, (u, v) in names.items():
        assert r["candidates"][name] == pytest.approx(B.svd_bound(dense[:, u] - dense[:, v]), rel=1e-9), name
    assert r["per_unit"] > r["candidates"]["line path (8 edges)"]


def test_epsilon_scaling_and_no_edge_graph():
    pol = Policy(_dom(8), S.DistanceThreshold(3))
    a = B.linear_lower_bound(WL.AllRanges(8), pol, 1.0)
    b = B.linear_lower_bound(WL.AllRanges(8), pol, 0.5)
    assert b["value"] == pytest.approx(4 * a["value"]) and b["per_unit"] == a["per_unit"]
    binned = Policy(Domain.ordinal("x", 0, 9, bin_width=5), S.DistanceThreshold(1))  # no two bins within 1
    assert not binned.secrets.has_edge(binned.domain)
    assert B.linear_lower_bound(WL.AllRanges(2), binned)["value"] == 0.0


def test_dp_kronecker_is_the_product_of_the_factors():
    rng = np.random.default_rng(5)
    W = WL.Kronecker(WL.AllRanges(5), WL.RandomRanges(4, 3, rng))
    got = B.dp_lower_bound(W)
    assert got["route"].startswith("Kronecker")
    assert got["per_unit"] == pytest.approx(B.svd_bound(W.matrix()), rel=1e-9)
    rect = WL.RandomRectangles((6, 5), 9, rng)
    assert B.dp_lower_bound(rect)["per_unit"] == pytest.approx(B.svd_bound(rect.matrix()), rel=1e-9)


def test_svd_bound_closed_forms():
    N = 10
    assert B.svd_bound(np.eye(N)) == pytest.approx(N)  # sum sigma = N
    assert B.svd_bound(np.ones((1, N))) == pytest.approx(1.0)  # sigma = sqrt(N)
    G = WL.AllRanges(N).gram()
    assert B.svd_bound(G, gram=True, columns=N) == pytest.approx(B.svd_bound(WL.AllRanges(N).matrix()))


@pytest.mark.slow
def test_large_rectangles_fast_and_small():
    rng = np.random.default_rng(0)
    W = WL.RandomRectangles((256, 256), 2000, rng)
    t = time.perf_counter()
    r = B.linear_lower_bound(W, Policy(_dom(256, 256), S.DistanceThreshold(1)))
    assert time.perf_counter() - t < 60 and r["value"] > 0
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 2 * 2**20  # kB: under 2 GiB
