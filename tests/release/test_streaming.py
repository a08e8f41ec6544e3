"""The local engine streams: bounded batches give the same aggregates as a whole-table read.

Small batches are forced through LocalEngine(batch_rows=..., block_bytes=...)
so that every file here is read in many batches, split inside Parquet row
groups and inside CSV blocks.  The reference is numpy on the same values.
"""

import csv
import gzip
import textwrap

import numpy as np
import pytest

from blowfish_privacy.release import DataError, LocalEngine, parse_spec
from blowfish_privacy.release import engines
from blowfish_privacy.release.runner import _needs

SPEC = """
[dataset]
id = "people"
path = "{path}"
total_epsilon = 3
{invalid}

[domain.age]
type = "ordinal"
low = 0
high = 99

[domain.sex]
type = "categorical"
labels = ["f", "m"]

[domain.income]
type = "ordinal"
low = 0
high = 9

[policies.all]
secrets = "full_domain"

[[release]]
name = "age-sex"
kind = "histogram"
attributes = ["sex", "age"]
policy = "all"
epsilon = 1

[[release]]
name = "age-m"
kind = "histogram"
attributes = ["sex", "age"]
where = {{ sex = "m" }}
policy = "all"
epsilon = 1

[[release]]
name = "income-sum"
kind = "pufferfish_sum"
attributes = ["income"]
epsilon = 1
absolute_error = 2
"""

N = 3000


def _data(n=N, seed=3):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 100, n), rng.choice(["f", "m"], n), rng.integers(0, 10, n)


def _spec(folder, path, invalid=None):
    text = textwrap.dedent(SPEC).format(path=path, invalid=f'invalid = "{invalid}"' if invalid else "")
    (folder / "spec.toml").write_text(text)
    return parse_spec(text, str(folder / "spec.toml"), base_dir=folder)


def _reference(age, sex, income):
    """numpy on the same values: the three needs of SPEC."""
    s = (sex == "m").astype(np.int64)
    both = np.bincount(s * 100 + age, minlength=200)
    only_m = np.bincount((s * 100 + age)[s == 1], minlength=200)
    return both, only_m, income.astype(np.float64)


def _check(agg, spec, ref):
    needs = _needs(spec)
    got = [agg[n] for n in needs]
    hist = [g for n, g in zip(needs, got) if n[0] == "histogram"]
    cols = [g for n, g in zip(needs, got) if n[0] == "column"]
    np.testing.assert_array_equal(hist[0], ref[0])
    np.testing.assert_array_equal(hist[1], ref[1])
    assert hist[0].dtype == np.int64
    np.testing.assert_array_equal(np.sort(cols[0]), np.sort(ref[2]))


def _write_csv(path, age, sex, income, *, bom=False, opener=open):
    with opener(path, "wt", newline="", encoding="utf-8-sig" if bom else "utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["age", "sex", "income"])
        w.writerows(zip(age.tolist(), sex.tolist(), income.tolist()))


def _batches(spec, engine_kw):
    """How many batches the engine's reader gives (to show the test really streams)."""
    plan = engines._plan(spec, _needs(spec))
    cols = engines._plan_columns(plan)
    return sum(1 for _ in engines._Table(spec, cols, int_columns=engines._int_columns(plan), **engine_kw))


SMALL = {"batch_rows": 257, "block_bytes": 1 << 10}


@pytest.mark.parametrize("arrow", [True, False])
@pytest.mark.parametrize("gz", [False, True])
def test_csv_batches_equal_numpy(tmp_path, gz, arrow, monkeypatch):
    if arrow:
        pytest.importorskip("pyarrow")
    else:
        monkeypatch.setattr(engines, "_have_pyarrow", lambda: False)
    age, sex, income = _data()
    name = "people.csv.gz" if gz else "people.csv"
    _write_csv(tmp_path / name, age, sex, income, opener=gzip.open if gz else open)
    spec = _spec(tmp_path, name)
    assert _batches(spec, SMALL) > 5
    _check(LocalEngine(progress=False, **SMALL).aggregate(spec, _needs(spec)), spec, _reference(age, sex, income))
    # and with the default (large) batches: one batch
    _check(LocalEngine(progress=False).aggregate(spec, _needs(spec)), spec, _reference(age, sex, income))


def test_multi_member_gzip(tmp_path):
    age, sex, income = _data()
    _write_csv(tmp_path / "a.csv", age[:1000], sex[:1000], income[:1000])
    head = (tmp_path / "a.csv").read_bytes()
    tail = "".join(f"{a},{s},{i}\n" for a, s, i in zip(age[1000:], sex[1000:], income[1000:])).encode()
    (tmp_path / "people.csv.gz").write_bytes(gzip.compress(head) + gzip.compress(tail))
    spec = _spec(tmp_path, "people.csv.gz")
    _check(LocalEngine(progress=False, **SMALL).aggregate(spec, _needs(spec)), spec, _reference(age, sex, income))


def test_bom_csv_is_read(tmp_path):
    age, sex, income = _data(200)
    _write_csv(tmp_path / "people.csv", age, sex, income, bom=True)
    spec = _spec(tmp_path, "people.csv")
    _check(LocalEngine(progress=False, **SMALL).aggregate(spec, _needs(spec)), spec, _reference(age, sex, income))


def test_text_cells_fall_back_and_agree(tmp_path):
    """Cells pyarrow will not read as int64 ('7.0', ' 5 ', quoted) are read as the stdlib reader reads them."""
    age, sex, income = _data(600)
    rows = [[f"{a}.0" if k % 7 == 0 else f" {a} " if k % 5 == 0 else str(a), s, str(i)]
            for k, (a, s, i) in enumerate(zip(age.tolist(), sex.tolist(), income.tolist()))]
    with open(tmp_path / "people.csv", "w", newline="") as fh:
        w = csv.writer(fh, quoting=csv.QUOTE_NONNUMERIC)
        w.writerow(["age", "sex", "income"])
        w.writerows(rows)
    spec = _spec(tmp_path, "people.csv")
    _check(LocalEngine(progress=False, **SMALL).aggregate(spec, _needs(spec)), spec, _reference(age, sex, income))


def _parquet(path, age, sex, income, row_group_size):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table({"age": age, "sex": sex, "income": income, "other": np.arange(len(age), dtype=np.float64)})
    pq.write_table(table, path, row_group_size=row_group_size)


def test_parquet_batches_split_inside_row_groups(tmp_path):
    age, sex, income = _data()
    _parquet(tmp_path / "people.parquet", age, sex, income, row_group_size=1000)  # 3 row groups of 1000
    spec = _spec(tmp_path, "people.parquet")
    kw = {"batch_rows": 300}  # 300 does not divide 1000: batches end inside row groups
    assert _batches(spec, kw) == 10  # 300-row batches, across and inside row groups
    _check(LocalEngine(progress=False, **kw).aggregate(spec, _needs(spec)), spec, _reference(age, sex, income))


def test_parquet_folder_of_several_files(tmp_path):
    age, sex, income = _data()
    folder = tmp_path / "parts"
    folder.mkdir()
    cuts = [0, 1, 900, 2100, N]  # a one-row file among them
    for k in range(len(cuts) - 1):
        a, b = cuts[k], cuts[k + 1]
        _parquet(folder / f"part-{k}.parquet", age[a:b], sex[a:b], income[a:b], row_group_size=250)
    (folder / "_SUCCESS").write_text("")  # metadata files are skipped, as pyarrow skips them
    spec = _spec(tmp_path, "parts")
    _check(LocalEngine(progress=False, batch_rows=111).aggregate(spec, _needs(spec)), spec,
           _reference(age, sex, income))


def test_parquet_hive_partition_key(tmp_path):
    age, sex, income = _data()
    for s in ("f", "m"):
        (tmp_path / "parts" / f"sex={s}").mkdir(parents=True)
        keep = sex == s
        pa = pytest.importorskip("pyarrow")
        pq = pytest.importorskip("pyarrow.parquet")
        pq.write_table(pa.table({"age": age[keep], "income": income[keep]}), tmp_path / "parts" / f"sex={s}" / "p.parquet",
                       row_group_size=400)
    spec = _spec(tmp_path, "parts")
    _check(LocalEngine(progress=False, batch_rows=333).aggregate(spec, _needs(spec)), spec,
           _reference(age, sex, income))


def test_header_only_csv_gives_zero_histograms(tmp_path):
    (tmp_path / "people.csv").write_text("age,sex,income\n")
    spec = _spec(tmp_path, "people.csv")
    for engine in (LocalEngine(progress=False), LocalEngine(progress=False, **SMALL)):
        agg = engine.aggregate(spec, _needs(spec))
        for need in _needs(spec):
            if need[0] == "histogram":
                assert agg[need].dtype == np.int64 and agg[need].shape == (200,) and not agg[need].any()
            else:
                assert agg[need].shape == (0,)


def _bad_rows_at(position, rows=N, batch=257):
    """Row texts with one bad age (out of the domain) in batch ``position`` (0-based)."""
    age, sex, income = _data(rows)
    text = [[str(a), s, str(i)] for a, s, i in zip(age.tolist(), sex.tolist(), income.tolist())]
    k = position * batch + 5
    text[k][0] = "150"
    return text, k


@pytest.mark.parametrize("arrow", [True, False])
@pytest.mark.parametrize("mode", [None, "clamp", "drop"])
def test_invalid_row_in_any_batch_gives_the_same_result(tmp_path, mode, arrow, monkeypatch):
    if not arrow:
        monkeypatch.setattr(engines, "_have_pyarrow", lambda: False)
    results = []
    for position in (0, 2, 9):
        text, _ = _bad_rows_at(position)
        folder = tmp_path / f"p{position}"
        folder.mkdir()
        # the bad row moved to the front: the same multiset of rows, the bad one in batch `position` or 0
        with open(folder / "people.csv", "w", newline="") as fh:
            csv.writer(fh).writerows([["age", "sex", "income"]] + text)
        spec = _spec(folder, "people.csv", mode)
        engine = LocalEngine(progress=False, batch_rows=257, block_bytes=2 << 10)
        if mode is None:
            with pytest.raises(DataError) as info:
                engine.aggregate(spec, _needs(spec))
            results.append(str(info.value).replace(str(folder), "F"))
            assert "150" not in results[-1] and "row" not in results[-1]
        else:
            agg = engine.aggregate(spec, _needs(spec))
            results.append([np.sort(agg[n]) for n in _needs(spec)])
    if mode is None:
        assert results[0] == results[1] == results[2]
    else:
        # the three files hold the same rows but for where the bad cell is: compare each to its own numpy reference
        for position, res in zip((0, 2, 9), results):
            text, k = _bad_rows_at(position)
            age = np.array([int(r[0]) for r in text])
            sex = np.array([r[1] for r in text])
            income = np.array([int(r[2]) for r in text])
            if mode == "clamp":
                age = np.minimum(age, 99)
            else:
                keep = np.arange(len(age)) != k
                age, sex = age[keep], sex[keep]
                # a dropped row is dropped from the needs that read the bad column only
            ref = _reference(age, sex, income if mode == "clamp" else income)
            np.testing.assert_array_equal(res[0], np.sort(ref[0]))
            np.testing.assert_array_equal(res[1], np.sort(ref[1]))
            np.testing.assert_array_equal(res[2], np.sort(ref[2]))


def test_aggregate_holds_no_table(tmp_path):
    """Peak traced memory while aggregating a CSV stays near one batch, not the table (tracemalloc)."""
    import tracemalloc

    pytest.importorskip("pyarrow")
    age, sex, income = _data(200_000)
    _write_csv(tmp_path / "people.csv", age, sex, income)
    text = textwrap.dedent(SPEC).format(path="people.csv", invalid="").split('[[release]]\nname = "income-sum"')[0]
    (tmp_path / "spec.toml").write_text(text)
    spec = parse_spec(text, str(tmp_path / "spec.toml"), base_dir=tmp_path)
    engine = LocalEngine(progress=False, batch_rows=4096, block_bytes=32 << 10)
    tracemalloc.start()
    try:
        agg = engine.aggregate(spec, _needs(spec))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sum(v.sum() for v in agg.values()) > 0
    whole = 200_000 * 8 * 2  # the two int64 columns of the whole table
    assert peak < whole / 4, peak
