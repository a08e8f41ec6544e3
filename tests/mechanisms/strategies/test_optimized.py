"""Strategies under a policy (mechanisms/strategies/optimized.py): exact sensitivity, error formula, audit, optimiser."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import check_grad

from blowfish_privacy import Policy, audit
from blowfish_privacy import secrets as S
from blowfish_privacy.policy.domain import Domain, Ordinal
from blowfish_privacy.mechanisms.strategies import _p_identity as PI
from blowfish_privacy.mechanisms.strategies import _strategy_sensitivity
from blowfish_privacy.mechanisms.strategies import optimized as O
from blowfish_privacy.noise import Generator


def _line_domain(n):
    return Domain.ordinal("x", 0, n - 1)


def _all_ranges(n):
    rows = []
    for lo in range(n):
        for hi in range(lo, n):
            r = np.zeros(n)
            r[lo:hi + 1] = 1
            rows.append(r)
    return np.array(rows)


def _brute_sensitivity(A, policy):
    """max over every pair (u, v) that the graph calls an edge, one pair at a time."""
    A = np.asarray(A, dtype=np.float64)
    dom, g = policy.domain, policy.secrets
    best = 0.0
    for u, v in itertools.combinations(range(dom.size), 2):
        if bool(g.edge_mask(dom, np.array([u]), np.array([v]))[0]):
            best = max(best, float(np.abs(A[:, u] - A[:, v]).sum()))
    return best


_POLICIES = {
    "line": lambda: Policy(_line_domain(7), S.Line()),
    "threshold2": lambda: Policy(_line_domain(7), S.DistanceThreshold(2)),
    "full": lambda: Policy(_line_domain(6), S.FullDomain()),
    "grid3x3": lambda: Policy(Domain([Ordinal("r", 0, 2), Ordinal("c", 0, 2)]), S.DistanceThreshold(1, "l1")),
    "grid3x3_linf": lambda: Policy(Domain([Ordinal("r", 0, 2), Ordinal("c", 0, 2)]), S.DistanceThreshold(1, "linf")),
    "custom": lambda: Policy(_line_domain(6), S.Custom([(0, 3), (1, 5), (2, 4), (3, 4)])),
    "partition": lambda: Policy(_line_domain(6), S.Partition([[0, 1, 2], [3, 4, 5]])),
}


@pytest.mark.parametrize("name", sorted(_POLICIES))
@pytest.mark.parametrize("kind", ["real", "int"])
def test_sensitivity_matches_brute_force(name, kind):
    policy = _POLICIES[name]()
    rng = np.random.default_rng(hash((name, kind)) % 2**32)
    N = policy.domain.size
    for trial in range(5):
        A = rng.normal(size=(4 + trial, N)) if kind == "real" else rng.integers(-3, 4, size=(4 + trial, N))
        value, how = O.strategy_sensitivity(A, policy)
        assert how.startswith("exact"), how
        truth = _brute_sensitivity(A, policy)
        if kind == "int":
            assert isinstance(value, int) and value == round(truth)
        else:
            assert value == pytest.approx(truth, rel=1e-12, abs=1e-12)


def test_sensitivity_known_values():
    N = 8
    line = Policy(_line_domain(N), S.Line())
    full = Policy(_line_domain(N), S.FullDomain())
    th = Policy(_line_domain(N), S.DistanceThreshold(3))
    P = O.prefix_strategy(N)
    assert O.strategy_sensitivity(P, line)[0] == 1  # the ordered mechanism's (000 Sec 7.1)
    assert O.strategy_sensitivity(P, th)[0] == 3  # theta for the cumulative histogram (000 Sec 7)
    assert O.strategy_sensitivity(np.eye(N, dtype=int), full)[0] == 2
    H = O.hierarchical_strategy(N, 2)
    assert O.strategy_sensitivity(H, full)[0] == 2 * 3  # 4 levels; two leaves share only the root


def test_full_domain_bound_when_scan_too_large(monkeypatch):
    policy = Policy(_line_domain(6), S.FullDomain())
    A = np.random.default_rng(3).random((5, 6))
    exact, how = O.strategy_sensitivity(A, policy)
    monkeypatch.setattr(_strategy_sensitivity, "PAIR_SCAN_LIMIT", 0)
    bound, how2 = O.strategy_sensitivity(A, policy)
    assert how.startswith("exact") and how2.startswith("upper bound")
    assert bound >= exact and bound == pytest.approx(2 * np.abs(A).sum(axis=0).max())


def test_sensitivity_no_edges_and_validation():
    policy = Policy(_line_domain(4), S.Custom([]))
    assert O.strategy_sensitivity(np.ones((2, 4)), policy) == (0, "exact: the secret graph has no edge on this domain")
    line = Policy(_line_domain(4), S.Line())
    with pytest.raises(ValueError, match="A must have N"):
        O.strategy_sensitivity(np.ones((2, 5)), line)
    with pytest.raises(ValueError, match="A must be a 2-D"):
        O.strategy_sensitivity(np.ones(4), line)
    with pytest.raises(TypeError, match="policy"):
        O.strategy_sensitivity(np.ones((2, 4)), "line")


# ---------------------------------------------------------------------------
# plan_strategy


def test_plan_strategy_budget_and_fields():
    policy = Policy(_line_domain(6), S.Line())
    A = np.random.default_rng(0).random((8, 6))
    plan = O.plan_strategy(A, policy, 0.3, workload=_all_ranges(6))
    assert plan.epsilon_exact <= Fraction(3, 10)
    assert len(plan.parts) == 1 and plan.parts[0].sensitivity_exact
    assert plan.expected_error["workload_total_squared_error"] > 0
    rel = plan.measure(np.array([3, 0, 2, 5, 1, 0]), Generator(seed=1))
    assert rel.histogram.shape == (6,) and rel.seeded
    assert rel.histogram.sum() == pytest.approx(11)  # the public total is kept
    with pytest.raises(ValueError, match="epsilon"):
        O.plan_strategy(A, policy, 0)
    with pytest.raises(ValueError, match="total"):
        O.plan_strategy(A, policy, 1.0, total="maybe")
    with pytest.raises(ValueError, match="determine the histogram"):
        O.plan_strategy(np.ones((3, 6)), policy, 1.0)


def test_expected_error_matches_empirical_mse():
    N = 5
    policy = Policy(_line_domain(N), S.DistanceThreshold(2))
    W = _all_ranges(N)
    A = np.vstack([np.eye(N), np.random.default_rng(7).random((2, N))])
    plan = O.plan_strategy(A, policy, 1.0, workload=W, resolution=64)
    hist = np.array([4, 0, 7, 2, 9])
    truth = W @ hist
    gen = Generator(seed=2024)
    total = 0.0
    reps = 2000
    for _ in range(reps):
        est = plan.measure(hist, gen).histogram
        total += float(np.sum((W @ est - truth) ** 2))
    expected = plan.expected_error["workload_total_squared_error"]
    assert total / reps == pytest.approx(expected, rel=0.05)


def _tiny_real_strategy():
    return np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.5, 0.25, 0.75]])


def plan_strategy_tiny(policy, epsilon):
    return O.plan_strategy(_tiny_real_strategy(), policy, epsilon, resolution=4)


def plan_strategy_prefix(policy, epsilon):
    return O.plan_strategy(O.prefix_strategy(policy.domain.size), policy, epsilon)


@pytest.mark.parametrize("graph", [S.Line(), S.FullDomain(), S.DistanceThreshold(2)])
def test_exact_audit(graph):
    policy = Policy(_line_domain(3), graph)
    for fn in (plan_strategy_tiny, plan_strategy_prefix):
        rep = audit.exact(fn, policy, epsilon=1.0, n=2)
        assert rep.ok, str(rep)


def test_exact_audit_catches_a_plan_made_for_a_weaker_policy():
    def plan_strategy_line_only(policy, epsilon):  # calibrated for the line, audited under bounded DP
        return O.plan_strategy(O.prefix_strategy(3), Policy(_line_domain(3), S.Line()), epsilon)

    rep = audit.exact(plan_strategy_line_only, Policy(_line_domain(3), S.FullDomain()), epsilon=1.0, n=2)
    assert not rep.ok and rep.max_log_ratio == pytest.approx(2.0, rel=1e-6)


# ---------------------------------------------------------------------------
# optimiser


def test_objective_gradient():
    rng = np.random.default_rng(5)
    N, p = 12, 3
    W = rng.random((15, N))
    G = W.T @ W
    theta = rng.random(p * N)
    f = lambda t: PI._p_identity_objective(t, G, p, N)[0]  # noqa: E731
    g = lambda t: PI._p_identity_objective(t, G, p, N)[1]  # noqa: E731
    assert check_grad(f, g, theta) < 1e-5 * np.linalg.norm(g(theta))
    A = PI._p_identity(theta.reshape(p, N))
    assert f(theta) == pytest.approx(np.trace(G @ np.linalg.inv(A.T @ A)), rel=1e-10)
    assert f(theta) == pytest.approx(O.strategy_error(A, W), rel=1e-8)


def test_p_identity_never_worse_than_warm_start_and_identity_all_ranges_64():
    N = 64
    W = _all_ranges(N)
    G = W.T @ W
    ident = O.strategy_error(np.eye(N), W)
    warm = np.full((8, N), 0.3)
    A0 = PI._p_identity(warm)
    A, err, info = O.optimize_p_identity(G, "bounded", 8, restarts=0, init=warm)
    assert info["objective"] <= O.strategy_error(A0, W) + 1e-9
    assert info["objective"] <= ident
    assert err == pytest.approx(4 * info["objective"])
    assert (info["theta"] >= 0).all()
    assert np.allclose(np.abs(A).sum(axis=0), 1.0)
    # the plan keeps the better of p-Identity and identity, with their exact sensitivities
    plan = O.plan_optimized(W, Policy(_line_domain(N), S.FullDomain()), 1.0, p=8, restarts=2)
    cands = plan.options["candidates"]
    assert plan.expected_error["workload_total_squared_error"] == min(cands.values())
    assert cands["p-identity"] < 0.8 * cands["identity"]  # about 0.72 here
    assert plan.parts[0].sensitivity_exact and plan.parts[0].sensitivity <= 2 * 2**20
    assert plan.options["chosen"] == "p-identity"


def test_line_transform_sensitivity_and_error():
    """Blowfish under Line on x = add/remove DP on the cut counts x_G: sensitivity of B P = max column norm of B."""
    N = 9
    policy = Policy(_line_domain(N), S.Line())
    rng = np.random.default_rng(11)
    W = _all_ranges(N)
    WG = W[:, :-1] - W[:, 1:]
    P = O.prefix_strategy(N).astype(float)
    for _ in range(3):
        B = np.vstack([np.eye(N - 1), rng.random((3, N - 1))]) * rng.random(N - 1)[None, :] + 0.1
        A = B @ P
        sens, how = O.strategy_sensitivity(A, policy)
        assert how.startswith("exact")
        assert sens == pytest.approx(np.abs(B).sum(axis=0).max(), rel=1e-12)
        # least squares with the public total on x = least squares of W_G on x_G
        assert O.strategy_error(A, W, total="public") == pytest.approx(O.strategy_error(B, WG), rel=1e-8)


def test_plan_optimized_line_never_worse_than_ordered():
    N = 32
    policy = Policy(_line_domain(N), S.Line())
    W = _all_ranges(N)
    plan = O.plan_optimized(W, policy, 0.5, restarts=1)
    cands = plan.options["candidates"]
    assert plan.expected_error["workload_total_squared_error"] <= cands["prefix"] * (1 + 1e-12)
    ordered = O.plan_strategy(O.prefix_strategy(N), policy, 0.5, workload=W)
    assert cands["prefix"] == pytest.approx(ordered.expected_error["workload_total_squared_error"])
    assert plan.epsilon_exact <= Fraction(1, 2)
    rel = plan.measure(np.arange(N) % 5, Generator(seed=3))
    assert rel.histogram.shape == (N,)


def test_plan_optimized_validation():
    with pytest.raises(ValueError, match="template"):
        O.plan_optimized(np.eye(4), Policy(_line_domain(4), S.Line()), 1.0, template="kron")
    with pytest.raises(ValueError, match="policy"):
        O.plan_optimized(np.eye(4), Policy(_line_domain(4), S.Custom([(0, 1), (1, 3)])), 1.0)
    with pytest.raises(ValueError, match="kronecker"):
        O.plan_optimized(np.eye(4), Policy(_line_domain(4), S.Line()), 1.0, template="kronecker")
    with pytest.raises(ValueError, match="restarts"):
        O.plan_optimized(np.eye(4), Policy(_line_domain(4), S.Line()), 1.0, restarts=-1)
    with pytest.raises(ValueError, match="workload"):
        O.plan_optimized(np.eye(5), Policy(_line_domain(4), S.Line()), 1.0)


def test_small_epsilon_coarsens_the_default_grid():
    policy = Policy(_line_domain(4), S.FullDomain())
    A = np.vstack([np.eye(4), np.full((1, 4), 0.5)]) / np.array([1.5] * 4)
    plan = O.plan_strategy(A, policy, 1e-4)
    assert plan.options["resolution"] < 2**20
    assert plan.parts[0].scale <= 2**32
    assert plan.epsilon_exact <= Fraction(1, 10**4)
    big = O.plan_strategy(A, policy, 1.0)
    assert big.options["resolution"] == 2**20
    # the coarser grid costs (almost) nothing in error
    assert plan.expected_error["cells_total_squared_error"] * 1e-8 == pytest.approx(
        big.expected_error["cells_total_squared_error"], rel=1e-3)


def test_full_domain_scan_with_singleton_rows():
    policy = Policy(_line_domain(7), S.FullDomain())
    rng = np.random.default_rng(9)
    for _ in range(5):
        theta = rng.random((2, 7)) * (rng.random((2, 7)) < 0.6)
        A = np.vstack([np.diag(rng.random(7)), theta, np.eye(7)[[2, 2, 5]] * 3.0])
        value, how = O.strategy_sensitivity(A, policy)
        assert how.startswith("exact") and value == pytest.approx(_brute_sensitivity(A, policy), rel=1e-12)
    assert O.strategy_sensitivity(np.eye(7, dtype=int) * 5, policy)[0] == 10


@pytest.mark.slow
def test_p_identity_all_ranges_256_beats_identity_and_hierarchical():
    """Measured figures (bounded DP, epsilon 1): p-Identity about 0.39 x identity and 0.31 x the binary hierarchy."""
    N = 256
    i = np.arange(N)
    G = (np.minimum.outer(i, i) + 1.0) * (N - np.maximum.outer(i, i))  # W^T W of all ranges

    class AllRanges:
        def gram(self):
            return G

    policy = Policy(_line_domain(N), S.FullDomain())
    plan = O.plan_optimized(AllRanges(), policy, 1.0, restarts=1)
    cands = plan.options["candidates"]
    hier = O.plan_strategy(O.hierarchical_strategy(N, 2), policy, 1.0, workload=AllRanges(), total="none")
    assert hier.parts[0].sensitivity == 16 and hier.parts[0].sensitivity_exact
    assert plan.options["chosen"] == "p-identity"
    assert cands["p-identity"] < 0.45 * cands["identity"]
    assert cands["p-identity"] < 0.4 * hier.expected_error["workload_total_squared_error"]


@pytest.mark.parametrize("theta", [2, 3])
def test_plan_optimized_threshold_never_worse_than_ordered_and_oh(theta):
    N = 24
    policy = Policy(_line_domain(N), S.DistanceThreshold(theta))
    W = _all_ranges(N)
    plan = O.plan_optimized(W, policy, 1.0, restarts=1)
    cands = plan.options["candidates"]
    assert {"prefix", "ordered-hierarchical", "p-identity", "p-identity (cut counts)"} <= set(cands)
    err = plan.expected_error["workload_total_squared_error"]
    assert err == min(cands.values()) and err <= cands["prefix"] and err <= cands["ordered-hierarchical"]
    # the OH strategy matrix is calibrated at its own split: its exact threshold sensitivity is epsilon
    A = O._oh_strategy(policy, 1.0)
    assert O.strategy_sensitivity(A, policy)[0] == pytest.approx(1.0, rel=1e-9)
    lb = plan.options["lower_bound"]
    assert lb["value"] is not None and lb["value"] <= err * (1 + 1e-9)


@pytest.mark.slow  # ~10 s: two 2-D optimisations (the fast set keeps the 1-D ones)
def test_plan_optimized_2d_grid_and_hdmm():
    from blowfish_privacy.workloads import RandomRectangles

    dom = Domain([Ordinal("r", 0, 11), Ordinal("c", 0, 11)])
    W = RandomRectangles((12, 12), 100, np.random.default_rng(0))
    grid = O.plan_optimized(W, Policy(dom, S.DistanceThreshold(1)), 1.0, restarts=1)
    dp = O.plan_optimized(W, Policy(dom, S.FullDomain()), 1.0, restarts=1)
    for plan in (grid, dp):
        assert plan.mechanism == "optimized" and plan.options["template"] == "kronecker"
        err = plan.expected_error["workload_total_squared_error"]
        assert err == min(plan.options["candidates"].values())
        assert plan.options["lower_bound"]["value"] <= err
    # the grid protects fewer pairs than bounded DP: its optimum is no worse
    assert grid.expected_error["workload_total_squared_error"] <= dp.expected_error["workload_total_squared_error"]
    rel = grid.measure(np.ones((12, 12), dtype=np.int64), Generator(seed=1))
    assert rel.histogram.shape == (12, 12) and rel.histogram.sum() == pytest.approx(144)
