"""MWEM in 1-D (ranges) and 2-D (rectangles): budget, sensitivity, an independent slow implementation."""

from __future__ import annotations

import importlib
import itertools
import math
import time
from fractions import Fraction

import numpy as np
import pytest

from blowfish_privacy import Generator
from blowfish_privacy.baselines.mwem_2d import mwem_2d, plan_mwem_2d

mw = importlib.import_module("blowfish_privacy.baselines.mwem")   # the package binds the name mwem to the function


def _random_ranges(k, q, rng):
    length = rng.integers(1, k + 1, q)
    lo = rng.integers(0, k - length + 1)
    return np.column_stack([lo, lo + length - 1]).astype(np.int64)


def _random_rects(rows, cols, q, rng):
    r, c = _random_ranges(rows, q, rng), _random_ranges(cols, q, rng)
    return np.column_stack([r, c])


def _matrix(shape, boxes):
    """Each query as a 0/1 row over the flattened cells (rows of boxes: lo, hi per axis)."""
    d = len(shape)
    W = np.zeros((len(boxes), math.prod(shape)))
    for j, b in enumerate(boxes):
        m = np.zeros(shape)
        m[tuple(slice(int(b[2 * a]), int(b[2 * a + 1]) + 1) for a in range(d))] = 1
        W[j] = m.ravel()
    return W


def _slow_mwem(hist, boxes, T, passes, s_scale, m_scale, gen):
    """MWEM written from the paper with dense query rows: full renormalisation after every update."""
    x = hist.ravel().astype(np.int64)
    W = _matrix(hist.shape, boxes)
    Wi = W.astype(np.int64)
    n = int(x.sum())
    A = np.full(x.size, n / x.size)
    used, chosen, measured = set(), [], []
    for _ in range(T):
        score = np.abs(np.rint(W @ A).astype(np.int64) - Wi @ x)
        noisy = gen.add_discrete_laplace(score, s_scale)
        if len(used) == len(boxes):
            used = set()
        best = max((j for j in range(len(boxes)) if j not in used), key=lambda j: (noisy[j], -j))
        used.add(best)
        chosen.append(best)
        measured.append(int(gen.add_discrete_laplace(np.array([Wi[best] @ x]), m_scale)[0]))
        for _ in range(passes):
            for j, m in zip(chosen, measured):
                A = A * np.exp(W[j] * (m - W[j] @ A) / (2.0 * n))
                A = A * (n / A.sum())
    return A.reshape(hist.shape), chosen, measured


# ---------------------------------------------------------------------------
# budget


@pytest.mark.parametrize("make", [
    lambda e, T: mw.plan_mwem(64, e, rounds=T, ranges=np.array([[0, 3], [2, 40], [5, 63]])),
    lambda e, T: plan_mwem_2d((5, 7), e, rounds=T, rectangles=np.array([[0, 4, 0, 6], [1, 2, 3, 3]])),
])
@pytest.mark.parametrize("eps,T", [(Fraction(1), 5), (0.1, 10), (0.37, 3), (2.5, 1)])
def test_budget_splits_into_selections_and_measurements(make, eps, T):
    p = make(eps, T)
    sel = [x for x in p.parts if x.name.startswith("select_")]
    mea = [x for x in p.parts if x.name.startswith("measure_")]
    assert len(sel) == len(mea) == T and len(p.parts) == 2 * T
    assert sum(x.epsilon for x in p.parts) == p.epsilon_exact <= Fraction(eps)
    half = Fraction(eps) / (2 * T)
    for s, m in zip(sel, mea):
        assert s.sensitivity == 2 and not s.sensitivity_exact and s.epsilon <= half and s.scale >= 2 / half
        assert m.sensitivity == 1 and m.sensitivity_exact and m.epsilon <= half and m.scale >= 1 / half
        assert s.epsilon == 2 / s.scale and m.epsilon == 1 / m.scale
    assert p.options["rounds"] == T and p.options["passes"] == mw.DEFAULT_PASSES == 100
    if isinstance(eps, Fraction):
        assert p.epsilon_exact == eps


def test_defaults_are_dpbench_reference():
    p = mw.plan_mwem(16, 1.0, ranges=np.array([[0, 5]]))
    assert (p.options["rounds"], p.options["passes"], p.options["workload"]) == (10, 100, "given")
    assert mw.SELECT_SHARE == Fraction(1, 2)
    q = plan_mwem_2d((4, 8), 1.0)
    assert q.options["queries"] == mw.dyadic_range_count(4) * mw.dyadic_range_count(8) == q.parts[0].count
    assert q.options["workload"] == "dyadic rectangles" and q.aggregate_shape == (4, 8)


# ---------------------------------------------------------------------------
# sensitivity: every bounded neighbour pair on a tiny grid


def test_rectangle_counts_change_by_at_most_one_under_bounded_dp():
    shape = (3, 3)
    rects = [(r1, r2, c1, c2) for r1 in range(3) for r2 in range(r1, 3) for c1 in range(3) for c2 in range(c1, 3)]
    W = _matrix(shape, rects).astype(int)
    worst = max(np.abs(W[:, u] - W[:, v]).max() for u, v in itertools.combinations(range(9), 2))
    assert worst == 1   # the measurement's sensitivity, exact
    # the scores |c - q(x)| for a public c then move by at most one too, on every database of 2 records
    A = np.array([0.3, 1.7, 0.0, 0.2, 0.4, 1.1, 0.9, 0.6, 0.8])
    c = np.rint(W @ A)
    for recs in itertools.product(range(9), repeat=2):
        x = np.bincount(recs, minlength=9)
        for new in range(9):
            x2 = np.bincount((new, recs[1]), minlength=9)
            assert np.abs(np.abs(c - W @ x) - np.abs(c - W @ x2)).max() <= 1


# ---------------------------------------------------------------------------
# agreement with an independent slow implementation, and between 1-D and 2-D


@pytest.mark.parametrize("passes", [1, 7])
def test_1d_matches_the_slow_implementation(passes):
    rng = np.random.default_rng(1)
    h = rng.integers(0, 40, 12).astype(np.int64)
    R = _random_ranges(12, 9, rng)
    p = mw.plan_mwem(12, 0.8, rounds=6, ranges=R, passes=passes)
    r = p.measure(h, Generator(seed=11))
    s = p.parts[0].scale, p.parts[1].scale
    A, chosen, measured = _slow_mwem(h, R, 6, passes, *s, Generator(seed=11))
    assert r.params["chosen"].tolist() == chosen and r.params["measured"].tolist() == measured
    assert len(set(chosen)) == 6
    np.testing.assert_allclose(r.histogram, A, rtol=1e-9, atol=1e-9)


def test_2d_matches_the_slow_implementation():
    rng = np.random.default_rng(2)
    h = rng.integers(0, 30, (4, 5)).astype(np.int64)
    Q = _random_rects(4, 5, 7, rng)
    p = plan_mwem_2d((4, 5), 1.5, rounds=9, rectangles=Q, passes=5)   # 9 rounds > 7 queries: candidates again
    r = p.measure(h, Generator(seed=5))
    A, chosen, measured = _slow_mwem(h, Q, 9, 5, p.parts[0].scale, p.parts[1].scale, Generator(seed=5))
    assert r.params["chosen"].tolist() == chosen and r.params["measured"].tolist() == measured
    assert sorted(chosen[:7]) == list(range(7))
    np.testing.assert_allclose(r.histogram, A, rtol=1e-9, atol=1e-9)
    assert r.histogram.shape == (4, 5) and r.histogram.sum() == pytest.approx(h.sum())


def test_2d_on_a_single_row_or_column_is_the_1d_algorithm():
    rng = np.random.default_rng(3)
    h = rng.integers(0, 100, 30).astype(np.int64)
    R = _random_ranges(30, 25, rng)
    one = mw.plan_mwem(30, 0.5, ranges=R).measure(h, Generator(seed=7))
    zeros = np.zeros((len(R), 2), np.int64)
    row = plan_mwem_2d((1, 30), 0.5, rectangles=np.column_stack([zeros, R])).measure(h[None, :], Generator(seed=7))
    col = plan_mwem_2d((30, 1), 0.5, rectangles=np.column_stack([R, zeros])).measure(h[:, None], Generator(seed=7))
    for two in (row, col):
        assert two.params["chosen"].tolist() == one.params["chosen"].tolist()
        np.testing.assert_allclose(two.histogram.ravel(), one.histogram, rtol=1e-12)
    assert one.epsilon_exact == row.epsilon_exact == col.epsilon_exact


def test_the_passes_fit_the_measurements():
    # almost no noise: after the last round, 100 passes make A answer every measured range closely
    rng = np.random.default_rng(4)
    h = rng.multinomial(10**6, rng.dirichlet(np.ones(256))).astype(np.int64)
    R = _random_ranges(256, 200, rng)
    r = mw.plan_mwem(256, 10**6, rounds=8, ranges=R).measure(h, Generator(seed=1))
    C = np.concatenate([[0.0], np.cumsum(r.histogram)])
    fit = np.array([C[R[j, 1] + 1] - C[R[j, 0]] for j in r.params["chosen"]])
    assert np.abs(fit - r.params["measured"]).max() < 0.01 * h.sum()
    one = mw.plan_mwem(256, 10**6, rounds=8, ranges=R, passes=1).measure(h, Generator(seed=1))
    assert np.abs(one.histogram - h).sum() > np.abs(r.histogram - h).sum()


# ---------------------------------------------------------------------------
# releases, regression, inputs


def test_fixed_seed_regression():
    h = np.array([5, 0, 0, 12, 30, 2, 2, 9, 0, 1, 44, 3], np.int64)
    r = mw.plan_mwem(12, 1.0, rounds=4, ranges=np.array([[0, 3], [4, 4], [5, 11], [0, 11], [9, 10]])).measure(
        h, Generator(seed=2026))
    assert r.params["chosen"].tolist() == REGRESSION_CHOSEN
    assert r.params["measured"].tolist() == REGRESSION_MEASURED
    assert r.histogram.sum() == pytest.approx(h.sum()) and (r.histogram >= 0).all()


REGRESSION_CHOSEN = [1, 0, 4, 2]
REGRESSION_MEASURED = [28, 26, 43, 49]


def test_totals_average_and_empty_data():
    rng = np.random.default_rng(5)
    h = rng.integers(0, 50, (6, 6)).astype(np.int64)
    r = mwem_2d(h, 1.0, Generator(seed=3), rounds=3)          # default: dyadic rectangles
    assert r.histogram.sum() == pytest.approx(h.sum()) and (r.histogram >= 0).all() and r.epsilon <= 1.0
    avg = mwem_2d(h, 1.0, Generator(seed=3), rounds=3, average=True, passes=2)
    assert avg.histogram.sum() == pytest.approx(h.sum())
    assert mwem_2d(np.zeros((3, 2), np.int64), 1.0, Generator(seed=1)).histogram.sum() == 0
    assert mw.mwem(np.zeros(5, np.int64), 1.0, Generator(seed=1), passes=3).histogram.sum() == 0
    # tiny n with large noise: the guarded exponent keeps the estimate finite
    one = mw.mwem(np.eye(1, 64, 3, dtype=np.int64)[0], 0.01, Generator(seed=4), ranges=np.array([[0, 63], [2, 5]]))
    assert np.isfinite(one.histogram).all() and one.histogram.sum() == pytest.approx(1)


@pytest.mark.parametrize("call,match", [
    (lambda: plan_mwem_2d((4, 4), 1.0, rectangles=np.array([[0, 4, 0, 1]])), "rectangles"),
    (lambda: plan_mwem_2d((4, 4), 1.0, rectangles=np.array([[2, 1, 0, 1]])), "rectangles"),
    (lambda: plan_mwem_2d((4, 4), 1.0, rectangles=np.array([[0, 1]])), "rectangles"),
    (lambda: plan_mwem_2d((4, 4), 1.0, rectangles=np.array([[0, 1, 0, 1.0]])), "rectangles"),
    (lambda: plan_mwem_2d((4, 4), 1.0, rectangles=np.zeros((0, 4), np.int64)), "rectangles"),
    (lambda: plan_mwem_2d(16, 1.0), "2-D"),
    (lambda: plan_mwem_2d((4, 4), 1.0, passes=0), "passes"),
    (lambda: plan_mwem_2d((4, 4), 1.0, rounds=0), "rounds"),
    (lambda: mw.plan_mwem(8, 1.0, passes=mw.MAX_PASSES + 1), "passes"),
    (lambda: mw.plan_mwem(8, 1.0, ranges=np.array([[0, 8]])), "ranges"),
    (lambda: mw.plan_mwem(8, 1.0, ranges=np.array([[0, 1, 2, 3]])), "ranges"),
    (lambda: mw.plan_mwem(8, 0.0), "epsilon"),
    (lambda: mwem_2d(np.zeros(4, np.int64), 1.0), "hist"),
])
def test_inputs_are_checked(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_average_and_passes_types():
    with pytest.raises(TypeError, match="average"):
        plan_mwem_2d((2, 2), 1.0, average=1)
    with pytest.raises(TypeError, match="passes"):
        mw.plan_mwem(8, 1.0, passes=2.0)
    with pytest.raises(ValueError):
        plan_mwem_2d((2, 2), 1.0).measure(np.zeros((2, 3), np.int64), Generator(seed=1))


def test_dpbench_sized_runs_are_fast():
    # the harness runs MWEM many times on 4096 cells and 128 x 128 with 2000 queries
    rng = np.random.default_rng(6)
    h1 = rng.multinomial(10**7, rng.dirichlet(0.1 * np.ones(4096))).astype(np.int64)
    h2 = rng.multinomial(10**7, rng.dirichlet(0.1 * np.ones(128 * 128))).astype(np.int64).reshape(128, 128)
    p1 = mw.plan_mwem(4096, 0.1, ranges=_random_ranges(4096, 2000, rng))
    p2 = plan_mwem_2d((128, 128), 0.1, rectangles=_random_rects(128, 128, 2000, rng))
    t = time.perf_counter()
    p1.measure(h1, Generator(seed=1))
    p2.measure(h2, Generator(seed=1))
    assert time.perf_counter() - t < 3.0


def test_total_updates_are_capped():
    with pytest.raises(ValueError, match="rounds and passes"):
        mw.plan_mwem(8, 1.0, rounds=mw.MAX_ROUNDS)              # 100 passes of 10,000 rounds
    assert mw.plan_mwem(8, 1.0, rounds=mw.MAX_ROUNDS, passes=1).options["rounds"] == mw.MAX_ROUNDS
    with pytest.raises(ValueError, match="rounds and passes"):
        plan_mwem_2d((2, 2), 1.0, rounds=2000, passes=mw.MAX_PASSES)


HOSTILE = [None, True, -1, 0, 2**31, 2**64, 10**30, 0.5, float("nan"), "x", b"1", (), (1, 2), [3], {"a": 1},
           object(), Fraction(1, 3), np.array([[0, 1, 0, 1.5]]), np.array([[-1, 0, 0, 0]]), np.zeros((1, 4), bool)]


@pytest.mark.parametrize("option", ["rounds", "passes", "rectangles", "average"])
def test_hostile_options_are_refused_clearly_or_run(option):
    h = np.arange(6, dtype=np.int64).reshape(2, 3) % 3
    for v in HOSTILE:
        try:
            plan = plan_mwem_2d((2, 3), 1.0, **{option: v})
        except (ValueError, TypeError, OverflowError):
            continue
        r = plan.measure(h, Generator(seed=1))
        assert np.isfinite(r.histogram).all() and r.histogram.sum() == pytest.approx(h.sum())
