"""The content of a release's input, as one SHA-256 digest: what binds a budget to the data.

The ledger keys this digest with a random key of its own
(:meth:`~blowfish_privacy.release.ledger.Ledger.data_version`) and stores
the result with each spend, so the same data cannot draw on two budgets
under two dataset ids.  The digest covers the bytes of the source (a file,
or every file under a folder with its relative path, in sorted order) or,
for an in-memory table, the columns the spec reads.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Any

import numpy as np

from ._reading import _bundled_file

__all__ = ["data_digest", "file_digest", "source_state", "table_digest", "SpecialFileError"]


class SpecialFileError(OSError):
    """A file of the input is not a regular file (a pipe, device or socket: reading it may never end)."""

#: Bytes read at a time while hashing a file.
_CHUNK = 1 << 20


def _update_file(h, path: Path) -> None:
    with open(path, "rb") as fh:
        while True:
            block = fh.read(_CHUNK)
            if not block:
                break
            h.update(block)


def _files(path: Path) -> list:
    """The regular files of the input (the file itself, or every file under a folder, sorted by path)."""
    if not path.is_dir():
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise SpecialFileError(f"{str(path)!r} is not a regular file")
        return [path]
    out = []
    for p in sorted(path.rglob("*")):
        mode = os.lstat(p).st_mode
        if stat.S_ISDIR(mode):
            continue
        if not stat.S_ISREG(os.stat(p).st_mode):
            raise SpecialFileError(f"{str(p)!r} in the dataset folder is not a regular file")
        out.append(p)
    return out


def source_state(spec) -> list:
    """``(path, size, modification time)`` of every file of ``spec``'s source: compared before the spend, so a
    file rewritten while it was read refuses the run (empty for a bundled dataset, which cannot change)."""
    src = spec.source
    if "bundled" in src or src.get("format") == "table":
        return []
    return [(str(f), st.st_size, st.st_mtime_ns) for f in _files(Path(src["path"])) for st in [os.stat(f)]]


def file_digest(path) -> bytes:
    """SHA-256 of a file's bytes, or of a folder's files (relative path, size, bytes; sorted by path)."""
    path = Path(path)
    h = hashlib.sha256()
    if path.is_dir():
        for f in _files(path):
            rel = f.relative_to(path).as_posix().encode("utf-8")
            h.update(len(rel).to_bytes(8, "little") + rel + f.stat().st_size.to_bytes(8, "little"))
            _update_file(h, f)
    else:
        _files(path)
        _update_file(h, path)
    return h.digest()


def data_digest(spec) -> bytes:
    """SHA-256 of the content of ``spec``'s source (a path or a bundled dataset)."""
    src = spec.source
    if "bundled" in src:
        with _bundled_file(src["bundled"]) as p:
            return file_digest(p)
    return file_digest(src["path"])


def table_digest(columns: dict[str, Any]) -> bytes:
    """SHA-256 of named columns (``{name: 1-D array}``): names, dtypes, lengths and values, in name order."""
    h = hashlib.sha256()
    for name in sorted(columns):
        arr = np.asarray(columns[name])
        head = f"{name}\x1f{arr.dtype.str}\x1f{arr.size}\x1e".encode("utf-8")
        h.update(len(head).to_bytes(8, "little") + head)
        if arr.dtype.kind in "OUS":
            for v in arr.reshape(-1).tolist():
                b = (v if isinstance(v, bytes) else repr(v).encode("utf-8", "surrogatepass"))
                h.update(len(b).to_bytes(8, "little") + b)
        else:
            h.update(np.ascontiguousarray(arr).tobytes())
    return h.digest()
