"""DAWA: the dyadic-interval L1 partition kernel, its privacy, and the full baseline."""

import functools
import importlib
import inspect
import itertools
import math

import numpy as np
import pytest

from blowfish_privacy import Generator, _dawa, mechanisms
from blowfish_privacy.mechanisms.data_dependent import _dawa_partition as dp
from blowfish_privacy.mechanisms import _docs, _trees
from blowfish_privacy.mechanisms.histogram import uniform_expansion

dw = importlib.import_module("blowfish_privacy.mechanisms.data_dependent.dawa")  # the module, not the function


def ranks(x):
    """(rank, sorted values) as the reference kernel takes them (int64 ranks)."""
    r, s = dp.ranks(np.asarray(x, dtype=np.int64))
    return r.astype(np.int64), s


@pytest.mark.parametrize("seed", range(5))
def test_window_deviations_match_numpy(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, [3, 1000][seed % 2], 70).astype(np.int64)
    r, s = ranks(x)
    for L in (1, 2, 3, 4, 8, 16, 64, 70):
        ref = [np.abs(x[i : i + L] - x[i : i + L].mean()).sum() for i in range(x.size - L + 1)]
        np.testing.assert_allclose(_dawa.dawa_deviations(x, r, s, L), ref, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("kind", ["few", "wide", "distinct", "huge", "tiny"])
def test_ranks_are_those_of_a_stable_argsort(kind):
    """The radix-sort ranks equal numpy's stable argsort (ties by index)."""
    rng = np.random.default_rng(3)
    n = {"tiny": 1}.get(kind, 5000)
    x = {
        "few": lambda: rng.integers(0, 4, n),
        "wide": lambda: rng.integers(0, 2**40, n),
        "distinct": lambda: rng.permutation(n) * 7,
        "huge": lambda: np.r_[rng.integers(0, 2**62, n - 2), 2**62, 0],
        "tiny": lambda: np.array([5]),
    }[kind]().astype(np.int64)
    order = np.argsort(x, kind="stable")
    want = np.empty(n, dtype=np.int64)
    want[order] = np.arange(n)
    rank, sv = _dawa.dawa_ranks(x)
    assert rank.dtype == np.int32 and sv.dtype == np.int64
    np.testing.assert_array_equal(rank, want)
    np.testing.assert_array_equal(sv, x[order])


def test_ranks_validate_their_input():
    r, s = _dawa.dawa_ranks(np.zeros(0, dtype=np.int64))
    assert r.size == 0 and s.size == 0
    with pytest.raises(ValueError, match="non-negative"):
        _dawa.dawa_ranks(np.array([3, -1], dtype=np.int64))
    with pytest.raises(ValueError, match="dtype"):
        _dawa.dawa_ranks(np.array([3, 1], dtype=np.int32))


def zero_noise(n):
    return np.zeros(_dawa.dawa_n_intervals(n))


@pytest.mark.parametrize("seed", range(30))
def test_zero_noise_partition_is_the_exact_dp_optimum(seed):
    """The C partition without noise reaches the O(n^2) reference's least cost
    (small counts make many ties, so the partitions are compared by cost)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 41))
    x = rng.integers(0, [2, 6, 50][seed % 3], n).astype(np.int64)
    pen = float(rng.choice([0.0, 0.5, 3.0, 40.0]))
    starts = dw.partition_with_noise(x, zero_noise(n), pen)
    cost, ref_starts = dw.exact_partition(x, pen)
    assert starts[0] == 0 and np.all(np.diff(starts) > 0)
    assert all((b - a) & (b - a - 1) == 0 for a, b in zip(starts, list(starts[1:]) + [n]))  # dyadic lengths
    assert dw.partition_cost(x, starts, pen) == pytest.approx(cost, rel=1e-12, abs=1e-9)


@pytest.mark.parametrize("seed", range(10))
def test_zero_noise_partition_equals_reference_without_ties(seed):
    rng = np.random.default_rng(100 + seed)
    x = rng.integers(0, 10**6, 33).astype(np.int64)
    x[5:13] = 7  # a flat stretch worth one bucket
    pen = 2.5e5
    starts = dw.partition_with_noise(x, zero_noise(x.size), pen)
    np.testing.assert_array_equal(starts, dw.exact_partition(x, pen)[1])


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 6])
def test_bucket_deviation_sensitivity_bound(size):
    """Adding or removing one record moves dev(B) by at most 2 - 2/|B| (attained),
    the bound behind NOISY_MIN_SENSITIVITY = 2 * 2 (001 Thm 5.2's argument
    needs twice the per-bucket sensitivity)."""
    worst = 0.0
    for b in itertools.product(range(4), repeat=size):
        b = np.array(b, dtype=float)
        d0 = np.abs(b - b.mean()).sum()
        for i in range(size):
            for delta in (1, -1):
                c = b.copy()
                c[i] += delta
                if c[i] < 0:
                    continue
                worst = max(worst, abs(np.abs(c - c.mean()).sum() - d0))
    assert worst == pytest.approx(2 - 2 / size)
    assert worst < 2 and dw.NOISY_MIN_SENSITIVITY == 4


def dlap_pmf(scale, K):
    p = math.exp(-1 / float(scale))
    z = np.arange(-K, K + 1)
    return z, (1 - p) / (1 + p) * p ** np.abs(z)


@functools.lru_cache(maxsize=None)
def _probabilities(x, eps, pen):
    return partition_probabilities(np.array(x), eps, pen)


def partition_probabilities(x, eps, pen):
    """Exact output distribution of dawa_partition on 3 values (two noisy intervals)."""
    cal = mechanisms.calibrate(dw.NOISY_MIN_SENSITIVITY, eps / 2)
    z, pz = dlap_pmf(cal.scale, 300)
    Z1, Z2 = np.meshgrid(z, z, indexing="ij")
    P = np.outer(pz, pz)
    s01 = np.maximum(abs(x[0] - x[1]) + Z1, 0) + pen  # noise order: [0,2) then [1,3)
    s12 = np.maximum(abs(x[1] - x[2]) + Z2, 0) + pen
    best2 = np.minimum(2 * pen, s01)
    right = pen + s12 <= best2 + pen
    merged_left = ~right & (s01 <= 2 * pen)
    singles = ~right & ~merged_left
    return np.array([P[right].sum(), P[merged_left].sum(), P[singles].sum()])


def test_partition_outputs_agree_with_the_kernel():
    x = np.array([3, 1, 2], dtype=np.int64)
    for z1, z2 in [(-5, 7), (0, 0), (9, -9), (-1, -1)]:
        starts = tuple(dw.partition_with_noise(x, np.array([z1, z2]), 1.5).tolist())
        s01, s12 = max(2 + z1, 0) + 1.5, max(1 + z2, 0) + 1.5
        expect = (0, 1) if 1.5 + s12 <= min(3.0, s01) + 1.5 else ((0, 2) if s01 <= 3.0 else (0, 1, 2))
        assert starts == expect


@pytest.mark.slow
@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_exact_privacy_of_the_partition_on_three_values(eps):
    """Every output's probability, computed exactly, moves by at most e^eps
    between bounded neighbours (one record changes value), over every
    database of up to 3 records on 3 values."""
    pen = 1.0
    worst = 0.0
    for n in range(1, 4):
        for recs in itertools.combinations_with_replacement(range(3), n):
            x1 = np.bincount(recs, minlength=3)
            p1 = _probabilities(tuple(x1), eps, pen)
            for k in range(n):
                for v in range(3):
                    x2 = x1.copy()
                    x2[recs[k]] -= 1
                    x2[v] += 1
                    p2 = _probabilities(tuple(x2), eps, pen)
                    worst = max(worst, float(np.max(np.log(p1 / p2))))
    assert worst <= eps + 1e-6  # truncation of the noise grid at |z| = 300 is far below this
    assert worst > 0.05 * eps  # the partition does depend on the data


def test_dawa_seeded_regression_and_fields():
    x = np.array([5, 0, 0, 1, 9, 9, 8, 2, 0, 0, 3, 4, 30, 31, 0, 1], dtype=np.int64)
    r = mechanisms.dawa(x, 1.0, Generator(seed=7))
    np.testing.assert_array_equal(
        r.histogram,
        [1.5, 1.5, 3.25, 3.25, 3.25, 3.25, 3.25, 3.25, 3.25, 3.25, 3.5, 3.5, 30.0, 30.0, 1.0, -2.0],
    )
    assert r.epsilon <= 1.0 and r.epsilon_exact == sum(r.epsilon_parts.values())
    assert r.guarantee == "FullDomain" and not r.secure
    assert r.buckets.shape == x.shape and np.all(np.diff(r.buckets) >= 0)


def test_dawa_is_exact_on_flat_data_with_large_budget():
    x = np.full(64, 100, dtype=np.int64)
    r = mechanisms.dawa(x, 50.0, Generator(seed=3))
    assert r.params["n_buckets"] <= 4
    assert np.abs(r.histogram - 100).max() < 2


@pytest.mark.parametrize("ratio", [0, 1, 1.5, -0.2])
def test_ratio_outside_open_unit_interval_is_refused(ratio):
    with pytest.raises(ValueError, match="ratio"):
        mechanisms.dawa(np.ones(8, dtype=np.int64), 1.0, Generator(seed=1), ratio=ratio)


def test_bad_histograms_are_refused():
    with pytest.raises(TypeError, match="integer"):
        mechanisms.dawa(np.ones(8), 1.0)
    with pytest.raises(ValueError, match="non-negative"):
        mechanisms.dawa(np.array([1, -1]), 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        mechanisms.dawa(np.ones(8, dtype=np.int64), 0.0)


def test_partition_refuses_counts_that_could_overflow_the_kernel():
    with pytest.raises(ValueError, match="2\\*\\*62"):
        dw.partition_with_noise(np.array([2**61, 0, 1], dtype=np.int64), np.zeros(2), 1.0)
    with pytest.raises(ValueError, match="one entry per candidate interval"):
        dw.partition_with_noise(np.array([1, 0, 1], dtype=np.int64), np.zeros(5), 1.0)


# -- step 2 for range workloads -------------------------------------------------


@pytest.mark.parametrize("h", [1, 2, 3, 5])
def test_canonical_nodes_tile_every_range(h):
    M = 1 << h
    for lo in range(M):
        for hi in range(lo, M):
            nodes = dw._canonical_nodes(lo, hi, h)
            covered = []
            for level, idx in nodes:
                w = 1 << (h - level)
                covered.extend(range(idx * w, (idx + 1) * w))
            assert sorted(covered) == list(range(lo, hi + 1))
            assert len(nodes) <= 2 * h


def test_workload_error_with_leaves_only_is_the_closed_form():
    starts = np.array([0, 3, 4, 9, 10])
    n = 14
    lo = np.array([0, 1, 2, 5, 0, 12])
    hi = np.array([13, 3, 9, 6, 0, 12])
    eps2 = 0.5
    q = dw._bucket_workload(starts, n, lo, hi)
    var = mechanisms.laplace(np.zeros(1, dtype=np.int64), sensitivity=2, epsilon=eps2).variance
    sizes = np.diff(np.r_[starts, n])
    bucket = np.searchsorted(starts, np.arange(n), side="right") - 1
    want = 0.0
    for a, b in zip(lo, hi):
        cover = np.bincount(bucket[a : b + 1], minlength=starts.size) / sizes  # fraction of each bucket
        want += var * np.sum(cover**2)
    shares = [0, 0, 1]  # 5 buckets: height 3
    assert dw.workload_error(shares, starts.size, q, eps2) == pytest.approx(want)


def test_greedy_puts_everything_on_buckets_for_the_identity_workload():
    starts = np.array([0, 2, 3, 7, 8, 12, 13])
    n = 16
    idx = np.arange(n)
    shares = dw.greedy_shares(starts.size, dw._bucket_workload(starts, n, idx, idx), 0.3)
    assert shares[-1] == 1 and sum(shares) == 1


def test_greedy_uses_upper_levels_for_long_ranges_and_never_does_worse():
    # (on a few dozen buckets the leaves alone win: each extra level divides
    # the buckets' budget; long ranges over a thousand buckets need the tree)
    starts = np.arange(0, 2048, 2)
    n = 2048
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, n, 200), rng.integers(0, n, 200)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    q = dw._bucket_workload(starts, n, lo, hi)
    shares = dw.greedy_shares(starts.size, q, 0.5)
    leaves_only = [0] * (len(shares) - 1) + [1]
    assert sum(shares) == 1 and any(s > 0 for s in shares[:-1])
    assert dw.workload_error(shares, starts.size, q, 0.5) < dw.workload_error(leaves_only, starts.size, q, 0.5)


def test_hierarchy_budget_by_brute_force():
    """Every bounded neighbour (one record moved between buckets) changes the
    released node counts by sum |delta| / scale <= eps2."""
    from fractions import Fraction

    m, eps2 = 5, Fraction(1, 2)
    shares = [Fraction(1, 4), Fraction(0), Fraction(3, 4)]
    h = len(shares)
    scales = [mechanisms.calibrate(2, eps2 * s).scale if s else None for s in shares]

    def levels(c):
        leaves = np.zeros(1 << h, dtype=np.int64)
        leaves[:m] = c
        return [leaves.reshape(1 << l, -1).sum(axis=1) for l in range(1, h + 1)]

    worst = Fraction(0)
    base = np.array([2, 0, 1, 3, 1])
    for i in range(m):
        for j in range(m):
            if i == j or base[i] == 0:
                continue
            moved = base.copy()
            moved[i] -= 1
            moved[j] += 1
            loss = sum(Fraction(int(np.abs(a - b).sum())) / t for a, b, t in zip(levels(base), levels(moved), scales) if t)
            worst = max(worst, loss)
    assert worst <= eps2
    _, spent = _trees.level_hierarchy_estimate(base, shares, eps2, Generator(seed=1))
    assert spent <= eps2


def test_least_squares_error_is_within_the_greedy_error_model():
    counts = np.array([40, 0, 3, 17, 9, 9, 30, 2, 5, 11, 0], dtype=np.int64)
    starts = np.arange(counts.size)
    n = counts.size
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, n, 40), rng.integers(0, n, 40)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    q = dw._bucket_workload(starts, n, lo, hi)
    eps2 = 1.0
    shares = dw.greedy_shares(counts.size, q, eps2)
    bound = dw.workload_error(shares, counts.size, q, eps2)
    gen = Generator(seed=9)
    cum_true = np.r_[0, np.cumsum(counts)]
    errs, sums = [], []
    for _ in range(1500):
        est, _ = _trees.level_hierarchy_estimate(counts, shares, Fraction(eps2), gen)  # a plan's checked epsilon
        c = np.r_[0, np.cumsum(est)]
        d = (c[hi + 1] - c[lo]) - (cum_true[hi + 1] - cum_true[lo])
        errs.append(np.sum(d**2))
        sums.append(est.sum())
    assert np.mean(errs) <= bound * 1.05  # least squares is the BLUE: never worse than the model
    assert np.allclose(sums, counts.sum())  # consistent with the public total


def test_dawa_with_a_range_workload():
    x = np.repeat(np.array([3, 40, 0, 7, 7, 100, 1, 0], dtype=np.int64), 16)
    lo = np.array([0, 10, 50, 3])
    hi = np.array([127, 90, 51, 3])
    r = mechanisms.dawa(x, 2.0, Generator(seed=4), workload=(lo, hi))
    assert r.epsilon <= 2.0 and r.epsilon_exact == sum(r.epsilon_parts.values())
    assert sum(r.params.get("level_shares", [1.0])) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="0 <= lo <= hi < 128"):
        mechanisms.dawa(x, 1.0, workload=(np.array([5]), np.array([200])))
    with pytest.raises(TypeError, match="workload"):
        mechanisms.dawa(x, 1.0, workload=3)


# ---------------------------------------------------------------------------
# the C boundary (issue 12) and the plan (issue 11)

from fractions import Fraction  # noqa: E402

from blowfish_privacy.mechanisms.plan import Plan, Release  # noqa: E402


def test_partition_with_noise_checks_what_the_kernel_assumes():
    n_int = _dawa.dawa_n_intervals(4)
    with pytest.raises(ValueError, match="non-negative") as exc:
        dw.partition_with_noise(np.array([3, -5, 1, 0], dtype=np.int64), np.zeros(n_int), 1.0)
    assert "-5" not in str(exc.value)
    with pytest.raises(ValueError, match="finite"):
        dw.partition_with_noise(np.array([3, 5, 1, 0]), np.full(n_int, np.nan), 1.0)
    with pytest.raises(ValueError, match="penalty"):
        dw.partition_with_noise(np.array([3, 5, 1, 0]), np.zeros(n_int), -1.0)
    with pytest.raises(TypeError, match="integer"):
        dw.partition_with_noise(np.array([3.0, 5, 1, 0]), np.zeros(n_int), 1.0)
    with pytest.raises(ValueError, match="int64 maximum"):
        dw.partition_with_noise(np.array([2**64 - 1, 5, 1, 0], dtype=np.uint64), np.zeros(n_int), 1.0)


def test_partition_with_noise_on_misaligned_and_strided_buffers():
    x = np.array([5, 0, 0, 1, 9, 9, 8, 2, 0, 0, 3, 4], dtype=np.int64)
    noise = np.random.default_rng(0).integers(-3, 4, _dawa.dawa_n_intervals(x.size)).astype(np.float64)
    want = dw.partition_with_noise(x, noise, 2.0)
    raw = np.zeros(x.nbytes + 1, dtype=np.uint8)
    mis = raw[1:].view(np.int64)
    mis[:] = x
    assert not mis.flags.aligned
    np.testing.assert_array_equal(dw.partition_with_noise(mis, noise, 2.0), want)
    np.testing.assert_array_equal(dw.partition_with_noise(np.repeat(x, 2)[::2], np.repeat(noise, 2)[::2], 2.0), want)
    np.testing.assert_array_equal(dw.partition_with_noise(x.astype(">i8"), noise.astype(">f8"), 2.0), want)


def test_dawa_is_plan_then_measure():
    x = np.array([5, 0, 0, 1, 9, 9, 8, 2, 0, 0, 3, 4, 30, 31, 0, 1], dtype=np.int64)
    plan = dw.plan_dawa(16, 1.0)
    assert isinstance(plan, Plan) and plan.policy is None
    part, counts = plan.parts
    assert part.count == _dawa.dawa_n_intervals(16) + 16 and part.epsilon <= Fraction(1, 4)
    assert counts.sensitivity == 2 and counts.count is None and counts.scale == mechanisms.calibrate(2, Fraction(3, 4)).scale
    a = plan.measure(x, Generator(seed=7))
    b = mechanisms.dawa(x, 1.0, Generator(seed=7))
    np.testing.assert_array_equal(a.histogram, b.histogram)
    assert isinstance(a, Release) and a.epsilon_exact == plan.epsilon_exact <= 1
    s = a.summary()
    assert s["mechanism"] == "dawa" and "bounded epsilon-differential privacy" in s["guarantee"]
    assert s["scales"]["counts"] == str(counts.scale) and s["seeded"]


def test_dawa_plan_with_a_workload_fixes_the_budget_not_the_level_scales():
    plan = dw.plan_dawa(128, 1.0, workload=(np.array([0, 10]), np.array([127, 50])))
    counts = plan.parts[1]
    assert counts.scale is None and counts.epsilon == Fraction(3, 4)
    r = plan.measure(np.arange(128), Generator(seed=1))
    assert r.epsilon_exact == plan.epsilon_exact
    assert r.params.get("weights") == "node" or r.params["n_buckets"] == 1
    lv = dw.plan_dawa(128, 1.0, workload=(np.array([0, 10]), np.array([127, 50])), weights="level")
    r = lv.measure(np.arange(128), Generator(seed=1))
    assert "level_shares" in r.params or r.params["n_buckets"] == 1
    with pytest.raises(ValueError, match="0 <= lo <= hi < 128"):
        dw.plan_dawa(128, 1.0, workload=(np.array([0]), np.array([128])))
    with pytest.raises(ValueError, match="weights"):
        dw.plan_dawa(128, 1.0, weights="tree")


def test_dawa_takes_the_harness_workload_rows():
    # DPBench's harness passes an int64 array of rows (lo, hi): the same as the pair of columns
    rows = np.array([[0, 127], [10, 50], [3, 3]], dtype=np.int64)
    x = np.repeat(np.array([3, 40, 0, 7, 7, 100, 1, 0], dtype=np.int64), 16)
    a = dw.plan_dawa(128, 1.0, workload=rows).measure(x, Generator(seed=2))
    b = dw.plan_dawa(128, 1.0, workload=(rows[:, 0], rows[:, 1])).measure(x, Generator(seed=2))
    np.testing.assert_array_equal(a.histogram, b.histogram)
    lo, hi = dw.check_range_workload(rows, 128)
    assert lo.tolist() == [0, 10, 3] and hi.tolist() == [127, 50, 3]
    lo, hi = dw.check_range_workload(np.array([[0, 5], [2, 3]]), 128)  # a 2 x 2 array is rows too
    assert lo.tolist() == [0, 2] and hi.tolist() == [5, 3]
    lo, hi = dw.check_range_workload((np.array([0, 5]), np.array([2, 9])), 128)  # the pair form
    assert lo.tolist() == [0, 5] and hi.tolist() == [2, 9]


@pytest.mark.parametrize("size", [0, -3, 2.5, True])
def test_dawa_plan_refuses_bad_sizes(size):
    with pytest.raises((TypeError, ValueError), match="size"):
        dw.plan_dawa(size, 1.0)


def test_dawa_plan_checks_the_aggregate_shape():
    with pytest.raises(ValueError, match=r"planned shape \(8,\), got shape \(9,\)"):
        dw.plan_dawa(8, 1.0).measure(np.ones(9, dtype=np.int64), Generator(seed=1))


def test_dawa_docstrings_state_their_guarantee():
    """help() on each DAWA entry point shows its guarantee under FullDomain."""
    for fn in (dw.dawa_partition, dw.dawa, dw.plan_dawa):
        privacy = _docs.sections(inspect.cleandoc(fn.__doc__))["Privacy"]
        assert "FullDomain" in privacy and "epsilon-DP" in privacy


# ---------------------------------------------------------------------------
# the streamed dynamic program (_dawa.DawaStream) against the reference kernel


def _reference_starts(x, noise, pen, single=None):
    r, s = ranks(x)
    single = None if single is None else np.array(single, dtype=np.float64)
    return _dawa.dawa_partition(x, r, s, np.array(noise, dtype=np.float64), pen, single)


def _ties_reversed(x):
    """Another valid (rank, sorted values): ties ranked in decreasing index order."""
    order = np.lexsort((-np.arange(x.size), x))
    rank = np.empty(x.size, dtype=np.int32)
    rank[order] = np.arange(x.size, dtype=np.int32)
    return rank, x[order]


@pytest.mark.parametrize("seed", [*range(4), *(pytest.param(s, marks=pytest.mark.slow) for s in range(4, 12))])
def test_streamed_partition_is_bit_identical_to_the_reference_kernel(seed):
    """Chunks of end points (any width), threads, any order of ties among the
    ranks and the rank-set bit trees give the reference kernel's partition,
    tie for tie, on counts with few, many and only distinct values, and
    real-valued noise."""
    rng = np.random.default_rng(500 + seed)
    for trial in range(12):
        n = int(rng.integers(1, 400))
        kind = (seed + trial) % 5
        x = [rng.integers(0, 3, n), rng.integers(0, 10**6, n), rng.poisson(3, n),
             rng.integers(0, 5000, n) * (rng.random(n) < 0.3), rng.permutation(n) * 3][kind].astype(np.int64)
        N = _dawa.dawa_n_intervals(n)
        noise = rng.integers(-20, 21, N) * [1.0, 1000.0, 1.0, 37.5, 10.0][kind]
        if trial % 3 == 0:
            noise = noise + rng.random(N)
        pen = float(rng.choice([0.0, 0.5, 3.0, 40.0, 5000.0]))
        ref = _reference_starts(x, noise, pen)
        for width, threads in [(1, 1), (7, 2), (64, 3), (1 << 16, 1)]:
            rank, sv = dp.ranks(x) if width != 7 else _ties_reversed(x)
            st = _dawa.DawaStream(x, rank, sv, pen, noise, None, width=width)
            np.testing.assert_array_equal(dp.run_stream(st, threads), ref)
        u = np.unique(x)  # at most 400 values: the per-value counts apply
        st = _dawa.DawaStream(x, None, None, pen, noise, None, width=64, g=np.searchsorted(u, x).astype(np.int32), u=u)
        np.testing.assert_array_equal(dp.run_stream(st, 2), ref)
        np.testing.assert_array_equal(dw.partition_with_noise(x, noise, pen), ref)


@pytest.mark.parametrize("case", ["shuffled", "increasing", "wide", "distinct_and_ties", "few_at_the_limit",
                                  "just_over_the_limit"])
def test_all_distinct_counts_give_the_reference_partition(case):
    """Counts that are all (or mostly) distinct, where the window's threshold
    crosses many values at every step: the bit-tree path (several tiers at
    this size) gives the reference kernel's partition, tie for tie."""
    rng = np.random.default_rng(77)
    n = 30_000
    x = {
        "shuffled": rng.permutation(n) * 3,
        "increasing": np.arange(n) * 2 + (np.arange(n) % 7 == 0),
        "wide": rng.permutation(np.unique(rng.integers(0, 2**40, 2 * n))[:n]),
        "distinct_and_ties": np.where(rng.random(n) < 0.5, rng.permutation(n), 17),
        "few_at_the_limit": rng.permutation(np.arange(n) % _dawa.FEW) * 5,
        "just_over_the_limit": rng.permutation(np.arange(n) % (_dawa.FEW + 1)) * 5,
    }[case].astype(np.int64)
    assert (np.unique(x).size <= _dawa.FEW) == (case == "few_at_the_limit")
    N = _dawa.dawa_n_intervals(n)
    spread = float(x.max() - x.min())
    noise = np.round(rng.normal(0.0, 0.05 * spread, N))
    pen = 0.2 * spread
    ref = _reference_starts(x, noise, pen)
    assert 1 < ref.size < n  # a partition that is neither trivial one
    rank, sv, g, u = dp.stream_inputs(x)
    assert (g is not None) == (case == "few_at_the_limit")
    for width, threads in [(1 << 16, 2), (1000, 1)]:
        st = _dawa.DawaStream(x, rank, sv, pen, noise, None, width=width, g=g, u=u)
        np.testing.assert_array_equal(dp.run_stream(st, threads), ref)


@pytest.mark.parametrize("x", [np.array([5, 0, 5, 9], dtype=np.int64), np.array([2**40, 3, 2**40], dtype=np.int64),
                               np.arange(_dawa.FEW + 1, dtype=np.int64)[::-1].copy(),
                               np.r_[np.arange(_dawa.FEW), 2**30].astype(np.int64)])
def test_stream_inputs_describe_the_counts(x):
    """Per-value (g, u) for at most FEW distinct counts, whether tallied or
    sorted; ranks beyond."""
    rank, sv, g, u = dp.stream_inputs(x)
    if np.unique(x).size <= _dawa.FEW:
        assert rank is None and sv is None and g.dtype == np.int32
        np.testing.assert_array_equal(u, np.unique(x))
        np.testing.assert_array_equal(u[g], x)
    else:
        assert g is None and u is None
        np.testing.assert_array_equal(sv[rank], x)


@pytest.mark.parametrize("kind,threads", [("sparse", 1), pytest.param("sparse", 2, marks=pytest.mark.slow),
                                          ("distinct", 2)])
def test_streamed_noise_equals_the_generators_batch(kind, threads):
    """Above 2**20 intervals the noise is regenerated per child chunk; the
    partition and the generator's state afterwards equal those of drawing
    the whole vector with Generator.discrete_laplace first."""
    rng = np.random.default_rng(9)
    n = 140_000
    if kind == "sparse":
        x = (rng.integers(0, 50, n) * (rng.random(n) < 0.2)).astype(np.int64)
    else:
        x = (rng.permutation(n) // 4).astype(np.int64)
    N = _dawa.dawa_n_intervals(n)
    assert N >= 2**20
    scale = mechanisms.calibrate(dw.NOISY_MIN_SENSITIVITY, 0.125).scale
    g1 = Generator(seed=5)
    noise = g1.discrete_laplace(scale, size=N)
    ref = _reference_starts(x, noise, 16.0, g1.discrete_laplace(scale, size=n))
    g2 = Generator(seed=5, threads=threads)
    got = dp.partition_streamed(x, scale, 16.0, g2)
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(g1.random_raw(8), g2.random_raw(8))


@pytest.mark.slow
def test_dawa_large_seeded_release_matches_the_whole_vector_path():
    """The whole release above the streaming threshold equals a release whose
    partition used the whole noise vector (same seed, same draws)."""
    rng = np.random.default_rng(4)
    n = 70_000
    x = rng.poisson(2.0, n).astype(np.int64)
    assert _dawa.dawa_n_intervals(n) < 2**20 < _dawa.dawa_n_intervals(2 * n)
    x = np.r_[x, x[::-1]]
    r = mechanisms.dawa(x, 1.0, Generator(seed=11))
    plan = dw.plan_dawa(x.size, 1.0)
    g = Generator(seed=11)
    part_part = plan.parts[0]
    noise = g.discrete_laplace(part_part.scale, size=_dawa.dawa_n_intervals(x.size))
    ref = _reference_starts(x, noise, plan.options["penalty"], g.discrete_laplace(part_part.scale, size=x.size))
    np.testing.assert_array_equal(np.flatnonzero(np.diff(np.r_[-1, r.buckets])), ref)


@pytest.mark.parametrize("kind", ["poisson", "distinct"])
def test_dawa_release_is_the_uniform_expansion_of_the_noisy_bucket_counts(kind):
    """The release, rebuilt step by step with the same seed: partition,
    noisy bucket counts, histogram.uniform_expansion; bit-identical."""
    rng = np.random.default_rng(6)
    n = 3000
    x = (rng.poisson(2.0, n) if kind == "poisson" else rng.permutation(n) * 2).astype(np.int64)
    got = mechanisms.dawa(x, 1.0, Generator(seed=3))
    plan = dw.plan_dawa(n, 1.0)
    g = Generator(seed=3)
    starts = dp.partition_run(x, plan.parts[0].scale, plan.options["penalty"], g)
    noisy = g.add_discrete_laplace(np.add.reduceat(x, starts), plan.parts[1].scale)
    buckets = dp.buckets_from_starts(starts, n)
    np.testing.assert_array_equal(got.buckets, buckets)
    np.testing.assert_array_equal(got.histogram, uniform_expansion(noisy, buckets))


def test_dawa_stream_validates_inputs_and_order():
    x = np.array([3, 0, 0, 5, 5, 1], dtype=np.int64)
    r, sv = dp.ranks(x)
    noise = np.zeros(_dawa.dawa_n_intervals(6))
    ok = dict(width=4)
    with pytest.raises(ValueError, match="non-negative"):
        _dawa.DawaStream(-x, r, -sv, 1.0, noise, None, **ok)
    with pytest.raises(ValueError, match="non-decreasing"):
        _dawa.DawaStream(x, r, sv[::-1].copy(), 1.0, noise, None, **ok)
    with pytest.raises(ValueError, match="permutation"):
        _dawa.DawaStream(x, np.zeros(6, dtype=np.int32), sv, 1.0, noise, None, **ok)
    with pytest.raises(ValueError, match="sorted_vals\\[rank\\] == x"):
        _dawa.DawaStream(x, r[::-1].copy(), sv, 1.0, noise, None, **ok)
    with pytest.raises(ValueError, match="indices"):
        _dawa.DawaStream(x, r + 1, sv, 1.0, noise, None, **ok)
    with pytest.raises(ValueError, match="dtype"):
        _dawa.DawaStream(x, r.astype(np.int64), sv, 1.0, noise, None, **ok)
    with pytest.raises(ValueError, match="finite"):
        _dawa.DawaStream(x, r, sv, 1.0, np.full(noise.size, np.nan), None, **ok)
    with pytest.raises(ValueError, match="finite"):
        _dawa.DawaStream(x, r, sv, float("inf"), noise, None, **ok)
    with pytest.raises(ValueError, match="length"):
        _dawa.DawaStream(x, r, sv, 1.0, noise[:-1], None, **ok)
    with pytest.raises(ValueError, match="noise or keys"):
        _dawa.DawaStream(x, r, sv, 1.0, None, None, **ok)
    with pytest.raises(ValueError, match="keys"):
        _dawa.DawaStream(x, r, sv, 1.0, None, np.zeros(7, dtype=np.uint32), 1, 1, 4, 4)
    with pytest.raises(ValueError, match="scale"):
        _dawa.DawaStream(x, r, sv, 1.0, None, np.zeros(24, dtype=np.uint32), 0, 1, 4, 4)
    with pytest.raises(ValueError, match="width"):
        _dawa.DawaStream(x, r, sv, 1.0, noise, None, width=0)
    with pytest.raises(ValueError, match="between 1"):
        _dawa.DawaStream(x[:0], r[:0], sv[:0], 1.0, noise[:0], None, **ok)
    with pytest.raises(OverflowError):
        big = np.full(6, 2**62, dtype=np.int64)
        _dawa.DawaStream(big, np.arange(6, dtype=np.int32), big, 1.0, noise, None, **ok)
    g, u = np.searchsorted(np.unique(x), x).astype(np.int32), np.unique(x)
    with pytest.raises(ValueError, match="rank and sorted_vals, or g and u"):
        _dawa.DawaStream(x, r, sv, 1.0, noise, None, g=g, u=u, **ok)
    with pytest.raises(ValueError, match="rank and sorted_vals, or g and u"):
        _dawa.DawaStream(x, None, sv, 1.0, noise, None, **ok)
    with pytest.raises(ValueError, match="u\\[g\\] == x"):
        _dawa.DawaStream(x, None, None, 1.0, noise, None, g=np.zeros(6, dtype=np.int32), u=u, **ok)
    with pytest.raises(ValueError, match="increasing"):
        _dawa.DawaStream(x, None, None, 1.0, noise, None, g=g, u=u[::-1].copy(), **ok)
    with pytest.raises(ValueError, match="indices"):
        _dawa.DawaStream(x, None, None, 1.0, noise, None, g=g + 1, u=u, **ok)
    with pytest.raises(ValueError, match="distinct values"):
        _dawa.DawaStream(x, None, None, 1.0, noise, None, g=g, u=np.arange(_dawa.FEW + 1), **ok)
    st = _dawa.DawaStream(x, r, sv, 1.0, noise, None, **ok)
    assert st.n_levels == 2
    with pytest.raises(ValueError, match="at end point"):
        st.levels(2, 5, [1])
    with pytest.raises(ValueError, match="every level"):
        st.dp(1, 5)
    with pytest.raises(ValueError, match="width"):
        st.levels(1, 6, [1])
    with pytest.raises(ValueError, match="levels must lie"):
        st.levels(1, 5, [3])
    with pytest.raises(ValueError, match="not ready"):
        st.levels(1, 5, [1, 1])
    with pytest.raises(ValueError, match="past"):
        st.starts()
    st.levels(1, 5, [1, 2])
    with pytest.raises(ValueError, match="not ready"):
        st.levels(1, 5, [1])
    st.dp(1, 5)
    with pytest.raises(ValueError, match="at end point"):
        st.dp(1, 5)
    st.levels(5, 7, [2, 1])
    st.dp(5, 7)
    np.testing.assert_array_equal(st.starts(), _reference_starts(x, noise, 1.0))


@pytest.mark.parametrize("n", [1, 2, 3, 16, 17, 33])
def test_streamed_partition_small_sizes(n):
    rng = np.random.default_rng(n)
    x = rng.integers(0, 4, n).astype(np.int64)
    noise = rng.integers(-3, 4, _dawa.dawa_n_intervals(n)).astype(np.float64)
    np.testing.assert_array_equal(dw.partition_with_noise(x, noise, 1.0), _reference_starts(x, noise, 1.0))


def test_plan_memory_estimate_is_linear():
    small, big = dw.plan_dawa(10**6, 1.0).memory_bytes, dw.plan_dawa(10**7, 1.0).memory_bytes
    assert big < 100 * 10**7 and big / small < 12


def test_one_value_buckets_carry_their_own_noise_in_both_kernels():
    """Each one-value bucket's score is max(0, its noise) + penalty.  Without
    noise on them the noisy-min argument fails (the loss grows with |T|: all
    ones against a neighbour with one record moved, 16 cells, epsilon 1 gave
    a loss above 1 for the partition's 0.25), so the plan draws |T| more
    values and the kernels score those buckets with them."""
    x = np.array([0, 10, 0, 10, 0, 10, 0, 10], dtype=np.int64)
    N = _dawa.dawa_n_intervals(x.size)
    zero = np.zeros(N)
    assert dp.partition_with_noise(x, zero, 1.0).size == x.size  # deviations of 10+: singletons win
    huge = np.full(x.size, 1e6)
    for starts in (dp.partition_with_noise(x, zero, 1.0, single_noise=huge),
                   _reference_starts(x, zero, 1.0, huge)):
        np.testing.assert_array_equal(starts, [0])  # every one-value bucket now costs 1e6 + 1
    one = np.zeros(x.size)
    one[3] = 1e6  # only the fourth value's own bucket is dear: it joins a neighbour
    got = dp.partition_with_noise(x, zero, 1.0, single_noise=one)
    assert 3 not in set(got.tolist()) or 4 not in set(got.tolist())
    np.testing.assert_array_equal(got, _reference_starts(x, zero, 1.0, one))
    assert dw.plan_dawa(x.size, 1.0).parts[0].count == N + x.size


def test_dawa_stream_copies_its_inputs():
    """The kernel trusts its arrays: changing the caller's arrays after the
    stream is made must neither crash it nor change its answer."""
    rng = np.random.default_rng(2)
    x = rng.integers(0, 5, 300).astype(np.int64)
    noise = rng.integers(-20, 20, _dawa.dawa_n_intervals(x.size)).astype(np.float64)
    ref = dp.partition_with_noise(x, noise, 3.0)
    rank, sv, g, u = dp.stream_inputs(x)
    s = _dawa.DawaStream(x, rank, sv, 3.0, noise, None, width=64, g=g, u=u)
    g[:] = 2**30
    x[:] = 7
    noise[:] = np.nan
    np.testing.assert_array_equal(dp.run_stream(s, 1), ref)
