"""Ordered, ordered-hierarchical, hierarchical and identity mechanisms."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blowfish_privacy import Domain, Generator, Policy, _tree, mechanisms, secrets
from blowfish_privacy.mechanisms.cumulative import _oh
from blowfish_privacy.noise import discrete_laplace_variance


def line_policy(N, theta=None):
    dom = Domain.ordinal("x", 0, N - 1)
    sec = secrets.Line() if theta is None else secrets.DistanceThreshold(theta)
    return Policy(dom, sec)


def oh_released_nodes(N, block, f):
    """Independent construction of the released OH nodes as bin intervals.

    S nodes: prefixes [0, end of block b) for b = 1..k-1.  Tree nodes: in
    every block, the nodes of a fan-out-f tree of height h below the root,
    each covering an interval of (padded) bins; only those overlapping real
    bins are released.
    """
    k = -(-N // block)
    h = 0
    while f**h < block:
        h += 1
    nodes = []
    for b in range(1, k):
        nodes.append(("S", 0, min(b * block, N)))
    for b in range(k):
        start, end = b * block, min((b + 1) * block, N)
        for level in range(1, h + 1):
            w = f ** (h - level)
            for j in range(f**level):
                lo = start + j * w
                if lo < end:
                    nodes.append(("H", lo, min(lo + w, end)))
    return nodes, h


@pytest.mark.parametrize("N", [1, 2, 5, 9, 12])
@pytest.mark.parametrize("theta", [1, 2, 3, 4, 7, 11, 12])
@pytest.mark.parametrize("f", [2, 3])
def test_oh_privacy_loss_of_every_neighbour_pair(N, theta, f):
    """Thm 7.2 checked, not assumed: over every neighbour pair (x, y) with
    |x - y| <= theta, at most one S node and at most 2h tree nodes change,
    and the exact privacy loss sum |delta| / scale is within epsilon."""
    pol = line_policy(N, theta)
    hist = np.arange(N) % 3
    eps = 0.7
    r = mechanisms.ordered_hierarchical(hist, pol, eps, Generator(seed=1), fanout=f)
    block, h = r.params.get("block", 1), r.params.get("height", 0)
    theta_b = pol.sensitivity("cumulative")
    assert r.epsilon <= eps
    if N == 1 or theta_b == 0:
        return
    nodes, h2 = oh_released_nodes(N, block, f)
    assert h2 == h
    scale = {k: float(v) for k, v in r.scales.items()}
    worst = 0.0
    for x in range(N):
        for y in range(N):
            if x == y or abs(x - y) > theta_b:
                continue
            changed = [kind for kind, lo, hi in nodes if (lo <= x < hi) != (lo <= y < hi)]
            n_s, n_h = changed.count("S"), changed.count("H")
            assert n_s <= 1 and n_h <= 2 * h
            loss = (n_s / scale["S"] if n_s else 0.0) + (n_h / scale["H"] if n_h else 0.0)
            worst = max(worst, loss)
    assert worst <= r.epsilon + 1e-12


def test_paper_budget_for_first_tree_would_break_privacy():
    """000 Sec 7.2 gives H_1 (and s_1) noise 2h/(eps_S + eps_H); a pair crossing
    the first block boundary then loses more than epsilon."""
    N, theta, f = 32, 4, 2
    nodes, h = oh_released_nodes(N, theta, f)
    eps_s, eps_h = 0.2, 0.8  # violation whenever eps_H > eps (h - 1) / h
    x, y = 3, 4  # last bin of block 1, first bin of block 2
    loss = 0.0
    for kind, lo, hi in nodes:
        if (lo <= x < hi) != (lo <= y < hi):
            first_tree = kind == "H" and hi <= theta
            if kind == "S" and hi == theta:  # s_1, the root of H_1 in the paper
                loss += (eps_s + eps_h) / (2 * h)
            elif first_tree:
                loss += (eps_s + eps_h) / (2 * h)
            elif kind == "H":
                loss += eps_h / (2 * h)
            else:
                loss += eps_s
    assert loss > eps_s + eps_h


def test_oh_reduces_to_ordered_at_theta_1():
    hist = np.random.default_rng(0).integers(0, 20, size=60)
    pol = line_policy(60)
    a = mechanisms.ordered_hierarchical(hist, pol, 0.5, Generator(seed=9), keep_noisy=True)
    b = mechanisms.ordered(hist, pol, 0.5, Generator(seed=9), keep_noisy=True)
    assert a.params["height"] == 0 and a.epsilon_exact == b.epsilon_exact
    assert np.array_equal(a.noisy_cumulative, b.noisy_cumulative)
    np.testing.assert_allclose(a.cumulative, b.cumulative, atol=1e-9)


@pytest.mark.parametrize("theta", [59, 60, 10**6])
def test_oh_reduces_to_hierarchical_at_theta_full(theta):
    hist = np.random.default_rng(1).integers(0, 20, size=60)
    pol = line_policy(60, theta)
    a = mechanisms.ordered_hierarchical(hist, pol, 0.5, Generator(seed=9), fanout=4, keep_noisy=True)
    b = mechanisms.hierarchical(hist, 0.5, Generator(seed=9), fanout=4, keep_noisy=True)
    assert a.params["blocks"] == 1
    assert a.scales == b.scales
    np.testing.assert_allclose(a.noisy_cumulative, b.noisy_cumulative)
    np.testing.assert_allclose(a.cumulative, b.cumulative, atol=1e-9)


@pytest.mark.parametrize(
    "make",
    [
        lambda h, g: mechanisms.ordered(h, line_policy(h.size, 3), 0.8, g, keep_noisy=True),
        lambda h, g: mechanisms.ordered_hierarchical(h, line_policy(h.size, 6), 0.8, g, fanout=3, keep_noisy=True),
        lambda h, g: mechanisms.ordered_hierarchical(h, line_policy(h.size, 6), 0.8, g, fanout=3, split=0.3, keep_noisy=True),
        lambda h, g: mechanisms.hierarchical(h, 0.8, g, fanout=4, keep_noisy=True),
        lambda h, g: mechanisms.identity(h, 0.8, g, keep_noisy=True),
    ],
    ids=["ordered", "oh", "oh-split", "hierarchical", "identity"],
)
def test_empirical_range_error_matches_analytic_and_inference_helps(make):
    rng = np.random.default_rng(5)
    N = 40
    hist = rng.integers(0, 30, size=N)
    true_cum = np.cumsum(hist)
    lo, hi = np.triu_indices(N)
    truth = true_cum[hi] - np.where(lo > 0, true_cum[np.maximum(lo - 1, 0)], 0)
    pre, post = [], []
    runs = 300
    gen = Generator(seed=77)
    for _ in range(runs):
        r = make(hist, gen)
        pre.append(np.mean((r.range_query(lo, hi, inferred=False) - truth) ** 2))
        post.append(np.mean((r.range_query(lo, hi) - truth) ** 2))
    expected = r.expected_range_error()
    pre = np.array(pre)
    # mean of `runs` independent per-run averages: 5 standard errors
    se = pre.std(ddof=1) / math.sqrt(runs)
    assert abs(pre.mean() - expected) < 5 * se + 1e-9
    assert np.mean(post) <= pre.mean()


@settings(max_examples=60, deadline=None)
@given(
    hist=st.lists(st.integers(0, 50), min_size=1, max_size=80),
    theta=st.integers(1, 100),
    f=st.integers(2, 5),
    eps=st.floats(0.01, 5),
    seed=st.integers(0, 2**32),
)
def test_release_invariants(hist, theta, f, eps, seed):
    hist = np.array(hist)
    N = hist.size
    r = mechanisms.ordered_hierarchical(hist, line_policy(N, theta), eps, Generator(seed=seed), fanout=f)
    c = r.cumulative
    n = hist.sum()
    assert c.shape == (N,)
    assert np.all(np.diff(c) >= -1e-9)
    assert c.min() >= -1e-9 and c.max() <= n + 1e-9 and c[-1] == n
    assert np.all(r.histogram >= -1e-9)
    assert r.epsilon_exact <= Fraction(eps)
    assert abs(r.range_query(0, N - 1) - n) < 1e-6


def test_range_query_and_quantile_use_domain_values():
    dom = Domain.ordinal("age", 20, 29)
    hist = np.array([0, 0, 5, 0, 0, 5, 0, 0, 0, 0])
    r = mechanisms.ordered(hist, Policy(dom, secrets.Line()), 1e6, Generator(seed=1))
    # epsilon huge: noise is essentially zero
    assert r.range_query(22, 25) == pytest.approx(10, abs=1e-6)
    np.testing.assert_allclose(r.range_query([20, 22], [21, 29]), [0, 10], atol=1e-6)
    assert r.quantile(0.5) == 22 and r.quantile(1.0) == 25
    with pytest.raises(ValueError, match="lo"):
        r.range_query(19, 25)
    with pytest.raises(ValueError, match=r"^range \(25, 22\) is reversed: lo must be <= hi$"):
        r.range_query(25, 22)
    with pytest.raises(ValueError, match=r"^range \(27, 23\) is reversed: lo must be <= hi \(1 of 3 ranges"):
        r.range_query([20, 27, 21], [29, 23, 22])
    with pytest.raises(ValueError, match="p must"):
        r.quantile(1.5)


def test_dp_baselines_spend_at_most_epsilon_and_release_consistent_counts():
    hist = np.random.default_rng(2).integers(0, 10, size=100)
    for r in (mechanisms.hierarchical(hist, 0.3, Generator(seed=3)),
              mechanisms.cumulative.cumulative.identity_projected(hist, 0.3, Generator(seed=3))):
        assert r.epsilon <= 0.3
        assert r.cumulative[-1] == hist.sum()
        assert np.all(r.histogram >= -1e-9)
    r = mechanisms.identity(hist, 0.3, Generator(seed=3))  # plain Laplace: ends at n, no clipping
    assert r.epsilon <= 0.3 and r.cumulative[-1] == hist.sum()


def test_identity_exact_range_error_after_total_step():
    # the plan's exact all-range MSE after the total-n step against the empirical mean over releases
    N, eps = 12, 0.7
    plan = mechanisms.plan_identity(N, eps)
    var = discrete_laplace_variance(plan.parts[0].scale)
    lo, hi = np.triu_indices(N)
    L = hi - lo + 1
    assert plan.expected_error["range_query_mse"] == pytest.approx(float(np.mean(var * L * (1 - L / N))), rel=1e-12)
    hist = np.arange(N, dtype=np.int64)
    true_cum = np.cumsum(hist)
    gen = Generator(seed=11)
    errs = []
    for _ in range(3000):
        c = plan.measure(hist, gen).cumulative
        est = c[hi] - np.where(lo > 0, c[np.maximum(lo - 1, 0)], 0)
        truth = true_cum[hi] - np.where(lo > 0, true_cum[np.maximum(lo - 1, 0)], 0)
        errs.append(np.mean((est - truth) ** 2))
    assert np.mean(errs) == pytest.approx(plan.expected_error["range_query_mse"], rel=0.05)
    assert plan.expected_error["range_query_mse"] < plan.expected_error["range_query_mse_before_inference"]


def test_bad_inputs():
    pol = line_policy(10)
    with pytest.raises(ValueError, match="non-negative") as err:
        mechanisms.ordered(np.array([1, -7] + [0] * 8), pol, 1.0)
    assert "-7" not in str(err.value) and "index" not in str(err.value)  # no count, no position
    with pytest.raises(ValueError, match=r"planned shape \(10,\), got shape \(9,\)"):
        mechanisms.ordered(np.ones(9, dtype=int), pol, 1.0)
    with pytest.raises(TypeError, match="integer"):
        mechanisms.ordered(np.ones(10), pol, 1.0)
    with pytest.raises(ValueError, match="fanout"):
        mechanisms.ordered_hierarchical(np.ones(10, dtype=int), pol, 1.0, fanout=1)
    with pytest.raises(ValueError, match="split"):
        mechanisms.ordered_hierarchical(np.ones(10, dtype=int), line_policy(10, 3), 1.0, split=1.5)
    with pytest.raises(ValueError, match="epsilon"):
        mechanisms.ordered(np.ones(10, dtype=int), pol, 0)
    dom2 = Domain([__import__("blowfish_privacy").Ordinal("a", 0, 1), __import__("blowfish_privacy").Ordinal("b", 0, 4)])
    with pytest.raises(ValueError, match="1-D"):
        mechanisms.ordered(np.ones(10, dtype=int), Policy(dom2, secrets.FullDomain()), 1.0)


@pytest.mark.parametrize("N,block,f", [(1, 1, 2), (37, 5, 2), (100, 100, 3), (1000, 77, 4), (4357, 100, 16), (50, 49, 2)])
def test_usage_sum_closed_form_matches_node_by_node(N, block, f):
    fo = _oh.Forest(N, block, f)
    for level in range(1, fo.h + 1):
        explicit = 0.0
        for length, count in ((fo.block, fo.k - 1), (fo.last, 1)):
            a = fo.usage(level, length).astype(float)
            explicit += count * float(np.sum(a * (N + 1 - a)))
        assert fo.usage_sum(level) == pytest.approx(explicit, rel=1e-12)


# -- the fused OH kernel (issue 13) against the level-by-level numpy path --------


@pytest.mark.parametrize("n,theta,f", [(1000, 100, 16), (1001, 7, 2), (12345, 100, 16), (5, 1, 16), (100, 100, 16),
                                       (999, 998, 3), (17, 3, 4), (2, 1, 2), (300, 299, 16),
                                       (257, 16, 16), (4099, 64, 2)])
def test_fused_oh_is_bit_identical_to_the_level_path(n, theta, f):
    from blowfish_privacy import Domain, Policy
    from blowfish_privacy import secrets as sec
    rng = np.random.default_rng(n + theta)
    for hist in (rng.poisson(3, n).astype(np.int64), np.zeros(n, dtype=np.int64),
                 rng.integers(0, 10**12, n).astype(np.int64)):
        pol = Policy(Domain.ordinal("x", 0, n - 1), sec.DistanceThreshold(theta))
        plan = mechanisms.plan_ordered_hierarchical(pol, 0.7, fanout=f)
        a = _oh.oh_run(plan, hist, Generator(seed=11))
        b = _oh.oh_run_levels(plan, hist, _oh_level_generator(plan, 11))
        np.testing.assert_array_equal(a.cumulative, b.cumulative)
        assert a.params == b.params


def _oh_level_generator(plan, seed):
    """A generator that gives the level path the noise the fused kernel draws
    from Generator(seed) (a Python replay of its streams), or that generator
    itself where the fused path is the level path (single-bin trees)."""
    from stream_replay import ReplayGenerator, key_of, oh_noise, ordered_noise

    o = plan.options
    fo = _oh.Forest(plan.aggregate_shape[0], o["block"], o["fanout"])
    part = {p.name: p for p in plan.parts}
    if fo.h == 0:  # the ordered mechanism's kernel on the S nodes
        return ReplayGenerator([ordered_noise(key_of(seed), fo.n_bins, part["S"].scale)] if "S" in part else [])
    assert o["block"] <= _oh.OH_STREAM_MAX_BLOCK
    ns, nh = oh_noise(key_of(seed), fo.n_bins, o["block"], o["fanout"], _oh._stream_group(o["block"]),
                      part["S"].scale if "S" in part else 1, part["H"].scale)
    return ReplayGenerator(([ns] if "S" in part else []) + [nh])


def test_fused_oh_hierarchical_matches_level_path():
    hist = np.random.default_rng(3).poisson(2, 5000).astype(np.int64)
    plan = mechanisms.plan_hierarchical(hist.size, 1.0, fanout=4)
    np.testing.assert_array_equal(_oh.oh_run(plan, hist, Generator(seed=2)).cumulative,
                                  _oh.oh_run_levels(plan, hist, _oh_level_generator(plan, 2)).cumulative)


@pytest.mark.parametrize("n,theta", [(3000, 10), (70000, 100), (5000, 4999)])
def test_fused_oh_does_not_depend_on_the_threads(n, theta):
    hist = np.random.default_rng(n).poisson(2, n).astype(np.int64)
    pol = Policy(Domain.ordinal("x", 0, n - 1), secrets.DistanceThreshold(theta))
    want = mechanisms.ordered_hierarchical(hist, pol, 0.9, Generator(5, threads=1)).cumulative
    for threads in (2, 3, 7):
        got = mechanisms.ordered_hierarchical(hist, pol, 0.9, Generator(5, threads=threads)).cumulative
        np.testing.assert_array_equal(got, want)


def test_wide_blocks_draw_their_noise_ahead():
    # a block wider than OH_STREAM_MAX_BLOCK: the noise vector drawn first
    # (the order of the level path), as before
    n = _oh.OH_STREAM_MAX_BLOCK + 5
    hist = np.random.default_rng(1).poisson(1, n).astype(np.int64)
    plan = mechanisms.plan_hierarchical(n, 1.0, fanout=16)
    np.testing.assert_array_equal(_oh.oh_run(plan, hist, Generator(seed=4, threads=2)).cumulative,
                                  _oh.oh_run_levels(plan, hist, Generator(seed=4)).cumulative)


@pytest.mark.parametrize("n_bins", [1, 2, 1000, (1 << 20) + 10])
def test_ordered_fused_path_has_the_bits_of_the_numpy_path(n_bins):
    # the fused path (noise, one C pass, chunked regression on threads) and
    # the numpy path kept for keep_noisy draw the same noise; the noisy
    # counts are integers, so every pooled sum is exact and the bits agree
    # across chunk boundaries too
    rng = np.random.default_rng(n_bins)
    hist = rng.poisson(2.0, size=n_bins).astype(np.int64)
    pol = Policy(Domain.ordinal("x", 0, n_bins - 1), secrets.DistanceThreshold(3))
    from stream_replay import ReplayGenerator, key_of, ordered_noise

    plan = mechanisms.plan_ordered(pol, 0.5, keep_noisy=True)
    replay = ReplayGenerator([ordered_noise(key_of(7), n_bins, plan.parts[0].scale)] if n_bins > 1 else [])
    numpy_path = plan.measure(hist, replay)
    for threads in (1, 2, 3, 7):
        fused = mechanisms.ordered(hist, pol, 0.5, Generator(7, threads=threads))
        np.testing.assert_array_equal(fused.cumulative, numpy_path.cumulative)
    assert fused.n == numpy_path.n == int(hist.sum())
    assert fused.noisy_cumulative is None


def test_ordered_cumulative_binding_checks():
    h = np.array([1, 2, 3], dtype=np.int64)
    with pytest.raises(ValueError, match="noise"):
        _tree.ordered_cumulative(h, np.zeros(3, np.int64))
    with pytest.raises(ValueError, match="non-negative"):
        _tree.ordered_cumulative(-h, np.zeros(2, np.int64))
    with pytest.raises(OverflowError, match="noisy cumulative count"):
        _tree.ordered_cumulative(h, np.array([2**63 - 1, 0], np.int64))
    cum, n = _tree.ordered_cumulative(np.array([4], np.int64), np.zeros(0, np.int64))
    assert n == 4 and cum.tolist() == [4.0]
    cum, n = _tree.ordered_cumulative(h, np.array([5, -9], np.int64), threads=3)
    assert n == 6 and cum.tolist() == [0.0, 0.0, 6.0]  # [6, -6] -> isotonic in [0, 6]
