"""Kronecker strategies (mechanisms/strategies/_kron*.py): closed-form sensitivity and error against dense oracles."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import check_grad

from blowfish_privacy import Policy, audit
from blowfish_privacy import secrets as S
from blowfish_privacy.policy.domain import Domain, Ordinal
from blowfish_privacy.mechanisms.strategies import _kron as K
from blowfish_privacy.mechanisms.strategies import _kron_sensitivity as KS
from blowfish_privacy.mechanisms.strategies import _strategy as ST
from blowfish_privacy.mechanisms.strategies import _strategy_sensitivity as SS
from blowfish_privacy.noise import Generator
from blowfish_privacy.workloads import AllRanges, Explicit, Identity, Kronecker, Prefix, RandomRectangles, Stack


def _dom(*shape, widths=None):
    widths = widths or [1] * len(shape)
    return Domain([Ordinal(f"a{i}", 0, (n - 1) * w, bin_width=w) if w > 1 else Ordinal(f"a{i}", 0, n - 1)
                   for i, (n, w) in enumerate(zip(shape, widths))])


def _dense(factors):
    A = np.asarray(factors[0])
    for f in factors[1:]:
        A = np.kron(A, f)
    return A


_GRAPHS = {
    "grid": lambda: S.DistanceThreshold(1),
    "l1_2": lambda: S.DistanceThreshold(2),
    "linf_1": lambda: S.DistanceThreshold(1, "linf"),
    "full": lambda: S.FullDomain(),
    "attribute": lambda: S.Attribute(1),
}


@pytest.mark.parametrize("graph", sorted(_GRAPHS))
@pytest.mark.parametrize("shape", [(4, 5), (3, 3, 2), (6,)])
@pytest.mark.parametrize("kind", ["int", "real", "nonneg"])
def test_sensitivity_against_edge_scan(graph, shape, kind):
    rng = np.random.default_rng(abs(hash((graph, shape, kind))) % 2**32)
    policy = Policy(_dom(*shape), _GRAPHS[graph]())
    for _ in range(4):
        if kind == "int":
            fs = [rng.integers(-3, 4, size=(n + 1, n)) for n in shape]
        elif kind == "real":
            fs = [rng.standard_normal((n + 2, n)) for n in shape]
        else:
            fs = [rng.random((n + 1, n)) * (rng.random((n + 1, n)) < 0.6) for n in shape]
        exact, _ = SS.strategy_sensitivity(_dense(fs), policy)
        value, how = KS.kronecker_sensitivity(fs, policy)
        assert value >= exact - 1e-9 * max(1.0, exact)  # never below the truth
        if how.startswith("exact"):
            assert value == pytest.approx(exact, rel=1e-12, abs=1e-12)
        if kind == "int":
            assert isinstance(value, int)


@pytest.mark.parametrize("shape", [(4, 5), (3, 3, 2)])
def test_grid_sensitivity_is_exact(shape):
    rng = np.random.default_rng(5)
    policy = Policy(_dom(*shape), S.DistanceThreshold(1))
    fs = [rng.standard_normal((n + 1, n)) for n in shape]
    value, how = KS.kronecker_sensitivity(fs, policy)
    assert how.startswith("exact")
    assert value == pytest.approx(SS.strategy_sensitivity(_dense(fs), policy)[0], rel=1e-12)


def test_small_products_without_a_closed_form_are_scanned_exactly():
    rng = np.random.default_rng(9)
    fs = [rng.random((4, 3)), rng.random((5, 4))]
    for graph in (S.Attribute(1), S.DistanceThreshold(1, "linf"), S.FullDomain(), S.DistanceThreshold(2)):
        policy = Policy(_dom(3, 4), graph)
        value, how = KS.kronecker_sensitivity(fs, policy)
        assert how.startswith("exact"), (graph, how)
        assert value == pytest.approx(SS.strategy_sensitivity(_dense(fs), policy)[0], rel=1e-12)
    # above the size limit the safe bounds stand in (never below the truth)
    big = Policy(_dom(3, 4), S.FullDomain())
    old = KS._DENSE_SCAN_ENTRIES
    try:
        KS._DENSE_SCAN_ENTRIES = 0
        value, how = KS.kronecker_sensitivity(fs, big)
    finally:
        KS._DENSE_SCAN_ENTRIES = old
    assert how.startswith("upper bound") and value >= SS.strategy_sensitivity(_dense(fs), big)[0]


def test_sensitivity_bin_widths_and_add_remove():
    rng = np.random.default_rng(2)
    fs = [rng.random((4, 3)), rng.random((5, 4))]
    # bins of width 2 on axis 0: a threshold of 1 joins only neighbours along axis 1
    policy = Policy(_dom(3, 4, widths=[2, 1]), S.DistanceThreshold(1))
    value, how = KS.kronecker_sensitivity(fs, policy)
    assert how.startswith("exact")
    assert value == pytest.approx(SS.strategy_sensitivity(_dense(fs), policy)[0], rel=1e-12)
    ar, _ = KS.kronecker_sensitivity(fs, policy, neighbours="add_remove")
    assert ar == pytest.approx(np.abs(_dense(fs)).sum(axis=0).max(), rel=1e-12)


def _workloads(shape, rng):
    out = {"explicit": Explicit(rng.integers(0, 3, size=(7, int(np.prod(shape)))).astype(float), shape)}
    if len(shape) == 2:
        out["rectangles"] = RandomRectangles(shape, 40, rng)
        out["kron"] = Kronecker(AllRanges(shape[0]), Prefix(shape[1]))
        out["stack"] = Stack(Kronecker(Identity(shape[0]), AllRanges(shape[1])), RandomRectangles(shape, 5, rng))
    return out


@pytest.mark.parametrize("shape", [(5, 6), (3, 2, 4)])
@pytest.mark.parametrize("total", ["none", "public"])
def test_error_against_dense(shape, total):
    rng = np.random.default_rng(11)
    fs = [rng.random((n + 2, n)) for n in shape]
    for name, W in _workloads(shape, rng).items():
        got = K.kronecker_error(fs, W, total=total)
        want = ST.strategy_error(_dense(fs), W, total=total)
        assert got == pytest.approx(want, rel=1e-8), name


def test_measurement_is_least_squares_and_budget():
    rng = np.random.default_rng(3)
    shape = (4, 5)
    policy = Policy(_dom(*shape), S.DistanceThreshold(1))
    fs = [rng.random((n + 1, n)) for n in shape]
    plan = K.plan_kronecker(fs, policy, 0.5)
    assert plan.epsilon_exact <= 0.5
    hist = rng.integers(0, 30, size=shape)
    rel = plan.measure(hist, Generator(seed=4))
    y = rel.params["answers"]
    A = _dense([np.rint(f * 4096) / 4096 for f in fs])
    # least squares subject to the public total, by the KKT system
    n = int(hist.sum())
    N = A.shape[1]
    KKT = np.block([[A.T @ A, np.ones((N, 1))], [np.ones((1, N)), np.zeros((1, 1))]])
    x = np.linalg.solve(KKT, np.concatenate([A.T @ y, [n]]))[:N]
    assert np.allclose(rel.histogram.reshape(-1), x, atol=1e-6)
    assert rel.histogram.sum() == pytest.approx(n)
    plain = K.plan_kronecker(fs, policy, 0.5, total="none").measure(hist, Generator(seed=4))
    assert np.allclose(plain.histogram.reshape(-1), np.linalg.lstsq(A, plain.params["answers"], rcond=None)[0])


@pytest.mark.slow
def test_expected_error_matches_empirical_mse():
    rng = np.random.default_rng(8)
    shape = (3, 4)
    policy = Policy(_dom(*shape), S.DistanceThreshold(1))
    W = RandomRectangles(shape, 12, rng)
    fs = [np.vstack([np.eye(n), rng.random((1, n))]) for n in shape]
    plan = K.plan_kronecker(fs, policy, 1.0, workload=W, resolution=16)
    hist = rng.integers(0, 9, size=shape)
    truth = W.answer(hist)
    gen = Generator(seed=77)
    reps = 2000
    total = sum(float(np.sum((W.answer(plan.measure(hist, gen).histogram) - truth) ** 2)) for _ in range(reps))
    assert total / reps == pytest.approx(plan.expected_error["workload_total_squared_error"], rel=0.05)


def plan_kron_tiny(policy, epsilon):
    f0 = np.array([[1, 0], [0, 1], [1, 1]])
    f1 = np.array([[1, 0], [1, 1]])
    return K.plan_kronecker([f0, f1], policy, epsilon, resolution=1)


@pytest.mark.parametrize("graph", [S.DistanceThreshold(1), S.FullDomain()])
def test_exact_audit(graph):
    rep = audit.exact(plan_kron_tiny, Policy(_dom(2, 2), graph), epsilon=1.0, n=2)
    assert rep.ok, str(rep)


def test_exact_audit_catches_a_grid_plan_under_bounded_dp():
    def plan_kron_grid_only(policy, epsilon):
        return K.plan_kronecker([np.array([[1, 0], [1, 1]]), np.array([[1, 0], [1, 1]])],
                                Policy(_dom(2, 2), S.DistanceThreshold(1)), epsilon, resolution=1)

    rep = audit.exact(plan_kron_grid_only, Policy(_dom(2, 2), S.FullDomain()), epsilon=1.0, n=1)
    assert not rep.ok


def test_axis_objective_gradient():
    rng = np.random.default_rng(0)
    n, m = 6, 8
    G = AllRanges(n).gram()
    x0 = (np.vstack([np.eye(n), rng.random((2, n))]) + 0.1 * rng.random((m, n))).reshape(-1)
    err = check_grad(lambda x: K._axis_objective(x, G, m, n, 0.7)[0],
                     lambda x: K._axis_objective(x, G, m, n, 0.7)[1], x0)
    assert err < 1e-4 * np.linalg.norm(K._axis_objective(x0, G, m, n, 0.7)[1])


@pytest.mark.slow  # ~7 s of L-BFGS-B
def test_optimised_grid_strategy_never_worse_than_its_starts():
    shape = (16, 16)
    policy = Policy(_dom(*shape), S.DistanceThreshold(1))
    W = RandomRectangles(shape, 200, np.random.default_rng(1))
    res = K.optimize_kronecker(W, policy, maxiter=150)
    cands = res["candidates"]
    assert res["error"] == min(cands.values())
    assert res["error"] <= cands["identity"] and res["error"] <= cands["p-identity"]
    # the error reported is the sensitivity squared times the least-squares error of the chosen factors
    s, _ = KS.kronecker_sensitivity(res["factors"], policy)
    assert res["error"] == pytest.approx(s * s * K.kronecker_error(res["factors"], W, total="public"))


def test_validation():
    policy = Policy(_dom(3, 3), S.DistanceThreshold(1))
    with pytest.raises(ValueError, match="factors"):
        K.plan_kronecker([np.eye(3)], policy, 1.0)
    with pytest.raises(ValueError, match="full column rank"):
        K.plan_kronecker([np.eye(3), np.ones((2, 3))], policy, 1.0)
    with pytest.raises(ValueError, match="total"):
        K.plan_kronecker([np.eye(3), np.eye(3)], policy, 1.0, neighbours="add_remove")
    with pytest.raises(ValueError, match="resolution"):
        K.plan_kronecker([np.eye(3), np.eye(3)], policy, 1.0, resolution=0)
    with pytest.raises(ValueError, match="neighbours"):
        KS.kronecker_sensitivity([np.eye(3), np.eye(3)], policy, neighbours="both")


def test_add_remove_plan_states_the_dp_model():
    policy = Policy(_dom(3, 3), S.DistanceThreshold(1))
    hist = np.arange(9, dtype=np.int64).reshape(3, 3)
    dp = K.plan_kronecker([np.eye(3), np.eye(3)], policy, 1.0, neighbours="add_remove", total="none")
    blowfish = K.plan_kronecker([np.eye(3), np.eye(3)], policy, 1.0)
    assert dp.model == "DP" and "add/remove" in dp.guarantee
    assert blowfish.model == "Blowfish" and "Blowfish" in blowfish.guarantee
    r = dp.measure(hist, Generator(3))
    assert r.model == "DP" and r.guarantee == "add/remove DP" and r.summary()["model"] == "DP"
    assert blowfish.measure(hist, Generator(3)).guarantee == repr(policy.secrets)
