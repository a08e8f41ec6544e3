"""HDMM's marginals template under a policy (mechanisms/strategies/_marginals_*.py): closed forms against dense oracles."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import check_grad

from blowfish_privacy import Policy, audit
from blowfish_privacy import secrets as S
from blowfish_privacy.policy.domain import Domain, Ordinal
from blowfish_privacy.errors import ParameterError
from blowfish_privacy.mechanisms.strategies import _strategy
from blowfish_privacy.mechanisms.strategies import _marginals_algebra as MA
from blowfish_privacy.mechanisms.strategies import _marginals_optimise as MO
from blowfish_privacy.mechanisms.strategies import _marginals_plan as MP
from blowfish_privacy.mechanisms.strategies import _marginals_sensitivity as MS
from blowfish_privacy.mechanisms.strategies import _strategy_sensitivity
from blowfish_privacy.noise import MAX_SCALE, Generator
from blowfish_privacy.workloads import AllRanges, Explicit, Identity, Kronecker, Marginals, Prefix, Stack, Total

SHAPES = [(2, 3), (2, 2, 3), (3, 3, 2), (3, 1, 2)]


def _domain(shape):
    return Domain([Ordinal(f"a{i}", 0, n - 1) for i, n in enumerate(shape)])


def _dense(shape, weights):
    """The strategy stack theta_S M_S as a dense matrix (tests only)."""
    rows = []
    for axes, t in sorted(weights.items()):
        if t == 0:
            continue
        B = np.ones((1, 1))
        for i, n in enumerate(shape):
            B = np.kron(B, np.eye(n) if i in axes else np.ones((1, n)))
        rows.append(t * B)
    return np.vstack(rows)


def _random_weights(rng, shape, p_zero=0.35, full=True, integer=False):
    d = len(shape)
    w = {}
    for k in range(d + 1):
        for axes in itertools.combinations(range(d), k):
            if rng.random() < p_zero:
                w[axes] = 0 if integer else 0.0
            else:
                w[axes] = int(rng.integers(1, 6)) if integer else float(rng.random())
    if full:
        w[tuple(range(d))] = w[tuple(range(d))] or (3 if integer else 0.4)
    if not any(w.values()):
        w[(0,)] = 2 if integer else 0.7
    return w


def _projector(shape, T):
    P = np.ones((1, 1))
    for i, n in enumerate(shape):
        J = np.ones((n, n)) / n
        P = np.kron(P, np.eye(n) - J if T >> i & 1 else J)
    return P


def _graphs(shape, rng):
    N = math.prod(shape)
    pairs = list(itertools.combinations(range(N), 2))
    pick = rng.choice(len(pairs), size=min(5, len(pairs)), replace=False)

    def rec(u):  # a record: the codes (Ordinal(0, n - 1) values) of flat index u
        return tuple(int(c) for c in np.unravel_index(u, shape))

    return [S.FullDomain(), S.Attribute(1), S.Attribute(2), S.Attribute(5), S.DistanceThreshold(1),
            S.DistanceThreshold(1, "linf"), S.DistanceThreshold(1.5, "l2"), S.DistanceThreshold(2),
            S.Custom([(rec(pairs[k][0]), rec(pairs[k][1])) for k in pick]),
            S.Partition([[rec(u) for u in range(0, N, 2)], [rec(u) for u in range(1, N, 2)]])]


# ---------------------------------------------------------------------------
# sensitivity


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("integer", [False, True])
def test_sensitivity_matches_edge_scan(shape, integer):
    rng = np.random.default_rng(hash((shape, integer)) % 2**32)
    for graph in _graphs(shape, rng):
        policy = Policy(_domain(shape), graph)
        for trial in range(3):
            w = _random_weights(rng, shape, integer=integer, full=trial != 2)
            value, how = MS.marginals_sensitivity(w, policy)
            truth, truth_how = _strategy_sensitivity.strategy_sensitivity(_dense(shape, w), policy)
            assert how.startswith("exact") and truth_how.startswith("exact")
            if integer:
                assert isinstance(value, int) and value == truth, (graph, w)
            else:
                assert value == pytest.approx(truth, rel=1e-12, abs=1e-12), (graph, w)


def test_sensitivity_threshold_with_bin_widths():
    dom = Domain([Ordinal("a", 0, 5, bin_width=2), Ordinal("b", 0, 2), Ordinal("c", 0, 3, bin_width=2)])
    rng = np.random.default_rng(8)
    shape = tuple(dom.shape)
    for graph in (S.DistanceThreshold(2), S.DistanceThreshold(3), S.DistanceThreshold(2.5, "l2"),
                  S.DistanceThreshold(1, "linf"), S.DistanceThreshold(2, "linf")):
        policy = Policy(dom, graph)
        for _ in range(4):
            w = _random_weights(rng, shape, full=False)
            value, how = MS.marginals_sensitivity(w, policy)
            truth, truth_how = _strategy_sensitivity.strategy_sensitivity(_dense(shape, w), policy)
            assert truth_how.startswith("exact") and value == pytest.approx(truth, rel=1e-12, abs=1e-12), graph


def test_sensitivity_closed_forms():
    shape = (2, 2, 3)
    policy = Policy(_domain(shape), S.FullDomain())
    w = {(): 5.0, (0,): 1.0, (1, 2): 2.0, (0, 1, 2): 0.5}
    assert MS.marginals_sensitivity(w, policy)[0] == pytest.approx(2 * 3.5)  # the total never changes
    attr = Policy(_domain(shape), S.Attribute(1))
    assert MS.marginals_sensitivity(w, attr)[0] == pytest.approx(2 * 2.5)  # axis 1 or 2: (1, 2) and (0, 1, 2)
    assert MS.marginals_sensitivity(w, "add_remove", shape=shape)[0] == pytest.approx(8.5)
    # an axis of length 1 never changes
    one = Policy(_domain((3, 1)), S.Attribute(1))
    assert MS.marginals_sensitivity({(1,): 4, (0,): 1}, one) == (2, MS.marginals_sensitivity({(0,): 1}, one)[1])
    no_edge = Policy(_domain((3, 2)), S.Custom([]))
    assert MS.marginals_sensitivity({(0,): 1.0}, no_edge)[0] == 0


@pytest.mark.parametrize("shape", SHAPES)
def test_add_remove_sensitivity_is_largest_column_norm(shape):
    rng = np.random.default_rng(3)
    for _ in range(3):
        w = _random_weights(rng, shape)
        A = _dense(shape, w)
        value, _ = MS.marginals_sensitivity(w, "add_remove", shape=shape)
        assert value == pytest.approx(np.abs(A).sum(axis=0).max(), rel=1e-12)  # one record added at u


def test_sensitivity_refuses_unknown_graphs(monkeypatch):
    monkeypatch.setattr(MS, "LISTED_EDGE_DOMAIN", 4)
    policy = Policy(_domain((2, 3)), S.Partition([[(0, 0), (0, 1), (0, 2)], [(1, 0), (1, 1), (1, 2)]]))
    with pytest.raises(ParameterError, match="axes each edge can change"):
        MS.marginals_sensitivity({(0,): 1.0}, policy)


# ---------------------------------------------------------------------------
# eigen traces and error


def _workloads():
    rng = np.random.default_rng(1)
    return [
        Marginals((2, 3), [(0,), (0, 1), ()]),
        Marginals((2, 2, 3), [(0, 1), (1, 2), (0, 2), (2,), (2,)]),
        Kronecker(Prefix(2), AllRanges(3)),
        Kronecker(Explicit(rng.random((3, 4)), (2, 2)), Prefix(3)),
        Stack(Kronecker(Identity(3), Total(3), Prefix(2)), Marginals((3, 3, 2), [(0, 2)])),
        Explicit(rng.random((4, 12)), (3, 2, 2)),  # few queries: from the rows
        Explicit(rng.random((20, 12)), (2, 3, 2)),  # from the Gram matrix
        Kronecker(Explicit(rng.random((40, 6)), (3, 2)), Identity(2)),
    ]


@pytest.mark.parametrize("k", range(len(_workloads())))
def test_eigen_traces_match_dense_projectors(k):
    W = _workloads()[k]
    shape = W.shape
    g = MA.eigen_traces(W)
    G = W.gram()
    truth = np.array([np.trace(G @ _projector(shape, T)) for T in range(1 << len(shape))])
    assert np.allclose(g, truth, rtol=1e-10, atol=1e-9)
    assert g.sum() == pytest.approx(W.frobenius_squared())
    assert np.allclose(MA.eigen_traces(W.matrix(), shape), truth, rtol=1e-10, atol=1e-9)  # a plain matrix


@pytest.mark.parametrize("shape", SHAPES)
def test_error_matches_dense_strategy_error(shape):
    rng = np.random.default_rng(sum(shape))
    d = len(shape)
    W = Marginals(shape, [a for k in (1, 2) for a in itertools.combinations(range(d), k)])
    R = Explicit(rng.random((7, math.prod(shape))), shape)
    for _ in range(3):
        w = _random_weights(rng, shape)
        w[()] = w[()] or 0.3  # full column rank for total="none"
        A = _dense(shape, w)
        for wl in (W, R):
            for total in ("public", "none"):
                assert MA.marginals_error(w, wl, total=total) == pytest.approx(
                    _strategy.strategy_error(A, wl.matrix(), total=total), rel=1e-9)


def test_error_of_rank_deficient_strategy_is_the_pseudo_inverse_one():
    shape = (2, 2, 3)
    W = Marginals(shape, [(0, 1), (2,)])
    w = {(0, 1): 0.7, (2,): 1.2, (1, 2): 0.4, (): 0.5}
    A = _dense(shape, w)
    Wm = W.matrix()
    assert MA.marginals_error(w, W, total="none") == pytest.approx(
        np.sum((Wm @ np.linalg.pinv(A)) ** 2), rel=1e-9)
    assert MA.marginals_error({(0, 1): 1.0}, W) == math.inf  # marginal (2,) is not determined


# ---------------------------------------------------------------------------
# least squares


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("full", [True, False])
def test_reconstruction_matches_lstsq(shape, full):
    rng = np.random.default_rng(len(shape) * 10 + full)
    N = math.prod(shape)
    for _ in range(3):
        w = _random_weights(rng, shape, full=full)
        w[()] = w[()] or 0.3
        theta = MA.weights_vector(w, shape)
        A = _dense(shape, w)
        y = rng.normal(size=A.shape[0]) * 3
        answers, pos = {}, 0
        for axes, t in sorted(w.items()):
            if t > 0:
                k = math.prod(shape[i] for i in axes)
                answers[MA.axes_mask(axes)] = y[pos:pos + k]
                pos += k
        x = MP._reconstruct(answers, theta, shape).reshape(-1)
        assert np.allclose(x, np.linalg.lstsq(A, y, rcond=None)[0], atol=1e-9)  # minimum-norm least squares
        # with the public total: n / N on the mean, least squares on the sums-to-zero space
        n = 17.0
        Q = np.linalg.qr(np.column_stack([np.ones(N), np.eye(N)[:, :-1]]))[0][:, 1:]
        x0 = np.full(N, n / N)
        truth = x0 + Q @ np.linalg.lstsq(A @ Q, y - A @ x0, rcond=None)[0]
        got = MP._reconstruct(answers, theta, shape, n).reshape(-1)
        assert np.allclose(got, truth, atol=1e-9) and got.sum() == pytest.approx(n)


# ---------------------------------------------------------------------------
# optimiser


@pytest.mark.parametrize("graph", [S.FullDomain(), S.Attribute(1), "add_remove"])
def test_objective_gradient_and_value(graph):
    shape = (2, 3, 2)
    W = Marginals(shape, [(0, 1), (1, 2), (0,)])
    model = MS.sensitivity_model(graph if graph == "add_remove" else Policy(_domain(shape), graph), shape)
    public = graph != "add_remove"
    free = np.arange(1 if public else 0, 8)
    obj = MO._Objective(MA.eigen_traces(W), shape, model, free)
    rng = np.random.default_rng(2)
    for p in (16.0, 128.0):
        x = rng.random(free.shape[0]) + 0.1
        f = lambda t: obj(t, p)[0]  # noqa: E731
        grad = lambda t: obj(t, p)[1]  # noqa: E731
        assert check_grad(f, grad, x) < 1e-6 * max(1.0, np.linalg.norm(grad(x)))
        w = MA.weights_dict(obj.full(x), 3)
        pol = graph if graph == "add_remove" else Policy(_domain(shape), graph)
        sens = MS.marginals_sensitivity(w, pol, shape=shape)[0]
        err = MA.marginals_error(w, W, total="public" if public else "none")
        assert obj.exact(x) == pytest.approx(sens ** 2 * err, rel=1e-12)
        assert math.exp(f(x)) >= obj.exact(x) * (1 - 1e-12)  # the p-norm is above the max


@pytest.mark.parametrize("graph", [S.FullDomain(), S.Attribute(1), S.DistanceThreshold(1)])
def test_optimiser_never_worse_than_warm_starts(graph):
    shape = (3, 2, 2, 2)
    d = len(shape)
    W = Marginals(shape, list(itertools.combinations(range(d), 2)))
    policy = Policy(_domain(shape), graph)
    init = {(0, 1, 2): 1.0, (3,): 0.5}
    w, info = MO.optimize_marginals(W, policy, restarts=1, seed=4, maxiter=200, init=init)
    ident = {tuple(range(d)): 1.0}
    own = {a: 1.0 for a in W.axes_list}

    def objective(wts):
        return MS.marginals_sensitivity(wts, policy)[0] ** 2 * MA.marginals_error(wts, W)

    assert info["objective"] == pytest.approx(objective(w), rel=1e-9)
    for warm in (ident, own, init):
        assert info["objective"] <= objective(warm) * (1 + 1e-12)
    assert max(w.values()) == 1.0 and min(w.values()) > 0
    assert info["candidates"]["identity (as given)"] == pytest.approx(objective(ident), rel=1e-12)


def test_optimiser_add_remove_and_validation():
    shape = (2, 3)
    W = Marginals(shape, [(0,), (1,)])
    w, info = MO.optimize_marginals(W, "add_remove", shape=shape, restarts=1)
    assert info["objective"] == pytest.approx(
        MS.marginals_sensitivity(w, "add_remove", shape=shape)[0] ** 2 * MA.marginals_error(w, W, total="none"))
    assert info["objective"] <= info["candidates"]["identity (as given)"] * (1 + 1e-12)
    policy = Policy(_domain(shape), S.FullDomain())
    with pytest.raises(ParameterError, match="restarts"):
        MO.optimize_marginals(W, policy, restarts=-1)
    with pytest.raises(ParameterError, match="init"):
        MO.optimize_marginals(W, policy, init={(): 1.0, (0,): 1.0})
    with pytest.raises(ParameterError, match="nothing to estimate"):
        MO.optimize_marginals(Marginals(shape, [()]), policy)
    with pytest.raises(ParameterError, match="shape"):
        MO.optimize_marginals(Marginals((3, 2), [(0,)]), policy)


# ---------------------------------------------------------------------------
# plan and measurement


def test_plan_fields_budget_and_sensitivity():
    shape = (2, 2, 3)
    W = Marginals(shape, [(0, 1), (1, 2), (0,)])
    policy = Policy(_domain(shape), S.Attribute(1))
    plan = MP.plan_marginals(W, policy, 0.7, restarts=1)
    assert plan.epsilon_exact <= Fraction(7, 10)
    part = plan.parts[0]
    w = plan.options["weights"]
    K = plan.options["resolution"]
    assert part.sensitivity_exact and part.sensitivity == MS.marginals_sensitivity(
        {a: round(t * K) for a, t in w.items()}, policy)[0]
    # the rounded weights are at most the optimised ones (scaled to a largest weight of 1)
    opt = plan.options["optimisation"]
    assert opt is not None and max(w.values()) <= 1.0
    var = plan.expected_error["per_answer_variance"]
    assert plan.expected_error["workload_total_squared_error"] == pytest.approx(var * MA.marginals_error(w, W))
    hist = np.arange(12).reshape(shape) % 4
    rel = plan.measure(hist, Generator(seed=1))
    assert rel.histogram.shape == shape and rel.seeded
    assert rel.histogram.sum() == pytest.approx(hist.sum())  # the public total is kept
    assert set(rel.params["answers"]) == set(w)
    assert all(rel.params["answers"][a].shape == tuple(shape[i] for i in a) for a in w)


@pytest.mark.parametrize("shape, graph", [((2, 3), S.FullDomain()), ((3, 1, 2), S.FullDomain()),
                                          ((2, 2, 3), S.Attribute(1)), ((3, 3), S.DistanceThreshold(1))])
def test_plan_matches_plan_strategy_on_the_dense_strategy(shape, graph):
    d = len(shape)
    W = Marginals(shape, [(0,), (d - 1,), tuple(range(d))])
    policy = Policy(_domain(shape), graph)
    w = {(0,): 0.5, (d - 1,): 0.25, tuple(range(d)): 1.0}
    plan = MP.plan_marginals(W, policy, 1.0, weights=w)
    dense = _strategy.plan_strategy(_dense(shape, w), policy, 1.0, workload=W)
    assert plan.parts[0].sensitivity == dense.parts[0].sensitivity
    assert plan.parts[0].scale == dense.parts[0].scale and plan.epsilon_exact == dense.epsilon_exact
    for key in ("workload_total_squared_error", "cells_total_squared_error"):
        assert plan.expected_error[key] == pytest.approx(dense.expected_error[key], rel=1e-9)


def test_small_epsilon_coarsens_the_grid():
    shape = (2, 3)
    W = Marginals(shape, [(0,), (1,)])
    policy = Policy(_domain(shape), S.FullDomain())
    w = {(0,): 0.7, (1,): 1.0, (0, 1): 0.3}
    small = MP.plan_marginals(W, policy, 1e-4, weights=w)
    big = MP.plan_marginals(W, policy, 1.0, weights=w)
    assert small.options["resolution"] < 2**20 == big.options["resolution"]
    assert small.epsilon_exact <= Fraction(1, 10**4) and small.parts[0].scale <= MAX_SCALE
    assert small.expected_error["workload_total_squared_error"] * 1e-8 == pytest.approx(
        big.expected_error["workload_total_squared_error"], rel=1e-3)


@pytest.mark.slow
def test_expected_error_matches_empirical_mse():
    shape = (2, 2, 3)
    W = Marginals(shape, [(0, 1), (1, 2), (0,)])
    policy = Policy(_domain(shape), S.FullDomain())
    w = {(0, 1): 1.0, (1, 2): 0.8, (0, 2): 0.3, (0, 1, 2): 0.2}
    plan = MP.plan_marginals(W, policy, 1.0, weights=w)
    hist = np.array([3, 0, 5, 1, 2, 7, 0, 0, 4, 2, 1, 6]).reshape(shape)
    Wm = W.matrix()
    truth = Wm @ hist.reshape(-1)
    gen = Generator(seed=2024)
    reps, werr, cerr = 2000, 0.0, 0.0
    for _ in range(reps):
        est = plan.measure(hist, gen).histogram
        werr += float(np.sum((Wm @ est.reshape(-1) - truth) ** 2))
        cerr += float(np.sum((est - hist) ** 2))
    assert werr / reps == pytest.approx(plan.expected_error["workload_total_squared_error"], rel=0.05)
    assert cerr / reps == pytest.approx(plan.expected_error["cells_total_squared_error"], rel=0.05)


def test_rank_deficient_plan_is_unbiased_for_the_workload_only():
    shape = (2, 2, 2)
    W = Marginals(shape, [(0, 1), (2,)])
    policy = Policy(_domain(shape), S.Attribute(1))
    plan = MP.plan_marginals(W, policy, 1.0, weights={(0, 1): 1.0, (2,): 1.0})
    assert not plan.options["histogram_determined"]
    assert "cells_total_squared_error" not in plan.expected_error
    hist = np.array([5, 1, 0, 2, 3, 3, 9, 1]).reshape(shape)
    rel = plan.measure(hist, Generator(seed=3))
    assert rel.expected_squared_error is None
    # without noise the workload is answered exactly (the estimate is the minimum-norm one)
    exact = MP._reconstruct({MA.axes_mask(a): np.asarray(W.parts()[k].answer(hist)).reshape(
        [shape[i] for i in a]) for k, a in enumerate(W.axes_list)}, MA.weights_vector(
        {(0, 1): 1.0, (2,): 1.0}, shape), shape, int(hist.sum()))
    assert np.allclose(W.answer(exact), W.answer(hist))


def _fixed_axis_domain():
    # axis 0 has bins of width 2: DistanceThreshold(1) never changes it
    return Domain([Ordinal("a", 0, 3, bin_width=2), Ordinal("b", 0, 2), Ordinal("c", 0, 1)])


def _known_oracle(shape, w, fixed_axes):
    """Dense least squares knowing M_F x exactly (F = fixed_axes): x = K m_F + Q pinv(A Q) (y - A K m_F)."""
    N = math.prod(shape)
    A = _dense(shape, w)
    MF = _dense(shape, {tuple(fixed_axes): 1.0})
    K = np.linalg.pinv(MF)  # K m_F is the known part (the projection onto the row space of M_F)
    Q = np.linalg.svd(np.eye(N) - K @ MF)[0][:, : N - MF.shape[0]]  # basis of its complement
    R = Q @ np.linalg.pinv(A @ Q)
    return A, MF, K, R


def test_marginal_no_edge_changes_is_public_and_exact():
    dom = _fixed_axis_domain()
    shape = tuple(dom.shape)
    policy = Policy(dom, S.DistanceThreshold(1))
    W = Marginals(shape, [(0, 1), (1, 2), (0,)])
    w = {(1, 2): 1.0, (0, 1): 0.5, (0, 1, 2): 0.25, (0,): 3.0}  # (0,) is public: dropped
    plan = MP.plan_marginals(W, policy, 1.0, weights=w)
    assert plan.options["public_marginal"] == (0,) and (0,) not in plan.options["weights"]
    assert [p.name for p in plan.parts] == ["answers", "public marginal"]
    assert plan.parts[1].epsilon == 0 and plan.parts[1].scale == 0
    A, MF, K, R = _known_oracle(shape, plan.options["weights"], (0,))
    var = plan.expected_error["per_answer_variance"]
    Wm = W.matrix()
    assert plan.expected_error["workload_total_squared_error"] == pytest.approx(var * np.sum((Wm @ R) ** 2), rel=1e-9)
    assert plan.expected_error["cells_total_squared_error"] == pytest.approx(var * np.sum(R ** 2), rel=1e-9)
    # the reconstruction is that least squares, on noisy answers
    hist = np.arange(12).reshape(shape) % 5
    rel = plan.measure(hist, Generator(seed=9))
    y = np.concatenate([rel.params["answers"][a].reshape(-1) for a in sorted(plan.options["weights"])])
    m_F = MF @ hist.reshape(-1)
    truth = K @ m_F + R @ (y - A @ K @ m_F)
    assert np.allclose(rel.histogram.reshape(-1), truth, atol=1e-9)
    assert np.allclose(MF @ rel.histogram.reshape(-1), m_F)  # the public marginal is kept exactly
    # the optimiser puts no weight on the public marginal, and is never worse than the identity
    wts, info = MO.optimize_marginals(W, policy, restarts=1)
    assert (0,) not in wts and () not in wts
    assert info["objective"] <= info["candidates"]["identity (as given)"] * (1 + 1e-12)


def plan_marginals_fixed_axis(policy, epsilon):
    return MP.plan_marginals(Marginals((2, 2), [(0,), (1,)]), policy, epsilon,
                            weights={(0,): 1.0, (1,): 0.5, (0, 1): 0.25})


@pytest.mark.slow
def test_exact_audit_with_a_public_marginal():
    """Custom edges change axis 1 only: the marginal on axis 0 is released exactly, the rest with noise."""
    policy = Policy(_domain((2, 2)), S.Custom([((0, 0), (0, 1)), ((1, 0), (1, 1))]))
    plan = plan_marginals_fixed_axis(policy, 1.0)
    assert plan.options["public_marginal"] == (0,)
    rep = audit.exact(plan_marginals_fixed_axis, policy, epsilon=1.0, n=2)
    assert rep.ok, str(rep)


def _plan_marginals_tiny(policy, epsilon):
    return MP.plan_marginals(Marginals((2, 2), [(0,), (1,)]), policy, epsilon,
                            weights={(0,): 1.0, (1,): 0.5, (0, 1): 0.25})


def plan_marginals_tiny(policy, epsilon):
    return _plan_marginals_tiny(policy, epsilon)


@pytest.mark.slow
@pytest.mark.parametrize("graph", [S.FullDomain(), S.Attribute(1)])
def test_exact_audit(graph):
    rep = audit.exact(plan_marginals_tiny, Policy(_domain((2, 2)), graph), epsilon=1.0, n=2)
    assert rep.ok, str(rep)


@pytest.mark.slow
def test_exact_audit_catches_a_plan_made_for_a_weaker_policy():
    def plan_marginals_attribute_only(policy, epsilon):  # calibrated for Attribute(1), audited under FullDomain
        return _plan_marginals_tiny(Policy(_domain((2, 2)), S.Attribute(1)), epsilon)

    rep = audit.exact(plan_marginals_attribute_only, Policy(_domain((2, 2)), S.FullDomain()), epsilon=1.0, n=2)
    # sensitivity 3.5 under FullDomain (u = (0, 0) -> v = (1, 1)) vs 2.5 under Attribute(1): ratio 1.4
    assert not rep.ok and rep.max_log_ratio == pytest.approx(1.4, rel=1e-3)


def test_plan_validation():
    shape = (2, 3)
    W = Marginals(shape, [(0,), (1,)])
    policy = Policy(_domain(shape), S.FullDomain())
    for bad, match in [({(1, 0): 1.0}, "sorted tuple"), ({(0, 0): 1.0}, "sorted tuple"), ({(2,): 1.0}, "sorted"),
                       ({(0,): -1.0}, ">= 0"), ({(0,): float("nan")}, "finite"), ({(0,): 0.0}, "positive"),
                       ({0: 1.0}, "tuple of axis"), ({(): 1.0}, "only the total"),
                       ({(0,): 1.0}, "do not determine the workload")]:
        with pytest.raises(ParameterError, match=match):
            MP.plan_marginals(W, policy, 1.0, weights=bad)
    with pytest.raises(TypeError, match="weights"):
        MP.plan_marginals(W, policy, 1.0, weights=[1.0, 2.0])
    with pytest.raises(ValueError, match="epsilon"):
        MP.plan_marginals(W, policy, 0, weights={(0, 1): 1.0})
    with pytest.raises(ParameterError, match="shape"):
        MP.plan_marginals(Marginals((3, 2), [(0,)]), policy, 1.0, weights={(0, 1): 1.0})
    with pytest.raises(ParameterError, match="at most 12"):
        MA.eigen_traces(Marginals((2,) * 13, [(0,)]))
    # a tiny weight that the grid rounds to 0 and that alone determines a marginal is refused
    with pytest.raises(ParameterError, match="after rounding"):
        MP.plan_marginals(W, policy, 1.0, weights={(0,): 1.0, (1,): 1e-9})


# ---------------------------------------------------------------------------
# figures


def _figures(shape, graph, restarts=3):
    d = len(shape)
    W = Marginals(shape, list(itertools.combinations(range(d), 2)))
    policy = Policy(_domain(shape), graph)
    _, info = MO.optimize_marginals(W, policy, restarts=restarts, seed=0)
    c = info["candidates"]
    return info["objective"] / c["identity (as given)"], info["objective"] / c["workload marginals (as given)"], info


@pytest.mark.slow
def test_figures_all_two_way_marginals():
    """Measured (seed 0, 3 restarts): optimised / identity and / the workload's marginals at equal weights."""
    rows = {}
    for shape in [(2,) * 8, (4, 5, 3, 2, 2, 6)]:
        for graph in (S.FullDomain(), S.Attribute(1)):
            rows[(shape, repr(graph))] = _figures(shape, graph)
    for (shape, g), (vs_ident, vs_own, info) in rows.items():
        print(shape, g, f"{vs_ident:.3f} {vs_own:.3f} {info['seconds']:.2f}s")
        assert vs_ident <= 1.0 + 1e-12 and vs_own <= 1.0 + 1e-12
    assert rows[((2,) * 8, "Attribute(c=1)")][0] < 0.35
    assert rows[((4, 5, 3, 2, 2, 6), "Attribute(c=1)")][0] < 0.2
    assert rows[((4, 5, 3, 2, 2, 6), "FullDomain()")][1] < 0.6
