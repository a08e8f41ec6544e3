"""Fuzzing every public mechanism, plan and helper of ``blowfish_privacy.mechanisms`` (issue 23).

Each case asserts "a clear exception (TypeError, ValueError, OverflowError,
NotImplementedError: every documented type) or a right result": a
histogram mechanism refuses exactly the histograms the one input check
refuses (``mechanisms.histogram.check_counts``) and releases finite values
of the planned shape otherwise; a plan called with hostile public
arguments (sizes, shapes, epsilons, options) returns a :class:`Plan` or
refuses, and a returned plan measures a histogram of its shape.  Inputs
vary dtype, byte order, alignment and strides (``int_vectors`` of
``test_fuzz_core``), extremes, NaN/inf, huge and tiny epsilons.  The
default profile is a few examples per test; ``BLOWFISH_FUZZ_LONG=1 pytest
-m slow tests/test_fuzz_mechanisms.py`` runs a longer one.  The same file
runs under ASan/UBSan in ``.ci/sanitize``.
"""

from __future__ import annotations

import inspect
import math
import os
import signal
import sys
from contextlib import contextmanager
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plan_cases import HISTOGRAMS, ONE_D, PLANS, TWO_D, Reason, square, uncovered
from test_fuzz_core import I64_MAX, int_vectors

from blowfish_privacy import Domain, Generator, Ordinal, baselines, registry
from blowfish_privacy import mechanisms as M
from blowfish_privacy.policy.constraints import Marginal, RangeCount

CLEAR = (TypeError, ValueError, OverflowError, NotImplementedError)

FAST = settings(max_examples=int(os.environ.get("FUZZ_N", 30)), deadline=None, suppress_health_check=[HealthCheck.too_slow])
LONG = settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
long_profile = pytest.mark.skipif(os.environ.get("BLOWFISH_FUZZ_LONG") != "1",
                                  reason="set BLOWFISH_FUZZ_LONG=1 for the long profile")


class Hang(Exception):
    """A call outlived the hang guard (not a timing test: the guard is generous)."""


@contextmanager
def hang_guard(seconds: int = 30):
    def alarm(*_):
        raise Hang()

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _call(fn, *args, **kw):
    """fn(...), or None when it raised a clear exception; anything else fails the test."""
    with hang_guard():
        try:
            return fn(*args, **kw)
        except CLEAR:
            return None


# -- the histogram mechanisms: one case per registered plan that measures a histogram --------------------------


def test_every_registered_plan_has_a_histogram_case():
    missing, unknown = uncovered(registry.plans())
    assert not missing, f"registered plans with no entry in tests/plan_cases.py: {missing}"
    assert not unknown, f"entries in tests/plan_cases.py for plans no longer registered: {unknown}"
    neither = sorted(name for name, case in PLANS.items()
                     if not (case.histogram.text.strip() if isinstance(case.histogram, Reason) else case.histogram))
    assert not neither, f"plans with neither a histogram case nor a reason (tests/plan_cases.py): {neither}"
    assert len(HISTOGRAMS) == sum(len(c.histogram) for c in PLANS.values() if not isinstance(c.histogram, Reason)), (
        "two plans name a histogram case alike")


def _refuses(name, shape) -> bool:
    """A valid histogram the mechanism refuses by its documentation (``Histogram.refuses``)."""
    refuses = HISTOGRAMS[name].refuses
    return refuses is not None and refuses(shape)

EPSILONS = st.one_of(
    st.sampled_from([1.0, 0.5, Fraction(1, 3), 3, 2**20, 1e300, sys.float_info.max]),
    st.floats(min_value=1e-3, max_value=1e6),
)
#: Refused, or (tiny ones) spent exactly: epsilons above the largest float have no float value.
TINY_OR_BAD_EPSILONS = st.sampled_from(
    [0, -1, 0.0, -0.0, float("nan"), float("inf"), -float("inf"), 1e-300, Fraction(1, 2**1000), "1", None, True,
     np.float64("nan"), [1.0], complex(1, 0), 2**2000, Fraction(10**400, 3)])


def _valid_counts(arr, vals, shape) -> bool:
    return (vals is not None and arr.shape == shape and len(vals) >= 1 and all(v >= 0 for v in vals)
            and sum(vals) <= I64_MAX)


def _check_release(name, out, arr, vals):
    values = np.asarray(out.released_values, dtype=np.float64)
    assert np.isfinite(values).all(), name
    assert 0 <= out.epsilon_exact
    if name.startswith(("identity", "hierarchical", "hb", "ordered")) and hasattr(out, "n"):
        assert out.n == sum(vals), name


@FAST
@given(int_vectors(min_size=0, max_size=9), st.sampled_from(sorted(ONE_D)), EPSILONS)
def test_histogram_mechanisms_1d(case, name, epsilon):
    arr, vals = case
    out = _call(ONE_D[name], arr, epsilon, Generator(seed=11))
    if not _valid_counts(arr, vals, arr.shape) or arr.ndim != 1:
        assert out is None, name
        return
    if out is None:
        # documented refusals of a valid histogram: totals so large that noisy
        # values could leave int64, Line() on a single value (no secret edge)
        assert sum(vals) > 2**61 or _refuses(name, arr.shape), name
        return
    _check_release(name, out, arr, vals)


@FAST
@given(st.integers(1, 3), st.integers(1, 3), st.data(), st.sampled_from(sorted(TWO_D)), EPSILONS)
def test_histogram_mechanisms_2d(r, c, data, name, epsilon):
    arr, vals = data.draw(int_vectors(min_size=r * c, max_size=r * c))
    arr = arr.reshape(r, c)  # keeps the byte order, the alignment or the strides where it can
    out = _call(TWO_D[name], arr, epsilon, Generator(seed=12))
    if vals is None or arr.ndim != 2 or not _valid_counts(arr, vals, arr.shape):
        assert out is None, name
        return
    if out is None:
        assert sum(vals) > 2**61 or _refuses(name, (r, c)), name
        return
    assert np.asarray(out.released_values).shape == (r, c), name
    _check_release(name, out, arr, vals)


@FAST
@given(st.sampled_from(sorted(ONE_D) + sorted(TWO_D)), TINY_OR_BAD_EPSILONS)
def test_histogram_mechanisms_refuse_bad_epsilons(name, epsilon):
    fn = ONE_D.get(name) or TWO_D[name]
    hist = np.array([3, 1, 0, 2]) if name in ONE_D else np.array([[3, 1], [0, 2]])
    out = _call(fn, hist, epsilon, Generator(seed=13))
    bad = (isinstance(epsilon, (bool, str, list, complex)) or epsilon is None
           or epsilon != epsilon or not 0 < epsilon <= sys.float_info.max)
    if bad:
        assert out is None, name
    # a tiny epsilon is refused (noise scale above the sampler's largest) or spent exactly
    elif out is not None:
        assert out.epsilon_exact <= Fraction(epsilon)


# -- plans with hostile public arguments ----------------------------------------------------------------------------

HOSTILE = st.one_of(
    st.integers(-3, 12),
    st.sampled_from([0, 1, 2, 2**31, 2**40, 2**62, 2**63, 2**64, 2**100, -(2**63), 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([None, True, False, "auto", "optimal", "", "x", Fraction(1, 3), Fraction(7, 2), 0.25, 0.85,
                     b"1", (), (1, 2), [3], {"a": 1}, object()]),
    st.tuples(st.integers(-2, 5), st.integers(-2, 5)),
)

PLANS_FUZZED = sorted(registry.plans())


def test_every_plan_is_fuzzed():
    """A plan whose first parameter is epsilon has no first argument to draw; every other plan has one."""
    missing, unknown = uncovered(registry.plans())
    assert not missing and not unknown, f"tests/plan_cases.py misses {missing}; has unregistered {unknown}"
    for name, plan in registry.plans().items():
        first = next(iter(inspect.signature(plan).parameters))
        assert (PLANS[name].fuzz.first is None) == (first == "epsilon"), (name, first)


@pytest.mark.slow
@FAST
@given(st.sampled_from(PLANS_FUZZED), st.data())
def test_plans_take_hostile_arguments(name, data):
    fuzz = PLANS[name].fuzz
    first = data.draw(st.one_of(fuzz.first, HOSTILE) if fuzz.first is not None else st.none())
    epsilon = data.draw(st.one_of(EPSILONS, TINY_OR_BAD_EPSILONS, HOSTILE))
    params = [p for p in inspect.signature(registry.plans()[name]).parameters.values()
              if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name != "epsilon"]
    options = {p.name: data.draw(HOSTILE) for p in params if data.draw(st.booleans())}
    plan = _call(fuzz.call, registry.plans()[name], first, epsilon, options)
    if plan is None:
        return
    assert isinstance(plan, M.Plan)
    assert 0 <= plan.epsilon_exact
    assert plan.memory_bytes >= 0
    shape = plan.aggregate_shape
    if shape is not None and fuzz.measure and math.prod(shape) <= 64:
        hist = np.arange(math.prod(shape), dtype=np.int64).reshape(shape) % 3
        out = _call(plan.measure, hist, Generator(seed=14))
        assert out is None or np.isfinite(np.asarray(out.released_values, dtype=np.float64)).all(), name


# -- helpers and the mechanisms that take points or values ----------------------------------------------------------


@FAST
@given(HOSTILE)
def test_branching_rules(size):
    for fn in (baselines.hb_branching, baselines.hb2d_branching):
        b = _call(fn, size)
        ok = isinstance(size, int) and not isinstance(size, bool) and size >= 1
        if not ok:
            assert b is None
        else:
            assert b is not None and 2 <= b <= max(size, 2)


@FAST
@given(HOSTILE)
def test_hilbert_order(k):
    out = _call(M.hilbert_order, k)
    if out is not None:
        n = int(k) ** 2
        assert sorted(out.tolist()) == list(range(n))


@FAST
@given(HOSTILE, st.one_of(EPSILONS, TINY_OR_BAD_EPSILONS))
def test_calibrate(sensitivity, epsilon):
    cal = _call(M.calibrate, sensitivity, epsilon)
    if cal is not None:
        assert cal.epsilon_exact <= Fraction(epsilon)


@FAST
@given(st.data())
def test_laplace_and_pufferfish_values(data):
    arr, vals = data.draw(int_vectors(min_size=0, max_size=8))
    eps = data.draw(st.one_of(EPSILONS, TINY_OR_BAD_EPSILONS))
    out = _call(M.laplace, arr, sensitivity=data.draw(HOSTILE), epsilon=eps, generator=Generator(seed=15))
    if out is not None:
        assert vals is not None and out.values.shape == arr.shape
    bounds = data.draw(st.one_of(st.tuples(st.integers(-10, 0), st.integers(1, 10)), HOSTILE))
    for values in (arr, arr.astype(np.float64) if vals is not None else arr):
        out = _call(M.pufferfish_sum, values, absolute_error=data.draw(st.one_of(st.just(1), HOSTILE)),
                    epsilon=eps, bounds=bounds, generator=Generator(seed=16))
        if out is not None:
            assert math.isfinite(float(out.released_values.reshape(-1)[0]))


POINTS = st.one_of(
    st.lists(st.lists(st.integers(-3, 6), min_size=2, max_size=2), min_size=0, max_size=6).map(np.array),
    st.lists(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=2, max_size=2), max_size=4).map(np.array),
    st.sampled_from([np.zeros((0, 2), dtype=np.int64), np.zeros((3, 3), dtype=np.int64), np.array([[2**63, 0]], dtype=np.uint64),
                     np.array([[1, 2]], dtype=object), np.array([[True, False]]), np.ones(4, dtype=np.int64)]),
)


@pytest.mark.slow
@FAST
@given(POINTS, st.one_of(EPSILONS, TINY_OR_BAD_EPSILONS), st.sampled_from([1, 2, 3]), st.data())
def test_kmeans_family(points, epsilon, k, data):
    pol = square(4, 4)
    res = _call(M.kmeans, points, pol, epsilon, Generator(seed=17), k=k, iterations=2)
    if res is not None:
        assert np.isfinite(res.centroids).all() and res.centroids.shape == (k, 2)
    res = _call(M.kmeans_grid, points, pol, epsilon, Generator(seed=18), k=k, cell=2, iterations=2, restarts=1)
    if res is not None:
        assert np.isfinite(res.centroids).all()
    centroids = data.draw(st.one_of(
        st.lists(st.lists(st.floats(-1, 5), min_size=2, max_size=2), min_size=1, max_size=3).map(np.array),
        POINTS))
    val = _call(M.kmeans_objective, points, centroids)
    assert val is None or val >= 0 or math.isnan(val) is False
    init = _call(M.lloyd, points, pol.domain, centroids, iterations=2)
    if init is not None:
        assert np.asarray(init).shape == np.asarray(centroids).shape
    refs = data.draw(POINTS)
    sens = _call(M.kmeans_sensitivity, pol, centroids, refs)
    if sens is not None:
        assert sens.sum >= 0 and sens.size in (0, 2)


@FAST
@given(st.one_of(EPSILONS, TINY_OR_BAD_EPSILONS), HOSTILE, st.sampled_from(["linear", "nearest", "cubic", None]))
def test_choose_cell_and_grid_sensitivity(epsilon, n, interpolation):
    pol = square(4, 4)
    cell = _call(M.choose_cell, pol, epsilon, n, interpolation)
    if cell is not None:
        assert 1 <= cell <= 4
    out = _call(M.grid_sensitivity, pol, n, interpolation)
    if out is not None:
        assert out[0] >= 0


@FAST
@given(st.data())
def test_consistent_estimate(data):
    dom = Domain([Ordinal("a", 0, 1), Ordinal("b", 0, 2)])
    noisy = data.draw(st.one_of(
        st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=6, max_size=6).map(np.array),
        st.lists(st.integers(-5, 5), min_size=0, max_size=8).map(np.array), HOSTILE))
    constraints = data.draw(st.sampled_from([
        [], [Marginal(["a"], answers=[2, 4])], [Marginal(["a"], answers=[2, 4]), Marginal(["b"], answers=[1, 2, 3])],
        [RangeCount(0, 0, answer=3)], [Marginal(["a"])], "x", [None]]))
    method = data.draw(st.sampled_from(["auto", "cuboids", "cg", "x", None]))
    out = _call(M.consistent_estimate, noisy, dom, constraints, method=method, nonnegative=data.draw(st.booleans()))
    if out is not None:
        est = np.asarray(out[0], dtype=np.float64)
        assert est.size == 6 and np.isfinite(est).all()


# -- a longer profile -----------------------------------------------------------------------------------------------


@pytest.mark.slow
@long_profile
@LONG
@given(int_vectors(min_size=0, max_size=20), st.sampled_from(sorted(ONE_D)), EPSILONS)
def test_slow_histogram_mechanisms_1d(case, name, epsilon):
    test_histogram_mechanisms_1d.hypothesis.inner_test(case, name, epsilon)


@pytest.mark.slow
@long_profile
@LONG
@given(st.sampled_from(PLANS_FUZZED), st.data())
def test_slow_plans_take_hostile_arguments(name, data):
    test_plans_take_hostile_arguments.hypothesis.inner_test(name, data)
