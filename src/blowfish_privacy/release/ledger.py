"""The privacy-budget ledger: one SQLite row per spend, atomic across processes.

A spend is one ``BEGIN IMMEDIATE`` transaction: it takes SQLite's write
lock, reads what was already spent on the dataset, refuses (rolling back,
spending nothing) if the new total would pass the dataset's budget, and
inserts one row per release.  Concurrent processes queue on the lock, so
together they can never overspend.  The caller commits the spend *before*
computing or writing any result: a crash can waste budget but never
release a result the ledger does not know about.

Epsilons are stored exactly, as fraction strings (``"1/10"``), and summed
as :class:`fractions.Fraction`.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path

from ..accountant import composed_cost
from ..errors import BudgetExceededError

__all__ = ["Ledger", "default_ledger_path", "LedgerError"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS datasets (
    id TEXT PRIMARY KEY,
    total TEXT NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS spends (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    dataset TEXT NOT NULL REFERENCES datasets(id),
    release TEXT NOT NULL,
    kind TEXT NOT NULL,
    epsilon TEXT NOT NULL,
    policy TEXT NOT NULL,
    spec_sha256 TEXT NOT NULL,
    time TEXT NOT NULL,
    parallel TEXT
);
"""


class LedgerError(ValueError):
    """The ledger cannot be used as asked (wrong file, conflicting budget)."""


def default_ledger_path() -> Path:
    """``ledger.sqlite`` in the user's data directory for blowfish-privacy.

    Linux and other Unix: ``$XDG_DATA_HOME`` or ``~/.local/share``; macOS:
    ``~/Library/Application Support``; Windows: ``%LOCALAPPDATA%``.
    """
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "blowfish-privacy" / "ledger.sqlite"


def _frac_text(f: Fraction) -> str:
    return str(f)


def _show(f: Fraction) -> str:
    return f"{float(f):.6g}"


@dataclass(frozen=True)
class Spend:
    """One planned spend: a release name, its kind, epsilon and policy description."""

    release: str
    kind: str
    epsilon: Fraction
    policy: str
    parallel: str | None = None  # spends sharing a parallel group id cost their maximum


def _cost(rows) -> Fraction:
    """Budget used by ``(epsilon, parallel group or None)`` rows (:func:`accountant.composed_cost`)."""
    return composed_cost(rows)


class Ledger:
    """A SQLite budget ledger at ``path`` (created with its folder when missing)."""

    def __init__(self, path=None, *, timeout: float = 60.0) -> None:
        self.path = Path(path) if path is not None else default_ledger_path()
        self.timeout = timeout
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as con:
                con.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise LedgerError(f"ledger {str(self.path)!r} is not a usable SQLite budget ledger: {exc}") from None
        except OSError as exc:
            raise LedgerError(f"ledger {str(self.path)!r} cannot be created: {exc}") from None

    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: we issue BEGIN IMMEDIATE / COMMIT ourselves.
        con = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        con.execute("PRAGMA foreign_keys = ON")
        return con

    # -- spending ---------------------------------------------------------------
    def spend(self, dataset: str, total: Fraction, spends: list[Spend], *, spec_sha256: str = "") -> None:
        """Record ``spends`` on ``dataset`` atomically, or raise and record nothing.

        ``total`` is the dataset's budget: recorded on first use; a later,
        different total is refused (a budget cannot be raised by editing
        a spec).

        Raises
        ------
        BudgetExceededError
            If the spends would take the dataset past its total.
        LedgerError
            If the ledger holds a different total for the dataset.
        """
        total = Fraction(total)
        need = _cost((s.epsilon, s.parallel) for s in spends)
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        con = self._connect()
        try:
            con.execute("BEGIN IMMEDIATE")
            try:
                row = con.execute("SELECT total FROM datasets WHERE id = ?", (dataset,)).fetchone()
                if row is None:
                    con.execute("INSERT INTO datasets (id, total, created) VALUES (?, ?, ?)",
                                (dataset, _frac_text(total), now))
                elif Fraction(row[0]) != total:
                    raise LedgerError(
                        f"dataset {dataset!r}: the ledger {str(self.path)!r} records a total budget of "
                        f"{_show(Fraction(row[0]))}, the spec says {_show(total)}; a dataset's total cannot change"
                    )
                spent = _cost(con.execute("SELECT epsilon, parallel FROM spends WHERE dataset = ?", (dataset,)))
                # a parallel group is closed once recorded: later spends cannot join it
                for group in {s.parallel for s in spends if s.parallel is not None}:
                    if con.execute("SELECT 1 FROM spends WHERE dataset = ? AND parallel = ?",
                                   (dataset, group)).fetchone():
                        raise LedgerError(f"dataset {dataset!r}: parallel group {group!r} is already recorded")
                if spent + need > total:
                    raise BudgetExceededError(
                        f"dataset {dataset!r}: the releases need epsilon {_show(need)} but only "
                        f"{_show(total - spent)} of {_show(total)} remains (spent {_show(spent)}); nothing was spent"
                    )
                con.executemany(
                    "INSERT INTO spends (dataset, release, kind, epsilon, policy, spec_sha256, time, parallel) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [(dataset, s.release, s.kind, _frac_text(s.epsilon), s.policy, spec_sha256, now, s.parallel)
                     for s in spends],
                )
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")
        finally:
            con.close()

    # -- reading ----------------------------------------------------------------
    def summary(self) -> dict:
        """``{dataset: {"total", "spent", "remaining", "entries": [...]}}`` (floats, plus exact strings)."""
        con = self._connect()
        try:
            out = {}
            for ds, total in con.execute("SELECT id, total FROM datasets ORDER BY id"):
                entries = []
                rows = []
                for seq, rel, kind, eps, pol, sha, t, par in con.execute(
                    "SELECT seq, release, kind, epsilon, policy, spec_sha256, time, parallel FROM spends "
                    "WHERE dataset = ? ORDER BY seq", (ds,)):
                    e = Fraction(eps)
                    rows.append((e, par))
                    entries.append({"seq": seq, "release": rel, "kind": kind, "epsilon": float(e),
                                    "epsilon_exact": eps, "policy": pol, "spec_sha256": sha, "time": t,
                                    "parallel_group": par})
                spent = _cost(rows)
                tot = Fraction(total)
                out[ds] = {"total": float(tot), "spent": float(spent), "remaining": float(tot - spent),
                           "total_exact": str(tot), "spent_exact": str(spent), "remaining_exact": str(tot - spent),
                           "entries": entries}
            return out
        finally:
            con.close()

    def remaining(self, dataset: str) -> Fraction | None:
        """Exact budget left for ``dataset``, None if the ledger has never seen it."""
        s = self.summary().get(dataset)
        return None if s is None else Fraction(s["remaining_exact"])

    def text(self) -> str:
        """A human-readable account of every dataset."""
        data = self.summary()
        if not data:
            return f"ledger {self.path}: no spends recorded"
        lines = [f"ledger {self.path}"]
        for ds, d in data.items():
            lines.append(f"\ndataset {ds!r}: total {d['total']:.6g}, spent {d['spent']:.6g}, "
                         f"remaining {d['remaining']:.6g}")
            for e in d["entries"]:
                par = f"; parallel group {e['parallel_group']}" if e["parallel_group"] else ""
                lines.append(f"  {e['time']}  eps {e['epsilon']:<10.6g} {e['release']} ({e['kind']}; {e['policy']}{par})")
        return "\n".join(lines)

    def json(self) -> str:
        return json.dumps(self.summary(), indent=2)
