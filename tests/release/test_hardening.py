"""Every paid-for release can be written and exported, every input is bounded, every error is one line.

Each test reproduces a way an earlier version crashed, hung, lost a paid-for
result or let an edited ledger pass.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import stat
import subprocess
import sys
import time

import pytest
from release_specs import BASE

from blowfish_privacy.cli import main
from blowfish_privacy.errors import LedgerError, SpecError
from blowfish_privacy.release import Ledger, parse_spec
from blowfish_privacy.release.spec import MAX_NAME_BYTES, MAX_RELEASES


def _release(workdir, *extra, spec="spec.toml"):
    return main(["release", str(workdir / spec), "--ledger", str(workdir / "l.sqlite"), "--new-ledger", "--out",
                 str(workdir / "o"), "--no-plots", "--quiet", *extra])


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("blowfish: error:") and len(err.strip().splitlines()) == 1, err
    return err


# -- release names -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["a\u0000b", "x" * (MAX_NAME_BYTES + 1), "é" * 101, "summary", "SUMMARY", "spec",
                                  "tab\there", " lead", "trail ", "new\nline", "a/b", "..", ".hidden"])
def test_bad_release_names_are_refused_before_anything(workdir, capsys, name):
    text = BASE.replace('name = "age-cdf"', f'name = "{name.encode("unicode_escape").decode()}"'.replace("\\x", "\\u00"))
    (workdir / "spec.toml").write_text(text)
    assert _release(workdir) == 2
    assert "release[0].name" in _one_line_error(capsys)
    assert Ledger(workdir / "l.sqlite").summary() == {} and not (workdir / "o").exists()


def test_names_differing_only_in_case_are_refused(workdir, capsys):
    (workdir / "spec.toml").write_text(BASE.replace('name = "age-sex"', 'name = "AGE-CDF"'))
    assert _release(workdir) == 2 and "ignoring case" in _one_line_error(capsys)


def test_a_name_of_200_bytes_is_written_and_exported(workdir, capsys):
    name = "n" * MAX_NAME_BYTES
    (workdir / "spec.toml").write_text(BASE.replace('name = "age-cdf"', f'name = "{name}"'))
    assert _release(workdir) == 0 and (workdir / "o" / f"{name}.json").exists()
    run = Ledger(workdir / "l.sqlite").runs()[0]["run"]
    assert main(["ledger", "export", run, str(workdir / "l.sqlite"), "--out", str(workdir / "again")]) == 0
    assert (workdir / "again" / f"{name}.json").exists()


# -- ledger export ---------------------------------------------------------------------------------------
def test_export_looks_runs_up_without_wildcards_and_fails_in_one_line(workdir, capsys):
    assert _release(workdir) == 0
    led = workdir / "l.sqlite"
    run = Ledger(led).runs()[0]["run"]
    for pattern in ("%", "_" * len(run), run[:3] + "%"):
        capsys.readouterr()
        assert main(["ledger", "export", pattern, str(led), "--out", str(workdir / "x")]) == 2
        assert "has no run" in _one_line_error(capsys)
    (workdir / "afile").write_text("x")
    capsys.readouterr()
    assert main(["ledger", "export", run, str(led), "--out", str(workdir / "afile" / "sub")]) == 2
    _one_line_error(capsys)


# -- interrupts, deep TOML, a byte-order mark, where lists ----------------------------------------------
def test_ctrl_c_is_one_line_exit_130_and_spends_nothing(workdir, capsys, monkeypatch):
    from blowfish_privacy.release import local_engine

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(local_engine.LocalEngine, "aggregate", interrupted)
    assert _release(workdir) == 130
    err = capsys.readouterr().err
    assert err.startswith("blowfish: interrupted") and len(err.strip().splitlines()) == 1
    assert Ledger(workdir / "l.sqlite").summary() == {}


def test_deeply_nested_toml_is_one_line(workdir, capsys):
    (workdir / "spec.toml").write_text(BASE + "\n[run]\nx = " + "[" * 5000 + "]" * 5000 + "\n")
    assert _release(workdir) == 2
    assert "nested too deeply" in _one_line_error(capsys)


def test_a_spec_with_a_byte_order_mark_is_read(workdir):
    (workdir / "spec.toml").write_bytes(b"\xef\xbb\xbf" + BASE.encode("utf-8"))
    assert _release(workdir) == 0


def test_where_with_an_interval_is_refused_in_one_line(workdir, capsys):
    text = BASE.replace('release("age-sex"', "").replace('epsilon = 0.25\n', 'epsilon = 0.25\nwhere = { age = [10, 20] }\n', 1)
    (workdir / "spec.toml").write_text(text)
    assert _release(workdir) == 2
    assert "where.age" in _one_line_error(capsys)


def test_too_many_releases_are_refused_at_once(workdir, capsys):
    one = '\n[[release]]\nname = "r{k}"\nkind = "histogram"\nattributes = ["age"]\npolicy = "near"\nepsilon = 0.0001\n'
    (workdir / "spec.toml").write_text(BASE + "".join(one.format(k=k) for k in range(MAX_RELEASES)))
    start = time.perf_counter()
    assert _release(workdir) == 2
    assert f"at most {MAX_RELEASES}" in _one_line_error(capsys)
    assert time.perf_counter() - start < 30  # refused before any release is planned (a generous bound)


# -- special files, torn reads --------------------------------------------------------------------------
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_as_the_dataset_is_refused_before_it_is_opened(workdir, capsys):
    os.remove(workdir / "people.csv")
    os.mkfifo(workdir / "people.csv")
    assert _release(workdir) == 2  # would block forever if it opened the pipe
    assert "not a regular file" in _one_line_error(capsys)


def test_a_file_rewritten_while_it_is_read_is_refused_before_the_spend(workdir, capsys, monkeypatch):
    from blowfish_privacy.release import local_engine

    original = local_engine.LocalEngine.aggregate

    def rewrite_midway(self, spec, needs):
        out = original(self, spec, needs)
        path = workdir / "people.csv"
        path.write_text(path.read_text() + "30,f,300\n")
        return out

    monkeypatch.setattr(local_engine.LocalEngine, "aggregate", rewrite_midway)
    assert _release(workdir) == 2
    assert "changed while they were read" in _one_line_error(capsys)
    assert Ledger(workdir / "l.sqlite").summary() == {}


def test_max_line_bytes_is_validated(workdir):
    with pytest.raises(SpecError, match="dataset.max_line_bytes"):
        parse_spec(BASE.replace('id = "people"', 'id = "people"\nmax_line_bytes = 10'), str(workdir / "s.toml"),
                   base_dir=workdir)
    spec = parse_spec(BASE.replace('id = "people"', 'id = "people"\nmax_line_bytes = 4096'), str(workdir / "s.toml"),
                      base_dir=workdir)
    assert spec.max_line_bytes == 4096


# -- a tampered ledger -----------------------------------------------------------------------------------
@pytest.mark.parametrize("edit", [
    "UPDATE spends SET epsilon = '-5' WHERE seq = 1",
    "UPDATE spends SET epsilon = 'lots' WHERE seq = 1",
    "UPDATE spends SET epsilon = '1/1000' WHERE seq = 1",
    "DELETE FROM spends WHERE seq = (SELECT max(seq) FROM spends)",
    "DELETE FROM spends WHERE seq = 1",
    "UPDATE datasets SET total = '100'",
    "UPDATE spends SET policy = 'anything' WHERE seq = 2",
])
def test_an_edited_ledger_is_refused_as_damaged(workdir, capsys, edit):
    assert _release(workdir) == 0
    led = workdir / "l.sqlite"
    con = sqlite3.connect(led)
    con.execute("PRAGMA foreign_keys = OFF")
    con.execute(edit)
    con.commit()
    con.close()
    with pytest.raises(LedgerError, match="damaged"):
        Ledger(led).summary()
    capsys.readouterr()
    assert main(["ledger", str(led)]) == 2 and "damaged" in _one_line_error(capsys)
    assert _release(workdir, "--overwrite") == 2 and "damaged" in _one_line_error(capsys)


def test_a_corrupt_stored_result_is_one_line(workdir, capsys):
    assert _release(workdir) == 0
    led = workdir / "l.sqlite"
    con = sqlite3.connect(led)
    con.execute("UPDATE results SET payload = x'504b0304deadbeef'")
    con.commit()
    con.close()
    run = Ledger(led).runs()[0]["run"]
    capsys.readouterr()
    assert main(["ledger", "export", run, str(led), "--out", str(workdir / "again")]) == 2
    err = _one_line_error(capsys)
    assert "damaged" in err and "pickle" not in err


# -- permissions and symlinks -------------------------------------------------------------------------------
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_the_ledger_is_private_to_its_owner(tmp_path):
    path = tmp_path / "new-folder" / "l.sqlite"
    Ledger(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
def test_outputs_replace_a_planted_symlink_never_follow_it(workdir):
    victim = workdir / "victim.txt"
    victim.write_text("untouched")
    (workdir / "o").mkdir()
    os.symlink(victim, workdir / "o" / "age-cdf.json")
    assert _release(workdir, "--overwrite") == 0
    assert victim.read_text() == "untouched"
    assert not (workdir / "o" / "age-cdf.json").is_symlink()


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
def test_demo_replaces_planted_symlinks(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    out = tmp_path / "blowfish-demo"
    out.mkdir()
    for name in ("spec.toml", "demo-comparison.png", "summary.json"):
        os.symlink(victim, out / name)
    # links the demo did not write: refused as the user's files, nothing followed
    assert main(["demo", "--out", str(out), "--quiet"]) == 2
    assert victim.read_text() == "untouched"
    # told to overwrite: the links are replaced by the demo's files, never written through
    assert main(["demo", "--out", str(out), "--quiet", "--overwrite"]) == 0
    assert victim.read_text() == "untouched" and not (out / "summary.json").is_symlink()


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGINT") or sys.platform == "win32", reason="needs SIGINT")
@pytest.mark.parametrize("delay", [0.0, 0.05, 0.2, 0.5])
def test_release_interrupted_at_any_moment_spends_all_or_nothing(workdir, delay):
    ledger = workdir / "l.sqlite"
    p = subprocess.Popen([sys.executable, "-m", "blowfish_privacy.cli", "release", str(workdir / "spec.toml"),
                          "--ledger", str(ledger), "--new-ledger", "--out", str(workdir / "out"), "--quiet"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # once the command has started (its ledger is open; an interrupt while Python itself starts up is
    # Python's own), interrupt it at some moment of the run
    deadline = time.monotonic() + 60
    while not ledger.exists() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(delay)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    assert p.returncode in (0, 130), err
    ours = [line for line in err.splitlines() if not line.startswith(("ninja:", "-- ", "Running cmake"))]
    assert "Traceback" not in err and len(ours) <= 1, err  # (an editable install's rebuild lines aside)
    if ledger.exists():
        entries = Ledger(ledger).summary().get("people", {"entries": []})["entries"]
        assert len(entries) in (0, 2)
