"""The DP quadtree with Cormode et al.'s geometric budget (baselines.quadtree.plan_quadtree): exact audits on tiny
domains, the budget split, the least-squares estimate against a dense weighted least squares, regression."""

import importlib
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from blowfish_privacy import Domain, Generator, Ordinal, Policy, audit, secrets
from blowfish_privacy.mechanisms.grids import grid

B2 = importlib.import_module("blowfish_privacy.baselines.quadtree")  # the package's quadtree is the function


def _pol2(r=2, c=2):
    return Policy(Domain([Ordinal("row", 0, r - 1), Ordinal("col", 0, c - 1)]), secrets.FullDomain())


@pytest.mark.parametrize("shape,budget", [((2, 2), "geometric"), ((2, 3), "geometric"), ((2, 2), "uniform")])
def test_exact_audit(shape, budget):
    rep = audit.exact(B2.plan_quadtree, _pol2(*shape), epsilon=1.0, n=2, budget=budget)
    assert rep.ok, str(rep)


def plan_quadtree_half_noise(policy, epsilon, **options):
    """A broken quadtree (noise for 2 epsilon): the audit must catch it."""
    return B2.plan_quadtree(policy, 2 * epsilon, **options)


def test_audit_catches_an_undercalibrated_quadtree():
    assert not audit.exact(plan_quadtree_half_noise, _pol2(2, 3), epsilon=1.0, n=2).ok


@pytest.mark.parametrize("h", [1, 2, 5, 7, 12])
def test_geometric_shares(h):
    s = B2.quadtree_shares(h)
    assert len(s) == h and all(isinstance(x, Fraction) and x > 0 for x in s)
    assert sum(s) <= 1 and sum(s) > 1 - Fraction(h, 10 ** 9)
    for a, b in zip(s, s[1:]):  # every level gets 2^(1/3) times its parent's share (Cormode et al. Sec 4.2)
        assert float(b) / float(a) == pytest.approx(2 ** (1 / 3), rel=1e-6)
    u = B2.quadtree_shares(h, "uniform")
    assert len(set(u)) == 1 and sum(u) <= 1


@pytest.mark.parametrize("eps", [0.1, 1.0, Fraction(1, 3)])
def test_budget_sums_to_at_most_epsilon(eps):
    p = B2.plan_quadtree((128, 128), eps)
    assert p.epsilon_exact <= Fraction(eps)
    assert sum(pt.epsilon for pt in p.parts) == p.epsilon_exact
    assert [pt.count for pt in p.parts] == [4 ** d for d in range(1, 8)]
    assert all(pt.sensitivity == 2 for pt in p.parts)
    # the leaves get the largest share
    assert p.parts[-1].epsilon > p.parts[0].epsilon


def test_level_sensitivity_is_exactly_two_by_brute_force():
    # each level's nodes partition the 4 x 4 domain: max over value pairs of ||A_d (e_u - e_v)||_1
    k, h = 4, 2
    for d in range(1, h + 1):
        w = k >> d
        node = lambda i: (i // k // w) * (1 << d) + (i % k) // w  # noqa: E731
        worst = max((node(u) != node(v)) * 2 for u, v in itertools.product(range(k * k), repeat=2))
        assert worst == 2


class _Fixed(audit.RecordingGenerator):
    """Known offsets instead of noise, to check the estimator."""

    def __init__(self, seed):
        super().__init__()
        self.rng = np.random.default_rng(seed)
        self.offsets = []

    def add_discrete_laplace(self, values, scale):
        arr = np.asarray(values, np.int64)
        off = self.rng.integers(-5, 6, arr.shape)
        self.offsets.append(off)
        return arr + off


def test_estimate_is_weighted_least_squares():
    k, h = 4, 2
    p = B2.plan_quadtree((k, k), 0.7)
    var = p.expected_error["level_variances"]
    hist = np.arange(16, dtype=np.int64).reshape(k, k) % 5
    gen = _Fixed(1)
    r = p.measure(hist, gen)
    rows, obs, wts = [], [], []
    rows.append(np.ones(k * k)); obs.append(hist.sum()); wts.append(1e6)  # the exact root (n public)
    for d in range(1, h + 1):
        w = k >> d
        counts = hist.reshape(1 << d, w, 1 << d, w).sum(axis=(1, 3)) + gen.offsets[d - 1]
        for a in range(1 << d):
            for b in range(1 << d):
                m = np.zeros((k, k)); m[a * w:(a + 1) * w, b * w:(b + 1) * w] = 1
                rows.append(m.ravel()); obs.append(counts[a, b]); wts.append(1 / math.sqrt(var[d - 1]))
    A, y, W = np.array(rows), np.array(obs, float), np.array(wts)
    sol = np.linalg.lstsq(A * W[:, None], y * W, rcond=None)[0]
    np.testing.assert_allclose(r.histogram.ravel(), sol, atol=1e-4)
    assert r.histogram.sum() == pytest.approx(hist.sum())


def test_uniform_budget_matches_the_equal_budget_quadtree():
    # with equal shares our tree is the grid module's quadtree (one scale, Hay et al.'s least squares)
    k = 8
    hist = np.random.default_rng(2).integers(0, 7, (k, k)).astype(np.int64)
    ours = B2.plan_quadtree((k, k), 1.0, budget="uniform")
    theirs = grid.plan_grid_hierarchical(_pol2(k, k), 1.0, fanout=2, levels="quadtree")
    assert ours.parts[0].scale == theirs.parts[0].scale  # 2 h / epsilon per level, h = 3
    r = ours.measure(hist, audit.RecordingGenerator())  # no noise: exact
    np.testing.assert_allclose(r.histogram, hist, atol=1e-9)


def test_padding_and_regression():
    hist = np.arange(6 * 5, dtype=np.int64).reshape(6, 5) % 4
    r1 = B2.quadtree(hist, 1.0, Generator(seed=5))
    r2 = B2.plan_quadtree((6, 5), 1.0).measure(hist, Generator(seed=5))
    assert r1.histogram.shape == (6, 5)
    np.testing.assert_array_equal(r1.histogram, r2.histogram)
    assert r1.params["height"] == 3 and r1.epsilon <= 1.0


def test_refusals():
    with pytest.raises(ValueError, match="budget"):
        B2.plan_quadtree((4, 4), 1.0, budget="linear")
    with pytest.raises(ValueError, match="height"):
        B2.quadtree_shares(0)
    with pytest.raises((ValueError, TypeError), match="epsilon"):
        B2.plan_quadtree((4, 4), -1.0)
