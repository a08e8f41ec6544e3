"""DAWA: the dyadic-interval L1 partition kernel, its privacy, and the full baseline."""

import importlib
import itertools
import math

import numpy as np
import pytest

from blowfish_privacy import Generator, _core, mechanisms
dw = importlib.import_module("blowfish_privacy.mechanisms.dawa")  # the module, not the function


def ranks(x):
    return dw._ranks(np.asarray(x, dtype=np.int64))


@pytest.mark.parametrize("seed", range(5))
def test_window_deviations_match_numpy(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, [3, 1000][seed % 2], 70).astype(np.int64)
    r, s = ranks(x)
    for L in (1, 2, 3, 4, 8, 16, 64, 70):
        ref = [np.abs(x[i : i + L] - x[i : i + L].mean()).sum() for i in range(x.size - L + 1)]
        np.testing.assert_allclose(_core.dawa_deviations(x, r, s, L), ref, rtol=1e-12, atol=1e-9)


def zero_noise(n):
    return np.zeros(_core.dawa_n_intervals(n))


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
            p1 = partition_probabilities(x1, eps, pen)
            for k in range(n):
                for v in range(3):
                    x2 = x1.copy()
                    x2[recs[k]] -= 1
                    x2[v] += 1
                    p2 = partition_probabilities(x2, eps, pen)
                    worst = max(worst, float(np.max(np.log(p1 / p2))))
    assert worst <= eps + 1e-6  # truncation of the noise grid at |z| = 300 is far below this
    assert worst > 0.05 * eps  # the partition does depend on the data


def test_dawa_seeded_regression_and_fields():
    x = np.array([5, 0, 0, 1, 9, 9, 8, 2, 0, 0, 3, 4, 30, 31, 0, 1], dtype=np.int64)
    r = mechanisms.dawa(x, 1.0, Generator(seed=7))
    np.testing.assert_array_equal(
        r.histogram,
        [1.25, 1.25, 1.25, 1.25, 11.0, 11.0, 10.25, 10.25, 10.25, 10.25, 10.25, 10.25, 10.25, 10.25, -3.0, 6.0],
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
