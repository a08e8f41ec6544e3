"""Plans of release specs: dry runs, refusals decided from public inputs, selections."""

import json
from fractions import Fraction

import numpy as np
import pytest
from release_specs import AGE, BY_SEX, NEAR, SEX, people_dataset, spec_toml
from release_specs import BASE as RELEASE_BASE

from blowfish_privacy.cli import _demo_spec_text, main
from blowfish_privacy.release import Ledger, load_spec, parse_spec
from blowfish_privacy.release.kinds import KINDS
from blowfish_privacy.release.runner import plan_spec
from blowfish_privacy.release.spec import SpecError
from blowfish_privacy.release.selection import crosses_boundary


def _demo(tmp_path):
    (tmp_path / "spec.toml").write_text(_demo_spec_text())
    return tmp_path / "spec.toml"


def test_dry_run_on_the_demo_spec_reads_nothing_and_spends_nothing(tmp_path, capsys, monkeypatch):
    spec = _demo(tmp_path)

    def no_data(*a, **k):
        raise AssertionError("a dry run must not read the data")

    monkeypatch.setattr("blowfish_privacy.release.local_engine.LocalEngine.aggregate", no_data)
    monkeypatch.setattr("blowfish_privacy.release._reading.Table.__init__", no_data)
    ledger = tmp_path / "l.sqlite"
    assert main(["release", str(spec), "--dry-run", "--ledger", str(ledger), "--new-ledger", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "nothing read, nothing spent" in out
    for name in ("capital-loss-cdf", "capital-loss-cdf-dp", "age-histogram"):
        assert name in out
    assert "noise on S" in out and "noise on H" in out and "expected error" in out
    assert "budget left 1.5 now, 0 after" in out
    assert not ledger.exists() and not (tmp_path / "o").exists()
    # the plan subcommand, as JSON
    assert main(["plan", str(spec), "--json", "--ledger", str(ledger), "--new-ledger"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in doc["releases"]] == ["capital-loss-cdf", "capital-loss-cdf-dp", "age-histogram"]
    cdf = doc["releases"][0]
    assert {p["name"] for p in cdf["parts"]} == {"S", "H"} and cdf["memory_bytes"] > 0
    assert doc["remaining_epsilon_after"] == 0
    # the console text states what the JSON states: one description of each plan
    for rel in doc["releases"]:
        assert f"{rel['mechanism']} ({rel['model']}): epsilon {float(Fraction(rel['epsilon_spent'])):.6g}" in out
        for p in rel["parts"]:
            assert (f"noise on {p['name']}: sensitivity {p['sensitivity']}, scale {float(Fraction(p['scale'])):.6g}, "
                    f"epsilon {float(Fraction(p['epsilon'])):.6g}") in out
    assert [r["model"] for r in doc["releases"]] == ["Blowfish", "DP", "Blowfish"]
    assert not ledger.exists()


def test_plan_epsilon_and_scales_match_the_release(tmp_path, capsys):
    spec = _demo(tmp_path)
    splan = plan_spec(load_spec(spec))
    assert main(["release", str(spec), "--ledger", str(tmp_path / "l.sqlite"), "--new-ledger", "--out", str(tmp_path / "o"),
                 "--no-plots", "--quiet"]) == 0
    for name, plan in splan.plans.items():
        doc = json.loads((tmp_path / "o" / f"{name}.json").read_text())
        assert doc["epsilon_spent_exact"] == str(plan.epsilon_exact)
        assert [p["scale"] for p in doc["noise_parts"]] == [str(p.scale) for p in plan.parts]


def test_a_domain_too_large_for_memory_is_refused_before_anything(tmp_path, capsys):
    text = _demo(tmp_path).read_text().replace("high = 4356", "high = 1000000000")
    (tmp_path / "spec.toml").write_text(text)
    ledger = tmp_path / "l.sqlite"
    code = main(["release", str(tmp_path / "spec.toml"), "--ledger", str(ledger), "--new-ledger", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "memory" in err and "GiB" in err
    assert Ledger(ledger).summary() == {} and not (tmp_path / "o").exists()
    # and the limit is the one given
    with pytest.raises(SpecError, match="memory"):
        plan_spec(load_spec(_demo(tmp_path)), memory_limit=1000)


SMALL_AGE = {**AGE, "high": 9}
BASE = spec_toml(people_dataset(total_epsilon=2), {"age": SMALL_AGE, "sex": SEX},
                 {"line": {"secrets": "line"}, "by_sex": BY_SEX, "attr": {"secrets": "attribute"}})


def _rel(kind, attrs, policy, where, extra=""):
    pol = f'policy = "{policy}"\n' if policy else ""
    return (f'\n[[release]]\nname = "r"\nkind = "{kind}"\nattributes = {json.dumps(attrs)}\n{pol}'
            f"epsilon = 0.5\nwhere = {where}\n{extra}")


@pytest.mark.parametrize("kind,extra", [
    ("cdf", ""), ("cdf", 'mechanism = "ordered"'), ("cdf", 'mechanism = "optimized"'), ("transformed", ""), ("matching", ""),
    ("dawa_transformed", ""),
])
def test_a_row_count_released_exactly_is_refused_when_an_edge_crosses_the_selection(tmp_path, kind, extra):
    (tmp_path / "people.csv").write_text("age,sex\n9,f\n5,f\n")
    spec = parse_spec(BASE + _rel(kind, ["age"], "line", "{ age = 9 }", extra), str(tmp_path / "s.toml"),
                      base_dir=tmp_path)
    with pytest.raises(SpecError, match="where: .*released exactly"):
        plan_spec(spec)


def test_kmeans_and_dp_baselines_refuse_a_crossed_selection(tmp_path):
    (tmp_path / "people.csv").write_text("age,sex\n9,f\n5,f\n")
    for text in (_rel("kmeans", ["age"], "line", "{ age = 9 }", "k = 2"),
                 _rel("dawa", ["age"], "", "{ age = 9 }"), _rel("privelet", ["age"], "", "{ age = 9 }"),
                 _rel("pufferfish_sum", ["age"], "", "{ age = 9 }", "absolute_error = 1")):
        base = BASE
        if "pufferfish" in text:  # protected under pairs of ages within 1, which the Pufferfish sum protects
            base = BASE.replace('id = "people"', 'id = "people"\nprotect = "near1"')
            text += '\n[policies.near1]\nsecrets = "distance_threshold"\ntheta = 1\nattributes = ["age"]\n'
        spec = parse_spec(base + text, str(tmp_path / "s.toml"), base_dir=tmp_path)
        with pytest.raises(SpecError, match="where"):
            plan_spec(spec)


def test_sum_over_a_crossed_selection_covers_moves_out_of_it(tmp_path):
    (tmp_path / "people.csv").write_text("age,sex\n9,f\n5,f\n")
    spec = parse_spec(BASE + _rel("sum", ["age"], "line", "{ age = 9 }"), str(tmp_path / "s.toml"),
                      base_dir=tmp_path)
    plan = plan_spec(spec).plans["r"]
    # a record moving 9 -> 8 leaves the selection: the sum changes by 9, not by the line's 1
    assert plan.parts[0].sensitivity == 9 and not plan.parts[0].sensitivity_exact


def test_partition_by_the_selecting_attribute_keeps_the_count_public(tmp_path):
    (tmp_path / "people.csv").write_text("age,sex\n9,f\n5,f\n4,m\n")
    spec = parse_spec(BASE + _rel("cdf", ["sex", "age"], "by_sex", '{ sex = "f" }').replace(
        'kind = "cdf"', 'kind = "histogram"'), str(tmp_path / "s.toml"), base_dir=tmp_path)
    rel = spec.releases[0]
    assert not crosses_boundary(rel.policy, rel.where)
    assert plan_spec(spec).plans["r"].parts[0].sensitivity == 2


@pytest.mark.parametrize("policy,where,crosses", [
    ("line", (("age", 9),), True), ("by_sex", (("sex", "f"),), False), ("attr", (("sex", "f"),), True),
])
def test_crossing_against_brute_force(tmp_path, policy, where, crosses):
    (tmp_path / "people.csv").write_text("age,sex\n9,f\n")
    attrs = ["sex", "age"] if policy != "line" else ["age"]
    spec = parse_spec(BASE + _rel("histogram", attrs, policy, "{ %s = %s }" % (where[0][0], json.dumps(where[0][1]))),
                      str(tmp_path / "s.toml"), base_dir=tmp_path)
    rel = spec.releases[0]
    dom, graph = rel.policy.domain, rel.policy.secrets
    i, j = graph.iter_edges(dom)
    sel = np.ones(dom.size, dtype=bool)
    vals = dom.values(np.arange(dom.size))
    for k, v in where:
        sel &= np.asarray(vals[dom.names.index(k)]) == v
    brute = bool(np.any(sel[i] != sel[j]))
    assert crosses_boundary(rel.policy, rel.where) == brute == crosses


def _binned(tmp_path, theta, release):
    (tmp_path / "people.csv").write_text("age,sex\n4,f\n5,m\n")
    binned = spec_toml(people_dataset(total_epsilon=2), {"age": {**AGE, "high": 14, "bin_width": 5}, "sex": SEX},
                       {"near": {**NEAR, "theta": theta}, "split": {"secrets": "partition", "intervals": [0, 3, 15]},
                        "by_sex": BY_SEX})
    return parse_spec(binned + release, str(tmp_path / "s.toml"), base_dir=tmp_path)


def test_thresholds_speak_of_raw_values_on_binned_attributes(tmp_path):
    # raw 4 and 5 are 1 apart but in bins 0-4 and 5-9: a threshold of 3 must still protect them
    spec = _binned(tmp_path, 3, _rel("histogram", ["age"], "near", "{ age = 0 }").replace("where = { age = 0 }\n", ""))
    rel = spec.releases[0]
    assert rel.policy.secrets.theta == 3 + 4 and "widened" in rel.policy_note
    assert plan_spec(spec).plans["r"].parts[0].sensitivity == 2
    # raw 4 -> 10 is within 6 and moves two bins: the cumulative sensitivity is 2 bins, not 1
    spec = _binned(tmp_path, 6, _rel("cdf", ["age"], "near", "{ age = 0 }", 'mechanism = "ordered"').replace(
        "where = { age = 0 }\n", ""))
    assert plan_spec(spec).plans["r"].parts[0].sensitivity == 2


def test_interval_boundaries_inside_a_bin_are_refused(tmp_path):
    with pytest.raises(SpecError, match="falls inside a bin"):
        _binned(tmp_path, 3, _rel("histogram", ["age"], "split", "{ age = 0 }").replace("where = { age = 0 }\n", ""))


def test_dp_baselines_judge_selections_and_parallel_groups_under_plain_dp(tmp_path):
    (tmp_path / "people.csv").write_text("age,sex\n9,f\n5,m\n")
    for mech in ("identity", "hierarchical"):
        spec = parse_spec(BASE + "\n[policies.part]\nsecrets = \"partition\"\nintervals = [0, 9, 10]\n"
                          + _rel("cdf", ["age"], "part", "{ age = 9 }", f'mechanism = "{mech}"'),
                          str(tmp_path / "s.toml"), base_dir=tmp_path)
        with pytest.raises(SpecError, match="plain DP"):
            plan_spec(spec)
    two = "".join(
        f'\n[[release]]\nname = "h{s}"\nkind = "histogram"\nattributes = ["sex", "age"]\npolicy = "by_sex"\n'
        f'epsilon = 1\nmechanism = "dp_laplace"\nwhere = {{ sex = "{s}" }}\nparallel = "g"\n' for s in ("f", "m"))
    with pytest.raises(SpecError, match="parallel"):
        parse_spec(BASE + two, str(tmp_path / "s.toml"), base_dir=tmp_path)


def test_dp_baselines_need_no_blowfish_policy(tmp_path):
    (tmp_path / "people.csv").write_text("age,sex\n9,f\n5,m\n")
    for kind, mech in (("cdf", "hierarchical"), ("cdf", "identity"), ("histogram", "dp_laplace")):
        text = BASE + (f'\n[[release]]\nname = "r"\nkind = "{kind}"\nattributes = ["age"]\nepsilon = 0.5\n'
                       f'mechanism = "{mech}"\n')
        spec = parse_spec(text, str(tmp_path / "s.toml"), base_dir=tmp_path)
        assert spec.releases[0].policy_name == "" and "FullDomain" in repr(spec.releases[0].policy.secrets)
        assert plan_spec(spec).plans["r"].epsilon_exact <= 0.5
    with pytest.raises(SpecError, match="policy"):  # a Blowfish mechanism still needs its policy
        parse_spec(BASE + '\n[[release]]\nname = "r"\nkind = "cdf"\nattributes = ["age"]\nepsilon = 0.5\n',
                   str(tmp_path / "s.toml"), base_dir=tmp_path)


def test_a_scale_beyond_the_sampler_is_refused_under_the_epsilon_key(workdir):
    """The mechanism names its parameter (ParameterError.parameter); the kind maps it to the spec key."""
    text = RELEASE_BASE.replace("epsilon = 0.25\n", "epsilon = 1e-300\n")
    spec = parse_spec(text, str(workdir / "s.toml"), base_dir=workdir)
    with pytest.raises(SpecError, match=r"release\[0\]\.epsilon: sensitivity / epsilon must be at most"):
        plan_spec(spec)


@pytest.mark.parametrize("method", ["sulq", "grid"])
def test_kmeans_with_a_scale_beyond_the_sampler_is_refused_under_the_epsilon_key(workdir, method):
    text = (BASE + '\n[[release]]\nname = "km"\nkind = "kmeans"\nattributes = ["age"]\npolicy = "line"\n'
            f'epsilon = 1e-12\nk = 2\nmethod = "{method}"\n')
    spec = parse_spec(text, str(workdir / "s.toml"), base_dir=workdir)
    with pytest.raises(SpecError, match=r"release\[0\]\.epsilon: .*scale"):
        plan_spec(spec)


def test_a_mechanism_parameter_maps_to_its_spec_key():
    puff, km = KINDS["pufferfish_sum"], KINDS["kmeans"]
    assert puff.spec_key("granularity") == "granularity" and km.spec_key("iterations") == "iterations"
    assert puff.spec_key("epsilon") == km.spec_key("sensitivity / epsilon") == km.spec_key("scale") == "epsilon"
    assert puff.spec_key("k") == "policy"  # no option of this kind: reported under the policy
