"""Bad inputs are one-line errors before anything is spent (issue 12).

Each case runs the command; it must exit with status 2, print exactly one
line starting with "blowfish: error:" that names the spec file and the data
file, quote no data value, and leave the ledger empty.
"""

import gzip
import textwrap

import numpy as np
import pytest
from release_specs import BASE, people

from blowfish_privacy.cli import main
from blowfish_privacy.release import Ledger

SECRET = "zqx-secret-77"  # a cell value that must never be shown


def _run(tmp_path, capsys, path="people.csv", extra=(), dataset=""):
    spec = tmp_path / "spec.toml"
    spec.write_text(textwrap.dedent(BASE).replace('path = "people.csv"', f'path = "{path}"\n{dataset}'))
    ledger = tmp_path / "l.sqlite"
    code = main(["release", str(spec), "--ledger", str(ledger), "--new-ledger", "--out", str(tmp_path / "o"),
                 "--quiet", "--no-plots", *extra])
    err = capsys.readouterr().err.strip()
    return code, err, spec, ledger


def _assert_refused(tmp_path, capsys, path="people.csv", data_name=None, extra=(), words=(), dataset=""):
    code, err, spec, ledger = _run(tmp_path, capsys, path, extra, dataset)
    assert code == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("blowfish: error:"), err
    assert str(spec) in err
    if data_name is not None:
        assert data_name in err, err
    assert SECRET not in err and "row" not in err.replace("rows", "").replace("arrow", "")
    for w in words:
        assert w in err, err
    assert Ledger(ledger).summary() == {}
    return err


def _csv_text(n=200):
    age, sex = people(n)
    lines = ["age,sex,income"] + [f"{a},{s},{a}" for a, s in zip(age, sex)]
    return "\n".join(lines) + "\n"


def test_latin1_csv(tmp_path, capsys):
    text = _csv_text().replace("\n3,", "\n3,").rstrip("\n") + f"\n5,f,{SECRET}é\n"
    (tmp_path / "people.csv").write_bytes(text.replace("income", "incomé").encode("latin-1"))
    _assert_refused(tmp_path, capsys, data_name="people.csv", words=("UTF-8",))


def test_latin1_cell_in_a_read_column_is_an_invalid_cell(tmp_path, capsys):
    """A cell that is not UTF-8 after the header is an invalid cell of its column (it was a refusal "not UTF-8")."""
    text = _csv_text() + f"5,{SECRET}é,1\n"  # the bad cell is in 'sex', which the releases read: dropped
    (tmp_path / "people.csv").write_bytes(text.encode("latin-1"))
    code, err, _, _ = _run(tmp_path, capsys)
    assert code == 0 and SECRET not in err, err


def test_utf16_csv(tmp_path, capsys):
    (tmp_path / "people.csv").write_bytes(_csv_text().encode("utf-16"))
    _assert_refused(tmp_path, capsys, data_name="people.csv", words=("UTF-16",))


def test_utf16_without_bom(tmp_path, capsys):
    (tmp_path / "people.csv").write_bytes(_csv_text().encode("utf-16-le"))
    _assert_refused(tmp_path, capsys, data_name="people.csv")


def test_binary_file(tmp_path, capsys):
    rng = np.random.default_rng(1)
    (tmp_path / "people.csv").write_bytes(rng.integers(0, 256, 5000, dtype=np.uint8).tobytes())
    _assert_refused(tmp_path, capsys, data_name="people.csv")


def test_binary_after_a_good_header_is_read_as_invalid_cells(tmp_path, capsys):
    """Only the header decides that a file is not CSV text: after it, bytes are cells (malformed rows, bad cells)."""
    rng = np.random.default_rng(2)
    (tmp_path / "people.csv").write_bytes(b"age,sex,income\n1,f,1\n" + rng.integers(0, 256, 5000, dtype=np.uint8).tobytes())
    code, err, _, _ = _run(tmp_path, capsys)
    assert code == 0, err


def test_truncated_gzip(tmp_path, capsys):
    data = gzip.compress((_csv_text(20000)).encode())
    (tmp_path / "people.csv.gz").write_bytes(data[: len(data) // 2])
    _assert_refused(tmp_path, capsys, "people.csv.gz", "people.csv.gz", words=("gzip",))


def test_gz_that_is_not_gzip(tmp_path, capsys):
    (tmp_path / "people.csv.gz").write_text(_csv_text())
    _assert_refused(tmp_path, capsys, "people.csv.gz", "people.csv.gz", words=("gzip",))


def test_bom_csv_is_read_correctly(tmp_path, capsys):
    (tmp_path / "people.csv").write_bytes(b"\xef\xbb\xbf" + _csv_text().encode())
    code, err, _, _ = _run(tmp_path, capsys)
    assert code == 0, err


def test_header_only_csv_runs_on_zero_rows(tmp_path, capsys):
    (tmp_path / "people.csv").write_text("age,sex,income\n")
    code, err, _, ledger = _run(tmp_path, capsys)
    assert code == 0, err  # a release on an empty table is legitimate: it does not fail after the spend
    assert Ledger(ledger).summary() != {}


def test_empty_file(tmp_path, capsys):
    (tmp_path / "people.csv").write_text("")
    _assert_refused(tmp_path, capsys, data_name="people.csv", words=("empty",))


# -- Parquet --------------------------------------------------------------------------------------------

def _parquet_parts(folder, parts=3, rows=3000, drop_in=None, row_group_size=None):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    folder.mkdir()
    age, sex = people(parts * rows)
    for k in range(parts):
        cols = {"age": age[k * rows:(k + 1) * rows], "sex": sex[k * rows:(k + 1) * rows]}
        if k == drop_in:
            del cols["age"]
        pq.write_table(pa.table(cols), folder / f"part-{k}.parquet", row_group_size=row_group_size)
    return folder


def test_truncated_parquet_in_a_folder(tmp_path, capsys):
    folder = _parquet_parts(tmp_path / "parts")
    p = folder / "part-1.parquet"
    p.write_bytes(p.read_bytes()[:-200])
    _assert_refused(tmp_path, capsys, "parts", "part-1.parquet", words=("Parquet",))


def test_damaged_parquet_pages(tmp_path, capsys):
    folder = _parquet_parts(tmp_path / "parts", parts=1, rows=20000)
    p = folder / "part-0.parquet"
    raw = bytearray(p.read_bytes())
    rng = np.random.default_rng(5)
    raw[4:2004] = rng.integers(0, 256, 2000, dtype=np.uint8).tobytes()  # the first pages, footer intact
    p.write_bytes(bytes(raw))
    _assert_refused(tmp_path, capsys, "parts", "part-0.parquet", words=("Parquet",))


def test_parquet_part_missing_a_column(tmp_path, capsys):
    _parquet_parts(tmp_path / "parts", drop_in=2)
    _assert_refused(tmp_path, capsys, "parts", "part-2.parquet", words=("column 'age' not found",))


@pytest.mark.slow
def test_parquet_part_missing_a_column_dask(tmp_path, capsys):
    pytest.importorskip("distributed")
    pytest.importorskip("dask.dataframe")
    _parquet_parts(tmp_path / "parts", drop_in=2)
    _assert_refused(tmp_path, capsys, "parts", "part-2.parquet", extra=("--engine", "dask", "--workers", "1"),
                    words=("column 'age' not found",))


# -- Dask -----------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_unreachable_dask_scheduler(tmp_path, capsys, monkeypatch):
    pytest.importorskip("distributed")
    pytest.importorskip("dask.dataframe")
    import socket

    from blowfish_privacy.release import dask_engine

    monkeypatch.setattr(dask_engine, "SCHEDULER_TIMEOUT", 2.0)
    (tmp_path / "people.csv").write_text(_csv_text())
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    err = _assert_refused(tmp_path, capsys, extra=("--engine", "dask", "--scheduler", f"tcp://127.0.0.1:{port}"),
                          words=("scheduler",))
    assert f"127.0.0.1:{port}" in err


# -- malformed rows (more or fewer fields than the header) -----------------------------------------------

def _ragged_text():
    lines = _csv_text().splitlines()
    lines.insert(5, f"47,m,{SECRET},9")  # long
    lines.insert(50, "987654,m")  # short
    return "\n".join(lines) + "\n"


@pytest.mark.slow
@pytest.mark.parametrize("engine", [(), ("--engine", "dask", "--workers", "1")])
def test_malformed_rows_under_error_are_refused_without_quoting_them(tmp_path, capsys, engine):
    if engine:
        pytest.importorskip("distributed")
    (tmp_path / "people.csv").write_text(_ragged_text())
    spec = tmp_path / "spec.toml"
    text = textwrap.dedent(BASE).replace("[domain.age]", '[domain.age]\ninvalid = "error"')
    assert text != textwrap.dedent(BASE)
    spec.write_text(text)
    ledger = tmp_path / "l.sqlite"
    code = main(["release", str(spec), "--ledger", str(ledger), "--new-ledger", "--out", str(tmp_path / "o"),
                 "--quiet", "--no-plots", *engine])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("blowfish: error:"), err
    assert "malformed rows (more or fewer fields than the header line)" in err, err
    shown = err.replace(str(tmp_path), "")
    assert SECRET not in shown and "987654" not in shown and "47,m" not in shown
    assert "row" not in shown.replace("rows", "").replace("arrow", "")
    assert not (tmp_path / "o").exists()


def test_malformed_rows_are_counted_by_the_default_rules(tmp_path, capsys):
    """Under the spec's default rules (no attribute with invalid = "error") they count, cells invalid: the run goes on."""
    (tmp_path / "people.csv").write_text(_ragged_text())
    code, err, _, _ = _run(tmp_path, capsys)
    assert code == 0, err


# -- lines longer than dataset.max_line_bytes, headers of any width ------------------------------------------

@pytest.mark.parametrize("engine,gz", [((), False), ((), True),
                                       pytest.param(("--engine", "dask", "--workers", "1"), False,
                                                    marks=pytest.mark.slow)])
def test_a_line_longer_than_the_limit(tmp_path, capsys, engine, gz):
    if engine:
        pytest.importorskip("distributed")
    lines = _csv_text().splitlines()
    lines.insert(100, f"47,m,{SECRET * 1000}")  # 13 KB, within the 1 MiB default
    text = "\n".join(lines) + "\n"
    name = "people.csv.gz" if gz else "people.csv"
    (tmp_path / name).write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    err = _assert_refused(tmp_path, capsys, name, name, extra=engine, dataset="max_line_bytes = 4096",
                          words=("longer than dataset.max_line_bytes = 4096 bytes",))
    assert "47,m" not in err
    code, err, _, _ = _run(tmp_path, capsys, name, engine)  # the default limit reads it
    assert code == 0, err


@pytest.mark.slow
def test_a_header_over_a_mebibyte(tmp_path, capsys):
    """200,000 columns: the header (1.4 MB) is read whole, so age and sex are found (they were "not found")."""
    width = 200_000
    names = [f"col{i}" for i in range(width)]
    names[150_000], names[199_999] = "age", "sex"
    age, sex = people(50)
    rows = []
    for a, s in zip(age, sex):
        cells = [""] * width
        cells[150_000], cells[199_999] = str(a), s
        rows.append(",".join(cells))
    (tmp_path / "people.csv").write_text(",".join(names) + "\n" + "\n".join(rows) + "\n")
    code, err, _, _ = _run(tmp_path, capsys)
    assert code == 0, err
