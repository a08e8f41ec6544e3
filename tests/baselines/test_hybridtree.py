"""HybridTree (Cormode et al., ICDE 2012): budget, tiling, the least-squares pass against lstsq, private medians."""

from fractions import Fraction

import numpy as np
import pytest

from blowfish_privacy import Generator, audit
from blowfish_privacy.baselines.hybridtree import geometric_shares, hybridtree, plan_hybridtree


def test_geometric_shares_sum_to_one_and_grow():
    for H in (1, 2, 7, 40):
        s = geometric_shares(H)
        assert sum(s) == 1 and all(b > a for a, b in zip(s, s[1:]))
        if H > 1:
            assert float(s[1] / s[0]) == pytest.approx(2 ** (1 / 3), rel=1e-5)


@pytest.mark.parametrize("kw", [dict(), dict(height=5), dict(kd_levels=0), dict(kd_levels=3, median_share=0.3)])
def test_budget_parts_sum_to_at_most_epsilon(kw):
    for eps in (0.1, Fraction(2, 3), 1.0):
        plan = plan_hybridtree((20, 13), eps, **kw)
        assert plan.epsilon_exact == sum(p.epsilon for p in plan.parts) <= Fraction(eps)
        hist = np.random.default_rng(1).poisson(3.0, (20, 13))
        r = plan.measure(hist, Generator(seed=2))
        # the levels drawn at the measurement spend at most their planned part
        levels = sum(r.params["level_epsilons"], Fraction(0))
        counts = sum((p.epsilon for p in plan.parts if p.name.startswith("level")), Fraction(0))
        assert levels <= counts
        medians = [p for p in plan.parts if p.name.startswith("median")]
        assert len(medians) == plan.options["kd_levels"]
        assert all(p.scale == 4 / p.epsilon for p in medians)


@pytest.mark.parametrize("shape,kw", [((16, 16), {}), ((13, 21), dict(height=4)), ((1, 9), {}), ((128, 128), {}),
                                      ((9, 9), dict(kd_levels=5))])
def test_leaves_tile_the_grid_and_levels_are_disjoint(shape, kw):
    rng = np.random.default_rng(sum(shape))
    hist = rng.poisson(rng.gamma(0.3, 30.0, shape))
    r = hybridtree(hist, 1.0, Generator(seed=3), **kw)
    cover = np.zeros(shape, dtype=np.int64)
    for r0, r1, c0, c1 in r.params["leaves"]:
        assert r0 < r1 and c0 < c1
        cover[r0:r1, c0:c1] += 1
    assert (cover == 1).all()
    assert r.histogram.sum() == pytest.approx(hist.sum())  # the root is the public n


class Offsets(audit.RecordingGenerator):
    """Deterministic 'noise': fixed pseudo-random offsets, recorded with the values they were added to."""

    def __init__(self):
        super().__init__()
        self.rng = np.random.default_rng(0)
        self.calls = []

    def add_discrete_laplace(self, values, scale):
        arr = np.asarray(values, np.int64)
        off = self.rng.integers(-3, 4, arr.size)
        self.calls.append((arr.copy(), off, scale))
        return arr + off


def test_least_squares_pass_equals_weighted_lstsq_on_the_whole_tree():
    shape = (4, 6)
    hist = np.random.default_rng(4).integers(0, 5, shape)
    plan = plan_hybridtree(shape, 1.0, kd_levels=1, height=3)
    gen = Offsets()
    r = plan.measure(hist, gen)
    # rebuild the observation system from what was drawn: the tree's levels (after the median) and their values
    from blowfish_privacy.noise import discrete_laplace_variance

    leaves = r.params["leaves"]
    cells = [(i, j) for i in range(shape[0]) for j in range(shape[1])]
    count_calls = gen.calls[plan.options["kd_levels"]:]  # one draw per level after the median's
    assert len(count_calls) == 3
    rows, obs, weights = [], [], []
    rects_by_level = _levels_from_the_median(shape, gen)  # rebuilt independently; counts checked below
    for (truth, off, scale), rects in zip(count_calls, rects_by_level):
        var = discrete_laplace_variance(scale)
        assert len(rects) == truth.size
        for (r0, r1, c0, c1), t, o in zip(rects, truth, off):
            assert hist[r0:r1, c0:c1].sum() == t
            a = np.zeros(len(cells))
            for k, (i, j) in enumerate(cells):
                a[k] = 1.0 if r0 <= i < r1 and c0 <= j < c1 else 0.0
            rows.append(a), obs.append(t + o), weights.append(1 / np.sqrt(var))
    A = np.array(rows) * np.array(weights)[:, None]
    b = np.array(obs) * np.array(weights)
    # the root constraint sum x = n, by elimination with a large weight
    big = 1e6
    A = np.vstack([A, big * np.ones(len(cells))])
    b = np.append(b, big * hist.sum())
    x = np.linalg.lstsq(A, b, rcond=None)[0].reshape(shape)
    # compare leaf totals (the estimate is uniform within a leaf)
    for r0, r1, c0, c1 in leaves:
        assert r.histogram[r0:r1, c0:c1].sum() == pytest.approx(x[r0:r1, c0:c1].sum(), abs=1e-5)


def _levels_from_the_median(shape, gen):
    """The node rectangles of every level: the root's kd cut (from the recorded median draw), then quadtree halving."""
    # kd_levels = 1: the 4 x 6 root is cut along its longer side (columns) at the first largest noisy score
    R, C = shape
    truth, off, _ = gen.calls[0]
    k = int(np.argmax(truth + off)) + 1
    level1 = [(0, R, 0, k), (0, R, k, C)]

    def order(children_of):  # the implementation lists children quadrant by quadrant, then by parent
        out = []
        for top in (True, False):
            for left in (True, False):
                for p in children_of:
                    r0, r1, c0, c1 = p
                    er, ec = r1 - r0, c1 - c0
                    if er == 1 and ec == 1:
                        continue
                    if not top and er == 1 or not left and ec == 1:
                        continue
                    hr, hc = (er + 1) // 2, (ec + 1) // 2
                    a, b = (r0, r0 + hr if er > 1 else r1) if top else (r0 + hr, r1)
                    c, d = (c0, c0 + hc if ec > 1 else c1) if left else (c0 + hc, c1)
                    out.append((a, b, c, d))
        return out

    level2 = order(level1)
    level3 = order(level2)
    return [level1, level2, level3]


def test_noise_free_limit_is_exact():
    x = np.random.default_rng(2).integers(0, 9, (7, 5))
    for kw in ({}, dict(kd_levels=0), dict(kd_levels=3)):
        r = hybridtree(x, 1e9, Generator(seed=3), height=None, **kw)
        np.testing.assert_allclose(r.histogram, x, atol=1e-6)


def test_private_median_with_little_noise_is_the_median():
    hist = np.zeros((1, 10), dtype=np.int64)
    hist[0, [0, 1, 2, 7, 9]] = [5, 5, 5, 10, 5]   # 15 records before column 3, 15 from column 7 on
    r = hybridtree(hist, 1e9, Generator(seed=1), kd_levels=1, median_share=0.5, height=1)
    leaves = sorted(map(tuple, r.params["leaves"].tolist()))
    assert leaves == [(0, 1, 0, 3), (0, 1, 3, 10)]  # |L - R| = 0 first at the cut before column 3


def test_fast_on_128x128_and_seeded_runs_repeat():
    import time

    hist = np.random.default_rng(0).poisson(np.random.default_rng(1).gamma(0.2, 50.0, (128, 128)))
    plan = plan_hybridtree((128, 128), 0.1)
    t = time.perf_counter()
    a = plan.measure(hist, Generator(seed=9))
    assert time.perf_counter() - t < 1.0
    np.testing.assert_array_equal(a.histogram, plan.measure(hist, Generator(seed=9)).histogram)


def test_validation_names_the_parameter():
    with pytest.raises(ValueError, match="kd_levels"):
        plan_hybridtree((4, 4), 1.0, kd_levels=-1)
    with pytest.raises(ValueError, match="median_share"):
        plan_hybridtree((4, 4), 1.0, median_share=1)
    with pytest.raises(TypeError, match="median_share"):
        plan_hybridtree((4, 4), 1.0, median_share="x")
    with pytest.raises(ValueError, match="height"):
        plan_hybridtree((4, 4), 1.0, height=0)
    with pytest.raises(ValueError, match="epsilon"):
        plan_hybridtree((4, 4), -1.0)


def test_kd_levels_beyond_the_cuts_a_domain_allows_are_capped_and_plans_stay_fast():
    # a kd level cuts a node's rows + cols by at least 1: at most rows + cols - 2 of them can cut anything
    import time

    from blowfish_privacy.noise import Generator

    t = time.perf_counter()
    plan = plan_hybridtree((8, 8), 1.0, kd_levels=10**9)
    assert time.perf_counter() - t < 5
    assert plan.options["kd_levels"] == 14
    assert plan_hybridtree((1, 1), 1.0).options["kd_levels"] == 0
    r = plan_hybridtree((8, 8), 1.0, kd_levels=100).measure(np.ones((8, 8), dtype=np.int64), Generator(seed=1))
    assert r.histogram.shape == (8, 8)


def test_levels_whose_noise_the_sampler_cannot_draw_are_refused_by_the_plan_naming_the_option():
    with pytest.raises(ValueError, match="height"):
        plan_hybridtree((256, 256), 1e-3, height=200)
    with pytest.raises(ValueError, match="kd_levels"):
        plan_hybridtree((256, 256), 1e-3, kd_levels=300)
