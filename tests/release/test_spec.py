"""Spec validation: each invalid spec gives one error naming the file and key, and spends nothing."""

import pytest
from release_specs import BASE

from blowfish_privacy.cli import main
from blowfish_privacy.release import Ledger, LocalEngine, load_spec, parse_spec, run_spec


def test_valid_spec_parses(workdir):
    (workdir / "spec.toml").write_text((workdir / "spec.toml").read_text() + "\n[run]\nseed = 7\n")
    spec = load_spec(workdir / "spec.toml")
    assert spec.dataset_id == "people" and spec.total_epsilon == 1
    assert [r.name for r in spec.releases] == ["age-cdf", "age-sex"]
    assert spec.releases[0].epsilon.denominator == 4  # 0.25 read exactly
    assert spec.seed == 7 and len(spec.sha256) == 64


def test_float_epsilons_are_read_as_decimals(workdir):
    spec = parse_spec(BASE.replace("epsilon = 0.25", "epsilon = 0.1"), "s.toml", base_dir=workdir)
    assert spec.releases[0].epsilon.numerator == 1 and spec.releases[0].epsilon.denominator == 10


INVALID = [
    # (what, (text of BASE, its replacement) or (None, text appended), key expected in the message, words expected)
    ("unknown top-level key", (None, "\n[extra]\nx = 1\n"), "extra", "unknown key"),
    ("unknown release key", ('quantiles = [0.5]', 'quantiles = [0.5]\nsmoothing = 3'),
     "release[0].smoothing", "unknown key"),
    ("wrong type of epsilon", ("epsilon = 0.25\nranges", 'epsilon = "a lot"\nranges'),
     "release[0].epsilon", "number > 0"),
    ("negative epsilon", ("epsilon = 0.25\nranges", "epsilon = -1\nranges"),
     "release[0].epsilon", "> 0"),
    ("epsilon over budget", ("total_epsilon = 1.0", "total_epsilon = 0.4"),
     "release", "more than dataset.total_epsilon"),
    ("unknown attribute", ('attributes = ["age"]', 'attributes = ["height"]'),
     "release[0].attributes", "unknown attribute 'height'"),
    ("range outside the domain", ("ranges = [[10, 20]]", "ranges = [[10, 200]]"),
     "release[0].ranges", "outside the domain"),
    ("cdf of a categorical attribute (unsupported for the release)",
     ('attributes = ["age"]\npolicy = "near"', 'attributes = ["sex"]\npolicy = "by_sex"'),
     "release[0].attributes", "needs exactly one ordinal attribute"),
    ("policy that does not fit the attributes", ('by = ["sex"]', 'by = ["country"]'),
     "release[1].policy", "does not fit"),
    ("unknown policy name", ('policy = "near"', 'policy = "far"'),
     "release[0].policy", "unknown policy 'far'"),
    ("unknown secret graph", ('secrets = "distance_threshold"', 'secrets = "fuzzy"'),
     "policies.near.secrets", "allowed"),
    ("kind not in this version", ('kind = "histogram"', 'kind = "constrained_histogram"'),
     "release[1].kind", "release kind 'constrained_histogram' is not available in this version"),
    ("unknown kind", ('kind = "histogram"', 'kind = "median"'),
     "release[1].kind", "unknown release kind 'median'"),
    ("public constraints", ("theta = 5", "theta = 5\nconstraints = [[1, 2]]"),
     "policies.near.constraints", "not supported"),
    ("bad ordinal range", ("high = 99", "high = -5"), "domain.age", "low must be <= high"),
    ("duplicate release names", ('name = "age-sex"', 'name = "age-cdf"'),
     "release[1].name", "unique"),
    ("missing data file", ('path = "people.csv"', 'path = "nowhere.csv"'),
     "dataset.path", "does not exist"),
    ("bad mechanism", ('quantiles = [0.5]', 'quantiles = [0.5]\nmechanism = "magic"'),
     "release[0].mechanism", "must be one of"),
    ("boolean where an integer is needed", ("high = 99", "high = true"),
     "domain.age.high", "must be an integer"),
    ("dataset without a source", ('path = "people.csv"', ''), "dataset", "exactly one of path"),
    ("not TOML", (None, "\nthis is = = not toml\n"), "", "not valid TOML"),
]


@pytest.mark.parametrize("what,edit,key,words", INVALID, ids=[c[0] for c in INVALID])
def test_invalid_spec_one_line_error_and_nothing_spent(workdir, capsys, what, edit, key, words):
    old, new = edit
    assert old is None or old in BASE  # the edit applies to BASE as written
    spec_path = workdir / "spec.toml"
    spec_path.write_text(BASE + new if old is None else BASE.replace(old, new))
    ledger = workdir / "ledger.sqlite"
    code = main(["release", str(spec_path), "--ledger", str(ledger), "--new-ledger", "--out", str(workdir / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"blowfish: error: {spec_path}: ")
    if key:
        assert f": {key}" in lines[0], lines[0]
    assert words in lines[0], lines[0]
    assert not (workdir / "out").exists()
    assert Ledger(ledger).summary() == {}


@pytest.mark.parametrize(
    "column,value,key",
    [("age", "150", "domain.age"), ("sex", "zzqx", "domain.sex"), ("age", "forty", "domain.age")],
)
def test_data_outside_the_domain_spends_nothing(workdir, capsys, column, value, key):
    lines = (workdir / "people.csv").read_text().splitlines()
    header = lines[0].split(",")
    row = lines[5].split(",")
    row[header.index(column)] = value
    lines[5] = ",".join(row)
    (workdir / "people.csv").write_text("\n".join(lines) + "\n")
    ledger = workdir / "ledger.sqlite"
    # an explicit domain check (invalid = "error"): refused, nothing spent, the check recorded as a disclosure
    spec = workdir / "check.toml"
    spec.write_text(BASE.replace('id = "people"', 'id = "people"\ninvalid = "error"'))
    code = main(["release", str(spec), "--ledger", str(ledger), "--new-ledger", "--out", str(workdir / "out")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert f": {key}: " in err
    text = err.replace(str(workdir), "<tmp>")  # the temporary folder's name may hold any digits
    assert value not in text.split(": ", 3)[-1] and "row" not in text  # no data value, no row number
    s = Ledger(ledger).summary()["people"]
    assert s["spent"] == 0 and [e["kind"] for e in s["entries"]] == ["invalid = error"]
    assert not (workdir / "out").exists()
    # the default (clamp ordinal values, drop unknown labels) releases, whatever the bad cell
    code = main(["release", str(workdir / "spec.toml"), "--ledger", str(ledger), "--out", str(workdir / "out"),
                 "--no-plots", "--quiet"])
    assert code == 0 and Ledger(ledger).summary()["people"]["spent"] > 0


def test_missing_column_names_the_attribute(workdir, capsys):
    text = BASE.replace('labels = ["f", "m"]', 'labels = ["f", "m"]\ncolumn = "gender"')
    (workdir / "spec.toml").write_text(text)
    code = main(["release", str(workdir / "spec.toml"), "--ledger", str(workdir / "l.sqlite"), "--new-ledger", "--out",
                 str(workdir / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "domain.sex: column 'gender' not found" in err and "'income'" not in err


def test_a_file_without_header_is_not_quoted_and_duplicate_columns_are_refused(workdir, capsys):
    rows = (workdir / "people.csv").read_text().splitlines()
    (workdir / "people.csv").write_text("\n".join(rows[1:]) + "\n")  # no header: the first record is in its place
    first = rows[1].split(",")
    code = main(["release", str(workdir / "spec.toml"), "--ledger", str(workdir / "l.sqlite"), "--new-ledger",
                 "--out", str(workdir / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "not found" in err and not any(f"'{v}'" in err for v in first)
    (workdir / "people.csv").write_text("age,sex,age\n" + "\n".join(rows[1:]) + "\n")
    code = main(["release", str(workdir / "spec.toml"), "--ledger", str(workdir / "l.sqlite"), "--new-ledger",
                 "--out", str(workdir / "out")])
    assert code == 2 and "more than once" in capsys.readouterr().err


def test_float_spends_never_round_over_the_total(workdir):
    # ten releases of 0.1 fit a total of 1 exactly (0.1 is read as 1/10)
    rel = '\n[[release]]\nname = "h{k}"\nkind = "histogram"\nattributes = ["age"]\npolicy = "near"\nepsilon = 0.1\n'
    head = BASE.split("[[release]]")[0]
    text = head + "".join(rel.format(k=k) for k in range(10))
    (workdir / "spec.toml").write_text(text)
    spec = load_spec(workdir / "spec.toml")
    ledger = Ledger(workdir / "l.sqlite")
    run_spec(spec, engine=LocalEngine(progress=False), ledger=ledger, out_dir=workdir / "out", plots=False)
    assert ledger.remaining("people") == 0
