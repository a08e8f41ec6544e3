"""constrained_histogram: calibration, consistency against dense least squares, the 000 Sec 3.2 attack."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blowfish_privacy import Domain, Generator, Ordinal, Policy, mechanisms
from blowfish_privacy.policy.constraints import CountQuery, Marginal, NoProvenSensitivityError, RangeCount
from blowfish_privacy.mechanisms.counts.constrained import ConstrainedRelease, consistent_estimate, plan_constrained_histogram
from blowfish_privacy.mechanisms.plan import Plan, Release
from blowfish_privacy.policy.secrets import FullDomain, Line


def _cube(shape):
    return Domain([Ordinal(f"A{i}", 0, s - 1) for i, s in enumerate(shape)])


def _marginal(h, domain, attrs):
    pos = [domain.position(a) for a in attrs]
    other = tuple(p for p in range(domain.ndim) if p not in pos)
    m = h.sum(axis=other)
    kept = sorted(pos)
    return np.transpose(m, [kept.index(p) for p in pos])


def _dense_projection(y, domain, constraints):
    rows, b = [], []
    for c in constraints:
        lab = c.labels(domain)
        for q in range(c.num_queries(domain)):
            rows.append((lab == q).astype(float))
        b.append(c.public_answers(domain))
    A, b = np.array(rows), np.concatenate(b).astype(float)
    delta, *_ = np.linalg.lstsq(A, b - A @ y, rcond=None)
    return y + delta  # lstsq gives the minimum-norm correction: the projection


CASES = [
    ((3, 4), [["A0"]]),
    ((2, 3, 4), [["A0", "A1"]]),
    ((2, 3, 4), [["A0", "A1"], ["A1", "A2"]]),
    ((3, 2, 4), [["A0"], ["A2"]]),
    ((2, 3, 2), [["A1"], ["A0", "A1"]]),
    ((2, 3, 4, 2), [["A2", "A0"], ["A3", "A2"]]),
]


@pytest.mark.parametrize("shape, cuboids", CASES)
def test_cuboid_consistency_matches_dense_lstsq(shape, cuboids):
    rng = np.random.default_rng(1)
    d = _cube(shape)
    h = rng.integers(0, 6, size=shape)
    cons = [Marginal(c, answers=_marginal(h, d, c)) for c in cuboids]
    y = h.ravel() + rng.normal(0, 3, size=h.size)
    x, method, rank = consistent_estimate(y, d, cons)
    assert method in ("one cuboid", "two cuboids")
    assert np.allclose(x, _dense_projection(y, d, cons), atol=1e-9)
    xc, method_cg, rank_cg = consistent_estimate(y, d, cons, method="cg")
    assert method_cg == "conjugate gradient" and np.allclose(xc, x, atol=1e-8)
    assert rank == rank_cg
    for c in cons:
        assert np.abs(c.answers_of(d, x) - c.public_answers(d)).max() <= 1e-9


def test_cg_with_overlapping_count_queries_matches_dense():
    rng = np.random.default_rng(2)
    d = Domain.ordinal("x", 0, 11)
    h = rng.integers(0, 5, size=12)
    masks = [rng.random(12) < 0.5 for _ in range(5)]
    cons = [CountQuery(m, answer=int(h[m].sum())) for m in masks]
    y = h + rng.normal(0, 2, size=12)
    x, method, _ = consistent_estimate(y, d, cons)
    assert method == "conjugate gradient"
    assert np.allclose(x, _dense_projection(y, d, cons), atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(CASES))
def test_consistency_never_increases_error(seed, case):
    shape, cuboids = case
    rng = np.random.default_rng(seed)
    d = _cube(shape)
    h = rng.integers(0, 8, size=shape)
    cons = [Marginal(c, answers=_marginal(h, d, c)) for c in cuboids]
    y = h.ravel() + rng.laplace(0, 4, size=h.size)
    x, _, _ = consistent_estimate(y, d, cons)
    assert np.linalg.norm(x - h.ravel()) <= np.linalg.norm(y - h.ravel()) + 1e-9


def test_release_records_calibration_and_holds():
    d = _cube((2, 2, 3))
    h = np.arange(12).reshape(2, 2, 3)
    cons = [Marginal(["A0", "A1"], answers=_marginal(h, d, ["A0", "A1"]))]
    r = mechanisms.constrained_histogram(h, Policy(d, FullDomain(), cons), 1.0, Generator(seed=5))
    assert r.sensitivity == 8 and r.sensitivity_tight and "Theorem 8.4 of the Blowfish paper" in r.sensitivity_rule
    assert r.values.shape == h.shape and r.noisy.dtype == np.int64 and not r.secure
    assert np.allclose(r.values.sum(axis=2), h.sum(axis=2), atol=1e-9)
    assert r.expected_squared_error == pytest.approx(r.variance * (12 - 4))


def test_two_marginals_in_the_move_model_end_to_end():
    d = _cube((2, 3, 4))
    h = np.random.default_rng(4).integers(0, 9, size=(2, 3, 4))
    c1 = Marginal(["A0", "A1"], answers=h.sum(axis=2))
    c2 = Marginal(["A1", "A2"], answers=h.sum(axis=0))
    with pytest.raises(NoProvenSensitivityError):  # overlapping under 000 Def 4.1
        Policy(d, FullDomain(), [c1, c2]).sensitivity("histogram")
    p = Policy(d, FullDomain(), [c1, c2], neighbours="moves")
    r = mechanisms.constrained_histogram(h, p, 1.0, Generator(seed=2))
    assert r.sensitivity == 2 * min(2, 4) and "move model" in r.sensitivity_rule
    assert r.method == "two cuboids" and r.rank == 6 + 12 - 3
    assert np.allclose(r.values.sum(axis=2), h.sum(axis=2)) and np.allclose(r.values.sum(axis=0), h.sum(axis=0))


def test_nonnegative_option():
    d = _cube((2, 5))
    h = np.array([[0, 0, 0, 1, 0], [3, 0, 0, 0, 2]])
    cons = [Marginal(["A0"], answers=h.sum(axis=1))]
    r = mechanisms.constrained_histogram(h, Policy(d, FullDomain(), cons), 0.5, Generator(seed=11), nonnegative=True)
    assert (r.values >= 0).all() and "non-negative" in r.method
    assert np.allclose(r.values.sum(axis=1), h.sum(axis=1), atol=1e-6)


def test_bad_inputs():
    d = _cube((2, 3))
    h = np.ones((2, 3), dtype=np.int64)
    gen = Generator(seed=1)
    with pytest.raises(ValueError, match="contradictory"):
        cons = [Marginal(["A0"], answers=[3, 3]), Marginal(["A1"], answers=[1, 1, 1])]
        consistent_estimate(h.ravel(), d, cons)
    with pytest.raises(ValueError, match="does not satisfy"):
        p = Policy(d, FullDomain(), [Marginal(["A0"], answers=[2, 4])])
        mechanisms.constrained_histogram(h, p, 1.0, gen)
    with pytest.raises(ValueError, match="no public answer"):
        mechanisms.constrained_histogram(h, Policy(d, FullDomain(), [Marginal(["A0"])]), 1.0, gen)
    p = Policy(d, FullDomain(), [Marginal(["A0"], answers=[3, 3])])
    with pytest.raises(ValueError, match="below the proven bound"):
        mechanisms.constrained_histogram(h, p, 1.0, gen, sensitivity=2)
    with pytest.raises(ValueError, match="cells"):
        mechanisms.constrained_histogram(np.ones(5, dtype=np.int64), p, 1.0, gen)
    line = Domain.ordinal("x", 0, 4)
    q = [RangeCount(0, 2, answer=1), RangeCount(1, 3, answer=1), RangeCount(2, 4, answer=1)]
    with pytest.raises(NoProvenSensitivityError):
        mechanisms.constrained_histogram(np.array([0, 0, 1, 0, 0]), Policy(line, Line(), q), 1.0, gen)


@pytest.mark.slow
def test_pair_sum_attack_000_sec_3_2():
    """Replay of 000 Sec 3.2 / 004 Ex 3.1 with ``k - 1`` public sums ``c(r_i) + c(r_{i+1})``.

    The attacker forms ``k`` unbiased estimators of ``c(r_1)`` from the noisy
    counts and the public sums, ``e_j = s_j + (-1)^(j+1) c~(r_j)`` with
    ``s_j`` the alternating sum of the public answers, and averages them:
    with independent noise of variance ``v`` per cell its squared error is
    ``v / k``.

    True sensitivity (derivation for general even ``k``; the oracle confirms
    ``k = 2, 4, 6`` in tests/policy/test_constraints.py).  The feasible histograms
    with ``n`` tuples are ``h0 + t v`` with ``v = (1, -1, 1, ..., -1)``.  For
    odd ``k`` the total ``n`` fixes ``t`` and ``S = 0``.  For even ``k`` two
    feasible databases differ in histogram by ``m v``.  If ``|m| >= 2`` the
    tuples moved from the even to the odd positions form a bipartite
    multigraph in which every value has degree ``|m|``; it holds a perfect
    matching (Hall), i.e. a proper subset of the changes that shifts the
    histogram by exactly ``v`` and keeps every sum, so by Def 4.1 condition
    3(a) the pair is not a neighbour (under the complete graph every change
    is secret).  Likewise changes that cancel in the histogram can be
    dropped.  So neighbours differ by at most ``v`` and ``S(h, P) = ||v||_1
    = k``, attained by moving one tuple from each even position to an odd
    one.  The constraints overlap (not sparse), so the library refuses them
    and this sensitivity is passed explicitly.

    With DP calibration (sensitivity 2) the attacker's error shrinks like
    ``1/k``; calibrated to ``S = k`` it is ``2 k / epsilon^2``-ish and does
    not shrink.
    """
    eps = 1.0
    trials = 400
    errors = {}
    for k in (8, 32):
        d = Domain.ordinal("r", 1, k)
        h = np.full(k, 10, dtype=np.int64)
        cons = [CountQuery(np.isin(np.arange(k), [i, i + 1]), answer=20) for i in range(k - 1)]
        policy = Policy(d, FullDomain(), cons)
        with pytest.raises(NoProvenSensitivityError):
            policy.sensitivity("histogram")
        a = h[:-1] + h[1:]
        # s_j: c(r_1) = s_j + (-1)^(j+1) c(r_j) with s_1 = 0, s_{j+1} = (-1)^(j+1) a_j + s_j ... built directly:
        sign = (-1.0) ** np.arange(k)  # +1 for r_1, -1 for r_2, ...
        s = np.concatenate([[0.0], np.cumsum(sign[:-1] * a)])  # c(r_1) - sign_j c(r_j) = s_j
        for label, sens in (("dp", 2), ("blowfish", k)):
            gen = Generator(seed=1000 + k)
            sq = []
            for _ in range(trials):
                r = mechanisms.constrained_histogram(
                    h, policy, eps, gen, consistent=False, sensitivity=sens
                )
                est = np.mean(s + sign * r.noisy)
                sq.append((est - h[0]) ** 2)
            errors[(label, k)] = (float(np.mean(sq)), r.variance / k)
    dp8, dp32 = errors[("dp", 8)][0], errors[("dp", 32)][0]
    bf8, bf32 = errors[("blowfish", 8)][0], errors[("blowfish", 32)][0]
    # predicted: dp error falls 4x from k=8 to k=32; blowfish error rises 4x
    assert dp32 < dp8 / 2
    assert bf32 > bf8 * 2
    for key, (emp, pred) in errors.items():
        assert 0.5 * pred < emp < 2.0 * pred, key


# -- plan, then measure (issue 11) --------------------------------------------


def _two_marginal_case():
    d = _cube((2, 3, 4))
    h = np.random.default_rng(4).integers(0, 9, size=(2, 3, 4))
    c1 = Marginal(["A0", "A1"], answers=h.sum(axis=2))
    c2 = Marginal(["A1", "A2"], answers=h.sum(axis=0))
    return h, Policy(d, FullDomain(), [c1, c2], neighbours="moves")


@pytest.mark.parametrize("opts", [{}, {"consistent": False}, {"nonnegative": True}, {"sensitivity": 12},
                                  {"method": "cg"}])
def test_plan_matches_the_functional_call(opts):
    h, p = _two_marginal_case()
    plan = plan_constrained_histogram(p, 0.7, **opts)
    assert isinstance(plan, Plan) and plan.mechanism == "constrained_histogram"
    r = mechanisms.constrained_histogram(h, p, 0.7, Generator(seed=9), **opts)
    (part,) = plan.parts
    assert plan.epsilon_exact == r.epsilon_exact and plan.epsilon <= 0.7
    assert part.scale == r.scale and part.sensitivity == r.sensitivity and part.how == r.sensitivity_rule
    assert part.count == h.size
    m = plan.measure(h, Generator(seed=9))  # same seed, same release
    assert np.array_equal(m.noisy, r.noisy) and np.array_equal(m.values, r.values)
    assert (m.method, m.rank, m.epsilon_exact) == (r.method, r.rank, r.epsilon_exact)
    assert m.plan is not None and r.plan is not None and m.plan.describe() == r.plan.describe()
    assert plan.options["consistency"] == m.method
    expected = plan.expected_error["total_squared_error"]
    assert expected == m.expected_squared_error or (expected is None and m.expected_squared_error is None)
    # a flat histogram gives a flat release with the same numbers
    flat = plan.measure(h.reshape(-1), Generator(seed=9))
    assert flat.values.shape == (h.size,) and np.array_equal(flat.noisy, m.noisy.reshape(-1))


def test_constrained_release_is_a_release():
    h, p = _two_marginal_case()
    r = mechanisms.constrained_histogram(h, p, 1.0, Generator(seed=3))
    assert isinstance(r, Release) and isinstance(r, ConstrainedRelease)
    assert r.released_values is r.values or np.array_equal(r.released_values, r.values)
    s = r.summary()
    assert s["mechanism"] == "constrained_histogram" and s["seeded"] and s["privacy"] == "seeded: NOT private"
    assert s["epsilon_spent_exact"] == str(r.epsilon_exact)
    assert s["scales"] == {"cells": str(r.scale) if r.scale.denominator != 1 else int(r.scale)}
    assert s["sensitivity"] == {"cells": int(r.sensitivity)} and "move model" in s["guarantee"]
    assert s["expected_error"]["total_squared_error"] == pytest.approx(r.expected_squared_error)
    assert "plan" not in repr(r)


def test_plan_refuses_bad_options_before_any_data():
    d = _cube((2, 3))
    ok = Policy(d, FullDomain(), [Marginal(["A0"], answers=[3, 3])])
    with pytest.raises(ValueError, match="method must be 'auto', 'cuboids' or 'cg', got 'dense'"):
        plan_constrained_histogram(ok, 1.0, method="dense")
    with pytest.raises(TypeError, match="consistent must be True or False"):
        plan_constrained_histogram(ok, 1.0, consistent="yes")
    with pytest.raises(ValueError, match="epsilon"):
        plan_constrained_histogram(ok, 0.0)
    with pytest.raises(ValueError, match="below the proven bound"):
        plan_constrained_histogram(ok, 1.0, sensitivity=2)
    with pytest.raises(ValueError, match="no public answer"):
        plan_constrained_histogram(Policy(d, FullDomain(), [Marginal(["A0"])]), 1.0)
    contradictory = Policy(d, FullDomain(), [Marginal(["A0"], answers=[3, 3]), Marginal(["A1"], answers=[1, 1, 1])])
    with pytest.raises(ValueError, match="contradictory"):
        plan_constrained_histogram(contradictory, 1.0, sensitivity=4)
    with pytest.raises(ValueError, match="cuboids"):
        plan_constrained_histogram(Policy(d, FullDomain(), [CountQuery(np.arange(6) < 2, answer=2)]), 1.0,
                                   method="cuboids")
    line = Domain.ordinal("x", 0, 4)
    q = [RangeCount(0, 2, answer=1), RangeCount(1, 3, answer=1), RangeCount(2, 4, answer=1)]
    with pytest.raises(NoProvenSensitivityError):
        plan_constrained_histogram(Policy(line, Line(), q), 1.0)
    # without consistency the answers are not needed, and the plan reads no data
    plan = plan_constrained_histogram(Policy(d, FullDomain(), [Marginal(["A0"])]), 1.0, consistent=False)
    assert plan.options["consistency"] == "none" and plan.describe()["parts"][0]["name"] == "cells"


def test_measure_checks_only_the_public_shape_and_the_public_answers():
    d = _cube((2, 3))
    plan = plan_constrained_histogram(Policy(d, FullDomain(), [Marginal(["A0"], answers=[2, 4])]), 1.0)
    with pytest.raises(ValueError, match="6 cells"):
        plan.measure(np.ones(5, dtype=np.int64), Generator(seed=1))
    with pytest.raises(TypeError, match="integers"):
        plan.measure(np.ones((2, 3)), Generator(seed=1))
    with pytest.raises(ValueError, match="does not satisfy constraints\\[0\\]") as err:
        plan.measure(np.array([[1, 1, 1], [1, 1, 1]]), Generator(seed=1))
    assert "[1, 1, 1]" not in str(err.value) and "3" not in str(err.value).split("(")[0]


@pytest.mark.slow
def test_the_plan_passes_the_exact_audit_with_consistency():
    from blowfish_privacy import Categorical, audit

    dom = Domain([Categorical("a", ["a1", "a2"]), Categorical("b", ["b1", "b2"]), Categorical("c", ["c1", "c2"])])
    pol = Policy(dom, FullDomain(), [Marginal(["a", "b"], answers=[[1, 1], [1, 1]])])
    rep = audit.exact(plan_constrained_histogram, pol, epsilon=0.5, n=4)
    assert rep.ok and rep.pairs > 0, str(rep)
    # the projection is post-processing of the noisy counts and the public answers only
    assert rep.max_log_ratio == pytest.approx(0.5, rel=1e-6)
