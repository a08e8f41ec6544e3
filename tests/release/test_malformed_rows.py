"""Malformed CSV rows (more or fewer fields than the header) count once, every cell of them invalid, in either engine.

A malformed row is a row whose every cell is invalid: it counts once, each
cell handled by its attribute's rule (ordinal "clamp": the attribute's
``low``; "drop" and categorical attributes: the row leaves the aggregates
that read the attribute), so under "clamp" the row count of an aggregate
of ordinal attributes is the number of rows whatever they hold.  None of
its cells is read.  It is refused under "error" with a message that quotes
no data and no row number; the strictest rule among the attributes a run
reads decides.  The local engine is run with its pyarrow reader (which
hands a file with a malformed row to the stdlib reader, discarding what it
folded), with its stdlib reader alone and in small batches; the Dask
engine in small blocks of whole lines, on a two-process cluster.

The spec is a plain object with the fields the engines read (``path``,
``source``, ``domain``, ``columns``, ``invalid``), so that these tests
depend on the engines only.
"""

import gzip
import math
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from blowfish_privacy import Categorical, Domain, Ordinal
from blowfish_privacy.release import DataError, LocalEngine
from blowfish_privacy import _aggregate
from blowfish_privacy.release import _reading, sources
from blowfish_privacy.release.aggregation import AggregateMap

DOM = Domain([Ordinal("age", 0, 50), Categorical("sex", ["f", "m"]), Ordinal("income", 0, 9)])
HEADER = "age,sex,income"
#: What the run reads: a histogram, a selection, a column (pufferfish_sum) and a histogram of another column.
NEEDS = [("histogram", ("sex", "age")), ("histogram", ("age",), (("sex", "m"),)), ("column", ("income",)),
         ("histogram", ("income",))]
#: Cells of the malformed rows: none may appear in a message.
MARKS = ("987654", "424242", "zqxv")
#: Malformed rows: long (the issue's ``47,m,7,9``), short, one field, and each with a marker.
MALFORMED = ["47,m,7,9", "47,m", "47", "987654,m,1,424242", "30,zqxv", "424242", "31,f,2,", "1,m,1,1,1,1"]


def _spec(path: Path, invalid) -> SimpleNamespace:
    modes = {n: invalid for n in DOM.names} if isinstance(invalid, str) else dict(invalid)
    return SimpleNamespace(path=str(path.parent / "spec.toml"), source={"path": str(path), "format": "csv"},
                           domain=DOM, columns={n: n for n in DOM.names}, invalid=modes)


def _good_rows(n: int, seed: int, dirty: bool) -> list:
    """Well-formed rows; some values outside the domain (integers), and with ``dirty`` cells that are not."""
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(n):
        age, sex, income = str(int(rng.integers(-5, 60))), str(rng.choice(["f", "m", "x"], p=[0.45, 0.5, 0.05])), \
            str(int(rng.integers(0, 12)))
        if dirty and k % 11 == 3:
            age = ["7.5", "", "abc", "12.0"][k % 4]
        rows.append(",".join((age, sex, income)))
    return rows


def _with_malformed(good: list, positions) -> list:
    rows = list(good)
    for j, p in enumerate(sorted(positions, reverse=True)):
        rows.insert(p, MALFORMED[j % len(MALFORMED)])
    return rows


def _write(folder: Path, rows, *, gz=False, newline_at_end=True) -> Path:
    text = "\n".join([HEADER] + rows) + ("\n" if newline_at_end else "")
    path = folder / ("people.csv.gz" if gz else "people.csv")
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    return path


def _reference(rows: list, mode: dict) -> list:
    """The aggregates of NEEDS over every row (malformed ones too), row by row, under per-attribute modes.

    A cell that is not an integer, and every cell of a malformed row, is invalid: ``low`` (0) under
    "clamp", dropped under "drop"; an unknown label (every sex of a malformed row) is dropped.
    """
    def ordinal(text, high, m):
        try:
            v = float(text)
        except (ValueError, TypeError):
            v = None
        if v is None or not math.isfinite(v) or not v.is_integer():
            return 0 if m == "clamp" else None  # not an integer: low under "clamp", dropped under "drop"
        v = int(v)
        if 0 <= v <= high:
            return v
        return min(max(v, 0), high) if m == "clamp" else None

    both, only_m, col, inc = np.zeros(DOM.shape[0] * 2, np.int64), np.zeros(51, np.int64), [], np.zeros(10, np.int64)
    for row in rows:
        cells = row.split(",")
        a, s, i = cells if len(cells) == 3 else (None, None, None)  # malformed: every cell invalid
        av, sc, iv = ordinal(a, 50, mode["age"]), {"f": 0, "m": 1}.get(s), ordinal(i, 9, mode["income"])
        if av is not None and sc is not None:
            both[sc * 51 + av] += 1
            if sc == 1:
                only_m[av] += 1
        if iv is not None:
            col.append(float(iv))
            inc[iv] += 1
    return [both, only_m, np.array(col), inc]


def _same(got: dict, want: list) -> None:
    for need, w in zip(NEEDS, want):
        g = got[need]
        if need[0] == "column":
            np.testing.assert_array_equal(np.sort(g), np.sort(w))
        else:
            assert g.dtype == np.int64
            np.testing.assert_array_equal(g, w)


def _check_message(msg: str, folder: Path) -> None:
    text = msg.replace(str(folder), "F")
    assert "dataset: the data hold malformed rows (more or fewer fields than the header line)" in text, text
    for mark in MARKS + ("47,m", "7,9"):
        assert mark not in text, (mark, text)
    assert not re.search(r"\brow\b|\brecord|line \d|\bat \d", text), text
    assert not any(ch.isdigit() for ch in text.replace("[0, 50]", "").replace("[0, 9]", "")), text


# -- engines -------------------------------------------------------------------------------------------------------

def _local(kind: str, monkeypatch):
    if kind == "stdlib":
        monkeypatch.setattr(_reading, "have_pyarrow", lambda: False)
        return LocalEngine(progress=False)
    pytest.importorskip("pyarrow")
    if kind == "small":
        return LocalEngine(progress=False, batch_rows=7, block_bytes=64)
    return LocalEngine(progress=False)


LOCAL = ["arrow", "stdlib", "small"]
MODES = ["error", "clamp", "drop"]


@pytest.mark.parametrize("kind", LOCAL)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dirty", [False, True])
def test_local_engine_counts_a_malformed_row_once_with_every_cell_invalid(tmp_path, monkeypatch, kind, mode, dirty):
    good = _good_rows(120, seed=1, dirty=dirty)
    rows = _with_malformed(good, [0, 1, 17, 60, 61, 120])
    path = _write(tmp_path, rows)
    engine = _local(kind, monkeypatch)
    if mode == "error":
        with pytest.raises(DataError) as info:
            engine.aggregate(_spec(path, mode), NEEDS)
        _check_message(str(info.value), tmp_path)
        return
    got = engine.aggregate(_spec(path, mode), NEEDS)
    _same(got, _reference(rows, dict.fromkeys(DOM.names, mode)))
    if mode == "clamp":  # every row counts in the aggregates of ordinal attributes alone
        assert got[NEEDS[3]].sum() == len(rows) == len(got[NEEDS[2]])


@pytest.mark.parametrize("kind", LOCAL)
@pytest.mark.parametrize("row", ["47,m,7,9", "47,m", "47"])
def test_the_issue_rows_under_clamp_and_drop(tmp_path, monkeypatch, kind, row):
    """``47,m,7,9`` under a 3-column header was counted with its cells; now none of its cells is read."""
    good = ["30,f,1", "31,m,2"]
    path = _write(tmp_path, good + [row])
    engine = _local(kind, monkeypatch)
    for mode in ("clamp", "drop"):
        got = engine.aggregate(_spec(path, mode), NEEDS)
        # sex is categorical: the malformed row leaves the aggregates that read it
        assert got[NEEDS[0]].sum() == 2 and got[NEEDS[0]][51 + 47] == 0
        # income alone: the row counts once as income 0 (low) under "clamp", and is dropped under "drop"
        assert got[NEEDS[3]].tolist() == ([1, 1, 1] if mode == "clamp" else [0, 1, 1]) + [0] * 7
        _same(got, _reference(good + [row], dict.fromkeys(DOM.names, mode)))


@pytest.mark.parametrize("kind", LOCAL)
def test_the_message_does_not_depend_on_where_or_what_the_malformed_rows_are(tmp_path, monkeypatch, kind):
    engine = _local(kind, monkeypatch)
    good = _good_rows(200, seed=2, dirty=False)
    messages = set()
    for k, positions in enumerate(([0], [199], [200], [3, 150], [100] * 5)):
        folder = tmp_path / f"f{k}"
        folder.mkdir()
        path = _write(folder, _with_malformed(good, positions), newline_at_end=k % 2 == 0)
        with pytest.raises(DataError) as info:
            engine.aggregate(_spec(path, "error"), NEEDS)
        _check_message(str(info.value), folder)
        messages.add(str(info.value).replace(str(folder), "F"))
    assert len(messages) == 1


@pytest.mark.parametrize("kind", LOCAL)
def test_malformed_and_invalid_values_are_reported_together(tmp_path, monkeypatch, kind):
    """Under "error", the invalid columns are reported beside the malformed rows, wherever each is."""
    path = _write(tmp_path, ["30,f,1", "987654,m,2", "31,m"])
    with pytest.raises(DataError) as info:
        _local(kind, monkeypatch).aggregate(_spec(path, "error"), NEEDS)
    msg = str(info.value)
    _check_message(msg, tmp_path)
    assert "domain.age: column 'age' has values outside the domain or not integers" in msg


def test_the_strictest_rule_among_the_attributes_read_decides(tmp_path):
    """"error" on one attribute the run reads refuses malformed rows; an attribute it does not read does not."""
    good = _good_rows(60, seed=3, dirty=False)
    rows = _with_malformed(good, [5, 30])
    path = _write(tmp_path, rows)
    engine = LocalEngine(progress=False)
    mixed = {"age": "clamp", "sex": "drop", "income": "error"}
    with pytest.raises(DataError) as info:
        engine.aggregate(_spec(path, mixed), NEEDS)
    _check_message(str(info.value), tmp_path)
    # the run reads age and sex only: income's "error" does not apply; the malformed rows' sex is invalid
    needs = NEEDS[:2]
    got = engine.aggregate(_spec(path, mixed), needs)
    want = _reference(rows, mixed)
    np.testing.assert_array_equal(got[needs[0]], want[0])
    np.testing.assert_array_equal(got[needs[1]], want[1])
    # a selection's attribute is read too: "error" on sex refuses, though the histogram is of age alone
    with pytest.raises(DataError):
        engine.aggregate(_spec(path, {"age": "clamp", "sex": "error", "income": "drop"}), [NEEDS[1]])
    got = engine.aggregate(_spec(path, {"age": "clamp", "sex": "error", "income": "drop"}), [NEEDS[3]])
    assert got[NEEDS[3]].sum() == sum(0 <= int(r.split(",")[2]) <= 9 for r in good)


def test_malformed_mode_of_a_plan():
    plan = _aggregate.plan_for(DOM, {n: n for n in DOM.names}, NEEDS, {"age": "clamp", "sex": "drop", "income": "drop"})
    assert _aggregate.malformed_mode(plan) == "count"
    plan = _aggregate.plan_for(DOM, {n: n for n in DOM.names}, [NEEDS[1]], {"age": "clamp", "sex": "error"})
    assert _aggregate.malformed_mode(plan) == "error"  # sex is read by the selection only
    plan = _aggregate.plan_for(DOM, {n: n for n in DOM.names}, NEEDS, "clamp")
    assert _aggregate.malformed_mode(plan) == "count"  # counted once, each cell by its attribute's rule


@pytest.mark.parametrize("kind", LOCAL)
@pytest.mark.parametrize("mode", MODES)
def test_a_non_integer_ordinal_value_is_low_under_clamp_and_refused_under_error(tmp_path, monkeypatch, kind, mode):
    good = ["30,f,1", "7.5,m,2", "abc,f,3", "1e400,m,4", "99,m,5", "12.0,f,6"]
    path = _write(tmp_path, good)
    engine = _local(kind, monkeypatch)
    if mode == "error":
        with pytest.raises(DataError) as info:
            engine.aggregate(_spec(path, mode), NEEDS)
        msg = str(info.value).replace(str(tmp_path), "F")
        assert "domain.age: column 'age' has values outside the domain or not integers" in msg
        for leak in ("7.5", "abc", "1e400", "99"):
            assert leak not in msg
        return
    got = engine.aggregate(_spec(path, mode), NEEDS)
    ages = {a: int(c) for a, c in enumerate(got[NEEDS[0]].reshape(2, 51).sum(axis=0)) if c}
    # under "clamp" 7.5, abc and 1e400 (infinite) count as low (0), 99 is clamped to 50
    assert ages == ({30: 1, 12: 1, 50: 1, 0: 3} if mode == "clamp" else {30: 1, 12: 1})
    _same(got, _reference(good, dict.fromkeys(DOM.names, mode)))


def test_pyarrow_hands_a_malformed_file_to_the_stdlib_reader_once(tmp_path):
    """Batches pyarrow gave before it met the malformed row are discarded (RESTART), not counted twice."""
    pytest.importorskip("pyarrow")
    good = _good_rows(400, seed=5, dirty=False)
    rows = _with_malformed(good, [390])
    path = _write(tmp_path, rows)
    spec = _spec(path, "drop")
    plan = _aggregate.spec_plan(spec, NEEDS)
    items = list(_reading.Table(spec, _aggregate.plan_columns(plan), int_columns=_aggregate.int_columns(plan),
                                 batch_rows=16, block_bytes=256))
    assert sum(cols is _aggregate.RESTART for cols, _ in items) == 1
    after = [k for k, (cols, _) in enumerate(items) if cols is _aggregate.RESTART][0] + 1
    batches = [cols for cols, _ in items[after:]]  # what pyarrow gave before is discarded
    assert sum(len(cols["age"]) for cols in batches) == len(rows)  # every row, the malformed one too
    masks = [cols[_aggregate.MALFORMED] for cols in batches if _aggregate.MALFORMED in cols]
    assert len(masks) == 1 and masks[0].sum() == 1
    for mode in ("drop", "clamp"):
        spec = _spec(path, mode)
        _same(LocalEngine(progress=False, batch_rows=16, block_bytes=256).aggregate(spec, NEEDS),
              _reference(rows, dict.fromkeys(DOM.names, mode)))


@pytest.mark.parametrize("kind", LOCAL)
def test_a_malformed_row_that_is_not_utf8_prints_nothing(tmp_path, monkeypatch, capfd, kind):
    """Nothing of the row reaches stderr (pyarrow's row handler would print its undecodable bytes).

    The row is malformed, its text not UTF-8: it counts once with every cell invalid (it was a refusal
    "not UTF-8" under every rule), and only "error" refuses it, as a malformed row.
    """
    path = tmp_path / "people.csv"
    path.write_bytes(HEADER.encode() + b"\n30,f,1\n\xc1\xc2987654,m\n31,m,2\n")
    rows = ["30,f,1", "x", "31,m,2"]  # "x": a malformed row
    for mode in MODES:
        if mode == "error":
            with pytest.raises(DataError) as info:
                _local(kind, monkeypatch).aggregate(_spec(path, mode), NEEDS)
            _check_message(str(info.value), tmp_path)
            assert "0xc1" not in str(info.value) and "position" not in str(info.value)
            continue
        got = _local(kind, monkeypatch).aggregate(_spec(path, mode), NEEDS)
        _same(got, _reference(rows, dict.fromkeys(DOM.names, mode)))
    out, err = capfd.readouterr()
    assert "987654" not in out + err and "0xc1" not in out + err and "Exception ignored" not in err


def test_read_table_refuses_or_drops_malformed_rows(tmp_path):
    path = _write(tmp_path, ["30,f,1", "987654,m,1,424242", "31,m"])
    spec = _spec(path, "drop")
    assert _reading.read_table(spec, ["age"], malformed="drop")["age"].tolist() == ["30"]
    with pytest.raises(DataError) as info:
        _reading.read_table(spec, ["age"])
    msg = str(info.value)
    assert "malformed rows" in msg and "987654" not in msg and "424242" not in msg


# -- the Dask engine: the same rows, the same counts, the same refusal -------------------------------------------

@pytest.fixture(scope="module")
def dask_cluster():
    for mod in ("dask.dataframe", "distributed", "pandas", "pyarrow"):
        pytest.importorskip(mod, reason=f"the Dask engine test needs {mod} (pip install 'blowfish-privacy[dask]')")
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as c:
        yield c


@pytest.mark.slow
@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("dirty", [False, True])
def test_dask_engine_agrees_with_local_on_malformed_rows(tmp_path, monkeypatch, dask_cluster, gz, dirty):
    from blowfish_privacy.release import DaskEngine

    monkeypatch.setattr(sources, "CSV_PARTITION_BYTES", 100)  # many blocks: malformed rows in several of them
    good = _good_rows(150, seed=4, dirty=dirty)
    path = _write(tmp_path, _with_malformed(good, [0, 1, 40, 41, 99, 150]), gz=gz)
    dask = DaskEngine(dask_cluster.scheduler_address, progress=False)
    for mode in MODES:
        spec = _spec(path, mode)
        if mode == "error":
            msgs = []
            for engine in (LocalEngine(progress=False), dask):
                with pytest.raises(DataError) as info:
                    engine.aggregate(spec, NEEDS)
                msgs.append(str(info.value))
            assert msgs[0] == msgs[1]
            _check_message(msgs[0], tmp_path)
            continue
        local, remote = LocalEngine(progress=False).aggregate(spec, NEEDS), dask.aggregate(spec, NEEDS)
        want = _reference(_with_malformed(good, [0, 1, 40, 41, 99, 150]), dict.fromkeys(DOM.names, mode))
        _same(local, want)
        _same(remote, want)
    spec = _spec(path, "drop")
    plan = _aggregate.spec_plan(spec, NEEDS)
    cols = _aggregate.plan_columns(plan)
    tasks = dask.delayed(sources.SpecSource(spec, cols, _aggregate.int_columns(plan)), AggregateMap(spec, plan, cols))
    assert len(tasks) == 1 if gz else len(tasks) > 5  # a gzip file is streamed by one task
