"""Seeded regressions of the DP baselines used by the histogram experiment
(identity and hierarchical come from the cumulative module; their analytic
errors are checked in test_cumulative.py), and DAWA's partition budget."""

from fractions import Fraction

import numpy as np

from blowfish_privacy import Generator, mechanisms

X16 = np.array([5, 0, 0, 1, 9, 9, 8, 2, 0, 0, 3, 4, 30, 31, 0, 1], dtype=np.int64)


def test_identity_seeded_regression():
    r = mechanisms.identity(X16, 1.0, Generator(seed=7), keep_noisy=True)
    np.testing.assert_array_equal(
        r.noisy_cumulative, [10, 7, 5, 6, 22, 34, 44, 42, 44, 43, 47, 49, 80, 111, 109, 120]
    )
    # plain Laplace: only the unbiased total-n step (every cell moved by the same amount)
    noisy = np.diff(r.noisy_cumulative, prepend=0.0)
    np.testing.assert_allclose(r.histogram, noisy + (X16.sum() - noisy.sum()) / X16.size, atol=1e-9)
    assert r.cumulative[-1] == X16.sum()
    p = mechanisms.cumulative.cumulative.identity_projected(X16, 1.0, Generator(seed=7), keep_noisy=True)
    np.testing.assert_array_equal(p.noisy_cumulative, r.noisy_cumulative)  # the same noise, then the projection
    assert p.histogram.min() >= 0 and p.cumulative[-1] == X16.sum() and p.mechanism == "identity_projected"


def test_hierarchical_seeded_regression():
    r = mechanisms.hierarchical(X16, 1.0, Generator(seed=7), fanout=2, keep_noisy=True)
    np.testing.assert_array_equal(
        r.noisy_cumulative, [13, 13, 18, 10, 22, 43, 62, 29, 35, 33, 39, 43, 81, 103, 83, 103]
    )
    assert r.epsilon <= 1.0


def test_dawa_partition_seeded_regression_and_budget():
    p = mechanisms.dawa_partition(X16, 0.5, Generator(seed=7), penalty=2.0)
    assert p.starts.tolist() == [0, 4, 12, 13, 14]
    # noise scale 2 * 2 / (eps / 2) = 8 / eps, spent exactly eps as bounded DP
    assert p.scale == Fraction(16) and p.epsilon_exact == Fraction(1, 2)
    assert p.buckets.tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 3, 4, 4]
