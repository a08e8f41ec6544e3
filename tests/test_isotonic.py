"""Isotonic regression in the C core (csrc/isotonic.h): against scipy's
pool-adjacent-violators, a brute-force box-constrained oracle on tiny
inputs, and the projection property."""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import isotonic_regression

from blowfish_privacy import _isotonic

INF = np.inf


def _scipy(y, w=None):
    return isotonic_regression(y, weights=w, increasing=True).x


def _close(a, b, y):
    scale = 1.0 + np.abs(y).max(initial=0.0)
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9 * scale)


def _noisy_cumulative(rng, n, scale=10.0):
    return np.cumsum(rng.integers(0, 5, size=n)).astype(float) + rng.laplace(0, scale, size=n)


# -- against scipy ------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 10, 100, 1000, 10_000])
@pytest.mark.parametrize("kind", ["normal", "cumulative", "decreasing", "ties", "sorted"])
@pytest.mark.parametrize("weighted", [False, True])
def test_matches_scipy(n, kind, weighted):
    rng = np.random.default_rng(n + 7 * len(kind) + weighted)
    y = {
        "normal": lambda: rng.normal(0, 1, n),
        "cumulative": lambda: _noisy_cumulative(rng, n),
        "decreasing": lambda: -np.arange(n, dtype=float) + rng.normal(0, 0.1, n),
        "ties": lambda: rng.integers(0, 3, n).astype(float),
        "sorted": lambda: np.sort(rng.normal(0, 1, n)),
    }[kind]()
    w = rng.uniform(0.01, 10.0, n) if weighted else None
    got = _isotonic.isotonic(y, w)
    assert got.dtype == np.float64 and got.shape == (n,)
    _close(got, _scipy(y, w), y)
    if kind == "sorted":
        np.testing.assert_array_equal(got, y)


_values = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)


@pytest.mark.slow
@settings(max_examples=1000, deadline=None)
@given(st.lists(_values, max_size=60), st.data())
def test_matches_scipy_hypothesis(values, data):
    y = np.array(values, dtype=float)
    _close(_isotonic.isotonic(y), _scipy(y) if len(y) else y, y)
    w = np.array(
        data.draw(st.lists(st.floats(1e-3, 1e3), min_size=len(y), max_size=len(y))), dtype=float
    )
    if len(y):
        _close(_isotonic.isotonic(y, w), _scipy(y, w), y)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(-3, 3), min_size=1, max_size=40))
def test_small_integers_with_ties(values):
    y = np.array(values, dtype=float)
    _close(_isotonic.isotonic(y), _scipy(y), y)


def test_unit_weights_equal_no_weights():
    y = _noisy_cumulative(np.random.default_rng(3), 5000)
    np.testing.assert_allclose(_isotonic.isotonic(y, np.ones_like(y)), _isotonic.isotonic(y), rtol=1e-12)


def test_pools_to_the_weighted_mean():
    np.testing.assert_allclose(_isotonic.isotonic([3.0, 1.0]), [2.0, 2.0])
    np.testing.assert_allclose(_isotonic.isotonic([3.0, 1.0], [1.0, 3.0]), [1.5, 1.5])
    np.testing.assert_allclose(_isotonic.isotonic([1.0, 3.0, 2.0, 0.0]), [1.0, 5 / 3, 5 / 3, 5 / 3])
    assert _isotonic.isotonic([]).shape == (0,)


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(st.lists(_values, min_size=1, max_size=80))
def test_output_is_monotone_and_keeps_the_weighted_sum(values):
    y = np.array(values, dtype=float)
    x = _isotonic.isotonic(y)
    assert np.all(np.diff(x) >= 0)
    # Each pooled block sits at its mean, so the total is unchanged.
    assert x.sum() == pytest.approx(y.sum(), rel=1e-9, abs=1e-6)


# -- box constraints ------------------------------------------------------------


def _box_brute_force(y, w, lower, upper):
    """Minimiser over candidates: at the optimum each maximal run of equal
    values is a consecutive block whose value is either its weighted mean
    (if strictly inside the box) or a bound; enumerate all of them."""
    n = len(y)
    best, best_obj = None, INF
    for cuts in itertools.product([False, True], repeat=n - 1):
        bounds = [0] + [i + 1 for i, c in enumerate(cuts) if c] + [n]
        blocks = list(zip(bounds[:-1], bounds[1:]))
        choices = []
        for a, b in blocks:
            mean = np.dot(w[a:b], y[a:b]) / w[a:b].sum()
            choices.append({mean, lower, upper})
        for values in itertools.product(*choices):
            x = np.concatenate([np.full(b - a, v) for (a, b), v in zip(blocks, values)])
            if np.any(np.diff(x) < 0) or x.min() < lower or x.max() > upper:
                continue
            obj = float(np.dot(w, (x - y) ** 2))
            if obj < best_obj:
                best, best_obj = x, obj
    return best


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.floats(-10, 10), min_size=1, max_size=6),
    st.floats(-12, 12),
    st.floats(0, 10),
    st.booleans(),
    st.data(),
)
@pytest.mark.slow
def test_clipping_is_the_box_constrained_solution(values, lower, width, weighted, data):
    y = np.array(values, dtype=float)
    upper = lower + width
    if weighted:
        w = np.array(data.draw(st.lists(st.floats(0.1, 10), min_size=len(y), max_size=len(y))))
    else:
        w = np.ones(len(y))
    got = _isotonic.isotonic(y, w if weighted else None, lower=lower, upper=upper)
    assert np.all(got >= lower) and np.all(got <= upper)
    want = _box_brute_force(y, w, lower, upper)
    obj = lambda x: float(np.dot(w, (x - y) ** 2))  # noqa: E731
    assert obj(got) <= obj(want) * (1 + 1e-12) + 1e-12
    if not np.allclose(got, want, rtol=1e-9, atol=1e-9):
        # The brute force compares objectives in floating point, so nearly
        # tied candidates can win over the true minimiser: y = [-6e-8, 0, 4]
        # in the box [-1, 0] gives [-3e-8, -3e-8, 0] (objective 16 + 2e-15,
        # which rounds to 16) instead of [-6e-8, 0, 0].  Then the two may
        # differ, but only that little.
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_bounds_clip_to_a_point():
    y = np.array([5.0, -2.0, 7.0])
    np.testing.assert_array_equal(_isotonic.isotonic(y, lower=1.5, upper=1.5), [1.5, 1.5, 1.5])
    np.testing.assert_array_equal(_isotonic.isotonic(y, lower=0.0), _scipy(y).clip(0.0))


# -- projection property --------------------------------------------------------


@settings(max_examples=3000, deadline=None)
@given(
    n=st.integers(1, 50),
    seed=st.integers(0, 2**32 - 1),
    weighted=st.booleans(),
    boxed=st.booleans(),
)
@pytest.mark.slow
def test_projection_is_closer_to_every_feasible_point(n, seed, weighted, boxed):
    rng = np.random.default_rng(seed)
    lower, upper = (-5.0, 5.0) if boxed else (-INF, INF)
    t = np.sort(rng.uniform(-5, 5, n))  # feasible: monotone, inside the box
    y = t + rng.normal(0, rng.uniform(0.1, 5), n)
    w = rng.uniform(0.05, 20, n) if weighted else np.ones(n)
    x = _isotonic.isotonic(y, w if weighted else None, lower=lower, upper=upper)
    assert np.all(np.diff(x) >= 0) and np.all(x >= lower) and np.all(x <= upper)
    d_x = np.dot(w, (x - t) ** 2)
    d_y = np.dot(w, (y - t) ** 2)
    assert d_x <= d_y * (1 + 1e-12) + 1e-12


# -- bad inputs -----------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"y": [1.0, np.nan]}, "y"),
        ({"y": [1.0, np.inf]}, "y"),
        ({"y": [[1.0, 2.0]]}, "y"),
        ({"y": [1.0, 2.0], "weights": [1.0, 0.0]}, "weights"),
        ({"y": [1.0, 2.0], "weights": [1.0, -1.0]}, "weights"),
        ({"y": [1.0, 2.0], "weights": [1.0, np.nan]}, "weights"),
        ({"y": [1.0, 2.0], "weights": [np.inf, 1.0]}, "weights"),
        ({"y": [1.0, 2.0], "weights": [-0.0, 1.0]}, "weights"),
        ({"y": [1.0, 2.0], "weights": [1.0]}, "weights"),
        ({"y": [1.0, 2.0], "lower": 1.0, "upper": 0.0}, "lower"),
        ({"y": [1.0, 2.0], "lower": np.nan}, "lower"),
    ],
)
def test_bad_inputs_raise(kwargs, name):
    with pytest.raises(ValueError, match=name):
        _isotonic.isotonic(**kwargs)


def test_bad_value_found_in_a_long_input():
    y = np.zeros(10_000)
    y[7777] = np.nan
    with pytest.raises(ValueError, match=r"y must be finite") as exc:
        _isotonic.isotonic(y)
    assert "7777" not in str(exc.value)  # no position or value of the data in a message
    w = np.ones(10_000)
    w[4242] = 0.0
    with pytest.raises(ValueError, match=r"weights must be finite and > 0") as exc:
        _isotonic.isotonic(np.zeros(10_000), w)
    assert "4242" not in str(exc.value)
    w[4242] = 5e-324  # the smallest positive double is a valid weight
    np.testing.assert_array_equal(_isotonic.isotonic(np.zeros(10_000), w), np.zeros(10_000))


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-50, 50), min_size=1, max_size=300), st.sampled_from([1, 2, 3, 5, 9, 64, 128]),
       st.integers(1, 4))
def test_chunked_unit_isotonic_equals_pava_on_integers(vals, chunk, threads):
    # integer values: block sums are exact, so the chunked merge must give
    # the serial PAVA's answer bit for bit, for any chunk length and threads
    y = np.array(vals, dtype=np.float64)
    expect = _isotonic.isotonic(y, None, -20.0, 30.0)
    got = y.copy()
    _isotonic.isotonic_unit_chunked(got, -20.0, 30.0, threads=threads, chunk=chunk)
    assert np.array_equal(got, expect)


@pytest.mark.slow
def test_chunked_unit_isotonic_default_chunks_and_threads():
    rng = np.random.default_rng(5)
    n = 3 * _isotonic.ISOTONIC_CHUNK + 17
    y = np.cumsum(rng.normal(0.2, 4.0, n))
    expect = _isotonic.isotonic(y, None, 0.0, float(n))
    one, two = y.copy(), y.copy()
    _isotonic.isotonic_unit_chunked(one, 0.0, float(n), threads=1)
    _isotonic.isotonic_unit_chunked(two, 0.0, float(n), threads=2)
    assert np.array_equal(one, two)  # independent of the thread count
    assert np.allclose(one, expect, rtol=0, atol=1e-6 * np.abs(y).max())
    assert np.all(np.diff(one) >= 0)


def test_chunked_unit_isotonic_rejects_bad_input():
    with pytest.raises(ValueError, match="finite"):
        _isotonic.isotonic_unit_chunked(np.array([1.0, np.nan]), 0.0, 1.0)
    with pytest.raises(ValueError, match="chunk"):
        _isotonic.isotonic_unit_chunked(np.array([1.0, 2.0]), 0.0, 1.0, chunk=0)
    with pytest.raises(ValueError, match="lower"):
        _isotonic.isotonic_unit_chunked(np.array([1.0, 2.0]), 1.0, 0.0)
    y = np.empty(0)
    _isotonic.isotonic_unit_chunked(y, 0.0, 1.0)


def test_chunked_unit_isotonic_no_write_on_bad_input():
    rng = np.random.default_rng(8)
    y = np.round(rng.normal(size=50) * 5)
    expect = _isotonic.isotonic(y, None, -3.0, 3.0)
    got = y.copy()
    _isotonic.isotonic_unit_chunked(got, -3.0, 3.0, threads=2, chunk=7)
    np.testing.assert_array_equal(got, expect)
    bad = y.copy()
    bad[-1] = np.nan
    before = bad.copy()
    with pytest.raises(ValueError, match="finite"):
        _isotonic.isotonic_unit_chunked(bad, 0.0, 1.0, threads=2, chunk=7)
    np.testing.assert_array_equal(bad, before)  # checked before anything is written


def _chunked_pava_reference(y, chunk, lower, upper):
    """The chunked unit-weight PAVA written plainly: each chunk's stack, the
    stacks merged left to right with the same comparisons and the same
    order of additions, then every block's clipped mean."""
    sums, lens = [], []
    for c0 in range(0, len(y), chunk):
        stack_s, stack_w = [], []
        for v in y[c0:c0 + chunk]:
            s, w = float(v), 1.0
            while stack_s and stack_s[-1] * w > s * stack_w[-1]:
                s += stack_s.pop()
                w += stack_w.pop()
            stack_s.append(s)
            stack_w.append(w)
        for s, w in zip(stack_s, stack_w):
            while sums and sums[-1] * w > s * lens[-1]:
                s += sums.pop()
                w += lens.pop()
            sums.append(s)
            lens.append(w)
    out = []
    for s, w in zip(sums, lens):
        out += [min(max(s / w, lower), upper)] * int(w)
    return np.array(out)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=1, max_size=300),
       st.sampled_from([1, 2, 3, 7, 12, 64, 128]), st.integers(1, 3))
def test_chunked_unit_isotonic_has_the_bits_of_the_plain_chunked_pava(vals, chunk, threads):
    # float data: pooled sums round, so the blocks found by position (the
    # parallel join and fill) must repeat the plain algorithm's additions
    y = np.cumsum(np.array(vals))
    want = _chunked_pava_reference(y, chunk, -5e3, 5e3)
    got = y.copy()
    _isotonic.isotonic_unit_chunked(got, -5e3, 5e3, threads=threads, chunk=chunk)
    np.testing.assert_array_equal(got, want)
