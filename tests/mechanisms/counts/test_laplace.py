"""Laplace mechanism: calibration never spends more than asked, the noise
has the calibrated distribution, bad input is refused with named errors."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats

from blowfish_privacy import Generator, mechanisms
from blowfish_privacy.mechanisms.counts.laplace import calibrate
from blowfish_privacy.noise import MAX_SCALE


def test_release_fields():
    vals = np.array([5, 0, 12, 7])
    r = mechanisms.laplace(vals, sensitivity=2, epsilon=0.5, generator=Generator(seed=1))
    assert r.values.dtype == np.int64 and r.values.shape == (4,)
    assert r.scale == 4 and r.sensitivity == 2
    assert r.epsilon_exact == Fraction(1, 2) and r.epsilon == 0.5
    assert r.secure is False
    p = math.exp(-1 / 4)
    assert r.variance == pytest.approx(2 * p / (1 - p) ** 2)
    assert r.expected_squared_error == pytest.approx(4 * r.variance)


def test_default_generator_is_secure():
    r = mechanisms.laplace([1, 2, 3], sensitivity=1, epsilon=1.0)
    assert r.secure is True


def test_zero_sensitivity_releases_exactly_and_spends_nothing():
    vals = np.array([3, 1, 4])
    r = mechanisms.laplace(vals, sensitivity=0, epsilon=1.0, generator=Generator(seed=1))
    assert np.array_equal(r.values, vals)
    assert r.epsilon == 0 and r.scale == 0


@settings(max_examples=400, deadline=None)
@given(
    sens=st.one_of(st.integers(1, 10**6), st.floats(1e-3, 1e6)),
    eps=st.floats(1e-6, 1e3),
)
@pytest.mark.slow
def test_spent_epsilon_never_exceeds_requested(sens, eps):
    assume(Fraction(sens) / Fraction(eps) <= MAX_SCALE)
    cal = calibrate(sens, eps)
    assert cal.epsilon_exact <= Fraction(eps)
    assert cal.epsilon <= eps
    assert cal.scale >= Fraction(sens) / Fraction(eps)
    # and the rounding costs almost nothing
    assert cal.epsilon_exact >= Fraction(eps) * (1 - Fraction(1, 10**6))


def test_noise_distribution_matches_calibrated_scale():
    n = 300_000
    vals = np.full(n, 1000, dtype=np.int64)
    r = mechanisms.laplace(vals, sensitivity=3, epsilon=0.9, generator=Generator(seed=2))
    noise = r.values - 1000
    p = math.exp(-1 / float(r.scale))
    ks = np.arange(-12, 13)
    obs = np.array([(noise == k).sum() for k in ks] + [(noise < -12).sum() + (noise > 12).sum()])
    pmf = (1 - p) / (1 + p) * p ** np.abs(ks)
    exp = np.concatenate([pmf, [1 - pmf.sum()]]) * n
    assert stats.chisquare(obs, exp).pvalue > 1e-6


def test_exact_privacy_ratio_for_neighbouring_counts():
    # For sensitivity S and scale t, outputs of neighbours whose true values
    # differ by S have pmf ratio exp(S/t) <= exp(epsilon_spent): check with the
    # calibrated numbers for awkward epsilons.
    for eps in [0.1, 1 / 3, 0.7, 2.0, 1e-4]:
        cal = calibrate(2, eps)
        log_ratio = Fraction(2) / cal.scale  # |z| - |z - 2| <= 2 over any z
        assert log_ratio == cal.epsilon_exact <= Fraction(eps)


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        (dict(epsilon=0), ValueError, "epsilon"),
        (dict(epsilon=-1), ValueError, "epsilon"),
        (dict(epsilon=float("nan")), ValueError, "epsilon"),
        (dict(epsilon=float("inf")), ValueError, "epsilon"),
        (dict(epsilon="1"), TypeError, "epsilon"),
        (dict(sensitivity=-1), ValueError, "sensitivity"),
        (dict(sensitivity=float("nan")), ValueError, "sensitivity"),
        (dict(generator=np.random.default_rng()), TypeError, "generator"),
        (dict(sensitivity=1e12, epsilon=1e-3), ValueError, "at most"),
    ],
)
def test_bad_parameters(kwargs, exc, match):
    args = dict(sensitivity=1, epsilon=1.0, generator=Generator(seed=1))
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        mechanisms.laplace(np.array([1, 2]), **args)


@pytest.mark.parametrize("values", [np.array([1.0, 2.5]), np.array([1.0, 2.0]), [True, False], ["a"], np.array([2**64 - 1], dtype=np.uint64)])
def test_non_integer_or_unfit_values_are_refused(values):
    with pytest.raises((TypeError, ValueError), match="values"):
        mechanisms.laplace(values, sensitivity=1, epsilon=1.0, generator=Generator(seed=1))
