"""One guarantee per dataset, and nothing learned for free (the ledger's promise against whoever runs the command).

Each test is an attack that worked on an earlier version: a domain check
used as a free oracle, a seeded test run used to recover the counts, a
release under a weaker policy added into the total, the same data under two
dataset ids, a missing ledger created silently, exact releases labelled
private.
"""

from __future__ import annotations

import os
import re
import sqlite3
from fractions import Fraction

import numpy as np
import pytest
from release_specs import AGE, BY_SEX, INCOME, NEAR, SEX, people_dataset, release, spec_toml, write_csv

from blowfish_privacy.cli import main
from blowfish_privacy.errors import LedgerError, SpecError
from blowfish_privacy.release import Ledger, parse_spec
from blowfish_privacy.release.api import release as py_release
from blowfish_privacy.release.ledger import Protection, Spend


def _parse(tmp_path, text):
    _people(tmp_path, np.arange(20, 60))
    return parse_spec(text, str(tmp_path / "spec.toml"), base_dir=tmp_path)


def _write(tmp_path, text, name="spec.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def _people(tmp_path, ages, name="people.csv"):
    ages = np.asarray(ages)
    write_csv(tmp_path / name, {"age": ages, "sex": np.where(ages % 2 == 0, "f", "m")}, lineterminator="\n")


def _run(spec, ledger, out, *extra):
    return main(["release", str(spec), "--ledger", str(ledger), "--out", str(out), "--no-plots", "--quiet", *extra])


def _age_spec(high, *, invalid=None, allow=None, seed=None, policy=NEAR, epsilon=0.1, **rel):
    ds = people_dataset(total_epsilon=100.0)
    if invalid is not None:
        ds["invalid"] = invalid
    if allow is not None:
        ds["allow_disclosures"] = allow
    return spec_toml(ds, {"age": {**AGE, "high": high}}, {"p": policy},
                     [release("h", "histogram", ["age"], epsilon, "p", **rel)],
                     run=None if seed is None else {"seed": seed})


# -- item 1: no free oracle on the data ------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("invalid,allow", [(None, None), ("error", None), ("error", True)])
def test_domain_narrowing_probe_learns_nothing_unrecorded(tmp_path, capsys, invalid, allow):
    """20 runs with shrinking domains: all spend alike, or all get the same refusal, or each is recorded."""
    _people(tmp_path, np.r_[np.arange(20, 60), 57])  # the maximum age is 59
    ledger = tmp_path / "l.sqlite"
    Ledger(ledger)
    outcomes = []
    for k, high in enumerate(range(80, 40, -2)):
        spec = _write(tmp_path, _age_spec(high, invalid=invalid, allow=allow))
        capsys.readouterr()
        code = _run(spec, ledger, tmp_path / f"o{k}")
        err = capsys.readouterr().err
        outcomes.append((code, err))
    entries = Ledger(ledger).summary().get("people", {"entries": []})["entries"]
    disclosures = [e for e in entries if not e["private"]]
    if len(set(outcomes)) > 1:  # the outcome moved with the domain: only allowed when each run is recorded
        assert invalid == "error" and allow and len(disclosures) == 20, outcomes
    if invalid is None:  # the default (clamp) spends and succeeds on every domain
        assert {c for c, _ in outcomes} == {0} and not disclosures
    if invalid == "error" and not allow:  # refused before the data are read, identically
        assert len(set(outcomes)) == 1 and outcomes[0][0] == 2 and "allow_disclosures" in outcomes[0][1]
        assert entries == []


def test_budget_and_registration_refusals_come_before_the_data_are_read(tmp_path, capsys, monkeypatch):
    from blowfish_privacy.release import local_engine

    _people(tmp_path, np.arange(20, 60))
    ledger = tmp_path / "l.sqlite"
    spec = _write(tmp_path, _age_spec(99, epsilon=0.5))
    assert _run(spec, ledger, tmp_path / "o0", "--new-ledger") == 0

    def boom(*a, **k):
        raise AssertionError("the data were read")

    monkeypatch.setattr(local_engine.LocalEngine, "aggregate", boom)
    other_total = _write(tmp_path, _age_spec(99, epsilon=0.5).replace("total_epsilon = 100.0", "total_epsilon = 7"),
                         "t.toml")
    assert _run(other_total, ledger, tmp_path / "o1") == 2
    assert "total budget" in capsys.readouterr().err
    spent = Fraction(Ledger(ledger).summary()["people"]["spent_exact"])
    greedy = _write(tmp_path, _age_spec(99, epsilon=10), "g.toml")
    Ledger(ledger).spend("people", 100, [Spend("x", "histogram", 100 - spent - 1, "p")])
    assert _run(greedy, ledger, tmp_path / "o2") == 2
    assert "remains" in capsys.readouterr().err
    weaker = _write(tmp_path, _age_spec(99, epsilon=0.1, policy={"secrets": "line"}), "w.toml")
    assert _run(weaker, ledger, tmp_path / "o3") == 2
    assert "protection policy" in capsys.readouterr().err


# -- item 2: a seeded test is a recorded disclosure ---------------------------------------------------------
def test_seeded_test_is_refused_without_disclosures_and_recorded_with_them(tmp_path, capsys):
    _people(tmp_path, np.arange(20, 60))
    ledger = tmp_path / "l.sqlite"
    refused = _write(tmp_path, _age_spec(99, seed=3), "s.toml")
    assert _run(refused, ledger, tmp_path / "o0", "--new-ledger", "--seeded-test") == 2
    assert "allow_disclosures" in capsys.readouterr().err
    assert "people" not in Ledger(ledger).summary()  # refused in the registration's transaction: nothing kept
    allowed = _write(tmp_path, _age_spec(99, seed=3, allow=True).replace('id = "people"', 'id = "people2"'),
                     "a.toml")
    assert _run(allowed, ledger, tmp_path / "o1", "--seeded-test") == 0
    s = Ledger(ledger).summary()["people2"]
    assert s["spent"] == 0 and s["disclosures"] == 1
    (entry,) = s["entries"]
    assert not entry["private"] and "seed" in entry["disclosure"]
    capsys.readouterr()
    assert main(["ledger", str(ledger)]) == 0
    text = capsys.readouterr().out
    assert "1 non-private disclosure besides epsilon 0" in text and "NOT PRIVATE" in text


# -- item 3: one policy per dataset, admission by containment ------------------------------------------------
def test_release_under_weaker_policy_is_refused_stronger_admitted(tmp_path):
    dom = {"age": AGE, "sex": SEX}
    weak = spec_toml(people_dataset(protect="near"), dom,
                     {"near": {**NEAR, "attributes": ["age"]}, "line": {"secrets": "line"}},
                     [release("a", "cdf", ["age"], 0.1, "line")])
    with pytest.raises(SpecError, match="protected pair") as e:
        _parse(tmp_path, weak)
    assert "release[0].policy" in str(e.value)
    # the named pair is protected by the dataset's policy (within 5) and exposed by the line (not adjacent)
    found = re.search(r"\(age = (\d+), sex = '(\w)'\) and \(age = (\d+), sex = '(\w)'\)", str(e.value))
    assert found and 2 <= abs(int(found[1]) - int(found[3])) <= 5
    strong = spec_toml(people_dataset(protect="line"), dom,
                       {"near": NEAR, "line": {"secrets": "line", "attributes": ["age"]}},
                       [release("a", "cdf", ["age"], 0.1, "near")])
    spec = _parse(tmp_path, strong)
    assert "line" in spec.protection.text
    dp = spec_toml(people_dataset(protect="dp"), dom, {"near": NEAR},
                   [release("a", "cdf", ["age"], 0.1, "near")])
    with pytest.raises(SpecError, match="protected pair"):
        _parse(tmp_path, dp)
    baseline = spec_toml(people_dataset(protect="dp"), dom, {"near": NEAR},
                         [release("a", "cdf", ["age"], 0.1, "near", mechanism="hierarchical")])
    assert _parse(tmp_path, baseline).protect == "dp"


def test_two_policies_need_protect(tmp_path):
    dom = {"age": AGE, "sex": SEX}
    two = spec_toml(people_dataset(), dom, {"near": NEAR, "by_sex": BY_SEX},
                    [release("a", "cdf", ["age"], 0.1, "near"), release("b", "histogram", ["sex", "age"], 0.1, "by_sex")])
    with pytest.raises(SpecError, match="dataset.protect"):
        _parse(tmp_path, two)
    both = two.replace('id = "people"', 'id = "people"\nprotect = "both"') + \
        '\n[policies.both]\nsecrets = "intersection"\nof = ["near", "by_sex"]\n'
    spec = _parse(tmp_path, both)
    assert spec.protect == "both" and "near" in spec.protection.text


def test_partition_on_the_released_attribute_and_theta_zero_are_refused(tmp_path):
    dom = {"age": AGE, "sex": SEX}
    for policy in ({"secrets": "partition", "by": ["age"]}, {"secrets": "distance_threshold", "theta": 0}):
        text = spec_toml(people_dataset(), dom, {"p": policy}, [release("h", "histogram", ["age"], 0.5, "p")])
        spec = _parse(tmp_path, text)
        from blowfish_privacy.release.runner import plan_spec

        with pytest.raises(SpecError, match="exact"):
            plan_spec(spec)
        marked = text.replace('policy = "p"', 'policy = "p"\npublic = true')
        plan_spec(_parse(tmp_path, marked))  # marked public: planned, as a disclosure


@pytest.mark.parametrize("kind,attributes,options", [
    ("cdf", ["age"], {"mechanism": "ordered_hierarchical"}),
    ("cdf", ["age"], {"mechanism": "ordered"}),
    ("cdf", ["age"], {"mechanism": "optimized"}),
    ("kmeans", ["age", "income"], {"k": 2}),
    ("kmeans", ["age", "income"], {"k": 2, "method": "sulq", "iterations": 2}),
    ("kmeans", ["age", "income"], {"k": 2, "method": "eugkm"}),
])
def test_every_kind_under_a_policy_that_protects_nothing_is_exact(tmp_path, kind, attributes, options):
    # a distance threshold of 0 has no edge: no noise is owed, so the release would be exact. Kinds whose
    # plan has no noisy part (a CDF) or fixes its sensitivity during the measurement (k-means) once passed
    # as private with epsilon 0
    from blowfish_privacy.release.runner import plan_spec

    zero = {"secrets": "distance_threshold", "theta": 0}
    text = spec_toml(people_dataset(), {"age": AGE, "income": INCOME}, {"p": zero},
                     [release("r", kind, attributes, 0.5, "p", **options)])
    exact = "would publish exact values: " if options.get("mechanism") != "optimized" else ""
    with pytest.raises(SpecError, match=f"{exact}.*protects no pair of values"):
        plan_spec(_parse(tmp_path, text))
    if exact:  # nothing to optimise: refused even when marked public
        plan_spec(_parse(tmp_path, text.replace('policy = "p"', 'policy = "p"\npublic = true')))


def test_huge_epsilon_needs_large_epsilon_and_is_still_exact(tmp_path):
    from blowfish_privacy.release.runner import plan_spec

    dom = {"age": AGE}
    text = spec_toml(people_dataset(total_epsilon="1e301"), dom, {"p": NEAR},
                     [release("h", "histogram", ["age"], "1e300", "p")])
    with pytest.raises(SpecError, match="large_epsilon"):
        _parse(tmp_path, text)
    spec = _parse(tmp_path, text.replace('policy = "p"', 'policy = "p"\nlarge_epsilon = true'))
    with pytest.raises(SpecError, match="exact"):
        plan_spec(spec)


def test_a_pufferfish_sum_with_noise_below_the_values_resolution_is_exact(tmp_path):
    from blowfish_privacy.release.runner import plan_spec

    ds = people_dataset(protect="p")
    pol = {"p": {"secrets": "partition", "by": ["age"], "attributes": ["age"]}}
    tiny = spec_toml(ds, {"age": AGE}, pol, [release("s", "pufferfish_sum", ["age"], 1, absolute_error=0.001)])
    with pytest.raises(SpecError, match="exact"):
        plan_spec(_parse(tmp_path, tiny))
    fine = spec_toml(ds, {"age": AGE}, pol, [release("s", "pufferfish_sum", ["age"], 1, absolute_error=2)])
    plan_spec(_parse(tmp_path, fine))


def test_remapping_a_column_is_another_protection(tmp_path, capsys):
    _people(tmp_path, np.arange(20, 60))
    ledger = tmp_path / "l.sqlite"
    assert _run(_write(tmp_path, _age_spec(99)), ledger, tmp_path / "o0", "--new-ledger") == 0
    (tmp_path / "people.csv").write_text((tmp_path / "people.csv").read_text().replace("age,sex", "years,sex", 1))
    moved = _age_spec(99).replace('high = 99', 'high = 99\ncolumn = "years"')
    capsys.readouterr()
    assert _run(_write(tmp_path, moved, "m.toml"), ledger, tmp_path / "o1") == 2
    assert "protection policy" in capsys.readouterr().err


def test_public_release_is_labelled_exact_and_recorded(tmp_path, capsys):
    import json

    _people(tmp_path, np.arange(20, 60))
    ds = people_dataset(allow_disclosures=True)
    text = spec_toml(ds, {"age": AGE, "sex": SEX}, {"p": {"secrets": "partition", "by": ["age"]}},
                     [release("h", "histogram", ["age"], 0.5, "p", public=True)])
    spec = _write(tmp_path, text)
    ledger = tmp_path / "l.sqlite"
    assert _run(spec, ledger, tmp_path / "o", "--new-ledger") == 0
    doc = json.loads((tmp_path / "o" / "h.json").read_text())
    assert doc["privacy"].startswith("exact: not private") and doc["epsilon_charged"] == 0
    s = Ledger(ledger).summary()["people"]
    assert s["spent"] == 0 and s["disclosures"] == 1 and not s["entries"][0]["private"]


# -- item 4: the budget is bound to the data -----------------------------------------------------------------
def test_same_data_under_two_ids_is_refused_and_new_data_is_a_new_version(tmp_path, capsys):
    _people(tmp_path, np.arange(20, 60))
    ledger = tmp_path / "l.sqlite"
    assert _run(_write(tmp_path, _age_spec(99)), ledger, tmp_path / "o0", "--new-ledger") == 0
    renamed = _write(tmp_path, _age_spec(99).replace('id = "people"', 'id = "people-again"'), "r.toml")
    capsys.readouterr()
    assert _run(renamed, ledger, tmp_path / "o1") == 2
    assert "'people'" in capsys.readouterr().err
    assert "people-again" not in Ledger(ledger).summary()  # refused with its first spend: not registered
    _people(tmp_path, np.arange(21, 61))  # the data were updated
    assert _run(_write(tmp_path, _age_spec(99)), ledger, tmp_path / "o2") == 0
    entries = Ledger(ledger).summary()["people"]["entries"]
    assert [e["data_version"] for e in entries] == [1, 2]
    assert all(len(str(e["data_version"])) < 4 for e in entries)  # a number, never the hash


def test_the_same_rows_in_another_form_are_the_same_data(tmp_path, capsys):
    """Re-encoded, compressed, reordered rows or a table of them: still the data of the first dataset id."""
    import gzip

    import pandas as pd

    ages = np.r_[np.arange(20, 60), 33, 41]
    _people(tmp_path, ages)
    ledger = tmp_path / "l.sqlite"
    assert _run(_write(tmp_path, _age_spec(99)), ledger, tmp_path / "o0", "--new-ledger") == 0
    text = (tmp_path / "people.csv").read_text()
    lines = text.splitlines()
    variants = {
        "crlf.csv": "\r\n".join(lines) + "\r\n",
        "shuffled.csv": "\n".join([lines[0]] + lines[:0:-1]) + "\n",
        "swapped.csv": "\n".join(",".join(reversed(line.split(","))) for line in lines) + "\n",
    }
    for k, (name, content) in enumerate(variants.items()):
        (tmp_path / name).write_text(content, newline="")
    with gzip.open(tmp_path / "packed.csv.gz", "wt") as fh:
        fh.write(text)
    for k, name in enumerate([*variants, "packed.csv.gz"]):
        spec = _write(tmp_path, _age_spec(99).replace('id = "people"', f'id = "copy{k}"')
                      .replace('path = "people.csv"', f'path = "{name}"'), f"c{k}.toml")
        capsys.readouterr()
        assert _run(spec, ledger, tmp_path / f"c{k}") == 2, name
        assert "as dataset 'people'" in capsys.readouterr().err
    table = _age_spec(99).replace('id = "people"', 'id = "table"').replace('path = "people.csv"\n', "")
    df = pd.DataFrame({"age": ages[::-1], "sex": np.where(ages[::-1] % 2 == 0, "f", "m")})
    with pytest.raises(LedgerError, match="as dataset 'people'"):
        py_release(table, df, ledger=ledger, out_dir=tmp_path / "t", plots=False)
    assert set(Ledger(ledger).summary()) == {"people"}


@pytest.mark.parametrize("extra", ["seeded", "error"])
def test_a_disclosure_under_a_new_id_cannot_reach_another_datasets_data(tmp_path, capsys, extra):
    """A seeded test or a domain check on the data of a dataset that allows no disclosures, under a new id:
    refused as that dataset's data before any outcome is shown (the domain check here would fail)."""
    _people(tmp_path, np.r_[np.arange(20, 60), 120])  # one age outside 0..99: clamped by the default
    ledger = tmp_path / "l.sqlite"
    assert _run(_write(tmp_path, _age_spec(99)), ledger, tmp_path / "o0", "--new-ledger") == 0
    text = _age_spec(99, allow=True, seed=7 if extra == "seeded" else None,
                     invalid="error" if extra == "error" else None).replace('id = "people"', 'id = "probe"')
    capsys.readouterr()
    code = _run(_write(tmp_path, text, "p.toml"), ledger, tmp_path / "p",
                *(["--seeded-test"] if extra == "seeded" else []))
    err = capsys.readouterr().err
    assert code == 2 and "as dataset 'people'" in err and "domain" not in err.split("as dataset")[0]
    assert not (tmp_path / "p").exists()
    probe = Ledger(ledger).summary()["probe"]  # the attempt is on record, with nothing spent
    assert probe["spent"] == 0 and probe["disclosures"] == 1


def test_python_release_refuses_a_missing_ledger(tmp_path):
    import pandas as pd

    text = spec_toml(people_dataset(path=None), {"age": AGE}, {"p": NEAR},
                     [release("h", "histogram", ["age"], 0.1, "p")])
    df = pd.DataFrame({"age": [30, 40, 50]})
    with pytest.raises(LedgerError, match="does not exist"):
        py_release(text, df, ledger=tmp_path / "missing.sqlite", out_dir=tmp_path / "o")
    assert not (tmp_path / "missing.sqlite").exists()
    py_release(text, df, ledger=tmp_path / "new.sqlite", out_dir=tmp_path / "o", new_ledger=True, plots=False)
    assert Ledger(tmp_path / "new.sqlite").summary()["people"]["spent"] > 0


def test_ledger_creation_is_atomic(tmp_path, monkeypatch):
    """A kill while the ledger is created leaves no file (never an empty one that every later run refuses)."""
    path = tmp_path / "l.sqlite"

    def killed(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "link", killed)
    with pytest.raises(KeyboardInterrupt):
        Ledger(path)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()
    Ledger(path)
    assert sqlite3.connect(path).execute("SELECT count(*) FROM meta").fetchone()[0] == 1


def test_registration_is_fixed(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    p1, p2 = Protection("a", "A"), Protection("b", "B")
    led.register("d", 1, p1)
    led.register("d", 1, p1)  # the same again: nothing changes
    with pytest.raises(LedgerError, match="protection policy"):
        led.register("d", 1, p2)
    with pytest.raises(LedgerError, match="allow_disclosures"):
        led.register("d", 1, p1, allow_disclosures=True)
    with pytest.raises(LedgerError, match="not registered"):
        led.spend("new", 1, [Spend("x", "histogram", 0.1, "p")])
    s = led.summary()["d"]
    assert s["guarantee"] == "epsilon 0 spent of 1 under policy A"


def test_ledger_init_registers_a_spec(tmp_path, capsys):
    _people(tmp_path, np.arange(20, 60))
    spec = _write(tmp_path, _age_spec(99))
    path = tmp_path / "l.sqlite"
    assert main(["ledger", "init", str(path), "--spec", str(spec)]) == 0
    reg = Ledger(path).registration("people")
    assert reg["total"] == 100 and not reg["allow_disclosures"] and "DistanceThreshold" in reg["policy_text"]
    capsys.readouterr()
    assert main(["ledger", str(path)]) == 0
    assert "epsilon 0 spent of 100 under policy p" in capsys.readouterr().out


def test_spends_of_an_older_ledger_are_marked_when_the_policy_is_fixed(tmp_path):
    """A ledger written before datasets had a protection policy: its earlier spends are not counted as
    verified under the policy registered later."""
    path = tmp_path / "old.sqlite"
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE datasets (id TEXT PRIMARY KEY, total TEXT NOT NULL, created TEXT NOT NULL);
        CREATE TABLE spends (seq INTEGER PRIMARY KEY AUTOINCREMENT, dataset TEXT NOT NULL REFERENCES datasets(id),
            release TEXT NOT NULL, kind TEXT NOT NULL, epsilon TEXT NOT NULL, policy TEXT NOT NULL,
            spec_sha256 TEXT NOT NULL, time TEXT NOT NULL, parallel TEXT);
        INSERT INTO datasets VALUES ('d', '2', 'then');
        INSERT INTO spends (dataset, release, kind, epsilon, policy, spec_sha256, time) VALUES
            ('d', 'old', 'cdf', '1', 'line: Line() on [''age'']', '', 'then');
        PRAGMA user_version = 2;
    """)
    con.commit()
    con.close()
    led = Ledger(path, create=False)
    led.spend("d", 2, [Spend("new", "histogram", Fraction(1, 2), "dp")], protection=Protection("k", "dp"))
    s = led.summary()["d"]
    assert [e["before_registration"] for e in s["entries"]] == [True, False]
    assert "epsilon 1.5 spent of 2 under policy dp; of it, epsilon 1 by 1 spends recorded before" in s["guarantee"]


def test_drop_is_refused_where_a_release_publishes_its_row_count(tmp_path):
    from blowfish_privacy.release.runner import plan_spec

    for kind, expect in (("cdf", "row count exactly"), ("histogram", None)):
        text = spec_toml(people_dataset(invalid="drop"), {"age": AGE}, {"p": NEAR},
                         [release("r", kind, ["age"], 0.5, "p")])
        if expect:
            with pytest.raises(SpecError, match=expect):
                plan_spec(_parse(tmp_path, text))
        else:
            plan_spec(_parse(tmp_path, text))
