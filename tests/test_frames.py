"""DataFrame frontends: Domain.encode, frames.histogram and release.release on pandas, Polars and pyarrow tables."""

import json

import numpy as np
import pytest
from release_specs import AGE, BY_SEX, NEAR, SEX, people_dataset, spec_toml
from release_specs import release as release_table

from blowfish_privacy import Categorical, Domain, Generator, Ordinal, Policy, histogram, mechanisms, secrets
from blowfish_privacy.frames import TableError, table_columns
from blowfish_privacy.release import DataError, Ledger, release
from blowfish_privacy._aggregate import partition_aggregates, plan_for

LIBS = ["pandas", "polars", "pyarrow"]


def table(lib, data):
    """``data`` (a dict of lists or arrays) as a table of library ``lib``."""
    mod = pytest.importorskip(lib)
    if lib == "pandas":
        return mod.DataFrame(data)
    if lib == "polars":
        return mod.DataFrame(data)
    return mod.table(data)


DOMAIN = Domain([Categorical("sex", ["f", "m"]), Ordinal("age", 0, 99)])


def people(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    return {"age": rng.integers(0, 100, n), "sex": rng.choice(np.array(["f", "m"]), n), "other": rng.random(n)}


@pytest.mark.parametrize("lib", LIBS)
def test_encode_table_by_attribute_name(lib):
    data = people(50)
    t = table(lib, data)  # columns in another order than the domain's, and one extra column
    expected = DOMAIN.encode({"sex": list(data["sex"]), "age": list(data["age"])})
    assert np.array_equal(DOMAIN.encode(t), expected)
    assert np.array_equal(histogram(t, DOMAIN), np.bincount(expected, minlength=DOMAIN.size))


def test_encode_series_and_lazy_frame():
    pd = pytest.importorskip("pandas")
    d = Domain.ordinal("age", 0, 99)
    assert DOMAIN.encode(pd.DataFrame({"age": [35], "sex": ["m"]})).tolist() == [135]
    assert d.encode(pd.Series([3, 4])).tolist() == [3, 4]
    pl = pytest.importorskip("polars")
    lazy = pl.DataFrame({"age": [1, 1, 2], "x": ["a", "b", "c"]}).lazy()
    assert histogram(lazy, d)[:3].tolist() == [0, 2, 1]


@pytest.mark.parametrize("lib", LIBS)
def test_integer_columns_are_not_copied(lib):
    ages = np.arange(100, dtype=np.int64)
    t = table(lib, {"age": ages})
    col = table_columns(t, ["age"])["age"]
    assert col.dtype == np.int64
    if lib == "pandas":
        assert np.shares_memory(col, t["age"].to_numpy())
    elif lib == "polars":
        assert col.ctypes.data == t.get_column("age").to_numpy().ctypes.data
    else:
        assert col.ctypes.data == t.column("age").chunk(0).buffers()[1].address


@pytest.mark.parametrize("lib", LIBS)
def test_errors_never_quote_values(lib):
    t = table(lib, {"age": [31, 12345], "sex": ["f", "zebra"]})
    with pytest.raises(TableError) as exc:
        DOMAIN.encode(t)
    with pytest.raises(TableError) as exc2:
        histogram(t, DOMAIN)
    for e in (exc, exc2):
        msg = str(e.value)
        assert "12345" not in msg and "zebra" not in msg and "(record" not in msg
    assert "'age'" in str(exc2.value) and "'sex'" in str(exc2.value)  # every invalid column at once
    assert "invalid='clamp'" in str(exc2.value)


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("mode", ["clamp", "drop"])
def test_histogram_invalid_modes_match_the_engines(lib, mode):
    raw = {"age": [5.0, 150.0, -3.0, 7.5, float("nan"), 20.0], "sex": ["f", "m", "f", "m", "f", "x"]}
    got = histogram(table(lib, raw), DOMAIN, invalid=mode)
    cols = {k: np.array(v, dtype=object if k == "sex" else float) for k, v in raw.items()}
    plan = plan_for(DOMAIN, {"sex": "sex", "age": "age"}, [("histogram", DOMAIN.names)], mode)
    assert np.array_equal(got, partition_aggregates(cols, plan)[0])
    # clamp: out-of-range ages clamped, cells that are not integers counted as the low age 0
    kept = {(0, 5): 1, (1, 99): 1, (0, 0): 2, (1, 0): 1} if mode == "clamp" else {(0, 5): 1}
    assert got.sum() == sum(kept.values())
    for (sex, age), count in kept.items():
        assert got[sex * 100 + age] == count


def test_histogram_columns_mapping_and_missing_column():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"gender": ["f", "m"], "years": [1, 2]})
    h = histogram(df, DOMAIN, columns={"sex": "gender", "age": "years"})
    assert h[1] == 1 and h[102] == 1
    with pytest.raises(TableError, match="column 'sex' not found; its columns are"):
        histogram(df, DOMAIN)
    with pytest.raises(ValueError, match="invalid must be one of"):
        histogram(df, DOMAIN, invalid="ignore", columns={"sex": "gender", "age": "years"})


@pytest.mark.parametrize("lib", LIBS)
def test_cdf_end_to_end(lib):
    ages = np.random.default_rng(1).integers(17, 91, 3000)
    policy = Policy(Domain.ordinal("age", 17, 90), secrets.DistanceThreshold(theta=5))
    hist = histogram(table(lib, {"age": ages}), policy)
    assert np.array_equal(hist, np.bincount(ages - 17, minlength=74))
    r = mechanisms.ordered_hierarchical(hist, policy, epsilon=1.0, generator=Generator(seed=3))
    assert r.cumulative[-1] == ages.size and np.all(np.diff(r.cumulative) >= 0)
    assert abs(r.range_query(17, 50) - np.sum(ages <= 50)) < 200


def _spec(path=None, run=None, **dataset) -> str:
    """The people spec on a table (no data source unless ``path``); sex is read from the column "gender"."""
    dataset = {"protect": "both", "allow_disclosures": True, **dataset}
    return spec_toml(people_dataset(path, **dataset), {"age": AGE, "sex": {**SEX, "column": "gender"}},
                     {"near": NEAR, "within_sex": BY_SEX,
                      "both": {"secrets": "intersection", "of": ["near", "within_sex"]}},
                     [release_table("age-cdf", "cdf", ["age"], 0.25, "near"),
                      release_table("age-by-sex", "histogram", ["sex", "age"], 0.25, "within_sex")], run=run)


SPEC = _spec()


def _frame(lib, n=500, seed=2):
    d = people(n, seed)
    return table(lib, {"age": d["age"], "gender": d["sex"]})


@pytest.mark.parametrize("lib", LIBS)
def test_release_runs_a_spec_on_a_table(lib, tmp_path):
    led = tmp_path / "ledger.sqlite"
    result = release(SPEC, _frame(lib), ledger=led, new_ledger=True, out_dir=tmp_path / "out", plots=False)
    names = sorted(p.name for p in result.files)
    assert names == ["age-by-sex.json", "age-cdf.json", "summary.json"]
    doc = json.loads((tmp_path / "out" / "age-cdf.json").read_text())
    assert doc["engine"] == "table" and doc["privacy"] == "private" and doc["epsilon_spent"] <= 0.25
    assert float(Ledger(led).remaining("people")) == pytest.approx(0.5)


@pytest.mark.parametrize("lib", LIBS)
def test_release_refuses_invalid_values_before_spending(lib, tmp_path):
    led = tmp_path / "ledger.sqlite"
    bad = table(lib, {"age": [1, 250], "gender": ["f", "m"]})
    check = _spec(invalid="error")  # an explicit domain check: a recorded disclosure
    with pytest.raises(DataError) as exc:
        release(check, bad, ledger=led, new_ledger=True, out_dir=tmp_path / "out")
    msg = str(exc.value)
    assert "domain.age: column 'age' has values outside the domain" in msg and "250" not in msg
    assert 'dataset.invalid = "clamp" or "drop"' in msg
    s = Ledger(led).summary()["people"]
    assert s["spent"] == 0 and s["disclosures"] == 1 and not (tmp_path / "out").exists()
    with pytest.raises(DataError, match="domain.sex: column 'gender' not found"):
        release(SPEC, table(lib, {"age": [1]}), ledger=led, new_ledger=True, out_dir=tmp_path / "out")
    # the default clamps ordinal values into the domain, for tables as for files
    result = release(SPEC, bad, ledger=led, new_ledger=True, out_dir=tmp_path / "out2", plots=False)
    assert len(result.releases) == 2


def test_release_on_a_table_equals_the_command_on_its_file(tmp_path):
    pd = pytest.importorskip("pandas")
    d = people(400, 5)
    df = pd.DataFrame({"age": d["age"], "gender": d["sex"]})
    df.to_csv(tmp_path / "people.csv", index=False)
    seeded = _spec("people.csv", run={"seed": 11})
    (tmp_path / "spec.toml").write_text(seeded)
    led = tmp_path / "ledger.sqlite"
    a = release(tmp_path / "spec.toml", ledger=led, new_ledger=True, out_dir=tmp_path / "file", allow_seeded=True, plots=False)
    b = release(str(tmp_path / "spec.toml"), df, ledger=led, new_ledger=True, out_dir=tmp_path / "table", allow_seeded=True,
                plots=False)
    skip = {"engine", "run", "time"}
    for x, y in zip(a.releases, b.releases):
        assert {k: v for k, v in x.items() if k not in skip} == {k: v for k, v in y.items() if k not in skip}
        assert x["privacy"].startswith("seeded: NOT private")
    s = Ledger(led).summary()["people"]
    assert s["spent"] == 0 and s["disclosures"] == 2  # seeded runs spend nothing, and are recorded
    with pytest.raises(Exception, match="seeded"):
        release(_spec(run={"seed": 11}), df, ledger=led, new_ledger=True, out_dir=tmp_path / "x")
    with pytest.raises(ValueError, match="either a table"):
        release(tmp_path / "spec.toml", df, ledger=led, new_ledger=True, out_dir=tmp_path / "y", engine=object())

