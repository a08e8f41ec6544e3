"""Tree kernels of the C core (csrc/tree.h): prefix sums and level sums
against numpy and exact Python integers, and the two-pass weighted least
squares consistency against a dense generalised least squares solution."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.linalg import null_space

from blowfish_privacy import _isotonic, _tree

I64_MIN = int(np.iinfo(np.int64).min)
I64_MAX = int(np.iinfo(np.int64).max)
INF = np.inf


def _fits(v: int) -> bool:
    return I64_MIN <= v <= I64_MAX


# -- prefix sums --------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 2, 7, 1000, 100_003])
def test_prefix_sum_matches_numpy(n):
    x = np.random.default_rng(n).integers(-(10**12), 10**12, size=n)
    out = _tree.prefix_sum(x)
    assert out.dtype == np.int64 and out.shape == (n,)
    np.testing.assert_array_equal(out, np.cumsum(x))
    assert out is not x


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(-(2**40), 2**40), max_size=300))
def test_prefix_sum_hypothesis(values):
    x = np.array(values, dtype=np.int64)
    np.testing.assert_array_equal(_tree.prefix_sum(x), np.cumsum(x))


@pytest.mark.parametrize(
    "values",
    [
        [I64_MAX, 1],
        [I64_MIN, -1],
        [I64_MAX, 1, -1],  # the partial sum overflows although the total fits
        [5, I64_MAX - 4, 0],
        [0, 0, I64_MIN, -3, 10],
    ],
)
def test_prefix_sum_overflow_raises(values):
    with pytest.raises(OverflowError):
        _tree.prefix_sum(np.array(values, dtype=np.int64))


def test_prefix_sum_extremes_that_fit():
    x = np.array([I64_MAX, -1, 1, I64_MIN, 0, -1], dtype=np.int64)
    want = np.array([I64_MAX, I64_MAX - 1, I64_MAX, -1, -1, -2], dtype=np.int64)
    np.testing.assert_array_equal(_tree.prefix_sum(x), want)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(I64_MIN, I64_MAX), min_size=1, max_size=8))
def test_prefix_sum_overflow_exact(values):
    partial = np.cumsum(np.array(values, dtype=object))
    x = np.array(values, dtype=np.int64)
    if all(_fits(int(p)) for p in partial):
        np.testing.assert_array_equal(_tree.prefix_sum(x), np.array(partial, dtype=np.int64))
    else:
        with pytest.raises(OverflowError):
            _tree.prefix_sum(x)


def test_prefix_sum_rejects_other_dtypes():
    with pytest.raises(ValueError, match="x"):
        _tree.prefix_sum(np.arange(4, dtype=np.float64))
    # a strided input is copied once, not refused
    np.testing.assert_array_equal(_tree.prefix_sum(np.arange(8, dtype=np.int64)[::2]), [0, 2, 6, 12])
    with pytest.raises(ValueError, match="x"):
        _tree.prefix_sum(np.zeros((2, 2), dtype=np.int64))


# -- level sums ---------------------------------------------------------------


@pytest.mark.parametrize("f", [2, 3, 4, 5, 16, 17, 64])
@pytest.mark.parametrize("m", [0, 1, 255, 256, 257, 1000])
def test_level_sums_matches_numpy(f, m):
    child = np.random.default_rng(f * 1000 + m).integers(-(10**15), 10**15, size=m * f)
    out = _tree.level_sums(child, f)
    assert out.dtype == np.int64 and out.shape == (m,)
    np.testing.assert_array_equal(out, child.reshape(m, f).sum(axis=1))


_int64s = st.one_of(
    st.integers(-1000, 1000),
    st.integers(I64_MIN, I64_MAX),
    st.sampled_from([I64_MIN, I64_MAX, I64_MAX // 2, I64_MIN // 2, 2**59, -(2**59), 2**62]),
)


@pytest.mark.slow
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(f=st.sampled_from([2, 3, 16]), data=st.data())
def test_level_sums_exact_or_overflow(f, data):
    """Every sum is exact when it fits int64 (even if a partial sum does not)
    and OverflowError is raised exactly when some sum does not fit."""
    m = data.draw(st.integers(0, 40))
    # Mostly small children, with large ones placed in a few random slots.
    values = data.draw(st.lists(st.integers(-1000, 1000), min_size=m * f, max_size=m * f))
    for _ in range(data.draw(st.integers(0, 4)) if m else 0):
        values[data.draw(st.integers(0, m * f - 1))] = data.draw(_int64s)
    child = np.array(values, dtype=np.int64)
    sums = [sum(values[g * f : (g + 1) * f]) for g in range(m)]
    if all(_fits(s) for s in sums):
        np.testing.assert_array_equal(_tree.level_sums(child, f), np.array(sums, dtype=np.int64))
    else:
        with pytest.raises(OverflowError):
            _tree.level_sums(child, f)


def test_level_sums_intermediate_wrap_is_exact():
    # I64_MAX + 1 - 1: the running sum wraps, the total fits.
    child = np.array([I64_MAX, 1, -1] + [0] * 13, dtype=np.int64)
    np.testing.assert_array_equal(_tree.level_sums(child, 16), [I64_MAX])
    np.testing.assert_array_equal(
        _tree.level_sums(np.array([I64_MAX, 1, -1], dtype=np.int64), 3), [I64_MAX]
    )
    np.testing.assert_array_equal(
        _tree.level_sums(np.array([2**62, 2**62 - 1], dtype=np.int64), 2), [I64_MAX]
    )
    with pytest.raises(OverflowError):
        _tree.level_sums(np.array([2**62, 2**62], dtype=np.int64), 2)
    with pytest.raises(OverflowError):
        _tree.level_sums(np.array([I64_MIN, -1] + [0] * 14, dtype=np.int64), 16)


def test_level_sums_overflow_in_a_late_chunk():
    child = np.ones(16 * 1000, dtype=np.int64)
    child[16 * 900 : 16 * 901] = 2**59
    with pytest.raises(OverflowError):
        _tree.level_sums(child, 16)
    child[16 * 900] = -(2**59)
    out = _tree.level_sums(child, 16)
    assert out[900] == 14 * 2**59 and (np.delete(out, 900) == 16).all()


def test_level_sums_rejects_bad_arguments():
    with pytest.raises(ValueError, match="f must be >= 2"):
        _tree.level_sums(np.arange(4), 1)
    with pytest.raises(ValueError, match="len\\(child\\)"):
        _tree.level_sums(np.arange(5), 2)
    with pytest.raises(ValueError, match="child"):
        _tree.level_sums(np.arange(4, dtype=np.int32), 2)


# -- tree levels --------------------------------------------------------------


@pytest.mark.parametrize("f,h,m", [(2, 0, 3), (2, 5, 1), (3, 3, 2), (16, 2, 5), (16, 3, 1), (5, 1, 7)])
def test_tree_levels_sums(f, h, m):
    leaves = np.random.default_rng(f + h + m).integers(0, 10**6, size=m * f**h)
    levels = _tree.tree_levels(leaves, f, h)
    assert len(levels) == h + 1
    assert levels[h] is leaves
    for level, arr in enumerate(levels):
        assert arr.dtype == np.int64 and arr.shape == (m * f**level,)
        span = f ** (h - level)
        np.testing.assert_array_equal(arr, leaves.reshape(-1, span).sum(axis=1))


def test_tree_levels_empty_and_errors():
    leaves = np.zeros(0, dtype=np.int64)
    assert [a.shape for a in _tree.tree_levels(leaves, 4, 2)] == [(0,), (0,), (0,)]
    with pytest.raises(ValueError, match="len\\(leaves\\)"):
        _tree.tree_levels(np.arange(12), 2, 3)
    with pytest.raises(ValueError, match="h must be >= 0"):
        _tree.tree_levels(np.arange(4), 2, -1)
    with pytest.raises(ValueError, match="f must be >= 2"):
        _tree.tree_levels(np.arange(4), 0, 1)
    with pytest.raises(ValueError, match="leaves"):
        _tree.tree_levels(np.arange(4.0), 2, 1)
    with pytest.raises(OverflowError, match="level 0"):
        _tree.tree_levels(np.array([2**61] * 4, dtype=np.int64), 2, 2)


# -- weighted least squares ---------------------------------------------------


def _combine(a, va, b, vb):
    """The combination rule of the specification, scalar."""
    if va == INF:
        return b, vb
    if vb == INF:
        return a, va
    if va == 0:
        return a, 0.0
    if vb == 0:
        return b, 0.0
    return (a / va + b / vb) / (1 / va + 1 / vb), 1 / (1 / va + 1 / vb)


def test_up_level_combination_rule():
    # Parent g's children are (1, 2) with variances chosen per case.
    cases = [
        # (z, v, child variances) -> rule applied
        (10.0, INF, (1.0, 3.0)),
        (10.0, 2.0, (INF, 3.0)),
        (10.0, 0.0, (1.0, 3.0)),
        (10.0, 0.0, (0.0, 0.0)),
        (10.0, 5.0, (0.0, 0.0)),
        (10.0, 2.0, (1.0, 3.0)),
        (np.nan, INF, (1.0, 1.0)),  # an unobserved parent's value is ignored
        (10.0, INF, (INF, 1.0)),
    ]
    m = len(cases)
    zc = np.tile([1.0, 2.0], m)
    vc = np.array([w for case in cases for w in case[2]])
    z = np.array([c[0] for c in cases])
    v = np.array([c[1] for c in cases])
    _tree.wls_up_level(zc, vc, z, v, 2)
    for g, (a, va, ws) in enumerate(cases):
        want = _combine(a, va, 3.0, sum(ws))
        assert z[g] == pytest.approx(want[0], rel=1e-15)
        assert v[g] == pytest.approx(want[1], rel=1e-15)


def _down_rule(xp, zc, vc, f):
    """The downward rule of the specification, loop by loop."""
    out = zc.copy()
    for g in range(len(xp)):
        sl = slice(g * f, (g + 1) * f)
        d = xp[g] - zc[sl].sum()
        unobserved = np.isinf(vc[sl])
        if unobserved.any():
            out[sl][unobserved] += d / unobserved.sum()
        elif vc[sl].sum() > 0:
            out[sl] += vc[sl] / vc[sl].sum() * d
    return out


@pytest.mark.parametrize("f", [2, 3, 16])
def test_down_level_rule(f):
    rng = np.random.default_rng(f)
    m = 200
    zc = rng.normal(0, 10, m * f)
    vc = rng.choice([0.0, INF, 1.0, 2.5, 0.3], size=m * f, p=[0.2, 0.15, 0.25, 0.2, 0.2])
    vc[: 2 * f] = 0.0  # a parent whose children are all exact
    vc[2 * f : 3 * f] = INF  # and one whose children are all unobserved
    xp = rng.normal(0, 50, m)
    want = _down_rule(xp, zc, vc, f)
    _tree.wls_down_level(xp, zc, vc, f)
    np.testing.assert_allclose(zc, want, rtol=1e-12, atol=1e-12)
    exact = vc == 0
    np.testing.assert_array_equal(zc[exact], want[exact])
    # Wherever some child is not exact, the children now add up to the parent.
    sums = zc.reshape(m, f).sum(axis=1)
    free = ~exact.reshape(m, f).all(axis=1)
    np.testing.assert_allclose(sums[free], xp[free], rtol=1e-12, atol=1e-9)


def _forest_rows(m, f, h):
    """Indicator rows (nodes x leaves) of every level of m f-ary trees."""
    n_leaves = m * f**h
    rows = []
    for level in range(h + 1):
        span = f ** (h - level)
        a = np.zeros((m * f**level, n_leaves))
        for g in range(m * f**level):
            a[g, g * span : (g + 1) * span] = 1.0
        rows.append(a)
    return rows


def _chain_rows(m, f, h):
    span = f**h
    a = np.zeros((m, m * span))
    for i in range(m):
        a[i, : (i + 1) * span] = 1.0
    return a


def _gls(a, y, var):
    """argmin sum over finite positive var of (a x - y)^2 / var subject to
    a_i x = y_i where var_i == 0 (dense, via the null space of the
    equalities)."""
    exact = var == 0
    noisy = np.isfinite(var) & (var > 0)
    n = a.shape[1]
    if exact.any():
        c, d = a[exact], y[exact]
        x0 = np.linalg.lstsq(c, d, rcond=None)[0]
        basis = null_space(c)
    else:
        x0, basis = np.zeros(n), np.eye(n)
    if basis.shape[1] == 0:
        return x0
    sw = 1.0 / np.sqrt(var[noisy])
    lhs = (a[noisy] @ basis) * sw[:, None]
    rhs = (y[noisy] - a[noisy] @ x0) * sw
    z = np.linalg.lstsq(lhs, rhs, rcond=None)[0]
    return x0 + basis @ z


def _random_problem(rng, f, h, m, chain, p_inf=0.25, p_exact=0.15):
    """A consistent truth, per-node variances (inf only above the leaves)
    and observations: noisy where the variance is finite and positive,
    exact where it is 0, NaN where unobserved."""
    leaves_truth = rng.integers(0, 50, size=m * f**h).astype(float)
    truths = [leaves_truth.reshape(-1, f ** (h - level)).sum(axis=1) for level in range(h + 1)]
    chain_truth = np.cumsum(truths[0])

    def draw(truth, allow_inf):
        kinds = rng.choice(3, size=truth.size, p=[1 - p_inf - p_exact, p_exact, p_inf])
        if not allow_inf:
            kinds[kinds == 2] = 0
        var = rng.uniform(0.05, 20.0, size=truth.size)
        var[kinds == 1] = 0.0
        var[kinds == 2] = INF
        y = truth + rng.normal(size=truth.size) * np.sqrt(np.where(np.isfinite(var), var, 0))
        y[kinds == 2] = np.nan
        return y, var

    obs = [draw(t, allow_inf=level < h) for level, t in enumerate(truths)]
    chain_obs = draw(chain_truth, allow_inf=True) if chain else None
    return truths, chain_truth, obs, chain_obs


def _two_pass(f, h, obs, chain_obs):
    """The kernels in the order a caller runs them; returns the final level
    arrays and the final chain (or None)."""
    z = [y.copy() for y, _ in obs]
    v = [var.copy() for _, var in obs]
    for level in range(h - 1, -1, -1):
        _tree.wls_up_level(z[level + 1], v[level + 1], z[level], v[level], f)
    xs = None
    if chain_obs is not None:
        xs = np.empty(len(z[0]))
        _tree.wls_chain(chain_obs[0], chain_obs[1], z[0], v[0], xs)
    for level in range(h):
        _tree.wls_down_level(z[level], z[level + 1], v[level + 1], f)
    return z, xs


def _check_consistent(z, xs, f):
    for level in range(len(z) - 1):
        sums = z[level + 1].reshape(-1, f).sum(axis=1)
        scale = np.abs(z[level + 1]).reshape(-1, f).sum(axis=1) + 1.0
        assert np.all(np.abs(sums - z[level]) <= 1e-9 * scale)
    if xs is not None:
        np.testing.assert_allclose(xs, np.cumsum(z[0]), rtol=1e-9, atol=1e-9)


def _all_rows(m, f, h, chain):
    rows = _forest_rows(m, f, h)
    if chain:
        rows.append(_chain_rows(m, f, h))
    return np.vstack(rows)


def _stack_obs(obs, chain_obs):
    parts = list(obs) + ([chain_obs] if chain_obs is not None else [])
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


@pytest.mark.parametrize("seed", [pytest.param(s, marks=pytest.mark.slow) if s >= 30 else s for s in range(120)])
def test_two_pass_equals_dense_gls(seed):
    rng = np.random.default_rng(seed)
    f = int(rng.integers(2, 5))
    h = int(rng.integers(1, 4))
    m = int(rng.integers(1, 4))
    chain = bool(rng.integers(0, 2)) or seed % 10 == 0
    _, _, obs, chain_obs = _random_problem(rng, f, h, m, chain)
    z, xs = _two_pass(f, h, obs, chain_obs)
    _check_consistent(z, xs, f)

    a = _all_rows(m, f, h, chain)
    y, var = _stack_obs(obs, chain_obs)
    x = _gls(a, y, var)
    got = np.concatenate(z + ([xs] if chain else []))
    np.testing.assert_allclose(got, a @ x, rtol=1e-8, atol=1e-8 * (1 + np.abs(a @ x).max()))


@pytest.mark.parametrize("seed", [pytest.param(s, marks=pytest.mark.slow) if s >= 8 else s for s in range(20)])
def test_two_pass_equal_variances_is_hay_et_al(seed):
    """All nodes observed with one variance: ordinary least squares."""
    rng = np.random.default_rng(1000 + seed)
    f, h, m = int(rng.integers(2, 5)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
    rows = np.vstack(_forest_rows(m, f, h))
    y = rng.normal(0, 5, rows.shape[0])
    obs, start = [], 0
    for level in range(h + 1):
        size = m * f**level
        obs.append((y[start : start + size], np.full(size, 2.0)))
        start += size
    z, _ = _two_pass(f, h, obs, None)
    x_ols = np.linalg.lstsq(rows, y, rcond=None)[0]
    np.testing.assert_allclose(np.concatenate(z), rows @ x_ols, rtol=1e-9, atol=1e-9)


def _weighted_residual(a, y, var, x):
    noisy = np.isfinite(var) & (var > 0)
    r = a[noisy] @ x - y[noisy]
    return float(np.sum(r * r / var[noisy]))


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    f=st.integers(2, 4),
    h=st.integers(1, 3),
    m=st.integers(1, 3),
    chain=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
@pytest.mark.slow
def test_two_pass_minimises_weighted_residual(f, h, m, chain, seed):
    """The estimate is consistent, meets every exact observation and its GLS
    residual is at most that of the (consistent) truth."""
    rng = np.random.default_rng(seed)
    truths, chain_truth, obs, chain_obs = _random_problem(rng, f, h, m, chain)
    z, xs = _two_pass(f, h, obs, chain_obs)
    _check_consistent(z, xs, f)

    a = _all_rows(m, f, h, chain)
    y, var = _stack_obs(obs, chain_obs)
    est = z[h]
    truth = truths[h]
    node_est = a @ est
    exact = var == 0
    np.testing.assert_allclose(node_est[exact], y[exact], rtol=1e-9, atol=1e-9)
    r_est = _weighted_residual(a, y, var, est)
    r_truth = _weighted_residual(a, y, var, truth)
    assert r_est <= r_truth * (1 + 1e-9) + 1e-9


def test_chain_by_hand():
    # k = 2, every variance 1, no tree below (the roots are leaves):
    # s1 = r1, s2 = r1 + r2; observations y_s = (1, 5), y_r = (2, 2).
    ys, vs = np.array([1.0, 5.0]), np.ones(2)
    zr, vr = np.array([2.0, 2.0]), np.ones(2)
    xs = np.empty(2)
    _tree.wls_chain(ys, vs, zr, vr, xs)
    a = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    x = np.linalg.lstsq(a, np.array([1.0, 5.0, 2.0, 2.0]), rcond=None)[0]
    np.testing.assert_allclose(zr, x, rtol=1e-12)
    np.testing.assert_allclose(xs, [x[0], x[0] + x[1]], rtol=1e-12)


def test_chain_unobserved_and_exact():
    # s unobserved everywhere: roots keep their estimates, s = cumulative sums.
    zr = np.array([3.0, -1.0, 4.0])
    xs = np.empty(3)
    _tree.wls_chain(np.full(3, np.nan), np.full(3, INF), zr, np.ones(3), xs)
    np.testing.assert_array_equal(zr, [3.0, -1.0, 4.0])
    np.testing.assert_allclose(xs, [3.0, 2.0, 6.0])
    # s_3 exact: the correction goes to the roots in proportion to variance.
    zr = np.array([3.0, -1.0, 4.0])
    _tree.wls_chain(np.array([np.nan, np.nan, 9.0]), np.array([INF, INF, 0.0]), zr,
                    np.array([1.0, 2.0, 0.0]), xs)
    np.testing.assert_allclose(zr, [4.0, 1.0, 4.0])
    np.testing.assert_allclose(xs, [4.0, 5.0, 9.0])


def test_wls_rejects_bad_shapes():
    z, v = np.zeros(3), np.ones(3)
    zc, vc = np.zeros(6), np.ones(6)
    with pytest.raises(ValueError, match="zc"):
        _tree.wls_up_level(np.zeros(5), vc, z, v, 2)
    with pytest.raises(ValueError, match="vc"):
        _tree.wls_up_level(zc, np.ones(5), z, v, 2)
    with pytest.raises(ValueError, match="^v "):
        _tree.wls_up_level(zc, vc, z, np.ones(2), 2)
    with pytest.raises(ValueError, match="f must be >= 2"):
        _tree.wls_up_level(zc, vc, z, v, 1)
    with pytest.raises(ValueError, match="z"):
        _tree.wls_up_level(zc, vc, z.astype(np.float32), v, 2)
    ro = np.zeros(3)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="z"):
        _tree.wls_up_level(zc, vc, ro, v, 2)
    with pytest.raises(ValueError, match="zc"):
        _tree.wls_down_level(z, np.zeros(7), np.ones(7), 2)
    with pytest.raises(ValueError, match="vc"):
        _tree.wls_down_level(z, zc, np.ones(4), 2)
    with pytest.raises(ValueError, match="xp"):
        _tree.wls_down_level(np.zeros((3, 1)), zc, vc, 2)
    k = np.zeros(4)
    for name in ["vs", "zr", "vr", "xs"]:
        args = {n: np.zeros(4) for n in ["ys", "vs", "zr", "vr", "xs"]}
        args[name] = np.zeros(3)
        with pytest.raises(ValueError, match=name):
            _tree.wls_chain(**args)
    with pytest.raises(ValueError, match="xs"):
        _tree.wls_chain(k, np.ones(4), np.zeros(4), np.ones(4), k)


def test_isotonic_inplace_is_bit_identical_to_isotonic():
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 1000):
        for y in (rng.normal(size=n) * 10, np.cumsum(rng.normal(size=n)), np.round(rng.normal(size=n))):
            ref = _isotonic.isotonic(y, None, -3.0, 5.0)
            z = y.copy()
            _isotonic.isotonic_inplace(z, -3.0, 5.0)
            np.testing.assert_array_equal(z, ref)


def test_oh_estimate_checks_its_inputs():
    h = np.ones(10, dtype=np.int64)
    with pytest.raises(ValueError):
        _tree.oh_estimate(h, 4, 2, 2, 1, np.zeros(2, np.int64), np.zeros(3, np.int64), 1.0, 1.0)  # width 2 < 4
    with pytest.raises(ValueError):
        _tree.oh_estimate(-h, 4, 2, 2, 2, np.zeros(2, np.int64), np.zeros(18, np.int64), 1.0, 1.0)
    with pytest.raises(ValueError):
        _tree.oh_estimate(h, 4, 2, 2, 2, np.zeros(2, np.int64), np.zeros(5, np.int64), 1.0, 1.0)
    with pytest.raises(OverflowError):
        big = np.full(2, 2**62, dtype=np.int64)
        _tree.oh_estimate(big, 1, 2, 1, 1, np.array([2**62], np.int64), np.zeros(2, np.int64), 1.0, 1.0)


@pytest.mark.parametrize("n,block,f", [(1, 1, 2), (10, 4, 2), (1000, 7, 2), (12345, 300, 4), (200_003, 100, 16)])
def test_oh_estimate_is_the_same_on_any_number_of_threads(n, block, f):
    # the blocks' passes are split over threads; each block is computed alone
    rng = np.random.default_rng(n)
    hist = rng.poisson(3.0, size=n).astype(np.int64)
    k = -(-n // block)
    h = max(1, math.ceil(math.log(block, f) - 1e-12)) if block > 1 else 1
    c = -(-block // f ** (h - 1))
    last = n - block * (k - 1)
    count, w = 0, c * f ** (h - 1)
    for L in range(1, h + 1):
        w //= c if L == 1 else f
        count += (k - 1) * -(-block // w) + -(-last // w)
    ns, nh = rng.integers(-40, 40, k - 1), rng.integers(-40, 40, count)
    one = _tree.oh_estimate(hist, block, f, h, c, ns, nh, 2.0, 3.0)
    for threads in (2, 3, 64):
        np.testing.assert_array_equal(_tree.oh_estimate(hist, block, f, h, c, ns, nh, 2.0, 3.0, threads=threads), one)


@pytest.mark.parametrize("n,block,f", [(2, 1, 2), (37, 5, 2), (400, 100, 16), (3000, 7, 3)])
def test_oh_cumulative_is_oh_estimate_then_chunked_isotonic(n, block, f):
    rng = np.random.default_rng(n + block)
    hist = rng.poisson(2.0, size=n).astype(np.int64)
    h = max(1, math.ceil(math.log(block, f))) if block > 1 else 1
    c = -(-block // f ** (h - 1))
    k = -(-n // block)
    width = c * f ** (h - 1)
    last = n - block * (k - 1)
    count, wL = 0, width
    for L in range(1, h + 1):
        wL //= c if L == 1 else f
        count += (k - 1) * (-(-block // wL)) + (-(-last // wL))
    ns = rng.integers(-30, 30, size=k - 1)
    nh = rng.integers(-30, 30, size=count)
    est = _tree.oh_estimate(hist, block, f, h, c, ns, nh, 2.0, 3.0)
    want = est.copy()
    _isotonic.isotonic_unit_chunked(want[:-1], 0.0, float(hist.sum()))
    want[-1] = hist.sum()
    for threads in (1, 2, 3):
        mine = nh.copy()
        got, total = _tree.oh_cumulative(hist, block, f, h, c, ns, mine, 2.0, 3.0, threads=threads,
                                         overwrite_noise_h=threads == 2)
        assert total == int(hist.sum()) and isinstance(total, int)
        np.testing.assert_array_equal(got, want)
        assert np.all(np.diff(got) >= 0) and got[0] >= 0 and got[-1] == total
        # in place: the output is the noise buffer's last N values
        assert np.shares_memory(got, mine) == (threads == 2)
    with pytest.raises(ValueError, match="must not share memory with hist"):
        both = np.concatenate([hist, nh])  # the noise's first value is hist's last
        _tree.oh_cumulative(both[:n], block, f, h, c, ns, both[n - 1:n - 1 + nh.size], 2.0, 3.0,
                            overwrite_noise_h=True)
    with pytest.raises(ValueError, match="written in place and must be writeable"):
        ro = nh.copy()
        ro.flags.writeable = False
        _tree.oh_cumulative(hist, block, f, h, c, ns, ro, 2.0, 3.0, overwrite_noise_h=True)


def test_oh_estimate_checks_threads():
    h = np.ones(4, dtype=np.int64)
    for bad in (0, -1, 1.5, "2", True):
        with pytest.raises(ValueError, match="threads"):
            _tree.oh_estimate(h, 2, 2, 1, 2, np.zeros(1, np.int64), np.zeros(4, np.int64), 1.0, 1.0, threads=bad)
    big = np.full(2, 2**61, dtype=np.int64)
    with pytest.raises(OverflowError):  # a leaf's noisy value, in a worker thread's block pass
        _tree.oh_estimate(big, 1, 2, 1, 1, np.zeros(1, np.int64), np.array([2**62 + 2**61, 0], np.int64),
                          1.0, 1.0, threads=2)
    with pytest.raises(OverflowError):  # an S node's noisy value, in the chain
        _tree.oh_estimate(big, 1, 2, 1, 1, np.array([2**62 + 2**61], np.int64), np.zeros(2, np.int64),
                          1.0, 1.0, threads=2)


def test_oh_estimate_and_chunked_isotonic_check_counts_and_variances():
    h = np.ones(4, dtype=np.int64)
    args = (h, 2, 2, 1, 2, np.zeros(1, np.int64), np.zeros(4, np.int64))
    for var_s, var_h in ((np.nan, 1.0), (1.0, -1.0), (np.inf, 1.0), (1e-305, 1.0), (1.0, 5e-324), (1e308, 1.0),
                         (1.0, 1.1e200)):
        with pytest.raises(ValueError, match=r"var_[sh] must be 0 or in \[1e-200, 1e\+200\]"):
            _tree.oh_estimate(*args, var_s, var_h)
        with pytest.raises(ValueError, match=r"var_[sh] must be 0 or in \[1e-200, 1e\+200\]"):
            _tree.oh_cumulative(*args, var_s, var_h)
    # the least-squares estimate does not change when both variances scale
    # together (up to rounding), at the ends of the accepted range too
    ref = _tree.oh_estimate(*args, 1.0, 2.0)
    for k in (1e-190, 1e190):
        np.testing.assert_allclose(_tree.oh_estimate(*args, k, 2.0 * k), ref, rtol=1e-9)
    one = _tree.oh_estimate(*args, 1.0, 1.0)
    np.testing.assert_array_equal(_tree.oh_estimate(*args, 1.0, 1.0, threads=np.int64(2)), one)
    np.testing.assert_array_equal(_tree.oh_estimate(*args, 1.0, 1.0, threads=10**6), one)  # capped
    y = np.arange(5.0)[::-1].copy()
    with pytest.raises(ValueError, match="chunk must be a positive integer"):
        _isotonic.isotonic_unit_chunked(y, 0.0, 9.0, chunk=2**70)
    _isotonic.isotonic_unit_chunked(y, 0.0, 9.0, chunk=np.int32(2), threads=np.int64(2))
    np.testing.assert_array_equal(y, np.full(5, 2.0))


def test_kmeans_offset_scan_refuses_lengths_that_are_not_edge_lengths():
    from blowfish_privacy import _kmeans

    shape = np.array([4], dtype=np.int64)
    labels = np.array([0, 0, 1, 1], dtype=np.int32)
    cost = np.array([1, 0, 0, 1], dtype=np.int64)
    offsets = np.array([[1]], dtype=np.int64)
    assert _kmeans.kmeans_offset_scan(shape, labels, cost, offsets, np.array([1], np.int64))[0] >= 0
    for bad in (0, -5, 2**62):
        with pytest.raises(ValueError, match="length must lie in"):
            _kmeans.kmeans_offset_scan(shape, labels, cost, offsets, np.array([bad], np.int64))


def test_sum_counts_checks_signs_and_overflow_in_one_pass():
    x = np.array([3, 0, 5, 2**40], dtype=np.int64)
    assert _tree.sum_counts(x) == int(x.sum())
    assert _tree.sum_counts(np.zeros(0, np.int64)) == 0
    y = x.copy()
    y[2] = -7
    with pytest.raises(ValueError, match="non-negative") as exc:
        _tree.sum_counts(y)
    assert "-7" not in str(exc.value)
    with pytest.raises(OverflowError):
        _tree.sum_counts(np.array([2**62, 2**62], dtype=np.int64))


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 5000),
    big=st.sampled_from([0, 2**40, 2**51, 2**52 - 1, 2**61, 2**62 - 1, 2**63 - 1]),
    where=st.lists(st.integers(0, 4999), max_size=4),
    negative=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_sum_counts_fast_chunks_agree_with_exact_sums(n, big, where, negative, seed):
    # chunks of 2048 take a vectorised path when a bound proves the sum fits;
    # sizes across chunk edges and values near 2^63 / 2048 and 2^63 test it
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 1000, size=n).astype(np.int64)
    for w in where:
        x[w % n] = big
    if negative:
        x[rng.integers(0, n)] = -1
        with pytest.raises(ValueError, match="non-negative"):
            _tree.sum_counts(x)
        return
    exact = sum(int(v) for v in x)
    running, fits = 0, True
    for v in x:
        running += int(v)
        fits &= running < 2**63
    if fits:
        assert _tree.sum_counts(x) == exact
    else:
        with pytest.raises(OverflowError):
            _tree.sum_counts(x)


@pytest.mark.slow
def test_oh_cumulative_matches_the_two_step_path_across_isotonic_chunks():
    # more than two ISOTONIC_CHUNKs: the merged stacks and the windowed
    # expansion give the same bits as the separate calls, on any threads
    n, block, f, h, c = 2 * _isotonic.ISOTONIC_CHUNK + 5, 100, 16, 2, 7
    rng = np.random.default_rng(5)
    hist = rng.poisson(3.0, size=n).astype(np.int64)
    k = -(-n // block)
    last = n - block * (k - 1)
    count = (k - 1) * (7 + 100) + (-(-last // 16)) + last
    ns = rng.integers(-20, 20, size=k - 1)
    nh = rng.integers(-20, 20, size=count)
    want = _tree.oh_estimate(hist, block, f, h, c, ns, nh, 50.0, 45.0)
    _isotonic.isotonic_unit_chunked(want[:-1], 0.0, float(hist.sum()))
    want[-1] = hist.sum()
    for threads in (1, 2):
        got, total = _tree.oh_cumulative(hist, block, f, h, c, ns, nh.copy(), 50.0, 45.0, threads=threads,
                                         overwrite_noise_h=True)
        np.testing.assert_array_equal(got, want)
