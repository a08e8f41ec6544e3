import math

import pytest

from blowfish_privacy import Categorical, Domain, Ordinal, Policy, mechanisms, secrets
from blowfish_privacy import explain as explain_module
from blowfish_privacy.cli import main
from blowfish_privacy.explain import explain


def test_distance_threshold_explanation_numbers():
    p = Policy(Domain.ordinal("loss", 0, 999), secrets.DistanceThreshold(10))
    ex = explain(p, 0.5)
    text = str(ex)
    assert "distance threshold" in ex.summary
    by_pair = {(r["x"], r["y"]): r for r in ex.pairs}
    assert by_pair[(0, 10)]["distance"] == 1 and by_pair[(0, 11)]["distance"] == 2
    assert by_pair[(0, 999)]["bound"] == pytest.approx(math.exp(0.5 * 100))
    sens = {r["query"]: r for r in ex.sensitivities}
    assert sens["cumulative"]["blowfish"] == 10 and sens["cumulative"]["dp"] == 999
    assert sens["histogram"]["blowfish"] == 2
    oh = ex.errors[0]
    assert oh["blowfish"] < oh["dp"]
    assert "plain DP" in text and "odds bound" in text


def test_partition_explanation_names_unprotected_pairs():
    dom = Domain([Ordinal("age", 17, 90), Categorical("sex", ["F", "M"])])
    ex = Policy(dom, secrets.Partition.by_attributes(["sex"])).explain()
    assert "NOT protected" in ex.summary
    assert any(math.isinf(r["distance"]) for r in ex.pairs)
    assert any(not math.isinf(r["distance"]) for r in ex.pairs)
    assert "inf (not protected)" in str(ex)


def test_full_domain_is_dp():
    ex = Policy(Domain.ordinal("x", 0, 9), secrets.FullDomain()).explain(1.0)
    assert "differential privacy" in ex.summary
    assert all(r["ratio"] == 1 for r in ex.sensitivities)


def test_bad_epsilon():
    with pytest.raises(ValueError, match="epsilon"):
        Policy(Domain.ordinal("x", 0, 9), secrets.Line()).explain(0)


def test_summary_is_the_graphs_own_description():
    """explain() dispatches on nothing: the graph's describe() is the summary's middle."""

    class Quiet(secrets.DistanceThreshold):
        def describe(self, domain):
            return "Words chosen by the graph itself."

    dom = Domain.ordinal("x", 0, 9)
    assert "Words chosen by the graph itself." in Policy(dom, Quiet(2)).explain().summary
    for g in (secrets.FullDomain(), secrets.Line(), secrets.DistanceThreshold(3), secrets.Attribute(),
              secrets.Partition.intervals([0, 5, 10]), secrets.Custom([(0, 1)])):
        assert g.describe(dom) in Policy(dom, g).explain().summary


def test_expected_errors_come_from_the_plans():
    p = Policy(Domain.ordinal("x", 0, 63), secrets.DistanceThreshold(4))
    ex = explain(p, 0.7)
    oh = mechanisms.plan_ordered_hierarchical(p, 0.7).expected_error["range_query_mse_before_inference"]
    assert ex.errors[0]["blowfish"] == oh


def test_policy_explain_is_the_policy_layer_part():
    """Policy.explain gives what the policy alone knows; explain() adds the plans' error table."""
    p = Policy(Domain.ordinal("x", 0, 63), secrets.DistanceThreshold(4))
    mine, full = p.explain(0.7), explain(p, 0.7)
    assert (mine.summary, mine.pairs, mine.sensitivities) == (full.summary, full.pairs, full.sensitivities)
    assert mine.errors == [] and len(full.errors) == 3
    assert "range count" in str(full) and "range count" not in str(mine)
    assert "as RMSE in counts" in str(full) and "squared" not in str(full)


def test_explain_shows_the_optimised_strategy_next_to_the_hand_designed_ones():
    p = Policy(Domain.ordinal("x", 0, 63), secrets.DistanceThreshold(4))
    rows = {r["mechanism"].split(" (")[0]: r for r in explain(p, 0.7).errors}
    opt = rows["optimised strategy for all ranges"]
    plan = mechanisms.plan_optimized_cdf(p, 0.7)
    assert opt["blowfish"] == pytest.approx(plan.expected_error["range_query_mse_before_inference"])
    # least squares over the best of ordered, OH, p-Identity: never above OH with least squares
    assert opt["blowfish"] <= min(plan.options["candidates"].values()) / (64 * 65 / 2) * (1 + 1e-9)
    assert opt["ratio"] > 1  # the line of 4-cell moves gains over HDMM under DP
    # past the size limit, the row is left out (the optimisation would take minutes)
    big = Policy(Domain.ordinal("x", 0, 999), secrets.DistanceThreshold(4))
    assert len(explain(big, 0.7).errors) == 2


def test_explain_a_policy_that_protects_nothing_and_without_scipy(monkeypatch, tmp_path, capsys):
    # theta 0 protects no pair: nothing to optimise, so no optimised row (was a traceback from the optimiser)
    zero = Policy(Domain.ordinal("x", 0, 63), secrets.DistanceThreshold(0))
    assert [e["mechanism"].split(" (")[0] for e in explain(zero, 0.7).errors] == [
        "ordered hierarchical vs hierarchical", "ordered vs ordered under DP"]
    spec = tmp_path / "spec.toml"
    spec.write_text('[dataset]\nid = "z"\npath = "rows.csv"\ntotal_epsilon = 1\n\n[domain.x]\ntype = "ordinal"\n'
                    'low = 0\nhigh = 63\n\n[policies.zero]\nsecrets = "distance_threshold"\ntheta = 0\n\n'
                    '[[release]]\nname = "r"\nkind = "histogram"\nattributes = ["x"]\nepsilon = 0.5\npolicy = "zero"\n'
                    'public = true\n')
    (tmp_path / "rows.csv").write_text("x\n1\n")
    assert main(["explain", str(spec)]) == 0 and "Traceback" not in capsys.readouterr().err
    # without scipy the optimised row is left out, the rest is explained
    real = explain_module.installed
    monkeypatch.setattr(explain_module, "installed", lambda name: False if name == "scipy" else real(name))
    near = Policy(Domain.ordinal("x", 0, 63), secrets.DistanceThreshold(4))
    assert len(explain(near, 0.7).errors) == 2
