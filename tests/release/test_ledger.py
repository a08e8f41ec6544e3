"""The SQLite ledger: exact, atomic, never overspent by concurrent processes."""

import signal
import sqlite3
import subprocess
import sys
import textwrap
from fractions import Fraction

import pytest

from blowfish_privacy.errors import BudgetExceededError
from blowfish_privacy.release import Ledger, LedgerError, default_ledger_path
from blowfish_privacy.release.ledger import Protection, Spend

#: A protection policy for the datasets these tests register.
P = Protection("p", "p")


def test_spend_and_summary(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.register("d", Fraction(1), P)
    led.spend("d", Fraction(1), [Spend("a", "histogram", Fraction(1, 4), "p")], spec_sha256="x")
    led.spend("d", Fraction(1), [Spend("b", "cdf", Fraction(1, 2), "p")])
    s = led.summary()["d"]
    assert s["total"] == 1 and s["spent"] == 0.75 and s["remaining"] == 0.25
    assert [e["release"] for e in s["entries"]] == ["a", "b"]
    assert s["entries"][0]["epsilon_exact"] == "1/4" and s["entries"][0]["spec_sha256"] == "x"
    assert led.remaining("d") == Fraction(1, 4) and led.remaining("other") is None


def test_overspend_is_refused_and_records_nothing(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.register("d", Fraction(1), P)
    led.spend("d", Fraction(1), [Spend("a", "k", Fraction(3, 4), "p")])
    with pytest.raises(BudgetExceededError, match="only 0.25 of 1 remains"):
        led.spend("d", Fraction(1), [Spend("b", "k", Fraction(1, 8), "p"), Spend("c", "k", Fraction(1, 4), "p")])
    assert [e["release"] for e in led.summary()["d"]["entries"]] == ["a"]
    led.spend("d", Fraction(1), [Spend("b", "k", Fraction(1, 4), "p")])  # exactly the rest fits
    assert led.remaining("d") == 0


def test_total_cannot_be_changed(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.register("d", Fraction(1), P)
    led.spend("d", Fraction(1), [Spend("a", "k", Fraction(1, 2), "p")])
    with pytest.raises(LedgerError, match="records a total budget of 1, the spec says 2"):
        led.spend("d", Fraction(2), [Spend("b", "k", Fraction(1, 2), "p")])
    assert led.remaining("d") == Fraction(1, 2)


def test_not_a_ledger(tmp_path):
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(LedgerError, match="not a usable SQLite budget ledger"):
        Ledger(bad)


def test_default_path_follows_xdg(monkeypatch, tmp_path):
    if sys.platform in ("win32", "darwin"):
        pytest.skip("XDG applies on Linux and other Unix")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_ledger_path() == tmp_path / "blowfish-privacy" / "ledger.sqlite"


_WORKER = textwrap.dedent("""
    import sys
    from fractions import Fraction
    from blowfish_privacy.errors import BudgetExceededError
    from blowfish_privacy.release.ledger import Ledger, Protection, Spend
    path, k = sys.argv[1], int(sys.argv[2])
    led = Ledger(path)
    led.register("shared", Fraction(1), Protection("p", "p"))  # the same registration from every process
    ok = 0
    for i in range(10):
        try:
            led.spend("shared", Fraction(1), [Spend(f"p{k}-{i}", "histogram", Fraction(1, 30), "p")])
            ok += 1
        except BudgetExceededError:
            pass
    print("OK", ok)
""")


@pytest.mark.slow
def test_eight_concurrent_processes_never_overspend(tmp_path):
    path = tmp_path / "shared.sqlite"
    Ledger(path)
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER, str(path), str(k)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for k in range(8)]
    granted = 0
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        granted += int(out.split("OK")[-1])
    # 80 attempts of 1/30 against a total of 1: exactly 30 can succeed
    s = Ledger(path).summary()["shared"]
    assert granted == 30 == len(s["entries"])
    assert Fraction(s["spent_exact"]) == 1


_KILLED = textwrap.dedent("""
    import os, signal, sys
    from fractions import Fraction
    from blowfish_privacy.release.ledger import Ledger
    led = Ledger(sys.argv[1])
    con = led._connect()
    con.execute("BEGIN IMMEDIATE")
    con.execute("INSERT INTO spends (dataset, release, kind, epsilon, policy, spec_sha256, time) "
                "VALUES ('d', 'half-done', 'k', '1/2', 'p', '', 'now')")
    os.kill(os.getpid(), signal.SIGKILL)
""")


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_process_killed_mid_spend_leaves_the_ledger_consistent(tmp_path):
    path = tmp_path / "l.sqlite"
    led = Ledger(path)
    led.register("d", Fraction(1), P)
    led.spend("d", Fraction(1), [Spend("before", "k", Fraction(1, 4), "p")])
    p = subprocess.run([sys.executable, "-c", _KILLED, str(path)], capture_output=True, text=True, timeout=120)
    assert p.returncode == -signal.SIGKILL
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()
    s = Ledger(path).summary()["d"]
    assert [e["release"] for e in s["entries"]] == ["before"]
    led.spend("d", Fraction(1), [Spend("after", "k", Fraction(3, 4), "p")])  # the lock was released
    assert Ledger(path).remaining("d") == 0


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
@pytest.mark.parametrize("delay", [0.5, 1.5, 3.0])
def test_release_killed_at_any_moment_spends_all_or_nothing(workdir, delay):
    """Kill `blowfish release` at some moment: the ledger holds either all of its spends or none."""
    import time

    ledger = workdir / "l.sqlite"
    p = subprocess.Popen([sys.executable, "-m", "blowfish_privacy.cli", "release", str(workdir / "spec.toml"),
                          "--ledger", str(ledger), "--new-ledger", "--out", str(workdir / "out"), "--quiet"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=60)
    if not ledger.exists():
        return  # killed before the ledger was opened: nothing spent, nothing written
    con = sqlite3.connect(ledger)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()
    entries = Ledger(ledger).summary().get("people", {"entries": []})["entries"]
    assert len(entries) in (0, 2)
    if not entries and (workdir / "out").exists():
        assert not list((workdir / "out").glob("*.json"))  # no result without its spend


def test_parallel_group_costs_its_maximum_and_is_closed(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    led.register("d", Fraction(1), P)
    led.spend("d", Fraction(1), [Spend("a", "k", Fraction(1, 2), "p", "g@1"), Spend("b", "k", Fraction(1, 4), "p", "g@1"),
                                 Spend("c", "k", Fraction(1, 8), "p")])
    assert led.remaining("d") == Fraction(3, 8)
    with pytest.raises(LedgerError, match="parallel group 'g@1' is already recorded"):
        led.spend("d", Fraction(1), [Spend("late", "k", Fraction(1, 8), "p", "g@1")])
    with pytest.raises(BudgetExceededError):
        led.spend("d", Fraction(1), [Spend("x", "k", Fraction(1, 2), "p", "h@2"), Spend("y", "k", Fraction(1, 2), "p", "h@2")])
    assert led.remaining("d") == Fraction(3, 8)
