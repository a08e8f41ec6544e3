"""The privacy-budget ledger: one SQLite row per spend, atomic across processes.

A spend is one ``BEGIN IMMEDIATE`` transaction: it takes SQLite's write
lock, reads what was already spent on the dataset, refuses (rolling back,
spending nothing) if the new total would pass the dataset's budget, and
inserts one row per release *with that release's results* (compressed).
Concurrent processes queue on the lock, so together they can never
overspend.  The caller measures in memory, spends, then exports files from
what the ledger holds: a crash or a failed write after the spend loses no
paid-for result (``blowfish ledger export RUN``), and no result exists that
the ledger does not know about.

The file carries a schema version (``PRAGMA user_version``): a newer one is
refused, an older one migrated.  An explicit path that does not exist is an
error unless the caller asks to create it (``create=True``; the command
line's ``--new-ledger`` or ``blowfish ledger init``), so a typo cannot
start a fresh, full budget.

Epsilons are stored exactly, as fraction strings (``"1/10"``), and summed
as :class:`fractions.Fraction`.

One guarantee per dataset.  A dataset is registered once, with its total
epsilon and its *protection policy* (a secret graph on its whole domain,
:class:`Protection`); every spend on it is admitted only for releases whose
own policy protects every pair the dataset's does (decided from the spec,
before any data are read), so the total is sequential composition under
that one policy.  Anything that reveals the data exactly (a seeded test
run, a domain check with ``invalid = "error"``, a release marked
``public``) is a *disclosure*: a row of its own (epsilon 0, not private),
recorded before the data are read and refused when the dataset was
registered with ``allow_disclosures = false`` (the default).

Each private spend carries the *data version*: a keyed hash (HMAC-SHA256
under a random key kept in the ledger) of the bytes of the input.  The same
bytes under two dataset ids are refused; new bytes under one id are a new
data version, shown by ``blowfish ledger``.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets as _token
import sqlite3
import sys
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path

from ..accountant import composed_cost
from ..errors import BudgetExceededError, LedgerError
from ._ledger_blob import unpack_result
from ._ledger_file import SCHEMA_VERSION, put_dataset, put_spend, verify, write_schema

#: unpack_result (with pack_result, both of :mod:`._ledger_blob`) reads the format of the results a ledger keeps.
__all__ = ["Ledger", "default_ledger_path", "LedgerError", "unpack_result", "Protection", "Spend", "Disclosure"]


@dataclass(frozen=True)
class Protection:
    """A dataset's protection policy, as the ledger keeps it.

    Attributes
    ----------
    key : str
        Canonical JSON of the secret graph and the attributes it is over
        (two specs protect a dataset the same way exactly when their keys
        are equal).
    text : str
        The policy in words, e.g. ``"near (DistanceThreshold(theta=5, metric='l1')) on ['age']"``.
    """

    key: str
    text: str


@dataclass(frozen=True)
class Disclosure:
    """An exact, non-private disclosure to record: which release (or run) and what it reveals."""

    release: str
    kind: str
    what: str


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
    disclosure: str | None = None  # what an exact (epsilon 0, not private) release reveals


class Ledger:
    """A SQLite budget ledger at ``path``.

    Parameters
    ----------
    path : path-like, optional
        Default: :func:`default_ledger_path`.
    create : bool
        Create the file (and its folder) when it does not exist; when False
        a missing file is a :class:`LedgerError` naming it.  A new ledger is
        built in a temporary file and linked into place, so a kill at any
        moment leaves either no ledger or a complete one.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, create: bool = True,
                 timeout: float = 60.0) -> None:
        self.path = Path(path) if path is not None else default_ledger_path()
        self.timeout = timeout
        where = str(self.path)
        exists = self.path.exists()
        if not exists and not create:
            raise LedgerError(f"ledger {where!r} does not exist; check the path, or create a new ledger with "
                              "--new-ledger (blowfish release) or blowfish ledger init PATH (in Python: Ledger(path))")
        if exists and self.path.is_dir():
            raise LedgerError(f"ledger {where!r} is a folder, not a ledger file")
        if exists and self.path.stat().st_size == 0:
            raise LedgerError(f"ledger {where!r} is an empty file, not a budget ledger (was it truncated?); "
                              "restore it from a backup, or remove it to start a new ledger")
        try:
            if not exists:
                if not self.path.parent.exists():  # a folder of ours: only its owner may enter
                    self.path.parent.mkdir(parents=True, mode=0o700)
                self._create_atomically()
            con = self._connect()
            try:
                self._open_schema(con)
            finally:
                con.close()
        except sqlite3.DatabaseError as exc:
            raise LedgerError(f"ledger {where!r} is not a usable SQLite budget ledger: {exc}") from None
        except OSError as exc:
            raise LedgerError(f"ledger {where!r} cannot be created: {exc.strerror or exc}") from None

    def _create_atomically(self) -> None:
        """Build the schema in a temporary file beside ``path``, then link it into place (never over a file)."""
        tmp = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex[:12]}.tmp")
        try:
            # the ledger holds every released result and the seeds of seeded tests: readable by its owner only
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600))
            con = sqlite3.connect(tmp, isolation_level=None)
            try:
                write_schema(con)
            finally:
                con.close()
            try:
                os.link(tmp, self.path)  # fails if another process created the ledger meanwhile: use theirs
            except FileExistsError:
                pass
            except OSError:  # a file system without hard links
                if not self.path.exists():
                    os.replace(tmp, self.path)
        finally:
            try:
                tmp.unlink()
            except OSError:
                pass

    def _open_schema(self, con: sqlite3.Connection) -> None:
        where = str(self.path)
        version = con.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise LedgerError(f"ledger {where!r} has schema version {version}, newer than this library's "
                              f"{SCHEMA_VERSION}; upgrade blowfish-privacy to use it")
        check = con.execute("PRAGMA quick_check").fetchone()[0]
        if check != "ok":
            raise LedgerError(f"ledger {where!r} is damaged (SQLite integrity check: {check}); restore it from a "
                              "backup")
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not {"datasets", "spends"} <= tables:
            raise LedgerError(f"ledger {where!r} is an SQLite database but not a budget ledger (tables "
                              f"{sorted(tables)})")
        if version < SCHEMA_VERSION:  # an older ledger: migrate in place
            write_schema(con)

    def _connect(self) -> sqlite3.Connection:  # noqa: D401
        # isolation_level=None: we issue BEGIN IMMEDIATE / COMMIT ourselves.
        con = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        con.execute("PRAGMA foreign_keys = ON")
        return con

    def _transaction(self, body, *, what: str):
        """Run ``body(con)`` in one ``BEGIN IMMEDIATE`` transaction; roll back on any error."""
        con = self._connect()
        try:
            con.execute("BEGIN IMMEDIATE")
            try:
                out = body(con)
            except BaseException:
                if con.in_transaction:
                    con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")
            return out
        except sqlite3.Error as exc:
            raise LedgerError(f"ledger {str(self.path)!r}: {what} was not recorded (nothing spent): {exc}") from None
        finally:
            con.close()

    # -- the dataset: registration and admission ----------------------------------
    def _dataset(self, con, dataset: str, total: Fraction, protection: Protection | None,
                 allow_disclosures: bool | None, *, register: bool, now: str) -> tuple:
        """The dataset's row ``(total, policy key, policy text, allow_disclosures)``, registered if new.

        Refuses a total, a protection policy or a disclosure setting that
        differ from what the dataset was registered with.
        """
        verify(con, str(self.path))  # an edited ledger decides nothing
        row = con.execute("SELECT total, policy, policy_text, allow_disclosures FROM datasets WHERE id = ?",
                          (dataset,)).fetchone()
        where = str(self.path)
        if row is None:
            if protection is None:
                raise LedgerError(f"dataset {dataset!r} is not registered in the ledger {where!r}; register it "
                                  "with its total epsilon and protection policy (Ledger.register, or a run of its "
                                  "spec)")
            allow = bool(allow_disclosures)
            if register:
                put_dataset(con, (dataset, _frac_text(total), now, protection.key, protection.text, int(allow), 0))
            return (total, protection.key, protection.text, allow)
        rec_total, key, text, allow = Fraction(row[0]), row[1], row[2], bool(row[3])
        if rec_total != total:
            raise LedgerError(
                f"dataset {dataset!r}: the ledger {where!r} records a total budget of {_show(rec_total)}, the spec "
                f"says {_show(total)}; a dataset's total cannot change")
        if protection is not None:
            if key is None:  # registered by an earlier version: the policy is fixed now, once
                if register:
                    # the spends recorded so far were made under their own policies: marked, never counted as
                    # verified under this one
                    row = con.execute("SELECT id, total, created, policy, policy_text, allow_disclosures FROM "
                                      "datasets WHERE id = ?", (dataset,)).fetchone()
                    last = con.execute("SELECT coalesce(max(seq), 0) FROM spends WHERE dataset = ?",
                                       (dataset,)).fetchone()[0]
                    put_dataset(con, row[:3] + (protection.key, protection.text, row[5], last), update=True)
                key, text = protection.key, protection.text
            elif key != protection.key:
                raise LedgerError(
                    f"dataset {dataset!r}: the ledger {where!r} protects it under policy {text}; the spec declares "
                    f"{protection.text}; a dataset's protection policy is fixed when it is registered (every "
                    "release must protect the registered pairs: set dataset.protect to a policy equal to it)")
        if allow_disclosures is not None and bool(allow_disclosures) != allow:
            raise LedgerError(
                f"dataset {dataset!r}: the ledger {where!r} registered it with allow_disclosures = "
                f"{str(allow).lower()}, the spec says {str(bool(allow_disclosures)).lower()}; the setting is fixed "
                "when the dataset is registered")
        return (rec_total, key, text, allow)

    def register(self, dataset: str, total: Fraction | float | str, protection: Protection, *,
                 allow_disclosures: bool = False) -> None:
        """Register ``dataset`` with its total epsilon and protection policy (once; the same again is a no-op).

        Raises
        ------
        LedgerError
            If the dataset is registered with another total, policy or
            disclosure setting.
        """
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self._transaction(lambda con: self._dataset(con, dataset, Fraction(total), protection, allow_disclosures,
                                                    register=True, now=now), what="the registration")

    def admit(self, dataset: str, total: Fraction | float | str, protection: Protection | None, spends: list[Spend], *,
              allow_disclosures: bool | None = None, disclosures: list[Disclosure] = (), spec_sha256: str = "",
              run: str = "") -> None:
        """Everything a run must pass before its data are read, decided from the ledger alone.

        Checks the dataset's registration (registering a new dataset when
        there are disclosures to record; else its first spend does); refuses
        (recording nothing) a
        total, protection policy or disclosure setting that differs from its
        registration, ``spends`` that do not fit in the remaining budget,
        and disclosures on a dataset that does not allow them.  Then records
        ``disclosures`` (each an exact, non-private entry), whatever the
        run's later outcome.

        Raises
        ------
        BudgetExceededError
            If ``spends`` need more than the remaining budget.
        LedgerError
            On a registration mismatch or a refused disclosure.
        """
        total = Fraction(total)
        need = composed_cost((s.epsilon, s.parallel) for s in spends if s.disclosure is None)
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")

        def body(con):
            # a new dataset is registered here only when a disclosure must be recorded now; otherwise with
            # its first spend (a run refused later leaves no trace)
            _, _, text, allow = self._dataset(con, dataset, total, protection, allow_disclosures,
                                              register=bool(disclosures), now=now)
            exact = list(disclosures) + [Disclosure(s.release, s.kind, s.disclosure) for s in spends
                                         if s.disclosure is not None]
            if exact and not allow:
                raise LedgerError(
                    f"dataset {dataset!r} does not allow disclosures (registered with allow_disclosures = false): "
                    f"{exact[0].release!r} would reveal the data exactly ({exact[0].what}); nothing was read or "
                    "spent. Register a dataset with dataset.allow_disclosures = true for test runs")
            self._check_budget(con, dataset, total, need, spends)
            for d in disclosures:
                put_spend(con, (dataset, d.release, d.kind, "0", text or "", spec_sha256, now, None, d.what, None))

        self._transaction(body, what="the admission")

    def _check_budget(self, con, dataset: str, total: Fraction, need: Fraction, spends) -> None:
        spent = composed_cost(con.execute("SELECT epsilon, parallel FROM spends WHERE dataset = ?", (dataset,)))
        # a parallel group is closed once recorded: later spends cannot join it
        for group in {s.parallel for s in spends if s.parallel is not None}:
            if con.execute("SELECT 1 FROM spends WHERE dataset = ? AND parallel = ?", (dataset, group)).fetchone():
                raise LedgerError(f"dataset {dataset!r}: parallel group {group!r} is already recorded")
        if spent + need > total:
            raise BudgetExceededError(
                f"dataset {dataset!r}: the releases need epsilon {_show(need)} but only "
                f"{_show(total - spent)} of {_show(total)} remains (spent {_show(spent)}); nothing was spent")

    # -- data versions -------------------------------------------------------------
    def fingerprint_key(self) -> bytes:
        """The ledger's random key for data versions (made once, kept in the ledger)."""
        def body(con):
            row = con.execute("SELECT value FROM meta WHERE key = 'fingerprint_key'").fetchone()
            if row is None:
                value = _token.token_hex(32)
                con.execute("INSERT INTO meta (key, value) VALUES ('fingerprint_key', ?)", (value,))
                return value
            return row[0]
        return bytes.fromhex(self._transaction(body, what="the data-version key"))

    def data_version(self, digest: bytes) -> str:
        """The data version of input bytes whose plain SHA-256 is ``digest`` (keyed by the ledger's key)."""
        return hmac.new(self.fingerprint_key(), digest, "sha256").hexdigest()

    def check_data_version(self, dataset: str, version: str) -> None:
        """Refuse data whose version is recorded under another dataset id (naming that id).

        Raises
        ------
        LedgerError
            If another dataset spent on the same data.
        """
        con = self._connect()
        try:
            verify(con, str(self.path))
            other = con.execute("SELECT dataset FROM spends WHERE data_version = ? AND dataset != ? LIMIT 1",
                                (version, dataset)).fetchone()
        finally:
            con.close()
        if other is not None:
            raise LedgerError(_same_data(dataset, other[0]))

    # -- spending ---------------------------------------------------------------
    def spend(self, dataset: str, total: Fraction, spends: list[Spend], *, spec_sha256: str = "",
              results: list | None = None, run: str = "", protection: Protection | None = None,
              data_version: str | None = None, allow_disclosures: bool | None = None) -> None:
        """Record ``spends`` on ``dataset`` atomically, or raise and record nothing.

        ``total`` is the dataset's budget and ``protection`` its policy:
        recorded when the dataset is new (a new dataset needs both); a
        later, different total or policy is refused.  ``results`` (one
        :func:`._ledger_blob.pack_result` blob per spend, or None) are stored in the same
        transaction under the id ``run``; ``allow_disclosures`` as in
        :meth:`register`.  ``data_version`` (from
        :meth:`data_version`) is stored with each spend; the same version
        recorded under another dataset is refused.

        Raises
        ------
        BudgetExceededError
            If the spends would take the dataset past its total.
        LedgerError
            If the ledger holds a different total or policy for the
            dataset, or the data were recorded under another dataset.
        """
        total = Fraction(total)
        need = composed_cost((s.epsilon, s.parallel) for s in spends if s.disclosure is None)
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")

        def body(con):
            _, _, _, allow = self._dataset(con, dataset, total, protection, allow_disclosures, register=True,
                                           now=now)
            if any(s.disclosure is not None for s in spends) and not allow:
                raise LedgerError(f"dataset {dataset!r} does not allow disclosures (allow_disclosures = false); "
                                  "nothing was spent")
            if data_version is not None:
                other = con.execute("SELECT dataset FROM spends WHERE data_version = ? AND dataset != ? LIMIT 1",
                                    (data_version, dataset)).fetchone()
                if other is not None:
                    raise LedgerError(_same_data(dataset, other[0]))
            self._check_budget(con, dataset, total, need, spends)
            blobs = results if results is not None else [None] * len(spends)
            if len(blobs) != len(spends):
                raise ValueError(f"results must hold one entry per spend ({len(spends)}), got {len(blobs)}")
            for sp, blob in zip(spends, blobs):
                eps = Fraction(0) if sp.disclosure is not None else sp.epsilon
                seq = put_spend(con, (dataset, sp.release, sp.kind, _frac_text(eps), sp.policy, spec_sha256, now,
                                       sp.parallel, sp.disclosure, data_version))
                if blob is not None:
                    con.execute("INSERT INTO results (spend_seq, run, release, payload) VALUES (?, ?, ?, ?)",
                                (seq, run, sp.release, sqlite3.Binary(blob)))

        self._transaction(body, what="the spend")

    # -- results ------------------------------------------------------------------
    def runs(self) -> list[dict]:
        """Every run with stored results: ``{"run", "dataset", "time", "releases"}``, oldest first."""
        con = self._connect()
        try:
            out = {}
            for run, ds, t, rel in con.execute(
                    "SELECT r.run, s.dataset, s.time, r.release FROM results r JOIN spends s ON s.seq = r.spend_seq "
                    "ORDER BY s.seq"):
                out.setdefault(run, {"run": run, "dataset": ds, "time": t, "releases": []})["releases"].append(rel)
            return list(out.values())
        finally:
            con.close()

    def results(self, run: str) -> list[tuple[dict, dict]]:
        """The stored ``(doc, vectors)`` of every release of ``run`` (a prefix of its id suffices)."""
        con = self._connect()
        try:
            # a prefix of the id, compared as text (no wildcards)
            ids = sorted({r[0] for r in con.execute("SELECT run FROM results WHERE substr(run, 1, ?) = ?",
                                                     (len(run), run))})
            if not ids:
                raise LedgerError(f"ledger {str(self.path)!r} has no run {run!r}; list them with blowfish ledger "
                                  f"show {self.path}")
            if len(ids) > 1:
                raise LedgerError(f"run {run!r} is ambiguous in ledger {str(self.path)!r}: {ids}")
            rows = con.execute("SELECT payload FROM results WHERE run = ? ORDER BY spend_seq", (ids[0],)).fetchall()
            out = []
            for r in rows:
                try:
                    out.append(unpack_result(bytes(r[0])))
                except Exception:  # any damage to the stored blob (zip, npy, JSON) is one answer
                    raise LedgerError(f"ledger {str(self.path)!r} is damaged: a stored result of run {ids[0]!r} "
                                      "cannot be read; restore the ledger from a backup") from None
            return out
        finally:
            con.close()

    # -- reading ----------------------------------------------------------------
    def summary(self) -> dict:
        """``{dataset: {"total", "spent", "remaining", "policy", "guarantee", "disclosures", "entries": [...]}}``.

        Floats, plus exact strings.  ``guarantee`` states the composed
        guarantee in words ("epsilon X spent of Y under policy P");
        ``disclosures`` counts the exact, non-private entries; each entry's
        ``data_version`` numbers the distinct inputs of the dataset (1, 2,
        ...), never the input's hash.
        """
        con = self._connect()
        try:
            verify(con, str(self.path))
            out = {}
            for ds, total, ptext, allow, before in con.execute(
                    "SELECT id, total, policy_text, allow_disclosures, unverified_before FROM datasets ORDER BY id"):
                entries = []
                rows = []
                versions: dict = {}
                for seq, rel, kind, eps, pol, sha, t, par, disc, dv, run in con.execute(
                    "SELECT s.seq, s.release, s.kind, s.epsilon, s.policy, s.spec_sha256, s.time, s.parallel, "
                    "s.disclosure, s.data_version, r.run "
                    "FROM spends s LEFT JOIN results r ON r.spend_seq = s.seq WHERE s.dataset = ? ORDER BY s.seq",
                    (ds,)):
                    e = Fraction(eps)
                    rows.append((e, par))
                    version = None if dv is None else versions.setdefault(dv, len(versions) + 1)
                    entries.append({"seq": seq, "release": rel, "kind": kind, "epsilon": float(e),
                                    "epsilon_exact": eps, "policy": pol, "spec_sha256": sha, "time": t,
                                    "parallel_group": par, "run": run,
                                    "private": disc is None,
                                    "disclosure": disc, "data_version": version,
                                    "before_registration": seq <= before})
                spent = composed_cost(rows)
                tot = Fraction(total)
                policy = ptext or "not registered (a dataset of an earlier ledger version)"
                n_disc = sum(1 for e in entries if not e["private"])
                out[ds] = {"total": float(tot), "spent": float(spent), "remaining": float(tot - spent),
                           "total_exact": str(tot), "spent_exact": str(spent), "remaining_exact": str(tot - spent),
                           "policy": policy, "allow_disclosures": bool(allow),
                           "guarantee": guarantee_text(spent, tot, policy) + _unverified_note(entries),
                           "disclosures": n_disc, "data_versions": len(versions),
                           "entries": entries}
            return out
        finally:
            con.close()

    def remaining(self, dataset: str) -> Fraction | None:
        """Exact budget left for ``dataset``, None if the ledger has never seen it."""
        s = self.summary().get(dataset)
        return None if s is None else Fraction(s["remaining_exact"])

    def registration(self, dataset: str) -> dict | None:
        """``{"total", "policy", "policy_text", "allow_disclosures"}`` of ``dataset``, None if unregistered."""
        con = self._connect()
        try:
            row = con.execute("SELECT total, policy, policy_text, allow_disclosures FROM datasets WHERE id = ?",
                              (dataset,)).fetchone()
        finally:
            con.close()
        if row is None:
            return None
        return {"total": Fraction(row[0]), "policy": row[1], "policy_text": row[2], "allow_disclosures": bool(row[3])}

    def text(self) -> str:
        """A human-readable account of every dataset: its guarantee, every entry, how the spent budget was counted."""
        data = self.summary()
        if not data:
            return f"ledger {self.path}: no spends recorded"
        lines = [f"ledger {self.path}"]
        for ds, d in data.items():
            disc = d["disclosures"]
            extra = (f"; {disc} non-private disclosure{'s' if disc != 1 else ''} besides epsilon "
                     f"{d['spent']:.6g}" if disc else "; no non-private disclosures")
            versions = f"; {d['data_versions']} data versions" if d["data_versions"] > 1 else ""
            lines.append(f"\ndataset {ds!r}: {d['guarantee']} (remaining {d['remaining']:.6g}){extra}{versions}")
            groups: dict = {}
            for e in d["entries"]:
                if e["parallel_group"]:
                    groups.setdefault(e["parallel_group"], []).append(e)
            for e in d["entries"]:
                if not e["private"]:
                    lines.append(f"  {e['time']}  NOT PRIVATE  {e['release']} ({e['kind']}): discloses "
                                 f"{e['disclosure']}")
                    continue
                par = f"; parallel group {e['parallel_group']}" if e["parallel_group"] else ""
                dv = f"; data version {e['data_version']}" if e["data_version"] is not None else ""
                lines.append(f"  {e['time']}  eps {e['epsilon']:<10.6g} {e['release']} ({e['kind']}; "
                             f"{e['policy']}{par}{dv})")
            if groups:
                single = [Fraction(e["epsilon_exact"]) for e in d["entries"] if not e["parallel_group"]]
                lines.append("  how the spent budget was counted:")
                if single:
                    lines.append(f"    {len(single)} releases outside any group: their sum, {float(sum(single)):.6g} "
                                 "(sequential composition, Theorem 4.1 of the Blowfish paper)")
                for g, members in groups.items():
                    top = max(Fraction(e["epsilon_exact"]) for e in members)
                    total = sum(Fraction(e["epsilon_exact"]) for e in members)
                    lines.append(f"    parallel group {g}: {len(members)} releases "
                                 f"({', '.join(e['release'] for e in members)}) on disjoint selections, counted once at "
                                 f"their largest epsilon {float(top):.6g}, not their sum {float(total):.6g} "
                                 "(parallel composition, Theorem 4.2 of the Blowfish paper)")
        return "\n".join(lines)

    def json(self) -> str:
        return json.dumps(self.summary(), indent=2)


def guarantee_text(spent, total, policy: str) -> str:
    """The composed guarantee in words: ``"epsilon X spent of Y under policy P"``."""
    return f"epsilon {float(spent):.6g} spent of {float(total):.6g} under policy {policy}"


def _same_data(dataset: str, other: str) -> str:
    return (f"dataset {dataset!r}: these data are recorded in the ledger as dataset {other!r} (the same counts of "
            f"every attribute); one dataset has one budget: use dataset.id = {other!r}; nothing was spent or shown")


def _unverified_note(entries) -> str:
    old = [e for e in entries if e["before_registration"] and e["private"]]
    if not old:
        return ""
    eps = composed_cost((Fraction(e["epsilon_exact"]), e["parallel_group"]) for e in old)
    return (f"; of it, epsilon {float(eps):.6g} by {len(old)} spends recorded before the policy was registered, "
            "under their own policies (not checked against it)")
