"""dataset.invalid: values outside the domain are clamped, dropped or refused, never quoted back.

The map step (partition_aggregates) is shared by the local and the Dask
engine; the partition-wise map/reduce below is what the Dask engine runs,
and a real Dask cluster is used when Dask is installed.
"""

import csv
import math
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from release_specs import AGE, FULL_DOMAIN, INCOME, NEAR, SEX, people_dataset, protected_by, release, spec_toml

from blowfish_privacy import Categorical, Domain, Ordinal
from blowfish_privacy.cli import main
from blowfish_privacy.release import DataError, Ledger, LocalEngine
from blowfish_privacy._aggregate import map_partition as _map
from blowfish_privacy._aggregate import partition_aggregates, plan_for
from blowfish_privacy._aggregate import reduce as _reduce
from blowfish_privacy._aggregate import unwrap as _unwrap
from blowfish_privacy.errors import InvalidColumn

from blowfish_privacy.release.runner import _needs
from blowfish_privacy.release.spec import SpecError, parse_spec

#: The releases of the spec: a selection, a second histogram, a column (pufferfish_sum).
RELEASES = [release("age-f", "histogram", ["sex", "age"], 1, "all", where={"sex": "f"}),
            release("income", "histogram", ["income"], 1, "all"),
            release("age-sum", "pufferfish_sum", ["age"], 1, absolute_error=5)]


#: Every pair of (sex, age) values, every pair of incomes, and ages within 5: what each release
#: protects (the Pufferfish sum with absolute error 5 protects ages closer than 20).
POLICIES = protected_by(all=(FULL_DOMAIN, ["sex", "age"]), all_income=(FULL_DOMAIN, ["income"]),
                        age_near=({**NEAR, "theta": 5}, ["age"]))


def _spec_text(mode="error", age_mode=None) -> str:
    """A seeded spec over age (0..50), sex and income; ``invalid`` for the dataset (by default the explicit
    check "error", a disclosure the dataset allows) and for age (``mode=None``: the spec's defaults)."""
    dataset = people_dataset(total_epsilon=3, protect="protected", allow_disclosures=True,
                             **({"invalid": mode} if mode else {}))
    age = {**AGE, "high": 50, **({"invalid": age_mode} if age_mode else {})}
    return spec_toml(dataset, {"age": age, "sex": SEX, "income": INCOME}, POLICIES, RELEASES, run={"seed": 1})


NEEDS_AGE_F = ("histogram", ("sex", "age"), (("sex", "f"),))
NEEDS_INCOME = ("histogram", ("income",))
NEEDS_AGE_COL = ("column", ("age",))


def _write(folder: Path, rows, *, mode="error", age_mode=None, header=("age", "sex", "income")) -> Path:
    with open(folder / "people.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    (folder / "spec.toml").write_text(_spec_text(mode, age_mode))
    return folder / "spec.toml"


def _aggregate(folder: Path, rows, **kw) -> dict:
    path = _write(folder, rows, **kw)
    spec = parse_spec(path.read_text(), str(path), base_dir=folder)
    return LocalEngine(progress=False).aggregate(spec, _needs(spec))


def _age_f(agg) -> dict:
    """{age: count} of the sex = f histogram."""
    h = agg[NEEDS_AGE_F].reshape(2, 51)
    assert h[1].sum() == 0
    return {a: int(c) for a, c in enumerate(h[0]) if c}


# the issue's table: (34, f), (71, m), (52, f) with ages 0..50
ISSUE_ROWS = [(34, "f", 1), (71, "m", 2), (52, "f", 3)]


def test_issue_example_error_names_the_rule_not_the_value(tmp_path):
    with pytest.raises(DataError) as info:
        _aggregate(tmp_path, ISSUE_ROWS)
    msg = str(info.value)
    assert "domain.age: column 'age' has values outside the domain or not integers" in msg
    assert "integers in [0, 50]" in msg and 'dataset.invalid = "clamp" or "drop"' in msg
    for leak in ("52", "71", "row", "record"):
        assert leak not in msg.replace(str(tmp_path), "")


def test_issue_example_clamp_and_drop(tmp_path):
    assert _age_f(_aggregate(tmp_path, ISSUE_ROWS, mode="clamp")) == {34: 1, 50: 1}
    agg = _aggregate(tmp_path, ISSUE_ROWS, mode="drop")
    assert _age_f(agg) == {34: 1}
    # the income release does not use age: no row of it is dropped
    assert agg[NEEDS_INCOME].tolist() == [0, 1, 1, 1, 0, 0, 0, 0, 0, 0]
    np.testing.assert_array_equal(np.sort(agg[NEEDS_AGE_COL]), [34.0])


def test_per_attribute_override(tmp_path):
    rows = ISSUE_ROWS + [(10, "f", 12)]  # income 12 is outside 0..9
    with pytest.raises(DataError, match="domain.income: column 'income'") as info:
        _aggregate(tmp_path, rows, age_mode="clamp")  # age clamped; income still refused
    assert "domain.age" not in str(info.value)
    agg = _aggregate(tmp_path, rows, mode="drop", age_mode="clamp")
    assert _age_f(agg) == {10: 1, 34: 1, 50: 1}
    assert agg[NEEDS_INCOME].tolist() == [0, 1, 1, 1, 0, 0, 0, 0, 0, 0]


BAD_ROWS = [
    ("-3", "f", "0"),      # below: clamp to 0
    ("60", "f", "1"),      # above: clamp to 50
    ("7.0", "f", "2"),     # an integral float is an integer
    ("7.5", "f", "3"),     # not an integer: low (0) under clamp, dropped under drop
    ("", "f", "4"),        # missing: the same
    ("abc", "m", "5"),     # not a number (and sex m)
    ("20", "x", "6"),      # unknown label: dropped by both
    ("20", "", "7"),       # missing label
    ("25", "f", "99"),     # income outside: age-f unaffected
    ("nan", "f", "8"),
    ("1e400", "f", "9"),   # infinite
    ("99999999999999999999999", "f", "x"),  # huge: clamp to 50; income not a number
]


def test_clamp_and_drop_exact_histograms(tmp_path):
    clamp = _aggregate(tmp_path, BAD_ROWS, mode="clamp")
    # -3, and the cells that are not integers (7.5, empty, nan, 1e400), count as low (0)
    assert _age_f(clamp) == {0: 5, 50: 2, 7: 1, 25: 1}
    # income clamp: 99 -> 9, 'x' -> 0: every row counts once
    assert clamp[NEEDS_INCOME].tolist() == [2, 1, 1, 1, 1, 1, 1, 1, 1, 2]
    assert clamp[NEEDS_INCOME].sum() == len(BAD_ROWS) == len(clamp[NEEDS_AGE_COL])
    np.testing.assert_array_equal(np.sort(clamp[NEEDS_AGE_COL]), [0, 0, 0, 0, 0, 0, 7, 20, 20, 25, 50, 50])
    drop = _aggregate(tmp_path, BAD_ROWS, mode="drop")
    assert _age_f(drop) == {7: 1, 25: 1}
    assert drop[NEEDS_INCOME].tolist() == [1] * 10  # 99 and "x" dropped
    np.testing.assert_array_equal(np.sort(drop[NEEDS_AGE_COL]), [7, 20, 20, 25])
    with pytest.raises(DataError) as info:
        _aggregate(tmp_path, BAD_ROWS)
    msg = str(info.value)
    assert "domain.age:" in msg and "domain.income:" in msg and "domain.sex:" in msg
    assert "not among the labels ['f', 'm']" in msg


def test_where_attribute_follows_its_own_rule(tmp_path):
    rows = [("5", "f", "0"), ("6", "zz", "0"), ("7", "m", "0")]
    with pytest.raises(DataError, match="domain.sex"):
        _aggregate(tmp_path, rows)
    for mode in ("clamp", "drop"):
        agg = _aggregate(tmp_path, rows, mode=mode)
        assert _age_f(agg) == {5: 1}
        assert agg[NEEDS_INCOME].tolist()[0] == 3  # sex is not used by this release


def test_error_refuses_through_the_command_and_spends_nothing(tmp_path, capsys):
    spec = _write(tmp_path, ISSUE_ROWS)
    spec.write_text(spec.read_text().split("[[release]]\nname = \"age-sum\"")[0])  # histograms only
    ledger = tmp_path / "l.sqlite"
    code = main(["release", str(spec), "--ledger", str(ledger), "--new-ledger", "--out", str(tmp_path / "o"), "--no-plots",
                 "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert f"{spec}: domain.age: column 'age'" in err
    assert "52" not in err.replace(str(tmp_path), "") and "row" not in err
    s = Ledger(ledger).summary()["people"]  # nothing spent; the domain check is a recorded disclosure
    assert s["spent"] == 0 and s["disclosures"] == 1 and not (tmp_path / "o").exists()


def test_unknown_mode_is_a_spec_error(tmp_path):
    path = _write(tmp_path, ISSUE_ROWS, mode="ignore")
    with pytest.raises(SpecError, match=r"dataset.invalid: must be one of \['error', 'clamp', 'drop'\]"):
        parse_spec(path.read_text(), str(path), base_dir=tmp_path)
    path = _write(tmp_path, ISSUE_ROWS, age_mode="fix")
    with pytest.raises(SpecError, match="domain.age.invalid: must be one of"):
        parse_spec(path.read_text(), str(path), base_dir=tmp_path)
    path = _write(tmp_path, ISSUE_ROWS, mode=None)  # the defaults: clamp ordinal values, drop unknown labels
    assert parse_spec(path.read_text(), str(path), base_dir=tmp_path).invalid == {
        "age": "clamp", "sex": "drop", "income": "clamp"}


# -- the map step directly: typed columns, and partitions (what Dask runs) ----------------------------

DOM = Domain([Ordinal("a", 10, 29, bin_width=5), Categorical("s", ["f", "m"]), Categorical("k", [1, 2, 3])])
COLS = {"a": "a", "s": "s", "k": "k"}
PLAN_NEEDS = [("histogram", ("a", "s", "k")), ("histogram", ("k",)), ("histogram", ("a",), (("s", "m"),)),
              ("column", ("a",))]


def _typed_columns(rng, n):
    a = rng.integers(0, 40, n).astype(object)  # 0..9 and 30..39 are outside 10..29
    a[rng.random(n) < 0.05] = 12.5
    a[rng.random(n) < 0.05] = None
    a[rng.random(n) < 0.05] = "garbage"
    a[rng.random(n) < 0.05] = float("nan")
    s = rng.choice(np.array(["f", "m", "x", ""], dtype=object), n, p=[0.45, 0.45, 0.05, 0.05])
    k = rng.integers(0, 5, n)  # 0 and 4 are not labels
    return {"a": a, "s": s, "k": k}


def _reference(columns, mode):
    """Row by row: the expected aggregates of PLAN_NEEDS."""
    def age(v):
        if isinstance(v, int) or (isinstance(v, float) and math.isfinite(v) and v.is_integer()):
            v = int(v)
            if 10 <= v <= 29:
                return v
            return min(max(v, 10), 29) if mode == "clamp" else None
        return 10 if mode == "clamp" else None  # not an integer: low under clamp

    h0, hk, hm, col = np.zeros(DOM.size, np.int64), np.zeros(3, np.int64), np.zeros(4, np.int64), []
    for a, s, k in zip(columns["a"].tolist(), columns["s"].tolist(), columns["k"].tolist()):
        av = age(a)
        sc = {"f": 0, "m": 1}.get(s)
        kc = k - 1 if 1 <= k <= 3 else None
        if kc is not None:
            hk[kc] += 1
        if av is not None:
            col.append(av)
            if sc == 1:
                hm[(av - 10) // 5] += 1
            if sc is not None and kc is not None:
                h0[((av - 10) // 5) * 6 + sc * 3 + kc] += 1
    return [h0, hk, hm, np.array(col, dtype=np.float64)]


def _check(got, want):
    for g, w in zip(got, want):
        if g.dtype == np.float64:
            g, w = np.sort(g), np.sort(w)
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("mode", ["clamp", "drop"])
def test_partitions_equal_one_pass_and_the_reference(mode):
    columns = _typed_columns(np.random.default_rng(5), 3000)
    plan = plan_for(DOM, COLS, PLAN_NEEDS, mode)
    whole = partition_aggregates(columns, plan)
    _check(whole, _reference(columns, mode))
    result = None
    for i in range(0, 3000, 701):  # the Dask engine's map and tree reduce
        part = _map({c: v[i:i + 701] for c, v in columns.items()}, plan)
        result = part if result is None else _reduce(result, part)
    _check(_unwrap(result), whole)


def test_error_mode_reports_every_bad_column_whatever_the_partition():
    columns = _typed_columns(np.random.default_rng(6), 1000)
    plan = plan_for(DOM, COLS, PLAN_NEEDS, "error")
    with pytest.raises(InvalidColumn) as info:
        partition_aggregates(columns, plan)
    assert sorted({e[0] for e in info.value.entries}) == ["a", "k", "s"]
    # missing cells are named apart from other invalid ones: one entry per rule a column breaks
    assert [e[0] for e in info.value.entries if "missing values (NaN/null" in e[2]] == ["a", "s"]
    # the bad cells only in the last partition: the same report
    clean = {"a": np.full(1000, 12), "s": np.array(["f"] * 1000), "k": np.ones(1000, np.int64)}
    parts = [_map(clean, plan), _map(clean, plan), _map(columns, plan)]
    assert parts[0][0] == "ok"
    with pytest.raises(InvalidColumn) as again:
        _unwrap(_reduce(_reduce(parts[0], parts[1]), parts[2]))
    assert again.value.entries == info.value.entries


@pytest.mark.parametrize("dtype", [np.int64, np.uint64, np.float64, str])
def test_typed_columns_clamp(dtype):
    dom = Domain([Ordinal("a", 0, 9)])
    values = np.array([0, 3, 9, 12, 2**40], dtype=dtype)
    plan = plan_for(dom, {"a": "a"}, [("histogram", ("a",))], "clamp")
    assert partition_aggregates({"a": values}, plan)[0].tolist() == [1, 0, 0, 1, 0, 0, 0, 0, 0, 3]
    with pytest.raises(InvalidColumn):
        partition_aggregates({"a": values}, plan_for(dom, {"a": "a"}, [("histogram", ("a",))]))


def test_categorical_integer_labels_do_not_accept_fractions_or_bools():
    dom = Domain([Categorical("k", [1, 2, 3])])
    plan = plan_for(dom, {"k": "k"}, [("histogram", ("k",))], "drop")
    col = np.array([1.0, 2.5, 3.0, np.nan], dtype=np.float64)
    assert partition_aggregates({"k": col}, plan)[0].tolist() == [1, 0, 1]
    obj = np.array([True, 1, "2", " 3 ", "3.5", None], dtype=object)
    assert partition_aggregates({"k": obj}, plan)[0].tolist() == [1, 1, 1]


# -- no data value, row number or count in any message ------------------------------------------------

MARKERS = ["987654", "-987654", "987654.5", "9876540000000000000000", "zzqx", "ZZQX-17", "", " ", "nan", "inf",
           "-inf", "1e400", "None", "0x1f", "4.2e1", "\u0663"]
_cell = st.one_of(st.integers(-20, 70).map(str), st.sampled_from(MARKERS),
                  st.text(alphabet="zqx!?-._ 0123456789", max_size=6))
_label = st.one_of(st.sampled_from(["f", "m"]), st.sampled_from(["zzqx", "", "F", "987654", "m "]))
_row = st.tuples(_cell, _label, st.one_of(st.integers(0, 12).map(str), st.sampled_from(MARKERS)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def _whole_in_range(text: str, low: int, high: int) -> bool:
    """A cell the engine accepts: an integer, possibly written as a float (``42``, ``42.0``, ``4.2e1``)."""
    t = text.strip()
    if "x" in t.lower():
        return False
    try:
        v = float(t)
    except ValueError:
        return False
    return math.isfinite(v) and v == int(v) and low <= v <= high


@pytest.mark.slow
@given(st.lists(_row, min_size=1, max_size=12), st.sampled_from(["error", "clamp", "drop"]))
def test_fuzz_no_message_quotes_the_data(rows, mode):
    folder = Path(tempfile.mkdtemp(prefix="bf-"))
    try:
        try:
            agg = _aggregate(folder, rows, mode=mode)
        except DataError as exc:
            assert mode in (None, "error")
            msg = str(exc).replace(str(folder), "")
            assert "row" not in msg.lower() and "record" not in msg
            for a, s, i in rows:
                for v in (a, s, i):
                    if len(v.strip()) >= 3 and v.strip() not in ("nan", "inf", "-inf", "None"):
                        assert v.strip() not in msg, (v, msg)
            for m in ("987654", "zzqx", "ZZQX", "1e400", "0x1f", "4.2e1", "\u0663"):
                assert m not in msg
            assert not any(ch.isdigit() for ch in msg.replace("[0, 50]", "").replace("[0, 9]", ""))
        else:
            if mode in (None, "error"):  # nothing was invalid
                assert all(_whole_in_range(a, 0, 50) for a, _, _ in rows)
            total = agg[NEEDS_INCOME].sum()
            assert total <= len(rows)
            if mode == "clamp":  # an ordinal attribute under clamp: every row counts once, whatever it holds
                assert total == len(rows) == len(agg[NEEDS_AGE_COL])
    finally:
        shutil.rmtree(folder)


def test_undecodable_cells_are_invalid_cells_not_quoted(tmp_path):
    """A cell that is not UTF-8 is an invalid cell of its column (it was a refusal "not UTF-8" under any rule)."""
    path = _write(tmp_path, [(1, "f", 1)])
    (tmp_path / "people.csv").write_bytes(b"age,sex,income\n1,f,1\n\xff987654,f,1\n3,\xfff,1\n")
    spec = parse_spec(path.read_text(), str(path), base_dir=tmp_path)
    with pytest.raises(DataError) as info:
        LocalEngine(progress=False).aggregate(spec, _needs(spec))
    msg = str(info.value)
    assert "domain.age: column 'age' has values outside the domain or not integers" in msg
    assert "domain.sex: column 'sex' has values that are not among the labels" in msg
    assert "987654" not in msg and "0xff" not in msg and "position" not in msg and "UTF-8" not in msg
    path = _write(tmp_path, [(1, "f", 1)], mode="clamp")
    (tmp_path / "people.csv").write_bytes(b"age,sex,income\n1,f,1\n\xff987654,f,1\n3,\xfff,1\n")
    spec = parse_spec(path.read_text(), str(path), base_dir=tmp_path)
    agg = LocalEngine(progress=False).aggregate(spec, _needs(spec))
    assert _age_f(agg) == {0: 1, 1: 1}  # the undecodable age counts as low; the undecodable sex is dropped
    assert agg[NEEDS_INCOME].tolist() == [0, 3] + [0] * 8


# -- a real Dask cluster, when installed ---------------------------------------------------------------

@pytest.fixture(scope="module")
def dask_cluster():
    for mod in ("dask.dataframe", "distributed", "pandas", "pyarrow"):
        pytest.importorskip(mod, reason=f"the Dask engine test needs {mod} (pip install 'blowfish-privacy[dask]')")
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as c:
        yield c


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("mode", ["error", "clamp", "drop"])
def test_dask_engine_agrees_with_local(tmp_path, dask_cluster, fmt, mode):
    import pandas as pd

    from blowfish_privacy.release import DaskEngine

    path = _write(tmp_path, BAD_ROWS * 3 + ISSUE_ROWS, mode=mode)
    if fmt == "parquet":
        df = pd.read_csv(tmp_path / "people.csv", dtype=str, keep_default_na=False)
        folder = tmp_path / "parts"
        folder.mkdir()
        for k in range(3):  # several partitions; the last one holds the issue's rows
            df.iloc[k * 12:(k + 1) * 12 if k < 2 else None].to_parquet(folder / f"p{k}.parquet", index=False)
        path.write_text(path.read_text().replace('path = "people.csv"', 'path = "parts"'))
    spec = parse_spec(path.read_text(), str(path), base_dir=tmp_path)
    needs = _needs(spec)
    if mode == "error":
        errors = []
        for engine in (LocalEngine(progress=False), DaskEngine(dask_cluster.scheduler_address, progress=False)):
            with pytest.raises(DataError) as info:
                engine.aggregate(spec, needs)
            errors.append(str(info.value))
        assert errors[0] == errors[1] and "row" not in errors[0] and "987654" not in errors[0]
        return
    local = LocalEngine(progress=False).aggregate(spec, needs)
    dask = DaskEngine(dask_cluster.scheduler_address, progress=False).aggregate(spec, needs)
    for need in needs:
        np.testing.assert_array_equal(np.sort(local[need]), np.sort(dask[need]))
        if need[0] == "histogram":
            np.testing.assert_array_equal(local[need], dask[need])
