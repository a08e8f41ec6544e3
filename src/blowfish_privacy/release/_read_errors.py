"""The readers' messages: each names the spec file, the key, the data file and the problem, never a value or a row."""

from __future__ import annotations

from ..errors import DataError

__all__ = ["check_columns", "read_problem", "source_text", "unreadable"]


def read_problem(spec, what: str, problem: str, key: str = "dataset.path") -> DataError:
    """``spec.path: key: what problem``; ``problem`` must quote no data."""
    return DataError(f"{spec.path}: {key}: {what} {problem}")


def unreadable(spec, exc) -> DataError:
    """The refusal of data that could not be read because of ``exc``, whose text is withheld."""
    return DataError(f"{spec.path}: dataset: cannot read the data in {source_text(spec)} "
                     f"({type(exc).__name__}; details withheld: they may quote the data)")


def check_columns(columns, available, spec, what, delimiter: str | None = None) -> None:
    """Refuse a needed column missing from ``available`` (a header's names), or named there twice.

    ``delimiter``: how to name the delimiter a CSV header seems to use
    instead of the comma (``"';'"``, ``"a tab"``), said as a hint.
    """
    # the header is not quoted back: in a file without one, it is the first record
    available = list(available)
    for c in columns:
        attr = next((a for a, col in spec.columns.items() if col == c), c)
        if c not in available:
            raise DataError(f"{spec.path}: domain.{attr}: column {c!r} not found in {what} (the header is not "
                            "shown: in a file without one it would be data); check the header line, "
                            f"domain.{attr}.column and dataset.columns{_delimiter_hint(delimiter)}")
        if available.count(c) > 1:
            raise DataError(f"{spec.path}: domain.{attr}: column {c!r} appears more than once in the header of "
                            f"{what}; rename one of them")


def source_text(spec) -> str:
    """How messages name the spec's data: its bundled dataset or its path (never its content)."""
    src = spec.source
    return f"bundled dataset {src['bundled']!r}" if "bundled" in src else repr(src["path"])



def _delimiter_hint(delimiter: str | None) -> str:
    if delimiter is None:
        return ""
    return (f"; the header seems to use {delimiter} as its delimiter: CSV data must be comma-separated (e.g. "
            "pandas.read_csv(path, sep=...).to_csv(new_path, index=False) converts it)")
