"""Every row counts once, whatever its cells hold; whether a run is refused never depends on the cells.

Two review findings, each reproduced on the code before the fix:

1. Under the default rules a cell that was not an integer (empty, ``abc``,
   ``7.5``, ``nan``) and a malformed row (more or fewer fields than the
   header) were dropped, so the row count ``n`` that cdf, sum,
   pufferfish_sum and grid k-means publish exactly told whether one
   person's cell was missing.  Now such a cell counts as the attribute's
   ``low`` under ``"clamp"``, and a malformed row counts once with every
   cell invalid: for attributes that are all ordinal under clamp, the row
   count of every aggregate is the number of data rows.
2. The stdlib CSV reader (pyarrow's fallback) decoded every cell strictly,
   so an undecodable byte in a column no release reads refused the run
   only when another cell (an empty age, a malformed row) sent the file to
   the fallback.  Now it decodes with ``surrogateescape``: an undecodable
   cell of a read column is an invalid cell of it, one of another column is
   never looked at.

The property is checked with hypothesis for the local engine (pyarrow's
reader, the stdlib reader alone) and the Dask engine's tasks (run in this
process by Dask's synchronous scheduler, CSV in small blocks and Parquet),
and for in-memory tables.
"""

import contextlib
import gzip
import io
import json
import math
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from release_specs import AGE, FULL_DOMAIN, NEAR, SEX, people_dataset, protected_by, release, spec_toml

from blowfish_privacy import Domain, Ordinal
from blowfish_privacy.cli import main
from blowfish_privacy.release import LocalEngine, TableEngine
from blowfish_privacy import _aggregate
from blowfish_privacy.release import _reading, dask_engine, sources
from blowfish_privacy.release.aggregation import AggregateMap

# -- finding 1 through the command: one cell of one row must not change n ------------------------------------------

#: cdf, sum and pufferfish_sum publish n exactly; grid k-means derives its grid cell from it.
N_SPEC = spec_toml(
    people_dataset("data.csv", total_epsilon=50, protect="protected"),
    {"age": AGE, "x": {"type": "ordinal", "low": 0, "high": 1}},
    protected_by(near=(NEAR, ["age"]), grid=(FULL_DOMAIN, ["age", "x"])),
    [release("c", "cdf", ["age"], 1, "near"),
     release("s", "sum", ["age"], 1, "near"),
     release("p", "pufferfish_sum", ["age"], 1, absolute_error=5),
     release("k", "kmeans", ["age", "x"], 1, "grid", k=2)],
)

A_ROWS = ["1,0,a", "2,1,b", "3,0,c", "4,1,d", "5,0,e"]
#: The third row of a.csv, changed: each is one person's cell (or row) that is missing, not a number or malformed.
B_THIRD = ["", "abc", "7.5", "nan", "inf", "-inf", "1e400", "3\xff", '"\xff"', "3,0", "3,0,c,extra", "", "3"]


def _release(tmp_path: Path, name: str, data: bytes, monkeypatch=None, arrow=True):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "spec.toml").write_text(N_SPEC)
    (folder / "data.csv").write_bytes(data)
    err = io.StringIO()
    ctx = contextlib.nullcontext() if arrow else mock.patch.object(_reading, "have_pyarrow", lambda: False)
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), ctx:
        code = main(["release", str(folder / "spec.toml"), "--ledger", str(folder / "l.sqlite"), "--new-ledger",
                     "--out", str(folder / "o"), "--no-plots", "--quiet"])
    docs = {n: json.loads((folder / "o" / f"{n}.json").read_text()) for n in "cspk"} if code == 0 else {}
    public = {"c": docs["c"]["n"], "s": docs["s"]["n"], "p": docs["p"]["n"], "k": docs["k"]["cell"]} if docs else {}
    return code, err.getvalue(), public


def _b_data(third: str, header: str) -> bytes:
    rows = list(A_ROWS)
    if third in ("3,0", "3,0,c,extra"):  # malformed rows: fewer and more fields than the header
        rows[2] = third
    elif header == "age":
        rows = [r.split(",")[0] for r in rows]
        rows[2] = third
    else:
        rows[2] = f"{third},0,c"
    return (header + "\n" + "\n".join(rows) + "\n").encode("utf-8", "surrogateescape")


@pytest.mark.slow
@pytest.mark.parametrize("arrow", [True, False], ids=["pyarrow", "stdlib"])
def test_one_cell_or_row_never_changes_the_published_row_count(tmp_path, arrow):
    """a.csv and every b.csv: the same exit status, nothing on stderr, the same n (and k-means cell)."""
    code_a, err_a, n_a = _release(tmp_path, "a", _b_data("3", "age,x,notes"), arrow=arrow)
    assert code_a == 0 and err_a == "", err_a
    assert n_a == {"c": 5, "s": 5, "p": 5, "k": n_a["k"]}
    for k, third in enumerate(B_THIRD):
        code, err, n = _release(tmp_path, f"b{k}", _b_data(third, "age,x,notes"), arrow=arrow)
        assert (code, err, n) == (code_a, err_a, n_a), third


ONE_COLUMN = spec_toml(people_dataset("data.csv", total_epsilon=50), {"age": AGE}, {"near": NEAR},
                      [release("c", "cdf", ["age"], 1, "near")])


def test_an_empty_cell_of_a_one_column_file_is_a_row(tmp_path):
    """With one column an empty cell is an empty line: it is a row of empty cells (pyarrow skipped it)."""
    results = []
    for k, data in enumerate([b"age\n1\n2\n3\n4\n5\n", b"age\n1\n2\n\n4\n5\n", b"age\r\n1\r\n2\r\n\r\n4\r\n5\r\n",
                              b"age\n1\n2\n3\n4\n\n"]):
        folder = tmp_path / f"d{k}"
        folder.mkdir()
        (folder / "spec.toml").write_text(ONE_COLUMN)
        (folder / "data.csv").write_bytes(data)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["release", str(folder / "spec.toml"), "--ledger", str(folder / "l.sqlite"), "--new-ledger",
                         "--out", str(folder / "o"), "--no-plots", "--quiet"])
        assert code == 0 and err.getvalue() == "", err.getvalue()
        results.append(json.loads((folder / "o" / "c.json").read_text())["n"])
    assert results == [5, 5, 5, 5]


# -- finding 2 through the command: the probe table -----------------------------------------------------------------

S1 = spec_toml(
    people_dataset("data.csv", total_epsilon=50),
    {"age": AGE, "sex": SEX},
    {"all": FULL_DOMAIN},
    [release("h", "histogram", ["age"], 1, "all")],
)

_PLAIN = b"".join(b"%d,%s,note %d\n" % (i, b"fm"[i % 2:i % 2 + 1], i) for i in range(30))
_LONG = b"y" * 200_000
PROBES = {
    "plain": _PLAIN,
    "\\xff in notes": _PLAIN + b"5,f,\xff\n",
    "\\xff in notes, an empty age": _PLAIN + b"5,f,\xff\n,f,x\n",
    "\\xff in notes, a malformed row": _PLAIN + b"5,f,\xff\n7,f\n",
    "a long notes field": _PLAIN + b"5,f," + _LONG + b"\n",
    "a long notes field, an empty age": _PLAIN + b"5,f," + _LONG + b"\n,f,x\n",
    "a long notes field, a malformed row": _PLAIN + b"5,f," + _LONG + b"\n7,f\n",
    "a long quoted notes field, a malformed row": _PLAIN + b'5,f,"' + _LONG + b'"\n7,f\n',
    "\\xff in sex": _PLAIN + b"5,\xff,x\n",
    "\\xff in age": _PLAIN + b"5\xff,f,x\n",
    "\\xff in a malformed row": _PLAIN + b"\xff\xfe,\xff\n",
    "a NUL byte in a cell": _PLAIN + b"5,f,\x00\n",
    "an unbalanced quote in notes": _PLAIN + b'5,f,ab"c\n6,m,x\n',
}


@pytest.mark.slow
@pytest.mark.parametrize("arrow", [True, False], ids=["pyarrow", "stdlib"])
def test_the_probe_table_gives_the_same_exit_status_in_every_row(tmp_path, arrow):
    outcomes = {}
    for k, (name, rows) in enumerate(PROBES.items()):
        folder = tmp_path / f"p{k}"
        folder.mkdir()
        (folder / "spec.toml").write_text(S1)
        (folder / "data.csv").write_bytes(b"age,sex,notes\n" + rows)
        err = io.StringIO()
        ctx = contextlib.nullcontext() if arrow else mock.patch.object(_reading, "have_pyarrow", lambda: False)
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), ctx:
            code = main(["release", str(folder / "spec.toml"), "--ledger", str(folder / "l.sqlite"), "--new-ledger",
                         "--out", str(folder / "o"), "--no-plots", "--quiet"])
        outcomes[name] = (code, err.getvalue())
    assert set(outcomes.values()) == {(0, "")}, outcomes


@pytest.mark.parametrize("tail", [b"\0" * 16, b"garbage"], ids=["zero padding", "trailing garbage"])
def test_a_gzip_stream_is_judged_the_same_whatever_the_cells(tmp_path, tail):
    """pyarrow refused gzip's zero padding, the stdlib reader takes it: an empty age (which sends the file to
    the stdlib reader) decided whether the run was refused.  Now the stdlib reader judges every stream."""
    outcomes = set()
    many = _PLAIN * 400  # far beyond pyarrow's read-ahead of 32 blocks (2 KiB each under this line limit)
    for k, rows in enumerate([many, b",f,x\n" + many]):
        folder = tmp_path / f"g{k}"
        folder.mkdir()
        spec = S1.replace('path = "data.csv"', 'path = "data.csv.gz"\nmax_line_bytes = 4096')
        (folder / "spec.toml").write_text(spec)
        (folder / "data.csv.gz").write_bytes(gzip.compress(b"age,sex,notes\n" + rows) + tail)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["release", str(folder / "spec.toml"), "--ledger", str(folder / "l.sqlite"), "--new-ledger",
                         "--out", str(folder / "o"), "--no-plots", "--quiet"])
        outcomes.add((code, err.getvalue().replace(str(folder), "F")))
    assert len(outcomes) == 1, outcomes


# -- the property, with hypothesis: the total of each histogram is the number of rows ------------------------------

DOM = Domain([Ordinal("a", 0, 9), Ordinal("b", -5, 20, bin_width=3)])
NEEDS = [("histogram", ("a",)), ("histogram", ("b",)), ("histogram", ("a", "b")), ("column", ("b",))]

_NUMBERS = st.one_of(st.integers(-30, 40).map(str), st.sampled_from(["7.0", "4.2e1", " 5", "6 ", "+3", "1_0", "0x1f"]))
_JUNK = st.one_of(
    st.sampled_from(["", "abc", "7.5", "nan", "NaN", "inf", "-inf", "1e400", "None", "null", "-", " ", '"', ",",
                     "\u0663", "99999999999999999999999", "\x00", "\ufeff5", "\ufeff"]),
    st.text(max_size=8),
    st.binary(max_size=8).map(lambda b: b.decode("utf-8", "surrogateescape")),
)


def _cells(breaks: bool):
    junk = _JUNK if breaks else _JUNK.filter(lambda c: "\r" not in c and "\n" not in c)
    return st.one_of(_NUMBERS, junk)


def _rows(breaks: bool):
    """Rows of 0 to 5 fields (the header has 3): well-formed ones most of the time."""
    cells = _cells(breaks)
    return st.lists(st.one_of(st.lists(cells, min_size=3, max_size=3), st.lists(cells, min_size=0, max_size=5)),
                    min_size=0, max_size=25)


def _quote(cell: str) -> str:
    if cell and not any(ch in cell for ch in ',"\r\n') and cell.strip() == cell:
        return cell
    return '"' + cell.replace('"', '""') + '"'


def _csv_bytes(rows, crlf: bool, final_break: bool) -> bytes:
    """The file: header ``a,notes,b``, then each row's fields, quoted where needed (no fields: an empty line)."""
    end = "\r\n" if crlf else "\n"
    lines = ["a,notes,b"]
    for cells in rows:
        if len(cells) == 1 and cells[0] == "":
            lines.append('""')  # one empty field, not an empty line
        else:
            lines.append(",".join(_quote(c) for c in cells))
    text = end.join(lines)
    if final_break or (rows and not rows[-1]):  # an empty last row needs its line break to be a row
        text += end
    return text.encode("utf-8", "surrogateescape")


def _spec(path: Path, fmt: str = "csv") -> SimpleNamespace:
    return SimpleNamespace(path=str(path.parent / "spec.toml"), source={"path": str(path), "format": fmt},
                           domain=DOM, columns={"a": "a", "b": "b"}, invalid={"a": "clamp", "b": "clamp"})


def _dask_sync(spec) -> dict:
    """The Dask engine's aggregates, its task graph run in this process (Dask's synchronous scheduler)."""
    import dask

    plan = _aggregate.spec_plan(spec, NEEDS)
    cols = _aggregate.plan_columns(plan)
    source = sources.SpecSource(spec, cols, _aggregate.int_columns(plan))
    mapped = dask_engine.DaskEngine(progress=False).delayed(source, AggregateMap(spec, plan, cols))
    results = dask.compute(*mapped, scheduler="synchronous")
    out = results[0]
    for r in results[1:]:
        out = _aggregate.reduce(out, r)
    return dict(zip(NEEDS, _aggregate.unwrap(out)))


def _check_counts(got: dict, n: int) -> None:
    for need in NEEDS:
        total = len(got[need]) if need[0] == "column" else int(got[need].sum())
        assert total == n, (need, total, n)


def _same(x: dict, y: dict) -> None:
    for need in NEEDS:
        np.testing.assert_array_equal(np.sort(x[need]), np.sort(y[need]))


_SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                            HealthCheck.function_scoped_fixture])


@pytest.mark.slow
@_SETTINGS
@given(rows=_rows(breaks=True), crlf=st.booleans(), final_break=st.booleans())
def test_every_row_counts_once_in_the_local_engine(tmp_path_factory, rows, crlf, final_break):
    path = tmp_path_factory.mktemp("rows") / "data.csv"
    path.write_bytes(_csv_bytes(rows, crlf, final_break))
    spec = _spec(path)
    arrow = LocalEngine(progress=False).aggregate(spec, NEEDS)
    small = LocalEngine(progress=False, batch_rows=3, block_bytes=64).aggregate(spec, NEEDS)
    with mock.patch.object(_reading, "have_pyarrow", lambda: False):
        stdlib = LocalEngine(progress=False, batch_rows=4).aggregate(spec, NEEDS)
    for got in (arrow, small, stdlib):
        _check_counts(got, len(rows))
    _same(arrow, stdlib)
    _same(small, stdlib)


@pytest.mark.slow
@_SETTINGS
@given(rows=_rows(breaks=False), crlf=st.booleans(), final_break=st.booleans())
def test_every_row_counts_once_in_the_dask_engine(tmp_path_factory, rows, crlf, final_break):
    """Plain CSV in blocks of a few lines (cells without line breaks: a split at a quoted one is documented)."""
    pytest.importorskip("dask")
    pytest.importorskip("distributed")
    path = tmp_path_factory.mktemp("rows") / "data.csv"
    path.write_bytes(_csv_bytes(rows, crlf, final_break))
    spec = _spec(path)
    with mock.patch.object(sources, "CSV_PARTITION_BYTES", 40):
        got = _dask_sync(spec)
    _check_counts(got, len(rows))
    _same(got, LocalEngine(progress=False).aggregate(spec, NEEDS))


_VALUES = st.one_of(st.none(), st.integers(-30, 40), st.floats(allow_nan=True, allow_infinity=True),
                    st.booleans(), _cells(True), st.binary(max_size=4))


@pytest.mark.slow
@_SETTINGS
@given(columns=st.integers(0, 30).flatmap(lambda n: st.tuples(st.lists(_VALUES, min_size=n, max_size=n),
                                                               st.lists(_VALUES, min_size=n, max_size=n))))
def test_every_row_counts_once_in_an_in_memory_table(columns):
    a, b = columns
    n = len(a)
    table = {"a": np.array(a + [0], dtype=object)[:n], "b": np.array(b + [0], dtype=object)[:n]}
    spec = SimpleNamespace(path="spec.toml", domain=DOM, columns={"a": "a", "b": "b"},
                           invalid={"a": "clamp", "b": "clamp"})
    _check_counts(TableEngine(table, progress=False).aggregate(spec, NEEDS), n)


def _parquet_column(cells):
    """A string column of ``cells`` (None: null), its bytes as given: text that is not UTF-8 stays so."""
    pa = pytest.importorskip("pyarrow")
    data = pa.array([None if c is None else c.encode("utf-8", "surrogateescape") for c in cells], type=pa.binary())
    return pa.Array.from_buffers(pa.string(), len(data), data.buffers(), null_count=data.null_count)


@pytest.mark.slow
@_SETTINGS
@given(rows=st.lists(st.tuples(st.one_of(st.none(), _cells(True)), st.one_of(st.none(), _cells(True))), max_size=30),
       groups=st.integers(1, 4))
def test_every_row_counts_once_in_parquet_local_and_dask(tmp_path_factory, rows, groups):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pytest.importorskip("dask")
    pytest.importorskip("distributed")
    path = tmp_path_factory.mktemp("pq") / "data.parquet"
    table = pa.table({"a": _parquet_column([r[0] for r in rows]), "b": _parquet_column([r[1] for r in rows])})
    pq.write_table(table, path, row_group_size=max(1, math.ceil(len(rows) / groups)))
    spec = _spec(path, "parquet")
    local = LocalEngine(progress=False).aggregate(spec, NEEDS)
    _check_counts(local, len(rows))
    with mock.patch.object(sources, "PARQUET_PARTITION_BYTES", 1):  # a task per row group
        dask = _dask_sync(spec)
    _check_counts(dask, len(rows))
    _same(local, dask)
