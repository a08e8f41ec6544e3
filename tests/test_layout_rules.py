"""House rule of the source layout: no module of the package is longer than 600 lines.

A module that grows past it is split by idea (one module per idea, named for
what it is), not cut in the middle; see ``docs/developers/layout.md``.
"""

from __future__ import annotations

from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "blowfish_privacy"
MAX_LINES = 600


def line_counts(root: Path) -> dict[str, int]:
    """Lines of every ``.py`` and ``.pyx`` file under ``root``, keyed by the path relative to it."""
    files = sorted(p for pattern in ("*.py", "*.pyx") for p in root.rglob(pattern))
    return {p.relative_to(root).as_posix(): len(p.read_text(encoding="utf-8").splitlines()) for p in files}


def too_long(counts: dict[str, int], limit: int = MAX_LINES) -> dict[str, int]:
    """The entries of ``counts`` above ``limit``, longest first."""
    return dict(sorted(((name, n) for name, n in counts.items() if n > limit), key=lambda item: -item[1]))


def test_no_source_file_exceeds_600_lines():
    counts = line_counts(SRC)
    assert counts, f"no .py or .pyx file found under {SRC}"
    over = too_long(counts)
    assert not over, (f"{len(over)} file(s) under src/blowfish_privacy exceed {MAX_LINES} lines (split by idea): "
                      + ", ".join(f"{name} ({n})" for name, n in over.items()))


def test_the_check_names_the_files_over_the_limit(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "short.py").write_text("x = 1\n" * MAX_LINES)
    (tmp_path / "sub" / "long.pyx").write_text("x = 1\n" * (MAX_LINES + 1))
    (tmp_path / "longer.py").write_text("x = 1\n" * (MAX_LINES + 5))
    (tmp_path / "notes.txt").write_text("x\n" * 1000)
    assert too_long(line_counts(tmp_path)) == {"longer.py": MAX_LINES + 5, "sub/long.pyx": MAX_LINES + 1}
