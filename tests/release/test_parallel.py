"""Parallel composition (000 Thm 4.2): only for declared disjoint groups with no secret edge between them."""

import json
from fractions import Fraction

import pytest
from release_specs import AGE, BY_SEX, FULL_DOMAIN, NEAR, SEX, people_dataset, release, spec_toml

from blowfish_privacy.cli import main
from blowfish_privacy.release import Ledger, load_spec

#: Two histograms on the disjoint selections sex = f and sex = m, declared one parallel group.
GROUP = spec_toml(
    people_dataset(total_epsilon=0.6), {"age": AGE, "sex": SEX}, {"near": NEAR, "by_sex": BY_SEX, "all": FULL_DOMAIN},
    [release(f"age-{sex}", "histogram", ["sex", "age"], eps, "by_sex", where={"sex": sex}, parallel="by-sex")
     for sex, eps in (("f", 0.5), ("m", 0.4))],
)


def test_parallel_group_costs_its_maximum(workdir, capsys):
    (workdir / "spec.toml").write_text(GROUP)
    assert load_spec(workdir / "spec.toml").epsilon_requested == Fraction(1, 2)
    ledger = workdir / "l.sqlite"
    assert main(["release", str(workdir / "spec.toml"), "--ledger", str(ledger), "--new-ledger", "--out", str(workdir / "o"),
                 "--no-plots", "--quiet"]) == 0
    capsys.readouterr()
    s = Ledger(ledger).summary()["people"]
    assert Fraction(s["spent_exact"]) == Fraction(1, 2) and len(s["entries"]) == 2
    groups = {e["parallel_group"] for e in s["entries"]}
    assert len(groups) == 1 and next(iter(groups)).startswith("by-sex@")
    f = json.loads((workdir / "o" / "age-f.json").read_text())
    assert f["where"] == {"sex": "f"} and f["parallel_group"] == "by-sex"
    # the second run's group is a new group: 0.5 more does not fit the 0.1 left
    assert main(["release", str(workdir / "spec.toml"), "--ledger", str(ledger), "--new-ledger", "--out", str(workdir / "o2")]) == 2
    assert "only 0.1 of 0.6 remains" in capsys.readouterr().err


def test_where_selects_rows_exactly(workdir):
    from blowfish_privacy.release import LocalEngine

    (workdir / "spec.toml").write_text(GROUP)
    spec = load_spec(workdir / "spec.toml")
    eng = LocalEngine(progress=False)
    needs = [("histogram", ("sex", "age"), (("sex", "f"),)), ("histogram", ("sex", "age"), (("sex", "m"),)),
             ("histogram", ("sex", "age"))]
    agg = eng.aggregate(spec, needs)
    full = agg[needs[2]].reshape(2, 100)
    f, m = agg[needs[0]].reshape(2, 100), agg[needs[1]].reshape(2, 100)
    assert (f[1] == 0).all() and (m[0] == 0).all()
    assert (f[0] == full[0]).all() and (m[1] == full[1]).all()


@pytest.mark.parametrize("edit,key,words", [
    (lambda s: s.replace('policy = "by_sex"', 'policy = "all"'), "release[0].policy", "no secret edge"),
    (lambda s: s.replace('where = { sex = "m" }', 'where = { sex = "f" }'), "release[1].where", "disjoint"),
    (lambda s: s[:s.rindex('parallel = "by-sex"')] + 'parallel = "other"\n', "release[0].parallel",
     "has one release"),
    (lambda s: s.replace('where = { sex = "m" }\n', ''), "release[1].where", "must select its rows"),
    (lambda s: s.replace('where = { sex = "m" }', 'where = { sex = "x" }'), "release[1].where.sex",
     "not one of the labels"),
    (lambda s: s.replace('attributes = ["sex", "age"]\npolicy = "by_sex"\nepsilon = 0.5',
                         'attributes = ["age"]\npolicy = "all"\nepsilon = 0.5'),
     "release[0].where.sex", "must be one of the release's attributes"),
    (lambda s: s.replace('parallel = "by-sex"\n', ''), "release", "more than dataset.total_epsilon"),
])
def test_invalid_parallel_groups_are_refused(workdir, capsys, edit, key, words):
    assert edit(GROUP) != GROUP  # the edit applies to the spec as written
    (workdir / "spec.toml").write_text(edit(GROUP))
    ledger = workdir / "l.sqlite"
    assert main(["release", str(workdir / "spec.toml"), "--ledger", str(ledger), "--new-ledger", "--out", str(workdir / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f": {key}: " in err and words in err, err
    assert Ledger(ledger).summary() == {}
