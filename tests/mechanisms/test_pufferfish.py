"""Pufferfish sums (003 Sec 7.1): Lemma 7.1's ratio bound by brute force."""

import math

import numpy as np
import pytest

from blowfish_privacy import Generator, mechanisms


def dlap_logpmf(z, scale):
    p = math.exp(-1 / float(scale))
    return math.log((1 - p) / (1 + p)) - abs(z) / float(scale)


@pytest.mark.parametrize("k,granularity", [(1.0, 0.25), (1.0, 0.3), (2.5, 1.0), (0.7, 0.7)])
def test_lemma_7_1_ratio_bound_by_brute_force(k, granularity):
    """On a fine discretisation of [0, 20]: for every x and every pair of
    values t in [x-k, x+k), t' in [x+k, x+3k), the released grid sums of
    two databases differing only in that value have output log-ratio at most
    epsilon, over every output."""
    eps = 0.8
    others = np.array([3.3, 7.1])
    r = mechanisms.pufferfish_sum(np.append(others, 1.0), absolute_error=k, epsilon=eps,
                                  generator=Generator(seed=1), granularity=granularity)
    g, scale = r.granularity, r.scale
    base = int(np.rint(others / g).sum())
    ku = round(k * 20)  # values on a grid of 1/20, intervals half-open, in integers
    worst = 0.0
    for x in range(ku, 400):
        t = np.arange(x - ku, x + ku) / 20
        t2 = np.arange(x + ku, x + 3 * ku) / 20
        s1 = np.unique(base + np.rint(t / g).astype(int))
        s2 = np.unique(base + np.rint(t2 / g).astype(int))
        dmax = max(abs(s1.max() - s2.min()), abs(s2.max() - s1.min()))
        outs = np.arange(min(s1.min(), s2.min()) - 3, max(s1.max(), s2.max()) + 4)
        for a in (s1.min(), s1.max()):
            for b in (s2.min(), s2.max()):
                lr = max(abs(dlap_logpmf(o - a, scale) - dlap_logpmf(o - b, scale)) for o in outs)
                worst = max(worst, lr)
        assert dmax <= r.sensitivity
    assert worst <= r.epsilon + 1e-9
    assert r.epsilon <= eps


def test_absolute_sum_is_close_and_reports_its_guarantee():
    vals = np.random.default_rng(0).exponential(50_000, size=10_000)
    r = mechanisms.pufferfish_sum(vals, absolute_error=1000, epsilon=1.0, generator=Generator(seed=3))
    assert r.sensitivity == 65 and r.granularity == pytest.approx(62.5)
    assert abs(r.value - vals.sum()) < 10 * math.sqrt(r.variance) + r.n * r.granularity / 2
    assert "+-1000" in r.guarantee and r.geometric_mean is None and r.secure is False


def test_relative_variant_uses_logarithms():
    vals = np.random.default_rng(1).lognormal(10, 1, size=5000)
    r = mechanisms.pufferfish_sum(vals, relative_error=0.1, epsilon=1.0, generator=Generator(seed=3))
    assert r.value == pytest.approx(np.log(vals).sum(), abs=10 * math.sqrt(r.variance) + r.n * r.granularity / 2)
    assert r.geometric_mean == pytest.approx(math.exp(np.log(vals).mean()), rel=0.05)
    assert "factor 1.1" in r.guarantee


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(absolute_error=0), "absolute_error"),
        (dict(absolute_error=-1), "absolute_error"),
        (dict(relative_error=0), "relative_error"),
        (dict(), "exactly one"),
        (dict(absolute_error=1, relative_error=0.1), "exactly one"),
        (dict(absolute_error=1, granularity=0), "granularity"),
    ],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        mechanisms.pufferfish_sum([1.0, 2.0], epsilon=1.0, **kwargs)


def test_bad_values():
    with pytest.raises(ValueError, match=">= 0"):
        mechanisms.pufferfish_sum([1.0, -2.0], absolute_error=1, epsilon=1.0)
    with pytest.raises(ValueError, match="> 0"):
        mechanisms.pufferfish_sum([1.0, 0.0], relative_error=0.1, epsilon=1.0)
    with pytest.raises(ValueError, match="finite"):
        mechanisms.pufferfish_sum([1.0, float("nan")], absolute_error=1, epsilon=1.0)
