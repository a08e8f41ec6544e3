"""Transformed + Laplace, DAWA + Transformed and Matching + Transformed."""

import importlib
import inspect
import itertools

import numpy as np
import pytest

from blowfish_privacy import Domain, Generator, Policy, _dawa, mechanisms, secrets
from blowfish_privacy import transform as tf

tm = importlib.import_module("blowfish_privacy.mechanisms.data_dependent.transformed")
merged_module = importlib.import_module("blowfish_privacy.mechanisms.data_dependent._merged")

X16 = np.array([5, 0, 0, 1, 9, 9, 8, 2, 0, 0, 3, 4, 30, 31, 0, 1], dtype=np.int64)


def pol(n, graph=None):
    return Policy(Domain.ordinal("x", 0, n - 1), graph if graph is not None else secrets.Line())


def test_transformed_laplace_seeded_regression_and_total():
    r = mechanisms.transformed_laplace(X16, pol(16), 1.0, Generator(seed=7))
    np.testing.assert_array_equal(r.histogram, [3, 3, -1, 0, 10, 9, 8, 1, -2, 3, 2, 5, 30, 28, 5, -1])
    assert r.histogram.dtype == np.int64 and r.histogram.sum() == X16.sum()
    assert r.stretch == 1 and r.guarantee == "Line()" and r.epsilon == 1.0


@pytest.mark.parametrize("graph,n", [(secrets.Line(), 9), (secrets.DistanceThreshold(3), 9),
                                     (secrets.Custom([(0, 1), (0, 2), (0, 3), (3, 4)]), 5)])
@pytest.mark.slow
def test_transformed_laplace_empirical_variance_matches_analytic(graph, n):
    x = np.arange(n, dtype=np.int64) * 3
    p = pol(n, graph)
    gen = Generator(seed=11)
    reps = 3000
    errs = np.array([mechanisms.transformed_laplace(x, p, 1.5, gen).histogram - x for _ in range(reps)], dtype=float)
    r = mechanisms.transformed_laplace(x, p, 1.5, gen)
    assert np.sum(np.mean(errs**2, axis=0)) == pytest.approx(r.expected_squared_error, rel=0.06)
    # the stretch multiplies the scale: threshold 3 on the line pays 3
    assert r.stretch == (3 if type(graph) is secrets.DistanceThreshold else 1)


def test_exact_privacy_ratio_of_transformed_laplace_on_a_tiny_domain():
    """Output pmf of the released x_T, exactly: for every neighbour pair the
    log-ratio is sum |delta x_T| / scale <= epsilon, with equality somewhere."""
    n, eps = 5, 0.7
    p = pol(n, secrets.DistanceThreshold(2))
    emb = tf.spanning_tree(p)
    scale = mechanisms.calibrate(emb.stretch, eps).scale
    lo, hi = p.secrets.iter_edges(p.domain)
    worst = 0.0
    for recs in itertools.combinations_with_replacement(range(n), 2):
        x1 = np.bincount(recs, minlength=n)
        for a, b in itertools.chain(zip(lo, hi), zip(hi, lo)):
            if x1[a] == 0:
                continue
            x2 = x1.copy()
            x2[a] -= 1
            x2[b] += 1
            d = np.abs(tf.transform(x2, emb) - tf.transform(x1, emb))[emb.parent >= 0].sum()
            worst = max(worst, float(d / scale))  # discrete Laplace: pmf ratio exp(|dz|/scale)
    assert worst == pytest.approx(eps) and worst <= eps


def brute_pairings(v, pen):
    """Least cost over all partitions into pairs and singletons."""
    n = len(v)

    def rec(rest):
        if not rest:
            return 0.0
        i, others = rest[0], rest[1:]
        best = pen + rec(others)
        for k, j in enumerate(others):
            best = min(best, abs(v[i] - v[j]) + pen + rec(others[:k] + others[k + 1:]))
        return best

    return rec(tuple(range(n)))


def pairing_cost(v, buckets, pen):
    cost = 0.0
    for b in np.unique(buckets):
        idx = np.flatnonzero(buckets == b)
        assert idx.size <= 2
        cost += pen + (abs(v[idx[0]] - v[idx[1]]) if idx.size == 2 else 0)
    return cost


@pytest.mark.parametrize("seed", range(25))
def test_min_cost_pairs_is_exact(seed):
    rng = np.random.default_rng(seed)
    v = rng.integers(-20, 20, int(rng.integers(1, 9))).astype(float)
    pen = float(rng.choice([0.5, 3.0, 10.0]))
    b = tm.min_cost_pairs(v, pen)
    assert pairing_cost(v, b, pen) == pytest.approx(brute_pairings(tuple(v), pen))
    # the literal all-matchings search agrees without noise
    zero = {(i, j): 0.0 for i in range(v.size) for j in range(i + 1, v.size)}
    b2 = tm.exact_noisy_matching(v.astype(np.int64), pen, zero)
    assert pairing_cost(v, b2, pen) == pytest.approx(brute_pairings(tuple(v), pen))


def test_dawa_transformed_regression_contiguity_and_budget():
    r = mechanisms.dawa_transformed(X16, pol(16), 1.0, Generator(seed=7))
    np.testing.assert_array_equal(
        r.histogram, [0.5, 0.5, 0.5, 0.5, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 30.0, 30.0, 0.5, 0.5]
    )
    assert np.all(np.diff(r.buckets) >= 0) and r.stretch == 1 and r.params["counts_by"] == "transformed"
    assert r.histogram.sum() == pytest.approx(X16.sum())  # the total is public and kept
    assert r.epsilon_exact == sum(r.epsilon_parts.values()) and r.epsilon <= 1.0


def test_merged_tree_stretch_matches_the_generic_embedding():
    """Contiguous buckets under G^{1,theta}: the line over buckets, with the
    stretch computed from the merged edge list by brute force."""
    rng = np.random.default_rng(3)
    for theta in (1, 2, 4):
        p = pol(30, secrets.DistanceThreshold(theta))
        buckets = np.cumsum(rng.random(30) < 0.4)
        buckets -= buckets[0]
        m = int(buckets[-1]) + 1
        emb = merged_module.merged_tree(p, buckets, m)
        lo, hi = p.secrets.iter_edges(p.domain)
        a, b = buckets[lo], buckets[hi]
        assert emb.is_line and emb.stretch == max(1, int(np.abs(a - b).max()))


def test_matching_transformed_methods():
    p12 = pol(12)
    r = mechanisms.matching_transformed(X16[:12], p12, 1.0, Generator(seed=7))
    np.testing.assert_array_equal(r.histogram, [4.0, -10.0, 0.0, 5.0, 4.0, 5.0, 0.0, 11.0, 11.0, 0.0, 5.5, 5.5])
    assert r.params["method"] == "edges" and np.bincount(r.buckets).max() <= 2
    r2 = mechanisms.matching_transformed(X16, pol(16), 1.0, Generator(seed=7))
    np.testing.assert_array_equal(r2.histogram, [1.5, 0.5, -1.0, 3.5, 10.0, 7.5, 7.5, 1.5, 0.0, 0.0, 3.0, 3.5, 32.0, 32.0, 0.5, 1.0])
    assert r2.params["method"] == "counts" and np.bincount(r2.buckets).max() <= 2
    assert r2.epsilon <= 1.0
    with pytest.raises(ValueError, match="limited to"):
        mechanisms.matching_transformed(X16, pol(16), 1.0, method="edges")
    with pytest.raises(ValueError, match="method"):
        mechanisms.matching_transformed(X16, pol(16), 1.0, method="greedy")


def test_matching_on_4096_values_finishes():
    x = np.random.default_rng(0).integers(0, 1000, 4096)
    r = mechanisms.matching_transformed(x, pol(4096), 0.1, Generator(seed=1))
    assert r.histogram.shape == (4096,) and np.bincount(r.buckets).max() <= 2


@pytest.mark.parametrize("mech", ["transformed_laplace", "dawa_transformed", "matching_transformed"])
def test_domain_mismatch_and_bad_splits(mech):
    f = getattr(mechanisms, mech)
    with pytest.raises(ValueError, match=r"hist must have the planned shape \(8,\), got shape \(16,\)"):
        f(X16, pol(8), 1.0)
    with pytest.raises(TypeError, match="Policy"):
        f(X16, "line", 1.0)
    if mech != "transformed_laplace":
        for bad in (0, 1, 2.0):
            with pytest.raises(ValueError, match="ratio must be strictly between 0 and 1"):
                f(X16, pol(16), 1.0, ratio=bad)


def test_non_connected_secret_graph_is_refused():
    p = Policy(Domain.ordinal("x", 0, 3), secrets.Custom([(0, 1), (2, 3)]))
    with pytest.raises(ValueError, match="not connected"):
        mechanisms.transformed_laplace(np.ones(4, dtype=np.int64), p, 1.0)


def test_full_domain_policy_on_a_large_domain():
    x = np.random.default_rng(4).integers(0, 30, 5000)
    p = pol(5000, secrets.FullDomain())
    r = mechanisms.dawa_transformed(x, p, 1.0, Generator(seed=2))
    assert r.histogram.shape == (5000,) and r.params["counts_by"] in ("laplace", "transformed")
    t = mechanisms.transformed_laplace(x, p, 1.0, Generator(seed=2))
    assert t.stretch == 2 and t.histogram.sum() == x.sum()


# ---------------------------------------------------------------------------
# plans (issue 11) and caller-supplied trees


import json  # noqa: E402
from fractions import Fraction  # noqa: E402

from blowfish_privacy.mechanisms.plan import Plan, Release  # noqa: E402


def test_a_caller_tree_is_calibrated_with_its_recomputed_stretch():
    """A star declared with stretch 1 on the line policy: the line's edges
    (i, i+1) between two leaves are 2 apart in the star, so the noise must be
    calibrated to 2, not to the caller's 1."""
    p = pol(8)
    star = tf.tree_from_parent([-1, 0, 0, 0, 0, 0, 0, 0], stretch=1)
    plan = tm.plan_transformed_laplace(p, 1.0, tree=star)
    assert plan.parts[0].sensitivity == 2 and plan.parts[0].scale == mechanisms.calibrate(2, 1.0).scale
    assert "recomputed" in plan.parts[0].how
    r = mechanisms.transformed_laplace(X16[:8], p, 1.0, Generator(seed=1), tree=star)
    assert r.stretch == 2 and r.params["scale"] == 2 and r.histogram.sum() == X16[:8].sum()
    # an overstated stretch is replaced by the exact one too
    line = tf.line_tree(8).with_stretch(5)
    assert tm.plan_transformed_laplace(p, 1.0, tree=line).parts[0].sensitivity == 1


def test_a_caller_tree_of_the_wrong_size_or_type_is_refused_in_the_plan():
    with pytest.raises(ValueError, match="tree must span the policy's domain: it has 4 vertices, the domain 8"):
        tm.plan_transformed_laplace(pol(8), 1.0, tree=tf.line_tree(4))
    with pytest.raises(TypeError, match="TreeEmbedding"):
        tm.plan_transformed_laplace(pol(8), 1.0, tree=[-1, 0])


def test_exact_privacy_with_a_caller_tree_at_the_recomputed_stretch():
    """Every neighbour pair of the line policy under a star embedding: the
    pmf log-ratio sum|delta x_T| / scale stays within epsilon with the plan's
    scale (it would be 2 epsilon with the caller's stretch 1)."""
    n, eps = 5, 0.9
    p = pol(n)
    star = tf.tree_from_parent([-1, 0, 0, 0, 0], stretch=1)
    scale = tm.plan_transformed_laplace(p, eps, tree=star).parts[0].scale
    worst = 0.0
    for recs in itertools.combinations_with_replacement(range(n), 2):
        x1 = np.bincount(recs, minlength=n)
        for a in range(n - 1):
            for s, t in ((a, a + 1), (a + 1, a)):
                if x1[s] == 0:
                    continue
                x2 = x1.copy()
                x2[s] -= 1
                x2[t] += 1
                d = np.abs(tf.transform(x2, star) - tf.transform(x1, star))[star.parent >= 0].sum()
                worst = max(worst, float(d / scale))
    assert eps * 0.9 < worst <= eps


@pytest.mark.parametrize("name", ["transformed_laplace", "dawa_transformed", "matching_transformed"])
def test_functional_api_is_plan_then_measure(name):
    p = pol(16)
    plan = getattr(tm, f"plan_{name}")(p, 1.0)
    assert isinstance(plan, Plan) and plan.aggregate_shape == (16,)
    json.dumps(plan.describe())
    a = plan.measure(X16, Generator(seed=3))
    b = getattr(mechanisms, name)(X16, p, 1.0, Generator(seed=3))
    np.testing.assert_array_equal(a.histogram, b.histogram)
    assert isinstance(a, Release) and a.plan is plan and a.epsilon_exact == plan.epsilon_exact <= 1
    s = a.summary()
    assert s["seeded"] and s["privacy"] == "seeded: NOT private"
    assert s["guarantee"] == plan.guarantee and "Line()" in s["guarantee"]
    assert Fraction(s["epsilon_spent_exact"]) == sum(Fraction(v) for v in s["epsilon_parts"].values())
    np.testing.assert_array_equal(a.released_values, a.histogram)


def test_data_dependent_plans_fix_the_split_and_partition_noise():
    p = pol(16)
    d = tm.plan_dawa_transformed(p, 1.0, ratio=0.25)
    part, counts = d.parts
    assert part.count == _core_intervals(16) + 16 and part.scale == mechanisms.calibrate(4, Fraction(1, 8)).scale
    assert counts.count is None and counts.epsilon == Fraction(3, 4)
    m = tm.plan_matching_transformed(p, 1.0)
    assert m.options["method"] == "counts" and m.parts[0].count == 15 and m.parts[1].count is None
    e = tm.plan_matching_transformed(pol(6), 1.0)
    assert e.options["method"] == "edges" and e.parts[0].count == 15


def _core_intervals(n):
    return _dawa.dawa_n_intervals(n)


@pytest.mark.parametrize("plan_fn", [tm.plan_transformed_laplace, tm.plan_dawa_transformed, tm.plan_matching_transformed])
def test_plan_checks_the_aggregate_without_quoting_data(plan_fn):
    plan = plan_fn(pol(8), 1.0)
    with pytest.raises(ValueError, match=r"planned shape \(8,\), got shape \(16,\)"):
        plan.measure(X16, Generator(seed=1))
    with pytest.raises(TypeError, match="integer"):
        plan.measure(np.ones(8), Generator(seed=1))
    bad = np.array([3, 1, -7, 0, 0, 0, 0, 0])
    with pytest.raises(ValueError, match="non-negative") as exc:
        plan.measure(bad, Generator(seed=1))
    assert "-7" not in str(exc.value) and "index" not in str(exc.value)


@pytest.mark.parametrize("plan_fn", [tm.plan_transformed_laplace, tm.plan_dawa_transformed, tm.plan_matching_transformed])
def test_plans_refuse_bad_public_inputs_before_data(plan_fn):
    from blowfish_privacy import constraints

    with pytest.raises(ValueError, match="epsilon"):
        plan_fn(pol(8), 0.0)
    with pytest.raises(ValueError, match="no constraints"):
        plan_fn(Policy(Domain.ordinal("x", 0, 7), secrets.Line(), constraints=[constraints.RangeCount(0, 3)]), 1.0)
    with pytest.raises(ValueError, match="not connected"):
        plan_fn(Policy(Domain.ordinal("x", 0, 3), secrets.Custom([(0, 1), (2, 3)])), 1.0)


def test_transformed_plan_expected_error_matches_the_release():
    p = pol(9, secrets.DistanceThreshold(3))
    plan = tm.plan_transformed_laplace(p, 1.5)
    r = plan.measure(np.arange(9), Generator(seed=2))
    assert plan.expected_error["total_squared_error"] == pytest.approx(r.expected_squared_error)
    assert plan.memory_bytes >= 8 * 9 * 3


@pytest.mark.parametrize("name", ["transformed_laplace", "dawa_transformed", "matching_transformed"])
def test_docstrings_state_the_guarantee(name):
    assert "\nPrivacy\n-------\n" in inspect.getdoc(getattr(mechanisms, name))
    assert "\nPrivacy\n-------\n" in inspect.getdoc(getattr(tm, f"plan_{name}"))


def test_one_value_domain_spends_nothing():
    plan = tm.plan_transformed_laplace(pol(1, secrets.FullDomain()), 1.0)
    r = plan.measure(np.array([4]), Generator(seed=1))
    assert plan.epsilon_exact == 0 and r.histogram.tolist() == [4]


@pytest.mark.parametrize("line", [True, False])
@pytest.mark.parametrize("n_bins", [1, 2, 50, (1 << 20) + 3])
def test_noisy_transformed_has_the_bits_of_the_three_steps(line, n_bins):
    # the fused paths (one C pass on the line tree; subtree sums, noise in
    # place and the inverse otherwise, the noise drawn in the kernels)
    # against transform, the same draws (a Python replay of the kernels'
    # streams) through add_discrete_laplace, and inverse, for any threads
    from stream_replay import ReplayGenerator, key_of, line_noise, nonroot_noise

    from blowfish_privacy import _transform
    from blowfish_privacy.mechanisms.data_dependent._merged import noisy_transformed
    from blowfish_privacy.policy.transform import inverse, line_tree, transform, tree_from_parent

    rng = np.random.default_rng(n_bins)
    counts = rng.poisson(3.0, size=n_bins).astype(np.int64)
    if line:
        emb = line_tree(n_bins)
    else:  # a random tree: every vertex's parent is a smaller one
        parent = np.array([-1] + [int(rng.integers(0, v)) for v in range(1, min(n_bins, 3000))], np.int64)
        counts = counts[: parent.size]
        emb = tree_from_parent(parent)
    scale = Fraction(7, 3)
    xg = transform(counts, emb)
    nonroot = emb.parent >= 0
    if nonroot.any():
        noise = line_noise(key_of(11), counts.size, scale) if line else nonroot_noise(key_of(11), emb.parent, scale)
        xg[nonroot] = ReplayGenerator([noise]).add_discrete_laplace(xg[nonroot], scale)
    want = inverse(xg, emb)
    for threads in (1, 2, 3, 7) if n_bins < 100 else (1, 2):
        got = noisy_transformed(counts, emb, scale, Generator(11, threads=threads))
        np.testing.assert_array_equal(got, want)
        assert int(got.sum()) == int(counts.sum())
    with pytest.raises(ValueError, match="noise"):
        _transform.add_nonroot(transform(counts, emb), emb.parent, np.zeros(counts.size, np.int64))
    with pytest.raises(OverflowError, match="noisy count"):
        _transform.line_noisy_counts(np.array([1, 2], np.int64), np.array([2**63 - 1], np.int64))


def test_add_nonroot_refuses_noise_inside_xg():
    from blowfish_privacy import _transform

    xg = np.array([10, 20, 30, 40], np.int64)
    with pytest.raises(ValueError, match="must not share memory"):
        _transform.add_nonroot(xg, np.array([-1, 0, 0, 0], np.int64), xg[:3])
    _transform.add_nonroot(xg, np.array([-1, 0, 0, 0], np.int64), xg[:3].copy())
    assert xg.tolist() == [10, 30, 50, 70]
