"""Which files of a folder an earlier ``blowfish demo`` wrote: the demo replaces those, and nothing else.

The demo writes, per release of its spec, ``NAME.json`` (with ``NAME.csv``
or ``NAME.parquet`` for long vectors and ``NAME.png``), then
``summary.json``, ``spec.toml`` and ``demo-comparison.png``.  A file counts
as the demo's when its name is one of these and, for the files a user is
likely to edit or write under the same name, its content says so: the JSON
files name the demo's dataset (``summary.json`` also the demo spec), and
``spec.toml`` is the demo spec as an earlier demo run wrote it (its hash is
the one that run's ``summary.json`` records, or the bundled spec's).  A
spec the user edited is therefore the user's, and never replaced silently.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

__all__ = ["DEMO_SPEC_WHERE", "demo_file_names", "foreign_files"]

#: How the demo's spec is named in its ``summary.json`` (``spec``) and messages.
DEMO_SPEC_WHERE = "demo spec"

#: Larger files are not the demo's (its JSON and spec files are kilobytes): never read whole.
_MAX_READ = 1 << 24

#: A temporary file of an interrupted atomic write: a dot, the name, 8 hex digits, ``.tmp``.
_TEMPORARY = re.compile(r"^\.(?P<name>.+)\.[0-9a-f]{8}\.tmp$")


def demo_file_names(spec) -> set[str]:
    """Every name a demo run of ``spec`` may write into its output folder."""
    names = {"summary.json", "spec.toml", "demo-comparison.png"}
    for rel in spec.releases:
        names |= {f"{rel.name}{ext}" for ext in (".json", ".csv", ".parquet", ".png")}
    return names


def _read(path: Path) -> bytes | None:
    try:
        if path.stat().st_size > _MAX_READ:
            return None
        return path.read_bytes()
    except OSError:
        return None


def _json(path: Path) -> dict | None:
    raw = _read(path)
    try:
        doc = json.loads(raw) if raw is not None else None
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def foreign_files(out: Path, spec, spec_text: str) -> list[str]:
    """The names of the entries of the folder ``out`` that no demo run of ``spec`` wrote (sorted)."""
    names = demo_file_names(spec)
    summary = _json(out / "summary.json")
    demo_summary = (summary is not None and summary.get("spec") == DEMO_SPEC_WHERE
                    and summary.get("dataset") == spec.dataset_id)
    spec_hashes = {hashlib.sha256(spec_text.encode("utf-8")).hexdigest()}
    if demo_summary and isinstance(summary.get("spec_sha256"), str):
        spec_hashes.add(summary["spec_sha256"])
    foreign = []
    for entry in sorted(out.iterdir()):
        name = entry.name
        temporary = _TEMPORARY.match(name)
        if entry.is_symlink() or not entry.is_file():
            ours = False
        elif temporary is not None:
            ours = temporary.group("name") in names
        elif name not in names:
            ours = False
        elif name == "summary.json":
            ours = demo_summary
        elif name == "spec.toml":
            raw = _read(entry)
            ours = raw is not None and hashlib.sha256(raw).hexdigest() in spec_hashes
        elif name.endswith(".json"):
            doc = _json(entry)
            ours = doc is not None and doc.get("dataset") == spec.dataset_id
        else:
            ours = True  # a CSV, Parquet or PNG file under one of the demo's release names
        if not ours:
            foreign.append(name)
    return foreign
