"""GreedyH (baselines/greedyh.py): exact audits on tiny domains, per-level sensitivity by brute force,
budget split, the closed-form all-range criterion against explicit enumeration, zero-noise consistency."""

import importlib
import itertools
from fractions import Fraction

import numpy as np
import pytest

from blowfish_privacy import Domain, Policy, audit, secrets
from blowfish_privacy import baselines
from blowfish_privacy.noise import calibrate, discrete_laplace_variance

G = importlib.import_module("blowfish_privacy.baselines.greedyh")
GN = importlib.import_module("blowfish_privacy.mechanisms.data_dependent._greedy_nodes")
T = importlib.import_module("blowfish_privacy.mechanisms._trees")
D = importlib.import_module("blowfish_privacy.mechanisms.data_dependent.dawa")


def _pol1(k):
    return Policy(Domain.ordinal("x", 0, k - 1), secrets.FullDomain())


@pytest.mark.parametrize("k,opts", [
    (2, {}), (3, {}), (5, {}),
    (5, {"workload": (np.array([0, 1, 0]), np.array([4, 3, 2]))}),
    (5, {"workload": (np.array([0, 1, 0]), np.array([4, 3, 2])), "weights": "level"}),
    (6, {"workload": np.array([[0, 5], [1, 3], [2, 2], [0, 4]])}),
])
def test_exact_audit(k, opts):
    rep = audit.exact(G.plan_greedyh, _pol1(k), epsilon=1.0, n=2, **opts)
    assert rep.ok, str(rep)


def test_audit_catches_double_budget():
    def plan_double(policy, epsilon, **o):
        return G.plan_greedyh(policy, 2 * epsilon, **o)

    assert not audit.exact(plan_double, _pol1(5), epsilon=1.0, n=2).ok


def _level_matrices(plan, m):
    """Each noisy level as a matrix, read from zero-noise runs on unit histograms."""
    cols = []
    for i in range(m):
        e = np.zeros(m, np.int64)
        e[i] = 1
        rec = audit.RecordingGenerator()
        plan.measure(e, rec)
        cols.append([np.asarray(v, float) for v, _ in rec.records])
    return [np.column_stack([c[j] for c in cols]) for j in range(len(cols[0]))]


@pytest.mark.parametrize("m", [2, 5, 9, 16])
def test_level_sensitivity_is_exactly_two_and_budget_adds_up(m):
    eps = Fraction(7, 10)
    plan = G.plan_greedyh(m, eps, workload=(np.arange(m), np.full(m, m - 1)), weights="level")  # several levels
    mats = _level_matrices(plan, m)
    assert len(mats) == len(plan.parts)
    for A, part in zip(mats, plan.parts):
        s = max(np.abs(A[:, u] - A[:, v]).sum() for u, v in itertools.combinations(range(m), 2))
        assert s == part.sensitivity == 2 and part.sensitivity_exact
        assert part.epsilon == 2 / part.scale
    shares = [Fraction(s) for s in plan.options["level_shares"]]
    assert sum(shares) == 1
    assert plan.epsilon_exact <= eps
    for part in plan.parts:  # each level's spend is at most its share
        level = int(part.name.split("_")[1])
        assert part.epsilon <= eps * shares[level - 1]


@pytest.mark.parametrize("m", [1, 2, 3, 5, 8, 13, 20])
def test_all_range_criterion_matches_enumeration(m):
    queries = [(i, j, []) for i in range(m) for j in range(i, m)]
    h = G._height(m)
    rng = np.random.default_rng(m)
    for _ in range(4):
        w = [Fraction(int(x)) for x in rng.integers(0, 3, h)]
        w[-1] = Fraction(1)
        shares = [x / sum(w) for x in w]
        a = G.all_range_error(shares, m, Fraction(1, 2))
        b = D.workload_error(shares, m, queries, Fraction(1, 2))
        assert a == pytest.approx(b, rel=1e-12)
    assert G.all_range_shares(m, 1) == D.greedy_shares(m, queries, Fraction(1))


def test_zero_noise_gives_the_truth_and_summary():
    x = np.array([3, 0, 5, 1, 1, 9, 0], np.int64)
    plan = G.plan_greedyh(x.size, 1.0)
    r = plan.measure(x, audit.RecordingGenerator())
    np.testing.assert_allclose(r.histogram, x, atol=1e-9)
    s = r.summary()
    assert s["mechanism"] == "greedyh" and s["epsilon_spent"] <= 1.0
    r2 = baselines.greedyh(x, 1.0)
    assert r2.histogram.shape == x.shape and r2.histogram.sum() == pytest.approx(x.sum())  # root = public n


def test_refusals():
    with pytest.raises(ValueError, match="workload"):
        G.plan_greedyh(5, 1.0, workload=(np.array([0]), np.array([5])))
    with pytest.raises(TypeError, match="workload"):
        G.plan_greedyh(5, 1.0, workload=3)
    with pytest.raises(ValueError, match="FullDomain"):
        G.plan_greedyh(Policy(Domain.ordinal("x", 0, 4), secrets.Line()), 1.0)


def _unit_response_error(shares, m, eps):
    """Exact all-range error of hierarchy_estimate from its response to one unit of noise per node."""
    scales = [None if Fraction(s) == 0 else calibrate(2, eps * Fraction(s)).scale for s in shares]
    zero = np.zeros(m, np.int64)
    rec = audit.RecordingGenerator()
    T.hierarchy_estimate(zero, scales, rec)
    total = 0.0
    for call, (vals, scale) in enumerate(rec.records):
        for j in range(vals.size):
            class Unit(audit.RecordingGenerator):
                k = 0

                def add_discrete_laplace(self, values, sc):
                    a = np.asarray(values, np.int64).copy()
                    if Unit.k == call:
                        a[j] += 1
                    Unit.k += 1
                    return a

            est = T.hierarchy_estimate(zero, scales, Unit())
            P = np.concatenate([[0.0], np.cumsum(est)])
            total += discrete_laplace_variance(scale) * ((m + 1) * np.dot(P, P) - P.sum() ** 2)
    return total


@pytest.mark.parametrize("m", [2, 4, 8, 16])
def test_exact_all_range_error_matches_the_estimator(m):
    h = G._height(m)
    eps = Fraction(3, 4)
    for shares in ([Fraction(1, h)] * h, [Fraction(0)] * (h - 1) + [Fraction(1)],
                   [Fraction(i + 1, h * (h + 1) // 2) for i in range(h)]):
        exact = G.all_range_error_exact(shares, m, eps)
        assert exact == pytest.approx(_unit_response_error(shares, m, eps), rel=1e-9)
        assert exact <= G.all_range_error(shares, m, eps) * (1 + 1e-12)  # the up-pass criterion bounds it
    p = G.plan_greedyh(m, eps)
    nq = m * (m + 1) // 2
    assert p.expected_error["range_query_mse"] == pytest.approx(
        _unit_response_error([Fraction(s) for s in p.options["level_shares"]], m, eps) / nq, rel=1e-9)


# ---------------------------------------------------------------------------
# GreedyH with one share per node


def _dense_error(weights, m, Q):
    """trace(Q S Q') of the weighted node strategy by dense least squares (the root exact: a huge weight)."""
    M = Q.shape[1]
    h = M.bit_length() - 1
    rows = []
    for level in range(h + 1):
        width = M >> level
        for g, w in enumerate(weights[level]):
            r = np.zeros(m)
            r[g * width:min((g + 1) * width, m)] = 1
            if r.sum() and (level == 0 or w):
                rows.append(r * (1e6 if level == 0 else float(w)))
    A = np.array(rows)
    S = np.linalg.pinv(A.T @ A)
    return float(np.trace(Q[:, :m] @ S @ Q[:, :m].T))


@pytest.mark.parametrize("m,M", [(8, 8), (6, 8), (16, 16), (13, 16), (5, 8)])
@pytest.mark.parametrize("decay", [False, True])
def test_node_greedy_error_is_the_least_squares_error_and_paths_sum_to_at_most_one(m, M, decay):
    rng = np.random.default_rng(m * M + decay)
    lo = rng.integers(0, m, 7)
    hi = np.minimum(m - 1, lo + rng.integers(0, m, 7))
    Q = GN.range_workload_matrix(lo, hi, np.arange(m), m, M)
    weights, collapsed, err = GN.node_greedy(Q, m, decay=decay)
    assert err == pytest.approx(_dense_error(weights, m, Q), rel=1e-3)
    h = M.bit_length() - 1
    assert weights[0] == [0]  # the public root is never measured
    for leaf in range(m):  # exact Fractions: every root-to-leaf path spends at most the whole budget
        assert sum(weights[level][leaf >> (h - level)] for level in range(h + 1)) <= 1
    for leaf in range(m, M):  # padding is never measured
        assert weights[h][leaf] == 0


def test_node_greedy_measures_leaves_no_query_tells_apart_as_one_total():
    m = 8
    Q = GN.range_workload_matrix(np.array([0, 4, 0]), np.array([3, 7, 7]), np.arange(m), m, m)
    weights, collapsed, err = GN.node_greedy(Q, m)
    assert collapsed[1].tolist() == [True, True]  # [0, 4) and [4, 8) are each one total for this workload
    assert all(w == 0 for level in weights[2:] for w in level)  # nothing below them is measured
    assert err == pytest.approx(_dense_error(weights, m, Q), rel=1e-3)


def test_node_plan_budget_and_zero_noise_answers_the_workload_exactly():
    eps = Fraction(3, 5)
    m = 11
    rows = np.array([[0, 10], [2, 5], [3, 3], [6, 9], [1, 7]])
    plan = G.plan_greedyh(m, eps, workload=rows)
    (part,) = plan.parts
    assert part.name == "nodes" and part.sensitivity == 2 and part.epsilon <= eps and plan.epsilon_exact <= eps
    x = np.array([5, 0, 2, 9, 1, 1, 0, 4, 3, 8, 2], np.int64)
    r = plan.measure(x, audit.RecordingGenerator())  # zero noise
    c = np.r_[0, np.cumsum(r.histogram)]
    t = np.r_[0, np.cumsum(x)]
    np.testing.assert_allclose(c[rows[:, 1] + 1] - c[rows[:, 0]], t[rows[:, 1] + 1] - t[rows[:, 0]], atol=1e-9)
    assert r.histogram.sum() == pytest.approx(x.sum())


def test_node_calibrations_spend_the_largest_path_sum():
    w = [[Fraction(0)], [Fraction(1, 2), Fraction(1, 4)], [Fraction(1, 2), Fraction(1, 4), Fraction(3, 4), 0]]
    scales, spends, spent = GN.node_calibrations(w, Fraction(1, 2))
    assert scales[0] == [None] and scales[2][3] is None
    assert spends[1][0] == Fraction(1, 4) and spends[2][2] == Fraction(3, 8)
    assert spent == Fraction(1, 2)  # 1/4 + 1/4 (path to leaf 0), 1/8 + 3/8 (leaf 2)


def test_node_greedy_beats_the_level_shares_on_random_ranges():
    rng = np.random.default_rng(1)
    k = 256
    L = rng.integers(1, k + 1, 300)
    st = rng.integers(0, k - L + 1)
    rows = np.c_[st, st + L - 1]
    node = G.plan_greedyh(k, 0.1, workload=rows)
    level = G.plan_greedyh(k, 0.1, workload=rows, weights="level")
    assert node.expected_error["workload_mse_estimate"] < level.expected_error["workload_mse_bound"]
    with pytest.raises(ValueError, match="weights"):
        G.plan_greedyh(k, 0.1, workload=rows, weights="tree")
