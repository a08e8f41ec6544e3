"""DPCube (Xiao, Xiong, Fan, Goryczka, Li, TDP 2014): budget, partition tiling, a slow kd-tree oracle."""

from fractions import Fraction

import numpy as np
import pytest

from blowfish_privacy import Generator, audit
from blowfish_privacy.baselines.dpcube import dpcube, kd_partition, plan_dpcube
from blowfish_privacy.noise import discrete_laplace_variance


def slow_kd(values, rb, cb, penalty):
    """Independent recursive kd-tree: SSE measured directly on the counts spread over the values."""
    dens = np.repeat(np.repeat(values / (np.diff(rb)[:, None] * np.diff(cb)[None, :]), np.diff(rb), 0),
                     np.diff(cb), 1)

    def sse(r0, r1, c0, c1):
        block = dens[rb[r0]:rb[r1], cb[c0]:cb[c1]]
        return float(((block - block.mean()) ** 2).sum())

    out = []

    def go(r0, r1, c0, c1):
        rows = (rb[r1] - rb[r0] > cb[c1] - cb[c0] and r1 - r0 > 1) or c1 - c0 == 1
        if (r1 - r0 if rows else c1 - c0) == 1:
            out.append((r0, r1, c0, c1))
            return
        best, kbest = None, None
        for k in range((r0 if rows else c0) + 1, r1 if rows else c1):
            cost = sse(r0, k, c0, c1) + sse(k, r1, c0, c1) if rows else sse(r0, r1, c0, k) + sse(r0, r1, k, c1)
            if best is None or cost < best:
                best, kbest = cost, k
        if sse(r0, r1, c0, c1) - best > penalty:
            if rows:
                go(r0, kbest, c0, c1), go(kbest, r1, c0, c1)
            else:
                go(r0, r1, c0, kbest), go(r0, r1, kbest, c1)
        else:
            out.append((r0, r1, c0, c1))

    go(0, values.shape[0], 0, values.shape[1])
    return sorted(out)


@pytest.mark.parametrize("seed", range(6))
def test_kd_partition_matches_the_slow_recursive_oracle(seed):
    rng = np.random.default_rng(seed)
    cr, cc = rng.integers(1, 9, 2)
    rb = np.concatenate([[0], np.cumsum(rng.integers(1, 4, cr))])
    cb = np.concatenate([[0], np.cumsum(rng.integers(1, 4, cc))])
    values = rng.gamma(0.5, 20.0, (cr, cc)) * (rng.random((cr, cc)) < 0.7) + rng.normal(0, 3, (cr, cc))
    pen = float(rng.choice([0.0, 5.0, 50.0, 500.0]))
    got = sorted(map(tuple, kd_partition(values, rb, cb, pen).tolist()))
    assert got == slow_kd(values, rb, cb, pen)


def _coverage(shape, partition):
    cover = np.zeros(shape, dtype=np.int64)
    for r0, r1, c0, c1 in partition:
        assert r0 < r1 and c0 < c1
        cover[r0:r1, c0:c1] += 1
    return cover


@pytest.mark.parametrize("shape,side", [((16, 16), 1), ((13, 21), 1), ((30, 25), 4), ((1, 9), 1), ((128, 128), 11)])
def test_released_partition_tiles_the_grid_exactly(shape, side):
    rng = np.random.default_rng(sum(shape))
    hist = rng.poisson(rng.gamma(0.3, 30.0, shape))
    r = dpcube(hist, 1.0, Generator(seed=3), cell_side=side)
    part = r.params["partition"]
    assert (_coverage(shape, part) == 1).all()
    assert int(((part[:, 1] - part[:, 0]) * (part[:, 3] - part[:, 2])).sum()) == shape[0] * shape[1]
    # leaves are unions of whole phase-1 cells
    assert all(x % side == 0 or x == shape[0] for x in part[:, :2].ravel())
    assert all(x % side == 0 or x == shape[1] for x in part[:, 2:].ravel())
    # uniform within each leaf
    for r0, r1, c0, c1 in part[:50]:
        block = r.histogram[r0:r1, c0:c1]
        assert np.allclose(block, block.flat[0])


def test_budget_split_sums_to_at_most_epsilon():
    for eps, alpha in [(0.1, Fraction(1, 2)), (1.0, 0.25), (Fraction(3, 7), Fraction(2, 3))]:
        plan = plan_dpcube((20, 30), eps, alpha=alpha)
        cells, parts = plan.parts
        assert plan.epsilon_exact == cells.epsilon + parts.epsilon <= Fraction(eps)
        assert cells.sensitivity == parts.sensitivity == 2
        a = Fraction(alpha).limit_denominator(10**6)
        assert cells.epsilon <= Fraction(eps) * a and parts.epsilon <= Fraction(eps) * (1 - a)
        assert cells.scale == 2 / cells.epsilon and parts.scale == 2 / parts.epsilon
        assert cells.count == 600
        r = plan.measure(np.ones((20, 30), dtype=np.int64), Generator(seed=1))
        assert r.epsilon_exact == plan.epsilon_exact and set(r.epsilon_parts) == {"cells", "partitions"}
    p = plan_dpcube((128, 128), 0.1)
    v = discrete_laplace_variance(p.parts[0].scale) + discrete_laplace_variance(p.parts[1].scale)
    assert p.expected_error["cell_count_variance"] + p.expected_error["partition_count_variance"] == pytest.approx(v)


def test_noise_free_limit_is_exact():
    rng = np.random.default_rng(5)
    hist = rng.poisson(5.0, (12, 9))
    r = dpcube(hist, 1e12, Generator(seed=2), penalty=0)
    # the leaves are the kd-tree of the true counts, each released as its exact mean
    leaves = kd_partition(hist.astype(float), np.arange(13), np.arange(10), 0.0)
    assert sorted(map(tuple, leaves.tolist())) == sorted(map(tuple, r.params["partition"].tolist()))
    for r0, r1, c0, c1 in leaves:
        np.testing.assert_allclose(r.histogram[r0:r1, c0:c1], hist[r0:r1, c0:c1].mean(), atol=1e-6)
    # a piecewise-constant histogram is recovered with few leaves (a square is cut along its columns first)
    flat = np.zeros((16, 16), dtype=np.int64)
    flat[:, 8:] = 10
    flat[12:, :8] = 3
    r = dpcube(flat, 1e12, Generator(seed=2))
    np.testing.assert_allclose(r.histogram, flat, atol=1e-6)
    assert r.params["leaves"] == 3


class FixedPhaseOne(audit.RecordingGenerator):
    """A stand-in generator: phase 1 releases a fixed noisy array (whatever the data), phase 2 is recorded."""

    def __init__(self, phase_one, offsets=None):
        super().__init__()
        self.phase_one, self.offsets, self.calls = np.asarray(phase_one, np.int64), offsets, []

    def add_discrete_laplace(self, values, scale):
        arr = np.asarray(values, np.int64)
        self.calls.append(arr.copy())
        if len(self.calls) == 1:
            return self.phase_one.copy()
        return arr + (0 if self.offsets is None else self.offsets[: arr.size])


@pytest.mark.slow
def test_partition_depends_only_on_phase_one_and_the_leaf_counts_have_sensitivity_2():
    import itertools

    shape = (2, 4)
    plan = plan_dpcube(shape, 1.0, penalty=0)
    noisy1 = np.array([[9, 0, -3, 1], [7, 8, 0, 12]])  # a fixed phase-1 release
    partition, worst = None, 0
    for recs in itertools.combinations_with_replacement(range(8), 2):  # n = 2 records, every database
        d1 = np.bincount(recs, minlength=8).reshape(shape)
        g1 = FixedPhaseOne(noisy1)
        r1 = plan.measure(d1, g1)
        p1 = r1.params["partition"].tolist()
        partition = partition or p1
        assert p1 == partition  # a function of the phase-1 release only
        assert g1.calls[0].tolist() == d1.ravel().tolist()  # phase 1 measures every cell (cell_side 1)
        for i, j in itertools.product(range(8), repeat=2):  # bounded neighbours: one record moves
            if d1.flat[i] == 0:
                continue
            d2 = d1.copy()
            d2.flat[i] -= 1
            d2.flat[j] += 1
            g2 = FixedPhaseOne(noisy1)
            plan.measure(d2, g2)
            assert np.abs(g2.calls[0] - g1.calls[0]).sum() <= 2
            worst = max(worst, int(np.abs(g2.calls[1] - g1.calls[1]).sum()))
    assert worst == 2 and len(partition) >= 2


def test_combination_is_the_inverse_variance_mean_spread_uniformly():
    shape = (4, 4)
    plan = plan_dpcube(shape, 1.0, alpha=0.25, penalty=1e12)  # one leaf: the whole grid
    v1 = plan.expected_error["cell_count_variance"]
    v2 = plan.expected_error["partition_count_variance"]
    hist = np.arange(16, dtype=np.int64).reshape(shape)
    noisy1 = hist + np.array([1, -2, 0, 3] * 4).reshape(shape)
    g = FixedPhaseOne(noisy1, offsets=np.array([5]))
    r = plan.measure(hist, g)
    assert r.params["leaves"] == 1
    y2, s1 = hist.sum() + 5, noisy1.sum()
    want = (16 * v1 * y2 + v2 * s1) / (16 * v1 + v2)
    np.testing.assert_allclose(r.histogram, np.full(shape, want / 16), rtol=1e-12)
    r = plan_dpcube(shape, 1.0, alpha=0.25, penalty=1e12, combine=False).measure(hist, FixedPhaseOne(noisy1, np.array([5])))
    np.testing.assert_allclose(r.histogram, np.full(shape, y2 / 16), rtol=1e-12)


def test_seeded_runs_repeat_and_are_fast_on_128x128():
    import time

    hist = np.random.default_rng(0).poisson(np.random.default_rng(1).gamma(0.2, 50.0, (128, 128)))
    plan = plan_dpcube((128, 128), 0.1)
    t = time.perf_counter()
    a = plan.measure(hist, Generator(seed=9))
    assert time.perf_counter() - t < 1.0
    b = plan.measure(hist, Generator(seed=9))
    np.testing.assert_array_equal(a.histogram, b.histogram)
    assert a.histogram.shape == (128, 128) and not a.secure


def test_validation_names_the_parameter():
    with pytest.raises(ValueError, match="alpha"):
        plan_dpcube((4, 4), 1.0, alpha=1)
    with pytest.raises(TypeError, match="alpha"):
        plan_dpcube((4, 4), 1.0, alpha="half")
    with pytest.raises(ValueError, match="cell_side"):
        plan_dpcube((4, 4), 1.0, cell_side=0)
    with pytest.raises(ValueError, match="penalty"):
        plan_dpcube((4, 4), 1.0, penalty=-1)
    with pytest.raises(TypeError, match="combine"):
        plan_dpcube((4, 4), 1.0, combine=1)
    with pytest.raises(ValueError, match="epsilon"):
        plan_dpcube((4, 4), 0.0)
    with pytest.raises(ValueError, match="2-D"):
        plan_dpcube((4,), 1.0)
    with pytest.raises(ValueError, match=r"\(4, 4\)"):
        plan_dpcube((4, 4), 1.0).measure(np.zeros((4, 5), dtype=np.int64))
