"""The ledger keeps what it paid for; ledger files are checked, never silently replaced."""

import io
import json
import sqlite3
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blowfish_privacy.cli import main
from blowfish_privacy.release import Ledger, LedgerError
from blowfish_privacy.release._ledger_file import SCHEMA_VERSION


def _release(workdir, *extra, out="o"):
    return main(["release", str(workdir / "spec.toml"), "--ledger", str(workdir / "l.sqlite"), "--new-ledger",
                 "--out", str(workdir / out), "--no-plots", "--quiet", *extra])


def _docs(folder):
    return {p.stem: json.loads(p.read_text()) for p in folder.glob("*.json") if p.name != "summary.json"}


def test_results_are_stored_with_the_spend_and_export_again(workdir, capsys):
    assert _release(workdir) == 0
    led = Ledger(workdir / "l.sqlite")
    runs = led.runs()
    assert len(runs) == 1 and runs[0]["releases"] == ["age-cdf", "age-sex"]
    run = runs[0]["run"]
    assert {e["run"] for e in led.summary()["people"]["entries"]} == {run}
    stored = {d["name"]: (d, v) for d, v in led.results(run[:6])}  # a prefix is enough
    written = _docs(workdir / "o")
    for name, doc in written.items():
        d, v = stored[name]
        for key in ("counts", "cumulative", "epsilon_spent_exact", "noise_parts", "run"):
            if key in doc:
                assert d.get(key, None) == doc[key] or list(v.get(key, [])) == doc[key], (name, key)
    capsys.readouterr()
    assert main(["ledger", "export", run, str(workdir / "l.sqlite"), "--out", str(workdir / "again")]) == 0
    again = _docs(workdir / "again")
    assert again.keys() == written.keys()
    for name in written:
        assert again[name]["cumulative" if "cumulative" in again[name] else "counts"] == \
            written[name]["cumulative" if "cumulative" in written[name] else "counts"]
    assert main(["ledger", "show", str(workdir / "l.sqlite")]) == 0
    assert run in capsys.readouterr().out


def test_a_failed_write_after_the_spend_loses_nothing(workdir, capsys, monkeypatch):
    from blowfish_privacy.release import runner

    def disk_full(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(runner, "export_results", disk_full)
    assert _release(workdir) == 2
    err = capsys.readouterr().err
    assert "No space left" in err and "blowfish ledger export" in err and len(err.strip().splitlines()) == 1
    monkeypatch.undo()
    led = Ledger(workdir / "l.sqlite")
    assert led.summary()["people"]["spent"] > 0
    run = led.runs()[0]["run"]
    assert main(["ledger", "export", run, str(workdir / "l.sqlite"), "--out", str(workdir / "saved")]) == 0
    assert set(_docs(workdir / "saved")) == {"age-cdf", "age-sex"}


KILLED = textwrap.dedent("""
    import os, sys
    from blowfish_privacy.release import runner
    from blowfish_privacy.cli import main

    def die(*a, **k):
        os._exit(9)  # the process dies right after the spend, before any file is written

    runner.export_results = die
    main(["release", sys.argv[1], "--ledger", sys.argv[2], "--new-ledger", "--out", sys.argv[3], "--quiet"])
    """)


@pytest.mark.slow
def test_a_process_killed_after_the_spend_can_be_exported(workdir):
    p = subprocess.run([sys.executable, "-c", KILLED, str(workdir / "spec.toml"), str(workdir / "l.sqlite"),
                        str(workdir / "o")], capture_output=True, text=True, timeout=300)
    assert p.returncode == 9, p.stderr
    assert not list((workdir / "o").glob("*.json"))
    run = Ledger(workdir / "l.sqlite").runs()[0]["run"]
    assert main(["ledger", "export", run, str(workdir / "l.sqlite"), "--out", str(workdir / "back")]) == 0
    assert set(_docs(workdir / "back")) == {"age-cdf", "age-sex"}


def test_a_missing_ledger_is_an_error_not_a_new_budget(workdir, capsys):
    typo = workdir / "ledgr.sqlite"
    code = main(["release", str(workdir / "spec.toml"), "--ledger", str(typo), "--out", str(workdir / "o")])
    assert code == 2 and "does not exist" in capsys.readouterr().err
    assert not typo.exists() and not (workdir / "o").exists()
    assert main(["ledger", str(typo)]) == 2 and not typo.exists()
    assert main(["ledger", "init", str(typo)]) == 0 and typo.exists()
    assert main(["ledger", "init", str(typo)]) == 2  # once


def test_damaged_empty_foreign_and_newer_ledgers_are_refused(tmp_path):
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    with pytest.raises(LedgerError, match="empty file"):
        Ledger(empty)
    newer = tmp_path / "newer.sqlite"
    Ledger(newer)
    con = sqlite3.connect(newer)
    con.execute("PRAGMA user_version = 99")
    con.close()
    with pytest.raises(LedgerError, match="schema version 99"):
        Ledger(newer)
    foreign = tmp_path / "foreign.sqlite"
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE x (a)")
    con.commit()
    con.close()
    with pytest.raises(LedgerError, match="not a budget ledger"):
        Ledger(foreign)
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"not a database at all" * 100)
    with pytest.raises(LedgerError):
        Ledger(garbage)


def test_a_scrambled_page_is_a_one_line_error(workdir, capsys):
    assert _release(workdir) == 0
    path = workdir / "l.sqlite"
    data = bytearray(path.read_bytes())
    page = 4096
    for i in range(page + 16, min(len(data), 3 * page)):
        data[i] = (data[i] * 7 + 13) % 256
    path.write_bytes(bytes(data))
    capsys.readouterr()
    assert main(["ledger", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("blowfish: error:") and len(err.strip().splitlines()) == 1


def test_an_old_ledger_is_migrated(tmp_path):
    path = tmp_path / "old.sqlite"
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE datasets (id TEXT PRIMARY KEY, total TEXT NOT NULL, created TEXT NOT NULL);
        CREATE TABLE spends (seq INTEGER PRIMARY KEY AUTOINCREMENT, dataset TEXT NOT NULL REFERENCES datasets(id),
            release TEXT NOT NULL, kind TEXT NOT NULL, epsilon TEXT NOT NULL, policy TEXT NOT NULL,
            spec_sha256 TEXT NOT NULL, time TEXT NOT NULL, parallel TEXT);
        INSERT INTO datasets VALUES ('d', '1', 'then');
        INSERT INTO spends (dataset, release, kind, epsilon, policy, spec_sha256, time) VALUES
            ('d', 'r', 'histogram', '1/4', 'p', '', 'then');
    """)
    con.commit()
    con.close()
    led = Ledger(path, create=False)
    assert led.remaining("d") == 0.75
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_output_folder_problems_are_refused_before_the_spend(workdir, capsys):
    (workdir / "afile").write_text("x")
    code = main(["release", str(workdir / "spec.toml"), "--ledger", str(workdir / "l.sqlite"), "--new-ledger",
                 "--out", str(workdir / "afile"), "--quiet"])
    assert code == 2 and "--out" in capsys.readouterr().err
    assert Ledger(workdir / "l.sqlite").summary() == {}
    # a second run into the same folder is refused: earlier results are never overwritten silently
    assert _release(workdir) == 0
    before = (workdir / "o" / "age-sex.json").read_text()
    assert _release(workdir) == 2
    assert "not empty" in capsys.readouterr().err
    assert (workdir / "o" / "age-sex.json").read_text() == before
    spent = Ledger(workdir / "l.sqlite").summary()["people"]["spent"]
    assert _release(workdir, "--overwrite") == 0
    assert Ledger(workdir / "l.sqlite").summary()["people"]["spent"] == 2 * spent


def test_too_little_free_space_is_refused_before_the_spend(workdir, capsys, monkeypatch):
    import shutil as _shutil
    from collections import namedtuple

    Usage = namedtuple("Usage", "total used free")
    monkeypatch.setattr(_shutil, "disk_usage", lambda path: Usage(10**9, 10**9 - 1000, 1000))
    assert _release(workdir) == 2
    err = capsys.readouterr().err
    assert "MiB free" in err and len(err.strip().splitlines()) == 1
    assert Ledger(workdir / "l.sqlite").summary() == {} and not (workdir / "o").exists()


def _csv_reference(vectors: dict) -> str:
    """The CSV writer cell by cell, as it was before it formatted blocks."""
    names = list(vectors)
    cols = [np.asarray(vectors[n]) for n in names]
    lines = [",".join(names)]
    for i in range(max(c.size for c in cols)):
        cells = []
        for c in cols:
            if i >= c.size:
                cells.append("")
                continue
            v = c[i].item() if isinstance(c[i], np.generic) else c[i]
            cells.append((repr(int(v)) if v.is_integer() else repr(v)) if isinstance(v, float) else str(v))
        lines.append(",".join(cells))
    return "\n".join(lines) + "\n"


_floats = st.floats(allow_nan=True, allow_infinity=True, width=64) | st.sampled_from([0.0, -0.0, 1.0, 2.5, 1e16, 1e300])


@settings(max_examples=60, deadline=None)
@given(st.lists(_floats, min_size=1, max_size=40), st.lists(st.integers(-2**63, 2**63 - 1), max_size=40),
       st.booleans())
def test_csv_blocks_write_what_the_cell_by_cell_writer_wrote(floats, ints, f32):
    from blowfish_privacy.release import vector_files

    with np.errstate(over="ignore"):  # float32: large values become infinities
        a = np.array(floats, dtype=np.float32 if f32 else np.float64)
    vectors = {"a": a, "b": np.array(ints, dtype=np.int64),
               "c": np.array([True, False][: len(ints) % 3]), "d": np.array(["x", "y"])}
    buf = io.StringIO()
    old_rows = vector_files.CSV_ROWS, vector_files.ARROW_CSV_ROWS
    vector_files.CSV_ROWS = vector_files.ARROW_CSV_ROWS = 7  # several blocks, ending inside one
    try:
        with np.errstate(over="ignore"):
            vector_files.write_csv(buf, vectors)
    finally:
        vector_files.CSV_ROWS, vector_files.ARROW_CSV_ROWS = old_rows
    with np.errstate(over="ignore"):
        assert buf.getvalue() == _csv_reference(vectors)


def test_packed_results_read_back_with_numpy():
    from blowfish_privacy.release._ledger_blob import pack_result, unpack_result

    vec = {"cumulative": np.linspace(0.0, 5.0, 1001), "bins": np.arange(1001), "labels": np.array(["a", "b"])}
    doc, back = unpack_result(pack_result({"name": "x", "n": 3}, vec))
    assert doc == {"name": "x", "n": 3}
    assert set(back) == set(vec)
    for k, v in vec.items():
        np.testing.assert_array_equal(back[k], v)
        assert back[k].dtype == v.dtype
