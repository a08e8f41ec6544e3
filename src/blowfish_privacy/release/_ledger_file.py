"""The ledger's SQLite file: its tables, their migration, and the integrity links over their rows.

Every spend row carries a link (an HMAC under the ledger's own key) over
the previous link and the row's columns, the last link is kept apart, and
each dataset row carries a seal: :func:`verify` refuses a ledger whose rows
were edited, added, removed or reordered outside this library.  A ledger
written before these columns existed is chained and sealed when migrated.
"""

from __future__ import annotations

import hmac
import json
import secrets as _token
import sqlite3
from fractions import Fraction

from ..errors import LedgerError

__all__ = ["DATASET_COLUMNS", "SCHEMA_VERSION", "SPEND_COLUMNS", "put_dataset", "put_spend", "verify",
           "write_schema"]

#: Version of the ledger's tables (PRAGMA user_version).  1: datasets and
#: spends; 2: results kept with their spends; 3: each dataset's protection
#: policy and disclosure setting, disclosure entries, data versions; 4: result
#: copies may store long vectors byte-shuffled (members a version-3 reader
#: would skip, so such readers must refuse the ledger rather than export
#: files without them; a version-3 ledger is migrated by the number alone).
SCHEMA_VERSION = 4

_SCHEMA = """
CREATE TABLE IF NOT EXISTS datasets (
    id TEXT PRIMARY KEY,
    total TEXT NOT NULL,
    created TEXT NOT NULL,
    policy TEXT,
    policy_text TEXT,
    allow_disclosures INTEGER NOT NULL DEFAULT 0,
    unverified_before INTEGER NOT NULL DEFAULT 0,
    seal TEXT
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
    parallel TEXT,
    disclosure TEXT,
    data_version TEXT,
    chain TEXT
);
CREATE TABLE IF NOT EXISTS results (
    spend_seq INTEGER PRIMARY KEY REFERENCES spends(seq),
    run TEXT NOT NULL,
    release TEXT NOT NULL,
    payload BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS results_run ON results(run);
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""

#: Columns added by schema 3 to the tables of schema 2.
_MIGRATE_3 = (
    ("datasets", "policy", "TEXT"),
    ("datasets", "policy_text", "TEXT"),
    ("datasets", "allow_disclosures", "INTEGER NOT NULL DEFAULT 0"),
    ("spends", "disclosure", "TEXT"),
    ("spends", "data_version", "TEXT"),
    ("datasets", "unverified_before", "INTEGER NOT NULL DEFAULT 0"),
    ("datasets", "seal", "TEXT"),
    ("spends", "chain", "TEXT"),
)

#: The columns of a spend row that its chain link covers, in order.
SPEND_COLUMNS = ("dataset", "release", "kind", "epsilon", "policy", "spec_sha256", "time", "parallel",
                  "disclosure", "data_version")
#: The columns of a dataset row that its seal covers, in order.
DATASET_COLUMNS = ("id", "total", "created", "policy", "policy_text", "allow_disclosures", "unverified_before")


def write_schema(con: sqlite3.Connection) -> None:
    """Create the tables (a new file) or migrate an older ledger's in place, in one transaction."""
    con.execute("BEGIN IMMEDIATE")
    try:
        existing = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        for table, column, decl in _MIGRATE_3:
            if table in existing:
                cols = {r[1] for r in con.execute(f"PRAGMA table_info({table})")}
                if column not in cols:
                    con.execute(f"ALTER TABLE {table} ADD COLUMN {column} {decl}")
        for statement in filter(str.strip, _SCHEMA.split(";")):
            con.execute(statement)
        if con.execute("SELECT 1 FROM meta WHERE key = 'fingerprint_key'").fetchone() is None:
            con.execute("INSERT INTO meta (key, value) VALUES ('fingerprint_key', ?)", (_token.token_hex(32),))
        _seal_legacy(con)
        con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException:
        if con.in_transaction:
            con.execute("ROLLBACK")
        raise
    if con.in_transaction:
        con.execute("COMMIT")


# -- integrity: a chain over the spend rows, a seal on each dataset row ---------------------------------
def _mac(con, parts) -> str:
    key = bytes.fromhex(con.execute("SELECT value FROM meta WHERE key = 'fingerprint_key'").fetchone()[0])
    text = json.dumps([None if p is None else str(p) for p in parts], ensure_ascii=True)
    return hmac.new(key, text.encode("ascii"), "sha256").hexdigest()


def _head(con) -> str:
    row = con.execute("SELECT value FROM meta WHERE key = 'chain_head'").fetchone()
    return "" if row is None else row[0]


def put_spend(con, values: tuple) -> int:
    """Insert a spend row linked to the chain (its link covers the previous link and the row's columns)."""
    link = _mac(con, (_head(con),) + tuple(values))
    cur = con.execute(f"INSERT INTO spends ({', '.join(SPEND_COLUMNS)}, chain) VALUES "
                      f"({', '.join('?' * len(SPEND_COLUMNS))}, ?)", tuple(values) + (link,))
    con.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('chain_head', ?)", (link,))
    return cur.lastrowid


def put_dataset(con, values: tuple, *, update: bool = False) -> None:
    seal = _mac(con, ("dataset",) + tuple(values))
    if update:
        con.execute("UPDATE datasets SET policy = ?, policy_text = ?, unverified_before = ?, seal = ? WHERE id = ?",
                    (values[3], values[4], values[6], seal, values[0]))
    else:
        con.execute(f"INSERT INTO datasets ({', '.join(DATASET_COLUMNS)}, seal) VALUES "
                    f"({', '.join('?' * len(DATASET_COLUMNS))}, ?)", tuple(values) + (seal,))


def _seal_legacy(con) -> None:
    """Chain and seal the rows of a ledger written before the integrity columns existed (migration)."""
    if con.execute("SELECT 1 FROM spends WHERE chain IS NOT NULL LIMIT 1").fetchone() is None:
        head = ""
        for row in con.execute(f"SELECT seq, {', '.join(SPEND_COLUMNS)} FROM spends ORDER BY seq").fetchall():
            head = _mac(con, (head,) + tuple(row[1:]))
            con.execute("UPDATE spends SET chain = ? WHERE seq = ?", (head, row[0]))
        if head:
            con.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('chain_head', ?)", (head,))
    for row in con.execute(f"SELECT {', '.join(DATASET_COLUMNS)} FROM datasets WHERE seal IS NULL").fetchall():
        con.execute("UPDATE datasets SET seal = ? WHERE id = ?", (_mac(con, ("dataset",) + tuple(row)), row[0]))


def verify(con, where: str) -> None:
    """Refuse a ledger whose rows were edited, added, removed or reordered outside this library.

    Every spend row's link covers the previous link and its columns; the
    last link is kept apart; each dataset row carries a seal; epsilons are
    exact non-negative fractions.  The links are keyed with the ledger's
    own key, so they detect edits and accidents, not someone who recomputes
    them with that key.
    """
    def damaged(what: str) -> LedgerError:
        return LedgerError(f"ledger {where!r} is damaged: {what}; it was changed outside blowfish-privacy: restore "
                           "it from a backup")

    head = ""
    for row in con.execute(f"SELECT seq, {', '.join(SPEND_COLUMNS)}, chain FROM spends ORDER BY seq"):
        seq, values, link = row[0], tuple(row[1:-1]), row[-1]
        eps = values[SPEND_COLUMNS.index("epsilon")]
        try:
            ok = Fraction(str(eps)) >= 0
        except (ValueError, ZeroDivisionError):
            ok = False
        if not ok:
            raise damaged(f"spend row {seq} holds an epsilon that is not a non-negative number")
        head = _mac(con, (head,) + values)
        if link != head:
            raise damaged(f"spend row {seq} does not match its integrity link")
    if head != _head(con):
        raise damaged("its last spend rows are missing")
    for row in con.execute(f"SELECT {', '.join(DATASET_COLUMNS)}, seal FROM datasets"):
        if _mac(con, ("dataset",) + tuple(row[:-1])) != row[-1]:
            raise damaged(f"the row of dataset {row[0]!r} does not match its seal")
        try:
            ok = Fraction(str(row[1])) > 0
        except (ValueError, ZeroDivisionError):
            ok = False
        if not ok:
            raise damaged(f"the total of dataset {row[0]!r} is not a positive number")
