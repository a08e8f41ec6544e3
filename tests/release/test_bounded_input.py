"""Every CSV reader is bounded by the longest line it takes (``dataset.max_line_bytes``).

A line, or a quoted record spread over lines, longer than the limit is
refused in one line that names the limit and the key, quotes no data and
no row, in both local readers (pyarrow's, the stdlib's), plain and gzip,
and in the Dask engine's blocks; memory stays a small multiple of the
limit however long the line is.  The header record is read apart: a header
of a million columns is read whole (so "column not found" is said only
when it is true), and one over its own limit is refused in one line.

The spec is a plain object with the fields the engines read, so that these
tests depend on the engines only.
"""

import csv
import gzip
import io
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from blowfish_privacy import Categorical, Domain, Ordinal
from blowfish_privacy.release import DataError, LocalEngine
from blowfish_privacy import _aggregate as aggregation
from blowfish_privacy.release import _csv_lines, _csv_reading, _reading, sources
from blowfish_privacy.release.dask_engine import DaskEngine
from blowfish_privacy.release.spec import DEFAULT_MAX_LINE_BYTES

DOM = Domain([Ordinal("age", 0, 99), Categorical("sex", ["f", "m"])])
NEEDS = [("histogram", ("sex", "age")), ("histogram", ("age",))]
#: A cell text that must never appear in a message.
SECRET = "zqx-secret-77"
LIMIT = 4096


def _spec(path: Path, limit=LIMIT, invalid="drop", columns=None) -> SimpleNamespace:
    return SimpleNamespace(path=str(path.parent / "spec.toml"), source={"path": str(path), "format": "csv"},
                           domain=DOM, columns=columns or {n: n for n in DOM.names},
                           invalid={n: invalid for n in DOM.names}, max_line_bytes=limit)


def _rows(n=400, seed=1):
    rng = np.random.default_rng(seed)
    return [(int(a), str(s), "x") for a, s in zip(rng.integers(0, 100, n), rng.choice(["f", "m"], n))]


def _write(path: Path, header: str, lines: list, gz=False) -> Path:
    data = (header + "\n" + "".join(line + "\n" for line in lines)).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def _expected(rows):
    age = np.array([r[0] for r in rows])
    sex = np.array([r[1] == "m" for r in rows], dtype=np.int64)
    return np.bincount(sex * 100 + age, minlength=200), np.bincount(age, minlength=100)


def _aggregate(spec, arrow):
    """The local engine's aggregates, read by pyarrow's reader (``arrow``, falling back as it does) or the stdlib's."""
    table = _reading.Table(spec, ["age", "sex"], int_columns={"age"}, arrow=arrow)
    return dict(zip(NEEDS, aggregation.fold(table, aggregation.spec_plan(spec, NEEDS), ["age", "sex"])))


def _assert_refused_line(exc, path, limit=LIMIT):
    msg = str(exc)
    assert "\n" not in msg
    assert "dataset.max_line_bytes" in msg and f"{limit} bytes" in msg, msg
    assert str(path) in msg
    shown = msg.replace(str(path.parent), "")
    assert SECRET not in shown and "row" not in shown, msg


def _readers():
    out = [False]
    try:
        import pyarrow  # noqa: F401

        out.append(True)
    except ImportError:
        pass
    return out


READERS = _readers()


# -- lines and records over the limit ---------------------------------------------------------------------

@pytest.mark.parametrize("arrow", READERS)
@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("where", ["read column", "other column", "quoted", "no line break"])
def test_a_long_line_is_refused_in_one_line(tmp_path, arrow, gz, where):
    rows = _rows()
    lines = [f"{a},{s},{x}" for a, s, x in rows]
    long = SECRET * (3 * LIMIT // len(SECRET))
    if where == "read column":
        lines.insert(200, f"7,{long},x")
    elif where == "other column":
        lines.insert(200, f"7,f,{long}")
    elif where == "quoted":  # a record of short lines: its quoted cell holds line breaks
        lines.insert(200, '7,f,"' + "\n".join([SECRET] * (2 * LIMIT // len(SECRET))) + '"')
    else:
        lines.append("7,f," + long)
    path = _write(tmp_path / ("people.csv.gz" if gz else "people.csv"), "age,sex,note", lines, gz)
    if where == "no line break":  # the long line is the last, with no line break after it
        data = (gzip.decompress(path.read_bytes()) if gz else path.read_bytes()).rstrip(b"\n")
        path.write_bytes(gzip.compress(data) if gz else data)
    with pytest.raises(DataError) as info:
        _aggregate(_spec(path), arrow)
    _assert_refused_line(info.value, path)


@pytest.mark.parametrize("arrow", READERS)
def test_lines_up_to_the_limit_are_read(tmp_path, arrow):
    """Lines of exactly the limit (line break included) are read, by either reader; one byte more is refused."""
    rows = _rows()
    lines = [f"{a},{s},{x}" for a, s, x in rows]
    for k in (10, 200, 390):
        a, s, _ = rows[k]
        head = f"{a},{s},"
        lines[k] = head + "n" * (LIMIT - len(head) - 1)  # and "\n"
    quoted = '"' + "ab\n" * 100 + '"'
    lines[50] = f"{rows[50][0]},{rows[50][1]},{quoted}"  # a record over lines, within the limit
    path = _write(tmp_path / "people.csv", "age,sex,note", lines)
    agg = _aggregate(_spec(path), arrow)
    want = _expected(rows)
    np.testing.assert_array_equal(agg[NEEDS[0]], want[0])
    np.testing.assert_array_equal(agg[NEEDS[1]], want[1])

    lines[200] += "n"
    path = _write(tmp_path / "people.csv", "age,sex,note", lines)
    with pytest.raises(DataError) as info:
        _aggregate(_spec(path), arrow)
    _assert_refused_line(info.value, path)


@pytest.mark.slow
def test_a_long_cell_under_the_limit_costs_its_length_not_the_batch(tmp_path):
    """One long cell among many short ones: the map step reads it alone (no fixed-width array of the batch)."""
    rows = _rows(200_000, seed=2)
    lines = [f"{a},{s},x" for a, s, _ in rows]
    lines[1000] = f"{rows[1000][0]}," + "f" * 200_000 + ",x"  # a 200 KB cell that is not a label: dropped
    path = _write(tmp_path / "people.csv", "age,sex,note", lines)
    for arrow in READERS:
        agg = _aggregate(_spec(path, limit=1 << 20), arrow)
        keep = [r for k, r in enumerate(rows) if k != 1000]
        np.testing.assert_array_equal(agg[NEEDS[0]], _expected(keep)[0])
        np.testing.assert_array_equal(agg[NEEDS[1]], _expected(rows)[1])


# -- memory ----------------------------------------------------------------------------------------------

_PEAK = r"""
import gzip, os, resource, sys
from pathlib import Path
from types import SimpleNamespace
from blowfish_privacy import Categorical, Domain, Ordinal
from blowfish_privacy.release import DataError, LocalEngine
folder = Path(sys.argv[1])
dom = Domain([Ordinal("age", 0, 99), Categorical("sex", ["f", "m"])])
needs = [("histogram", ("sex", "age"))]

def spec(name):
    path = folder / name
    return SimpleNamespace(path=str(folder / "spec.toml"), source={"path": str(path), "format": "csv"}, domain=dom,
                           columns={"age": "age", "sex": "sex"}, invalid={"age": "drop", "sex": "drop"},
                           max_line_bytes=1 << 20)

LocalEngine(progress=False).aggregate(spec("small.csv"), needs)  # imports, pools and threads
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
for name in sys.argv[2:]:
    try:
        LocalEngine(progress=False).aggregate(spec(name), needs)
        print("read", name)
    except DataError as exc:
        assert "dataset.max_line_bytes" in str(exc), exc
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024)
# end without the interpreter's teardown: pyarrow's read-ahead pool of the abandoned reader once aborted
# this process's exit on a loaded machine ("terminate called without an active exception"); that is not
# the memory bound measured here (and is noted as an open problem of the readers)
sys.stdout.flush()
os._exit(0)
"""


@pytest.mark.slow
def test_peak_memory_of_a_long_line_is_bounded_by_the_limit(tmp_path):
    """A 150 MB line (plain, and a gzip member of it), limit 1 MiB: the process grows by a few MiB, not the line.

    Measured as the growth of the peak resident size of a fresh process
    (``getrusage``) past a first small read that loads every library.  The
    readers used to hold the whole line, a few times over (560 MiB for a
    200 MB line).
    """
    mb = 150
    body = b"age,sex\n" + b"1,f\n" * 1000
    long = b"2," + b"m" * (mb << 20) + b"\n"
    (tmp_path / "small.csv").write_bytes(body)
    (tmp_path / "long.csv").write_bytes(body + long + body[8:])
    with gzip.open(tmp_path / "long.csv.gz", "wb", compresslevel=1) as fh:
        fh.write(body + long + body[8:])
    proc = subprocess.run([sys.executable, "-c", _PEAK, str(tmp_path), "long.csv", "long.csv.gz"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "read" not in proc.stdout
    growth = int(proc.stdout.split()[-1])
    assert growth < 48 << 20, growth  # a few times the 1 MiB limit plus pyarrow's read-ahead, never the line


def test_the_stdlib_reader_holds_a_few_times_the_limit(tmp_path, monkeypatch):
    """Python's own allocations (tracemalloc) while the stdlib reader refuses a 20 MB line: a few times the limit."""
    import tracemalloc

    monkeypatch.setattr(_reading, "have_pyarrow", lambda: False)
    path = tmp_path / "people.csv"
    path.write_bytes(b"age,sex\n" + b"1,f\n" * 100 + b"2," + b"m" * (20 << 20) + b"\n")
    spec = _spec(path, limit=1 << 16)
    tracemalloc.start()
    try:
        with pytest.raises(DataError):
            LocalEngine(progress=False).aggregate(spec, NEEDS)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, peak  # the line is 20 MB


# -- the header ------------------------------------------------------------------------------------------

def _wide(tmp_path, width, positions, rows):
    """A CSV file of ``width`` columns named c0.., with age and sex at ``positions``; other cells empty."""
    names = [f"c{i}" for i in range(width)]
    names[positions[0]], names[positions[1]] = "age", "sex"
    with open(tmp_path / "wide.csv", "w") as fh:
        fh.write(",".join(names) + "\n")
        for a, s, _ in rows:
            cells = [""] * width
            cells[positions[0]], cells[positions[1]] = str(a), s
            fh.write(",".join(cells) + "\n")
    return tmp_path / "wide.csv"


@pytest.mark.slow
@pytest.mark.parametrize("arrow", READERS)
def test_a_header_over_a_mebibyte_is_read_whole(tmp_path, arrow):
    """200,000 columns (a header of 1.3 MB, data lines of 200 KB): the columns are found, the rows counted."""
    rows = _rows(20)
    path = _wide(tmp_path, 200_000, (150_000, 199_999), rows)
    assert path.stat().st_size > 20 * 200_000
    agg = _aggregate(_spec(path, limit=1 << 20), arrow)
    np.testing.assert_array_equal(agg[NEEDS[0]], _expected(rows)[0])
    # a column that is not there is still "not found"
    spec = _spec(path, limit=1 << 20, columns={"age": "age", "sex": "sexx"})
    with pytest.raises(DataError, match="column 'sexx' not found"):
        LocalEngine(progress=False).aggregate(spec, NEEDS)


@pytest.mark.slow
def test_a_header_of_a_million_columns_under_the_default_limit(tmp_path):
    """10**6 columns (an 8 MB header; data lines of 1 MB, within the default 1 MiB) work through the command."""
    rows = _rows(5)
    path = _wide(tmp_path, 10**6, (123_456, 999_999), rows)
    spec = _spec(path, limit=DEFAULT_MAX_LINE_BYTES)
    agg = LocalEngine(progress=False).aggregate(spec, NEEDS)
    np.testing.assert_array_equal(agg[NEEDS[0]], _expected(rows)[0])


def test_a_header_over_its_limit_is_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(_csv_reading, "HEADER_MAX_BYTES", 8192)
    names = ["age", "sex"] + [f"{SECRET}{i}" for i in range(1000)]
    path = _write(tmp_path / "people.csv", ",".join(names), ["1,f" + "," * 1000])
    with pytest.raises(DataError) as info:
        LocalEngine(progress=False).aggregate(_spec(path), NEEDS)
    msg = str(info.value)
    assert "header line longer than 8192 bytes" in msg and "dataset.max_line_bytes" in msg, msg
    assert SECRET not in msg


_TEXT = st.lists(st.sampled_from(["a", "b", ",", '"', " ", "\r", "\n", "\r\n", "é", '""', "age", "sex"]),
                 max_size=40).map("".join)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(_TEXT, _TEXT, st.booleans())
def test_the_header_is_cut_as_the_stdlib_reader_cuts_it(head, rest, bom):
    """Width, the needed columns' places and where the data begin agree with csv.reader, on any text.

    A blank first line is refused before the header is cut ("is empty").
    """
    data = ("\ufeff" if bom else "") + head + "\n" + rest
    raw = data.encode()
    assume(raw.splitlines()[0].strip(b"\r\n\t \xef\xbb\xbf"))
    lines = (line for chunk in _csv_lines.line_lists(io.BytesIO(raw), 1 << 20, chunk=7) for line in chunk)
    got = _csv_lines.scan_header(lines, 1 << 20, ["age", "sex", ""])
    reader = csv.reader(io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8-sig", newline=""))
    first = [h.strip() for h in next(reader, [])]
    assert got.width == len(first)
    for name in ("age", "sex", ""):
        if name in first:
            assert got.positions[name] == first.index(name)
        assert got.found.count(name) == first.count(name)
    after = list(csv.reader(io.TextIOWrapper(io.BytesIO(raw[got.end:]), encoding="utf-8", newline="")))
    assert after == list(reader)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"ab", b"\n", b"\r", b"\r\n", b"xyz" * 5, b"\xc3\xa9"]), max_size=60),
       st.integers(1, 9), st.integers(2, 40))
def test_lines_are_cut_as_splitlines_cuts_them(parts, chunk, limit):
    data = b"".join(parts)
    want = data.splitlines(True)
    try:
        got = [line for lines in _csv_lines.line_lists(io.BytesIO(data), limit, chunk=chunk) for line in lines]
    except _csv_lines.LineTooLong:
        assert any(len(line) > limit for line in want)
    else:
        assert got == want
        assert all(len(line) <= limit for line in want)


# -- the Dask engine's blocks ----------------------------------------------------------------------------

@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["1,f", "22,m", "\r\n", "\n", "\r", "7,m,x" * 3]), max_size=50),
       st.integers(1, 30))
def test_blocks_split_the_data_at_line_starts(tmp_path_factory, pieces, step):
    """The blocks of every Dask task, side by side, are the data after the header, cut only at line starts."""
    folder = tmp_path_factory.mktemp("blocks")
    text = ("age,sex\r\n" + "".join(pieces)).encode()
    path = folder / "people.csv"
    path.write_bytes(text)
    table = _reading.Table(_spec(path, limit=1 << 20), ["age", "sex"])
    header = _csv_reading.read_header(table, path, False)
    blocks = [_csv_reading.read_block(table, str(path), a, a + step, header.end, len(text))
              for a in range(header.end, len(text), step)]
    assert b"".join(blocks) == text[header.end:]
    lines = text[header.end:].splitlines(True)
    assert [line for b in blocks for line in b.splitlines(True)] == lines


def test_a_block_boundary_inside_a_long_line_is_refused(tmp_path):
    path = tmp_path / "people.csv"
    text = b"age,sex\n" + b"1,f\n" * 10 + b"2," + b"m" * 20_000 + b"\n" + b"3,f\n"
    path.write_bytes(text)
    spec = _spec(path, limit=4096)
    table = _reading.Table(spec, ["age", "sex"])
    with pytest.raises(DataError) as info:
        _csv_reading.read_block(table, str(path), 1000, 2000, 8, len(text))
    _assert_refused_line(info.value, path)


@pytest.fixture(scope="module")
def dask_cluster():
    for mod in ("dask.dataframe", "distributed"):
        pytest.importorskip(mod)
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp://",
                      dashboard_address=":0") as c:
        yield c


@pytest.mark.slow
@pytest.mark.parametrize("gz", [False, True])
def test_dask_refuses_a_long_line_as_the_local_engine_does(tmp_path, monkeypatch, dask_cluster, gz):
    """The same one-line refusal; the tasks return it as a value, so no worker logs a traceback."""
    import logging

    logged = []

    class Keep(logging.Handler):
        def emit(self, record):
            logged.append(record.getMessage())

    keep = Keep(logging.WARNING)
    logging.getLogger("distributed").addHandler(keep)
    monkeypatch.setattr(sources, "CSV_PARTITION_BYTES", 1000)  # block ends inside the long line
    rows = _rows()
    lines = [f"{a},{s},{x}" for a, s, x in rows]
    lines.insert(100, "7,f," + SECRET * (3 * LIMIT // len(SECRET)))
    path = _write(tmp_path / ("people.csv.gz" if gz else "people.csv"), "age,sex,note", lines, gz)
    msgs = []
    for engine in (LocalEngine(progress=False), DaskEngine(dask_cluster.scheduler_address, progress=False)):
        with pytest.raises(DataError) as info:
            engine.aggregate(_spec(path), NEEDS)
        _assert_refused_line(info.value, path)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]
    logging.getLogger("distributed").removeHandler(keep)
    assert not [m for m in logged if "Compute Failed" in m or "Traceback" in m], logged
    # within the limit, both count the same rows
    spec = _spec(path, limit=1 << 20)
    local = LocalEngine(progress=False).aggregate(spec, NEEDS)
    remote = DaskEngine(dask_cluster.scheduler_address, progress=False).aggregate(spec, NEEDS)
    want = _expected(rows[:100] + [(7, "f", "")] + rows[100:])
    for got in (local, remote):
        np.testing.assert_array_equal(got[NEEDS[0]], want[0])


@pytest.mark.slow
def test_dask_reads_a_wide_header_and_a_file_of_blocks(tmp_path, monkeypatch, dask_cluster):
    """A header longer than a block, many blocks after it: the same counts as the local engine."""
    monkeypatch.setattr(sources, "CSV_PARTITION_BYTES", 4096)
    rows = _rows(50)
    path = _wide(tmp_path, 3000, (10, 2999), rows)
    spec = _spec(path, limit=1 << 20)
    local = LocalEngine(progress=False).aggregate(spec, NEEDS)
    remote = DaskEngine(dask_cluster.scheduler_address, progress=False).aggregate(spec, NEEDS)
    np.testing.assert_array_equal(local[NEEDS[0]], _expected(rows)[0])
    np.testing.assert_array_equal(remote[NEEDS[0]], _expected(rows)[0])
