"""The auditors: their own correctness, every mechanism passing, broken ones failing."""

import math

import numpy as np
import pytest

from blowfish_privacy import Domain, Policy, audit, mechanisms, secrets


def line(m, theta=None):
    return Policy(Domain.ordinal("x", 0, m - 1), secrets.Line() if theta is None else secrets.DistanceThreshold(theta))


def test_exact_linear_accepts_integral_float_matrices():
    # issue 14: numpy users build W as floats; np.eye(8) is exactly integral
    pol = line(8)
    as_float = audit.exact_linear(np.eye(8), 2, pol, epsilon=1.0, n=2)
    as_int = audit.exact_linear(np.eye(8, dtype=np.int64), 2, pol, epsilon=1.0, n=2)
    assert as_float.ok and as_float.max_log_ratio == pytest.approx(as_int.max_log_ratio) == pytest.approx(1.0)
    assert not audit.exact_linear(np.eye(8), 1, pol, epsilon=1.0, n=2).ok  # scale 1: log-ratio 2


def test_two_value_domain_by_hand():
    # T = {0, 1}, n = 1, release the count of 1s with scale 1: the neighbours
    # are (0,) and (1,), the count moves by 1, so the worst log-ratio is
    # exactly 1/scale, attained at an output between the centres.
    pol = Policy(Domain.ordinal("x", 0, 1), secrets.FullDomain())
    W = np.array([[0, 1]])
    rep = audit.exact_linear(W, 1, pol, epsilon=1.0, n=1)
    assert rep.ok and rep.max_log_ratio == pytest.approx(1.0)
    assert {tuple(sorted([rep.witness["d1"], rep.witness["d2"]]))} == {((0,), (1,))}
    # hand-computed: P(o | c) = (1-p)/(1+p) p^|o-c|, p = e^-1; ratio at o = 1
    p = math.exp(-1)
    assert math.log(((1 - p) / (1 + p)) / ((1 - p) / (1 + p) * p)) == pytest.approx(rep.max_log_ratio)
    # the same release claimed at 0.9 epsilon fails
    assert not audit.exact_linear(W, 1, pol, epsilon=0.9, n=1).ok


@pytest.mark.slow
def test_laplace_passes_at_eps_and_fails_at_090_eps():
    pol = line(5, 2)
    for eps in (0.3, 1.0):
        assert audit.exact(mechanisms.laplace, pol, epsilon=eps, n=2, query="cumulative").ok

        def under_claimed(h, p, e, g, eps=eps):
            return mechanisms.laplace(np.cumsum(h), sensitivity=p.sensitivity("cumulative"), epsilon=eps, generator=g)

        rep = audit.exact(under_claimed, pol, epsilon=0.9 * eps, n=2)
        assert not rep.ok and rep.max_log_ratio == pytest.approx(eps, rel=1e-6)


@pytest.mark.parametrize("graph", [secrets.Line(), secrets.DistanceThreshold(2), secrets.FullDomain(),
                                   secrets.Partition([[0, 1, 2], [3, 4, 5]])])
def test_literal_def41_equals_single_moves_without_constraints(graph):
    pol = Policy(Domain.ordinal("x", 0, 5), graph)
    m = 6

    def hist_pairs(pairs):
        return {(np.bincount(a, minlength=m).tobytes(), np.bincount(b, minlength=m).tobytes()) for a, b in pairs}

    fast = audit.neighbour_pairs(pol, 3)
    literal = audit.neighbour_pairs(pol, 3, literal=True)
    assert hist_pairs(fast) == hist_pairs(literal)


MECHANISMS = [
    ("laplace-hist", mechanisms.laplace, {"query": "histogram"}),
    ("laplace-cum", mechanisms.laplace, {"query": "cumulative"}),
    ("ordered", mechanisms.ordered, {}),
    ("oh-f2", mechanisms.ordered_hierarchical, {"fanout": 2}),
    ("oh-f3-split", mechanisms.ordered_hierarchical, {"fanout": 3, "split": 0.25}),
]


# oh-f3-split runs in the slow set (the fast set keeps oh-f2, the same code path)
@pytest.mark.parametrize("name,mech,opts", [
    pytest.param(*m, id=m[0], marks=pytest.mark.slow if m[0] == "oh-f3-split" else ()) for m in MECHANISMS])
@pytest.mark.parametrize("graph", [secrets.Line(),
                                   pytest.param(secrets.DistanceThreshold(2), marks=pytest.mark.slow, id="theta2"),
                                   secrets.DistanceThreshold(4), secrets.FullDomain(),
                                   pytest.param(secrets.Partition([[0, 1], [2, 3, 4, 5]]), marks=pytest.mark.slow,
                                                id="partition")],
                         ids=["line", "theta2", "theta4", "full", "partition"])
@pytest.mark.parametrize("eps", [pytest.param(0.1, marks=pytest.mark.slow), 1.0])
def test_every_mechanism_passes_on_tiny_domains(name, mech, opts, graph, eps):
    pol = Policy(Domain.ordinal("x", 0, 5), graph)
    rep = audit.exact(mech, pol, epsilon=eps, n=3, **opts)
    assert rep.ok, str(rep)


@pytest.mark.parametrize("mech", [mechanisms.hierarchical, mechanisms.identity])
@pytest.mark.parametrize("eps", [pytest.param(0.1, marks=pytest.mark.slow), 1.0])
def test_dp_baselines_pass_under_full_domain(mech, eps):
    pol = Policy(Domain.ordinal("x", 0, 5), secrets.FullDomain())
    opts = {"fanout": 2} if mech is mechanisms.hierarchical else {}
    rep = audit.exact(mech, pol, epsilon=eps, n=3, **opts)
    assert rep.ok, str(rep)


def test_cumulative_calibrated_with_sensitivity_one_under_theta_three_fails():
    pol = line(6, 3)

    def broken(h, p, e, g):
        return mechanisms.laplace(np.cumsum(h), sensitivity=1, epsilon=e, generator=g)

    rep = audit.exact(broken, pol, epsilon=0.5, n=2)
    assert not rep.ok
    assert rep.max_log_ratio == pytest.approx(1.5)  # three cumulative counts move
    d1, d2 = rep.witness["d1"], rep.witness["d2"]
    assert max(abs(a - b) for a, b in zip(d1, d2)) == 3


def test_deterministic_release_that_differs_is_infinitely_bad():
    pol = line(4)

    def leaky(h, p, e, g):
        return mechanisms.laplace(h, sensitivity=0, epsilon=e, generator=g)

    rep = audit.exact(leaky, pol, epsilon=1.0, n=2)
    assert not rep.ok and rep.max_log_ratio == math.inf


def test_noise_shape_chosen_from_the_data_fails_and_from_noisy_outputs_is_refused():
    pol = line(4)

    def data_dependent(h, p, e, g):  # how many counts are released depends on the data: a leak
        return mechanisms.laplace(h[: 1 + int(h[0] > 0)], sensitivity=2, epsilon=e, generator=g)

    rep = audit.exact(data_dependent, pol, epsilon=1.0, n=2)
    assert not rep.ok and rep.max_log_ratio == math.inf
    assert (0 in rep.witness["d1"]) != (0 in rep.witness["d2"]) and "shape" in rep.witness["noise"]

    def adaptive(h, p, e, g):  # how many depends on an earlier noisy output: refused, not judged
        first = mechanisms.laplace(h[:1], sensitivity=2, epsilon=e / 2, generator=g).values
        return first, mechanisms.laplace(h[1 : 2 + int(first[0] > 0)], sensitivity=2, epsilon=e / 2, generator=g)

    with pytest.raises(ValueError, match="adaptive"):
        audit.exact(adaptive, pol, epsilon=1.0, n=2)


@pytest.mark.slow
def test_sampled_auditor_passes_a_correct_and_catches_a_broken_mechanism():
    def correct(d, g):
        return mechanisms.laplace([d], sensitivity=1, epsilon=1.0, generator=g).values[0]

    def broken(d, g):  # claims epsilon 1 but uses the scale of epsilon 3
        return mechanisms.laplace([d], sensitivity=1, epsilon=3.0, generator=g).values[0]

    ok = audit.sampled(correct, 0, 1, epsilon=1.0, runs=20_000, seed=1)
    bad = audit.sampled(broken, 0, 1, epsilon=1.0, runs=20_000, seed=1)
    assert ok.ok
    assert not bad.ok and bad.lower_bound > 1.0


def test_bad_input():
    pol = line(4)
    with pytest.raises(ValueError, match="W must have shape"):
        audit.exact_linear(np.ones((2, 3), dtype=int), 1, pol, epsilon=1.0, n=1)
    with pytest.raises(ValueError, match=r"W\[1, 2\]"):
        audit.exact_linear(np.array([[1.0, 0, 0, 0], [0, 0, 0.5, 0]]), 1, pol, epsilon=1.0, n=1)
    with pytest.raises(ValueError, match=r"W\[0, 3\]"):
        audit.exact_linear(np.array([[1.0, 0, 0, np.nan]]), 1, pol, epsilon=1.0, n=1)
    with pytest.raises(TypeError, match="integer"):
        audit.exact_linear(np.ones((2, 4), dtype=complex), 1, pol, epsilon=1.0, n=1)
    with pytest.raises(TypeError, match="plan_laplace"):
        audit.exact(mechanisms.plan_laplace, pol, epsilon=1.0, n=2)
    with pytest.raises(ValueError, match="max_databases"):
        audit.neighbour_pairs(Policy(Domain.ordinal("x", 0, 99), secrets.Line()), 5)
    with pytest.raises(ValueError, match="epsilon"):
        audit.exact(mechanisms.ordered, pol, epsilon=0, n=2)


# -- public constraints (000 Sec 8, docs/explanation/corrections.md) -----------


def _thm_8_6_policy():
    from blowfish_privacy.policy.constraints import RangeCount

    return Policy(Domain.ordinal("x", 0, 7), secrets.Line(), [RangeCount(0, 1), RangeCount(2, 3), RangeCount(5, 6)])


@pytest.mark.slow
def test_literal_neighbours_contain_the_thm_8_6_counterexample():
    pairs = set(audit.neighbour_pairs(_thm_8_6_policy(), 4))
    # docs/explanation/corrections.md: D1 = (0,2,4,5), D2 = (7,1,6,3) are neighbours (one D1 per multiset: sorted)
    assert ((0, 2, 4, 5), (7, 1, 6, 3)) in pairs


@pytest.mark.slow
def test_thm_8_6_calibration_fails_and_the_library_passes():
    pol = _thm_8_6_policy()

    def thm_8_6(h, p, e, g):  # 000 Thm 8.6's value for this policy: 6
        return mechanisms.laplace(h, sensitivity=6, epsilon=e, generator=g)

    rep = audit.exact(thm_8_6, pol, epsilon=1.0, n=4)
    assert not rep.ok and rep.max_log_ratio == pytest.approx(8 / 6)
    ok = audit.exact(mechanisms.constrained_histogram, pol, epsilon=1.0, n=4, consistent=False)
    assert ok.ok, str(ok)


@pytest.mark.slow
def test_histogram_under_a_public_marginal_calibrated_as_plain_dp_fails():
    from blowfish_privacy import Categorical
    from blowfish_privacy.policy.constraints import Marginal

    dom = Domain([Categorical("a", ["a1", "a2"]), Categorical("b", ["b1", "b2"]), Categorical("c", ["c1", "c2"])])
    pol = Policy(dom, secrets.FullDomain(), [Marginal(["a", "b"])])

    def plain_dp(h, p, e, g):
        return mechanisms.laplace(h, sensitivity=2, epsilon=e, generator=g)

    rep = audit.exact(plain_dp, pol, epsilon=0.5, n=4)
    assert not rep.ok and rep.max_log_ratio == pytest.approx(0.5 * 8 / 2)  # S = 2 size(C) = 8
    assert audit.exact(mechanisms.constrained_histogram, pol, epsilon=0.5, n=4, consistent=False).ok


# -- transformational equivalence and the DP histogram baselines ---------------


@pytest.mark.slow
@pytest.mark.parametrize("graph", [secrets.Line(), secrets.DistanceThreshold(2), secrets.FullDomain()],
                         ids=["line", "theta2-stretch", "full-star"])
@pytest.mark.parametrize("eps", [0.1, 1.0])
def test_transformed_laplace_passes(graph, eps):
    pol = Policy(Domain.ordinal("x", 0, 5), graph)
    assert audit.exact(mechanisms.transformed_laplace, pol, epsilon=eps, n=3).ok


@pytest.mark.slow
@pytest.mark.parametrize("eps", [0.1, 1.0])
def test_privelet_passes_under_full_domain(eps):
    pol = Policy(Domain.ordinal("x", 0, 5), secrets.FullDomain())
    rep = audit.exact(lambda h, p, e, g: mechanisms.privelet(h, e, g), pol, epsilon=eps, n=3)
    assert rep.ok, str(rep)


def test_transformed_laplace_with_stretch_ignored_fails():
    # Embedding G^{d,2} in the line has stretch 2; noise of stretch 1 leaks.
    pol = Policy(Domain.ordinal("x", 0, 5), secrets.DistanceThreshold(2))

    def no_stretch(h, p, e, g):
        return mechanisms.laplace(np.cumsum(h)[:-1], sensitivity=1, epsilon=e, generator=g)

    assert not audit.exact(no_stretch, pol, epsilon=1.0, n=2).ok


@pytest.mark.slow
def test_data_dependent_histograms_pass_the_sampling_auditor():
    # DAWA + Transformed chooses its buckets from noisy costs (adaptive): audit
    # a neighbour pair under the line policy statistically, on the count of
    # the first value.
    pol = line(8)
    d1 = np.array([3, 0, 0, 2, 0, 0, 1, 0])
    d2 = np.array([2, 1, 0, 2, 0, 0, 1, 0])  # one record moved 0 -> 1: a line edge

    def first_bucket(h, g):
        return round(mechanisms.dawa_transformed(h, pol, 1.0, g).histogram[0])

    rep = audit.sampled(first_bucket, d1, d2, epsilon=1.0, runs=4000, seed=3)
    assert rep.ok, rep


# -- k-means (000 Sec 6, erratum in docs/explanation/corrections.md) ----------


@pytest.mark.slow
@pytest.mark.parametrize("graph,init", [
    (secrets.DistanceThreshold(1), [[2], [7]]),
    (secrets.DistanceThreshold(3), [[1], [5], [8]]),
    (secrets.FullDomain(), [[2], [7]]),
    (secrets.Partition([[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]), [[2], [7]]),
])
@pytest.mark.parametrize("eps", [0.2, 1.0])
def test_kmeans_round_passes(graph, init, eps):
    pol = Policy(Domain.ordinal("x", 0, 9), graph)
    rep = audit.exact(mechanisms.kmeans, pol, epsilon=eps, n=len(init), method="sulq", k=len(init), iterations=1,
                      init=init)
    assert rep.ok, str(rep)


@pytest.mark.slow
def test_kmeans_round_on_a_grid_passes():
    from blowfish_privacy import Ordinal

    pol = Policy(Domain([Ordinal("a", 0, 3), Ordinal("b", 0, 3)]), secrets.DistanceThreshold(1))
    rep = audit.exact(mechanisms.kmeans, pol, epsilon=0.5, n=2, method="sulq", k=2, iterations=1, init=[[0, 0], [3, 2]])
    assert rep.ok, str(rep)


def test_kmeans_with_the_papers_two_theta_fails():
    """Lemma 6.1's 2 theta ignores edges that cross clusters: (4, 5) moves the
    sums relative to the centroids 2 and 7 by |4-2| + |5-7| = 4 > 2."""
    theta = 1
    pol = Policy(Domain.ordinal("x", 0, 9), secrets.DistanceThreshold(theta))
    cents = np.array([2, 7])

    def paper_kmeans(h, p, e, g):
        pts = np.repeat(np.arange(h.size), h)
        lab = np.argmin(np.abs(pts[:, None] - cents[None, :]), axis=1)
        counts = np.bincount(lab, minlength=2)
        sums = np.bincount(lab, weights=pts - cents[lab], minlength=2).astype(np.int64)
        mechanisms.laplace(counts, sensitivity=2, epsilon=e / 2, generator=g)
        return mechanisms.laplace(sums, sensitivity=2 * theta, epsilon=e / 2, generator=g)

    rep = audit.exact(paper_kmeans, pol, epsilon=1.0, n=2)
    assert not rep.ok and rep.max_log_ratio == pytest.approx(0.5 + 0.5 * 4 / 2)


# -- everything a mechanism returns is audited (issue 11 item 6) ---------------


def _leaf_note(rep, leaf):
    return any(leaf in note and "differs" in note for note in rep.notes)


def test_noising_one_count_and_returning_the_rest_raw_fails():
    pol = line(4)

    def half_raw(h, p, e, g):  # h[0] at the right scale, h[1:] as they are
        return mechanisms.laplace(h[:1], sensitivity=p.sensitivity("histogram"), epsilon=e, generator=g), h[1:].copy()

    rep = audit.exact(half_raw, pol, epsilon=1.0, n=2)
    assert not rep.ok and rep.max_log_ratio == math.inf
    assert _leaf_note(rep, "result[1]"), rep.notes
    assert "leak" in rep.witness

    def noisy_only(h, p, e, g):  # the control: the noisy part alone passes
        return mechanisms.laplace(h[:1], sensitivity=p.sensitivity("histogram"), epsilon=e, generator=g), None

    assert audit.exact(noisy_only, pol, epsilon=1.0, n=2).ok


@pytest.mark.slow
def test_kmeans_with_size_sensitivity_forced_to_zero_fails(monkeypatch):
    import dataclasses
    import importlib

    km = importlib.import_module("blowfish_privacy.mechanisms.clustering.kmeans")
    real = km.kmeans_sensitivity
    pol = Policy(Domain.ordinal("x", 0, 9), secrets.DistanceThreshold(1))
    opts = dict(epsilon=1.0, n=2, method="sulq", k=2, iterations=1, init=[[2], [7]])
    assert audit.exact(mechanisms.kmeans, pol, **opts).ok
    monkeypatch.setattr(km, "kmeans_sensitivity", lambda *a, **k: dataclasses.replace(real(*a, **k), size=0))
    monkeypatch.setattr(km, "noisy_floor", lambda sensitivity, bound: int(sensitivity))  # no floor: raw sizes
    rep = audit.exact(mechanisms.kmeans, pol, **opts)
    # the sizes go out raw; the noisy stage alone (the sums) is within epsilon
    assert not rep.ok and rep.max_log_ratio == math.inf, str(rep)
    assert any("size" in note for note in rep.notes), rep.notes


def test_laplace_with_half_the_scale_fails():
    pol = line(5)

    def halved(h, p, e, g):  # sensitivity 2 calibrated as 1: scale halved
        return mechanisms.laplace(h, sensitivity=p.sensitivity("histogram") / 2, epsilon=e, generator=g)

    for eps in (0.5, 1.0):
        rep = audit.exact(halved, pol, epsilon=eps, n=2)
        assert not rep.ok and rep.max_log_ratio == pytest.approx(2 * eps)
        assert math.isfinite(rep.max_log_ratio)  # caught by the ratio, not by the replay


def test_exact_count_of_a_selection_fails_and_the_public_total_passes():
    # Under the line policy a record moves between 3 and 4: the count of the
    # selection {4} changes between neighbours, the total n does not.
    pol = line(5)

    def with_selection_count(h, p, e, g):
        r = mechanisms.laplace(h, sensitivity=p.sensitivity("histogram"), epsilon=e, generator=g)
        return {"counts": r, "n": int(h[-1])}

    def with_total(h, p, e, g):
        r = mechanisms.laplace(h, sensitivity=p.sensitivity("histogram"), epsilon=e, generator=g)
        return {"counts": r, "n": int(h.sum())}

    rep = audit.exact(with_selection_count, pol, epsilon=1.0, n=3)
    assert not rep.ok and _leaf_note(rep, "result['n']"), rep.notes
    d1, d2 = rep.witness["d1"], rep.witness["d2"]
    assert sorted(d1).count(4) != sorted(d2).count(4)
    assert audit.exact(with_total, pol, epsilon=1.0, n=3).ok


def test_post_processing_that_reads_the_data_fails():
    # the output is a float computed from the noisy counts *and* the data
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Out:
        counts: np.ndarray
        centre: float
        spare: float = float("nan")

    pol = line(4)

    def leaky_centre(h, p, e, g):
        noisy = mechanisms.laplace(h, sensitivity=2, epsilon=e, generator=g).values
        return Out(noisy.astype(float), float(noisy @ np.arange(4)) + 1e-3 * float(h @ np.arange(4)))

    def clean_centre(h, p, e, g):  # NaN leaves compare equal to NaN
        noisy = mechanisms.laplace(h, sensitivity=2, epsilon=e, generator=g).values
        return Out(np.where(noisy > 0, noisy, np.nan), float(noisy @ np.arange(4)))

    rep = audit.exact(leaky_centre, pol, epsilon=1.0, n=2)
    assert not rep.ok and _leaf_note(rep, "result.centre"), rep.notes
    assert audit.exact(clean_centre, pol, epsilon=1.0, n=2).ok


def test_leak_hidden_for_the_recorded_stage_is_found_with_offsets():
    # reveals h[0] only when some noisy count is negative: the recording
    # generator's stage is the exact (non-negative) counts, so only the
    # offset rounds can see it
    pol = line(4)

    def sometimes(h, p, e, g):
        noisy = mechanisms.laplace(h, sensitivity=2, epsilon=e, generator=g).values
        return noisy, (int(h[0]) if (noisy < 0).any() else None)

    rep = audit.exact(sometimes, pol, epsilon=1.0, n=2)
    assert not rep.ok and rep.max_log_ratio == math.inf
    assert any("offsets" in note for note in rep.notes), rep.notes


def test_an_error_on_one_neighbour_only_fails_and_an_error_everywhere_raises():
    pol = line(4)

    def picky(h, p, e, g):
        r = mechanisms.laplace(h, sensitivity=2, epsilon=e, generator=g)
        if h[0] == 2:
            raise ValueError("too many records at the first value")
        return r

    rep = audit.exact(picky, pol, epsilon=1.0, n=2)
    assert not rep.ok and any("raised an error" in note for note in rep.notes)

    def draws_apart(h, p, e, g):
        return g.discrete_laplace(1, size=h.size) + h

    with pytest.raises(TypeError, match="audit.sampled"):
        audit.exact(draws_apart, pol, epsilon=1.0, n=2)


@pytest.mark.parametrize("graph", [secrets.Line(), secrets.FullDomain()], ids=["line", "full"])
def test_plan_factories_are_audited(graph):
    pol = Policy(Domain.ordinal("x", 0, 4), graph)
    assert audit.exact(mechanisms.plan_histogram, pol, epsilon=1.0, n=2).ok
    assert audit.exact(mechanisms.plan_ordered_hierarchical, pol, epsilon=1.0, n=2, fanout=2).ok
    if isinstance(graph, secrets.FullDomain):  # a DP baseline: its plan takes the domain size
        assert audit.exact(mechanisms.plan_identity, pol, epsilon=1.0, n=2).ok
    # the plan's own calibration is what is audited: claiming less epsilon fails
    plan = mechanisms.plan_histogram(pol, 1.0)

    def under_claimed(p, e):
        return plan

    under_claimed.__name__ = "plan_under_claimed"
    rep = audit.exact(under_claimed, pol, epsilon=0.5, n=2)
    assert not rep.ok and rep.max_log_ratio == pytest.approx(1.0)


def test_plan_factory_that_returns_no_plan_is_refused():
    def plan_nothing(p, e):
        return None

    with pytest.raises(TypeError, match="must return a Plan"):
        audit.exact(plan_nothing, line(3), epsilon=1.0, n=1)


@pytest.mark.parametrize("plan_name,options", [("plan_mwem", {"rounds": 1}), ("plan_ahp", {})])
def test_exact_audit_refuses_adaptive_plans(plan_name, options):
    # MWEM's report-noisy-max and AHP's second stage add noise to quantities
    # chosen from earlier noisy outputs: the exact audit would read every
    # draw as an independent release (a false failure for MWEM, a false pass
    # for AHP), so it refuses them
    from blowfish_privacy import Domain, Policy, audit, baselines, secrets

    pol = Policy(Domain.ordinal("x", 0, 3), secrets.FullDomain())
    with pytest.raises(ValueError, match="adaptive"):
        audit.exact(getattr(baselines, plan_name), pol, epsilon=1.0, n=2, **options)
