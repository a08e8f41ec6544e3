"""What binds a budget to the data: the data version, and the state of the input's files.

The data version is computed from the *content* the spec reads, not from
the bytes of a file: every attribute's exact counts over its domain (and
the joint counts over the whole domain when it is small), with the
attribute's definition and column.  So the same rows give the same version
whatever the file's encoding, compression, line endings, row order or
column order, and whether they come from a file or an in-memory table.
The ledger keys it with a random key of its own
(:meth:`~blowfish_privacy.release.ledger.Ledger.data_version`): the same
data cannot draw on two budgets under two dataset ids.  Data that differ in
any count get another version; nothing here can tell near-copies apart
from other data.

:func:`source_state` lists the size and modification time of every input
file: compared before the spend, so a file rewritten while it was read
refuses the run.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import numpy as np

from ..policy.domain import Ordinal

__all__ = ["source_state", "version_needs", "version_digest", "SpecialFileError", "JOINT_CELLS"]

#: The joint counts over the whole domain enter the data version when the domain has at most this many cells.
JOINT_CELLS = 1 << 20


class SpecialFileError(OSError):
    """A file of the input is not a regular file (a pipe, device or socket: reading it may never end)."""


def _files(path: Path) -> list:
    """The regular files of the input (the file itself, or every file under a folder, sorted by path)."""
    if not path.is_dir():
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise SpecialFileError(f"{str(path)!r} is not a regular file")
        return [path]
    out = []
    for p in sorted(path.rglob("*")):
        if stat.S_ISDIR(os.lstat(p).st_mode):
            continue
        if not stat.S_ISREG(os.stat(p).st_mode):
            raise SpecialFileError(f"{str(p)!r} in the dataset folder is not a regular file")
        out.append(p)
    return out


def source_state(spec) -> list:
    """``(path, size, modification time)`` of every file of ``spec``'s source (empty for a bundled dataset or
    an in-memory table, which cannot change during a run)."""
    src = spec.source
    if "bundled" in src or src.get("format") == "table":
        return []
    return [(str(f), st.st_size, st.st_mtime_ns) for f in _files(Path(src["path"])) for st in [os.stat(f)]]


def version_needs(spec) -> list:
    """The aggregates the data version is made of: each attribute's histogram, and the joint one if small."""
    names = tuple(spec.domain.names)
    needs = [("histogram", (a,)) for a in names]
    if len(names) > 1 and spec.domain.size <= JOINT_CELLS:
        needs.append(("histogram", names))
    return needs


def _definition(spec, name: str) -> dict:
    a = spec.domain.attribute(name)
    if isinstance(a, Ordinal):
        d = {"type": "ordinal", "low": a.low, "high": a.high, "bin_width": a.bin_width}
    else:
        d = {"type": "categorical", "labels": [repr(x) for x in a.labels]}
    return {"name": name, "column": spec.columns[name], **d}


def version_digest(spec, aggregates: dict) -> bytes:
    """SHA-256 of the attributes' definitions and the counts of :func:`version_needs` (``aggregates`` holds
    them by need)."""
    h = hashlib.sha256()
    for need in version_needs(spec):
        head = json.dumps({"need": list(need[1]), "attributes": [_definition(spec, a) for a in need[1]]},
                          sort_keys=True).encode("utf-8")
        counts = np.ascontiguousarray(aggregates[need], dtype=np.int64)
        h.update(len(head).to_bytes(8, "little") + head + counts.size.to_bytes(8, "little") + counts.tobytes())
    return h.digest()
