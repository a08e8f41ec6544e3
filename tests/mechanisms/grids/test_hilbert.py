"""Hilbert order (mechanisms/grids/hilbert.py): bijection and adjacency by brute force, aligned blocks are
runs; DAWA over the Hilbert order equals DAWA on the reordered histogram (same seeded noise); the
grid DAWA + Transformed budget split and its merged-graph sensitivity by brute force."""

import importlib

import numpy as np
import pytest

from blowfish_privacy import Generator, audit, mechanisms
from blowfish_privacy.mechanisms.grids import grid
from blowfish_privacy.policy.transform import spanning_tree_of_edges, transform

H = importlib.import_module("blowfish_privacy.mechanisms.grids.hilbert")
DH = importlib.import_module("blowfish_privacy.baselines.dawa_hilbert")


@pytest.mark.parametrize("k", [1, 2, 4, 8, 16, 32])
def test_hilbert_order_is_a_bijection_with_adjacent_steps(k):
    o = H.hilbert_order(k)
    assert sorted(o.tolist()) == list(range(k * k))
    r, c = np.divmod(o, k)
    for i in range(k * k - 1):  # every step moves to an L1 neighbour
        assert abs(int(r[i + 1]) - int(r[i])) + abs(int(c[i + 1]) - int(c[i])) == 1
    pos = np.empty(k * k, np.int64)
    pos[o] = np.arange(k * k)
    s = 1
    while s <= k:  # every aligned s x s block is one run of the curve
        for a in range(0, k, s):
            for b in range(0, k, s):
                p = np.sort(pos.reshape(k, k)[a:a + s, b:b + s].ravel())
                assert p[-1] - p[0] == s * s - 1
        s *= 2


def test_hilbert_refuses_other_sides():
    for bad in (0, 3, 6, -4):
        with pytest.raises(ValueError, match="power of two"):
            H.hilbert_order(bad)
    with pytest.raises(ValueError, match="square"):
        DH.plan_dawa_hilbert((8, 4), 1.0)


def test_dawa_hilbert_is_dawa_on_the_reordered_histogram():
    k = 16
    x = np.random.default_rng(3).poisson(3, (k, k)).astype(np.int64)
    r = DH.plan_dawa_hilbert((k, k), 0.5).measure(x, Generator(seed=11))
    o = H.hilbert_order(k)
    r1 = mechanisms.plan_dawa(k * k, 0.5).measure(x.ravel()[o], Generator(seed=11))
    back = np.empty(k * k)
    back[o] = r1.histogram
    np.testing.assert_array_equal(r.histogram.ravel(), back)
    assert r.epsilon_exact == r1.epsilon_exact <= 0.5
    assert r.plan.parts == mechanisms.plan_dawa(k * k, 0.5).parts


def test_grid_dawa_transformed_budget():
    for eps in (0.1, 1.0):
        p = H.plan_grid_dawa_transformed(grid.grid_policy(16, 16), eps)
        ref = mechanisms.plan_dawa(256, eps, ratio=0.5).parts[0]  # DAWA's partition at eps1 = eps / 2
        assert p.parts[0].epsilon == ref.epsilon and p.parts[0].scale == ref.scale
        assert p.parts[0].count == ref.count
        assert p.epsilon_exact <= eps
        x = np.random.default_rng(1).poisson(4, (16, 16)).astype(np.int64)
        r = p.measure(x, Generator())
        assert r.epsilon_exact == p.epsilon_exact
        assert r.epsilon_parts["partition"] == p.parts[0].epsilon
        assert r.histogram.shape == (16, 16)


@pytest.mark.parametrize("seed", range(5))
def test_merged_graph_sensitivity_brute_force(seed):
    """Every grid edge moves the transformed bucket counts by at most the stretch used."""
    k = 4
    pol = grid.grid_policy(k, k)
    lo, hi = grid.grid_edges(pol)
    rng = np.random.default_rng(seed)
    buckets = np.unique(rng.integers(0, 5, k * k), return_inverse=True)[1].astype(np.int64)
    nb = int(buckets.max()) + 1
    a, b = buckets[lo], buckets[hi]
    keep = a != b
    key = np.unique(np.minimum(a[keep], b[keep]) * nb + np.maximum(a[keep], b[keep]))
    emb = spanning_tree_of_edges(nb, key // nb, key % nb)
    worst = 0
    base = np.full(nb, 5, np.int64)
    for u, v in zip(lo.tolist(), hi.tolist()):
        for s, t in ((u, v), (v, u)):
            c2 = base.copy()
            c2[buckets[s]] -= 1
            c2[buckets[t]] += 1
            worst = max(worst, int(np.abs(transform(c2, emb) - transform(base, emb)).sum()))
    assert worst <= emb.stretch
    # the release uses exactly this stretch (Laplace when the transformed variance is larger)
    gen = audit.RecordingGenerator()
    _, how, _, stretch = H.bucket_release(np.ones(k * k, np.int64), buckets, nb, lo, hi, 1, gen)
    assert stretch == emb.stretch and how in ("transformed", "laplace", "none")


def test_grid_dawa_transformed_refuses_dp_policy():
    from blowfish_privacy import Domain, Ordinal, Policy, secrets

    pol = Policy(Domain([Ordinal("row", 0, 3), Ordinal("col", 0, 3)]), secrets.FullDomain())
    with pytest.raises(ValueError, match="complete graph"):
        H.plan_grid_dawa_transformed(pol, 1.0)


def test_hilbert_runs_tile_the_rectangles():
    k = 8
    pos = np.empty(k * k, np.int64)
    pos[H.hilbert_order(k)] = np.arange(k * k)
    rects = np.array([(a, b, c, d) for a in range(0, k, 3) for b in range(a, k, 2)
                      for c in range(0, k, 3) for d in range(c, k, 2)], np.int64)
    lo, hi = H.hilbert_runs(rects, k)
    assert np.all(lo <= hi) and len(set(zip(lo.tolist(), hi.tolist()))) == lo.size
    runs = list(zip(lo.tolist(), hi.tolist()))
    for a, b, c, d in rects.tolist():
        cells = set(pos.reshape(k, k)[a:b + 1, c:d + 1].ravel().tolist())
        # the maximal runs inside the rectangle are among the returned runs and cover it exactly
        mine = [(x, y) for x, y in runs if set(range(x, y + 1)) <= cells
                and (x - 1) not in cells and (y + 1) not in cells]
        assert sorted(t for x, y in mine for t in range(x, y + 1)) == sorted(cells)
    with pytest.raises(ValueError, match="rectangles"):
        H.hilbert_runs(np.array([[0, 8, 0, 0]]), k)


def test_dawa_hilbert_with_a_rectangle_workload():
    k = 8
    rects = np.array([[0, 3, 0, 3], [2, 7, 1, 5], [0, 7, 0, 7]], np.int64)
    p = DH.plan_dawa_hilbert((k, k), 1.0, workload=rects)
    assert p.options["workload_rectangles"] == 3
    assert p.parts[0] == mechanisms.plan_dawa(k * k, 1.0).parts[0]  # DAWA's partition, unchanged
    x = np.arange(k * k, dtype=np.int64).reshape(k, k) % 5
    r = p.measure(x, Generator())
    assert r.histogram.shape == (k, k) and r.epsilon_exact <= 1.0


def _bucket_stage(buckets):
    def run(hist, policy, epsilon, gen):
        lo, hi = grid.grid_edges(policy)
        nb = int(buckets.max()) + 1
        noisy, how, err, stretch = H.bucket_release(np.asarray(hist).ravel(), buckets, nb, lo, hi, epsilon, gen)
        return {"counts": noisy, "how": how, "stretch": stretch}
    return run


@pytest.mark.parametrize("buckets", [
    [0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3],   # quadrants (Hilbert-aligned blocks)
    [0, 1, 1, 1, 0, 2, 2, 1, 0, 2, 2, 1, 3, 3, 3, 3],   # irregular regions
    pytest.param(list(range(16)), marks=pytest.mark.slow),  # every cell its own bucket: the grid itself
])
@pytest.mark.slow
def test_bucket_counts_pass_the_exact_audit_under_the_grid(buckets):
    """The second stage for a fixed (public) bucketing is (eps, grid)-Blowfish: exact audit, every neighbour pair."""
    rep = audit.exact(_bucket_stage(np.array(buckets, np.int64)), grid.grid_policy(4, 4), epsilon=1.0, n=2)
    assert rep.ok, str(rep)


@pytest.mark.slow
def test_bucket_audit_catches_a_doubled_epsilon():
    stage = _bucket_stage(np.array([0, 1, 1, 1, 0, 2, 2, 1, 0, 2, 2, 1, 3, 3, 3, 3], np.int64))

    def broken(hist, policy, epsilon, gen):
        return stage(hist, policy, 2 * epsilon, gen)

    assert not audit.exact(broken, grid.grid_policy(4, 4), epsilon=1.0, n=2).ok
