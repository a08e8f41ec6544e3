"""Privelet (Haar wavelet) baseline."""

import inspect
import itertools

import numpy as np
import pytest

from blowfish_privacy import Generator, mechanisms
from blowfish_privacy.mechanisms.cumulative.privelet import privelet_variance


def haar_differences(x, h):
    """d of every internal node, level by level (independent of the implementation)."""
    m = 1 << h
    p = np.zeros(m, dtype=np.int64)
    p[: x.size] = x
    out = []
    for level in range(h):
        w = m >> (level + 1)  # width of a child
        for j in range(1 << level):
            a = 2 * j * w
            out.append(p[a : a + w].sum() - p[a + w : a + 2 * w].sum())
    return np.array(out)


@pytest.mark.parametrize("N", [2, 5, 8])
def test_sensitivity_of_the_differences_is_2h(N):
    h = int(np.ceil(np.log2(N)))
    worst = 0
    for recs in itertools.combinations_with_replacement(range(N), 2):
        x1 = np.bincount(recs, minlength=N)
        for a, b in itertools.product(range(N), repeat=2):
            if x1[a] == 0:
                continue
            x2 = x1.copy()
            x2[a] -= 1
            x2[b] += 1
            worst = max(worst, int(np.abs(haar_differences(x2, h) - haar_differences(x1, h)).sum()))
    assert worst == 2 * h


def test_noise_free_limit_reconstructs_exactly():
    x = np.random.default_rng(1).integers(0, 100, 37)
    r = mechanisms.privelet(x, 1e9, Generator(seed=1))
    np.testing.assert_allclose(r.histogram, x, atol=1e-6)


def test_seeded_regression():
    x = np.array([5, 0, 0, 1, 9, 9, 8, 2, 0, 0, 3, 4, 30, 31, 0, 1], dtype=np.int64)
    r = mechanisms.privelet(x, 1.0, Generator(seed=7))
    np.testing.assert_array_equal(
        r.histogram,
        [12.1875, 0.1875, 3.6875, -10.3125, 4.9375, 10.9375, 12.4375, 2.4375, -0.3125, -2.3125, 3.1875, 3.1875, 20.6875, 36.6875, 6.1875, -0.8125],
    )
    assert r.histogram.sum() == x.sum() and r.guarantee == "FullDomain" and r.epsilon <= 1.0


@pytest.mark.slow
def test_empirical_error_matches_the_analytic_variance():
    x = np.random.default_rng(2).integers(0, 20, 13)
    eps = 0.8
    gen = Generator(seed=5)
    errs = np.array([mechanisms.privelet(x, eps, gen).histogram - x for _ in range(3000)])
    v = privelet_variance(x.size, eps)
    # 39,000 squared errors (correlated within a release): relative sd about 2-3%
    assert np.mean(errs**2) == pytest.approx(v, rel=0.08)
    assert abs(errs.mean()) < 0.05 * np.sqrt(v)


def test_privelet_is_plan_then_measure():
    from fractions import Fraction

    from blowfish_privacy.mechanisms.plan import Release
    from blowfish_privacy.mechanisms.cumulative.privelet import plan_privelet

    x = np.random.default_rng(3).integers(0, 50, 13)
    plan = plan_privelet(13, 0.8)
    (part,) = plan.parts
    assert part.sensitivity == 8 and part.count == 15 and part.epsilon <= Fraction(4, 5)
    assert plan.expected_error["total_squared_error"] == pytest.approx(13 * privelet_variance(13, 0.8))
    a = plan.measure(x, Generator(seed=4))
    np.testing.assert_array_equal(a.histogram, mechanisms.privelet(x, 0.8, Generator(seed=4)).histogram)
    assert isinstance(a, Release) and a.plan is plan and a.summary()["sensitivity"] == {"coefficients": 8}
    with pytest.raises(ValueError, match=r"planned shape \(13,\)"):
        plan.measure(x[:5], Generator(seed=4))
    one = plan_privelet(1, 1.0)
    assert one.epsilon_exact == 0 and one.measure(np.array([7])).histogram.tolist() == [7.0]
    assert "\nPrivacy\n-------\n" in inspect.getdoc(mechanisms.privelet)
