"""Pufferfish sums (003 Sec 7.1): Lemma 7.1's ratio bound by brute force; the plan's
sensitivity from public bounds, which are required; exact sums that never fail on data; no field
of a result or its plan that depends on the values but the noisy sum and n."""

import dataclasses
import importlib
import math
from fractions import Fraction

import numpy as np
import pytest

from blowfish_privacy import Generator, mechanisms


def dlap_logpmf(z, scale):
    p = math.exp(-1 / float(scale))
    return math.log((1 - p) / (1 + p)) - abs(z) / float(scale)


@pytest.mark.slow
@pytest.mark.parametrize("k,granularity", [(1.0, 0.25), (1.0, 0.3), (2.5, 1.0), (0.7, 0.7)])
def test_lemma_7_1_ratio_bound_by_brute_force(k, granularity):
    """On a fine discretisation of [0, 20]: for every x and every pair of
    values t in [x-k, x+k), t' in [x+k, x+3k), the released grid sums of
    two databases differing only in that value have output log-ratio at most
    epsilon, over every output."""
    eps = 0.8
    others = np.array([3.3, 7.1])
    r = mechanisms.pufferfish_sum(np.append(others, 1.0), absolute_error=k, epsilon=eps,
                                  generator=Generator(seed=1), granularity=granularity, bounds=(0, 30))
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
    r = mechanisms.pufferfish_sum(vals, absolute_error=1000, epsilon=1.0, generator=Generator(seed=3),
                                  bounds=(0, 10**7))
    assert r.sensitivity == 65 and r.granularity == pytest.approx(62.5)
    assert abs(r.value - vals.sum()) < 10 * math.sqrt(r.variance) + r.n * r.granularity / 2
    assert "+-1000" in r.guarantee and r.geometric_mean is None and r.secure is False


def test_relative_variant_uses_logarithms():
    vals = np.random.default_rng(1).lognormal(10, 1, size=5000)
    r = mechanisms.pufferfish_sum(vals, relative_error=0.1, epsilon=1.0, generator=Generator(seed=3),
                                  bounds=(1, 10**9))
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
        mechanisms.pufferfish_sum([1.0, 2.0], epsilon=1.0, bounds=(0.5, 10), **kwargs)


# ---------------------------------------------------------------------------
# bounds are required: taken from the values they were data, shown back
# ---------------------------------------------------------------------------
class _Untouchable:
    """Values that fail the test if anything reads them."""

    def __array__(self, *args, **kwargs):
        raise AssertionError("the values were read before the bounds were checked")

    def __len__(self):
        raise AssertionError("the values were read before the bounds were checked")

    def __iter__(self):
        raise AssertionError("the values were read before the bounds were checked")


@pytest.mark.parametrize("kw", [dict(absolute_error=1), dict(relative_error=0.1)])
def test_bounds_are_required_before_the_values_are_read(kw):
    from blowfish_privacy.errors import ParameterError

    for call in (lambda: mechanisms.pufferfish_sum(_Untouchable(), epsilon=1.0, generator=Generator(seed=1), **kw),
                 lambda: mechanisms.pufferfish_sum(_Untouchable(), epsilon=1.0, bounds=None, **kw),
                 lambda: pf.plan_pufferfish_sum(1.0, **kw),
                 lambda: pf.plan_pufferfish_sum(1.0, bounds=None, **kw)):
        with pytest.raises(ParameterError, match=r"^bounds is required: the attribute's declared public range "
                                                 r"\(low, high\), 0 <= low <= high \(low > 0 for relative_error\)") as e:
            call()
        assert e.value.parameter == "bounds" and isinstance(e.value, ValueError)


def _data_derived(obj, secrets) -> list:
    """Every place in ``obj`` (fields, nested containers, repr) where one of ``secrets`` shows."""
    found = []

    def walk(x, where):
        if isinstance(x, float) and any(x == v for v in secrets):
            found.append(where)
        elif isinstance(x, dict):
            for k, v in x.items():
                walk(v, f"{where}[{k!r}]")
        elif isinstance(x, (tuple, list)):
            for k, v in enumerate(x):
                walk(v, f"{where}[{k}]")
        elif isinstance(x, str) and any(repr(v) in x or f"{v:g}" in x for v in secrets):
            found.append(where)

    for f in dataclasses.fields(obj):
        if f.name not in ("value", "grid_sum", "geometric_mean", "plan"):
            walk(getattr(obj, f.name), f.name)
    walk(obj.bounds, "bounds")  # read from the plan
    plan = obj.plan
    walk(plan.options, "plan.options")
    walk(plan.describe(), "plan.describe()")
    walk(plan.aggregate, "plan.aggregate")
    walk(plan.guarantee, "plan.guarantee")
    walk(obj.summary(), "summary()")
    text = repr(obj)
    for v in secrets:
        if repr(v) in text:
            found.append("repr")
    return found


@pytest.mark.parametrize("kw,bounds", [(dict(absolute_error=3), (0, 500)), (dict(relative_error=0.2), (1, 500))])
def test_no_field_repr_or_option_carries_a_data_derived_value(kw, bounds):
    """The issue: without bounds, bounds == (0, max(values)) exactly, in repr and plan.options too."""
    vals = np.array([12.375, 4.8125, 371.4375, 97.5625, 2.6875])
    r = mechanisms.pufferfish_sum(vals, epsilon=1.0, generator=Generator(seed=9), bounds=bounds, **kw)
    secrets = [float(vals.max()), float(vals.min()), float(vals.sum()), float(np.log(vals).sum()),
               float(np.log(vals.max())), float(np.log(vals.min()))]
    assert _data_derived(r, secrets) == []
    assert r.bounds == (float(bounds[0]), float(bounds[1])) and r.plan.options["bounds"] == r.bounds
    # the fields that may move with the data are the noisy sum and n (public under this model) only
    other = mechanisms.pufferfish_sum(vals[::-1] * 1.01, epsilon=1.0, generator=Generator(seed=9), bounds=bounds,
                                      **kw)
    moved = {f.name for f in dataclasses.fields(r) if f.name != "plan" and getattr(r, f.name) != getattr(other, f.name)}
    assert moved <= {"value", "grid_sum", "geometric_mean"}
    assert r.plan.options == other.plan.options and repr(r.plan.options) == repr(other.plan.options)
    assert r.plan.describe() == other.plan.describe()
    # the check sees the old behaviour: bounds taken from the values
    top = (float(vals.min()), float(vals.max())) if "relative_error" in kw else (0, float(vals.max()))
    leaky = pf.plan_pufferfish_sum(1.0, bounds=top, **kw).measure(vals, Generator(seed=9))
    assert {"bounds[1]", "plan.options['bounds'][1]"} <= set(_data_derived(leaky, secrets))


# ---------------------------------------------------------------------------
# plan, then measure: the sensitivity comes from public inputs only
# ---------------------------------------------------------------------------
pf = importlib.import_module("blowfish_privacy.mechanisms.pufferfish.sums")


def test_neighbours_near_6_25e13_get_the_same_sensitivity():
    """The old margin read max|data|: 6.25e13 - 1 gave 65, 6.25e13 + 1 gave 66."""
    others = np.array([1.0, 5e13])
    d1, d2 = np.append(others, 6.25e13 - 1), np.append(others, 6.25e13 + 1)
    plan = pf.plan_pufferfish_sum(1.0, bounds=(0, 1e14), absolute_error=1)
    r1, r2 = plan.measure(d1, Generator(seed=1)), plan.measure(d2, Generator(seed=1))
    assert r1.sensitivity == r2.sensitivity == plan.parts[0].sensitivity
    assert r1.scale == r2.scale == plan.parts[0].scale
    f1 = mechanisms.pufferfish_sum(d1, absolute_error=1, epsilon=1.0, generator=Generator(seed=1), bounds=(0, 1e14))
    f2 = mechanisms.pufferfish_sum(d2, absolute_error=1, epsilon=1.0, generator=Generator(seed=1), bounds=(0, 1e14))
    assert f1.sensitivity == f2.sensitivity == r1.sensitivity


@pytest.mark.parametrize("relative", [False, True])
def test_plan_sensitivity_depends_only_on_bounds_k_and_granularity(relative):
    rng = np.random.default_rng(5)
    kw = dict(relative_error=0.2) if relative else dict(absolute_error=3.0)
    bounds = (0.5, 1e12)
    plan = pf.plan_pufferfish_sum(0.7, bounds=bounds, granularity=0.01, **kw)
    sens = plan.parts[0].sensitivity
    k = math.nextafter(math.log1p(0.2), math.inf) if relative else 3.0
    fp = Fraction(1, 10**14) if relative else Fraction(1, 10**15)
    top = math.log(1e12) if relative else 1e12
    want = math.floor(Fraction(4 * k) / Fraction(0.01) + 1 + Fraction(1, 10**9) + fp * Fraction(top) / Fraction(0.01))
    assert sens == want and plan.describe()["parts"][0]["sensitivity"] == want
    for scale in (1.0, 1e6, 1e11, 1e15):  # the last ones lie outside the bounds: clamped
        data = rng.exponential(scale, size=int(rng.integers(0, 50)))
        r = plan.measure(data, Generator(seed=2))
        assert r.sensitivity == sens and r.scale == plan.parts[0].scale and r.epsilon_exact == plan.epsilon_exact
    # another dataset cannot move it; other public inputs do
    assert pf.plan_pufferfish_sum(0.7, bounds=bounds, granularity=0.005, **kw).parts[0].sensitivity > sens
    if not relative:
        assert pf.plan_pufferfish_sum(0.7, bounds=(0.5, 1e16), granularity=0.01, **kw).parts[0].sensitivity > sens


def test_huge_sums_do_not_raise_and_are_exact():
    from blowfish_privacy.audit import RecordingGenerator

    plan = pf.plan_pufferfish_sum(1.0, bounds=(0, 1e18), absolute_error=1)
    vals = np.full(1000, 1e18)
    r = plan.measure(vals, RecordingGenerator())  # adds no noise: the exact grid sum
    assert r.grid_sum == 1000 * 16 * 10**18
    assert r.value == pytest.approx(1e21, rel=1e-12)
    r = mechanisms.pufferfish_sum(vals, absolute_error=1, epsilon=1.0, generator=Generator(seed=4), bounds=(0, 1e18))
    assert abs(r.grid_sum - 16 * 10**21) < 60 * r.scale
    # a noisy sum beyond the float range is inf, not an error
    top = pf.plan_pufferfish_sum(1.0, bounds=(0, 1e308), absolute_error=1e300, granularity=1e300)
    assert top.measure(np.full(10, 1e308), Generator(seed=1)).value == math.inf


@pytest.mark.parametrize("seed", range(5))
def test_exact_sum_of_integer_floats(seed):
    rng = np.random.default_rng(seed)
    x = np.rint(rng.standard_normal(3000) * 10.0 ** rng.integers(0, 30, 3000))
    assert pf._exact_sum(x) == sum(int(v) for v in x.tolist())


def test_values_outside_the_bounds_are_clamped_never_an_error():
    plan = pf.plan_pufferfish_sum(1.0, bounds=(2, 100), absolute_error=4)
    a = plan.measure(np.array([-5.0, 1e9, np.nan, np.inf, -np.inf, 50.0]), Generator(seed=7))
    b = plan.measure(np.array([2.0, 100.0, 2.0, 100.0, 2.0, 50.0]), Generator(seed=7))
    assert a.grid_sum == b.grid_sum and a.value == b.value and a.bounds == (2.0, 100.0)
    rel = pf.plan_pufferfish_sum(1.0, bounds=(1, 10), relative_error=0.1)
    c = rel.measure(np.array([0.0, -3.0, 1e6]), Generator(seed=7))
    d = rel.measure(np.array([1.0, 1.0, 10.0]), Generator(seed=7))
    assert c.grid_sum == d.grid_sum


@pytest.mark.parametrize("kw", [dict(absolute_error=1), dict(relative_error=0.5)])
def test_empty_column_releases_noise_only(kw):
    plan = pf.plan_pufferfish_sum(1.0, bounds=(1, 9), **kw)
    r = plan.measure(np.array([]), Generator(seed=3))
    assert r.n == 0 and math.isfinite(r.value)
    if "relative_error" in kw:
        assert math.isnan(r.geometric_mean)
    assert mechanisms.pufferfish_sum([], epsilon=1.0, generator=Generator(seed=3), bounds=(1, 9), **kw).n == 0


def test_is_a_release_and_plan_then_measure():
    vals = np.random.default_rng(2).exponential(100, size=200)
    plan = pf.plan_pufferfish_sum(0.5, bounds=(0, 5000), absolute_error=10)
    r = plan.measure(vals, Generator(seed=5))
    f = mechanisms.pufferfish_sum(vals, absolute_error=10, epsilon=0.5, generator=Generator(seed=5), bounds=(0, 5000))
    assert r.value == f.value and r.plan is plan and isinstance(r, pf.Release)
    assert r.released_values == r.value and r.mechanism == "pufferfish_sum"
    s = r.summary()
    assert s["sensitivity"] == {"sum": r.sensitivity} and s["epsilon_parts"]["sum"] == str(r.epsilon_exact)
    assert "+-10" in s["guarantee"] and s["expected_error"]["variance"] == r.variance
    d = plan.describe()
    assert d["parts"][0]["name"] == "sum" and plan.aggregate_shape is None and "linear in n" in plan.aggregate
    assert plan.policy is None and d["expected_error"]["variance"] == pytest.approx(r.variance)


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        (dict(bounds=(-1, 5), absolute_error=1), ValueError, r"bounds\[0\] \(low\) must be a finite number >= 0"),
        (dict(bounds=(5, 1), absolute_error=1), ValueError, r"bounds: high must be >= low"),
        (dict(bounds=(0, 5), relative_error=0.1), ValueError, r"bounds: low must be > 0 for relative_error"),
        (dict(bounds=5, absolute_error=1), TypeError, r"bounds must be a pair \(low, high\)"),
        (dict(bounds=(0, float("inf")), absolute_error=1), ValueError, r"bounds\[1\] \(high\) must be a finite"),
        (dict(bounds=(0, 1e300), absolute_error=1e-9), ValueError, "granularity: max|bounds|"),
        (dict(bounds=(0, 5)), ValueError, "exactly one"),
    ],
)
def test_plan_refuses_bad_public_inputs(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        pf.plan_pufferfish_sum(1.0, **kwargs)


def test_measurement_checks_only_public_shape_and_dtype():
    plan = pf.plan_pufferfish_sum(1.0, bounds=(0, 5), absolute_error=1)
    with pytest.raises(ValueError, match=r"values must be a 1-D array, got shape \(2, 2\)"):
        plan.measure(np.zeros((2, 2)), Generator(seed=0))
    with pytest.raises(TypeError, match="values must be a numeric array"):
        plan.measure(np.array(["a"]), Generator(seed=0))


def test_values_of_any_sign_are_clamped_not_refused_or_quoted():
    """Values outside the bounds (negative, zero for logs, NaN) are clamped: no message, whatever they are."""
    for bad, kw in (([1.0, -2.5], dict(absolute_error=1)), ([1.0, -0.125, 0.0], dict(relative_error=0.1))):
        r = mechanisms.pufferfish_sum(bad, epsilon=1.0, generator=Generator(seed=2), bounds=(1, 4), **kw)
        assert r.n == len(bad) and r.bounds == (1.0, 4.0)
