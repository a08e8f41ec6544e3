"""k-means: sensitivities against brute force over neighbouring datasets,
the erratum to 000 Lemma 6.1, the C kernel against numpy, the mechanism's
budget and post-processing, and bad input."""

from __future__ import annotations

import importlib
from fractions import Fraction

import numpy as np
import pytest

from blowfish_privacy import Domain, Generator, Ordinal, Policy, _kmeans, secrets
from blowfish_privacy.mechanisms import kmeans_objective, kmeans_sensitivity, lloyd
from blowfish_privacy.mechanisms.clustering import kmeans
from blowfish_privacy.mechanisms.plan import Release
from oracles import enumerate_domain, oracle_edges

# the module (the package re-exports the function under the same name)
km_module = importlib.import_module("blowfish_privacy.mechanisms.clustering.kmeans")


# ---------------------------------------------------------------------------
# brute-force oracle, written from the definitions
# ---------------------------------------------------------------------------
def reference_query(values: np.ndarray, centroids: np.ndarray, refs: np.ndarray):
    """(sizes, sums relative to refs) of a dataset, in numpy (ties: lowest index)."""
    k, d = centroids.shape
    sizes = np.zeros(k, dtype=np.int64)
    sums = np.zeros((k, d), dtype=np.int64)
    for v in values:
        dist = ((v.astype(np.float64) - centroids) ** 2).sum(axis=1)
        j = int(np.argmin(dist))  # first minimum
        sizes[j] += 1
        sums[j] += v - refs[j]
    return sizes, sums


def oracle_kmeans_sensitivity(domain, graph, centroids, refs, others):
    """Max over neighbouring datasets D1 = others + [x], D2 = others + [y]
    ((x, y) an edge) of the L1 changes of the sizes and of the sums."""
    vals = np.array(enumerate_domain(domain), dtype=np.int64)
    s_size = s_sum = 0
    base = list(others)
    for i, j in oracle_edges(domain, graph):
        for a, b in ((i, j), (j, i)):
            c1, s1 = reference_query(np.array(base + [vals[a]]), centroids, refs)
            c2, s2 = reference_query(np.array(base + [vals[b]]), centroids, refs)
            s_size = max(s_size, int(np.abs(c1 - c2).sum()))
            s_sum = max(s_sum, int(np.abs(s1 - s2).sum()))
    return s_size, s_sum


def random_public(domain, k, rng, *, integer=False):
    lows = np.array([a.low for a in domain.attributes], dtype=np.float64)
    highs = np.array([a.last_value for a in domain.attributes], dtype=np.float64)
    c = lows + rng.random((k, domain.ndim)) * (highs - lows)
    if integer:  # integer centroids make exact ties between clusters likely
        c = np.round(c)
    widths = np.array([a.bin_width for a in domain.attributes])
    codes = np.clip(np.round((c - lows) / widths), 0, np.array(domain.shape) - 1)
    refs = (lows + codes * widths).astype(np.int64)
    return c, refs


GRID_5x5 = Domain([Ordinal("x", 0, 4), Ordinal("y", 0, 4)])
WIDE = Domain([Ordinal("x", 10, 28, bin_width=3), Ordinal("y", -2, 2)])
CUBE = Domain([Ordinal("a", 0, 2), Ordinal("b", 0, 2), Ordinal("c", 0, 3)])
LINE = Domain.ordinal("v", 0, 11)

CASES = [
    (GRID_5x5, secrets.FullDomain()),
    (GRID_5x5, secrets.Attribute(1)),
    (GRID_5x5, secrets.DistanceThreshold(1)),
    (GRID_5x5, secrets.DistanceThreshold(2)),
    (GRID_5x5, secrets.DistanceThreshold(1, "linf")),
    (GRID_5x5, secrets.DistanceThreshold(1.5, "l2")),
    (GRID_5x5, secrets.Partition.by_attributes(["x"])),
    (GRID_5x5, secrets.Partition([[(x, y) for x in range(5) for y in range(5) if (x < 2) == b] for b in (True, False)])),
    (GRID_5x5, secrets.Custom([((0, 0), (4, 4)), ((1, 2), (3, 1)), ((2, 2), (2, 3))])),
    (WIDE, secrets.DistanceThreshold(4)),
    (WIDE, secrets.Attribute(1)),
    (WIDE, secrets.FullDomain()),
    (CUBE, secrets.Attribute(1)),
    (CUBE, secrets.Attribute(2)),
    (CUBE, secrets.DistanceThreshold(2)),
    (CUBE, secrets.Partition.by_attributes(["a", "c"])),
    (LINE, secrets.Line()),
    (LINE, secrets.DistanceThreshold(3)),
    (LINE, secrets.Partition.intervals([0, 3, 7, 12])),
]


@pytest.mark.parametrize("domain,graph", CASES, ids=[f"{d.shape}-{g!r}" for d, g in CASES])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_sensitivity_equals_brute_force(domain, graph, seed):
    rng = np.random.default_rng(seed)
    k = 3
    centroids, refs = random_public(domain, k, rng, integer=seed % 2 == 1)
    policy = Policy(domain, graph)
    got = kmeans_sensitivity(policy, centroids, refs)
    others = [np.array(enumerate_domain(domain)[0], dtype=np.int64)]
    want_size, want_sum = oracle_kmeans_sensitivity(domain, graph, centroids, refs, others)
    assert got.size_exact and got.sum_exact
    assert (got.size, got.sum) == (want_size, want_sum)


@pytest.mark.parametrize(
    "domain,graph",
    [(GRID_5x5, secrets.DistanceThreshold(1)), (GRID_5x5, secrets.DistanceThreshold(2, "linf")),
     (CUBE, secrets.DistanceThreshold(2)), (WIDE, secrets.DistanceThreshold(1.5, "l2"))],
)
@pytest.mark.parametrize("seed", range(6))
def test_bisector_bound_is_safe_and_never_above_dp(domain, graph, seed, monkeypatch):
    rng = np.random.default_rng(100 + seed)
    centroids, refs = random_public(domain, 3, rng, integer=seed % 2 == 0)
    exact = kmeans_sensitivity(Policy(domain, graph), centroids, refs)
    monkeypatch.setattr(km_module, "OFFSET_SCAN_LIMIT", 0)
    bound = kmeans_sensitivity(Policy(domain, graph), centroids, refs)
    assert bound.method == "bisector bound" and not bound.sum_exact
    assert bound.sum >= exact.sum and bound.size >= exact.size
    dp = kmeans_sensitivity(Policy(domain, secrets.FullDomain()), centroids, refs)
    assert bound.sum <= dp.sum


def test_erratum_crossing_pair_exceeds_two_theta():
    """000 Lemma 6.1 says 2*theta; a crossing edge changes the sums by more."""
    domain = Domain.ordinal("v", 0, 99)
    theta = 2
    policy = Policy(domain, secrets.DistanceThreshold(theta))
    centroids = np.array([[10.0], [90.0]])
    refs = np.array([[10], [90]])
    # 50 is equidistant (tie -> cluster 0), 51 goes to cluster 1: an edge of G
    x, y = np.array([50]), np.array([51])
    assert policy.is_edge(50, 51)
    s1 = reference_query(np.array([x]), centroids, refs)[1]
    s2 = reference_query(np.array([y]), centroids, refs)[1]
    change = int(np.abs(s1 - s2).sum())
    assert change == 40 + 39
    assert change > 2 * theta
    sens = kmeans_sensitivity(policy, centroids, refs)
    assert sens.sum >= change and sens.sum > 2 * theta
    assert sens.cross_cluster >= change and sens.same_cluster == theta


def test_no_crossing_edge_needs_no_size_noise():
    # blocks of a partition each inside one cluster: nothing crosses
    domain = Domain([Ordinal("x", 0, 5), Ordinal("y", 0, 3)])
    graph = secrets.Partition.by_attributes(["x"])
    centroids = np.array([[1.0, 1.5], [4.0, 1.5]])
    refs = np.array([[1, 2], [4, 2]])
    sens = kmeans_sensitivity(Policy(domain, graph), centroids, refs)
    assert sens.size == 0 and sens.cross_cluster == -1 and sens.sum == 3


# ---------------------------------------------------------------------------
# the C kernel
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("d", [1, 2, 3, 4, 6])
@pytest.mark.parametrize("seed", range(4))
def test_assign_kernel_matches_numpy(d, seed):
    rng = np.random.default_rng(seed)
    n, k = 2000, 5
    pts = rng.integers(0, 9, size=(n, d)).astype(np.int64)
    cen = rng.integers(0, 9, size=(k, d)).astype(np.float64)
    cen[3] = cen[1]  # a duplicate: cluster 3 must stay empty
    cen[4] = 1000.0  # far away: empty
    refs = rng.integers(-5, 5, size=(k, d)).astype(np.int64)
    counts, sums, labels = _kmeans.kmeans_assign(pts, cen, refs, return_labels=True)
    dist = ((pts[:, None, :] - cen[None, :, :]) ** 2).sum(axis=2)
    want = np.argmin(dist, axis=1)  # first minimum: ties to the lowest index
    np.testing.assert_array_equal(labels, want)
    np.testing.assert_array_equal(counts, np.bincount(want, minlength=k))
    for j in range(k):
        np.testing.assert_array_equal(sums[j], (pts[want == j] - refs[j]).sum(axis=0))
    assert counts[3] == 0 and counts[4] == 0
    # ties really happened (points equidistant from two distinct centroids)
    srt = np.sort(dist, axis=1)
    if d <= 3:
        assert (srt[:, 0] == srt[:, 1]).any()


def test_assign_kernel_half_integer_ties():
    pts = np.array([[1], [2], [3]], dtype=np.int64)
    cen = np.array([[0.0], [2.0], [4.0]])
    counts, sums, labels = _kmeans.kmeans_assign(pts, cen, np.zeros((3, 1), np.int64), return_labels=True)
    assert labels.tolist() == [0, 1, 1]  # 1 ties 0 and 2 -> 0; 3 ties 2 and 4 -> 1
    assert counts.tolist() == [1, 2, 0]


def test_grid_label_cost_matches_assign():
    domain = WIDE
    rng = np.random.default_rng(5)
    cen, refs = random_public(domain, 4, rng, integer=True)
    shape = np.array(domain.shape, dtype=np.int64)
    low = np.array([a.low for a in domain.attributes], dtype=np.int64)
    width = np.array([a.bin_width for a in domain.attributes], dtype=np.int64)
    labels, cost = _kmeans.kmeans_grid_label_cost(shape, low, width, cen, refs)
    vals = np.array(enumerate_domain(domain), dtype=np.int64)
    _, _, want = _kmeans.kmeans_assign(vals, cen, refs, return_labels=True)
    np.testing.assert_array_equal(labels, want)
    np.testing.assert_array_equal(cost, np.abs(vals - refs[want]).sum(axis=1))


# ---------------------------------------------------------------------------
# the mechanism
# ---------------------------------------------------------------------------
def blobs(rng, n=400):
    centres = np.array([[5, 5], [25, 8], [12, 27]])
    pts = centres[rng.integers(0, 3, n)] + rng.normal(0, 2, (n, 2))
    return np.clip(np.round(pts), 0, 31).astype(np.int64)


SQUARE = Domain([Ordinal("x", 0, 31), Ordinal("y", 0, 31)])


def test_budget_history_and_reproducibility():
    pts = blobs(np.random.default_rng(0))
    policy = Policy(SQUARE, secrets.DistanceThreshold(3))
    r = kmeans(pts, policy, 0.7, Generator(seed=3), method="sulq", k=3, iterations=5, size_fraction=0.25)
    r2 = kmeans(pts, policy, 0.7, Generator(seed=3), method="sulq", k=3, iterations=5, size_fraction=0.25)
    np.testing.assert_array_equal(r.centroids, r2.centroids)
    assert len(r.history) == 5 and len(r.sensitivities) == 5
    assert r.epsilon_exact <= Fraction(0.7)
    assert r.epsilon_exact == sum(h.epsilon_sizes + h.epsilon_sums for h in r.history)
    for h, (ss, sm) in zip(r.history, r.sensitivities):
        assert (h.sensitivity.size, h.sensitivity.sum) == (ss, sm)
        assert h.epsilon_sizes <= Fraction(0.7) / 5 * Fraction(0.25)
        assert h.epsilon_sums <= Fraction(0.7) / 5 * Fraction(0.75)
        assert h.references.dtype == np.int64
        np.testing.assert_array_equal(h.references, np.clip(np.floor(h.centroids + 0.5), 0, 31))
        # the sensitivity the round used is the one recomputed from its public state
        assert kmeans_sensitivity(policy, h.centroids, h.references) == h.sensitivity
    np.testing.assert_array_equal(r.history[0].centroids, r.initial_centroids)
    assert not r.secure
    assert ((r.centroids >= 0) & (r.centroids <= 31)).all()


def test_zero_sensitivity_still_gets_noise():
    pts = blobs(np.random.default_rng(1))
    # every block one cell: no edge, so no neighbour changes the sizes or sums (sensitivity 0); they are
    # calibrated at a floor anyway (noisy_floor), so nothing is released exact under a private label
    policy = Policy(SQUARE, secrets.Partition.by_attributes(["x", "y"]))
    r = kmeans(pts, policy, 0.5, Generator(seed=0), method="sulq", k=3)
    assert r.sensitivities == [(0, 0)] * 10 and r.epsilon_exact == Fraction(1, 2)
    assert all(it.scale_sizes > 0 and it.scale_sums > 0 for it in r.history)


def test_lloyd_matches_numpy_lloyd():
    pts = blobs(np.random.default_rng(2))
    init = np.array([[0.0, 0.0], [31.0, 0.0], [15.0, 31.0]])
    c = init.copy()
    for _ in range(10):
        lab = np.argmin(((pts[:, None, :] - c[None]) ** 2).sum(axis=2), axis=1)
        for j in range(3):
            if (lab == j).any():
                c[j] = pts[lab == j].mean(axis=0)
    np.testing.assert_allclose(lloyd(pts, SQUARE, init), c, rtol=0, atol=1e-9)


def test_private_close_to_lloyd_with_large_epsilon():
    pts = blobs(np.random.default_rng(3), n=3000)
    policy = Policy(SQUARE, secrets.Attribute())
    init = np.array([[0.0, 0.0], [31.0, 0.0], [15.0, 31.0]])
    r = kmeans(pts, policy, 1e5, Generator(seed=1), method="sulq", k=3, init=init)
    base = kmeans_objective(pts, lloyd(pts, SQUARE, init))
    assert kmeans_objective(pts, r.centroids) <= base * 1.01


def test_objective_brute_force():
    rng = np.random.default_rng(4)
    p = rng.normal(size=(50, 3))
    c = rng.normal(size=(4, 3))
    want = sum(min(float(((x - m) ** 2).sum()) for m in c) for x in p)
    assert kmeans_objective(p, c) == pytest.approx(want, rel=1e-12)


# ---------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------
POL = Policy(SQUARE, secrets.FullDomain())
PTS = np.array([[1, 2], [3, 4], [5, 6], [7, 8], [9, 10], [11, 12]])


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        ({"k": 0}, ValueError, "k must be an integer >= 1"),
        ({"k": 65}, ValueError, "k must be at most 64, got 65"),
        ({"k": 1.5}, TypeError, "k must be an integer"),
        ({"iterations": 0}, ValueError, "iterations must be an integer >= 1"),
        ({"size_fraction": 1.0}, ValueError, "size_fraction must lie strictly between 0 and 1"),
        ({"init": "kmeans++"}, ValueError, "init must be 'random' or an array"),
        ({"init": np.zeros((2, 2)), "k": 3}, ValueError, r"init must have shape \(k, d\) = \(3, 2\)"),
        ({"init": np.full((3, 2), 40.0), "k": 3}, ValueError, "init must lie inside the domain"),
    ],
)
def test_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        kmeans(PTS, POL, 1.0, Generator(seed=0), method="sulq", **kwargs)


def test_bad_points_and_policy():
    gen = Generator(seed=0)
    # only public things are refused: the shape and the dtype
    with pytest.raises(ValueError, match=r"points must have shape \(n, 2\)"):
        kmeans(np.array([[1, 2, 3]]), POL, 1.0, gen, method="sulq", k=1)
    with pytest.raises(TypeError, match="points must be a numeric array"):
        kmeans(np.array([["a", "b"]]), POL, 1.0, gen, method="sulq", k=1)
    with pytest.raises(ValueError, match="epsilon must be a finite number > 0"):
        kmeans(PTS, POL, 0, gen, method="sulq", k=1)
    with pytest.raises(TypeError, match="policy must be a blowfish_privacy.Policy, got Domain"):
        kmeans(PTS, SQUARE, 1.0, gen, method="sulq", k=1)
    from blowfish_privacy import Categorical

    cat = Policy(Domain([Categorical("c", ["a", "b"])]), secrets.FullDomain())
    with pytest.raises(ValueError, match="ordinal attributes"):
        kmeans(np.array([[0]]), cat, 1.0, gen, method="sulq", k=1)


def test_integer_valued_floats_accepted():
    r = kmeans(PTS.astype(np.float64), POL, 1.0, Generator(seed=0), method="sulq", k=2, iterations=2)
    assert r.centroids.shape == (2, 2)


@pytest.mark.parametrize("seed", range(4))
def test_complete_graph_bound_for_large_custom_and_listed_partition(seed, monkeypatch):
    rng = np.random.default_rng(200 + seed)
    centroids, refs = random_public(GRID_5x5, 3, rng, integer=seed % 2 == 0)
    graphs = [
        secrets.Custom([((0, 0), (4, 4)), ((1, 2), (3, 1))]),
        secrets.Partition([[(x, y) for x in range(5) for y in range(5) if (x + y) % 2 == b] for b in (0, 1)]),
    ]
    exact = [kmeans_sensitivity(Policy(GRID_5x5, g), centroids, refs) for g in graphs]
    monkeypatch.setattr(km_module, "EDGE_SCAN_LIMIT", 0)
    monkeypatch.setattr(km_module, "TABLE_SCAN_LIMIT", 0)
    dp = kmeans_sensitivity(Policy(GRID_5x5, secrets.FullDomain()), centroids, refs)
    for g, e in zip(graphs, exact):
        b = kmeans_sensitivity(Policy(GRID_5x5, g), centroids, refs)
        assert b.method == "complete-graph bound" and not b.sum_exact
        assert (b.size, b.sum) == (dp.size, dp.sum)
        assert b.sum >= e.sum and b.size >= e.size


@pytest.mark.parametrize("seed", range(8))
def test_bisector_kernel_matches_numpy(seed):
    rng = np.random.default_rng(300 + seed)
    shape, low, width = np.array([9, 7, 11]), np.array([-3, 0, 5]), np.array([1, 2, 3])
    k = 4
    hi = low + (shape - 1) * width
    c = low + rng.random((k, 3)) * (hi - low)
    if seed % 2:
        c = np.round(c)  # exact ties
    r = np.round(c).astype(np.int64)
    R = float(rng.integers(1, 8))
    near, pair = _kmeans.kmeans_bisector_scan(shape, low, width, c, r, R)
    lab, cost = _kmeans.kmeans_grid_label_cost(shape, low, width, c, r)
    g = np.stack(np.meshgrid(*[low[a] + width[a] * np.arange(shape[a]) for a in range(3)], indexing="ij"), -1)
    g = g.reshape(-1, 3)
    D = ((g[:, None, :] - c[None]) ** 2).sum(-1)
    C = np.abs(g[:, None, :] - r[None]).sum(-1)
    want_n = -np.ones((k, k), np.int64)
    want_p = -np.ones((k, k), np.int64)
    for i in range(k):
        for j in range(k):
            if i == j or np.all(c[i] == c[j]):
                continue
            gap = 2 * R * np.sqrt(((c[j] - c[i]) ** 2).sum())
            m = (lab == i) & (D[:, j] - D[:, i] <= gap + 1e-9 * (1 + D[:, i] + D[:, j] + gap))
            if m.any():
                want_n[i, j] = cost[m].max()
                want_p[i, j] = (cost[m] + C[m, j]).max()
    np.testing.assert_array_equal(near, want_n)
    np.testing.assert_array_equal(pair, want_p)


# ---------------------------------------------------------------------------
# plan, then measure: nothing fails or branches on the data after the plan
# ---------------------------------------------------------------------------
plan_kmeans = km_module.plan_kmeans
_jsonable = importlib.import_module("blowfish_privacy.mechanisms.plan")._jsonable
INIT3 = np.array([[0.0, 0.0], [31.0, 0.0], [15.0, 31.0]])


def test_plan_fixes_the_split_and_round_one_from_public_inputs():
    policy = Policy(SQUARE, secrets.DistanceThreshold(3))
    plan = plan_kmeans(policy, 0.9, k=3, iterations=3, init=INIT3, size_fraction=Fraction(1, 3))
    names = [p.name for p in plan.parts]
    assert names == ["sizes[1]", "sums[1]", "sizes[2]", "sums[2]", "sizes[3]", "sums[3]"]
    refs = km_module.round_to_grid(INIT3, np.zeros(2), np.ones(2), np.array([32, 32]))
    first = kmeans_sensitivity(policy, INIT3, refs)
    assert (plan.parts[0].sensitivity, plan.parts[1].sensitivity) == (first.size, first.sum)
    assert plan.parts[0].scale >= Fraction(first.size) / (Fraction(0.9) / 3 / 3)
    for p in plan.parts[2:]:
        assert p.sensitivity is None and p.scale is None and "public centroids" in p.how
    assert plan.parts[2].epsilon == Fraction(0.9) / 3 / 3 and plan.parts[3].epsilon == Fraction(0.9) / 3 * 2 / 3
    assert plan.epsilon_exact <= Fraction(0.9) and plan.aggregate_shape is None
    assert "linear in n" in plan.aggregate and plan.memory_bytes > 0
    r = plan.measure(blobs(np.random.default_rng(5)), Generator(seed=2))
    assert r.plan is plan and r.history[0].sensitivity == first
    assert r.epsilon_exact <= plan.epsilon_exact
    assert r.history[0].epsilon_sizes == plan.parts[0].epsilon and r.history[0].scale_sums == plan.parts[1].scale
    # a random start leaves every round to the measurement
    pr = plan_kmeans(policy, 0.9, k=3, iterations=2)
    assert all(p.sensitivity is None for p in pr.parts) and pr.options["init"] == "random"


def test_kmeans_is_plan_then_measure_and_a_release():
    pts = blobs(np.random.default_rng(6))
    policy = Policy(SQUARE, secrets.Attribute())
    r1 = kmeans(pts, policy, 1.0, Generator(seed=4), method="sulq", k=3, iterations=3)
    r2 = plan_kmeans(policy, 1.0, k=3, iterations=3).measure(pts, Generator(seed=4))
    np.testing.assert_array_equal(r1.centroids, r2.centroids)
    assert isinstance(r1, Release) and r1.mechanism == "kmeans"
    np.testing.assert_array_equal(r1.released_values, r1.centroids)
    s = r1.summary()
    assert s["epsilon_parts"]["sizes[3]"] == str(r1.history[2].epsilon_sizes)
    assert s["sensitivity"]["sums[2]"] == r1.history[1].sensitivity.sum
    assert s["scales"]["sums[1]"] == _jsonable(r1.history[0].scale_sums)
    assert s["seeded"] and "Blowfish" in s["guarantee"] and "data dependent" in s["expected_error"]["note"]


@pytest.mark.parametrize("n,k", [(0, 1), (0, 3), (1, 2), (2, 5)])
@pytest.mark.parametrize("init", ["random", "given"])
def test_fewer_points_than_clusters_and_empty_input_run(n, k, init):
    policy = Policy(SQUARE, secrets.DistanceThreshold(2))
    start = "random" if init == "random" else np.linspace(0, 31, 2 * k).reshape(k, 2)
    pts = np.full((n, 2), 7, dtype=np.int64)
    r = kmeans(pts, policy, 0.5, Generator(seed=n + k), method="sulq", k=k, iterations=4, init=start)
    assert r.centroids.shape == (k, 2) and np.isfinite(r.centroids).all()
    assert ((r.centroids >= 0) & (r.centroids <= 31)).all()
    assert len(r.history) == 4 and r.epsilon_exact <= Fraction(0.5)
    # an empty list is an empty point set too
    r0 = kmeans([], policy, 0.5, Generator(seed=1), method="sulq", k=k, iterations=1, init=start)
    assert r0.centroids.shape == (k, 2)


def test_non_noise_fields_do_not_depend_on_n():
    """Same seed, datasets of 0, 1 and 40 points: everything fixed before the
    first noisy release (start, round 1's references, sensitivities, scales,
    spends, shapes) is identical; only noisy outputs and their consequences differ."""
    policy = Policy(SQUARE, secrets.DistanceThreshold(2))
    rng = np.random.default_rng(7)
    datasets = [np.zeros((0, 2), np.int64), np.array([[3, 4]]), rng.integers(0, 32, (40, 2))]
    for init in ("random", INIT3):
        plan = plan_kmeans(policy, 1.0, k=3, iterations=3, init=init)
        rs = [plan.measure(d, Generator(seed=11)) for d in datasets]
        for r in rs[1:]:
            np.testing.assert_array_equal(r.initial_centroids, rs[0].initial_centroids)
            h, h0 = r.history[0], rs[0].history[0]
            np.testing.assert_array_equal(h.references, h0.references)
            assert (h.sensitivity, h.epsilon_sizes, h.epsilon_sums, h.scale_sizes, h.scale_sums) == (
                h0.sensitivity, h0.epsilon_sizes, h0.epsilon_sums, h0.scale_sizes, h0.scale_sums)
            assert len(r.history) == len(rs[0].history)
            assert [x.noisy_sizes.shape for x in r.history] == [x.noisy_sizes.shape for x in rs[0].history]
            assert r.centroids.shape == rs[0].centroids.shape and r.secure == rs[0].secure
            assert set(vars(r)) == set(vars(rs[0])) and not hasattr(r, "n")
        # round 1 adds the same noise whatever the data
        noise = []
        for r, d in zip(rs, datasets):
            h = r.history[0]
            counts, sums, _ = _kmeans.kmeans_assign(km_module.check_points(d, SQUARE), h.centroids, h.references)
            assert counts.sum() == len(d)
            noise.append((h.noisy_sizes - counts, h.noisy_sums - sums))
        for zs, zm in noise[1:]:
            np.testing.assert_array_equal(zs, noise[0][0])
            np.testing.assert_array_equal(zm, noise[0][1])


def test_random_start_is_drawn_from_the_domain_not_the_points():
    policy = Policy(SQUARE, secrets.Attribute())
    a = plan_kmeans(policy, 1.0, k=4, iterations=1).measure(np.zeros((0, 2), np.int64), Generator(seed=9))
    b = plan_kmeans(policy, 1.0, k=4, iterations=1).measure(np.full((500, 2), 31), Generator(seed=9))
    np.testing.assert_array_equal(a.initial_centroids, b.initial_centroids)
    np.testing.assert_array_equal(a.initial_centroids, km_module.random_init(SQUARE, 4, Generator(seed=9)))
    assert len({tuple(c) for c in a.initial_centroids.tolist()}) == 4


def test_points_outside_the_domain_are_clamped_never_an_error():
    wide = Policy(Domain([Ordinal("x", 0, 30, bin_width=3), Ordinal("y", -2, 5)]), secrets.FullDomain())
    raw = np.array([[-50.0, 2.0], [31.9, 99.0], [4.5, -3.0], [np.nan, np.inf], [7.0, 1.0]])
    cells = np.array([[0, 2], [30, 5], [3, -2], [0, 5], [6, 1]])
    np.testing.assert_array_equal(km_module.check_points(raw, wide.domain), cells)
    np.testing.assert_array_equal(km_module.check_points(raw[[0, 2, 4]].astype(np.int64), wide.domain),
                                  cells[[0, 2, 4]])
    big = np.array([[2**63 + 5, 3]], dtype=np.uint64)
    np.testing.assert_array_equal(km_module.check_points(big, wide.domain), [[30, 3]])
    init = [[0, 0], [30, 5]]
    r1 = kmeans(raw, wide, 1.0, Generator(seed=3), method="sulq", k=2, iterations=2, init=init)
    r2 = kmeans(cells, wide, 1.0, Generator(seed=3), method="sulq", k=2, iterations=2, init=init)
    np.testing.assert_array_equal(r1.centroids, r2.centroids)


def test_sums_that_could_overflow_int64_are_exact():
    from blowfish_privacy.audit import RecordingGenerator

    # 17 cells 2**56 apart: 20 points at the top make sums beyond 2**63
    dom = Domain([Ordinal("x", 0, 2**60, bin_width=2**56)])
    policy = Policy(dom, secrets.FullDomain())
    pts = np.full((20, 1), 2**60, dtype=np.int64)
    assert 20 * 2**60 > 2**63
    with pytest.raises(ValueError, match="epsilon: a round's sums noise scale"):
        plan_kmeans(policy, 1.0, k=1, iterations=1, init=[[0]])
    plan = plan_kmeans(policy, 1e12, k=1, iterations=1, init=[[0]])
    gen = RecordingGenerator()  # no noise: the release is the exact aggregate
    r = plan.measure(pts, gen)
    assert r.history[0].noisy_sums[0, 0] == 20 * 2**60 and r.history[0].noisy_sizes[0] == 20
    assert r.centroids[0, 0] == float(2**60)
    # chunked and one-pass assignment agree
    rng = np.random.default_rng(8)
    p = rng.integers(0, 32, (1000, 2))
    c, refs = INIT3, np.round(INIT3).astype(np.int64)
    one = km_module.assign(p, c, refs, 10**9)
    many = km_module.assign(p, c, refs, 7)
    np.testing.assert_array_equal(one[0], many[0])
    assert many[1].dtype == object and (many[1] == one[1].astype(object)).all()


def test_plan_refuses_bad_public_inputs_with_named_parameters():
    from blowfish_privacy import constraints

    with pytest.raises(ValueError, match="policy: k-means needs a policy without public constraints"):
        plan_kmeans(Policy(SQUARE, secrets.FullDomain(), [constraints.Marginal(["x"])]), 1.0)
    tiny = Policy(Domain.ordinal("v", 0, 2), secrets.Line())
    with pytest.raises(ValueError, match="k must be at most the domain size 3 for init='random', got 4"):
        plan_kmeans(tiny, 1.0, k=4)
    # with given centroids k may exceed the domain (duplicates keep their start)
    r = plan_kmeans(tiny, 1.0, k=4, iterations=2, init=[[0], [1], [2], [2]]).measure([[1]], Generator(seed=0))
    assert r.centroids.shape == (4, 1)
    with pytest.raises(ValueError, match="epsilon: a round's sizes noise scale"):
        plan_kmeans(tiny, 1e-9, k=1, iterations=10)
