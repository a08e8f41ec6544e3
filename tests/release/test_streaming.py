"""The local engine streams: bounded batches give the same aggregates as a whole-table read.

Small batches are forced through LocalEngine(batch_rows=..., block_bytes=...)
so that every file here is read in many batches, split inside Parquet row
groups and inside CSV blocks.  The reference is numpy on the same values.
"""

import csv
import gzip

import numpy as np
import pytest
from release_specs import (AGE, FULL_DOMAIN, INCOME, NEAR, SEX, people_dataset, protected_by, release,
                           spec_toml, write_csv)

NEAR_2 = {**NEAR, "theta": 2}

from blowfish_privacy.release import DataError, LocalEngine, parse_spec
from blowfish_privacy import _aggregate
from blowfish_privacy import _arrow_columns
from blowfish_privacy.release import _csv_feed, _reading
from blowfish_privacy.release.runner import _needs

#: Three needs: a histogram, the same over a selection, and a column (pufferfish_sum).
RELEASES = [release("age-sex", "histogram", ["sex", "age"], 1, "all"),
            release("age-m", "histogram", ["sex", "age"], 1, "all", where={"sex": "m"}),
            release("income-sum", "pufferfish_sum", ["income"], 1, absolute_error=2)]


#: Every pair of (sex, age) values, and incomes within 2: what the histograms and the Pufferfish sum
#: (absolute error 2: incomes closer than 8) all protect.
POLICIES = protected_by(all=(FULL_DOMAIN, ["sex", "age"]), income_near=(NEAR_2, ["income"]))


def _spec_text(path, invalid=None, releases=RELEASES):
    dataset = people_dataset(path, 3, protect="protected", **({"invalid": invalid} if invalid else {}))
    return spec_toml(dataset, {"age": AGE, "sex": SEX, "income": INCOME}, POLICIES, releases)


N = 3000


def _data(n=N, seed=3):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 100, n), rng.choice(["f", "m"], n), rng.integers(0, 10, n)


def _spec(folder, path, invalid=None):
    text = _spec_text(path, invalid)
    (folder / "spec.toml").write_text(text)
    return parse_spec(text, str(folder / "spec.toml"), base_dir=folder)


def _reference(age, sex, income):
    """numpy on the same values: the three needs of RELEASES."""
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
    write_csv(path, {"age": age, "sex": sex, "income": income}, opener=opener,
              encoding="utf-8-sig" if bom else "utf-8")


def _batches(spec, engine_kw):
    """How many batches the engine's reader gives (to show the test really streams)."""
    plan = _aggregate.spec_plan(spec, _needs(spec))
    cols = _aggregate.plan_columns(plan)
    return sum(1 for _ in _reading.Table(spec, cols, int_columns=_aggregate.int_columns(plan), **engine_kw))


SMALL = {"batch_rows": 257, "block_bytes": 1 << 10}


@pytest.mark.parametrize("arrow", [True, False])
@pytest.mark.parametrize("gz", [False, True])
def test_csv_batches_equal_numpy(tmp_path, gz, arrow, monkeypatch):
    if arrow:
        pytest.importorskip("pyarrow")
    else:
        monkeypatch.setattr(_reading, "have_pyarrow", lambda: False)
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
@pytest.mark.parametrize("mode", ["error", "clamp", "drop"])
def test_invalid_row_in_any_batch_gives_the_same_result(tmp_path, mode, arrow, monkeypatch):
    if not arrow:
        monkeypatch.setattr(_reading, "have_pyarrow", lambda: False)
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
        if mode == "error":
            with pytest.raises(DataError) as info:
                engine.aggregate(spec, _needs(spec))
            results.append(str(info.value).replace(str(folder), "F"))
            assert "150" not in results[-1] and "row" not in results[-1]
        else:
            agg = engine.aggregate(spec, _needs(spec))
            results.append([np.sort(agg[n]) for n in _needs(spec)])
    if mode == "error":
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


@pytest.mark.slow
def test_aggregate_holds_no_table(tmp_path):
    """Peak traced memory while aggregating a CSV stays near one batch, not the table (tracemalloc).

    The text pyarrow's I/O thread reads ahead (up to 32 blocks) is read by
    the reader's feed (Python bytes), so tracemalloc sees it too.
    """
    import tracemalloc

    pytest.importorskip("pyarrow")
    rows = 400_000
    age, sex, income = _data(rows)
    _write_csv(tmp_path / "people.csv", age, sex, income)
    text = _spec_text("people.csv", releases=RELEASES[:2])
    (tmp_path / "spec.toml").write_text(text)
    spec = parse_spec(text, str(tmp_path / "spec.toml"), base_dir=tmp_path)
    engine = LocalEngine(progress=False, batch_rows=4096, block_bytes=32 << 10)
    engine.aggregate(spec, _needs(spec))  # once before tracing: what the first run imports is not the reader's
    tracemalloc.start()
    try:
        agg = engine.aggregate(spec, _needs(spec))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sum(v.sum() for v in agg.values()) > 0
    whole = rows * 8 * 2  # the two int64 columns of the whole table
    read_ahead = 40 * (32 << 10)  # 32 blocks of the engine's block_bytes, and a few more
    assert peak < whole / 8 + read_ahead, peak


@pytest.mark.parametrize("position", [1, 4, 11])
def test_fallback_after_some_batches_counts_every_row_once(tmp_path, position):
    """A cell pyarrow will not read as int64 ('7.0') after some blocks were folded: the file is read again
    from its start with the stdlib reader, and what was folded before is discarded (it used to be counted twice)."""
    pytest.importorskip("pyarrow")
    age, sex, income = _data()
    rows = [[str(a), s, str(i)] for a, s, i in zip(age.tolist(), sex.tolist(), income.tolist())]
    k = position * 250 + 7  # about 10 bytes a row, 1 KiB blocks: inside block `position` or near it
    rows[k][0] = f"{age[k]}.0"
    with open(tmp_path / "people.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([["age", "sex", "income"]] + rows)
    spec = _spec(tmp_path, "people.csv")
    items = list(_reading.Table(spec, _aggregate.plan_columns(_aggregate.spec_plan(spec, _needs(spec))),
                                int_columns={"age", "income"}, **SMALL))
    assert sum(cols is _aggregate.RESTART for cols, _ in items) == 1  # pyarrow gave batches, then fell back
    _check(LocalEngine(progress=False, **SMALL).aggregate(spec, _needs(spec)), spec, _reference(age, sex, income))
    got = _reading.read_table(spec, ["age", "income"])
    assert len(got["age"]) == N


def test_fast_index_leaves_the_columns_unchanged():
    """The fast path adds in place into arrays of its own, never into the data's (read-only pyarrow views)."""
    from blowfish_privacy import Categorical, Domain, Ordinal

    rng = np.random.default_rng(5)
    domains = [Domain([Ordinal("a", 0, 9), Ordinal("b", 0, 99)]), Domain([Ordinal("a", 2, 9), Ordinal("b", 0, 99)]),
               Domain([Ordinal("a", 0, 9), Ordinal("b", 5, 99, bin_width=5), Categorical("c", [0, 1, 2])]),
               Domain([Ordinal("b", 0, 99)])]
    for dom in domains:
        data = {}
        for attr in dom.attributes:
            low, high = (attr.low, attr.high) if isinstance(attr, Ordinal) else (0, 2)
            arr = rng.integers(low, high + 1, 1000).astype(np.int32 if attr.name == "b" else np.int64)
            arr.flags.writeable = False  # as pyarrow's zero-copy columns
            data[attr.name] = arr
        before = {k: v.copy() for k, v in data.items()}
        fast = _aggregate.fast_index(dom, data)
        np.testing.assert_array_equal(fast, dom.encode(data))
        for k in data:
            np.testing.assert_array_equal(data[k], before[k])


def test_prefetch_keeps_order_raises_and_stops():
    assert list(_reading.prefetch(iter(range(100)), depth=2)) == list(range(100))

    def failing():
        yield 1
        raise DataError("boom")

    with pytest.raises(DataError, match="boom"):
        list(_reading.prefetch(failing()))
    closed = []

    def endless():
        try:
            k = 0
            while True:
                yield k
                k += 1
        finally:
            closed.append(True)

    it = _reading.prefetch(endless(), depth=2)
    assert [next(it) for _ in range(5)] == [0, 1, 2, 3, 4]
    it.close()  # the consumer stops early: the producer stops and closes its generator
    assert closed == [True]


_TWO_COLUMNS = spec_toml({"id": "big", "path": "PATH", "total_epsilon": 1}, {"age": AGE, "income": INCOME},
                         {"all": FULL_DOMAIN}, [release("h", "histogram", ["age", "income"], 1, "all")])

_ARROW_PEAK = """
import sys
from pathlib import Path
import pyarrow as pa
from blowfish_privacy.release import LocalEngine, parse_spec
folder = Path(sys.argv[1])
spec = parse_spec((folder / "spec.toml").read_text(), str(folder / "spec.toml"), base_dir=folder)
need = ("histogram", ("age", "income"))
agg = LocalEngine(progress=False, batch_rows=1 << 14, block_bytes=1 << 16).aggregate(spec, [need])[need]
print(int(agg.sum()), pa.default_memory_pool().max_memory())
"""


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_arrow_memory_is_bounded_by_the_batch_not_the_file(tmp_path, fmt):
    """pyarrow's own peak allocation (its memory pool, in a fresh process) is bounded by the batch, not the file.

    Parquet: not pre-buffered (pyarrow's default pre-buffers every column
    chunk of the file: a peak of the file's size).  CSV: pyarrow's I/O
    thread reads up to 32 blocks ahead, so the peak is a few dozen blocks,
    and the default block is small enough for that to be a few dozen MiB.
    """
    import subprocess
    import sys

    pa = pytest.importorskip("pyarrow")
    n = 4_000_000 if fmt == "csv" else 2_000_000
    rng = np.random.default_rng(7)
    table = pa.table({"age": rng.integers(0, 100, n), "income": rng.integers(0, 10, n)})
    path = tmp_path / f"people.{fmt}"
    if fmt == "csv":
        import pyarrow.csv as pcsv

        pcsv.write_csv(table, path)
    else:
        import pyarrow.parquet as pq

        pq.write_table(table, path, row_group_size=1 << 17, use_dictionary=False, compression="none")
    (tmp_path / "spec.toml").write_text(_TWO_COLUMNS.replace("PATH", path.name))
    proc = subprocess.run([sys.executable, "-c", _ARROW_PEAK, str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows, peak = map(int, proc.stdout.split()[-2:])
    assert rows == n
    size = path.stat().st_size
    if fmt == "csv":
        block = 1 << 16  # _ARROW_PEAK's block_bytes
        assert size > 256 * block
        assert peak < 80 * block, (peak, size)
        assert 32 * _csv_feed.CSV_BLOCK_BYTES <= 64 << 20
    else:
        assert size > 16 << 20
        assert peak < size / 4, (peak, size)


def test_to_numpy_views_equal_pyarrow():
    """The numpy view of a pyarrow column (numeric, no nulls) equals to_numpy, also for a sliced array."""
    pa = pytest.importorskip("pyarrow")
    for typ in (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint64(), pa.float32(), pa.float64()):
        arr = pa.array(list(range(50)), type=typ)
        for part in (arr, arr.slice(7, 20)):
            got = _arrow_columns.to_numpy(part)
            np.testing.assert_array_equal(got, part.to_numpy(zero_copy_only=False))
            assert got.dtype == part.to_numpy(zero_copy_only=False).dtype
    with_null = pa.array([1, None, 3])
    got = _arrow_columns.to_numpy(with_null)  # exact ints and None, not floats (see test_cell_independence)
    assert got.dtype == object and got.tolist() == [1, None, 3] and type(got[0]) is int
    np.testing.assert_array_equal(_arrow_columns.to_numpy(pa.array(["a", "b"]).dictionary_encode()), ["a", "b"])


def test_hexadecimal_cells_are_read_as_the_text_path_reads_them(tmp_path):
    """pyarrow's int64 parser takes '0x1f' as 31; the text path refuses it: so does the local engine."""
    pytest.importorskip("pyarrow")
    (tmp_path / "people.csv").write_text("age,sex,income\n3,f,1\n0x1f,m,2\n4,m,0X3\n")
    spec = _spec(tmp_path, "people.csv", "error")
    with pytest.raises(DataError, match="domain.age"):
        LocalEngine(progress=False).aggregate(spec, _needs(spec))
    spec = _spec(tmp_path, "people.csv", "drop")
    agg = LocalEngine(progress=False).aggregate(spec, _needs(spec))
    needs = _needs(spec)
    assert int(agg[needs[0]].sum()) == 2  # (sex, age): the row with age 0x1f dropped
    assert sorted(agg[needs[2]].tolist()) == [1.0, 2.0]  # income: the row with 0X3 dropped
